// The read pipeline: batch buffers handed from the reading thread to the filing thread.
#include "core/join/read_pipeline.hpp"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/common/error.hpp"
#include "core/join/join_internal.hpp"
#include "core/join/join_prefix.hpp"
#include "core/memory/huge_alloc.hpp"
#include "core/memory/huge_pages.hpp"
#include "core/signature/packed.hpp"
#include "core/template/content.hpp"

namespace spotsigs {

namespace {
// Batch buffers: four of 2 MB less HugeAllocator's 64-byte header (about 2,700 rows of 86
// signatures each), so that each takes exactly one page of the reserved pool when allowed; 8 MB
// in all. More would rarely let the reader wait, and the reader faults in the filing thread's next
// memory only while it waits for a free buffer.
constexpr size_t kBatchBytes = (size_t(2) << 20) - 64;
constexpr size_t kBatches = 4;
// Under a memory limit or a budget, the batch buffers take at most an eighth of it (each at least
// this, and growing for a larger value), so that a small limit is left for the documents.
constexpr size_t kMinBatchBytes = size_t(64) << 10;
// A batch's per-row arrays (id, offset, length) take this much a row.
constexpr size_t kRowBytes = sizeof(int64_t) + sizeof(uint64_t) + sizeof(uint32_t);
// Prefixes are listed once this many documents are filed: the frequent signatures come from an
// evenly spaced sample of them (smaller inputs are listed when the pipeline closes).
constexpr size_t kSampleWindow = 65536;
// The reader faults in the filing thread's next memory this much at a time (one huge page).
constexpr size_t kPrefaultWindow = size_t(2) << 20;

// Blocks of at least this many bytes are mapped from the kernel when allocated and unmapped when
// freed (see map_large_blocks).
constexpr int kMapThreshold = 256 << 10;

// Makes glibc map every block of kMapThreshold bytes or more (once per process). By default glibc
// raises its threshold to the size of each mapped block freed (up to 32 MB), and from then on
// serves blocks below it from its arenas, one per thread that allocates (the filing thread, the
// matcher's workers): a freed block stays resident there and serves only that arena, so a join's
// resident memory grew to about the sum of each arena's own peak, twice and more what the join
// held at once. A fixed threshold also stops the raising: large blocks go back to the kernel when
// freed, and what is resident follows what is held. The cost is a fresh mapping (and its page
// faults) for each large block, which a join takes a few of per pass.
void map_large_blocks() {
#ifdef M_MMAP_THRESHOLD
    static std::atomic<bool> done{false};
    if (!done.exchange(true)) mallopt(M_MMAP_THRESHOLD, kMapThreshold);
#endif
}

// An upper bound of the bytes FrequentSignatures(docs, sample, ...) takes while it counts and
// keeps after (join_groups.cpp): its counters (at most 8 bytes a sampled signature), the hashes
// on frequent counters (at most 16 bytes a sampled signature, with a vector's doubling), its
// counting table and its kept table (each at most 4 slots of 16 bytes a sampled signature), its
// filter.
size_t frequent_bytes_bound(const Collection& docs, size_t sample) {
    const size_t n = docs.size();
    const size_t step = std::max<size_t>(1, n / std::max<size_t>(1, sample));
    size_t occ = 0;
    for (size_t d = 0; d < n; d += step) occ += docs.doc(d).size;
    return std::max<size_t>(1024, 8 * occ) + 16 * occ + 2 * 16 * std::max<size_t>(64, 4 * occ) + (size_t(1) << 12);
}

}  // namespace

struct ReadPipeline::Batch {
    HugeBytes bytes;  // payloads, each starting 4 bytes past an 8-byte boundary
    size_t used = 0;
    std::vector<int64_t> ids;
    std::vector<uint64_t> offsets;
    std::vector<uint32_t> lengths;
};

ReadPipeline::ReadPipeline(double list_tau, size_t reserve_docs, size_t reserve_sigs, bool background,
                           size_t defer_backlog)
    : list_tau_(list_tau),
      background_(background),
      defer_backlog_(defer_backlog),
      expected_docs_(reserve_docs),
      batch_size_(kBatchBytes) {
    map_large_blocks();
    if (reserve_docs > 0) docs_.reserve(reserve_docs, reserve_sigs);
    if (list_tau_ > 0) {
        listed_ = std::make_unique<join_detail::ListedPrefixes>();
        listed_->tau = list_tau_;
    }
    // Without a filing thread one batch is filled and filed in turn.
    for (size_t k = 0; k < (background_ ? kBatches : 1); ++k) {
        pool_.push_back(std::make_unique<Batch>());
        pool_.back()->bytes.resize(kBatchBytes);
        free_.push_back(pool_.back().get());
        batch_bytes_ += kBatchBytes;
    }
    if (!background_) return;
    // The thread starts with every signal blocked, so that none is ever delivered to it.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    try {
        thread_ = std::thread([this] { file_loop(); });
    } catch (...) {
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        throw;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

ReadPipeline::~ReadPipeline() {
    stop();
}

void ReadPipeline::stop() noexcept {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_.store(true);
    }
    cv_.notify_all();
    try {
        if (thread_.joinable()) thread_.join();
    } catch (...) {
    }
    if (background_) pending_bytes_.store(0, std::memory_order_relaxed);  // what waited is dropped
}

bool ReadPipeline::add(int64_t id, const unsigned char* payload, size_t len, std::chrono::milliseconds wait) {
    // Where the payload goes: 4 bytes past an 8-byte boundary, so that its hashes (12 bytes in)
    // are 8-byte aligned.
    auto place = [](size_t used) { return ((used + 3) & ~size_t(7)) + 4; };
    if (current_ != nullptr && place(current_->used) + len > current_->bytes.size() && !current_->ids.empty()) {
        if (!background_) {
            file(*current_);  // the same batch is filled again
            return add(id, payload, len, wait);
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            full_.push_back(current_);
            backlog_.store(full_.size(), std::memory_order_relaxed);
        }
        cv_.notify_all();
        current_ = nullptr;
    }
    if (current_ == nullptr) {
        std::unique_lock<std::mutex> lock(mu_);
        const auto t0 = std::chrono::steady_clock::now();
        const auto deadline = t0 + wait;
        // The filing thread is behind: fault in the memory it writes next, a window at a time,
        // while no batch is free; then wait for one.
        while (free_.empty() && error_ == nullptr && populate_ok_) {
            const Collection::Room w = next_window();
            if (w.begin == nullptr) break;
            lock.unlock();
            const Populate done = populate_pages(w.begin, static_cast<size_t>(w.end - w.begin));
            lock.lock();
            if (done == Populate::Done) prefaulted_ += static_cast<size_t>(w.end - w.begin);
            else if (done == Populate::Unsupported) populate_ok_ = false;
            else break;  // a signal: the caller serves it (the window is left to the filing thread)
            if (std::chrono::steady_clock::now() >= deadline) break;
        }
        cv_.wait_until(lock, deadline, [&] { return !free_.empty() || error_ != nullptr; });
        waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (error_) std::rethrow_exception(error_);
        if (free_.empty()) return false;
        current_ = free_.back();
        free_.pop_back();
    }
    Batch& b = *current_;
    const size_t at = place(b.used);
    if (at + len > b.bytes.size()) {  // a value larger than a batch: this batch grows for it
        if (!charge(at + len - b.bytes.size())) {
            overflow_.store(true, std::memory_order_release);  // the value is dropped
            return true;
        }
        batch_bytes_ += at + len - b.bytes.size();
        b.bytes.resize(at + len);
    }
    if (b.ids.size() == b.ids.capacity()) {
        // The batch's per-row arrays grow (by doubling) as batch bytes too.
        const size_t more = std::max<size_t>(b.ids.capacity(), 256);
        if (!charge(more * kRowBytes)) {
            overflow_.store(true, std::memory_order_release);
            return true;
        }
        b.ids.reserve(b.ids.capacity() + more);
        b.offsets.reserve(b.ids.capacity());
        b.lengths.reserve(b.ids.capacity());
        batch_bytes_ += more * kRowBytes;
    }
    std::memcpy(b.bytes.data() + at, payload, len);
    pending_bytes_.fetch_add(len, std::memory_order_relaxed);
    b.used = at + len;
    b.ids.push_back(id);
    b.offsets.push_back(at);
    b.lengths.push_back(static_cast<uint32_t>(len));
    ++rows_;
    return true;
}

Collection::Room ReadPipeline::next_window() noexcept {
    for (int k = 0; k < 2; ++k) {
        const Collection::Room r = room_[k];
        if (r.begin == nullptr) continue;
        // A cursor outside the room is from an earlier chunk: start at the room's beginning (a
        // cursor at its end means it is all faulted in).
        unsigned char* from = faulted_[k];
        const uintptr_t f = reinterpret_cast<uintptr_t>(from);
        if (from == nullptr || f < reinterpret_cast<uintptr_t>(r.begin) || f > reinterpret_cast<uintptr_t>(r.end))
            from = r.begin;
        if (from >= r.end) continue;
        const size_t n = std::min(kPrefaultWindow, static_cast<size_t>(r.end - from));
        faulted_[k] = from + n;
        return Collection::Room{from, from + n};
    }
    return Collection::Room();
}

void ReadPipeline::close() {
    if (!background_) {
        if (current_ != nullptr) {
            if (!current_->ids.empty()) file(*current_);
            free_.push_back(current_);
            current_ = nullptr;
        }
        closed_ = true;
        finish_filing();
        done_ = !stop_.load();
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (current_ != nullptr && !current_->ids.empty()) full_.push_back(current_);
        else if (current_ != nullptr) free_.push_back(current_);
        backlog_.store(full_.size(), std::memory_order_relaxed);
        current_ = nullptr;
        closed_ = true;
    }
    cv_.notify_all();
}

bool ReadPipeline::wait_filed(std::chrono::milliseconds wait) {
    if (!background_) {
        if (!done_) throw Error(ErrorKind::Canceled, "the join's input was stopped before it was filed");
        return true;
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [&] { return done_ || error_ != nullptr; });
    if (error_) std::rethrow_exception(error_);
    return done_;
}

void ReadPipeline::hold_filing(bool held) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        held_ = held;
    }
    cv_.notify_all();
}

