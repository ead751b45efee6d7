// Reading a join's input on the caller's thread while a background filing thread does the rest.
//
// The caller (the backend's main thread, which alone may touch PostgreSQL) only copies each
// stored value's bytes into a batch buffer, which stays in the cache and is reused. A filing
// thread, started with every signal blocked, takes the full batches in order: it checks each
// value, stores it in the Collection (the page-faulting copy into fresh memory) and, for a
// self-join by the default method, lists its prefix for the prefix-group matcher. So reading,
// storing and listing overlap; on 1M rows the reader alone would take most of the join.
// Most of the filing thread's time is the first touch of the memory it copies into (the kernel
// zeroing fresh pages), so while the caller waits for a free batch it faults that memory in
// ahead of the filing thread (MADV_POPULATE_WRITE, which never changes a page already there).
// When the filing thread falls behind (full batches wait), it leaves the prefixes of the batch at
// hand unlisted: the matcher's workers list them in parallel (ListedPrefixes::unlisted).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/join/join.hpp"

namespace spotsigs {

namespace join_detail {
struct ListedPrefixes;
class PrefixLister;
}  // namespace join_detail
class SignatureSet;

// Bytes charged against a cap by the threads of a first read (the reader, the filing threads of
// one or two pipelines): a charge that would take them past the cap is refused, so what is
// charged never exceeds it. Whoever allocates charges first, so the memory held stays within
// what is charged. force() is for what must be held whatever the cap (it may pass it; peak()
// then shows it).
class ReadBudget {
public:
    explicit ReadBudget(size_t cap) noexcept : cap_(cap) {}
    // Charges n bytes unless that would pass the cap; false (nothing charged) when it would.
    bool charge(size_t n) noexcept {
        size_t used = used_.load(std::memory_order_relaxed);
        do {
            if (n > cap_ || used > cap_ - n) return false;
        } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
        note_peak(used + n);
        return true;
    }
    // Charges n bytes whatever the cap.
    void force(size_t n) noexcept { note_peak(used_.fetch_add(n, std::memory_order_relaxed) + n); }
    // Gives back n bytes charged before.
    void release(size_t n) noexcept { used_.fetch_sub(n, std::memory_order_relaxed); }
    // Bytes charged now, the most charged at once, and what is left below the cap.
    size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
    size_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
    size_t room() const noexcept {
        const size_t used = used_.load(std::memory_order_relaxed);
        return used < cap_ ? cap_ - used : 0;
    }

private:
    // Raises peak_ to bytes.
    void note_peak(size_t bytes) noexcept {
        size_t p = peak_.load(std::memory_order_relaxed);
        while (bytes > p && !peak_.compare_exchange_weak(p, bytes, std::memory_order_relaxed)) {
        }
    }
    const size_t cap_;
    std::atomic<size_t> used_{0};
    std::atomic<size_t> peak_{0};
};

// Makes room for one more element of v (a vector a first read keeps beside its pipelines), charging
// what that allocates to budget first: when v is full its capacity doubles, by 1,024 elements at
// least. False, with nothing charged or allocated, when the budget refuses it, unless force (then
// it is charged past the cap: what must be held whatever the cap).
template <class V>
bool reserve_charged(ReadBudget& budget, V& v, bool force = false) {
    if (v.size() < v.capacity()) return true;
    const size_t more = std::max<size_t>(v.capacity(), 1024);
    const size_t bytes = more * sizeof(typename V::value_type);
    if (!budget.charge(bytes)) {
        if (!force) return false;
        budget.force(bytes);
    }
    v.reserve(v.capacity() + more);
    return true;
}

class ReadPipeline {
public:
    // Starts the filing thread, or with background false files each full batch on the caller's
    // thread inside add() and close() (a call limited to one thread). list_tau in (0, 1]: also
    // list prefixes for that threshold; 0: only store. The reserve hints presize the collection
    // (documents, signatures). The filing thread leaves a batch's prefixes unlisted when at least
    // defer_backlog full batches wait (0: always, for tests).
    ReadPipeline(double list_tau, size_t reserve_docs, size_t reserve_sigs, bool background = true,
                 size_t defer_backlog = kDeferBacklog);
    // Two full batches waiting: the filing thread is behind the reader.
    static constexpr size_t kDeferBacklog = 2;
    // Stops and joins the filing thread.
    ~ReadPipeline();
    ReadPipeline(const ReadPipeline&) = delete;
    ReadPipeline& operator=(const ReadPipeline&) = delete;

