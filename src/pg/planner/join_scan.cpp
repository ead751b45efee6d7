// Execution of the SpotsigsJoin custom scan: both children are read in full on the backend's
// thread (each row kept as a MinimalTuple, its signature copied into the core's Collection, both
// charged to spotsigs.join_memory_limit), the core's R-S matcher runs on a signal-blocked thread
// while the backend's thread polls for cancels (run_on_thread), and each pair found becomes one
// scan tuple, the outer row's columns followed by the inner row's, which ExecScan filters with
// the other join clauses and projects.
//
// A self join (one child whose rows are both sides, join_path.cpp) keeps its rows once and runs
// the core's self-join, which finds each unordered pair of distinct rows once: every such pair
// is emitted in both orders, and every kept row with itself (similarity 1, at or above any
// threshold), which are the pairs the R-S join of the rows with themselves finds.
//
// Rows with a NULL signature are not kept (a % b is NULL, so never true, for them), nor rows
// with an empty one (similarity 0, below any threshold, which is in (0, 1]).
#include "pg/planner/join_planner.hpp"

extern "C" {
#include "access/htup_details.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
}

#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/memory/huge_alloc.hpp"
#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/join/join_gucs.hpp"
#include "pg/join/join_run.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg::planner {

namespace {

// The C++ state of one execution: the kept rows of both sides and the pairs found. Lives on the
// heap; deleted by EndCustomScan, a rescan that reads again, or (after an error) the reset
// callback of the query's memory context.
struct JoinRows {
    Collection docs[2];
    std::vector<MinimalTuple> tuples[2];  // palloc'd in JoinScanState::rows_cxt; index = Collection index
    JoinPairs pairs;
    size_t next = 0;
    std::atomic<uint64_t> candidates{0};
};

struct JoinScanState {
    CustomScanState css;  // first: the executor sees a CustomScanState
    bool self;            // one child, whose rows are both sides
    int sig_attno[2];     // the signature's position in each child's output
    bool sig_needed[2];   // whether the target list or qual read a side's signature column
    int natts[2];
    double tau;
    int threads;
    JoinMethod method;
    MemoryContext rows_cxt;
    TupleTableSlot* side_slot[2];  // each child's rows as kept
    JoinRows* rows;
    bool matched;
    uint64 read[2];  // rows read from each child
    double read_s;
    double match_s;
    MemoryContextCallback cleanup;
};

CustomExecMethods exec_methods;

const char* method_name(JoinMethod m) {
    switch (m) {
        case JoinMethod::Partitioned: return "partitioned";
        case JoinMethod::NoPart: return "nopart";
        case JoinMethod::NoPrune: return "noprune";
        case JoinMethod::BruteForce: return "bruteforce";
    }
    return "?";
}

void delete_rows(void* arg) {
    JoinScanState* st = (JoinScanState*)arg;
    delete st->rows;
    st->rows = nullptr;
}

// Allocates st->rows afresh (inside pg_entry).
void new_rows(JoinScanState* st) {
    pg_entry([&] {
        st->rows = new JoinRows();
        return Datum(0);
    });
}

Node* create_state(CustomScan* cscan) {
    JoinScanState* st = (JoinScanState*)newNode(sizeof(JoinScanState), T_CustomScanState);
    st->css.methods = &exec_methods;
    st->self = intVal(linitial(cscan->custom_private)) != 0;
    st->sig_attno[0] = intVal(lsecond(cscan->custom_private));
    st->sig_attno[1] = intVal(lthird(cscan->custom_private));
    return (Node*)st;
}

// Whether the scan tuple's column attno is read by the plan's target list or qual.
bool scan_column_read(Plan* plan, int attno) {
    List* vars = pull_var_clause((Node*)list_concat_copy(plan->targetlist, plan->qual),
                                 PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS | PVC_RECURSE_PLACEHOLDERS);
    ListCell* lc;
    foreach (lc, vars) {
        Var* v = (Var*)lfirst(lc);
        if (v->varattno == attno || v->varattno == InvalidAttrNumber) return true;
    }
    return false;
}

// The settings a run uses, read when it starts (a subquery's scan starts with the statement, but
// % takes the threshold in force when it is evaluated), and shown by EXPLAIN.
void read_settings(JoinScanState* st) {
    st->tau = similarity_threshold;
    st->threads = join_max_threads;
    st->method = static_cast<JoinMethod>(join_method_guc);
}

void begin_scan(CustomScanState* node, EState* estate, int eflags) {
    JoinScanState* st = (JoinScanState*)node;
    CustomScan* cs = (CustomScan*)node->ss.ps.plan;
    ListCell* lc;
    foreach (lc, cs->custom_plans)
        node->custom_ps = lappend(node->custom_ps, ExecInitNode((Plan*)lfirst(lc), estate, eflags));
    for (int k = 0; k < 2; ++k) {
        PlanState* child = (PlanState*)list_nth(node->custom_ps, st->self ? 0 : k);
        TupleDesc desc = ExecGetResultType(child);
        st->natts[k] = desc->natts;
        st->side_slot[k] = ExecInitExtraTupleSlot(estate, desc, &TTSOpsMinimalTuple);
    }
    st->sig_needed[0] = scan_column_read(&cs->scan.plan, st->sig_attno[0]);
    st->sig_needed[1] = scan_column_read(&cs->scan.plan, st->natts[0] + st->sig_attno[1]);
    // One kept row serves both sides.
    if (st->self) st->sig_needed[0] = st->sig_needed[0] || st->sig_needed[1];
    read_settings(st);
    st->rows_cxt = AllocSetContextCreate(estate->es_query_cxt, "SpotsigsJoin rows", ALLOCSET_DEFAULT_SIZES);
    st->cleanup.func = delete_rows;
    st->cleanup.arg = st;
    MemoryContextRegisterResetCallback(estate->es_query_cxt, &st->cleanup);
    if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0) new_rows(st);
}

