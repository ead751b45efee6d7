// SQL entry points of the similarity join: spotsigs_join(), spotsigs_join_rs(),
// spotsigs_clusters(). Arguments and catalog checks are handled before any C++ object exists;
// the documents are copied out on the main thread and matched on a signal-blocked thread.
#include "pg.hpp"

extern "C" {
#include "catalog/pg_type_d.h"
#include "funcapi.h"
#include "utils/tuplestore.h"
}

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "boundary.hpp"
#include "citus.hpp"
#include "content.hpp"
#include "datum.hpp"
#include "error.hpp"
#include "gucs.hpp"
#include "huge_alloc.hpp"
#include "join.hpp"
#include "join_gucs.hpp"
#include "join_read.hpp"
#include "join_run.hpp"
#include "read_pipeline.hpp"
#include "result_store.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace {

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
JoinCall read_call(FunctionCallInfo fcinfo, int sources) {
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
    call.tau = !PG_ARGISNULL(p) ? PG_GETARG_FLOAT8(p) : call.content ? kContentThreshold : similarity_threshold;
    if (std::isnan(call.tau) || call.tau <= 0.0 || call.tau > 1.0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("threshold must be greater than 0 and at most 1, not %g", call.tau)));
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
                                     NameStr(*PG_GETARG_NAME(3 * k + 2)), spotsig);
    // Fails early (before any reading) when the caller cannot take a materialized result.
    InitMaterializedSRF(fcinfo, 0);
    return call;
}

// Options for the core from the call (the memory budget is set by with_budget once the input is filed).
JoinOptions options_for(const JoinCall& call) {
    JoinOptions opt;
    opt.tau = call.tau;
    opt.threads = call.threads;
    opt.method = call.method;
    return opt;
}

// Runs a core join on the matcher thread; the core's memory error is reported with the limit.
JoinPairs match(const std::function<JoinPairs(const JoinOptions&)>& work,
                const JoinOptions& opt, Progress& progress, uint64_t total, const EmitFn& emit = nullptr) {
    try {
        return run_on_thread(work, opt, progress, total, emit);
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::OutOfMemory)
            throw_memory_limit((std::string("matching: ") + e.what()).c_str());
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
    if (used >= limit) throw_memory_limit("copying the documents");
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

// Reads the first source of a self-join call into pipe and matches it with itself. With emit,
// pairs may go to emit while the matching runs (see run_on_thread); the rest are returned.
JoinPairs self_pairs(const JoinCall& call, ReadPipeline& pipe, Progress& progress,
                     const char* fn, const EmitFn& emit = nullptr) {
    auto t0 = std::chrono::steady_clock::now();
    ExitStop exit_stop(pipe);
    read_source(call.src[0], pipe, join_memory_limit_bytes(), progress);
    double read_s = seconds_since(t0);
    JoinOptions opt = options_for(call);
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
        opt, progress, pipe.rows(), counted);
    log_phases(fn, pipe.docs().size(), pipe.docs().memory_bytes(), read_s, filed_s,
               seconds_since(t1) - filed_s, emitted + pairs.size());
    if (call.content)
        pg_guard([&] {
            elog(DEBUG1, "%s: content measure: %zu template signatures found in %.3f s (part of the matching)",
                 fn, templates, stats_s);
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
    JoinCall call = read_call(fcinfo, 1);
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
        JoinPairs pairs = self_pairs(call, *pipe, progress, "spotsigs_join", emit);
        pg_guard([&] {
            if (!presized) presize_result(rsinfo, pairs.size());
            put_self_pairs(rsinfo, docs, pairs);
        });
        progress.finish();
        return Datum(0);
    });
}

// spotsigs_join_rs(r, r_id, r_sig, s, s_id, s_sig, threshold, threads, method)
//   RETURNS TABLE(r_id bigint, s_id bigint, similarity float8): every similar (r, s) pair.
SPOTSIGS_FUNCTION(spotsigs_join_rs) {
    JoinCall call = read_call(fcinfo, 2);
    // One side hash-distributed by Citus, the other not (a batch against an archive): the other
    // side's rows go to the nodes holding the distributed side's shards, which pair them there.
    // Both distributed: read through Citus and matched here, as for any other relation.
    bool r_dist = citus_distributed(fcinfo, call.src[0].relid);
    bool s_dist = citus_distributed(fcinfo, call.src[1].relid);
    if (r_dist != s_dist) {
        CitusArgs a = citus_args(fcinfo, call, s_dist ? kInOrder : kSwapped);
        citus_rows(fcinfo, "spotsigs_citus_join_rs", a.n, a.types, a.values, a.nulls, r_dist);
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
    JoinCall call = read_call(fcinfo, 1);
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

// spotsigs_template(rel, id_column, sig_column) -> spotsig: the template signatures the content
// measure finds in the rows of rel (each with frequency 1), the ones a content-measure join of
// the same rows leaves out.
SPOTSIGS_FUNCTION(spotsigs_template) {
    for (int k = 0; k < 3; ++k)
        if (PG_ARGISNULL(k))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("the relation and column arguments must not be NULL")));
    use_reserved_huge_pages(join_huge_pages);
    JoinSource src = resolve_source(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)),
                                    NameStr(*PG_GETARG_NAME(2)), spotsig_type_oid(fcinfo));
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
