// SQL entry points of the similarity join: spotsigs_join(), spotsigs_join_rs(),
// spotsigs_clusters(). Arguments and catalog checks are handled before any C++ object exists;
// the documents are copied out on the main thread and matched on a signal-blocked thread.
#include "pg/pg.hpp"

extern "C" {
#include "catalog/pg_type_d.h"
#include "funcapi.h"
#include "utils/tuplestore.h"
}

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/content.hpp"
#include "core/join/join.hpp"
#include "core/join/join_passes.hpp"
#include "core/join/read_pipeline.hpp"
#include "core/memory/huge_alloc.hpp"
#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/join/citus.hpp"
#include "pg/join/join_gucs.hpp"
#include "pg/join/join_read.hpp"
#include "pg/join/join_run.hpp"
#include "pg/join/result_store.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace {

// Share of the memory limit a pass's documents may take when passes are planned; the matcher's
// structures take the rest (a pass that still does not fit is split).
constexpr uint64_t kPassRowShare = 4;
// Once a pass has run, the next ones are planned to need about this share of the limit.
constexpr double kPassMargin = 0.8;

// One call's checked arguments: plain data and palloc'd strings only (no destructors).
struct JoinCall {
    JoinSource src[2];
    int sources = 1;
    double tau = 0;
    int threads = 1;
    JoinMethod method = JoinMethod::Partitioned;
    bool content = false;  // the content measure (content.hpp) instead of plain multiset Jaccard
};

// Reads the measure argument at position p (absent in calls through the 0.1.0 definitions, which
// have no such argument): 'content' or 'jaccard'; NULL means 'content' when the threshold is
// NULL too and 'jaccard' when the call gives one, so that 0.1.0 calls keep their answers.
bool read_measure(FunctionCallInfo fcinfo, int p, bool threshold_given) {
    if (PG_NARGS() <= p || PG_ARGISNULL(p)) return PG_NARGS() > p && !threshold_given;
    char* m = text_to_cstring(PG_GETARG_TEXT_PP(p));
    if (strcmp(m, "content") == 0) return true;
    if (strcmp(m, "jaccard") == 0) return false;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown measure \"%s\"", m),
                    errhint("Use 'content' or 'jaccard'.")));
    return false;
}

// Reads and checks the arguments: `sources` (rel, id, sig) triples, then threshold, threads,
// method and (self-joins) measure. Raises PostgreSQL errors directly; call before entering C++.
// fn: the function called.
JoinCall read_call(FunctionCallInfo fcinfo, int sources, const char* fn) {
    JoinCall call;
    call.sources = sources;
    // Whether this join's large blocks may come from the reserved huge pages (huge_alloc.hpp).
    use_reserved_huge_pages(join_huge_pages);
    for (int k = 0; k < 3 * sources; ++k)
        if (PG_ARGISNULL(k))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("the relation and column arguments must not be NULL")));
    int p = 3 * sources;
    if (sources == 1) call.content = read_measure(fcinfo, p + 3, !PG_ARGISNULL(p));
    call.tau = PG_ARGISNULL(p) && call.content ? kContentThreshold : threshold_arg(fcinfo, p);
    call.threads = PG_ARGISNULL(p + 1) ? join_max_threads : PG_GETARG_INT32(p + 1);
    if (call.threads < 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("threads must be at least 1, not %d", call.threads)));
    if (call.threads > join_max_threads) call.threads = join_max_threads;
    call.method = static_cast<JoinMethod>(join_method_guc);
    if (!PG_ARGISNULL(p + 2)) {
        char* m = text_to_cstring(PG_GETARG_TEXT_PP(p + 2));
        if (!parse_join_method(m, &call.method))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("unknown join method \"%s\"", m),
                            errhint("Use 'partitioned', 'nopart', 'noprune' or 'bruteforce'.")));
    }
    Oid spotsig = spotsig_type_oid(fcinfo);
    for (int k = 0; k < sources; ++k)
        call.src[k] = resolve_source(PG_GETARG_OID(3 * k), NameStr(*PG_GETARG_NAME(3 * k + 1)),
                                     NameStr(*PG_GETARG_NAME(3 * k + 2)), spotsig, fn);
    // Fails early (before any reading) when the caller cannot take a materialized result.
    InitMaterializedSRF(fcinfo, 0);
    return call;
}

