// Result pairs handed from a join's workers to its caller while the join still runs.
//
// The prefix-group matcher finishes its result a partition at a time; with a sink it hands each
// finished partition over at once (unsorted) instead of merging them all at the end, so that the
// caller (the backend's thread, idle while workers match) writes result rows meanwhile. Every
// pair reaches the caller exactly once: through the sink, or in the join's return value.
#pragma once

#include <atomic>
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
    explicit PairSink(std::function<void()> wake = nullptr) : wake_(std::move(wake)) {}

    // From any thread: hands over a run of result pairs (an empty run is dropped).
    void put(JoinPairs&& run);
    // From the consumer: moves every run handed over so far to out (cleared first); true if any.
    bool take(std::vector<JoinPairs>& out);
    // True when runs wait to be taken (a lock-free look).
    bool ready() const noexcept { return ready_.load(std::memory_order_acquire); }

    // An upper bound on the pairs the join will put, once the producer knows one (0: none yet).
    void set_bound(uint64_t pairs) noexcept { bound_.store(pairs, std::memory_order_release); }
    uint64_t bound() const noexcept { return bound_.load(std::memory_order_acquire); }

private:
    std::function<void()> wake_;
    std::mutex mu_;
    std::vector<JoinPairs> runs_;
    std::atomic<bool> ready_{false};
    std::atomic<uint64_t> bound_{0};
};

}  // namespace spotsigs
