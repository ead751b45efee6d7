// Worker threads of the join: signal mask, dynamic chunks, exception transport, output budget.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <thread>

#include "core/common/error.hpp"
#include "core/common/threshold.hpp"
#include "core/join/join_internal.hpp"
#include "core/join/pair_sink.hpp"
#include "core/memory/block_lists.hpp"
#include "core/memory/huge_pages.hpp"

namespace spotsigs::join_detail {

namespace {

// Blocks every signal in the calling thread (signals belong to the thread that started the join).
void block_all_signals() noexcept {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

}  // namespace

void check_options(const JoinOptions& opt) {
    check_threshold(opt.tau);
    if (opt.threads < 1)
        throw Error(ErrorKind::InvalidParameter, "the join needs at least one thread",
                    "threads = " + std::to_string(opt.threads));
}

ProbeConfig config_for(JoinMethod m) {
    ProbeConfig c;
    switch (m) {
        case JoinMethod::Partitioned: c.count = kCountFilterMass; break;
        case JoinMethod::NoPart:
            c.positional = false;
            c.prefix_index = false;
            c.partitions = false;
            break;
        case JoinMethod::NoPrune:
        case JoinMethod::BruteForce:
            c.prune = false;
            c.positional = false;
            c.prefix_index = false;
            c.partitions = false;
            break;
    }
    return c;
}

void run_workers(int threads, size_t total, size_t chunk,
                 const std::function<void(int worker, size_t begin, size_t end)>& body) {
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));

    // Each worker takes chunks until none are left or some worker failed.
    auto work = [&](int w) {
        block_all_signals();
        try {
            for (;;) {
                if (failed.load(std::memory_order_relaxed)) break;
                size_t b = next.fetch_add(chunk, std::memory_order_relaxed);
                if (b >= total) break;
                body(w, b, std::min(total, b + chunk));
            }
        } catch (...) {
            errors[static_cast<size_t>(w)] = std::current_exception();
            failed.store(true);
        }
        stream_fence();  // the lines a worker streamed to BlockLists are seen after the join
    };

