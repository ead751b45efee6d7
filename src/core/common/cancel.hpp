// Cooperative cancellation and progress between a caller and long-running core work.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace spotsigs {

// Shared between a controlling thread and workers: a stop flag and a progress counter.
struct CancelToken {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> progress{0};

    // True once someone asked the work to stop.
    bool stopped() const noexcept { return stop.load(std::memory_order_relaxed); }
};

// A callback that single-threaded core code calls now and then; it may throw to abort the work
// (the PostgreSQL layer uses it to run CHECK_FOR_INTERRUPTS on the backend's own thread).
using PollFn = std::function<void()>;

}  // namespace spotsigs
