// The hand-over of result runs from a join's workers to its caller (see pair_sink.hpp).
#include "core/join/pair_sink.hpp"

#include <chrono>
#include <utility>

namespace spotsigs {

void PairSink::put(JoinPairs&& run) {
    if (run.empty()) return;
    {
        std::unique_lock<std::mutex> lock(mu_);
        // The stop flag is looked at every few milliseconds: it is set without the sink's lock.
        while (held_.load(std::memory_order_relaxed) >= capacity_ &&
               !(stop_ != nullptr && stop_->load(std::memory_order_relaxed)))
            taken_.wait_for(lock, std::chrono::milliseconds(5));
        const size_t held = held_.fetch_add(run.capacity(), std::memory_order_relaxed) + run.capacity();
        if (held > peak_.load(std::memory_order_relaxed)) peak_.store(held, std::memory_order_relaxed);
        runs_.push_back(std::move(run));
        ready_.store(true, std::memory_order_release);
    }
    if (wake_) wake_();
}

bool PairSink::take(std::vector<JoinPairs>& out) {
    out.clear();
    {
        std::lock_guard<std::mutex> lock(mu_);
        out.swap(runs_);
        ready_.store(false, std::memory_order_release);
    }
    taken_.notify_all();
    return !out.empty();
}

void PairSink::done(size_t n) noexcept {
    held_.fetch_sub(n, std::memory_order_relaxed);
    taken_.notify_all();  // a put may wait for this room
}

}  // namespace spotsigs