    // Copies one packed spotsig payload of len bytes (packed.hpp) for filing under id. Returns
    // false without taking it when no batch buffer became free within wait (the caller serves
    // its interrupts and calls again). Rethrows the filing thread's error, if it had one.
    bool add(int64_t id, const unsigned char* payload, size_t len, std::chrono::milliseconds wait);
    // Hands over the last batch (without a filing thread: files it, and throws what filing
    // throws); add() must not be called after it.
    void close();
    // Waits up to wait for the filing of everything closed; true once done. Rethrows the filing
    // thread's error.
    bool wait_filed(std::chrono::milliseconds wait);
    // While held, the filing thread takes no full batch (for tests: add() then finds no free
    // batch, as when the filing thread is behind the reader).
    void hold_filing(bool held);
    // Stops the filing thread (it drops what it has not filed) and joins it. Idempotent.
    void stop() noexcept;

    // Keeps memory_bytes() within bytes where the documents allow: the batch buffers take at
    // most an eighth of it (fit_batches), the collection grows by less than doubling near it
    // (Collection::limit_growth), and with defer_listing, documents filed while the collection
    // and the prefix entries hold more are left unlisted (the matcher lists them, against its own
    // budget: a read that may not fit, not a pass planned to). Call before the first add().
    void limit_growth(size_t bytes, bool defer_listing) noexcept {
        fit_batches(bytes);
        const size_t fixed = batch_bytes_.load(std::memory_order_relaxed);
        docs_.limit_growth(bytes > fixed ? bytes - fixed : 1);
        limit_ = defer_listing ? bytes : 0;
    }
    // From now on (before the first add()), everything this pipeline allocates is charged to
    // budget first: its batch buffers and presized arrays at once, then each document's growth
    // of the collection before it is filed, each listed prefix's slabs before it is listed (or
    // it is left unlisted) and a batch's growth for a large value. The first document whose
    // filing the budget refuses, and every one after it, is dropped and overflowed() turns
    // true: the caller stops reading and discard()s what was read (the join runs in passes).
    // budget outlives the pipeline.
    void charge_to(ReadBudget* budget) noexcept;
    // From now on (before the first add()), every document is filed without the members of set
    // (SignatureSet::remove_into, on the filing thread): the collection, its lengths and the
    // listed prefixes are those of the documents without them, in the same order, each row kept
    // even when nothing is left of it. set outlives the pipeline.
    void remove_signatures(const SignatureSet* set) noexcept { remove_ = set; }
    // True once the budget refused a document (any thread).
    bool overflowed() const noexcept { return overflow_.load(std::memory_order_acquire); }
    // Stops the filing thread and frees the documents, the prefix entries and the batch buffers,
    // giving their charge back to the budget (the caller's thread; add() must not follow).
    void discard() noexcept;
    // Rows taken by add().
    size_t rows() const noexcept { return rows_; }
    // Bytes of the filing thread's next memory that add() faulted in while it waited (the
    // caller's thread).
    size_t prefaulted_bytes() const noexcept { return prefaulted_; }
    // Seconds add() spent without a free batch (faulting memory in or waiting).
    double waited_seconds() const noexcept { return waited_; }
    // Documents whose prefixes the filing thread left to the matcher (after wait_filed() returned true).
    size_t deferred_docs() const noexcept { return deferred_; }
    // Bytes held: the collection, the prefix entries and the batch buffers, and the payloads in
    // batches not filed yet once more (the collection takes about as much for them when they
    // are), so that a reader checking its limit sees what the filing thread is about to add
    // (any thread).
    size_t memory_bytes() const noexcept {
        return filed_bytes_.load(std::memory_order_relaxed) + batch_bytes_.load(std::memory_order_relaxed) +
               pending_bytes_.load(std::memory_order_relaxed);
    }
    // The documents, in the order they were added (after wait_filed() returned true).
    Collection& docs() noexcept { return docs_; }
    // The listed prefixes (after wait_filed() returned true), or null when none were listed.
    join_detail::ListedPrefixes* prefixes() noexcept { return listed_.get(); }

private:
    struct Batch;
    // The filing thread's loop.
    void file_loop();
    // Files one batch.
    void file(Batch& b);
    // Makes the filed bytes visible to memory_bytes().
    void publish_bytes() noexcept;
    // Whether the collection, the prefix entries (with the slabs listing one more document may
    // open) and the batch buffers hold more than limit_ (then no more prefixes are listed while
    // filing).
    bool over_limit() const noexcept;
    // Under mu_, on the caller's thread: the next window of the filing thread's unwritten memory
    // not faulted in yet (an empty span when there is none).
    Collection::Room next_window() noexcept;
    // Lists document d's prefixes (view v) or leaves them to the matcher: unlisted past limit_,
    // or when the budget refuses the slabs listing it may open.
    void list_or_defer(uint32_t d, const MultisetView& v, bool& over);
    // Charges n bytes to the budget (when there is one) for this pipeline; false when refused.
    bool charge(size_t n) noexcept;
    // Makes the (still empty) batch buffers smaller where bytes is small: together they take at
    // most an eighth of it, each at least 64 kB (a larger value grows its batch for
    // itself while it is in it). Never makes them larger.
    void fit_batches(size_t bytes) noexcept;
    // Frees the batch buffers (everything is filed; add() is not called again).
    void free_batches() noexcept;
    // Builds the frequent signatures from the documents filed so far and lists all of them.
    void start_listing();
    // What the filing thread does once everything is filed: lists a small input, publishes.
    void finish_filing();

