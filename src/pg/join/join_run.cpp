// The signal-blocked matcher thread, the polling loop on the main thread, and progress display.
#include "pg/join/join_run.hpp"

extern "C" {
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/timestamp.h"
}

#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "core/common/error.hpp"
#include "core/join/pair_sink.hpp"
#include "pg/boundary.hpp"
#include "pg/join/join_gucs.hpp"

namespace spotsigs::pg {

// Stops the pipelines of every live ExitStop (process exit, main thread).
void stop_pipes_for_exit() noexcept;

namespace {

// The live ExitStops, most recent first.
ExitStop* live_exit_stops = nullptr;

constexpr auto kPollInterval = std::chrono::milliseconds(10);
constexpr int64_t kReportIntervalUs = 1000000;

// Blocks every signal in the calling thread for its lifetime, restoring the old mask after.
class AllSignalsBlocked {
public:
    // Blocks all signals.
    AllSignalsBlocked() {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old_);
    }
    // Restores the previous mask.
    ~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

private:
    sigset_t old_;
};

class StoppingThread;
// The running matcher thread, if any, and the pipelines being read, for the process-exit callback.
StoppingThread* active_thread = nullptr;
bool exit_callback_registered = false;

// How long a backend that is exiting waits for its matcher thread to stop.
constexpr auto kExitGrace = std::chrono::seconds(5);

// Owns the matcher thread: stops and joins it on every exit path, including exceptions.
//
// Every loop of the core that can run long checks the stop flag at bounded intervals (the
// matcher's per-document and per-stride checks, the bounded searches of partition.cpp and
// join_bounds.hpp), so a stopped thread ends promptly and the waits below are short. The one
// wait that does not trust this is the one at process exit: there the thread is abandoned after
// kExitGrace, since the process and all the memory the thread reads end with the exit anyway.
class StoppingThread {
public:
    // Starts fn on a thread that inherits a fully blocked signal mask (no unblocked window).
    template <class F>
    StoppingThread(CancelToken& token, F&& fn) : token_(token) {
        AllSignalsBlocked blocked;
        thread_ = std::thread([this, fn = std::forward<F>(fn)]() mutable {
            fn();
            finished_.store(true, std::memory_order_release);
        });
        active_thread = this;
    }
    // Asks the work to stop and waits for it.
    ~StoppingThread() { stop(); }
    // Sets the stop flag and joins the thread (idempotent, never throws).
    void stop() noexcept {
        token_.stop.store(true);
        try {
            if (thread_.joinable()) thread_.join();
        } catch (...) {
        }
        if (active_thread == this) active_thread = nullptr;
    }
    // At process exit: sets the stop flag and joins the thread if it ends within kExitGrace,
    // otherwise leaves it to end with the process (never throws).
    void stop_for_exit() noexcept {
        token_.stop.store(true);
        auto deadline = std::chrono::steady_clock::now() + kExitGrace;
        while (!finished_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (finished_.load(std::memory_order_acquire)) {
            stop();
            return;
        }
        try {
            thread_.detach();
        } catch (...) {
        }
        if (active_thread == this) active_thread = nullptr;
    }

private:
    CancelToken& token_;
    std::atomic<bool> finished_{false};
    std::thread thread_;
};

// On backend exit (e.g. pg_terminate_backend, which exits without unwinding), stops a running
// matcher thread before the process's memory goes away.
void stop_on_exit(int, Datum) {
    if (active_thread != nullptr) active_thread->stop_for_exit();
    stop_pipes_for_exit();
}

// Registers stop_on_exit once per backend.
void register_exit_callback() {
    if (exit_callback_registered) return;
    pg_guard([] { before_shmem_exit(stop_on_exit, 0); });
    exit_callback_registered = true;
}

// Microseconds since some fixed point (PostgreSQL's clock, read without raising errors).
int64_t now_us() {
    return static_cast<int64_t>(GetCurrentTimestamp());
}

}  // namespace

Progress::Progress(const char* fn_name) : fn_(fn_name) {
    start_us_ = now_us();
    last_us_ = start_us_;
}

Progress::~Progress() {
    try {
        finish();
    } catch (...) {
        // Only the displayed text is at stake; the error being unwound matters more.
    }
}

bool Progress::due() {
    int64_t t = now_us();
    if (t - last_us_ < kReportIntervalUs) return false;
    last_us_ = t;
    return true;
}

void Progress::publish(const char* text) {
    // pg_stat_activity keeps track_activity_query_size - 1 bytes; the text is cut there, at a
    // character boundary (the query may hold multibyte characters anywhere).
    std::string buf = std::string(text) + " | ";
    const char* query = debug_query_string ? debug_query_string : "";
    const size_t room = static_cast<size_t>(std::max(pgstat_track_activity_query_size, 2) - 1);
    if (buf.size() < room) buf.append(query, strnlen(query, room - buf.size() + MAX_MULTIBYTE_CHAR_LEN));
    int len = 0;
    pg_guard([&] { len = pg_mbcliplen(buf.c_str(), static_cast<int>(buf.size()), static_cast<int>(room)); });
    buf.resize(static_cast<size_t>(len));
    pg_guard([&] { pgstat_report_activity(STATE_RUNNING, buf.c_str()); });
    changed_ = true;
}

std::string Progress::head() const {
    return stage_.empty() ? std::string(fn_) : std::string(fn_) + ": " + stage_;
}

void Progress::reading(size_t rows) {
    if (!due()) return;
    char text[256];
    std::snprintf(text, sizeof text, "%s: reading, %zu rows read", head().c_str(), rows);
    publish(text);
}

void Progress::matching(uint64_t done, uint64_t total) {
    if (!due()) return;
    char text[256];
    double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
    std::snprintf(text, sizeof text, "%s: matching, %llu of %llu documents (%.0f%%)", head().c_str(),
                  static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), pct);
    publish(text);
}