// The bytes the kept rows hold: their tuples, their signatures and the vectors indexing them.
size_t kept_bytes(const JoinScanState* st) {
    const JoinRows* r = st->rows;
    return MemoryContextMemAllocated(st->rows_cxt, true) + r->docs[0].memory_bytes() + r->docs[1].memory_bytes() +
           (r->tuples[0].capacity() + r->tuples[1].capacity()) * sizeof(MinimalTuple);
}

// Keeps row t of side k with signature v (the C++ half of read_side).
void keep_row(JoinScanState* st, int k, MinimalTuple t, const struct varlena* v, size_t limit) {
    pg_entry([&] {
        MultisetView m = view_of(v);
        if (m.length == 0) return Datum(0);
        JoinRows* r = st->rows;
        r->tuples[k].push_back(t);
        r->docs[k].add(static_cast<int64_t>(r->docs[k].size()), m);
        if (kept_bytes(st) > limit)
            throw_memory_limit("reading the rows of a SpotsigsJoin", "its sides' rows and signatures need more than " +
                                                                         std::to_string(limit >> 20) +
                                                                         " MB (the SQL join does not run in passes)");
        return Datum(0);
    });
}

// Reads every row of child k, keeping those with a non-empty signature.
void read_side(JoinScanState* st, int k) {
    PlanState* child = (PlanState*)list_nth(st->css.custom_ps, k);
    ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
    const size_t limit = join_memory_limit_bytes();
    const int natts = st->natts[k];
    Datum* values = (Datum*)palloc(sizeof(Datum) * (natts > 0 ? natts : 1));
    bool* nulls = (bool*)palloc(sizeof(bool) * (natts > 0 ? natts : 1));
    for (;;) {
        TupleTableSlot* slot = ExecProcNode(child);
        if (TupIsNull(slot)) break;
        st->read[k]++;
        bool isnull;
        Datum d = slot_getattr(slot, st->sig_attno[k], &isnull);
        if (isnull) continue;
        MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
        struct varlena* v = fetch_spotsig(d);
        MemoryContextSwitchTo(st->rows_cxt);
        MinimalTuple t;
        if (st->sig_needed[k]) {
            t = ExecCopySlotMinimalTuple(slot);
        } else {
            // The signature is only matched, never output: the kept row leaves it out.
            slot_getallattrs(slot);
            memcpy(values, slot->tts_values, sizeof(Datum) * natts);
            memcpy(nulls, slot->tts_isnull, sizeof(bool) * natts);
            nulls[st->sig_attno[k] - 1] = true;
            t = heap_form_minimal_tuple(slot->tts_tupleDescriptor, values, nulls);
        }
        MemoryContextSwitchTo(old);
        keep_row(st, k, t, v, limit);
        ResetExprContext(econtext);
    }
    pfree(values);
    pfree(nulls);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Matches the kept rows of both sides into st->rows->pairs (outer rows are R, inner rows S).
void match(JoinScanState* st) {
    use_reserved_huge_pages(join_huge_pages);
    const size_t limit = join_memory_limit_bytes();
    pg_entry([&] {
        auto t0 = std::chrono::steady_clock::now();
        JoinRows* r = st->rows;
        Progress progress("SpotsigsJoin");
        JoinOptions opt;
        opt.tau = st->tau;
        opt.threads = st->threads;
        opt.method = st->method;
        opt.candidates = &r->candidates;
        const size_t used = kept_bytes(st);
        if (used >= limit) throw_memory_limit("reading the rows of a SpotsigsJoin");
        opt.memory_limit = limit - used;
        try {
            const bool self = st->self;
            r->pairs = run_on_thread(
                [r, self](const JoinOptions& o) {
                    return self ? self_join(r->docs[0], o) : rs_join(r->docs[0], r->docs[1], o);
                },
                opt, progress, r->docs[0].size());
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::OutOfMemory)
                throw_memory_limit("matching", e.detail().empty() ? std::string(e.what()) : e.detail());
            throw;
        }
        progress.finish();
        st->match_s = seconds_since(t0);
        return Datum(0);
    });
}