// The candidate pairs the joins of this session verified (JoinOptions::candidates), read by
// spotsigs_join_candidates(). Atomic: a matcher thread adds to it.
std::atomic<uint64_t> session_candidates{0};

// Options for the core from the call (the memory budget is set by with_budget once the input is filed).
JoinOptions options_for(const JoinCall& call) {
    JoinOptions opt;
    opt.candidates = &session_candidates;
    opt.tau = call.tau;
    opt.threads = call.threads;
    opt.method = call.method;
    return opt;
}

// Runs a core join on the matcher thread; the core's memory error is reported with the limit,
// what needed the memory (the error's detail, or its message when it has none) in DETAIL (or,
// with passes, left to the caller, which then joins in smaller passes).
JoinPairs match(const std::function<JoinPairs(const JoinOptions&)>& work,
                const JoinOptions& opt, Progress& progress, uint64_t total, const EmitFn& emit = nullptr,
                bool passes = false) {
    try {
        return run_on_thread(work, opt, progress, total, emit);
    } catch (const Error& e) {
        if (passes && dynamic_cast<const JoinMemoryError*>(&e) != nullptr) throw;
        if (e.kind() == ErrorKind::OutOfMemory)  // JoinMemoryError included
            throw_memory_limit("matching", e.detail().empty() ? std::string(e.what()) : e.detail());
        throw;
    }
}

// Seconds since t0 on a monotonic clock.
double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Logs the phase times at DEBUG1 (SET client_min_messages = debug1 to see them): the read on the
// main thread, how much longer the filing thread needed, and the matching after that.
void log_phases(const char* fn, size_t docs, size_t bytes, double read_s, double filed_s, double match_s,
                size_t pairs) {
    pg_guard([&] {
        elog(DEBUG1, "%s: read %zu documents (%zu MB) in %.3f s, filed %.3f s later, matched in %.3f s, %zu pairs",
             fn, docs, bytes >> 20, read_s, filed_s, match_s, pairs);
    });
}

// Options for a join of already filed collections holding used bytes (the matcher thread).
JoinOptions with_budget(JoinOptions opt, size_t used) {
    size_t limit = join_memory_limit_bytes();
    if (used >= limit)
        throw JoinMemoryError("the documents alone exceed the memory limit", "", used + 1);
    opt.memory_limit = limit - used;
    return opt;
}

// Throws Error(OutOfMemory) when docs and the content statistics of docs would not fit
// spotsigs.join_memory_limit together (match() names the setting). Matcher thread.
void check_statistics_memory(const Collection& docs, int threads) {
    size_t need = docs.memory_bytes() + template_memory_bytes(docs, threads);
    if (need > join_memory_limit_bytes())
        throw Error(ErrorKind::OutOfMemory,
                    "the content statistics need " + std::to_string(need >> 10) + " kB with the documents");
}

// The self-join of docs under the content measure: the collection's template signatures are
// found (content.hpp), every document is copied without them, and the copies are joined, so the
// matcher and its exactness are those of the plain measure on the copies. The copies keep the
// documents' order, so the pairs' indexes are valid in docs too. Matcher thread (so it only
// notes how many template signatures it found and how long that took, for the main thread).
JoinPairs content_join(const Collection& docs, const JoinOptions& o, size_t* templates, double* stats_s) {
    auto t0 = std::chrono::steady_clock::now();
    check_statistics_memory(docs, o.threads);
    std::vector<uint64_t> drop = template_signatures(docs, o.threads, o.cancel);
    Collection content = without_signatures(docs, drop);
    *templates = drop.size();
    *stats_s = seconds_since(t0);
    return self_join(content, with_budget(o, docs.memory_bytes() + content.memory_bytes()));
}