    double list_tau_;
    bool background_;
    size_t defer_backlog_;
    size_t expected_docs_;                  // the reserve hint: the documents the caller expects, 0 if unknown
    size_t limit_ = 0;                      // past it, filing leaves prefixes unlisted (limit_growth; 0: none)
    size_t batch_size_;                     // the bytes of a batch buffer that has not grown for a large value
    size_t deferred_ = 0;                   // written by the filing thread
    const SignatureSet* remove_ = nullptr;  // see remove_signatures
    Multiset stripped_;                     // the filing thread's document without them
    Collection docs_;
    std::unique_ptr<join_detail::ListedPrefixes> listed_;
    std::unique_ptr<join_detail::PrefixLister> lister_;

    std::vector<std::unique_ptr<Batch>> pool_;
    Batch* current_ = nullptr;  // owned by the caller's thread while being filled
    size_t rows_ = 0;
    // The filing thread's unwritten memory (its collection's room: hashes, frequency bytes),
    // published under mu_ after each batch; how far the caller's thread has faulted it in.
    Collection::Room room_[2];
    unsigned char* faulted_[2] = {nullptr, nullptr};
    size_t prefaulted_ = 0;
    double waited_ = 0;
    bool populate_ok_ = true;            // false once the kernel refused MADV_POPULATE_WRITE
    ReadBudget* budget_ = nullptr;       // see charge_to
    std::atomic<size_t> charged_{0};     // what this pipeline charged to budget_ and holds
    std::atomic<bool> overflow_{false};  // budget_ refused a document
    std::atomic<size_t> batch_bytes_{0};
    std::atomic<size_t> filed_bytes_{0};
    std::atomic<size_t> pending_bytes_{0};  // payload bytes added and not filed yet

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Batch*> full_;         // handed over, in order
    std::atomic<size_t> backlog_{0};  // full_.size(), for the filing thread's look without the lock
    std::vector<Batch*> free_;
    bool closed_ = false;
    bool held_ = false;  // hold_filing
    bool done_ = false;
    std::atomic<bool> stop_{false};
    std::exception_ptr error_;
    std::thread thread_;
};

// The self-join of everything a pipeline filed (after wait_filed() returned true): the default
// method uses the prefixes listed while reading, when they were listed for opt.tau.
JoinPairs self_join(ReadPipeline& input, const JoinOptions& opt);

}  // namespace spotsigs
