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
// The content measure (`a.sig % q` with q a spotsigs_content_query made from the other side's
// column b.sig, join_path.cpp): the template and threshold of q are taken from evaluating it on
// the first rows of its side read, and must be the same for every row, which is checked on the
// first two (with q's content equal to b.sig without the template, as spotsig_content_query
// makes it; otherwise ERROR 0A000, and spotsigs.enable_join = off evaluates it per pair). The
// matcher then joins the rows' copies without the template's signatures (content.hpp's
// without_signatures, as spotsigs_join's content path does), which is the content measure: the
// plain similarity of spotsig_remove(a, t) and spotsig_remove(b, t). A row whose content is
// empty pairs with nothing, itself included. q NULL, or with a NULL field, matches nothing. In
// passes, the lengths the passes are planned on are those of the rows' contents.
//
// Rows with a NULL signature are not kept (a % b is NULL, so never true, for them), nor rows
// with an empty one (similarity 0, below any threshold, which is in (0, 1]).
//
// Passes. When the kept rows, or the matcher's structures for them, do not fit
// spotsigs.join_memory_limit, what was read is dropped and the children are read once more into
// tuplestores (one a child; work_mem in memory, the rest in temporary files), each row with the
// length of its signature (from the value's header alone) noted in order. The join then runs in
// the passes over length ranges of join_passes.hpp, planned and split as the join functions'
// passes are (run_planned_passes): a pass reads from the tuplestores only the rows of its
// lengths, matches them as above and keeps only the pairs the pass reports (JoinPass::reports,
// each row with itself too: the pair of lengths (l, l)), so that every pair is kept by exactly
// one pass (the proof in join_passes.hpp holds for a set of rows whatever they are). Since the
// passes read the tuplestores, not the children, every pass sees the rows of the one read. An
// inner join's pairs go to a result tuplestore as scan tuples, emitted once the passes are
// done; a semi or anti join marks the outer rows by their position in the outer tuplestore, and
// then emits them from it in order.
#include "pg/planner/join_planner.hpp"

extern "C" {
#include "access/htup_details.h"
#include "commands/explain.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"  // 18 moved ExplainProperty* out of explain.h
#endif
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/tuplestore.h"
}

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/join/join_passes.hpp"
#include "core/join/pair_sink.hpp"
#include "core/join/read_pipeline.hpp"
#include "core/memory/huge_alloc.hpp"
#include "core/signature/packed.hpp"
#include "core/template/content.hpp"
#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/join/join_gucs.hpp"
#include "pg/join/join_read.hpp"
#include "pg/join/join_run.hpp"
#include "pg/join/toast_scan.hpp"
#include "pg/type/datum.hpp"
#include "pg/type/query.hpp"