// The bytes charged at most at once in one join: its documents plus its matcher's peak.
struct Accounted {
    size_t docs = 0;
    size_t matcher = 0;
    size_t peak() const { return docs + matcher; }
};

// Reads the first source of a self-join call into pipe (with filter: only its rows, and without
// an error past the limit) and matches it with itself. With emit, pairs may go to emit while the
// matching runs (see run_on_thread); the rest are returned. With a filter, an overflow while
// reading returns no pairs (filter->overflowed tells), and a JoinMemoryError of the matcher is
// thrown on; probe_below is passed to the core (join_passes.hpp).
JoinPairs self_pairs(const JoinCall& call, ReadPipeline& pipe, Progress& progress,
                     const char* fn, const EmitFn& emit = nullptr, RowFilter* filter = nullptr,
                     uint64_t probe_below = 0, Accounted* accounted = nullptr) {
    auto t0 = std::chrono::steady_clock::now();
    ExitStop exit_stop(pipe);
    if (filter != nullptr) {
        read_source_filtered(call.src[0], pipe, join_memory_limit_bytes(), progress, *filter);
        if (filter->overflowed) return JoinPairs();
    } else {
        read_source(call.src[0], pipe, join_memory_limit_bytes(), progress);
    }
    double read_s = seconds_since(t0);
    JoinOptions opt = options_for(call);
    opt.probe_below = probe_below;
    size_t matcher_peak = 0;
    opt.accounted_peak = &matcher_peak;
    auto t1 = std::chrono::steady_clock::now();
    double filed_s = 0, stats_s = 0;
    size_t emitted = 0, templates = 0;
    EmitFn counted;
    if (emit)
        counted = [&](JoinPairs& run, uint64_t bound) {
            emitted += run.size();
            emit(run, bound);
        };
    JoinPairs pairs = match(
        [&](const JoinOptions& o) {
            if (!wait_filed(pipe, o.cancel)) return JoinPairs();
            filed_s = seconds_since(t1);
            check_unique_ids(pipe.docs(), call.src[0].relname);
            if (call.content) return content_join(pipe.docs(), o, &templates, &stats_s);
            return self_join(pipe, with_budget(o, pipe.docs().memory_bytes()));
        },
        opt, progress, pipe.rows(), counted, filter != nullptr);
    log_phases(fn, pipe.docs().size(), pipe.docs().memory_bytes(), read_s, filed_s,
               seconds_since(t1) - filed_s, emitted + pairs.size());
    if (call.content)
        pg_guard([&] {
            elog(DEBUG1, "%s: content measure: %zu template signatures found in %.3f s (part of the matching)",
                 fn, templates, stats_s);
        });
    if (accounted != nullptr) {
        accounted->docs = pipe.docs().memory_bytes();
        accounted->matcher = matcher_peak;
    }
    pg_guard([&] {
        elog(DEBUG1, "%s: accounted peak %zu MB (documents %zu MB, matcher %zu MB)", fn,
             (pipe.docs().memory_bytes() + matcher_peak) >> 20, pipe.docs().memory_bytes() >> 20, matcher_peak >> 20);
    });
    // How long the backend's thread waited for the filing thread, and what it faulted in meanwhile.
    pg_guard([&] {
        elog(DEBUG1,
             "%s: waited %.3f s for free batches, faulting in %zu MB ahead of the filing thread, which left "
             "%zu documents' prefixes to the matcher",
             fn, pipe.waited_seconds(), pipe.prefaulted_bytes() >> 20, pipe.deferred_docs());
    });
    return pairs;
}

// The threshold a self-join's pipeline lists prefixes for: the default method's (0: none).
// (The content measure joins copies of the documents, so the pipeline lists nothing for it.)
double list_tau(const JoinCall& call) {
    return call.method == JoinMethod::Partitioned && !call.content ? call.tau : 0.0;
}

