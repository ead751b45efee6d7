// SQL entry points of the similarity join: spotsigs_join(), spotsigs_join_rs(),
// spotsigs_clusters(). Arguments and catalog checks are handled before any C++ object exists;
// the documents are copied out on the main thread and matched on a signal-blocked thread.
#include "pg/pg.hpp"

extern "C" {
#include "access/detoast.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
}

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/join/join_passes.hpp"
#include "core/join/pair_sink.hpp"
#include "core/join/read_pipeline.hpp"
#include "core/memory/huge_alloc.hpp"
#include "core/template/content.hpp"
#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/join/best_matches.hpp"
#include "pg/join/citus.hpp"
#include "pg/join/join_gucs.hpp"
#include "pg/join/join_read.hpp"
#include "pg/join/join_run.hpp"
#include "pg/join/result_store.hpp"
#include "pg/template/store.hpp"
#include "pg/template/table_template.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace {

// Share of the memory limit a pass's documents may take when passes are planned; the matcher's
// structures take the rest (a pass that still does not fit is split).
constexpr uint64_t kPassRowShare = 4;
// Once a pass has run, the next ones are planned to need about this share of the limit.
constexpr double kPassMargin = 0.8;
// Share of the limit the notes of rows stored inline may take when a template is removed
// (RowFilter::note_inline_max): the rows past it are read whole by each pass instead.
constexpr size_t kNoteShare = 16;

// One call's checked arguments: plain data and palloc'd strings only (no destructors).
struct JoinCall {
    JoinSource src[2];
    int sources = 1;
    double tau = 0;
    int threads = 1;
    JoinMethod method = JoinMethod::Partitioned;
    bool content = false;  // the content measure (content.hpp) instead of plain multiset Jaccard
    // The content measure's template when it is not computed from the rows read: the stored
    // statistics (spotsigs_analyze) of the relation (an R-S join: of s, else of r), or for an R-S
    // join without any, the template computed from s. Palloc'd, ascending.
    bool has_template = false;
    const uint64* tmpl = nullptr;
    size_t ntmpl = 0;
    size_t held = 0;  // bytes the call keeps beside its join's passes (clusters: every row's slot)
    // When given (a distributed join's task, spotsigs_citus_match), a self-join keeps only the
    // pairs with a row whose id is in local_ids[0..nlocal) (sorted); cross_only: with exactly one.
    const int64* local_ids = nullptr;
    size_t nlocal = 0;
    bool cross_only = false;
    // The same split for the matcher (JoinOptions::sides), so that it does not find the pairs
    // put_self_pairs would drop.
    PairSides sides;
    // When >= 0 (a task of the length-range split), a self-join keeps only the pairs with a row of
    // at least this length (the multiset size) among both: the rows its task owns.
    int64 owned_min_length = -1;
    // When given, the rows are read without these signatures and joined by the plain measure: the
    // content measure's join once its template is known (docs/content-measure.md).
    const SignatureSet* remove = nullptr;
    // The content measure with its template known before the read (has_template): the filing
    // thread files each row without these signatures and lists its prefix, so that the join is
    // the plain one of the rows without the template, as content_join's copy would give, with no
    // copy made (ReadPipeline::remove_signatures). Set by run_self_join for its first read.
    const SignatureSet* filed_without = nullptr;
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

void read_threads_method(FunctionCallInfo fcinfo, int p, JoinCall& call);

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
    call.content = read_measure(fcinfo, p + 3, !PG_ARGISNULL(p));
    call.tau = PG_ARGISNULL(p) && call.content ? kContentThreshold : threshold_arg(fcinfo, p);
    read_threads_method(fcinfo, p + 1, call);
    Oid spotsig = spotsig_type_oid(fcinfo);
    for (int k = 0; k < sources; ++k)
        call.src[k] = resolve_source(PG_GETARG_OID(3 * k), NameStr(*PG_GETARG_NAME(3 * k + 1)),
                                     NameStr(*PG_GETARG_NAME(3 * k + 2)), spotsig, fn);
    // The content measure uses a table's stored template when there is one.
    for (int k = sources; call.content && !call.has_template && k-- > 0;) {
        StoredTemplate t;
        stored_template(get_func_namespace(fcinfo->flinfo->fn_oid), call.src[k].relid,
                        NameStr(*PG_GETARG_NAME(3 * k + 2)), CurrentMemoryContext, &t);
        if (t.found) {
            call.has_template = true;
            call.tmpl = t.hashes;
            call.ntmpl = t.n;
        }
    }
    // Fails early (before any reading) when the caller cannot take a materialized result.
    InitMaterializedSRF(fcinfo, 0);
    return call;
}

// Reads the threads (at position p) and method (p + 1) arguments of a join call into call.
void read_threads_method(FunctionCallInfo fcinfo, int p, JoinCall& call) {
    call.threads = PG_ARGISNULL(p) ? join_max_threads : PG_GETARG_INT32(p);
    if (call.threads < 1)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("threads must be at least 1, not %d", call.threads)));
    if (call.threads > join_max_threads) call.threads = join_max_threads;
    call.method = static_cast<JoinMethod>(join_method_guc);
    if (!PG_ARGISNULL(p + 1)) {
        char* m = text_to_cstring(PG_GETARG_TEXT_PP(p + 1));
        if (!parse_join_method(m, &call.method))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown join method \"%s\"", m),
                            errhint("Use 'partitioned', 'nopart', 'noprune' or 'bruteforce'.")));
    }
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
    if (call.local_ids != nullptr) opt.sides = &call.sides;
    return opt;
}

// Runs a core join on the matcher thread; the core's memory error is reported with the limit,
// what needed the memory (the error's detail, or its message when it has none) in DETAIL (or,
// with passes, left to the caller, which then joins in smaller passes).
JoinPairs match(const std::function<JoinPairs(const JoinOptions&)>& work, const JoinOptions& opt, Progress& progress,
                uint64_t total, const EmitFn& emit = nullptr, bool passes = false) {
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
        elog(DEBUG1, "%s: read %zu documents (%zu MB) in %.3f s, filed %.3f s later, matched in %.3f s, %zu pairs", fn,
             docs, bytes >> 20, read_s, filed_s, match_s, pairs);
    });
}

// The bytes a call's join may take: spotsigs.join_memory_limit less what the call holds beside
// the join (JoinCall::held).
size_t call_limit(const JoinCall& call) {
    const size_t limit = join_memory_limit_bytes();
    return limit > call.held ? limit - call.held : 1;
}

// Options for a join of already filed collections holding used bytes within limit (the matcher
// thread).
JoinOptions with_budget(JoinOptions opt, size_t used, size_t limit = join_memory_limit_bytes()) {
    if (used >= limit) throw JoinMemoryError("the documents alone exceed the memory limit", "", used + 1);
    opt.memory_limit = limit - used;
    return opt;
}

// The template signatures of docs; throws Error(OutOfMemory) when docs and the content
// statistics of docs would not fit spotsigs.join_memory_limit together (match() names the
// setting). Matcher thread.
std::vector<uint64_t> limited_template(const Collection& docs, int threads, CancelToken* cancel,
                                       size_t* shared = nullptr) {
    return template_signatures(docs, threads, cancel, join_memory_limit_bytes(), shared);
}

// Whether the statistics left almost nothing to compare: at least kFewContentShared signatures
// held by two or more rows, and 9 in 10 of them or more template signatures. Rows that share
// signatures but are not near duplicates of one another (a collection of unrelated documents
// over one vocabulary) look so; the call then finds at most the pairs of rows that are nearly
// equal on their own signatures, and says why (few_content_notice).
constexpr size_t kFewContentShared = 100;
bool few_content(size_t templates, size_t shared) {
    return shared >= kFewContentShared && templates >= shared - shared / 10;
}

// The NOTICE of a call whose statistics left almost nothing to compare (few_content). Backend's
// thread.
void few_content_notice(const char* fn, size_t templates, size_t shared) {
    ereport(NOTICE,
            (errmsg("%s: the content measure found %zu template signatures among the %zu signatures held by two "
                    "or more rows",
                    fn, templates, shared),
             errdetail("The rows that share a signature are mostly not near duplicates of one another, so almost "
                       "every shared signature counts as a template and only rows nearly equal on their own "
                       "signatures can pair."),
             errhint("Pass a threshold to compare whole signatures (measure 'jaccard'), or store the statistics "
                     "of a collection that holds copies (spotsigs_analyze).")));
}