namespace spotsigs::pg::planner {

namespace {

// The C++ state of one execution: the kept rows of both sides and the pairs found. Lives on the
// heap; deleted by EndCustomScan, a rescan that reads again, or (after an error) the reset
// callback of the query's memory context.
struct JoinRows {
    // The first read's budget (null in a pass): the limit, charged by both sides' pipelines, the
    // notes of their out-of-line values and the kept tuples before they allocate. Declared first,
    // so destroyed after everything that charges it.
    std::unique_ptr<ReadBudget> budget;
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
    // In a pass: the position in its side's tuplestore of each kept tuple.
    std::vector<uint32_t> spill_pos[2];
    // The content measure's self join: the kept rows whose content is empty (by tuple index).
    std::vector<bool> empty_content;
};

// The state of a join run in passes, beside the tuplestores (JoinScanState::spill): every row's
// signature length by its position in its side's tuplestore (0: no signature, or an empty one),
// the lengths tallied for planning, and a semi or anti join's outer rows found with a pair.
struct PassRows {
    std::vector<uint32_t> lens[2];
    LengthTally tally[2];
    std::vector<bool> hit;
    size_t bytes() const {
        return (lens[0].capacity() + lens[1].capacity()) * sizeof(uint32_t) + tally[0].memory_bytes() +
               tally[1].memory_bytes() + hit.capacity() / 8;
    }
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
    size_t rows_block;             // the largest block rows_cxt allocates (bytes)
    size_t first_read;             // the first read's accounted peak (its budget's), in passes
    TupleTableSlot* side_slot[2];  // each child's rows as kept
    JoinRows* rows;
    bool matched;
    uint64 read[2];  // rows read from each child
    // In passes: an upper bound of the bytes the rows with a signature of each side take when a
    // pass keeps them (the tuple's memory chunk and its entries in the kept rows' vectors).
    double spill_tuple_bytes[2];
    double read_s;
    double match_s;
    MemoryContextCallback cleanup;
    // Passes (see the head of this file).
    bool in_passes;
    MemoryContext spill_cxt;        // the tuplestores
    Tuplestorestate* spill[2];      // each child's rows (a self join: one)
    Tuplestorestate* result;        // an inner join's pairs as scan tuples
    TupleTableSlot* spill_slot[2];  // rows read back from spill
    TupleTableSlot* result_slot;    // scan tuples read back from result
    PassRows* pass_rows;
    uint64 emitted;  // semi and anti joins: the outer rows' position in spill[0]
    uint64 passes;
    uint64 pass_kept;  // rows kept and pairs found over all passes
    uint64 pass_pairs;
    uint64 pass_candidates;
    // The content measure (see the head of this file): the side whose rows its query expression
    // reads (-1: not the content measure), the expression, how many rows it was evaluated on,
    // whether it was NULL (matches nothing), and the template (ascending, in the query's
    // memory) and threshold it gave.
    int content_side;
    ExprState* content_expr;
    int content_samples;
    bool content_none;
    uint64* tmpl;
    uint32 ntmpl;
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

// Drops the state of passes (the tuplestores' memory goes with spill_cxt; their files with the
// query's resource owner after an error).
void delete_passes(JoinScanState* st) {
    delete st->pass_rows;
    st->pass_rows = nullptr;
    for (int k = 0; k < 2; ++k) {
        if (st->spill[k] != nullptr) tuplestore_end(st->spill[k]);
        st->spill[k] = nullptr;
    }
    if (st->result != nullptr) tuplestore_end(st->result);
    st->result = nullptr;
    st->in_passes = false;
    st->passes = st->pass_kept = st->pass_pairs = st->pass_candidates = 0;
    st->spill_tuple_bytes[0] = st->spill_tuple_bytes[1] = 0;
}

// The cleanup callback of the query's memory context (after an error: the tuplestores are gone
// with it).
void delete_all(void* arg) {
    JoinScanState* st = (JoinScanState*)arg;
    delete_rows(st);
    delete st->pass_rows;
    st->pass_rows = nullptr;
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
    st->content_side = intVal(list_nth(cscan->custom_private, 5));
    return (Node*)st;
}

// Whether the scan tuple's column attno is read by the plan's target list or qual, or by the
// other join clauses of a semi or anti join (quals).
bool scan_column_read(CustomScan* cs, List* quals, int attno) {
    Plan* plan = &cs->scan.plan;
    List* vars = pull_var_clause((Node*)list_concat(list_concat_copy(plan->targetlist, plan->qual), quals),
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
    st->content_samples = 0;
    st->content_none = false;
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
        st->spill_slot[k] = ExecInitExtraTupleSlot(estate, desc, &TTSOpsMinimalTuple);
    }
    st->result_slot =
        ExecInitExtraTupleSlot(estate, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor, &TTSOpsMinimalTuple);
    // The content measure's query expression, last of custom_exprs, is evaluated while the rows
    // are read: it needs no kept signature.
    List* quals = cs->custom_exprs;
    st->content_expr = nullptr;
    if (st->content_side >= 0) {
        st->content_expr = ExecInitExpr((Expr*)llast(quals), &node->ss.ps);
        quals = list_truncate(list_copy(quals), list_length(quals) - 1);
    }
    st->sig_needed[0] = scan_column_read(cs, quals, st->sig_attno[0]);
    st->sig_needed[1] = scan_column_read(cs, quals, st->natts[0] + st->sig_attno[1]);
    // One kept row serves both sides.
    if (st->self) st->sig_needed[0] = st->sig_needed[0] || st->sig_needed[1];
    read_settings(st);
    st->join_qual = ExecInitQual(quals, &node->ss.ps);
    // The kept tuples' blocks take at most a 64th of the limit (a first read charges the block a
    // tuple may open before it copies the tuple), and PostgreSQL's usual largest block at most.
    st->rows_block = MAXALIGN(
        std::clamp<size_t>(join_memory_limit_bytes() / 64, ALLOCSET_DEFAULT_INITSIZE, ALLOCSET_DEFAULT_MAXSIZE));
    st->rows_cxt = AllocSetContextCreate(estate->es_query_cxt, "SpotsigsJoin rows", ALLOCSET_DEFAULT_MINSIZE,
                                         ALLOCSET_DEFAULT_INITSIZE, st->rows_block);
    st->spill_cxt = AllocSetContextCreate(estate->es_query_cxt, "SpotsigsJoin passes", ALLOCSET_DEFAULT_SIZES);
    st->cleanup.func = delete_all;
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

// The bytes the matcher finds held beside its structures once the rows are filed: the kept
// rows' vectors and the documents (the pipelines' batch buffers are done with; the join
// functions charge the same).
size_t filed_bytes(const JoinRows* r) {
    size_t n = (r->tuples[0].capacity() + r->tuples[1].capacity()) * sizeof(MinimalTuple);
    for (int k = 0; k < 2; ++k)
        if (r->pipe[k]) n += r->pipe[k]->docs().memory_bytes();
    return n;
}

// Starts the pipeline of side k: with a filing thread when the threads allow one more (the
// outer side from 2 threads on, the inner, read while the outer may still be filing, from 3);
// listing prefixes for a self-join by the default method; presized for the child's estimated
// rows when they are few enough. It and the notes of the side's out-of-line values hold within
// limit bytes as a function's read does (limit_read): charged to the first read's budget, or in
// a pass within the limit. False when the budget has no room even for its buffers.
bool open_side(JoinScanState* st, int k, size_t limit) {
    // (A pass reads a part of the rows: not presized.)
    const double est =
        st->in_passes ? 0 : ((Plan*)list_nth(((CustomScan*)st->css.ss.ps.plan)->custom_plans, k))->plan_rows;
    bool fits = true;
    pg_entry([&] {
        JoinRows* r = st->rows;
        // (The content measure's matcher joins copies of the rows: nothing listed for it.)
        const double list_tau =
            st->self && st->method == JoinMethod::Partitioned && st->content_side < 0 ? st->tau : 0.0;
        const bool presize = est > 0 && est * 64 < static_cast<double>(limit) / 2;
        r->pipe[k] =
            std::make_unique<ReadPipeline>(list_tau, presize ? static_cast<size_t>(est) : 0, 0, st->threads > k + 1);
        r->stop[k].emplace(*r->pipe[k]);
        ReadBudget* budget = r->budget.get();
        fits = limit_read(*r->pipe[k], r->deferred[k], limit, budget, !st->in_passes);
        const size_t tuples = presize ? static_cast<size_t>(est) : 0;
        if (fits && tuples > 0 && (budget == nullptr || budget->charge(tuples * sizeof(MinimalTuple))))
            r->tuples[k].reserve(tuples);
        return Datum(0);
    });
    return fits;
}

// Copies the row in slot, of side k, into rows_cxt as a kept tuple: whole, or without its
// signature when nothing reads it (values and nulls: room for the side's columns). Under the
// first read's budget, what the copy may take in rows_cxt (its chunk, at most twice its size with
// the chunk's header, and a new block of the context) is charged before it is made, and what it
// did not take goes back; nullptr, nothing allocated, when the budget refuses it.
MinimalTuple copy_kept_tuple(JoinScanState* st, int k, TupleTableSlot* slot, Datum* values, bool* nulls, bool whole) {
    const int natts = st->natts[k];
    TupleDesc desc = slot->tts_tupleDescriptor;
    whole = whole || st->sig_needed[k];
    if (!whole) {
        slot_getallattrs(slot);
        memcpy(values, slot->tts_values, sizeof(Datum) * natts);
        memcpy(nulls, slot->tts_isnull, sizeof(bool) * natts);
        nulls[st->sig_attno[k] - 1] = true;
    }
    ReadBudget* budget = st->rows->budget.get();
    size_t bound = 0, before = 0;
    if (budget != nullptr) {
        if (whole) slot_getallattrs(slot);
        const Size data =
            heap_compute_data_size(desc, whole ? slot->tts_values : values, whole ? slot->tts_isnull : nulls);
        const Size size = MAXALIGN(SizeofMinimalTupleHeader + BITMAPLEN(natts)) + data;
        bound = 2 * size + st->rows_block + 64;
        if (!budget->charge(bound)) return nullptr;  // (noexcept, as are release and force)
        before = tuple_bytes(st);
    }
    MemoryContext old = MemoryContextSwitchTo(st->rows_cxt);
    MinimalTuple t = whole ? ExecCopySlotMinimalTuple(slot) : SPOTSIGS_FORM_MINIMAL_TUPLE(desc, values, nulls);
    MemoryContextSwitchTo(old);
    if (budget != nullptr) {
        const size_t took = tuple_bytes(st) - before;
        if (took <= bound) budget->release(bound - took);
        else budget->force(took - bound);
    }
    return t;
}

// Keeps tuple t of side k (the C++ half of read_side), found at position pos of its side's
// tuplestore in a pass; returns its index, or -1 when the kept rows exceed limit bytes (under
// the first read's budget: when it refuses their vector's growth, or refused a document of the
// side's pipeline).
int64_t keep_tuple(JoinScanState* st, int k, MinimalTuple t, size_t limit, uint32_t pos) {
    JoinRows* r = st->rows;
    const size_t tuples = r->budget ? 0 : tuple_bytes(st);
    bool over = false;
    pg_entry([&] {
        if (r->budget) {
            over = r->pipe[k]->overflowed() || !reserve_charged(*r->budget, r->tuples[k]);
            if (over) return Datum(0);
        }
        r->tuples[k].push_back(t);
        if (st->in_passes) r->spill_pos[k].push_back(pos);
        if (!r->budget) over = tuples + pipe_bytes(r) > limit;
        return Datum(0);
    });
    return over ? -1 : static_cast<int64_t>(r->tuples[k].size() - 1);
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

// Keeps the row in slot among an anti join's outer rows that match nothing; false when the first
// read's budget refuses it (values and nulls as for copy_kept_tuple).
bool keep_unmatchable(JoinScanState* st, TupleTableSlot* slot, Datum* values, bool* nulls) {
    MinimalTuple t = copy_kept_tuple(st, 0, slot, values, nulls, true);
    if (t == nullptr) return false;
    bool kept = true;
    pg_entry([&] {
        JoinRows* r = st->rows;
        kept = !r->budget || reserve_charged(*r->budget, r->unmatchable);
        if (kept) r->unmatchable.push_back(t);
        return Datum(0);
    });
    return kept;
}

// Whether the rows of side k are those the content measure's query expression reads.
bool content_side(const JoinScanState* st, int k) {
    return st->content_side >= 0 && (st->self || st->content_side == k);
}

// Raises the error of a content query whose template or threshold is not the same for every row.
[[noreturn]] void content_query_varies(const char* what) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("the content query of a SpotsigsJoin %s", what),
                    errdetail("The join matches every row with the template and threshold of one evaluation of the "
                              "query expression, whose content must be the row's signature without that template."),
                    errhint("Use spotsig_content_query(sig, rel, column), or SET spotsigs.enable_join = off.")));
    pg_unreachable();
}

// Evaluates the content measure's query expression on the row in slot (side k, its signature
// sig), the first rows read: the first evaluation gives the template and threshold, the next
// must give the same, and each's content must be sig without the template.
void sample_content_query(JoinScanState* st, int k, TupleTableSlot* slot, Datum sig) {
    TupleTableSlot* out = st->css.ss.ss_ScanTupleSlot;
    ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
    const int total = st->natts[0] + st->natts[1];
    ExecClearTuple(out);
    for (int i = 0; i < total; ++i) {
        out->tts_values[i] = Datum(0);
        out->tts_isnull[i] = true;
    }
    slot_getallattrs(slot);
    // The expression reads its column at the content side's place in the scan tuple.
    const int at = st->content_side == 1 ? st->natts[0] : 0;
    memcpy(out->tts_values + at, slot->tts_values, sizeof(Datum) * st->natts[k]);
    memcpy(out->tts_isnull + at, slot->tts_isnull, sizeof(bool) * st->natts[k]);
    ExecStoreVirtualTuple(out);
    econtext->ecxt_scantuple = out;
    MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
    bool isnull;
    Datum q = ExecEvalExpr(st->content_expr, econtext, &isnull);
    struct varlena* content = nullptr;
    TemplateRef tmref;
    double tau = 0;
    const bool ok = !isnull && read_content_query(q, &content, &tau, &tmref);
    struct varlena* row = fetch_spotsig(sig);
    MemoryContextSwitchTo(old);
    const bool first = st->content_samples++ == 0;
    if (first) st->content_none = !ok;
    else if (ok == st->content_none) content_query_varies("is NULL for some rows and not for others");
    if (ok) {
        bool same = true, is_content = true;
        MemoryContext qcxt = MemoryContextGetParent(st->rows_cxt);
        pg_entry([&] {
            MultisetView t;
            t.hashes = tmref->hashes.data();
            t.size = static_cast<uint32_t>(tmref->hashes.size());
            const MultisetView c = view_of(content), r = view_of(row);
            if (first) {
                st->tau = tau;
                st->ntmpl = t.size;
                pg_guard(
                    [&] { st->tmpl = (uint64*)MemoryContextAlloc(qcxt, sizeof(uint64) * (t.size > 0 ? t.size : 1)); });
                std::copy(t.hashes, t.hashes + t.size, st->tmpl);
            } else {
                same = tau == st->tau && t.size == st->ntmpl && std::equal(t.hashes, t.hashes + t.size, st->tmpl);
            }
            const Multiset want = without_signatures(r, std::vector<uint64_t>(t.hashes, t.hashes + t.size));
            is_content = want.hashes.size() == c.size && want.length == c.length &&
                         std::equal(want.hashes.begin(), want.hashes.end(), c.hashes);
            for (uint32_t i = 0; is_content && i < c.size; ++i) is_content = want.freqs[i] == c.freqs[i];
            tmref.reset();
            return Datum(0);
        });
        if (!same) content_query_varies("gives another template or threshold for another row");
        if (!is_content) content_query_varies("is not made from the signature of the row it is evaluated on");
    }
    ExecClearTuple(out);
    ResetExprContext(econtext);
}

// Reads every row of child k, keeping those with a non-empty signature; in passes (pass given),
// reads side k's tuplestore instead, keeping the rows of the lengths the pass reads. False when
// the kept rows exceed limit bytes, or the first read's budget refuses what they need (what was
// read is then left as it is, for delete_rows).
bool read_side(JoinScanState* st, int k, size_t limit, const JoinPass* pass = nullptr) {
    PlanState* child = (PlanState*)list_nth(st->css.custom_ps, k);
    ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
    const int natts = st->natts[k];
    Datum* values = (Datum*)palloc(sizeof(Datum) * (natts > 0 ? natts : 1));
    bool* nulls = (bool*)palloc(sizeof(bool) * (natts > 0 ? natts : 1));
    if (!open_side(st, k, limit)) return false;
    HandOverTarget to = {st, k};
    uint32_t pos = 0;  // in passes: the next row's position in the tuplestore
    if (pass != nullptr) tuplestore_rescan(st->spill[k]);
    for (;;) {
        TupleTableSlot* slot;
        if (pass != nullptr) {
            slot = st->spill_slot[k];
            if (!tuplestore_gettupleslot(st->spill[k], true, false, slot)) break;
            const uint32_t len = st->pass_rows->lens[k][pos++];
            if ((pos & 1023) == 0) CHECK_FOR_INTERRUPTS();
            if (len == 0 || !pass->reads(len)) continue;
        } else {
            slot = ExecProcNode(child);
            if (TupIsNull(slot)) break;
            st->read[k]++;
        }
        bool isnull;
        Datum d = slot_getattr(slot, st->sig_attno[k], &isnull);
        if (isnull) {
            if (k == 0 && st->jointype == JOIN_ANTI && !keep_unmatchable(st, slot, values, nulls)) return false;
            continue;
        }
        if (st->content_samples < 2 && content_side(st, k)) {
            sample_content_query(st, k, slot, d);
            d = slot_getattr(slot, st->sig_attno[k], &isnull);
        }
        const bool external = VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(d));
        struct varlena* v = nullptr;
        MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
        if (!external) {
            v = PG_DETOAST_DATUM_PACKED(d);
            if (empty_signature(v)) {
                MemoryContextSwitchTo(old);
                const bool kept = k != 0 || st->jointype != JOIN_ANTI || keep_unmatchable(st, slot, values, nulls);
                ResetExprContext(econtext);
                if (!kept) return false;
                continue;
            }
        }
        MemoryContextSwitchTo(old);
        MinimalTuple t = copy_kept_tuple(st, k, slot, values, nulls, false);
        const int64_t id = t == nullptr ? -1 : keep_tuple(st, k, t, limit, pos - 1);
        if (id < 0) {
            ResetExprContext(econtext);
            return false;
        }
        bool noted = false;
        if (external) {
            // An out-of-line value holds more than 2 kB: it is not empty. Under the first read's
            // budget the notes grow by a charged step (refused: the read does not fit).
            bool room = true;
            pg_entry([&] {
                room = st->rows->deferred[k].reserve_charged();
                if (room) noted = st->rows->deferred[k].defer(id, d);
                return Datum(0);
            });
            if (!room) {
                ResetExprContext(econtext);
                return false;
            }
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
    bool fits = true;
    pg_entry([&] {
        JoinRows* r = st->rows;
        r->deferred[k].fetch(hand_over, &to);
        r->pipe[k]->close();
        // Whether the budget took the last rows too, before anything is matched.
        if (r->budget) fits = filed_within_budget(*r->pipe[k]);
        return Datum(0);
    });
    return fits;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Matches the kept rows of both sides into st->rows->pairs (outer rows are R, inner rows S)
// within limit bytes, rows included; a self join's pass, probe_below (join_passes.hpp). C++ code
// (inside pg_entry); throws JoinMemoryError when the matcher's structures do not fit. *used gets
// the bytes of the rows, *peak the matcher's accounted peak.
void match_pairs(JoinScanState* st, size_t limit, uint64_t probe_below, size_t* used, size_t* peak) {
    auto t0 = std::chrono::steady_clock::now();
    JoinRows* r = st->rows;
    Progress progress("SpotsigsJoin");
    JoinOptions opt;
    opt.tau = st->tau;
    opt.threads = st->threads;
    opt.method = st->method;
    opt.candidates = &r->candidates;
    opt.probe_below = probe_below;
    opt.accounted_peak = peak;
    const size_t tuples = tuple_bytes(st);
    const bool self = st->self;
    const bool content = st->content_side >= 0;
    if (content && (st->content_samples == 0 || st->content_none)) {
        // The content query's side has no row with a signature, or the query is NULL: no pair.
        r->pairs = JoinPairs();
        if (self) r->empty_content.assign(r->tuples[0].size(), true);
        return;
    }
    const std::vector<uint64_t> drop(st->tmpl, st->tmpl + (content ? st->ntmpl : 0));
    r->pairs = run_on_thread(
        [r, self, tuples, limit, used, content, &drop](const JoinOptions& o) {
            if (!wait_filed(*r->pipe[0], o.cancel)) return JoinPairs();
            if (!self && !wait_filed(*r->pipe[1], o.cancel)) return JoinPairs();
            // The matcher's structures get what the rows leave of the limit.
            *used = tuples + filed_bytes(r);
            if (*used >= limit) throw JoinMemoryError("the rows alone exceed the memory limit", "", *used + 1);
            JoinOptions budget = o;
            budget.memory_limit = limit - *used;
            if (!content)
                return self ? self_join(*r->pipe[0], budget) : rs_join(r->pipe[0]->docs(), r->pipe[1]->docs(), budget);
            // The content measure: the plain join of the rows without the template.
            const Collection rc = without_signatures(r->pipe[0]->docs(), drop, o.cancel);
            *used += rc.memory_bytes();
            if (self) {
                r->empty_content.assign(rc.size(), false);
                for (size_t d = 0; d < rc.size(); ++d)
                    if (rc.length(d) == 0) r->empty_content[static_cast<size_t>(rc.id(d))] = true;
            }
            std::optional<Collection> sc;
            if (!self) {
                sc.emplace(without_signatures(r->pipe[1]->docs(), drop, o.cancel));
                *used += sc->memory_bytes();
            }
            if (*used >= limit)
                throw JoinMemoryError("the rows and their contents exceed the memory limit", "", *used + 1);
            budget.memory_limit = limit - *used;
            return self ? self_join(rc, budget) : rs_join(rc, *sc, budget);
        },
        opt, progress, r->tuples[0].size());
    progress.finish();
    st->match_s += seconds_since(t0);
}

// Matches the rows read at once; false when the matcher's structures do not fit the limit (the
// join then runs in passes).
bool match(JoinScanState* st) {
    const size_t limit = join_memory_limit_bytes();
    bool fits = true;
    pg_entry([&] {
        size_t used = 0, peak = 0;
        try {
            match_pairs(st, limit, 0, &used, &peak);
        } catch (const JoinMemoryError&) {
            fits = false;
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::OutOfMemory)
                throw_memory_limit("matching", e.detail().empty() ? std::string(e.what()) : e.detail());
            throw;
        }
        return Datum(0);
    });
    return fits;
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

// Whether emission e, of tuple indexes idx, is a row paired with itself that the content measure
// leaves out (its content is empty).
bool empty_self_pair(const JoinScanState* st, size_t e, const uint32_t idx[2]) {
    const JoinRows* r = st->rows;
    return st->self && st->content_side >= 0 && e >= 2 * r->pairs.size() && r->empty_content[idx[0]];
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
        if (r->hit[idx[0]] || empty_self_pair(st, e, idx)) continue;
        if ((e & 1023) == 0) CHECK_FOR_INTERRUPTS();
        fill_scan_tuple(st, out, r->tuples[0][idx[0]], r->tuples[st->self ? 0 : 1][idx[1]]);
        econtext->ecxt_scantuple = out;
        if (ExecQual(st->join_qual, econtext)) r->hit[idx[0]] = true;
        ResetExprContext(econtext);
    }
    ExecClearTuple(out);
}

// Share of the limit a pass's rows may take when passes are planned (the matcher's structures
// take the rest; a pass that does not fit is split), and the share of the limit the next passes
// are planned to need once one has run: the join functions' (join_fn.cpp).
constexpr uint64_t kPassRowShare = 4;
constexpr double kPassMargin = 0.8;

// Reads child k again, from its start, into its tuplestore, noting every row's signature length
// (read from the value's header: only the first chunk of a value stored out of line) and
// tallying the lengths; the lengths and tallies count against limit bytes.
void spill_side(JoinScanState* st, int k, size_t limit) {
    PlanState* child = (PlanState*)list_nth(st->css.custom_ps, k);
    ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
    ExecReScan(child);
    MemoryContext old = MemoryContextSwitchTo(st->spill_cxt);
    st->spill[k] = tuplestore_begin_heap(false, false, work_mem);
    MemoryContextSwitchTo(old);
    st->read[k] = 0;
    for (;;) {
        TupleTableSlot* slot = ExecProcNode(child);
        if (TupIsNull(slot)) break;
        if ((++st->read[k] & 1023) == 0) CHECK_FOR_INTERRUPTS();
        uint32_t len = 0, distinct = 0;
        unsigned width = 0;
        bool isnull;
        Datum d = slot_getattr(slot, st->sig_attno[k], &isnull);
        if (!isnull && st->content_samples < 2 && content_side(st, k)) {
            sample_content_query(st, k, slot, d);
            d = slot_getattr(slot, st->sig_attno[k], &isnull);
        }
        if (!isnull && st->content_side >= 0) {
            // The content measure's passes go by the lengths of the rows' contents (none when
            // nothing can match).
            if (st->content_samples > 0 && !st->content_none) {
                old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
                struct varlena* v = fetch_spotsig(d);
                MemoryContextSwitchTo(old);
                pg_entry([&] {
                    const MultisetView m = view_of(v);
                    uint64_t n = 0;
                    for (uint32_t i = 0; i < m.size; ++i)
                        if (!template_contains(st->tmpl, st->ntmpl, m.hashes[i])) {
                            ++distinct;
                            n += m.freqs[i];
                        }
                    len = static_cast<uint32_t>(n);
                    width = m.freqs.width;
                    return Datum(0);
                });
            }
        } else if (!isnull) {
            struct varlena* v = (struct varlena*)DatumGetPointer(d);
            if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v)) {
                old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
                v = PG_DETOAST_DATUM_SLICE(d, 0, kPackedHeaderSize);
                MemoryContextSwitchTo(old);
            }
            if (VARSIZE_ANY_EXHDR(v) >= kPackedHeaderSize) {
                const char* head = VARDATA_ANY(v);
                memcpy(&distinct, head + 4, 4);
                memcpy(&len, head + 8, 4);
                width = static_cast<unsigned char>(head[1]) <= 4 ? static_cast<unsigned char>(head[1]) : 4;
            }
        }
        if (len != 0) {
            // The kept copy: a MinimalTuple in a chunk of at most twice its size, and its pointer
            // and tuplestore position in the kept rows' vectors (grown by doubling).
            slot_getallattrs(slot);
            const Size data = heap_compute_data_size(slot->tts_tupleDescriptor, slot->tts_values, slot->tts_isnull);
            const Size header = MAXALIGN(SizeofMinimalTupleHeader + BITMAPLEN(slot->tts_tupleDescriptor->natts));
            st->spill_tuple_bytes[k] += 2.0 * static_cast<double>(header + data) + 2.0 * (sizeof(MinimalTuple) + 4);
        }
        tuplestore_puttupleslot(st->spill[k], slot);
        ResetExprContext(econtext);
        pg_entry([&] {
            PassRows* pr = st->pass_rows;
            pr->lens[k].push_back(len);
            pr->tally[k].add(len, distinct, width);
            if (len != 0) st->pass_kept++;
            if (pr->bytes() > limit)
                throw_memory_limit("noting the lengths of its rows for passes",
                                   "the lengths of its " + std::to_string(st->read[0] + st->read[1]) +
                                       " rows need more than " + std::to_string(limit >> 10) + " kB");
            return Datum(0);
        });
    }
}

// Reads the rows of pass p from the tuplestores (the kept rows of the previous pass dropped);
// false when they exceed limit bytes.
bool read_pass(JoinScanState* st, const JoinPass& p, size_t limit) {
    delete_rows(st);
    MemoryContextReset(st->rows_cxt);
    new_rows(st);
    auto t0 = std::chrono::steady_clock::now();
    const bool fits = read_side(st, 0, limit, &p) && (st->self || read_side(st, 1, limit, &p));
    st->read_s += seconds_since(t0);
    return fits;
}

// Keeps the pairs of the pass just matched that pass p reports: an inner join's as scan tuples in
// the result tuplestore, a semi or anti join's as the outer rows they mark (those passing the
// other join clauses).
void emit_pass(JoinScanState* st, const JoinPass& p) {
    JoinRows* r = st->rows;
    PassRows* pr = st->pass_rows;
    TupleTableSlot* out = st->css.ss.ss_ScanTupleSlot;
    ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
    const int ik = st->self ? 0 : 1;
    const size_t n = emissions(st), npairs = r->pairs.size();
    for (size_t e = 0; e < n; ++e) {
        if ((e & 1023) == 0) CHECK_FOR_INTERRUPTS();
        uint32_t idx[2];
        emission(st, e, idx);
        if (empty_self_pair(st, e, idx)) continue;
        const uint32_t outer_pos = r->spill_pos[0][idx[0]];
        if (!p.reports(pr->lens[0][outer_pos], pr->lens[ik][r->spill_pos[ik][idx[1]]])) continue;
        if (!st->self || (e < 2 * npairs && e % 2 == 0)) st->pass_pairs++;
        if (st->jointype == JOIN_INNER) {
            fill_scan_tuple(st, out, r->tuples[0][idx[0]], r->tuples[ik][idx[1]]);
            tuplestore_puttupleslot(st->result, out);
            continue;
        }
        if (pr->hit[outer_pos]) continue;
        fill_scan_tuple(st, out, r->tuples[0][idx[0]], r->tuples[ik][idx[1]]);
        econtext->ecxt_scantuple = out;
        if (ExecQual(st->join_qual, econtext)) pr->hit[outer_pos] = true;
        ResetExprContext(econtext);
    }
    ExecClearTuple(out);
}

// One pass: its rows read, matched and their pairs kept; what it held, or that it did not fit
// (C++ code, run by run_planned_passes).
PassResult run_pass(JoinScanState* st, const JoinPass& p, size_t limit, const std::vector<LengthCount>& hist) {
    PassResult out;
    bool fits = true;
    pg_guard([&] { fits = read_pass(st, p, limit); });
    if (!fits) {
        out.fits = false;
        out.at_least = std::max<uint64_t>(limit + 1, pass_read_bytes(p, hist));
        return out;
    }
    size_t used = 0, peak = 0;
    try {
        match_pairs(st, limit, st->self ? p.probe_hi : 0, &used, &peak);
    } catch (const JoinMemoryError& e) {
        out.fits = false;
        out.at_least = used + e.at_least();
        return out;
    }
    out.peak = used + peak;
    st->pass_candidates += st->rows->candidates.load();
    pg_guard([&] {
        emit_pass(st, p);
        // The pass's rows go, and their memory back to the system, before the next pass.
        delete_rows(st);
        MemoryContextReset(st->rows_cxt);
        new_rows(st);
    });
    malloc_trim(0);
    log_process_memory("SpotsigsJoin", "a pass ended");
    return out;
}

// Throws the error of a join whose smallest pass, p, does not fit the limit, as the join functions
// word it (join_fn.cpp): at_least is a lower bound of the bytes the pass needs beside the held
// bytes of row lengths, hist the lengths of both sides. The limit it names is one every pass
// fits: the held bytes, the larger of at_least and the estimate of the smallest passes the plan
// can come down to (smallest_passes_estimate, for the documents) with the rows such a pass keeps
// beside them (its documents' bytes times the most the rows' bytes are of their documents' on a
// side, spill_tuple_bytes), and the pairs in flight that the functions count. C++ code.
[[noreturn]] void throw_pass_too_large(const JoinScanState* st, const JoinPass& p, const std::vector<LengthCount>& hist,
                                       uint64_t at_least, size_t held) {
    uint64_t rows = 0, shortest = 0, longest = 0;
    for (const LengthCount& c : hist)
        if (p.reads(c.length)) {
            rows += c.docs;
            if (shortest == 0) shortest = c.length;
            longest = c.length;
        }
    double ratio = 0;
    for (int k = 0; k < (st->self ? 1 : 2); ++k) {
        uint64_t docs = 0;
        for (const LengthCount& c : st->pass_rows->tally[k].sorted()) docs += c.bytes;
        if (docs > 0) ratio = std::max(ratio, st->spill_tuple_bytes[k] / static_cast<double>(docs));
    }
    // A smallest pass reads one probe length and one partner length: at most twice the most
    // bytes of one length.
    uint64_t most = 0;
    for (const LengthCount& c : hist) most = std::max<uint64_t>(most, c.bytes);
    const uint64_t docs_est = smallest_passes_estimate(hist, st->tau, st->threads, st->self ? 1 : 2);
    const uint64_t pass = std::max<uint64_t>(at_least, docs_est + static_cast<uint64_t>(ratio * 2.0 * most));
    const uint64_t mb = ((at_least + held) >> 20) + 1;
    const uint64_t need = (held + pass + PairSink::in_flight_bytes(4096)) / 31 * 32 + 32;
    const uint64_t need_mb = (need + (uint64_t(1) << 20) - 1) >> 20;
    throw Error(ErrorKind::OutOfMemory,
                "spotsigs join exceeds spotsigs.join_memory_limit (" + join_memory_limit_text() + ") even in passes",
                "Its smallest pass, the " + std::to_string(rows) + " documents of length " + std::to_string(shortest) +
                    (longest > shortest ? " to " + std::to_string(longest) : "") + ", needs more than " +
                    std::to_string(mb) + " MB. Set spotsigs.join_memory_limit to " + std::to_string(need_mb) +
                    "MB or more (every pass of this join fits that).");
}

// Runs the join in passes (see the head of this file), once the rows read at once did not fit.
void run_in_passes(JoinScanState* st) {
    const size_t limit = join_memory_limit_bytes();
    elog(DEBUG1,
         "SpotsigsJoin: the rows do not fit spotsigs.join_memory_limit at once: reading them again to join them in "
         "passes");
    delete_rows(st);
    MemoryContextReset(st->rows_cxt);
    malloc_trim(0);  // the first read's memory goes back to the system (the passes' pipelines map theirs)
    log_process_memory("SpotsigsJoin", "the first read's memory given back");
    st->in_passes = true;
    st->read_s = st->match_s = 0;
    pg_entry([&] {
        st->pass_rows = new PassRows();
        return Datum(0);
    });
    auto t0 = std::chrono::steady_clock::now();
    // The content query's side first: the template it gives decides the other side's lengths.
    if (st->self) spill_side(st, 0, limit);
    else if (st->content_side == 1) {
        spill_side(st, 1, limit);
        spill_side(st, 0, limit);
    } else {
        spill_side(st, 0, limit);
        spill_side(st, 1, limit);
    }
    st->read_s = seconds_since(t0);
    if (st->jointype == JOIN_INNER) {
        MemoryContext old = MemoryContextSwitchTo(st->spill_cxt);
        st->result = tuplestore_begin_heap(false, false, work_mem);
        MemoryContextSwitchTo(old);
    }
    new_rows(st);
    uint64_t worst = 0;
    size_t held = 0;
    pg_entry([&] {
        PassRows* pr = st->pass_rows;
        if (st->jointype != JOIN_INNER) pr->hit.assign(pr->lens[0].size(), false);
        const std::vector<LengthCount> hist =
            st->self ? pr->tally[0].sorted() : merge_histograms(pr->tally[0].sorted(), pr->tally[1].sorted());
        held = pr->bytes();
        const size_t left = limit > held ? limit - held : 1;
        // No row to match (the content query's side has none with a signature, or the query is
        // NULL): no pass.
        if (hist.empty() || (st->content_side >= 0 && (st->content_samples == 0 || st->content_none))) return Datum(0);
        st->passes = run_planned_passes(
            hist, st->tau, left, std::max<uint64_t>(left / kPassRowShare, 1), kPassMargin,
            [&](const JoinPass& p) { return run_pass(st, p, left, hist); },
            [&](const JoinPass& p, uint64_t at_least) { throw_pass_too_large(st, p, hist, at_least, held); }, worst);
        return Datum(0);
    });
    // The first read's peak, or a pass's with the row lengths kept beside the passes.
    const size_t peak = std::max<size_t>(st->first_read, worst + held);
    elog(DEBUG1,
         "SpotsigsJoin: %llu passes %s spotsigs.join_memory_limit, accounted peak %zu kB (first read %zu kB, passes "
         "%zu kB with %zu kB of row lengths kept beside them), %llu pairs",
         (unsigned long long)st->passes, peak <= limit ? "within" : "above", peak >> 10, st->first_read >> 10,
         (size_t)((worst + held) >> 10), held >> 10, (unsigned long long)st->pass_pairs);
    log_process_memory("SpotsigsJoin", "the passes ended");
    // The last pass's rows go; the result is read from the tuplestores.
    delete_rows(st);
    MemoryContextReset(st->rows_cxt);
    new_rows(st);
    if (st->jointype != JOIN_INNER) tuplestore_rescan(st->spill[0]);
    st->emitted = 0;
}

// The next row of a join run in passes (empty slot at the end): an inner join's next scan tuple
// from the result tuplestore, a semi or anti join's next outer row that has a pair (semi) or
// not (anti).
TupleTableSlot* next_from_passes(JoinScanState* st) {
    TupleTableSlot* out = st->css.ss.ss_ScanTupleSlot;
    TupleTableSlot* in;
    int natts;
    if (st->jointype == JOIN_INNER) {
        in = st->result_slot;
        if (!tuplestore_gettupleslot(st->result, true, false, in)) return ExecClearTuple(out);
        natts = st->natts[0] + st->natts[1];
    } else {
        in = st->spill_slot[0];
        const bool want = st->jointype == JOIN_SEMI;
        for (;;) {
            if (!tuplestore_gettupleslot(st->spill[0], true, false, in)) return ExecClearTuple(out);
            if (st->pass_rows->hit[st->emitted++] == want) break;
        }
        natts = st->natts[0];
    }
    ExecClearTuple(out);
    slot_getallattrs(in);
    memcpy(out->tts_values, in->tts_values, sizeof(Datum) * natts);
    memcpy(out->tts_isnull, in->tts_isnull, sizeof(bool) * natts);
    for (int i = natts; i < st->natts[0] + st->natts[1]; ++i) {
        out->tts_values[i] = Datum(0);
        out->tts_isnull[i] = true;
    }
    return ExecStoreVirtualTuple(out);
}

TupleTableSlot* next_pair(ScanState* ss) {
    JoinScanState* st = (JoinScanState*)ss;
    if (!st->matched) {
        read_settings(st);
        // Whether this join's large blocks may come from the reserved huge pages (huge_alloc.hpp).
        use_reserved_huge_pages(join_huge_pages);
        auto t0 = std::chrono::steady_clock::now();
        const size_t limit = join_memory_limit_bytes();
        st->match_s = 0;
        // The first read: both sides charge one budget, the limit, before they allocate (the
        // kept tuples' context holds a block already).
        pg_entry([&] {
            st->rows->budget = std::make_unique<ReadBudget>(limit);
            return Datum(0);
        });
        bool fits = false;
        if (st->rows->budget->charge(tuple_bytes(st)))
            fits = read_side(st, 0, limit) && (st->self || read_side(st, 1, limit));
        st->read_s = seconds_since(t0);
        st->first_read = st->rows->budget->peak();
        if (fits) fits = match(st);
        if (!fits) run_in_passes(st);
        else if (st->jointype != JOIN_INNER) mark_hits(st);
        st->matched = true;
    }
    if (st->in_passes) return next_from_passes(st);
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
    uint32_t idx[2];
    do {
        if (r->next >= emissions(st)) return ExecClearTuple(out);
        emission(st, r->next, idx);
    } while (empty_self_pair(st, r->next++, idx));
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
    delete_passes(st);
    ListCell* lc;
    foreach (lc, node->custom_ps) ExecEndNode((PlanState*)lfirst(lc));
}

// A rescan with the same parameters and threshold gives the same pairs again; otherwise (or
// before the pairs were all found) the children are read and matched again.
void rescan(CustomScanState* node) {
    JoinScanState* st = (JoinScanState*)node;
    Bitmapset* changed = node->ss.ps.chgParam;
    if (changed == nullptr && st->matched && (st->fixed_tau != 0 || st->tau == similarity_threshold)) {
        st->rows->next = 0;
        if (st->in_passes) {
            tuplestore_rescan(st->jointype == JOIN_INNER ? st->result : st->spill[0]);
            st->emitted = 0;
        }
        return;
    }
    delete_rows(st);
    delete_passes(st);
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
    List* quals = cs->custom_exprs;
    if (st->content_side >= 0) quals = list_truncate(list_copy(quals), list_length(quals) - 1);
    if (quals != NIL || st->content_side >= 0) {
        List* context = set_deparse_context_plan(es->deparse_cxt, &cs->scan.plan, ancestors);
        // A semi or anti join's other clauses, checked on each pair.
        if (quals != NIL)
            ExplainPropertyText("Join Filter",
                                deparse_expression((Node*)make_ands_explicit(quals), context, true, false), es);
        // The content measure's query, evaluated on the first rows of its side.
        if (st->content_side >= 0)
            ExplainPropertyText("Content Query",
                                deparse_expression((Node*)llast(cs->custom_exprs), context, true, false), es);
    }
    char buf[64];
    if (st->content_side < 0) snprintf(buf, sizeof buf, "%g", st->tau);
    else if (st->matched && st->content_samples > 0 && !st->content_none)
        snprintf(buf, sizeof buf, "%g, content measure (%u template signatures)", st->tau, (unsigned)st->ntmpl);
    else snprintf(buf, sizeof buf, "content measure");
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
        const bool passes = st->in_passes;
        ExplainPropertyInteger(
            "Rows Kept", nullptr,
            passes ? (int64)st->pass_kept : (int64)(st->rows->tuples[0].size() + st->rows->tuples[1].size()), es);
        ExplainPropertyInteger("Pairs", nullptr, passes ? (int64)st->pass_pairs : (int64)st->rows->pairs.size(), es);
        if (passes) ExplainPropertyInteger("Passes", nullptr, (int64)st->passes, es);
        ExplainPropertyInteger("Candidates", nullptr,
                               passes ? (int64)st->pass_candidates : (int64)st->rows->candidates.load(), es);
        if (es->timing) {
            ExplainPropertyFloat("Read Time", "ms", st->read_s * 1000.0, 3, es);
            ExplainPropertyFloat("Match Time", "ms", st->match_s * 1000.0, 3, es);
        }
    }
}

}  // namespace

CustomScanMethods scan_methods = {"SpotsigsJoin", create_state};

List* make_private(bool self, int outer_sig, int inner_sig, JoinType jointype, Node* tau, int content_side) {
    List* l = list_make5(makeInteger(self ? 1 : 0), makeInteger(outer_sig), makeInteger(inner_sig),
                         makeInteger(static_cast<int>(jointype)), copyObjectImpl(tau));
    return lappend(l, makeInteger(content_side));
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
