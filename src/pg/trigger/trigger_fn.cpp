// spotsigs_flag_duplicates(): a BEFORE ROW trigger that flags a new row as a near duplicate of a
// row already in the table (the technical report's incremental matching, best or first guess).
//
// Written in C-style PostgreSQL code: no C++ object with a destructor lives across a PostgreSQL
// call, so errors may longjmp through it (see boundary.hpp). The search is trigger_search.cpp's.
#include "pg/pg.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/guc.h"
}

#include "pg/boundary.hpp"
#include "pg/trigger/trigger_config.hpp"
#include "pg/trigger/trigger_locks.hpp"
#include "pg/trigger/trigger_reanalyze.hpp"
#include "pg/trigger/trigger_search.hpp"
#include "pg/trigger/trigger_template.hpp"
#include "pg/trigger/trigger_visibility.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs::pg;

namespace {

// Evaluates the column's generation expression against the new row (PostgreSQL computes stored
// generated columns only after BEFORE triggers, so NEW holds NULL there).
Datum evaluate_generated(const TriggerConfig* c, Relation rel, HeapTuple tuple, bool* isnull) {
    EState* estate = CreateExecutorState();
    ExprState* state = ExecPrepareExpr(c->gen_expr, estate);
    ExprContext* econtext = GetPerTupleExprContext(estate);
    TupleTableSlot* slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
    ExecStoreHeapTuple(tuple, slot, false);
    econtext->ecxt_scantuple = slot;
    Datum value = ExecEvalExprSwitchContext(state, econtext, isnull);
    // The result lives in the executor state's memory: copy it out before freeing that.
    Datum result = *isnull ? (Datum)0 : datumCopy(value, false, -1);
    ExecDropSingleTupleTableSlot(slot);
    FreeExecutorState(estate);
    return result;
}

// An id as a datum of an integer column type; ERROR 22003 if it does not fit.
Datum integer_datum(Oid type, int64 v, const char* what) {
    if ((type == INT2OID && (v < PG_INT16_MIN || v > PG_INT16_MAX)) ||
        (type == INT4OID && (v < PG_INT32_MIN || v > PG_INT32_MAX)))
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("spotsigs_flag_duplicates: id " INT64_FORMAT " does not fit the %s column", v, what)));
    switch (type) {
        case INT2OID: return Int16GetDatum(int16(v));
        case INT4OID: return Int32GetDatum(int32(v));
        default: return Int64GetDatum(v);
    }
}

// A similarity as a datum of the similarity column's type.
Datum similarity_datum(Oid type, double s) {
    switch (type) {
        case FLOAT4OID: return Float4GetDatum(float4(s));
        case NUMERICOID: return DirectFunctionCall1(float8_numeric, Float8GetDatum(s));
        default: return Float8GetDatum(s);
    }
}

// v (ignored when isnull), of the column's base type, as the column stores it: its typmod applied
// as the assignment cast of an INSERT would (numeric(3,2) rounds 0.8066 to 0.81), then, for a
// domain, the domain's NOT NULL and CHECK constraints checked (ERROR 23502, 23514).
Datum stored_value(ColumnWrite* w, MemoryContext cxt, Datum v, bool isnull) {
    if (!isnull && OidIsValid(w->typmod_fn))
        v = OidFunctionCall3(w->typmod_fn, v, Int32GetDatum(w->typmod), BoolGetDatum(false));
    if (w->domain) domain_check(v, isnull, w->type, &w->domain_extra, cxt);
    return v;
}

// The new row's id (the primary key) as a datum of the id type; ERROR if NULL.
Datum row_id(const TriggerConfig* c, Relation rel, HeapTuple tuple) {
    bool isnull = false;
    Datum id = heap_getattr(tuple, c->id_att, RelationGetDescr(rel), &isnull);
    if (isnull)
        ereport(ERROR, (errcode(ERRCODE_NOT_NULL_VIOLATION),
                        errmsg("spotsigs_flag_duplicates: the new row of \"%s\" has a NULL primary key",
                               RelationGetRelationName(rel))));
    return id;
}

}  // namespace

// The trigger: sets the duplicate and similarity columns of the new row from the best (or
// first) row already in the table with similarity >= tau, or to NULL when there is none.
SPOTSIGS_FUNCTION(spotsigs_flag_duplicates) {
    check_trigger_context(fcinfo);
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    Relation rel = td->tg_relation;
    HeapTuple tuple = TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple : td->tg_trigtuple;

    // spotsigs_flag_batch re-flagging this table for the trigger (trigger_reanalyze.hpp): its
    // values stand.
    if (TRIGGER_FIRED_BY_UPDATE(td->tg_event) && reflagging(RelationGetRelid(rel))) return PointerGetDatum(tuple);

    TriggerConfig* c = trigger_config(fcinfo, td);
    if (c->locked && XactIsoLevel != XACT_READ_COMMITTED)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("spotsigs_flag_duplicates: the 'locked' mode needs READ COMMITTED isolation"),
                        errdetail("Under a transaction snapshot a row committed by a concurrent session stays "
                                  "invisible after its lock is released, so the guarantee cannot hold."),
                        errhint("Insert in READ COMMITTED transactions, or use the 'unlocked' mode.")));

    bool sig_null = false;
    Datum sig;
    if (c->sig_generated) sig = evaluate_generated(c, rel, tuple, &sig_null);
    else sig = heap_getattr(tuple, c->sig_att, RelationGetDescr(rel), &sig_null);

    TriggerMatch m = {false, 0, 0.0};
    if (!sig_null) {
        struct varlena* v = fetch_spotsig(sig);
        spotsigs::MultisetView q;
        pg_entry([&] {
            q = view_of(v);
            return Datum(0);
        });
        // The content measure compares the rows' contents: q becomes the new row's.
        if (c->content) {
            refresh_trigger_template(c, rel);
            if (TRIGGER_FIRED_BY_INSERT(td->tg_event)) maybe_refresh(c, rel);
            q = trigger_content(c, q);
        }
        // An empty spotsig has similarity 0 with everything: it never matches (nor does an empty
        // content under the content measure).
        if (!q.empty()) {
            int64 self = integer_value(c->id_type, row_id(c, rel, tuple));
            check_match_privilege(c, rel);
            if (c->locked) lock_length_buckets(c->relid, q.length, c->threshold);
            m = trigger_find_match(c, rel, q, self);
        }
    }
    Oid dup_type = c->dup_type, sim_type = c->sim_type;
    int natts = c->sim_att != 0 ? 2 : 1;
    int cols[2] = {c->dup_att, c->sim_att};

    Datum values[2] = {0, 0};
    bool nulls[2] = {!m.found, !m.found};
    if (m.found) {
        values[0] = integer_datum(dup_type, m.id, "duplicate");
        if (natts == 2) values[1] = similarity_datum(sim_type, m.similarity);
    }
    values[0] = stored_value(&c->dup_write, c->cxt, values[0], nulls[0]);
    if (natts == 2) values[1] = stored_value(&c->sim_write, c->cxt, values[1], nulls[1]);
    HeapTuple result = heap_modify_tuple_by_cols(tuple, RelationGetDescr(rel), natts, cols, values, nulls);
    return PointerGetDatum(result);
}