// The self-join of docs under the content measure: the collection's template signatures are
// found (content.hpp), every document is copied without them, and the copies are joined, so the
// matcher and its exactness are those of the plain measure on the copies. The copies keep the
// documents' order, so the pairs' indexes are valid in docs too. Matcher thread (so it only
// notes how many template signatures it found among how many shared ones (0 with a stored
// template), and how long that took, for the main thread).
JoinPairs content_join(const JoinCall& call, const Collection& docs, const JoinOptions& o, size_t* templates,
                       double* stats_s, double* copy_s, size_t* shared) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<uint64_t> drop;
    if (call.has_template) {
        drop.assign(call.tmpl, call.tmpl + call.ntmpl);
    } else {
        drop = limited_template(docs, o.threads, o.cancel, shared);
    }
    *stats_s = seconds_since(t0);
    auto t1 = std::chrono::steady_clock::now();
    Collection content = without_signatures(docs, drop, o.cancel, o.threads);
    *templates = drop.size();
    *copy_s = seconds_since(t1);
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
JoinPairs self_pairs(const JoinCall& call, ReadPipeline& pipe, Progress& progress, const char* fn,
                     const EmitFn& emit = nullptr, RowFilter* filter = nullptr, uint64_t probe_below = 0,
                     Accounted* accounted = nullptr) {
    auto t0 = std::chrono::steady_clock::now();
    ExitStop exit_stop(pipe);
    if (filter != nullptr) {
        read_source_filtered(call.src[0], pipe, call_limit(call), progress, *filter);
        if (filter->overflowed) return JoinPairs();
    } else {
        read_source(call.src[0], pipe, call_limit(call), progress);
    }
    double read_s = seconds_since(t0);
    JoinOptions opt = options_for(call);
    opt.probe_below = probe_below;
    size_t matcher_peak = 0;
    opt.accounted_peak = &matcher_peak;
    auto t1 = std::chrono::steady_clock::now();
    double filed_s = 0, stats_s = 0, copy_s = 0;
    size_t emitted = 0, templates = 0, shared = 0;
    EmitFn counted;
    if (emit)
        counted = [&](JoinPairs& run, uint64_t bound) {
            emitted += run.size();
            emit(run, bound);
        };
    // Pairs on their way to emit are held beside the matcher's structures (read here, on the
    // backend's thread, like every setting).
    const size_t in_flight = emit ? spotsigs::PairSink::in_flight_bytes(sink_capacity()) : 0;
    JoinPairs pairs = match(
        [&](const JoinOptions& o) {
            if (!wait_filed(pipe, o.cancel)) return JoinPairs();
            filed_s = seconds_since(t1);
            check_read_ids(pipe.docs(), filter, call.src[0].relname);
            if (call.content && call.filed_without == nullptr)
                return content_join(call, pipe.docs(), o, &templates, &stats_s, &copy_s, &shared);
            templates = call.ntmpl;
            return self_join(pipe, with_budget(o, pipe.docs().memory_bytes() + in_flight, call_limit(call)));
        },
        opt, progress, pipe.rows(), counted, filter != nullptr && !call.content);
    log_phases(fn, pipe.docs().size(), pipe.docs().memory_bytes(), read_s, filed_s, seconds_since(t1) - filed_s,
               emitted + pairs.size());
    if (call.content)
        pg_guard([&] {
            if (call.filed_without != nullptr)
                elog(DEBUG1,
                     "%s: content measure: %zu template signatures stored, removed from the rows as they were filed",
                     fn, templates);
            else
                elog(DEBUG1,
                     "%s: content measure: %zu template signatures %s in %.3f s, documents copied without them in "
                     "%.3f s (both part of the matching)",
                     fn, templates, call.has_template ? "stored" : "found", stats_s, copy_s);
            if (few_content(templates, shared)) few_content_notice(fn, templates, shared);
        });
    if (accounted != nullptr) {
        accounted->docs = pipe.docs().memory_bytes();
        accounted->matcher = matcher_peak;
    }
    pg_guard([&] {
        elog(DEBUG1, "%s: accounted peak %zu kB (documents %zu kB, matcher %zu kB)", fn,
             (pipe.docs().memory_bytes() + matcher_peak) >> 10, pipe.docs().memory_bytes() >> 10, matcher_peak >> 10);
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
// (The content measure with a template still to find joins copies of the documents, so the
// pipeline lists nothing for it.)
double list_tau(const JoinCall& call) {
    return call.method == JoinMethod::Partitioned && (!call.content || call.filed_without != nullptr) ? call.tau : 0.0;
}

// The pipeline a self-join reads its relation into: with a filing thread unless the call is
// limited to one thread; filing the rows without the template when the call says so.
std::unique_ptr<ReadPipeline> self_pipeline(const JoinCall& call) {
    std::unique_ptr<ReadPipeline> pipe = open_pipeline(call.src[0], list_tau(call), call_limit(call), call.threads > 1);
    pipe->remove_signatures(call.filed_without);
    return pipe;
}

// Appends one row of two bigints and an optional float8 to the call's tuplestore.
void put_row(ReturnSetInfo* rsinfo, int64_t a, int64_t b, const double* sim) {
    Datum values[3] = {Int64GetDatum(a), Int64GetDatum(b), sim ? Float8GetDatum(*sim) : Datum(0)};
    bool nulls[3] = {false, false, false};
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

// Whether id is one of the call's local ids (JoinCall::local_ids).
bool is_local(const JoinCall& call, int64_t id) {
    return std::binary_search(call.local_ids, call.local_ids + call.nlocal, static_cast<int64>(id));
}

// Appends a self-join's pairs as (id1, id2, similarity) rows, id1 < id2 (PostgreSQL code); with
// local ids or an owned length, only the pairs the call keeps (JoinCall::local_ids,
// JoinCall::owned_min_length).
void put_self_pairs(ReturnSetInfo* rsinfo, const Collection& docs, const JoinPairs& pairs,
                    const JoinCall* call = nullptr) {
    const uint64_t owned = call != nullptr && call->owned_min_length >= 0 ? uint64_t(call->owned_min_length) : 0;
    for (const JoinPair& p : pairs) {
        int64_t x = docs.id(p.a), y = docs.id(p.b);
        if (call != nullptr && call->local_ids != nullptr) {
            const int local = is_local(*call, x) + is_local(*call, y);
            if (local == 0 || (call->cross_only && local == 2)) continue;
        }
        if (owned > 0 && docs.length(p.a) < owned && docs.length(p.b) < owned) continue;
        put_row(rsinfo, x < y ? x : y, x < y ? y : x, &p.similarity);
    }
}

// Throws the error of a join whose smallest pass, p, does not fit the memory limit: at_least is
// a lower bound on the bytes it needs beside what the call keeps (JoinCall::held); hist tells
// which documents the pass reads. The limit it names is one every pass fits: the call's own
// bytes, the larger of at_least and the estimate of the smallest passes the plan can come down
// to (smallest_passes_estimate), and the pairs in flight, which take a 32nd of the limit.
[[noreturn]] void throw_pass_too_large(const JoinCall& call, const JoinPass& p, const std::vector<LengthCount>& hist,
                                       uint64_t at_least) {
    uint64_t rows = 0, shortest = 0, longest = 0;
    for (const LengthCount& c : hist)
        if (p.reads(c.length)) {
            rows += c.docs;
            if (shortest == 0) shortest = c.length;
            longest = c.length;
        }
    const uint64_t mb = (at_least >> 20) + 1;
    const uint64_t pass = std::max(at_least, smallest_passes_estimate(hist, call.tau, call.threads, call.sources));
    const uint64_t in_flight_min = spotsigs::PairSink::in_flight_bytes(4096);
    const uint64_t need = (call.held + pass + in_flight_min) / 31 * 32 + 32;
    const uint64_t need_mb = (need + (uint64_t(1) << 20) - 1) >> 20;
    throw Error(ErrorKind::OutOfMemory,
                "spotsigs join exceeds spotsigs.join_memory_limit (" + join_memory_limit_text() + ") even in passes",
                "Its smallest pass, the " + std::to_string(rows) + " documents of length " + std::to_string(shortest) +
                    (longest > shortest ? " to " + std::to_string(longest) : "") + ", needs more than " +
                    std::to_string(mb) + " MB. Set spotsigs.join_memory_limit to " + std::to_string(need_mb) +
                    "MB or more (every pass of this join fits that).");
}

// What one pass did: whether its rows and structures fit the limit (if not, at_least is a lower
// bound of the bytes it needs), and what it held at most.
struct PassOutcome {
    bool fits = true;
    uint64_t at_least = 0;
    Accounted acc;
};

// Runs a join whose rows or matcher structures did not fit the memory limit at once in passes
// over the length ranges of hist, as run_planned_passes plans and replans them (join_passes.hpp:
// no pair is lost or reported twice); run does one pass: reads its rows again, matches them and
// hands on the pairs it reports. A single length that does not fit is an ERROR naming a limit
// above what it needed. Returns the number of passes run and, in continuing, how many of them
// continued a probe range over further partners; worst gets the largest accounted peak of a pass.
// progress shows each pass's number and lengths beside the longest (how far the passes are).
size_t run_passes(const JoinCall& call, const std::vector<LengthCount>& hist, size_t limit,
                  const std::function<PassOutcome(const JoinPass&)>& run, Accounted& worst, size_t& continuing,
                  Progress& progress) {
    uint64_t worst_peak = 0;
    continuing = 0;
    size_t started = 0;
    const uint64_t longest = hist.empty() ? 0 : hist.back().length;
    const size_t n = run_planned_passes(
        hist, call.tau, limit, limit / kPassRowShare, kPassMargin,
        [&](const JoinPass& p) {
            progress.stage("pass " + std::to_string(++started) + ", lengths " + std::to_string(p.probe_lo) + " to " +
                           std::to_string(std::min(p.read_hi, longest)) + " of " + std::to_string(longest));
            const PassOutcome out = run(p);
            log_process_memory("spotsigs join", "a pass ended");
            // The pass's memory goes back to the system before the next one: glibc keeps freed
            // blocks below its (raised) mmap threshold in its arenas, and without this the
            // resident memory grew pass after pass beyond what any one pass held.
            malloc_trim(0);
            if (out.fits && out.acc.peak() > worst.peak()) worst = out.acc;
            if (out.fits && p.continues()) ++continuing;
            return PassResult{out.fits, out.at_least, out.acc.peak()};
        },
        [&](const JoinPass& p, uint64_t at_least) { throw_pass_too_large(call, p, hist, at_least); }, worst_peak);
    progress.stage("");
    return n;
}

// Drops the pairs of docs that pass p does not report (those of two documents of its probe
// range, when p continues a probe range begun by an earlier pass).
void keep_reported(const JoinPass& p, const Collection& docs, JoinPairs& pairs) {
    if (!p.continues()) return;
    size_t kept = 0;
    for (const JoinPair& q : pairs) {
        const uint64_t x = docs.length(q.a), y = docs.length(q.b);
        if (p.reports(x, y)) pairs[kept++] = q;
    }
    pairs.resize(kept);
}

// The filter of the rows pass p reads; first: what the first read of the relation saw, which
// every pass must see again.
RowFilter pass_filter(const JoinPass& p, const std::vector<ExternalLength>* external, const RowsDigest* first) {
    RowFilter f;
    f.expected = first;
    f.lo = p.probe_lo;
    f.hi = p.read_hi;
    if (p.continues()) {
        f.gap_lo = p.probe_hi;
        f.gap_hi = p.part_lo;
    }
    f.external = external;
    return f;
}

// pass_filter for call's reads (with its template removed, if any).
RowFilter pass_filter(const JoinCall& call, const JoinPass& p, const std::vector<ExternalLength>* external,
                      const RowsDigest* first) {
    RowFilter f = pass_filter(p, external, first);
    f.remove = call.remove;
    return f;
}

// Where a join's pairs go: a batch of pairs with the collection their indexes refer to (all the
// rows, or one pass's), and an upper bound of the pairs still to come, this batch included (0:
// unknown). Called on the backend's thread.
using PairSink = std::function<void(const Collection& docs, const JoinPairs& pairs, uint64_t bound)>;

// One pass of a self-join: its rows read (and no others), matched, and their pairs given to sink
// while the matcher runs, so that a pass holds its structures and not its result (a pass of short
// rows can have more pairs than rows by orders of magnitude). A pass that does not fit fails
// before its first pair goes out (the matchers charge their structures before they verify, and
// a matcher that streams never fails for its pairs, WorkerGuard::add_pairs), so it can be split
// and run again without a pair written twice; that this holds is checked, not assumed.
PassOutcome self_pass(const JoinCall& call, const JoinPass& p, const std::vector<LengthCount>& hist,
                      const std::vector<ExternalLength>& external, const RowsDigest& first, const char* fn,
                      Progress& progress, const PairSink& sink) {
    PassOutcome out;
    RowFilter filter = pass_filter(call, p, &external, &first);
    // No presizing from the table's statistics: a pass reads a part of it.
    ReadPipeline pipe(list_tau(call), 0, 0, call.threads > 1);
    bool streamed = false;
    const EmitFn emit = [&](JoinPairs& pairs, uint64_t) {
        streamed = true;
        keep_reported(p, pipe.docs(), pairs);
        sink(pipe.docs(), pairs, 0);
    };
    try {
        JoinPairs pairs = self_pairs(call, pipe, progress, fn, emit, &filter, p.probe_hi, &out.acc);
        if (filter.overflowed) {
            // Its documents alone were more than the limit (the tally's estimate may say more).
            out.fits = false;
            out.at_least = std::max<uint64_t>(call_limit(call) + 1, pass_read_bytes(p, hist));
        } else {
            keep_reported(p, pipe.docs(), pairs);
            sink(pipe.docs(), pairs, 0);
        }
    } catch (const JoinMemoryError& e) {
        if (streamed)
            throw_memory_limit("matching a pass that had already written pairs",
                               e.detail().empty() ? std::string(e.what()) : e.detail());
        out.fits = false;
        out.at_least = pipe.docs().memory_bytes() + e.at_least();
    }
    return out;
}

// Logs at DEBUG1 how a call ran in passes: how many (and how many continued a probe range), and
// the accounted peaks in kB: the first read's, and the largest of a pass with what the call
// keeps beside the passes (held).
void log_passes(const char* fn, size_t passes, size_t continuing, size_t first_read, const Accounted& worst,
                size_t held) {
    const size_t peak = std::max(first_read, worst.peak() + held);
    const size_t limit = join_memory_limit_bytes();
    pg_guard([&] {
        elog(DEBUG1,
             "%s: %zu passes %s spotsigs.join_memory_limit (%zu of them over further partners of a probe "
             "range), accounted peak %zu kB (first read %zu kB, passes %zu kB with %zu kB kept beside them)",
             fn, passes, peak <= limit ? "within" : "above", continuing, peak >> 10, first_read >> 10,
             (worst.peak() + held) >> 10, held >> 10);
    });
}

// Sorts ids and throws the error of a repeated id of relation relname if two are equal.
void sort_unique_ids(std::vector<int64_t>& ids, const char* relname) {
    std::sort(ids.begin(), ids.end());
    auto dup = std::adjacent_find(ids.begin(), ids.end());
    if (dup != ids.end()) throw_repeated_id(relname, *dup);
}

// The template signatures of src's rows computed in passes within limit bytes
// (content_passes.hpp): the rows are read again for each pass, every read checked against the
// first (55000 when they differ), with interrupts served. first receives the first read's digest
// (the join that follows checks its reads against it); templates and shared, for
// few_content_notice. Backend's thread (inside pg_entry).
std::vector<uint64_t> template_in_passes(const JoinSource& src, size_t limit, Progress& progress, const char* fn,
                                         RowsDigest& first, size_t* shared = nullptr) {
    auto t0 = std::chrono::steady_clock::now();
    bool have_first = false;
    size_t reads = 0;
    const RowSource source = [&](const RowVisit& visit) {
        RowsDigest seen;
        progress.stage("content statistics, read " + std::to_string(++reads));
        visit_source(src, progress, visit, seen);
        if (!have_first) {
            first = seen;
            have_first = true;
        } else if (!(seen == first)) {
            throw_rows_changed(src.relname);
        }
    };
    TemplatePassOptions opt;
    opt.memory_limit = limit;
    opt.poll = [] { check_interrupts(); };
    opt.repeated_id = [&](int64_t id) { throw_repeated_id(src.relname, id); };
    opt.rows_changed = [&] { throw_rows_changed(src.relname); };
    TemplatePassInfo info;
    std::vector<uint64_t> drop;
    try {
        drop = template_signatures_in_passes(source, opt, &info);
        progress.stage("");
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::OutOfMemory) throw_memory_limit("computing the content statistics", e.detail());
        throw;
    }
    if (shared != nullptr) *shared = info.shared;
    pg_guard([&] {
        elog(DEBUG1,
             "%s: content statistics in passes: %zu template signatures among %zu held by two or more rows, "
             "%zu rows read %zu times, %zu signature ranges, accounted peak %zu kB, %.3f s",
             fn, drop.size(), info.shared, info.rows, info.reads, info.ranges, info.peak_bytes >> 10,
             seconds_since(t0));
    });
    return drop;
}

// Sorts the noted lengths of out-of-line rows by id (for RowFilter::external), freeing the
// slack of their vector.
void sort_by_id(std::vector<ExternalLength>& external) {
    std::sort(external.begin(), external.end(),
              [](const ExternalLength& a, const ExternalLength& b) { return a.id < b.id; });
    external.shrink_to_fit();
}

// How a self-join call ran.
struct SelfRun {
    bool in_passes = false;
    size_t peak = 0;  // the accounted peak of the documents and the matcher (and the first read)
};

// Runs call's self-join under spotsigs.join_memory_limit: in one go while its rows and structures
// fit, else in passes planned from the lengths the first read tallied (every row's, whatever
// happens). Pairs go to sink; with stream they may go while the matcher still runs, and when
// that attempt then runs out of memory, restart is called before the passes (which give every
// pair again). all_ids, when given, receives every row's id, ascending and checked unique,
// before sink is first called; in passes, its bytes and held_per_row more bytes a row (what the
// caller keeps per row) are held against the limit. Under the content measure, a join whose rows
// or statistics do not fit computes the template in passes (template_in_passes; a stored
// template is taken as it is) and then runs the plain join of the rows read without it, in
// passes when that does not fit either; every read is checked against the statistics' first
// read (expected, when given, is that read's digest).
SelfRun run_self_join(JoinCall call, const char* fn, Progress& progress, const PairSink& sink, bool stream,
                      const std::function<void()>& restart, std::vector<int64_t>* all_ids = nullptr,
                      size_t held_per_row = 0, const RowsDigest* expected = nullptr) {
    // A template known before the read is removed as the rows are filed (JoinCall::filed_without).
    std::unique_ptr<SignatureSet> filed_without;
    if (call.content && call.has_template && call.filed_without == nullptr) {
        filed_without = std::make_unique<SignatureSet>(reinterpret_cast<const uint64_t*>(call.tmpl), call.ntmpl);
        call.filed_without = filed_without.get();
        call.held += filed_without->memory_bytes();
    }
    LengthTally tally;
    std::vector<int64_t> ids;  // for the id check of a join in passes (each pass reads a part)
    RowFilter filter;
    filter.tally = &tally;
    filter.remove = call.remove;
    filter.expected = expected;
    std::vector<ExternalLength> external;  // the rows a pass finds the lengths of here
    // The content measure's statistics count every row, empty ones too; docs then has every id.
    if (call.content) {
        filter.lo = 0;
    } else {
        filter.ids = &ids;
        filter.note_external = &external;
        filter.note_inline_max = call_limit(call) / kNoteShare / sizeof(ExternalLength);
    }
    // What the first read holds is charged to this before it is allocated: the read stops at
    // the first row it would take past the limit (the rows read are then discarded, and the rest
    // only tallied).
    ReadBudget budget(call_limit(call));
    filter.budget = &budget;
    SelfRun run;
    size_t first_read = 0;  // the most the first read held (the budget's peak)
    bool content_passes = false;
    {
        std::unique_ptr<ReadPipeline> pipe = self_pipeline(call);
        const Collection& docs = pipe->docs();
        bool streamed = false;
        EmitFn emit;
        if (stream)
            emit = [&](JoinPairs& pairs, uint64_t bound) {
                streamed = true;
                sink(docs, pairs, std::max<uint64_t>(bound, pairs.size()));
            };
        Accounted single;
        try {
            JoinPairs pairs = self_pairs(call, *pipe, progress, fn, emit, &filter, 0, &single);
            content_passes = filter.overflowed && call.content;
            run.in_passes = filter.overflowed;
            first_read = budget.peak();
            run.peak = single.peak();
            if (!run.in_passes && !content_passes) {
                if (all_ids != nullptr) {
                    // The filter keeps no empty rows (they pair with nothing), but it has every
                    // row's id; without it (the content measure) docs has every row.
                    if (call.content) {
                        ids.resize(docs.size());
                        for (size_t i = 0; i < docs.size(); ++i) ids[i] = docs.id(i);
                    }
                    sort_unique_ids(ids, call.src[0].relname);
                    all_ids->swap(ids);
                }
                sink(docs, pairs, streamed ? 0 : pairs.size());
                log_process_memory(fn, "the join ended in one pass");
                return run;
            }
        } catch (const JoinMemoryError&) {
            run.in_passes = true;
            content_passes = call.content;
            first_read = budget.peak();
        } catch (const Error& e) {
            // The content statistics (or the join of the contents) did not fit with the rows.
            if (!call.content || e.kind() != ErrorKind::OutOfMemory) throw;
            content_passes = true;
            first_read = budget.peak();
        }
    }
    if (content_passes) {
        malloc_trim(0);          // the first read's memory (see run_passes)
        if (restart) restart();  // rows some runs wrote before the matcher ran out
        RowsDigest first;
        // A known template's set was built for the first read (its bytes are in call.held): the
        // passes remove it with that one. Otherwise the template is computed here, in passes.
        std::unique_ptr<SignatureSet> computed;
        const SignatureSet* set = filed_without.get();
        if (set == nullptr) {
            std::vector<uint64_t> drop;
            if (call.has_template) {
                drop.assign(call.tmpl, call.tmpl + call.ntmpl);
            } else {
                size_t shared = 0;
                drop = template_in_passes(call.src[0], call_limit(call), progress, fn, first, &shared);
                if (few_content(drop.size(), shared)) pg_guard([&] { few_content_notice(fn, drop.size(), shared); });
            }
            computed = std::make_unique<SignatureSet>(drop);
            set = computed.get();
        }
        JoinCall plain = call;
        plain.content = false;
        plain.remove = set;
        plain.filed_without = nullptr;  // the passes remove it as they read (RowFilter::remove)
        if (computed != nullptr) plain.held += computed->memory_bytes();
        return run_self_join(plain, fn, progress, sink, stream, restart, all_ids, held_per_row,
                             call.has_template ? nullptr : &first);
    }
    sort_unique_ids(ids, call.src[0].relname);
    sort_by_id(external);
    call.held += external.capacity() * sizeof(ExternalLength);
    if (all_ids != nullptr) {
        all_ids->swap(ids);
        call.held += all_ids->capacity() * sizeof(int64_t) + all_ids->size() * held_per_row;
        if (call.held >= join_memory_limit_bytes())
            throw_memory_limit("keeping every row of the join in passes",
                               "Its " + std::to_string(all_ids->size()) + " rows need " +
                                   std::to_string(call.held >> 10) + " kB beside the passes");
    }
    std::vector<int64_t>().swap(ids);
    log_process_memory(fn, "the first read ended");
    malloc_trim(0);  // the first read's memory (see run_passes)
    log_process_memory(fn, "the first read's memory given back");
    if (restart) restart();  // rows some runs wrote before the matcher ran out
    Accounted worst;
    const std::vector<LengthCount> hist = tally.sorted();
    size_t continuing = 0;
    const size_t passes = run_passes(
        call, hist, call_limit(call),
        [&](const JoinPass& p) { return self_pass(call, p, hist, external, filter.seen, fn, progress, sink); }, worst,
        continuing, progress);
    log_passes(fn, passes, continuing, first_read, worst, call.held);
    log_process_memory(fn, "the passes ended");
    run.peak = std::max(first_read, worst.peak() + call.held);
    return run;
}

// The two pipelines of an R-S join, each with its ExitStop (declared after them: it goes first).
struct RsPipes {
    std::unique_ptr<ReadPipeline> side[2];
    std::optional<ExitStop> stop[2];
    size_t memory_bytes() const {
        return (side[0] ? side[0]->memory_bytes() : 0) + (side[1] ? side[1]->memory_bytes() : 0);
    }
};

// Reads both sources of an R-S call into pipes and matches them. With filters (one per side),
// as self_pairs: only their rows, no error past the limit (an overflow of either side returns no
// pairs; once R overflowed, S is only tallied) and a JoinMemoryError of the matcher thrown on.
// presize: the pipelines presized from the tables' statistics (the first read, not a pass).
JoinPairs rs_pairs(const JoinCall& call, RsPipes& pipes, Progress& progress, RowFilter* filters, Accounted* acc,
                   bool presize) {
    const size_t limit = call_limit(call);
    auto t0 = std::chrono::steady_clock::now();
    size_t left = limit;
    for (int k = 0; k < 2; ++k) {
        // At most `threads` threads at once: R gets a filing thread from 2 threads on, S (read
        // while R may still be filing) from 3 on; otherwise the backend's thread files.
        const bool background = call.threads > k + 1;
        pipes.side[k] = presize ? open_pipeline(call.src[k], 0, left, background)
                                : std::make_unique<ReadPipeline>(0, 0, 0, background);
        pipes.stop[k].emplace(*pipes.side[k]);
        if (filters == nullptr) {
            read_source(call.src[k], *pipes.side[k], left, progress);
        } else {
            if (k == 1 && filters[0].overflowed) filters[1].overflowed = true;
            // Under a first read's budget, S past it discards R's rows too.
            if (k == 1 && filters[1].budget != nullptr && !filters[0].overflowed)
                filters[1].discard_too = pipes.side[0].get();
            read_source_filtered(call.src[k], *pipes.side[k], left, progress, filters[k]);
        }
        // Both count against one limit (a first read's budget is one already).
        const size_t used = filters != nullptr && filters[0].budget != nullptr ? filters[0].budget->used()
                                                                               : pipes.side[0]->memory_bytes();
        left = limit > used ? limit - used : 1;
    }
    ReadPipeline& rp = *pipes.side[0];
    ReadPipeline& sp = *pipes.side[1];
    if (filters != nullptr && (filters[0].overflowed || filters[1].overflowed)) return JoinPairs();
    double read_s = seconds_since(t0);
    JoinOptions opt = options_for(call);
    size_t matcher_peak = 0;
    opt.accounted_peak = &matcher_peak;
    auto t1 = std::chrono::steady_clock::now();
    double filed_s = 0;
    JoinPairs pairs = match(
        [&](const JoinOptions& o) {
            if (!wait_filed(rp, o.cancel) || !wait_filed(sp, o.cancel)) return JoinPairs();
            filed_s = seconds_since(t1);
            check_read_ids(rp.docs(), filters != nullptr ? &filters[0] : nullptr, call.src[0].relname);
            check_read_ids(sp.docs(), filters != nullptr ? &filters[1] : nullptr, call.src[1].relname);
            if (call.content) {
                // Both sides without the template: the plain R-S join of the contents.
                std::vector<uint64_t> drop(call.tmpl, call.tmpl + call.ntmpl);
                Collection rc = without_signatures(rp.docs(), drop);
                Collection sc = without_signatures(sp.docs(), drop);
                return rs_join(
                    rc, sc,
                    with_budget(
                        o, rp.docs().memory_bytes() + sp.docs().memory_bytes() + rc.memory_bytes() + sc.memory_bytes(),
                        limit));
            }
            return rs_join(rp.docs(), sp.docs(),
                           with_budget(o, rp.docs().memory_bytes() + sp.docs().memory_bytes(), limit));
        },
        opt, progress, rp.rows(), nullptr, filters != nullptr);
    const Collection& r = rp.docs();
    const Collection& s = sp.docs();
    log_phases("spotsigs_join_rs", r.size() + s.size(), r.memory_bytes() + s.memory_bytes(), read_s, filed_s,
               seconds_since(t1) - filed_s, pairs.size());
    if (acc != nullptr) {
        acc->docs = r.memory_bytes() + s.memory_bytes();
        acc->matcher = matcher_peak;
    }
    return pairs;
}

// Appends an R-S join's pairs as (r_id, s_id, similarity) rows; with a pass, only the pairs it
// reports (join_passes.hpp); presize: the result sized for them first.
void put_rs_pairs(ReturnSetInfo* rsinfo, const RsPipes& pipes, const JoinPairs& pairs, const JoinPass* pass,
                  bool presize) {
    const Collection& r = pipes.side[0]->docs();
    const Collection& s = pipes.side[1]->docs();
    pg_guard([&] {
        if (presize) presize_result(rsinfo, pairs.size());
        for (const JoinPair& p : pairs) {
            const uint64_t x = r.length(p.a), y = s.length(p.b);
            if (pass == nullptr || pass->reports(x, y)) put_row(rsinfo, r.id(p.a), s.id(p.b), &p.similarity);
        }
    });
}

// One pass of an R-S join: the rows of both sides with lengths in its read range, matched, and
// the pairs whose shorter row lies in its probe range written out. The proof of join_passes.hpp
// holds as it stands for two relations: a pair's shorter row decides its pass, which reads both
// rows (the longer one by the length filter, whichever side it is on) and alone keeps the pair.
// (The R-S matcher has no probe_below, so the other pairs it finds are dropped here.)
PassOutcome rs_pass(const JoinCall& call, const JoinPass& p, const std::vector<LengthCount>& hist,
                    const std::vector<ExternalLength>* external, const RowsDigest* first, Progress& progress,
                    ReturnSetInfo* rsinfo) {
    PassOutcome out;
    RowFilter filters[2] = {pass_filter(call, p, &external[0], &first[0]),
                            pass_filter(call, p, &external[1], &first[1])};
    RsPipes pipes;
    try {
        JoinPairs pairs = rs_pairs(call, pipes, progress, filters, &out.acc, false);
        if (filters[0].overflowed || filters[1].overflowed) {
            out.fits = false;
            out.at_least = std::max<uint64_t>(call_limit(call) + 1, pass_read_bytes(p, hist));
        } else {
            put_rs_pairs(rsinfo, pipes, pairs, &p, false);
        }
    } catch (const JoinMemoryError& e) {
        out.fits = false;
        out.at_least = pipes.memory_bytes() + e.at_least();
    }
    return out;
}

// The slot of id among ids (ascending): its position. A pass's rows are those of the first read
// (RowsDigest); an id the first read did not see is refused here too (55000), so that no pair
// can name a slot outside the caller's per-row arrays.
size_t id_slot(const std::vector<int64_t>& ids, int64_t id, const char* relname) {
    auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it == ids.end() || *it != id) throw_rows_changed(relname);
    return static_cast<size_t>(it - ids.begin());
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
// the resolved threshold, the caller's threads and method (NULL: each node's own settings), and
// the content measure's template (NULL: the plain measure).
struct CitusArgs {
    Oid types[10];
    Datum values[10];
    char nulls[10];
    int n = 0;
};

// The content measure of a distributed join uses the template one node would use: the stored one
// (read_call), else the one computed from every row of the relation side (the rows come through
// Citus from the shards: the template is a function of the (id, signature) rows, wherever they
// are stored). The tasks on the workers then join the rows without it (spotsigs_citus_task).
void citus_template(JoinCall& call, int side, const char* fn) {
    if (!call.content || call.has_template) return;
    int64 rows = 0;
    struct varlena* t = fetch_spotsig(table_template(call.src[side], &rows, fn));
    pg_entry([&] {
        MultisetView v = view_of(t);
        call.tmpl = v.hashes;
        call.ntmpl = v.size;
        return Datum(0);
    });
    call.has_template = true;
}

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
    a.types[a.n] = spotsig_type_oid(fcinfo);
    a.values[a.n] = call.content ? pg_entry([&] {
        Multiset m;
        m.hashes.assign(call.tmpl, call.tmpl + call.ntmpl);
        m.freqs.assign(call.ntmpl, 1u);
        m.length = call.ntmpl;
        return make_spotsig(m.view());
    })
                                 : Datum(0);
    a.nulls[a.n++] = call.content ? ' ' : 'n';
    return a;
}

const int kInOrder[2] = {0, 1};
const int kSwapped[2] = {1, 0};

}  // namespace

// spotsigs_join's self-join of call's relation on this node, into the call's result.
static Datum self_join_result(FunctionCallInfo fcinfo, JoinCall& call) {
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    return pg_entry([&] {
        Progress progress("spotsigs_join");
        // The result rows are presized once, for the first batch's bound (with more than one
        // thread, rows are written while the workers still match: the backend's thread would
        // otherwise wait for them and then write every row alone).
        bool presized = false;
        auto sink = [&](const Collection& docs, const JoinPairs& pairs, uint64_t bound) {
            pg_guard([&] {
                if (!presized && bound != 0) presize_result(rsinfo, bound, bound == pairs.size());
                presized = true;
                put_self_pairs(rsinfo, docs, pairs, &call);
            });
        };
        // Rows some runs wrote before the matcher ran out are written again by the passes.
        auto restart = [&] { pg_guard([&] { tuplestore_clear(rsinfo->setResult); }); };
        const SelfRun run = run_self_join(call, "spotsigs_join", progress, sink, call.threads > 1, restart);
        // The join's own peak and the result rows the tuplestore keeps in memory (up to work_mem).
        pg_guard([&] {
            const size_t rows =
                result_memory_bytes(rsinfo, static_cast<size_t>(tuplestore_tuple_count(rsinfo->setResult)));
            elog(DEBUG1, "spotsigs_join: accounted total %zu MB: join %zu MB, result rows in memory %zu MB",
                 (run.peak + rows) >> 20, run.peak >> 20, rows >> 20);
        });
        progress.finish();
        return Datum(0);
    });
}

// spotsigs_join_rs's join of call's two relations on this node, into the call's result.
static Datum rs_join_result(FunctionCallInfo fcinfo, JoinCall& call) {
    if (call.content && !call.has_template) {
        // No stored statistics on either side: the template of s (the archive), from its rows.
        int64 rows = 0;
        struct varlena* t = fetch_spotsig(table_template(call.src[1], &rows, "spotsigs_join_rs"));
        pg_entry([&] {
            MultisetView v = view_of(t);
            call.tmpl = v.hashes;
            call.ntmpl = v.size;
            return Datum(0);
        });
        call.has_template = true;
    }
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    return pg_entry([&] {
        Progress progress("spotsigs_join_rs");
        // The content measure: both sides read without the template and joined by the plain
        // measure, so that its passes (on the lengths without the template) hold as they are.
        std::unique_ptr<SignatureSet> content_set;
        if (call.content) {
            content_set = std::make_unique<SignatureSet>(reinterpret_cast<const uint64_t*>(call.tmpl), call.ntmpl);
            call.content = false;
            call.remove = content_set.get();
            call.held += content_set->memory_bytes();
        }
        // The first read keeps both sides while they fit the limit and tallies every row's length;
        // past the limit the join runs in passes planned from both tallies together.
        LengthTally tallies[2];
        std::vector<int64_t> ids[2];
        std::vector<ExternalLength> external[2];
        RowFilter filters[2];
        // Both sides' first reads charge one budget: the limit.
        ReadBudget budget(call_limit(call));
        for (int k = 0; k < 2; ++k) {
            filters[k].tally = &tallies[k];
            filters[k].ids = &ids[k];
            filters[k].note_external = &external[k];
            filters[k].note_inline_max = call_limit(call) / (2 * kNoteShare) / sizeof(ExternalLength);
            filters[k].budget = &budget;
            filters[k].remove = call.remove;
        }
        bool in_passes = false;
        size_t first_read = 0;
        {
            RsPipes pipes;
            try {
                JoinPairs pairs = rs_pairs(call, pipes, progress, filters, nullptr, true);
                in_passes = filters[0].overflowed || filters[1].overflowed;
                if (!in_passes) put_rs_pairs(rsinfo, pipes, pairs, nullptr, true);
            } catch (const JoinMemoryError&) {
                in_passes = true;
            }
            first_read = budget.peak();
        }
        if (in_passes) {
            for (int k = 0; k < 2; ++k) {
                sort_unique_ids(ids[k], call.src[k].relname);
                std::vector<int64_t>().swap(ids[k]);
                sort_by_id(external[k]);
                call.held += external[k].capacity() * sizeof(ExternalLength);
            }
            log_process_memory("spotsigs_join_rs", "the first read ended");
            malloc_trim(0);  // the first read's memory (see run_passes)
            log_process_memory("spotsigs_join_rs", "the first read's memory given back");
            const std::vector<LengthCount> hist = merge_histograms(tallies[0].sorted(), tallies[1].sorted());
            Accounted worst;
            size_t continuing = 0;
            const size_t passes = run_passes(
                call, hist, call_limit(call),
                [&](const JoinPass& p) {
                    const RowsDigest first[2] = {filters[0].seen, filters[1].seen};
                    return rs_pass(call, p, hist, external, first, progress, rsinfo);
                },
                worst, continuing, progress);
            log_passes("spotsigs_join_rs", passes, continuing, first_read, worst, call.held);
        }
        progress.finish();
        return Datum(0);
    });
}

// spotsigs_join(rel, id_column, sig_column, threshold, threads, method)
//   RETURNS TABLE(id1 bigint, id2 bigint, similarity float8): each similar pair once, id1 < id2.
SPOTSIGS_FUNCTION(spotsigs_join) {
    JoinCall call = read_call(fcinfo, 1, "spotsigs_join");
    if (citus_distributed(fcinfo, call.src[0].relid)) {
        citus_template(call, 0, "spotsigs_join");
        // On the nodes holding the shards (src/sql/70_citus.sql).
        CitusArgs a = citus_args(fcinfo, call, kInOrder);
        citus_self_pairs(fcinfo, a.types, a.values, a.nulls);
        return Datum(0);
    }
    return self_join_result(fcinfo, call);
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
        citus_template(call, 1, "spotsigs_join_rs");  // as below: of s when neither side has one stored
        CitusArgs a = citus_args(fcinfo, call, s_dist ? kInOrder : kSwapped);
        citus_rs_pairs(fcinfo, a.types, a.values, a.nulls, !s_dist);
        return Datum(0);
    }
    return rs_join_result(fcinfo, call);
}

