// Running a core join on a background thread while the backend's main thread keeps serving
// interrupts, and showing the join's progress in pg_stat_activity.
#pragma once

#include "pg/pg.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/join/join.hpp"
#include "core/join/read_pipeline.hpp"

namespace spotsigs::pg {

// Progress shown in pg_stat_activity.query of the joining backend, updated about once a second
// once the call has run for a second, as "<fn>: reading N rows | <query>" and
// "<fn>: matching D of N documents (P%) | <query>", with the stage of a call that reads its rows
// more than once after the name ("<fn>: pass 3, lengths 40 to 75 of 120: reading ..."), cut to
// what track_activity_query_size keeps at a character boundary. Main thread only.
class Progress {
public:
    explicit Progress(const char* fn_name);
    // Puts the original query text back on every way out, an error's unwinding included: an idle
    // session keeps showing its last query text, which must not be a cancelled join's progress.
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    // Names the stage the next reports belong to (empty: none).
    void stage(std::string text) { stage_ = std::move(text); }
    // Called while rows are read.
    void reading(size_t rows);
    // Called while matching; done counts probe documents finished.
    void matching(uint64_t done, uint64_t total);
    // Puts the original query text back.
    void finish();

private:
    // True when a second has passed since the last report.
    bool due();
    // Publishes text followed by the original query.
    void publish(const char* text);

    // fn_, then ": " and the stage when there is one.
    std::string head() const;

    const char* fn_;
    std::string stage_;
    int64_t start_us_;
    int64_t last_us_;
    bool changed_ = false;
};

// Runs work(opt) on a new thread with every signal blocked (its own workers inherit that mask).
// The calling (main) thread polls CHECK_FOR_INTERRUPTS every 10 ms; on a cancel, timeout or any
// other interrupt it sets the cancel token, joins the thread and rethrows the PostgreSQL error.
// Exceptions of work are rethrown on the main thread.
// With emit, work's options carry a PairSink, and the main thread passes every run of pairs put
// there to emit (with the sink's bound on the pairs to come) while it waits, between its polls;
// the return value holds the pairs that did not go through the sink.
using EmitFn = std::function<void(JoinPairs& run, uint64_t bound)>;
// The capacity (pairs) of the sink run_on_thread gives work: a 64th of spotsigs.join_memory_limit,
// within 4,096 and PairSink::kQueuedPairs pairs; PairSink::in_flight_bytes of it is what a
// streaming join sets aside beside its matcher's structures.
size_t sink_capacity();
JoinPairs run_on_thread(const std::function<JoinPairs(const JoinOptions&)>& work, JoinOptions opt, Progress& progress,
                        uint64_t total, const EmitFn& emit = nullptr);

// While alive, a backend exit that skips unwinding (pg_terminate_backend) first stops the
// pipeline's filing thread, as it stops the matcher thread. Main thread only. Any number may be
// alive at once (one statement can hold many joins' inputs open until the executor ends): the
// live ones form a list through themselves, so registering never allocates and never fails.
class ExitStop {
public:
    explicit ExitStop(ReadPipeline& pipe);
    ~ExitStop();
    ExitStop(const ExitStop&) = delete;
    ExitStop& operator=(const ExitStop&) = delete;

private:
    friend void stop_pipes_for_exit() noexcept;
    ReadPipeline* pipe_;
    ExitStop* prev_ = nullptr;
    ExitStop* next_ = nullptr;
};

// Logs at DEBUG2 the backend's own memory at a step of a join (fn names it), to set beside what
// the join accounts: its resident anonymous memory (heap and private mappings), file pages (the
// server's and the libraries' code) and shared memory (the shared buffers it touched) now, the
// process's resident high-water mark (VmHWM, the sum of all three), and what glibc's arenas hold
// (all threads' arenas) and have in use, and its mapped blocks. Backend's thread.
void log_process_memory(const char* fn, const char* step);

// Throws Error(OutOfMemory) naming spotsigs.join_memory_limit; what says which step ran out,
// detail (when not empty) what needed the memory.
[[noreturn]] void throw_memory_limit(const char* what, const std::string& detail = std::string());

}  // namespace spotsigs::pg
