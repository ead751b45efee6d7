// Execution of the SpotsigsJoin custom scan: both children are read in full on the backend's
// thread (each row kept as a MinimalTuple, its signature handed to a ReadPipeline, whose filing
// thread stores it in the core's Collection and, for a self-join by the default method, lists
// its prefix while the reading goes on, as the join functions read; all of it charged to
// spotsigs.join_memory_limit), the core's R-S matcher runs on a signal-blocked thread
// while the backend's thread polls for cancels (run_on_thread), and each pair found becomes one
// scan tuple, the outer row's columns followed by the inner row's, which ExecScan filters with
// the other join clauses and projects.
//
// A self join (one child whose rows are both sides, join_path.cpp) keeps its rows once and runs
// the core's self-join, which finds each unordered pair of distinct rows once: every such pair
// is emitted in both orders, and every kept row with itself (similarity 1, at or above any
// threshold), which are the pairs the R-S join of the rows with themselves finds.
//
// A signature stored out of line is not detoasted with its row: its toast pointer is noted, and
// once the child is done the noted values are read by one scan of the toast relation
// (toast_scan.hpp), as the join functions read them. The pipeline then receives the rows out of
// order, so each is filed under its kept tuple's index as its id, and a pair's documents find
// their tuples through their ids.
//
// Semi and anti joins (EXISTS / NOT EXISTS of a % over the other side) keep only the outer side
// in their output: every pair the matcher finds is checked against the other join clauses
// (custom_exprs) on the pair's scan tuple, which marks its outer row as matched, and then each
// outer row is emitted once when matched (semi) or not (anti), with the inner columns NULL. An
// anti join also emits the outer rows without a signature or with an empty one, which match
// nothing.
//
// Rows with a NULL signature are not kept (a % b is NULL, so never true, for them), nor rows
// with an empty one (similarity 0, below any threshold, which is in (0, 1]).
#include "pg/planner/join_planner.hpp"

extern "C" {
#include "access/htup_details.h"
#include "commands/explain.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"  // 18 moved ExplainProperty* out of explain.h
#endif
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
}

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/join/read_pipeline.hpp"
#include "core/memory/huge_alloc.hpp"
#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/join/join_gucs.hpp"
#include "pg/join/join_read.hpp"
#include "pg/join/join_run.hpp"
#include "pg/join/toast_scan.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg::planner {