namespace {
// The ids query gives (one bigint column, sorted by its ORDER BY), in the caller's memory
// context; n receives their number. what names them in the error of a failed read.
int64* read_sorted_ids(const char* query, const char* what, size_t* n) {
    MemoryContext caller = CurrentMemoryContext;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    if (SPI_execute(query, true, 0) != SPI_OK_SELECT)
        elog(ERROR, "spotsigs_citus_match: reading the %s ids failed", what);
    int64* ids =
        static_cast<int64*>(MemoryContextAllocHuge(caller, (SPI_processed ? SPI_processed : 1) * sizeof(int64)));
    for (uint64 i = 0; i < SPI_processed; ++i) {
        bool isnull;
        ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
    }
    *n = SPI_processed;
    SPI_finish();
    return ids;
}
}  // namespace

// spotsigs_citus_match(local_shards regclass[], id_column name, sig_column name,
//                      other_results text[], threshold float8, threads integer, method text,
//                      template spotsig, pairs text)
//   RETURNS TABLE(id1 bigint, id2 bigint, similarity float8)
// The matching of a distributed join's task on its node (spotsigs_citus_task, src/sql/70_citus.sql):
// the local rows are those of the shards local_shards (each checked as any join input and read
// as the caller), the other rows those of the intermediate results other_results of this
// transaction (Citus's binary COPY format of (id, signature) rows, each signature checked by the
// type's receive function as it is read). pairs says which pairs:
//   'local'        the local rows' pairs (other_results unused), id1 < id2;
//   'local+cross'  the pairs with a local row among the local and other rows, id1 < id2;
//   'cross'        the pairs of a local and an other row, id1 < id2;
//   'rs'           the pairs of a local and an other row as (local id, other id): the R-S join,
//                  for rows whose ids may repeat across the two sides;
//   'owned:L'      (L an integer >= 0) the pairs among the other rows alone (local_shards unused)
//                  with a row of length (spotsig length) >= L among both, id1 < id2: a task of
//                  the length-range split (spotsigs_citus_range_task), whose results hold
//                  (id, signature, length) rows (spotsigs_citus_export_pieces).
// 'local+cross' and 'cross' self-join the local and other rows together (ids unique among them;
// the self-join's matcher is much faster than the R-S one) and keep the pairs asked for. With a
// template, by the content measure against it: the join one node runs with that template stored
// (spotsigs_join, spotsigs_join_rs); without one, the plain measure. The join's reader streams
// the rows from their queries (nothing is materialized on the way).
SPOTSIGS_FUNCTION(spotsigs_citus_match) {
    for (int k = 0; k < 3; ++k)
        if (PG_ARGISNULL(k))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("the shard and column arguments must not be NULL")));
    if (PG_ARGISNULL(4) || PG_ARGISNULL(8))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("threshold and pairs must not be NULL")));
    const char* keep = text_to_cstring(PG_GETARG_TEXT_PP(8));
    const bool rs = strcmp(keep, "rs") == 0;
    const bool self = strcmp(keep, "local") == 0;
    const bool together = strcmp(keep, "local+cross") == 0 || strcmp(keep, "cross") == 0;
    const bool owned = strncmp(keep, "owned:", 6) == 0;
    long owned_min = -1;
    if (owned) {
        char* end = nullptr;
        owned_min = strtol(keep + 6, &end, 10);
        if (end == keep + 6 || *end != '\0' || owned_min < 0 || owned_min > std::numeric_limits<int>::max())
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown pairs \"%s\"", keep),
                            errhint("'owned:' takes a length, an integer >= 0.")));
    }
    if (!rs && !self && !together && !owned)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown pairs \"%s\"", keep),
                        errhint("Use 'local', 'local+cross', 'cross' or 'rs'.")));
    if (!self && PG_ARGISNULL(3))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("other_results must not be NULL for pairs \"%s\"", keep)));
    JoinCall call;
    use_reserved_huge_pages(join_huge_pages);
    call.tau = threshold_arg(fcinfo, 4);
    read_threads_method(fcinfo, 5, call);
    const char* id_column = NameStr(*PG_GETARG_NAME(1));
    const char* sig_column = NameStr(*PG_GETARG_NAME(2));
    const Oid spotsig = spotsig_type_oid(fcinfo);
    Datum* shards;
    bool* shard_nulls;
    int nshards;
    deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT, &shards, &shard_nulls,
                      &nshards);
    StringInfoData query, names;
    initStringInfo(&query);
    initStringInfo(&names);
    JoinSource local;
    for (int i = 0; i < nshards; ++i) {
        if (shard_nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("a shard must not be NULL")));
        JoinSource s =
            resolve_source(DatumGetObjectId(shards[i]), id_column, sig_column, spotsig, "spotsigs_citus_match");
        appendStringInfoString(&query, i > 0 ? " UNION ALL " : "");
        appendStringInfoString(&query, s.query);
        appendStringInfoString(&names, i > 0 ? ", " : "");
        appendStringInfoString(&names, s.relname);
        if (i == 0) local.relid = s.relid;
        local.est_rows += s.est_rows;
        local.est_entries += s.est_entries;
    }
    local.relname = names.data;
    local.query = query.data;
    JoinSource other;
    bool no_other = false;
    if (!self) {
        Datum* results;
        bool* result_nulls;
        int nresults;
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(3), TEXTOID, -1, false, TYPALIGN_INT, &results, &result_nulls,
                          &nresults);
        for (int i = 0; i < nresults; ++i)
            if (result_nulls[i])
                ereport(ERROR,
                        (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("an intermediate result must not be NULL")));
        no_other = nresults == 0;
        char* ids = OidOutputFunctionCall(F_ARRAY_OUT, PG_GETARG_DATUM(3));
        other.relname = psprintf("the intermediate results %s", ids);
        // The rows of the length-range split carry their length too, the column Citus split them by
        // (spotsigs_citus_export_pieces).
        other.query = psprintf(
            "SELECT u.id, u.sig FROM pg_catalog.read_intermediate_results(%s::pg_catalog.text[], 'binary') "
            "AS u(id pg_catalog.int8, sig %s%s) WHERE u.id IS NOT NULL AND u.sig IS NOT NULL",
            quote_literal_cstr(ids), format_type_be_qualified(spotsig), owned ? ", len pg_catalog.int4" : "");
    }
    if (!PG_ARGISNULL(7)) {
        // The content measure with this template, as one node's join with it stored.
        struct varlena* t = fetch_spotsig(PG_GETARG_DATUM(7));
        call.content = true;
        call.has_template = true;
        pg_entry([&] {
            MultisetView v = view_of(t);
            call.tmpl = v.hashes;
            call.ntmpl = v.size;
            return Datum(0);
        });
    }
    if ((nshards == 0 && !owned) || no_other) {
        InitMaterializedSRF(fcinfo, 0);
        return Datum(0);
    }
    // Citus's read_intermediate_results materializes the fetched rows in a tuplestore of work_mem,
    // which past that spills them to a temporary file, written and read back on every read of
    // them. For this call work_mem is raised (never lowered) to a quarter of the join's memory
    // limit, so that a task's fetched rows stay in memory; it returns to its value when the call
    // ends, or with the transaction on an error.
    const int guc_level = NewGUCNestLevel();
    const long fetch_kb = std::min<long>(join_memory_limit_kb / 4, MAX_KILOBYTES);
    if (fetch_kb > work_mem)
        (void)set_config_option("work_mem", psprintf("%ld", fetch_kb), PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                                true, 0, false);
    Datum result;
    if (owned) {
        // The owned rows are told by their length, which the join holds for every row: no read
        // of their ids beforehand.
        call.owned_min_length = owned_min;
        call.src[0] = other;
        call.sources = 1;
        InitMaterializedSRF(fcinfo, 0);
        result = self_join_result(fcinfo, call);
        AtEOXact_GUC(true, guc_level);
        return result;
    }
    call.src[0] = local;
    call.sources = rs ? 2 : 1;
    if (rs) call.src[1] = other;
    if (together) {
        // The local ids, sorted (the id column alone: no signature is read for them).
        call.local_ids = read_sorted_ids(psprintf("SELECT l.id FROM (%s) l(id, sig) ORDER BY 1", local.query), "local",
                                         &call.nlocal);
        call.cross_only = strcmp(keep, "cross") == 0;
        call.held += call.nlocal * sizeof(int64);
        call.sides.first = [](const void* c, int64_t id) { return is_local(*static_cast<const JoinCall*>(c), id); };
        call.sides.context = &call;
        call.sides.keep = call.cross_only ? PairSides::Keep::Across : PairSides::Keep::WithFirst;
        JoinSource both;
        both.relid = local.relid;
        both.relname = psprintf("%s and %s", local.relname, other.relname);
        both.query = psprintf("%s UNION ALL %s", local.query, other.query);
        both.est_rows = local.est_rows;
        both.est_entries = local.est_entries;
        call.src[0] = both;
    }
    InitMaterializedSRF(fcinfo, 0);
    result = rs ? rs_join_result(fcinfo, call) : self_join_result(fcinfo, call);
    AtEOXact_GUC(true, guc_level);
    return result;
}