// The pipeline a self-join reads its relation into: with a filing thread unless the call is
// limited to one thread.
std::unique_ptr<ReadPipeline> self_pipeline(const JoinCall& call) {
    return open_pipeline(call.src[0], list_tau(call), join_memory_limit_bytes(), call.threads > 1);
}

// Appends one row of two bigints and an optional float8 to the call's tuplestore.
void put_row(ReturnSetInfo* rsinfo, int64_t a, int64_t b, const double* sim) {
    Datum values[3] = {Int64GetDatum(a), Int64GetDatum(b), sim ? Float8GetDatum(*sim) : Datum(0)};
    bool nulls[3] = {false, false, false};
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

// Appends a self-join's pairs as (id1, id2, similarity) rows, id1 < id2 (PostgreSQL code).
void put_self_pairs(ReturnSetInfo* rsinfo, const Collection& docs, const JoinPairs& pairs) {
    for (const JoinPair& p : pairs) {
        int64_t x = docs.id(p.a), y = docs.id(p.b);
        put_row(rsinfo, x < y ? x : y, x < y ? y : x, &p.similarity);
    }
}

// Throws the error of a join whose smallest pass, p, does not fit the memory limit: at_least is
// a lower bound on the bytes it needs; hist tells which documents the pass reads.
[[noreturn]] void throw_pass_too_large(const JoinPass& p, const std::vector<LengthCount>& hist, uint64_t at_least) {
    uint64_t rows = 0, shortest = 0, longest = 0;
    for (const LengthCount& c : hist)
        if (c.length >= p.probe_lo && c.length <= p.read_hi) {
            rows += c.docs;
            if (shortest == 0) shortest = c.length;
            longest = c.length;
        }
    const uint64_t mb = (at_least >> 20) + 1;
    throw Error(ErrorKind::OutOfMemory,
                "spotsigs join exceeds spotsigs.join_memory_limit (" + join_memory_limit_text() +
                    ") even in passes",
                "Its smallest pass, the " + std::to_string(rows) + " documents of length " +
                    std::to_string(shortest) + (longest > shortest ? " to " + std::to_string(longest) : "") +
                    ", needs more than " + std::to_string(mb) + " MB. Set spotsigs.join_memory_limit above " +
                    std::to_string(mb) + "MB.");
}

// The self-join of a relation whose rows or matcher structures did not fit the memory limit at
// once, in passes over length ranges (join_passes.hpp: no pair is lost or reported twice): each
// pass reads its rows again and writes its pairs to the result's tuplestore, which spills to disk
// past work_mem. A pass that does not fit is split; a single length that does not fit is an ERROR
// naming a limit above what it needed. Returns the number of passes run.
size_t join_in_passes(const JoinCall& call, const std::vector<LengthCount>& hist, ReturnSetInfo* rsinfo,
                      Progress& progress, Accounted& worst) {
    const size_t limit = join_memory_limit_bytes();
    std::deque<JoinPass> todo;
    for (const JoinPass& p : plan_passes(hist, call.tau, limit / kPassRowShare)) todo.push_back(p);
    size_t ran = 0;
    while (!todo.empty()) {
        const JoinPass p = todo.front();
        todo.pop_front();
        RowFilter filter;
        Accounted last;
        filter.lo = p.probe_lo;
        filter.hi = p.read_hi;
        uint64_t at_least = 0;
        bool fits = true;
        {
            // No presizing from the table's statistics: a pass reads a part of it.
            ReadPipeline pipe(list_tau(call), 0, 0, call.threads > 1);
            Accounted acc;
            try {
                JoinPairs pairs = self_pairs(call, pipe, progress, "spotsigs_join", nullptr, &filter, p.probe_hi, &acc);
                if (filter.overflowed) {
                    // Its documents alone were more than the limit (the tally's estimate may say more).
                    fits = false;
                    at_least = std::max<uint64_t>(limit + 1, pass_read_bytes(p, hist));
                } else {
                    pg_guard([&] { put_self_pairs(rsinfo, pipe.docs(), pairs); });
                    if (acc.peak() > worst.peak()) worst = acc;
                    last = acc;
                }
            } catch (const JoinMemoryError& e) {
                fits = false;
                at_least = pipe.docs().memory_bytes() + e.at_least();
            }
        }
        // The pass's memory goes back to the system before the next one: glibc keeps freed
        // blocks below its (raised) mmap threshold in its arenas, and without this the resident
        // memory grew pass after pass beyond what any one pass held.
        malloc_trim(0);
        if (fits) {
            ++ran;
            // The rest replanned for what this pass needed per byte of its documents (estimated
            // from the tally), with a margin: fewer passes mean fewer reads of the relation.
            const uint64_t est = pass_read_bytes(p, hist);
            if (!todo.empty() && est > 0 && last.peak() > 0) {
                const double per_byte = static_cast<double>(last.peak()) / static_cast<double>(est);
                const uint64_t start = todo.front().probe_lo;
                todo.clear();
                const auto bytes = static_cast<uint64_t>(kPassMargin * static_cast<double>(limit) / per_byte);
                for (const JoinPass& q : plan_passes(hist, call.tau, std::max<uint64_t>(bytes, 1), start))
                    todo.push_back(q);
            }
            continue;
        }
        JoinPass a, b;
        if (!split_pass(p, hist, call.tau, a, b)) throw_pass_too_large(p, hist, at_least);
        todo.push_front(b);
        todo.push_front(a);
    }
    return ran;
}

// Root of x in a union-find forest, halving paths on the way.
uint32_t find_root(std::vector<uint32_t>& parent, uint32_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

// The arguments of a spotsigs_citus_* call for this call's sources (in the order given) with
// the resolved threshold and the caller's threads and method (NULL: each node's own settings).
struct CitusArgs {
    Oid types[9];
    Datum values[9];
    char nulls[9];
    int n = 0;
};

CitusArgs citus_args(FunctionCallInfo fcinfo, const JoinCall& call, const int* order) {
    CitusArgs a;
    for (int k = 0; k < call.sources; ++k)
        for (int j = 0; j < 3; ++j) {
            a.types[a.n] = j == 0 ? REGCLASSOID : NAMEOID;
            a.values[a.n] = PG_GETARG_DATUM(3 * order[k] + j);
            a.nulls[a.n++] = ' ';
        }
    int p = 3 * call.sources;
    Oid tail[3] = {FLOAT8OID, INT4OID, TEXTOID};
    for (int j = 0; j < 3; ++j) {
        a.types[a.n] = tail[j];
        a.values[a.n] = j == 0 ? Float8GetDatum(call.tau) : (PG_ARGISNULL(p + j) ? Datum(0) : PG_GETARG_DATUM(p + j));
        a.nulls[a.n++] = j > 0 && PG_ARGISNULL(p + j) ? 'n' : ' ';
    }
    return a;
}

// The content measure needs the statistics of the whole table, which the per-worker tasks of a
// distributed join do not have: such a call is refused rather than answered by another measure.
void reject_content_on_citus(const JoinCall& call) {
    if (call.content)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("the content measure is not available for the distributed table %s", call.src[0].relname),
                        errhint("Pass a threshold (the plain measure), or join a column of spotsig_remove(sig, t) "
                                "with t from spotsigs_template().")));
}