void ReadPipeline::file_loop() {
    try {
        for (;;) {
            Batch* b = nullptr;
            {
                std::unique_lock<std::mutex> lock(mu_);
                cv_.wait(lock, [&] { return stop_.load() || (!held_ && (!full_.empty() || closed_)); });
                if (stop_.load()) return;
                if (full_.empty()) break;  // closed and everything filed
                b = full_.front();
                full_.pop_front();
                backlog_.store(full_.size(), std::memory_order_relaxed);
            }
            file(*b);
            {
                std::lock_guard<std::mutex> lock(mu_);
                free_.push_back(b);
                docs_.room(room_[0], room_[1]);
            }
            cv_.notify_all();
        }
        finish_filing();
        if (stop_.load()) return;
        {
            std::lock_guard<std::mutex> lock(mu_);
            done_ = true;
        }
    } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = std::current_exception();
    }
    cv_.notify_all();
}

void ReadPipeline::charge_to(ReadBudget* budget) noexcept {
    budget_ = budget;
    limit_ = 0;                   // the budget decides what is listed
    fit_batches(budget->room());  // smaller batches under a small budget
    // What the pipeline holds already: its batches and what it was presized with.
    const size_t held = batch_bytes_.load(std::memory_order_relaxed) + docs_.memory_bytes();
    if (!charge(held)) {
        // No room even for these: the read overflows before its first row, holding nothing.
        overflow_.store(true, std::memory_order_release);
        docs_ = Collection();
        free_batches();
    }
}