// spotsigs_clusters(rel, id_column, sig_column, threshold, threads, method)
//   RETURNS TABLE(id bigint, cluster bigint): every row with a signature and the smallest id of
//   its connected component in the near-duplicate graph (a row without partners is its own cluster).
SPOTSIGS_FUNCTION(spotsigs_clusters) {
    JoinCall call = read_call(fcinfo, 1, "spotsigs_clusters");
    if (citus_distributed(fcinfo, call.src[0].relid)) {
        citus_template(call, 0, "spotsigs_clusters");
        CitusArgs a = citus_args(fcinfo, call, kInOrder);
        citus_clusters(fcinfo, call.src[0].relname, NameStr(*PG_GETARG_NAME(1)), NameStr(*PG_GETARG_NAME(2)), a.types,
                       a.values, a.nulls);
        return Datum(0);
    }
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    return pg_entry([&] {
        Progress progress("spotsigs_clusters");
        // A union-find forest over the rows in id order (slot i: the i-th smallest id), built from
        // the pairs of the join, in one go or pass after pass: a pass's pairs name their rows by
        // id, which finds their slot. The root of a component is always its smallest slot, so
        // ids[root] is the cluster. It takes 12 bytes a row, held against the limit in passes.
        std::vector<int64_t> ids;
        std::vector<uint32_t> parent;
        auto slot = [&](int64_t id) { return static_cast<uint32_t>(id_slot(ids, id, call.src[0].relname)); };
        auto grow = [&] {
            if (parent.size() == ids.size()) return;
            parent.resize(ids.size());
            std::iota(parent.begin(), parent.end(), 0u);
        };
        auto sink = [&](const Collection& docs, const JoinPairs& pairs, uint64_t) {
            grow();
            for (const JoinPair& p : pairs) {
                uint32_t a = find_root(parent, slot(docs.id(p.a))), b = find_root(parent, slot(docs.id(p.b)));
                if (a != b) parent[a < b ? b : a] = a < b ? a : b;
            }
        };
        run_self_join(call, "spotsigs_clusters", progress, sink, false, nullptr, &ids, sizeof(uint32_t));
        grow();  // when no sink call came (passes over rows that are all empty)
        pg_guard([&] {
            presize_result(rsinfo, ids.size());
            for (uint32_t i = 0; i < ids.size(); ++i) put_row(rsinfo, ids[i], ids[find_root(parent, i)], nullptr);
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

namespace spotsigs::pg {

Datum table_template(const JoinSource& src, int64* rows, const char* fn) {
    int threads = join_max_threads;
    use_reserved_huge_pages(join_huge_pages);
    return pg_entry([&] {
        Progress progress(fn);
        std::vector<uint64_t> drop;
        // In one go while the rows and the statistics fit spotsigs.join_memory_limit, else in
        // passes over the rows (template_in_passes: the same template).
        bool passes = false;
        try {
            std::unique_ptr<ReadPipeline> pipe = open_pipeline(src, 0, join_memory_limit_bytes(), threads > 1);
            ExitStop exit_stop(*pipe);
            RowFilter filter;
            filter.lo = 0;  // every row, empty ones too
            read_source_filtered(src, *pipe, join_memory_limit_bytes(), progress, filter);
            passes = filter.overflowed;
            if (!passes) {
                JoinOptions opt;
                opt.threads = threads;
                size_t n = 0;
                match(
                    [&](const JoinOptions& o) {
                        if (!wait_filed(*pipe, o.cancel)) return JoinPairs();
                        check_unique_ids(pipe->docs(), src.relname);
                        // Nothing of the rows is needed once the statistics hold their entries.
                        n = pipe->docs().size();
                        drop =
                            template_signatures_releasing(pipe->docs(), o.threads, o.cancel, join_memory_limit_bytes());
                        return JoinPairs();
                    },
                    opt, progress, pipe->rows());
                *rows = static_cast<int64>(n);
            }
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::OutOfMemory) throw;
            passes = true;
        }
        if (passes) {
            malloc_trim(0);
            RowsDigest first;
            drop = template_in_passes(src, join_memory_limit_bytes(), progress, fn, first);
            *rows = static_cast<int64>(first.rows);
        }
        Multiset m;
        m.hashes = drop;
        m.freqs.assign(drop.size(), 1u);
        m.length = drop.size();
        Datum d = make_spotsig(m.view());
        progress.finish();
        return d;
    });
}

namespace {
// An int8 or float8 array of v's values (PostgreSQL calls: inside pg_guard).
template <class T>
Datum array_of(const std::vector<T>& v, Oid elem) {
    Datum* d = static_cast<Datum*>(palloc(sizeof(Datum) * std::max<size_t>(1, v.size())));
    for (size_t i = 0; i < v.size(); ++i)
        d[i] = elem == FLOAT8OID ? Float8GetDatum(double(v[i])) : Int64GetDatum(int64(v[i]));
    ArrayType* a = construct_array(d, int(v.size()), elem, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
    pfree(d);
    return PointerGetDatum(a);
}
}  // namespace

void best_earlier_matches(Oid ext_schema, Oid relid, const char* id_column, const char* sig_column, Datum out[3]) {
    const char* fn = "spotsigs_flag_duplicates";
    // The call spotsigs_join(relid, id_column, sig_column) makes (read_call with every optional
    // argument NULL).
    JoinCall call;
    use_reserved_huge_pages(join_huge_pages);
    call.content = true;
    call.tau = kContentThreshold;
    call.threads = join_max_threads;
    call.method = static_cast<JoinMethod>(join_method_guc);
    call.src[0] = resolve_source(relid, id_column, sig_column, spotsig_type_in(ext_schema), fn);
    StoredTemplate t;
    stored_template(ext_schema, relid, sig_column, CurrentMemoryContext, &t);
    if (t.found) {
        call.has_template = true;
        call.tmpl = t.hashes;
        call.ntmpl = t.n;
    }
    pg_entry([&] {
        Progress progress(fn);
        // Per row in id order (slot i: the i-th smallest id), its best match so far (kNone: none),
        // from the pairs of the join in one go or pass after pass (a pass's pairs name their rows
        // by id, which finds their slot): 16 bytes a row, held against the limit in passes.
        constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
        std::vector<int64_t> ids;
        std::vector<int64_t> best;
        std::vector<double> sim;
        auto grow = [&] {
            if (best.size() == ids.size()) return;
            best.assign(ids.size(), kNone);
            sim.assign(ids.size(), 0.0);
        };
        auto sink = [&](const Collection& docs, const JoinPairs& pairs, uint64_t) {
            grow();
            for (const JoinPair& p : pairs) {
                const int64_t x = docs.id(p.a), y = docs.id(p.b);
                const int64_t lo = x < y ? x : y, hi = x < y ? y : x;
                const size_t r = id_slot(ids, hi, call.src[0].relname);
                if (best[r] == kNone || p.similarity > sim[r] || (p.similarity == sim[r] && lo < best[r])) {
                    best[r] = lo;
                    sim[r] = p.similarity;
                }
            }
        };
        run_self_join(call, fn, progress, sink, false, nullptr, &ids, sizeof(int64_t) + sizeof(double));
        grow();
        std::vector<int64_t> id, match;
        std::vector<double> similarity;
        for (size_t r = 0; r < ids.size(); ++r) {
            if (best[r] == kNone) continue;
            id.push_back(ids[r]);
            match.push_back(best[r]);
            similarity.push_back(sim[r]);
        }
        pg_guard([&] {
            out[0] = array_of(id, INT8OID);
            out[1] = array_of(match, INT8OID);
            out[2] = array_of(similarity, FLOAT8OID);
        });
        progress.finish();
        return Datum(0);
    });
}

}  // namespace spotsigs::pg

// spotsigs_template(rel, id_column, sig_column) -> spotsig: the template signatures the content
// measure finds in the rows of rel (each with frequency 1), the ones a content-measure join of
// the same rows leaves out.
SPOTSIGS_FUNCTION(spotsigs_template) {
    for (int k = 0; k < 3; ++k)
        if (PG_ARGISNULL(k))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("the relation and column arguments must not be NULL")));
    JoinSource src = resolve_source(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)), NameStr(*PG_GETARG_NAME(2)),
                                    spotsig_type_oid(fcinfo), "spotsigs_template");
    int64 rows = 0;
    return table_template(src, &rows, "spotsigs_template");
}

// The prepared set of spotsig_remove's second argument, kept in fn_extra for the rows of one
// query: a template read from a table is the same value on every row, and detoasting and
// hashing a large one costs far more than removing it from one row. Keyed by the value's
// on-disk TOAST pointer (a stored value never changes, and its pointer is not reused while the
// query's snapshot can see it), or else by the value's own bytes as passed (compared in full).
struct RemoveCache {
    bool ondisk = false;
    Oid toastrel = InvalidOid;
    Oid valueid = InvalidOid;
    struct varlena* bytes = nullptr;  // not on disk: a copy of the value as passed (fn_mcxt)
    SignatureSet* set = nullptr;      // null until a set and its key are both in place
};

// Frees the prepared set when the function's memory context goes away.
void free_remove_cache(void* arg) {
    auto* cache = static_cast<RemoveCache*>(arg);
    delete cache->set;
    cache->set = nullptr;
}

// The call site's cache, made on first use (PostgreSQL errors raised directly: outside pg_entry).
RemoveCache* remove_cache(FunctionCallInfo fcinfo) {
    auto* cache = static_cast<RemoveCache*>(fcinfo->flinfo->fn_extra);
    if (cache != nullptr) return cache;
    MemoryContext cxt = fcinfo->flinfo->fn_mcxt;
    cache = static_cast<RemoveCache*>(MemoryContextAllocZero(cxt, sizeof(RemoveCache)));
    auto* cb = static_cast<MemoryContextCallback*>(MemoryContextAllocZero(cxt, sizeof(MemoryContextCallback)));
    cb->func = free_remove_cache;
    cb->arg = cache;
    MemoryContextRegisterResetCallback(cxt, cb);
    fcinfo->flinfo->fn_extra = cache;
    return cache;
}

// Calls CHECK_FOR_INTERRUPTS from the long loops of spotsig_remove (backend's thread).
const PollFn& remove_poll() {
    static const PollFn poll = [] { check_interrupts(); };
    return poll;
}

// spotsig_remove(sig, signatures) -> spotsig: sig without the signatures that occur in
// `signatures` (whatever their frequency there).
SPOTSIGS_FUNCTION(spotsig_remove) {
    struct varlena* sig = fetch_spotsig(PG_GETARG_DATUM(0));
    auto* raw = reinterpret_cast<struct varlena*>(DatumGetPointer(PG_GETARG_DATUM(1)));
    RemoveCache* cache = remove_cache(fcinfo);
    // Whether the cached set is this value's: by TOAST pointer, or by the bytes as passed (a value
    // that is a pointer to other memory is flattened first).
    const bool ondisk = VARATT_IS_EXTERNAL_ONDISK(raw);
    struct varatt_external ext = {};
    struct varlena* key = raw;
    bool hit = false;
    if (ondisk) {
        VARATT_EXTERNAL_GET_POINTER(ext, raw);
        hit = cache->set != nullptr && cache->ondisk && cache->toastrel == ext.va_toastrelid &&
              cache->valueid == ext.va_valueid;
    } else {
        if (VARATT_IS_EXTERNAL(raw)) key = detoast_external_attr(raw);
        hit = cache->set != nullptr && !cache->ondisk && VARSIZE_ANY(cache->bytes) == VARSIZE_ANY(key) &&
              memcmp(cache->bytes, key, VARSIZE_ANY(key)) == 0;
    }
    struct varlena* drop = hit ? nullptr : fetch_spotsig(PointerGetDatum(key));
    MemoryContext cxt = fcinfo->flinfo->fn_mcxt;
    return pg_entry([&] {
        if (!hit) {
            const MultisetView d = view_of(drop);
            auto fresh = std::make_unique<SignatureSet>(d.hashes, d.size, nullptr, remove_poll());
            struct varlena* bytes = nullptr;
            if (!ondisk)
                pg_guard([&] {
                    bytes = static_cast<struct varlena*>(MemoryContextAlloc(cxt, VARSIZE_ANY(key)));
                    memcpy(bytes, key, VARSIZE_ANY(key));
                });
            // The old set goes first: the cache holds no set while its key changes.
            delete cache->set;
            cache->set = nullptr;
            if (cache->bytes != nullptr) pg_guard([&] { pfree(cache->bytes); });
            cache->bytes = bytes;
            cache->ondisk = ondisk;
            cache->toastrel = ext.va_toastrelid;
            cache->valueid = ext.va_valueid;
            cache->set = fresh.release();
        }
        Multiset m;
        cache->set->remove_into(view_of(sig), m, remove_poll());
        return make_spotsig(m.view());
    });
}