const int kInOrder[2] = {0, 1};
const int kSwapped[2] = {1, 0};

}  // namespace

// spotsigs_join(rel, id_column, sig_column, threshold, threads, method)
//   RETURNS TABLE(id1 bigint, id2 bigint, similarity float8): each similar pair once, id1 < id2.
SPOTSIGS_FUNCTION(spotsigs_join) {
    JoinCall call = read_call(fcinfo, 1, "spotsigs_join");
    if (citus_distributed(fcinfo, call.src[0].relid)) {
        reject_content_on_citus(call);
        // On the nodes holding the shards (src/sql/70_citus.sql).
        CitusArgs a = citus_args(fcinfo, call, kInOrder);
        citus_rows(fcinfo, "spotsigs_citus_join", a.n, a.types, a.values, a.nulls);
        return Datum(0);
    }
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    return pg_entry([&] {
        Progress progress("spotsigs_join");
        // The first read keeps every row while they fit the limit, and tallies every row's
        // length whatever happens: past the limit the join runs in passes planned from it.
        LengthTally tally;
        std::vector<int64_t> ids;  // for the id check of a join in passes (each pass reads a part)
        RowFilter filter;
        filter.tally = &tally;
        filter.ids = &ids;
        bool in_passes = false;
        size_t first_read = 0;  // what the first read held (up to the limit when it overflowed)
        size_t join_peak = 0;   // the accounted peak of the documents and the matcher
        Accounted single;
        {
            std::unique_ptr<ReadPipeline> pipe = self_pipeline(call);
            const Collection& docs = pipe->docs();
            // With more than one thread, rows are written while the workers still match (the
            // backend's thread would otherwise wait for them and then write every row alone).
            bool presized = false;
            EmitFn emit;
            if (call.threads > 1)
                emit = [&](JoinPairs& run, uint64_t bound) {
                    pg_guard([&] {
                        if (!presized) presize_result(rsinfo, std::max<uint64_t>(bound, run.size()), false);
                        presized = true;
                        put_self_pairs(rsinfo, docs, run);
                    });
                };
            try {
                // The content measure's statistics need every row at once, so it has no passes: past
                // the limit it fails as the other joins do (filter null: read_source names the limit).
                JoinPairs pairs = self_pairs(call, *pipe, progress, "spotsigs_join", emit,
                                             call.content ? nullptr : &filter, 0, &single);
                in_passes = filter.overflowed;
                first_read = pipe->memory_bytes();
                join_peak = single.peak();
                if (!in_passes)
                    pg_guard([&] {
                        if (!presized) presize_result(rsinfo, pairs.size());
                        put_self_pairs(rsinfo, docs, pairs);
                    });
            } catch (const JoinMemoryError&) {
                in_passes = true;
                first_read = pipe->memory_bytes();
            }
        }
        if (in_passes) {
            std::sort(ids.begin(), ids.end());
            auto dup = std::adjacent_find(ids.begin(), ids.end());
            if (dup != ids.end()) throw_repeated_id(call.src[0].relname, *dup);
            std::vector<int64_t>().swap(ids);
            malloc_trim(0);  // the first read's memory (see join_in_passes)
            // Rows some runs wrote before the matcher ran out are written again by the passes.
            pg_guard([&] { tuplestore_clear(rsinfo->setResult); });
            Accounted worst;
            const size_t passes = join_in_passes(call, tally.sorted(), rsinfo, progress, worst);
            pg_guard([&] {
                elog(DEBUG1,
                     "spotsigs_join: %zu passes within spotsigs.join_memory_limit, accounted peak %zu MB (first read "
                     "%zu MB, passes %zu MB)",
                     passes, std::max(first_read, worst.peak()) >> 20, first_read >> 20, worst.peak() >> 20);
            });
            join_peak = std::max(first_read, worst.peak());
        }
        // The join's own peak and the result rows the tuplestore keeps in memory (up to work_mem).
        pg_guard([&] {
            const size_t rows = result_memory_bytes(rsinfo, static_cast<size_t>(tuplestore_tuple_count(rsinfo->setResult)));
            elog(DEBUG1, "spotsigs_join: accounted total %zu MB: join %zu MB, result rows in memory %zu MB",
                 (join_peak + rows) >> 20, join_peak >> 20, rows >> 20);
        });
        progress.finish();
        return Datum(0);
    });
}