bool ReadPipeline::charge(size_t n) noexcept {
    if (budget_ == nullptr || n == 0) return true;
    if (!budget_->charge(n)) return false;
    charged_.fetch_add(n, std::memory_order_relaxed);
    return true;
}

void ReadPipeline::discard() noexcept {
    overflow_.store(true, std::memory_order_release);  // the filing thread drops what it holds
    stop();
    docs_ = Collection();
    listed_.reset();
    lister_.reset();
    free_batches();
    publish_bytes();
    pending_bytes_.store(0, std::memory_order_relaxed);
    if (budget_ != nullptr) budget_->release(charged_.exchange(0));
}

void ReadPipeline::fit_batches(size_t bytes) noexcept {
    if (batch_bytes_.load(std::memory_order_relaxed) == 0) return;  // freed: nothing to fit
    const size_t each = std::clamp(bytes / (8 * pool_.size()), kMinBatchBytes, static_cast<size_t>(kBatchBytes));
    if (each >= batch_size_) return;
    batch_size_ = each;
    for (auto& b : pool_) HugeBytes(each).swap(b->bytes);
    batch_bytes_.store(each * pool_.size(), std::memory_order_relaxed);
}

void ReadPipeline::free_batches() noexcept {
    for (auto& b : pool_) {
        HugeBytes().swap(b->bytes);
        std::vector<int64_t>().swap(b->ids);
        std::vector<uint64_t>().swap(b->offsets);
        std::vector<uint32_t>().swap(b->lengths);
    }
    batch_bytes_.store(0, std::memory_order_relaxed);
}