// ExecScan's access method: the next pair as a scan tuple (empty slot at the end).
TupleTableSlot* next_pair(ScanState* ss) {
    JoinScanState* st = (JoinScanState*)ss;
    if (!st->matched) {
        read_settings(st);
        auto t0 = std::chrono::steady_clock::now();
        read_side(st, 0);
        if (!st->self) read_side(st, 1);
        st->read_s = seconds_since(t0);
        match(st);
        st->matched = true;
    }
    TupleTableSlot* out = ss->ss_ScanTupleSlot;
    ExecClearTuple(out);
    JoinRows* r = st->rows;
    uint32_t idx[2];
    const size_t npairs = r->pairs.size();
    if (!st->self) {
        if (r->next >= npairs) return out;
        const JoinPair& p = r->pairs[r->next++];
        idx[0] = p.a;
        idx[1] = p.b;
    } else {
        // Emission e: pair e / 2 (swapped when e is odd) for e < 2 * npairs, then row
        // e - 2 * npairs with itself.
        const size_t e = r->next;
        if (e >= 2 * npairs + r->tuples[0].size()) return out;
        r->next++;
        if (e < 2 * npairs) {
            const JoinPair& p = r->pairs[e / 2];
            idx[0] = e % 2 == 0 ? p.a : p.b;
            idx[1] = e % 2 == 0 ? p.b : p.a;
        } else {
            idx[0] = idx[1] = static_cast<uint32_t>(e - 2 * npairs);
        }
    }
    int at = 0;
    for (int k = 0; k < 2; ++k) {
        TupleTableSlot* side = st->side_slot[k];
        ExecStoreMinimalTuple(r->tuples[st->self ? 0 : k][idx[k]], side, false);
        slot_getallattrs(side);
        memcpy(out->tts_values + at, side->tts_values, sizeof(Datum) * st->natts[k]);
        memcpy(out->tts_isnull + at, side->tts_isnull, sizeof(bool) * st->natts[k]);
        at += st->natts[k];
    }
    return ExecStoreVirtualTuple(out);
}