namespace {

// The C++ state of one execution: the kept rows of both sides and the pairs found. Lives on the
// heap; deleted by EndCustomScan, a rescan that reads again, or (after an error) the reset
// callback of the query's memory context.
struct JoinRows {
    std::unique_ptr<ReadPipeline> pipe[2];
    // Declared after the pipelines, so destroyed before them.
    std::optional<ExitStop> stop[2];
    std::vector<MinimalTuple> tuples[2];    // palloc'd in JoinScanState::rows_cxt; index = id in the Collection
    std::vector<MinimalTuple> unmatchable;  // an anti join's outer rows without a signature to match
    std::vector<bool> hit;                  // semi and anti joins: outer rows with a pair passing the clauses
    DeferredToast deferred[2];
    JoinPairs pairs;
    size_t next = 0;
    std::atomic<uint64_t> candidates{0};
};

struct JoinScanState {
    CustomScanState css;   // first: the executor sees a CustomScanState
    bool self;             // one child, whose rows are both sides
    JoinType jointype;     // JOIN_INNER, JOIN_SEMI or JOIN_ANTI
    double fixed_tau;      // the clause's own threshold; 0: spotsigs.similarity_threshold
    ExprState* join_qual;  // semi and anti joins: the other join clauses, on a pair's scan tuple
    int sig_attno[2];      // the signature's position in each child's output
    bool sig_needed[2];    // whether the target list or qual read a side's signature column
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
    st->jointype = static_cast<JoinType>(intVal(lfourth(cscan->custom_private)));
    st->fixed_tau = DatumGetFloat8(((Const*)list_nth(cscan->custom_private, 4))->constvalue);
    return (Node*)st;
}

// Whether the scan tuple's column attno is read by the plan's target list or qual.
bool scan_column_read(CustomScan* cs, int attno) {
    Plan* plan = &cs->scan.plan;
    List* vars = pull_var_clause((Node*)list_concat(list_concat_copy(plan->targetlist, plan->qual), cs->custom_exprs),
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
    st->tau = st->fixed_tau > 0 ? st->fixed_tau : similarity_threshold;
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
    st->sig_needed[0] = scan_column_read(cs, st->sig_attno[0]);
    st->sig_needed[1] = scan_column_read(cs, st->natts[0] + st->sig_attno[1]);
    // One kept row serves both sides.
    if (st->self) st->sig_needed[0] = st->sig_needed[0] || st->sig_needed[1];
    read_settings(st);
    st->join_qual = ExecInitQual(cs->custom_exprs, &node->ss.ps);
    st->rows_cxt = AllocSetContextCreate(estate->es_query_cxt, "SpotsigsJoin rows", ALLOCSET_DEFAULT_SIZES);
    st->cleanup.func = delete_rows;
    st->cleanup.arg = st;
    MemoryContextRegisterResetCallback(estate->es_query_cxt, &st->cleanup);
    if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0) new_rows(st);
}

// How long add() waits for a free batch before the backend's thread serves its interrupts.
constexpr auto kBatchWait = std::chrono::milliseconds(10);

// The bytes of the kept tuples (PostgreSQL call: backend's thread only).
size_t tuple_bytes(const JoinScanState* st) {
    return MemoryContextMemAllocated(st->rows_cxt, true);
}

// The bytes the pipelines and the vectors of kept tuples hold (any thread).
size_t pipe_bytes(const JoinRows* r) {
    size_t n = (r->tuples[0].capacity() + r->tuples[1].capacity()) * sizeof(MinimalTuple) +
               r->deferred[0].memory_bytes() + r->deferred[1].memory_bytes();
    for (int k = 0; k < 2; ++k)
        if (r->pipe[k]) n += r->pipe[k]->memory_bytes();
    return n;
}

// Starts the pipeline of side k: with a filing thread when the threads allow one more (the
// outer side from 2 threads on, the inner, read while the outer may still be filing, from 3);
// listing prefixes for a self-join by the default method; presized for the child's estimated
// rows when they are few enough.
void open_side(JoinScanState* st, int k) {
    const double est = ((Plan*)list_nth(((CustomScan*)st->css.ss.ps.plan)->custom_plans, k))->plan_rows;
    const size_t limit = join_memory_limit_bytes();
    pg_entry([&] {
        JoinRows* r = st->rows;
        const double list_tau = st->self && st->method == JoinMethod::Partitioned ? st->tau : 0.0;
        const bool presize = est > 0 && est * 64 < static_cast<double>(limit) / 2;
        r->pipe[k] =
            std::make_unique<ReadPipeline>(list_tau, presize ? static_cast<size_t>(est) : 0, 0, st->threads > k + 1);
        r->stop[k].emplace(*r->pipe[k]);
        if (presize) r->tuples[k].reserve(static_cast<size_t>(est));
        return Datum(0);
    });
}

// Keeps tuple t of side k (the C++ half of read_side); returns its index.
int64_t keep_tuple(JoinScanState* st, int k, MinimalTuple t, size_t limit) {
    JoinRows* r = st->rows;
    const size_t tuples = tuple_bytes(st);
    pg_entry([&] {
        r->tuples[k].push_back(t);
        if (tuples + pipe_bytes(r) > limit)
            throw_memory_limit("reading the rows of a SpotsigsJoin", "its sides' rows and signatures need more than " +
                                                                         std::to_string(limit >> 20) +
                                                                         " MB (the SQL join does not run in passes)");
        return Datum(0);
    });
    return static_cast<int64_t>(r->tuples[k].size() - 1);
}

// Where hand_over puts a value: the scan and the side.
struct HandOverTarget {
    JoinScanState* st;
    int k;
};

// Hands the value of kept tuple id (len payload bytes) to side k's pipeline, waiting for a free
// batch while serving interrupts. PostgreSQL code (an AddValueFn for DeferredToast).
void hand_over(void* ctx, int64 id, const char* data, size_t len) {
    HandOverTarget* to = static_cast<HandOverTarget*>(ctx);
    ReadPipeline* pipe = to->st->rows->pipe[to->k].get();
    for (;;) {
        bool taken = false;
        pg_entry([&] {
            taken = pipe->add(id, reinterpret_cast<const unsigned char*>(data), len, kBatchWait);
            return Datum(0);
        });
        if (taken) break;
        CHECK_FOR_INTERRUPTS();  // the filing thread is behind: serve interrupts while waiting
    }
}

// Whether v holds no signature (such a row pairs with nothing).
bool empty_signature(const struct varlena* v) {
    bool empty = false;
    pg_entry([&] {
        empty = view_of(v).length == 0;
        return Datum(0);
    });
    return empty;
}

// Keeps the row in slot among an anti join's outer rows that match nothing.
void keep_unmatchable(JoinScanState* st, TupleTableSlot* slot) {
    MemoryContext old = MemoryContextSwitchTo(st->rows_cxt);
    MinimalTuple t = ExecCopySlotMinimalTuple(slot);
    MemoryContextSwitchTo(old);
    pg_entry([&] {
        st->rows->unmatchable.push_back(t);
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
    open_side(st, k);
    HandOverTarget to = {st, k};
    for (;;) {
        TupleTableSlot* slot = ExecProcNode(child);
        if (TupIsNull(slot)) break;
        st->read[k]++;
        bool isnull;
        Datum d = slot_getattr(slot, st->sig_attno[k], &isnull);
        if (isnull) {
            if (k == 0 && st->jointype == JOIN_ANTI) keep_unmatchable(st, slot);
            continue;
        }
        const bool external = VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(d));
        struct varlena* v = nullptr;
        MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
        if (!external) {
            v = PG_DETOAST_DATUM_PACKED(d);
            if (empty_signature(v)) {
                MemoryContextSwitchTo(old);
                if (k == 0 && st->jointype == JOIN_ANTI) keep_unmatchable(st, slot);
                ResetExprContext(econtext);
                continue;
            }
        }
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
            t = SPOTSIGS_FORM_MINIMAL_TUPLE(slot->tts_tupleDescriptor, values, nulls);
        }
        MemoryContextSwitchTo(old);
        const int64_t id = keep_tuple(st, k, t, limit);
        bool noted = false;
        if (external) {
            // An out-of-line value holds more than 2 kB: it is not empty.
            pg_entry([&] {
                noted = st->rows->deferred[k].defer(id, d);
                return Datum(0);
            });
            if (!noted) {
                old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
                v = PG_DETOAST_DATUM_PACKED(d);
                MemoryContextSwitchTo(old);
            }
        }
        if (!noted) hand_over(&to, id, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
        ResetExprContext(econtext);
    }
    pfree(values);
    pfree(nulls);
    pg_entry([&] {
        st->rows->deferred[k].fetch(hand_over, &to);
        st->rows->pipe[k]->close();
        return Datum(0);
    });
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Matches the kept rows of both sides into st->rows->pairs (outer rows are R, inner rows S).
void match(JoinScanState* st) {
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
        const size_t tuples = tuple_bytes(st);
        try {
            const bool self = st->self;
            r->pairs = run_on_thread(
                [r, self, tuples, limit](const JoinOptions& o) {
                    if (!wait_filed(*r->pipe[0], o.cancel)) return JoinPairs();
                    if (!self && !wait_filed(*r->pipe[1], o.cancel)) return JoinPairs();
                    // The matcher's structures get what the rows leave of the limit.
                    const size_t used = tuples + pipe_bytes(r);
                    if (used >= limit) throw JoinMemoryError("the rows alone exceed the memory limit", "", used + 1);
                    JoinOptions budget = o;
                    budget.memory_limit = limit - used;
                    return self ? self_join(*r->pipe[0], budget)
                                : rs_join(r->pipe[0]->docs(), r->pipe[1]->docs(), budget);
                },
                opt, progress, r->tuples[0].size());
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
// The number of pairs emission goes through (a self join's in both orders and each row with
// itself).
size_t emissions(const JoinScanState* st) {
    const JoinRows* r = st->rows;
    return st->self ? 2 * r->pairs.size() + r->tuples[0].size() : r->pairs.size();
}

// The outer and inner tuple indexes of emission e < emissions(st).
void emission(const JoinScanState* st, size_t e, uint32_t idx[2]) {
    const JoinRows* r = st->rows;
    const size_t npairs = r->pairs.size();
    if (!st->self) {
        const JoinPair& p = r->pairs[e];
        idx[0] = static_cast<uint32_t>(r->pipe[0]->docs().id(p.a));
        idx[1] = static_cast<uint32_t>(r->pipe[1]->docs().id(p.b));
    } else if (e < 2 * npairs) {
        // Pair e / 2, swapped when e is odd; then each row with itself.
        const JoinPair& p = r->pairs[e / 2];
        const Collection& docs = r->pipe[0]->docs();
        const uint32_t a = static_cast<uint32_t>(docs.id(p.a)), b = static_cast<uint32_t>(docs.id(p.b));
        idx[0] = e % 2 == 0 ? a : b;
        idx[1] = e % 2 == 0 ? b : a;
    } else {
        idx[0] = idx[1] = static_cast<uint32_t>(e - 2 * npairs);
    }
}

// Fills the scan slot out with the outer tuple outer and the inner tuple inner (nullptr: the
// inner columns NULL).
TupleTableSlot* fill_scan_tuple(JoinScanState* st, TupleTableSlot* out, MinimalTuple outer, MinimalTuple inner) {
    ExecClearTuple(out);
    MinimalTuple tuples[2] = {outer, inner};
    int at = 0;
    for (int k = 0; k < 2; ++k) {
        if (tuples[k] == nullptr) {
            for (int i = 0; i < st->natts[k]; ++i) {
                out->tts_values[at + i] = Datum(0);
                out->tts_isnull[at + i] = true;
            }
        } else {
            TupleTableSlot* side = st->side_slot[k];
            ExecStoreMinimalTuple(tuples[k], side, false);
            slot_getallattrs(side);
            memcpy(out->tts_values + at, side->tts_values, sizeof(Datum) * st->natts[k]);
            memcpy(out->tts_isnull + at, side->tts_isnull, sizeof(bool) * st->natts[k]);
        }
        at += st->natts[k];
    }
    return ExecStoreVirtualTuple(out);
}

// Semi and anti joins: marks the outer rows with a pair that passes the other join clauses.
void mark_hits(JoinScanState* st) {
    JoinRows* r = st->rows;
    pg_entry([&] {
        r->hit.assign(r->tuples[0].size(), false);
        return Datum(0);
    });
    TupleTableSlot* out = st->css.ss.ss_ScanTupleSlot;
    ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
    const size_t n = emissions(st);
    for (size_t e = 0; e < n; ++e) {
        uint32_t idx[2];
        emission(st, e, idx);
        if (r->hit[idx[0]]) continue;
        if ((e & 1023) == 0) CHECK_FOR_INTERRUPTS();
        fill_scan_tuple(st, out, r->tuples[0][idx[0]], r->tuples[st->self ? 0 : 1][idx[1]]);
        econtext->ecxt_scantuple = out;
        if (ExecQual(st->join_qual, econtext)) r->hit[idx[0]] = true;
        ResetExprContext(econtext);
    }
    ExecClearTuple(out);
}

TupleTableSlot* next_pair(ScanState* ss) {
    JoinScanState* st = (JoinScanState*)ss;
    if (!st->matched) {
        read_settings(st);
        // Whether this join's large blocks may come from the reserved huge pages (huge_alloc.hpp).
        use_reserved_huge_pages(join_huge_pages);
        auto t0 = std::chrono::steady_clock::now();
        read_side(st, 0);
        if (!st->self) read_side(st, 1);
        st->read_s = seconds_since(t0);
        match(st);
        if (st->jointype != JOIN_INNER) mark_hits(st);
        st->matched = true;
    }
    TupleTableSlot* out = ss->ss_ScanTupleSlot;
    JoinRows* r = st->rows;
    if (st->jointype != JOIN_INNER) {
        // Outer row e once, when hit (semi) or not (anti); then an anti join's unmatchable rows.
        const bool want = st->jointype == JOIN_SEMI;
        const size_t n = r->tuples[0].size();
        while (r->next < n && r->hit[r->next] != want) r->next++;
        if (r->next < n) return fill_scan_tuple(st, out, r->tuples[0][r->next++], nullptr);
        if (st->jointype == JOIN_ANTI && r->next - n < r->unmatchable.size())
            return fill_scan_tuple(st, out, r->unmatchable[r->next++ - n], nullptr);
        return ExecClearTuple(out);
    }
    if (r->next >= emissions(st)) return ExecClearTuple(out);
    uint32_t idx[2];
    emission(st, r->next++, idx);
    return fill_scan_tuple(st, out, r->tuples[0][idx[0]], r->tuples[st->self ? 0 : 1][idx[1]]);
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
    if (changed == nullptr && st->matched && (st->fixed_tau > 0 || st->tau == similarity_threshold)) {
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

void explain_scan(CustomScanState* node, List* ancestors, ExplainState* es) {
    JoinScanState* st = (JoinScanState*)node;
    CustomScan* cs = (CustomScan*)node->ss.ps.plan;
    if (cs->custom_exprs != NIL) {
        // A semi or anti join's other clauses, checked on each pair.
        List* context = set_deparse_context_plan(es->deparse_cxt, &cs->scan.plan, ancestors);
        char* text = deparse_expression((Node*)make_ands_explicit(cs->custom_exprs), context, true, false);
        ExplainPropertyText("Join Filter", text, es);
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%g", st->tau);
    ExplainPropertyText("Threshold", buf, es);
    snprintf(buf, sizeof buf, "%s, %s%s", method_name(st->method), st->self ? "self-join" : "R-S",
             st->jointype == JOIN_SEMI   ? ", semi join"
             : st->jointype == JOIN_ANTI ? ", anti join"
                                         : "");
    ExplainPropertyText("Method", buf, es);
    ExplainPropertyInteger("Threads", nullptr, st->threads, es);
    const long kb = join_memory_limit_kb;
    if (kb % (1024 * 1024) == 0) snprintf(buf, sizeof buf, "%ldGB", kb / (1024 * 1024));
    else if (kb % 1024 == 0) snprintf(buf, sizeof buf, "%ldMB", kb / 1024);
    else snprintf(buf, sizeof buf, "%ldkB", kb);
    ExplainPropertyText("Memory Limit", buf, es);
    if (es->analyze && st->matched && st->rows != nullptr) {
        ExplainPropertyInteger("Rows Kept", nullptr, (int64)(st->rows->tuples[0].size() + st->rows->tuples[1].size()),
                               es);
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

List* make_private(bool self, int outer_sig, int inner_sig, JoinType jointype, Node* tau) {
    return list_make5(makeInteger(self ? 1 : 0), makeInteger(outer_sig), makeInteger(inner_sig),
                      makeInteger(static_cast<int>(jointype)), copyObjectImpl(tau));
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
