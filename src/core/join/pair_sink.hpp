// Result pairs handed from a join's workers to its caller while the join still runs.
//
// The prefix-group matcher finishes its result a partition at a time, the index matcher's workers
// theirs a batch at a time; with a sink each finished run is handed over at once (unsorted)
// instead of being kept and merged at the end, so that the caller (the backend's thread, idle
// while workers match) writes result rows meanwhile and the matcher never holds the whole result.
// Every pair reaches the caller exactly once: through the sink, or in the join's return value.
//
// A put waits while the runs put and not yet written (done) hold capacity or more pairs of
// room (their vectors' capacity, what they take in memory), unless the stop flag is set; so the
// sink holds below capacity plus the last run put, whatever the result's size, and records the
// most it held (peak_bytes), which the caller adds to the join's accounted memory.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "core/join/join.hpp"

namespace spotsigs {

class PairSink {
public:
    // wake, if given, is called (from the putting thread, without the sink's lock held) after
    // each put, so that a waiting consumer can look at once.
    // stop, if given, ends the waits of put at once when set (a canceled join); capacity: the
    // pairs that may wait before a put waits for the consumer.
    explicit PairSink(std::function<void()> wake = nullptr, const std::atomic<bool>* stop = nullptr,
                      size_t capacity = kQueuedPairs)
        : wake_(std::move(wake)), stop_(stop), capacity_(capacity) {}

    // The default capacity.
    static constexpr size_t kQueuedPairs = size_t(1) << 18;
    // What a caller sets aside for the pairs in flight through a sink of the given capacity: the
    // runs put and not yet written (below capacity plus the last run put), and the runs the
    // workers fill before they put them (run_pairs each, a capacity's worth between them).
    // Streaming matchers put a run once it holds run_pairs(capacity, threads) pairs, so only the
    // pairs that one probe document (or one verified candidate) adds past that are not covered.
    static constexpr size_t in_flight_bytes(size_t capacity) noexcept { return 3 * capacity * sizeof(JoinPair); }
    // The pairs a streaming matcher's worker gathers before it puts them: a thread's share of the
    // capacity, at most 65,536 and at least 1, rounded down to a power of two (so that a vector
    // grown by doubling to hold them has no room to spare).
    static constexpr size_t run_pairs(size_t capacity, int threads) noexcept {
        const size_t share = capacity / static_cast<size_t>(threads < 1 ? 1 : threads);
        size_t run = 1;
        while (2 * run <= share && 2 * run <= kMaxRun) run *= 2;
        return run;
    }
    static constexpr size_t kMaxRun = size_t(1) << 16;
    // The pairs that may wait before a put waits.
    size_t capacity() const noexcept { return capacity_; }

    // From any thread: hands over a run of result pairs (an empty run is dropped); waits while
    // the sink is full (see above).
    void put(JoinPairs&& run);
    // From the consumer: moves every run handed over so far to out (cleared first); true if any.
    bool take(std::vector<JoinPairs>& out);
    // From the consumer: a taken run whose vector had room for n pairs (its capacity() when
    // taken) is written and freed.
    void done(size_t n) noexcept;
    // The most bytes of pairs (runs' capacity) that were put and not yet done at once.
    size_t peak_bytes() const noexcept { return peak_.load(std::memory_order_relaxed) * sizeof(JoinPair); }
    // True when runs wait to be taken (a lock-free look).
    bool ready() const noexcept { return ready_.load(std::memory_order_acquire); }

    // An upper bound on the pairs the join will put, once the producer knows one (0: none yet).
    void set_bound(uint64_t pairs) noexcept { bound_.store(pairs, std::memory_order_release); }
    uint64_t bound() const noexcept { return bound_.load(std::memory_order_acquire); }

private:
    std::function<void()> wake_;
    const std::atomic<bool>* stop_;
    size_t capacity_;
    std::mutex mu_;
    std::condition_variable taken_;  // signalled when the consumer empties the queue
    std::vector<JoinPairs> runs_;
    std::atomic<size_t> held_{0};  // room (pairs) of the runs put and not yet done
    std::atomic<size_t> peak_{0};  // the most held_ was
    std::atomic<bool> ready_{false};
    std::atomic<uint64_t> bound_{0};
};

}  // namespace spotsigs