// spotsigs_join_rs(r, r_id, r_sig, s, s_id, s_sig, threshold, threads, method)
//   RETURNS TABLE(r_id bigint, s_id bigint, similarity float8): every similar (r, s) pair.
SPOTSIGS_FUNCTION(spotsigs_join_rs) {
    JoinCall call = read_call(fcinfo, 2, "spotsigs_join_rs");
    // A side hash-distributed by Citus: the nodes holding its shards pair their rows with the
    // other side's, which goes to them (read here when it is not distributed, from the nodes
    // holding its shards when it is: then the smaller side travels, src/sql/70_citus.sql).
    bool r_dist = citus_distributed(fcinfo, call.src[0].relid);
    bool s_dist = citus_distributed(fcinfo, call.src[1].relid);
    if (r_dist || s_dist) {
        CitusArgs a = citus_args(fcinfo, call, s_dist ? kInOrder : kSwapped);
        citus_rows(fcinfo, "spotsigs_citus_join_rs", a.n, a.types, a.values, a.nulls, !s_dist);
        return Datum(0);
    }
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    return pg_entry([&] {
        Progress progress("spotsigs_join_rs");
        size_t limit = join_memory_limit_bytes();
        auto t0 = std::chrono::steady_clock::now();
        // At most `threads` threads at once: R gets a filing thread from 2 threads on, S (read
        // while R may still be filing) from 3 on; otherwise the backend's thread files.
        std::unique_ptr<ReadPipeline> rp = open_pipeline(call.src[0], 0, limit, call.threads > 1);
        ExitStop r_stop(*rp);
        read_source(call.src[0], *rp, limit, progress);
        // S is read while R is still being filed; both count against one limit.
        std::unique_ptr<ReadPipeline> sp = open_pipeline(call.src[1], 0, limit, call.threads > 2);
        ExitStop s_stop(*sp);
        size_t r_bytes = rp->memory_bytes();
        read_source(call.src[1], *sp, limit > r_bytes ? limit - r_bytes : 1, progress);
        double read_s = seconds_since(t0);
        JoinOptions opt = options_for(call);
        auto t1 = std::chrono::steady_clock::now();
        double filed_s = 0;
        JoinPairs pairs = match(
            [&](const JoinOptions& o) {
                if (!wait_filed(*rp, o.cancel) || !wait_filed(*sp, o.cancel)) return JoinPairs();
                filed_s = seconds_since(t1);
                check_unique_ids(rp->docs(), call.src[0].relname);
                check_unique_ids(sp->docs(), call.src[1].relname);
                return rs_join(rp->docs(), sp->docs(),
                               with_budget(o, rp->docs().memory_bytes() + sp->docs().memory_bytes()));
            },
            opt, progress, rp->rows());
        const Collection& r = rp->docs();
        const Collection& s = sp->docs();
        log_phases("spotsigs_join_rs", r.size() + s.size(), r.memory_bytes() + s.memory_bytes(), read_s,
                   filed_s, seconds_since(t1) - filed_s, pairs.size());
        pg_guard([&] {
            presize_result(rsinfo, pairs.size());
            for (const JoinPair& p : pairs) put_row(rsinfo, r.id(p.a), s.id(p.b), &p.similarity);
        });
        progress.finish();
        return Datum(0);
    });
}

