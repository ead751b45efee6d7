// The hand-over of result runs from a join's workers to its caller (see pair_sink.hpp).
#include "core/join/pair_sink.hpp"

#include <utility>

namespace spotsigs {

void PairSink::put(JoinPairs&& run) {
    if (run.empty()) return;
    {
        std::lock_guard<std::mutex> lock(mu_);
        runs_.push_back(std::move(run));
        ready_.store(true, std::memory_order_release);
    }
    if (wake_) wake_();
}

bool PairSink::take(std::vector<JoinPairs>& out) {
    out.clear();
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(runs_);
    ready_.store(false, std::memory_order_release);
    return !out.empty();
}

}  // namespace spotsigs