void ReadPipeline::list_or_defer(uint32_t d, const MultisetView& v, bool& over) {
    over = over || (limit_ != 0 && over_limit());
    if (!over && budget_ != nullptr) {
        // The slabs listing it may open, charged first; what they did not take goes back.
        const size_t before = listed_->lists.memory_bytes();
        const size_t bound = listed_->lists.memory_bytes_after(2 * join_detail::PrefixLists::kCoarse) - before;
        if (charge(bound)) {
            lister_->list(d, v, listed_->lists);
            const size_t took = listed_->lists.memory_bytes() - before;
            budget_->release(bound - took);
            charged_.fetch_sub(bound - took, std::memory_order_relaxed);
            return;
        }
        over = true;  // the budget is nearly spent: the rest are listed by the matcher
    }
    if (over) {
        listed_->defer(d);
        ++deferred_;
    } else {
        lister_->list(d, v, listed_->lists);
    }
}

void ReadPipeline::file(Batch& b) {
    // Behind the reader, or past the limit: this batch's prefixes (from the document that would
    // pass the limit on) are left to the matcher's workers.
    const bool behind = background_ && backlog_.load(std::memory_order_relaxed) >= defer_backlog_;
    bool over = false;
    size_t raw = 0;
    for (size_t k = 0; k < b.ids.size(); ++k) {
        raw += b.lengths[k];
        // Past the budget, the rest of the read is dropped (the caller discards it).
        if (overflow_.load(std::memory_order_relaxed)) continue;
        MultisetView v = unpack(b.bytes.data() + b.offsets[k], b.lengths[k]);
        if (remove_ != nullptr) {
            remove_->remove_into(v, stripped_);
            v = stripped_.view();
        }
        uint32_t d;
        if (budget_ != nullptr) {
            // The collection grows into what the budget has left, and the document's growth is
            // charged before it is added (growth_for is exact or above: the rest goes back).
            docs_.limit_growth(docs_.memory_bytes() + budget_->room());
            const size_t before = docs_.memory_bytes();
            const size_t growth = docs_.growth_for(v);
            if (!charge(growth)) {
                overflow_.store(true, std::memory_order_release);
                continue;
            }
            d = docs_.add(b.ids[k], v);
            const size_t took = docs_.memory_bytes() - before;
            if (took <= growth) {
                budget_->release(growth - took);
                charged_.fetch_sub(growth - took, std::memory_order_relaxed);
            } else {
                budget_->force(took - growth);
                charged_.fetch_add(took - growth, std::memory_order_relaxed);
            }
        } else {
            d = docs_.add(b.ids[k], v);
        }
        if (!listed_) continue;
        if (lister_) {
            if (behind) {
                listed_->defer(d);
                ++deferred_;
            } else {
                list_or_defer(d, v, over);
            }
        } else if (docs_.size() == kSampleWindow) {
            start_listing();
        }
    }
    // A batch that grew for a large value goes back to the usual size.
    if (b.bytes.size() > batch_size_) {
        const size_t grew = b.bytes.size() - batch_size_;
        batch_bytes_.fetch_sub(grew);
        HugeBytes(batch_size_).swap(b.bytes);
        if (budget_ != nullptr) {
            budget_->release(grew);
            charged_.fetch_sub(grew, std::memory_order_relaxed);
        }
    }
    b.used = 0;
    b.ids.clear();
    b.offsets.clear();
    b.lengths.clear();
    publish_bytes();
    pending_bytes_.fetch_sub(raw, std::memory_order_relaxed);
}