// Every pair comes from rows the children returned under the query's snapshot: nothing to
// recheck (queries with row marks, the only ones with EvalPlanQual rechecks, get no such scan).
bool recheck_pair(ScanState*, TupleTableSlot*) {
    return true;
}

TupleTableSlot* exec_scan(CustomScanState* node) {
    return ExecScan(&node->ss, next_pair, recheck_pair);
}

void end_scan(CustomScanState* node) {
    JoinScanState* st = (JoinScanState*)node;
    delete_rows(st);
    ListCell* lc;
    foreach (lc, node->custom_ps) ExecEndNode((PlanState*)lfirst(lc));
}

// A rescan with the same parameters and threshold gives the same pairs again; otherwise (or
// before the pairs were all found) the children are read and matched again.
void rescan(CustomScanState* node) {
    JoinScanState* st = (JoinScanState*)node;
    Bitmapset* changed = node->ss.ps.chgParam;
    if (changed == nullptr && st->matched && st->tau == similarity_threshold) {
        st->rows->next = 0;
        return;
    }
    delete_rows(st);
    MemoryContextReset(st->rows_cxt);
    new_rows(st);
    st->matched = false;
    st->read[0] = st->read[1] = 0;
    ListCell* lc;
    foreach (lc, node->custom_ps) {
        PlanState* child = (PlanState*)lfirst(lc);
        if (changed != nullptr) UpdateChangedParamSet(child, changed);
        if (child->chgParam == nullptr) ExecReScan(child);
    }
}

void explain_scan(CustomScanState* node, List*, ExplainState* es) {
    JoinScanState* st = (JoinScanState*)node;
    char buf[64];
    snprintf(buf, sizeof buf, "%g", st->tau);
    ExplainPropertyText("Threshold", buf, es);
    snprintf(buf, sizeof buf, "%s, %s", method_name(st->method), st->self ? "self-join" : "R-S");
    ExplainPropertyText("Method", buf, es);
    ExplainPropertyInteger("Threads", nullptr, st->threads, es);
    const long kb = join_memory_limit_kb;
    if (kb % (1024 * 1024) == 0) snprintf(buf, sizeof buf, "%ldGB", kb / (1024 * 1024));
    else if (kb % 1024 == 0) snprintf(buf, sizeof buf, "%ldMB", kb / 1024);
    else snprintf(buf, sizeof buf, "%ldkB", kb);
    ExplainPropertyText("Memory Limit", buf, es);
    if (es->analyze && st->matched && st->rows != nullptr) {
        ExplainPropertyInteger("Rows Kept", nullptr, (int64)(st->rows->docs[0].size() + st->rows->docs[1].size()), es);
        ExplainPropertyInteger("Pairs", nullptr, (int64)st->rows->pairs.size(), es);
        ExplainPropertyInteger("Candidates", nullptr, (int64)st->rows->candidates.load(), es);
        if (es->timing) {
            ExplainPropertyFloat("Read Time", "ms", st->read_s * 1000.0, 3, es);
            ExplainPropertyFloat("Match Time", "ms", st->match_s * 1000.0, 3, es);
        }
    }
}

}  // namespace

CustomScanMethods scan_methods = {"SpotsigsJoin", create_state};

List* make_private(bool self, int outer_sig, int inner_sig) {
    return list_make3(makeInteger(self ? 1 : 0), makeInteger(outer_sig), makeInteger(inner_sig));
}

namespace {

// Fills exec_methods before any scan state is made.
struct ExecMethodsInit {
    ExecMethodsInit() {
        exec_methods.CustomName = "SpotsigsJoin";
        exec_methods.BeginCustomScan = begin_scan;
        exec_methods.ExecCustomScan = exec_scan;
        exec_methods.EndCustomScan = end_scan;
        exec_methods.ReScanCustomScan = rescan;
        exec_methods.ExplainCustomScan = explain_scan;
    }
} exec_methods_init;

}  // namespace

}  // namespace spotsigs::pg::planner