// spotsigs_clusters(rel, id_column, sig_column, threshold, threads, method)
//   RETURNS TABLE(id bigint, cluster bigint): every row with a signature and the smallest id of
//   its connected component in the near-duplicate graph (a row without partners is its own cluster).
SPOTSIGS_FUNCTION(spotsigs_clusters) {
    JoinCall call = read_call(fcinfo, 1, "spotsigs_clusters");
    if (citus_distributed(fcinfo, call.src[0].relid)) {
        reject_content_on_citus(call);
        CitusArgs a = citus_args(fcinfo, call, kInOrder);
        citus_clusters(fcinfo, call.src[0].relname, NameStr(*PG_GETARG_NAME(1)), NameStr(*PG_GETARG_NAME(2)), a.types,
                       a.values, a.nulls);
        return Datum(0);
    }
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    return pg_entry([&] {
        Progress progress("spotsigs_clusters");
        std::unique_ptr<ReadPipeline> pipe = self_pipeline(call);
        JoinPairs pairs = self_pairs(call, *pipe, progress, "spotsigs_clusters");
        const Collection& docs = pipe->docs();
        size_t n = docs.size();
        std::vector<uint32_t> parent(n);
        std::iota(parent.begin(), parent.end(), 0u);
        for (const JoinPair& p : pairs) {
            uint32_t a = find_root(parent, p.a), b = find_root(parent, p.b);
            if (a != b) parent[a < b ? b : a] = a < b ? a : b;
        }
        pairs = JoinPairs();
        std::vector<int64_t> smallest(n, std::numeric_limits<int64_t>::max());
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t root = find_root(parent, i);
            parent[i] = root;  // fully compressed: parent[i] is now i's root
            if (docs.id(i) < smallest[root]) smallest[root] = docs.id(i);
        }
        pg_guard([&] {
            presize_result(rsinfo, n);
            for (uint32_t i = 0; i < n; ++i) put_row(rsinfo, docs.id(i), smallest[parent[i]], nullptr);
        });
        progress.finish();
        return Datum(0);
    });
}