    // Start the threads with signals already blocked, so that none is ever delivered to them.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    std::exception_ptr start_error;
    try {
        for (int w = 0; w < threads; ++w) pool.emplace_back(work, w);
    } catch (...) {
        start_error = std::current_exception();
        failed.store(true);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    for (std::thread& t : pool) t.join();
    if (start_error) std::rethrow_exception(start_error);
    for (std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
}

WorkerGuard::WorkerGuard(const JoinOptions& opt, const MemoryBudget& budget, bool streams)
    : budget_(budget),
      cancel_(opt.cancel),
      limit_(opt.memory_limit),
      base_(budget.used()),
      streams_(streams && opt.sink != nullptr),
      verified_out_(opt.candidates) {}

WorkerGuard::~WorkerGuard() {
    budget_.note_peak(
        std::max(peak_.load(), base_ + candidate_bytes_.load() + copies() * pairs_.load() * sizeof(JoinPair)));
    if (verified_out_ != nullptr) verified_out_->fetch_add(verified_.load(), std::memory_order_relaxed);
}

void WorkerGuard::add_pairs(size_t n) {
    size_t total = pairs_.fetch_add(n, std::memory_order_relaxed) + n;
    // Held pairs live once in the workers' vectors and once more while they are merged; streamed
    // ones only in the run that goes to the sink.
    const size_t bytes = base_ + candidate_bytes_.load(std::memory_order_relaxed) + copies() * total * sizeof(JoinPair);
    size_t seen = peak_.load(std::memory_order_relaxed);
    while (bytes > seen && !peak_.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
    }
    if (limit_ != 0 && bytes > limit_ && !streams_)
        throw JoinMemoryError("similarity join exceeds its memory limit of " + std::to_string(limit_) + " bytes",
                              "the result holds " + std::to_string(total) + " pairs so far", bytes);
}

void WorkerGuard::hand_over(PairSink& sink, JoinPairs& run) {
    const size_t n = streams_ ? run.capacity() : run.size();
    sink.put(std::move(run));
    run = JoinPairs();
    pairs_.fetch_sub(n, std::memory_order_relaxed);
}

size_t WorkerGuard::note_now() noexcept {
    const size_t bytes = base_ + candidate_bytes_.load() + copies() * pairs_.load() * sizeof(JoinPair);
    size_t seen = peak_.load(std::memory_order_relaxed);
    while (bytes > seen && !peak_.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
    }
    return bytes;
}

void WorkerGuard::settle_candidates(size_t bytes) noexcept {
    candidate_bytes_.store(bytes);
    note_now();
}

bool WorkerGuard::rebase(size_t extra) noexcept {
    base_ = budget_.used() + extra;
    const size_t now = note_now();
    return limit_ == 0 || now <= limit_;
}

bool WorkerGuard::add_candidate_bytes(size_t n) noexcept {
    const size_t total = candidate_bytes_.fetch_add(n, std::memory_order_relaxed) + n;
    return limit_ == 0 || base_ + total <= limit_;
}

JoinPairs merge_sorted(std::vector<JoinPairs>& parts) {
    size_t total = 0;
    for (const auto& p : parts) total += p.size();
    JoinPairs out;
    reserve_huge(out, total);
    for (auto& p : parts) {
        out.insert(out.end(), p.begin(), p.end());
        JoinPairs().swap(p);
    }
    sort_pairs(out);
    return out;
}

void sort_pairs(JoinPairs& pairs) {
    const size_t n = pairs.size();
    if (n < 2048) {
        std::sort(pairs.begin(), pairs.end(),
                  [](const JoinPair& x, const JoinPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
        return;
    }
    // An LSD radix sort on the key a << wb | b (wb: the width of the largest b), 11 bits per
    // pass, skipping the low bits that every key shares. The pairs of a large cluster are many
    // equal a's with runs of b's, on which std::sort's introsort can fall back to heapsort; the
    // radix sort's cost depends only on the count and the key width.
    uint32_t max_b = 0;
    for (const JoinPair& p : pairs) max_b = std::max(max_b, p.b);
    const unsigned wb = max_b == 0 ? 0 : 32 - static_cast<unsigned>(__builtin_clz(max_b));
    auto key = [wb](const JoinPair& p) { return static_cast<uint64_t>(p.a) << wb | p.b; };
    uint64_t any = 0, all = ~uint64_t(0);
    for (const JoinPair& p : pairs) {
        any |= key(p);
        all &= key(p);
    }
    const uint64_t vary = any ^ all;
    if (vary == 0) return;  // all keys equal
    constexpr unsigned kBits = 11;
    constexpr size_t kDigits = size_t(1) << kBits;
    const unsigned low = static_cast<unsigned>(__builtin_ctzll(vary));
    const unsigned high = 64 - static_cast<unsigned>(__builtin_clzll(vary));
    JoinPairs spare(n);
    std::vector<size_t> at(kDigits + 1);
    for (unsigned shift = low; shift < high; shift += kBits) {
        std::fill(at.begin(), at.end(), 0);
        for (const JoinPair& p : pairs) ++at[((key(p) >> shift) & (kDigits - 1)) + 1];
        for (size_t d = 1; d <= kDigits; ++d) at[d] += at[d - 1];
        for (const JoinPair& p : pairs) spare[at[(key(p) >> shift) & (kDigits - 1)]++] = p;
        pairs.swap(spare);
    }
}

namespace {

// The key pairs are sorted by.
uint64_t pair_key(const JoinPair& p) noexcept {
    return static_cast<uint64_t>(p.a) << 32 | p.b;
}

// Merges the slices [from[r], to[r]) of the sorted runs into out, starting at `at`.
void merge_slices(const std::vector<JoinPairs>& runs, const std::vector<size_t>& from, const std::vector<size_t>& to,
                  JoinPair* at) {
    // A heap of the runs' next keys, smallest on top.
    std::vector<std::pair<uint64_t, size_t>> heap;  // (key, run)
    std::vector<size_t> pos(from);
    auto later = [](const std::pair<uint64_t, size_t>& x, const std::pair<uint64_t, size_t>& y) { return x > y; };
    for (size_t r = 0; r < runs.size(); ++r)
        if (pos[r] < to[r]) heap.emplace_back(pair_key(runs[r][pos[r]]), r);
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const size_t r = heap.back().second;
        *at++ = runs[r][pos[r]++];
        if (pos[r] < to[r]) {
            heap.back().first = pair_key(runs[r][pos[r]]);
            std::push_heap(heap.begin(), heap.end(), later);
        } else {
            heap.pop_back();
        }
    }
}

// Where each run's pairs with keys below `key` end, and how many pairs that is in all.
size_t cut_below(const std::vector<JoinPairs>& runs, uint64_t key, std::vector<size_t>& cut) {
    size_t below = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
        cut[r] = static_cast<size_t>(
            std::partition_point(runs[r].begin(), runs[r].end(), [&](const JoinPair& p) { return pair_key(p) < key; }) -
            runs[r].begin());
        below += cut[r];
    }
    return below;
}

}  // namespace

JoinPairs merge_sorted_runs(std::vector<JoinPairs>& runs, int threads) {
    size_t total = 0;
    for (const auto& r : runs) total += r.size();
    JoinPairs out(total);
    // Slices of the key space with about total / threads pairs each, one per worker: slice t
    // holds the keys in [bound[t], bound[t + 1]), each found by bisecting the key space (the
    // smallest key with at least t * total / threads pairs below it). Every run is cut below the
    // same keys, so each pair lies in exactly one slice (equal keys in the same one), and the
    // slices' outputs follow each other in key order.
    const size_t slices = (threads > 1 && total >= (size_t(1) << 16)) ? static_cast<size_t>(threads) : 1;
    std::vector<std::vector<size_t>> bound(slices + 1, std::vector<size_t>(runs.size(), 0));
    std::vector<size_t> start(slices + 1, 0);
    for (size_t r = 0; r < runs.size(); ++r) bound[slices][r] = runs[r].size();
    start[slices] = total;
    for (size_t t = 1; t < slices; ++t) {
        const size_t want = total / slices * t;
        uint64_t lo = 0, hi = ~uint64_t(0);  // the answer lies in (lo, hi]
        while (hi - lo > 1) {
            const uint64_t mid = lo + (hi - lo) / 2;
            if (cut_below(runs, mid, bound[t]) >= want) hi = mid;
            else lo = mid;
        }
        start[t] = cut_below(runs, hi, bound[t]);
    }
    run_workers(static_cast<int>(slices), slices, 1, [&](int, size_t t0, size_t t1) {
        for (size_t t = t0; t < t1; ++t) merge_slices(runs, bound[t], bound[t + 1], out.data() + start[t]);
    });
    for (auto& r : runs) JoinPairs().swap(r);
    return out;
}

}  // namespace spotsigs::join_detail