void Progress::finish() {
    if (!changed_) return;
    pg_guard([] { pgstat_report_activity(STATE_RUNNING, debug_query_string); });
    changed_ = false;
}

size_t sink_capacity() {
    const size_t by_limit = join_memory_limit_bytes() / 64 / sizeof(JoinPair);
    return std::clamp<size_t>(by_limit, 4096, PairSink::kQueuedPairs);
}

JoinPairs run_on_thread(const std::function<JoinPairs(const JoinOptions&)>& work, JoinOptions opt, Progress& progress,
                        uint64_t total, const EmitFn& emit) {
    CancelToken token;
    opt.cancel = &token;
    JoinPairs result;
    std::exception_ptr failure;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    // A put wakes the main thread at once (the sink calls this without its own lock held); a
    // stopped join's puts do not wait for a consumer that has gone.
    PairSink sink(
        [&] {
            std::lock_guard<std::mutex> lock(mu);
            cv.notify_all();
        },
        &token.stop, sink_capacity());
    if (emit) opt.sink = &sink;
    std::vector<JoinPairs> runs;
    // Passes every run put so far to emit, serving interrupts between runs (main thread).
    auto drain = [&] {
        while (sink.take(runs))
            for (JoinPairs& run : runs) {
                // Its room as put (emit may drop pairs from it, not give memory back).
                const size_t room = run.capacity();
                emit(run, sink.bound());
                run = JoinPairs();  // its memory goes back before the next run is written
                sink.done(room);
                check_interrupts();
            }
    };
    register_exit_callback();
    {
        // No PostgreSQL call happens on this thread: it only runs the core on plain data.
        StoppingThread thread(token, [&] {
            try {
                result = work(opt);
            } catch (...) {
                failure = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(mu);
            done = true;
            cv.notify_all();
        });
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(mu);
                if (cv.wait_for(lock, kPollInterval, [&] { return done || sink.ready(); }) && done) break;
            }
            // A cancel or statement_timeout throws PgError here; ~StoppingThread stops the work.
            check_interrupts();
            if (emit) drain();
            progress.matching(token.progress.load(std::memory_order_relaxed), total);
        }
    }
    if (failure) std::rethrow_exception(failure);
    if (emit) drain();  // the runs put after the last look
    // The pairs on their way to emit come on top of the matcher's own peak.
    if (emit && opt.accounted_peak != nullptr) *opt.accounted_peak += sink.peak_bytes();
    return result;
}

ExitStop::ExitStop(ReadPipeline& pipe) : pipe_(&pipe) {
    register_exit_callback();
    next_ = live_exit_stops;
    if (next_ != nullptr) next_->prev_ = this;
    live_exit_stops = this;
}

ExitStop::~ExitStop() {
    if (prev_ != nullptr) prev_->next_ = next_;
    else if (live_exit_stops == this) live_exit_stops = next_;
    if (next_ != nullptr) next_->prev_ = prev_;
}

void stop_pipes_for_exit() noexcept {
    for (ExitStop* s = live_exit_stops; s != nullptr; s = s->next_) s->pipe_->stop();
    live_exit_stops = nullptr;
}

void log_process_memory(const char* fn, const char* step) {
    pg_guard([&] {
        if (!message_level_is_interesting(DEBUG2)) return;
        long anon = -1, file = -1, shmem = -1, hwm = -1;
        if (FILE* f = fopen("/proc/self/status", "r")) {
            char line[256];
            while (fgets(line, sizeof line, f) != nullptr) {
                if (strncmp(line, "RssAnon:", 8) == 0) anon = atol(line + 8);
                if (strncmp(line, "RssFile:", 8) == 0) file = atol(line + 8);
                if (strncmp(line, "RssShmem:", 9) == 0) shmem = atol(line + 9);
                if (strncmp(line, "VmHWM:", 6) == 0) hwm = atol(line + 6);
            }
            fclose(f);
        }
        const struct mallinfo2 mi = mallinfo2();
        elog(DEBUG2,
             "%s: %s: resident anonymous %ld kB, files %ld kB, shared memory %ld kB (process high-water %ld "
             "kB); malloc arenas %zu kB, %zu kB in use, mappings %zu kB",
             fn, step, anon, file, shmem, hwm, mi.arena >> 10, mi.uordblks >> 10, mi.hblkhd >> 10);
    });
}

void throw_memory_limit(const char* what, const std::string& detail) {
    throw Error(
        ErrorKind::OutOfMemory,
        std::string("spotsigs join exceeds spotsigs.join_memory_limit (") + join_memory_limit_text() + ") while " +
            what,
        (detail.empty() ? std::string()
                        : std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(detail[0])))) +
                              detail.substr(1) + ". ") +
            "Raise spotsigs.join_memory_limit, or join fewer or smaller documents.");
}

}  // namespace spotsigs::pg