// spotsigs_join_candidates() -> bigint: the candidate pairs (pairs that passed the filters and
// were verified) of every spotsigs_join, spotsigs_join_rs and spotsigs_clusters this session ran
// here; the difference across calls is their work (a distributed join's tasks report it so).
SPOTSIGS_FUNCTION(spotsigs_join_candidates) {
    PG_RETURN_INT64(static_cast<int64>(session_candidates.load()));
}

// spotsigs_template(rel, id_column, sig_column) -> spotsig: the template signatures the content
// measure finds in the rows of rel (each with frequency 1), the ones a content-measure join of
// the same rows leaves out.
SPOTSIGS_FUNCTION(spotsigs_template) {
    for (int k = 0; k < 3; ++k)
        if (PG_ARGISNULL(k))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("the relation and column arguments must not be NULL")));
    use_reserved_huge_pages(join_huge_pages);
    JoinSource src = resolve_source(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)), NameStr(*PG_GETARG_NAME(2)),
                                    spotsig_type_oid(fcinfo), "spotsigs_template");
    int threads = join_max_threads;
    return pg_entry([&] {
        Progress progress("spotsigs_template");
        std::unique_ptr<ReadPipeline> pipe = open_pipeline(src, 0, join_memory_limit_bytes(), threads > 1);
        ExitStop exit_stop(*pipe);
        read_source(src, *pipe, join_memory_limit_bytes(), progress);
        std::vector<uint64_t> drop;
        JoinOptions opt;
        opt.threads = threads;
        match(
            [&](const JoinOptions& o) {
                if (!wait_filed(*pipe, o.cancel)) return JoinPairs();
                check_unique_ids(pipe->docs(), src.relname);
                const Collection& docs = pipe->docs();
                check_statistics_memory(docs, o.threads);
                drop = template_signatures(docs, o.threads, o.cancel);
                return JoinPairs();
            },
            opt, progress, pipe->rows());
        Multiset m;
        m.hashes = drop;
        m.freqs.assign(drop.size(), 1u);
        m.length = drop.size();
        Datum d = make_spotsig(m.view());
        progress.finish();
        return d;
    });
}

// spotsig_remove(sig, signatures) -> spotsig: sig without the signatures that occur in
// `signatures` (whatever their frequency there).
SPOTSIGS_FUNCTION(spotsig_remove) {
    struct varlena* sig = fetch_spotsig(PG_GETARG_DATUM(0));
    struct varlena* drop = fetch_spotsig(PG_GETARG_DATUM(1));
    return pg_entry([&] {
        MultisetView d = view_of(drop);
        std::vector<uint64_t> hashes(d.hashes, d.hashes + d.size);
        Multiset m = without_signatures(view_of(sig), hashes);
        return make_spotsig(m.view());
    });
}