void ReadPipeline::finish_filing() {
    if (overflow_.load(std::memory_order_relaxed)) return;  // to be discarded
    if (listed_ && !lister_) start_listing();               // fewer documents than the sample window
    if (listed_) {
        // Sealing moves the staged entries (at most a block a bucket) into blocks: the slabs it
        // may open are charged first, and what they did not take goes back. Without room for
        // them the read does not fit with its listing (the matcher would not either): it
        // overflows.
        const size_t before = listed_->lists.memory_bytes();
        const size_t bound = listed_->lists.memory_bytes_after(join_detail::PrefixLists::kCoarse) - before;
        if (!charge(bound)) {
            overflow_.store(true, std::memory_order_release);
            return;
        }
        listed_->lists.seal();  // on the thread that listed (block_lists.hpp)
        if (budget_ != nullptr) {
            const size_t unused = bound - std::min(bound, listed_->lists.memory_bytes() - before);
            budget_->release(unused);
            charged_.fetch_sub(unused, std::memory_order_relaxed);
        }
    }
    // Nothing is added after close(): the batch buffers are not needed while the join matches.
    if (closed_) {
        if (budget_ != nullptr) {
            const size_t held = batch_bytes_.load(std::memory_order_relaxed);
            budget_->release(held);
            charged_.fetch_sub(held, std::memory_order_relaxed);
        }
        free_batches();
    }
    publish_bytes();
}

void ReadPipeline::publish_bytes() noexcept {
    filed_bytes_.store(docs_.memory_bytes() + (listed_ ? listed_->lists.memory_bytes() : 0), std::memory_order_relaxed);
}

void ReadPipeline::start_listing() {
    // The sample's size follows the collection's (join_internal.hpp): known when every document
    // is in (fewer than the window), else the caller's estimate; unknown counts as the largest.
    const size_t n = docs_.size() < kSampleWindow ? docs_.size()
                     : expected_docs_ > 0         ? std::max(docs_.size(), expected_docs_)
                                                  : SIZE_MAX;
    const size_t sample = join_detail::frequent_sample_for(n);
    // Counting the sample takes at most frequent_bytes_bound(); the table it leaves is held
    // while the join runs (the matcher orders by it). Without room for the count, the read
    // does not fit with its listing: it overflows.
    const size_t bound = budget_ != nullptr ? frequent_bytes_bound(docs_, sample) : 0;
    if (!charge(bound)) {
        overflow_.store(true, std::memory_order_release);
        return;
    }
    listed_->frequent =
        std::make_unique<join_detail::FrequentSignatures>(docs_, sample, join_detail::kFrequentMinCount);
    lister_ = std::make_unique<join_detail::PrefixLister>(list_tau_, *listed_->frequent);
    if (budget_ != nullptr) {
        const size_t unused = bound - std::min(bound, listed_->frequent->memory_bytes());
        budget_->release(unused);
        charged_.fetch_sub(unused, std::memory_order_relaxed);
    }
    bool over = false;
    for (size_t d = 0; d < docs_.size(); ++d) {
        if (stop_.load(std::memory_order_relaxed)) return;
        list_or_defer(static_cast<uint32_t>(d), docs_.doc(d), over);
    }
}

bool ReadPipeline::over_limit() const noexcept {
    // With the slabs that listing one more document may open: a block in each coarse bucket, and
    // as many again for a long prefix.
    return limit_ != 0 &&
           docs_.memory_bytes() +
                   (listed_ ? listed_->lists.memory_bytes_after(2 * join_detail::PrefixLists::kCoarse) : 0) +
                   batch_bytes_.load(std::memory_order_relaxed) >
               limit_;
}

}  // namespace spotsigs
