// The content trigger's statistics refresh (trigger_reanalyze.hpp).
#include "pg/trigger/trigger_reanalyze.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

#include <algorithm>
#include <cmath>

#include "pg/compat.hpp"
#include "pg/index/index.hpp"
#include "pg/join/best_matches.hpp"
#include "pg/trigger/trigger_refresh_worker.hpp"
#include "pg/trigger/trigger_template.hpp"

namespace spotsigs::pg {

namespace {

// spotsigs.trigger_refresh.
int refresh_mode = kRefreshOn;

// The relation this backend is refreshing, InvalidOid when none.
Oid reflag_relid = InvalidOid;

// spotsigs.trigger_refresh_growth: the factor by which the rows must grow past the stored
// statistics' before a refresh.
double refresh_growth = 1.25;

// The number of rows at which the next refresh is due: the rows of the stored statistics times
// spotsigs.trigger_refresh_growth (rounded down, at least one row more), and at least
// kRefreshMinRows (the only target without statistics). At the default 1.25 the template in force
// is always that of at least four fifths of the rows the table held at its last refresh's target:
// a template of half the rows (doubling) can differ from the whole's on signatures near the
// decision, and a load from half a table then keeps it to the end (docs/ingest.md, "What a flag
// depends on"). A larger factor refreshes less often, for less quality.
uint64 refresh_target(const TriggerConfig* c, double growth) {
    const uint64 rows = c->tmpl_found && c->tmpl_rows > 0 ? uint64(c->tmpl_rows) : 0;
    const double scaled = std::floor(double(rows) * growth);
    // The setting's maximum keeps the product far inside uint64 for any table's row count.
    const uint64 grown = std::max<uint64>(uint64(scaled), rows + 1);
    return grown > kRefreshMinRows ? grown : kRefreshMinRows;
}

// Reads c's template again from the store under a new snapshot: the statement's own snapshot
// sees neither this transaction's later writes (a refresh's analysis) nor a concurrent session's
// commit since the statement began.
void reload_template(TriggerConfig* c, Relation rel) {
    CommandCounterIncrement();
    PushActiveSnapshot(GetTransactionSnapshot());
    UpdateActiveSnapshotCommandId();
    c->tmpl_lxid = InvalidLocalTransactionId;
    refresh_trigger_template(c, rel);
    PopActiveSnapshot();
}

// True when row-level security is enabled on relid.
bool rls_enabled(Oid relid) {
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tup)) elog(ERROR, "cache lookup failed for relation %u", relid);
    const bool on = ((Form_pg_class)GETSTRUCT(tup))->relrowsecurity;
    ReleaseSysCache(tup);
    return on;
}

// True when row-level security is enabled on rel or on a partitioned table above it. The re-flag
// writes into other writers' rows the ids of matches the refreshing role sees; with policies,
// those writers may not see them.
bool any_row_security(Relation rel) {
    if (rel->rd_rel->relrowsecurity) return true;
    if (!rel->rd_rel->relispartition) return false;
    List* ancestors = get_partition_ancestors(RelationGetRelid(rel));
    ListCell* lc;
    foreach (lc, ancestors)
        if (rls_enabled(lfirst_oid(lc))) return true;
    return false;
}

Datum name_datum(const char* s) {
    return DirectFunctionCall1(namein, CStringGetDatum(s));
}

const char* column_name(Relation rel, AttrNumber att) {
    return NameStr(TupleDescAttr(RelationGetDescr(rel), att - 1)->attname);
}

// The table's rows with a signature, as a new snapshot of the current user shows them (row-level
// security applies): the rows spotsigs_analyze would analyze.
uint64 visible_rows(const TriggerConfig* c, Relation rel) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsigs_flag_duplicates: SPI_connect failed");
    char* sql = psprintf(
        "SELECT pg_catalog.count(%s) FROM %s", quote_identifier(column_name(rel, c->sig_att)),
        quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)), RelationGetRelationName(rel)));
    int rc = SPI_execute(sql, false, 1);
    if (rc != SPI_OK_SELECT || SPI_processed != 1)
        elog(ERROR, "spotsigs_flag_duplicates: counting rows failed: %s", SPI_result_code_string(rc));
    bool isnull = false;
    const int64 n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    SPI_finish();
    return n > 0 ? uint64(n) : 0;
}

// The column's type as SQL names it (typmod included, a domain by its name).
const char* column_type_sql(Relation rel, AttrNumber att) {
    Form_pg_attribute a = TupleDescAttr(RelationGetDescr(rel), att - 1);
    return format_type_with_typemod(a->atttypid, a->atttypmod);
}

// spotsigs_analyze(rel, sig, id), then every row's flag set to what spotsigs_flag_batch(rel, id,
// sig, dup, sim, NULL, min) computes with the new template (the best match among the rows of
// smaller id, ties to the smallest id), in one UPDATE that writes only the rows whose values
// change. The matches are each row's best one among the pairs of the table's default self-join
// (id1 < id2: a match of id2 among the rows of smaller id; best_earlier_matches), which are the
// pairs spotsigs_flag_batch's R-S join of the table against itself keeps (s_id < r_id), with the
// same stored template and threshold, each found once instead of in both orders, and reduced to
// one a row as they come instead of sorted. As the current user, the statements through SPI.
// Every row is judged: a row's flag can change only if it, its match, or a row of smaller id that
// the new template makes a match holds a signature that entered or left the template
// (docs/ingest.md, "Which flags a refresh can change"), but only when every other row holds the
// batch result under the old template, which rows inserted out of id order, by other sessions or
// before a user's own analysis need not. Without `analyze`, the re-flag alone, with the template
// stored.
void analyze_and_reflag(const TriggerConfig* c, Relation rel, bool analyze) {
    const char* sig = column_name(rel, c->sig_att);
    const char* id = column_name(rel, c->id_att);
    const char* schema = quote_identifier(get_namespace_name(c->ext_schema));
    const char* table =
        quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)), RelationGetRelationName(rel));
    const char* qid = quote_identifier(id);
    const char* qdup = quote_identifier(column_name(rel, c->dup_att));

    if (analyze) {
        if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsigs_flag_duplicates: SPI_connect failed");
        Oid types[3] = {REGCLASSOID, NAMEOID, NAMEOID};
        Datum values[3] = {ObjectIdGetDatum(c->relid), name_datum(sig), name_datum(id)};
        const char* sql = psprintf("SELECT %s.spotsigs_analyze($1, $2, $3)", schema);
        const int rc = SPI_execute_with_args(sql, 3, types, values, nullptr, false, 0);
        if (rc != SPI_OK_SELECT)
            elog(ERROR, "spotsigs_flag_duplicates: analyzing failed: %s", SPI_result_code_string(rc));
        SPI_finish();
    }

    // The matches under a new snapshot, as a statement after the analysis would see the table and
    // the store.
    Datum values[3];
    CommandCounterIncrement();
    PushActiveSnapshot(GetTransactionSnapshot());
    UpdateActiveSnapshotCommandId();
    best_earlier_matches(c->ext_schema, c->relid, id, sig, values);
    PopActiveSnapshot();

    StringInfoData set, differs;
    initStringInfo(&set);
    initStringInfo(&differs);
    appendStringInfo(&set, "%s = m.s_id", qdup);
    appendStringInfo(&differs, "t.%s IS DISTINCT FROM m.s_id", qdup);
    if (c->sim_att != 0) {
        const char* qsim = quote_identifier(column_name(rel, c->sim_att));
        const char* type = column_type_sql(rel, c->sim_att);
        appendStringInfo(&set, ", %s = m.similarity", qsim);
        appendStringInfo(&differs, " OR t.%s IS DISTINCT FROM CAST(m.similarity AS %s)", qsim, type);
    }
    const char* sql = psprintf(
        "UPDATE %s t SET %s FROM ("
        "SELECT a.%s AS id, b.s_id, b.similarity FROM %s a LEFT JOIN "
        "ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3)) AS b(r_id, s_id, similarity) "
        "ON b.r_id OPERATOR(pg_catalog.=) a.%s) m "
        "WHERE t.%s OPERATOR(pg_catalog.=) m.id AND (%s)",
        table, set.data, qid, table, qid, qid, differs.data);
    Oid types[3] = {INT8ARRAYOID, INT8ARRAYOID, FLOAT8ARRAYOID};
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsigs_flag_duplicates: SPI_connect failed");
    const int rc = SPI_execute_with_args(sql, 3, types, values, nullptr, false, 0);
    if (rc != SPI_OK_UPDATE)
        elog(ERROR, "spotsigs_flag_duplicates: re-flagging failed: %s", SPI_result_code_string(rc));
    SPI_finish();
}

// The checks every refresh makes of the refreshing role: it owns the table (as ANALYZE needs) and
// may SELECT and UPDATE it (the re-flag), outside a security-restricted operation, with no
// row-level security on the table or a partitioned table above it.
bool may_refresh(const TriggerConfig* c, Relation rel) {
    const Oid user = GetUserId();
    return !InSecurityRestrictedOperation() && SPOTSIGS_REL_OWNERCHECK(c->relid, user) &&
           pg_class_aclcheck(c->relid, user, ACL_SELECT | ACL_UPDATE) == ACLCHECK_OK && !any_row_security(rel);
}

// Runs analyze_and_reflag(c, rel, analyze) as the current user with search_path pinned, marking
// the table as being re-flagged meanwhile (reflagging()), then reads c's template again.
void run_refresh(TriggerConfig* c, Relation rel, bool analyze) {
    reflag_relid = c->relid;
    PG_TRY();
    {
        // The statements name every object by schema or run under pg_catalog first: the
        // caller's search_path cannot redirect an operator or a cast.
        const int reflag_nest = NewGUCNestLevel();
        (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
                                0, false);
        analyze_and_reflag(c, rel, analyze);
        AtEOXact_GUC(true, reflag_nest);
    }
    PG_FINALLY();
    { reflag_relid = InvalidOid; }
    PG_END_TRY();
    reload_template(c, rel);
}

// With the table's SHARE UPDATE EXCLUSIVE lock held: reads c's template again and counts the rows
// a new snapshot shows (*rows_out) against the target of `growth` (*target_out).
uint64 count_rows(TriggerConfig* c, Relation rel, double growth, uint64* target_out) {
    reload_template(c, rel);  // another session may have refreshed since this statement began
    *target_out = refresh_target(c, growth);
    const int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                            false);
    const uint64 rows = visible_rows(c, rel);
    AtEOXact_GUC(true, nest);
    return rows;
}

// With the lock held: refreshes when the rows reach the target. True when it refreshed.
bool refresh_if_due(TriggerConfig* c, Relation rel, double growth, uint64* rows_out, uint64* target_out) {
    *rows_out = count_rows(c, rel, growth, target_out);
    if (*rows_out < *target_out) return false;
    run_refresh(c, rel, true);
    return true;
}

}  // namespace

bool reflagging(Oid relid) {
    return OidIsValid(reflag_relid) && reflag_relid == relid;
}

void maybe_refresh(TriggerConfig* c, Relation rel) {
    // Mode 'first' keeps any match it finds: no batch re-flag reproduces it. Under a transaction
    // snapshot the re-flag could meet rows updated by a refresh committed since, and fail (40001).
    if (refresh_mode == kRefreshOff || !c->content || !c->best || OidIsValid(reflag_relid) ||
        IsolationUsesXactSnapshot())
        return;
    // A background refresh this session launched for the table has not finished: it will see
    // every row committed before it takes the table's lock.
    if (refresh_mode == kRefreshBackground && background_refresh_pending(c->relid)) return;
    // The index's entry count bounds the rows from above (every row with a signature has an
    // entry; dead rows keep theirs until VACUUM): below the target, nothing to count.
    Relation index = index_open(c->index_oid, AccessShareLock);
    const uint64 entries = index::indexed_rows(index);
    index_close(index, AccessShareLock);
    if (entries < refresh_target(c, refresh_growth) || entries < c->refresh_check) return;
    if (!may_refresh(c, rel)) return;
    // In the background: a worker waits for this transaction to end, then counts and refreshes
    // under its own snapshot; this row keeps the stored template. Without a free worker slot (or,
    // before PostgreSQL 16, for a role that cannot log in), the refresh runs here.
    if (refresh_mode == kRefreshBackground && launch_background_refresh(c, refresh_growth)) {
        // Should the worker find fewer rows than entries (dead ones), this session launches again
        // only after another growth step's worth of entries, not at every row.
        c->refresh_check =
            entries + std::max<uint64>(1, refresh_target(c, refresh_growth) - uint64(std::max<int64>(c->tmpl_rows, 0)));
        return;
    }
    // The lock spotsigs_flag_batch takes, held to the end of the transaction: one refresh of a
    // table at a time. Taken without waiting: while another transaction holds it (a refresh, a
    // VACUUM), this row keeps the stored template and the next row tries again.
    const bool held = CheckRelationLockedByMe(rel, ShareUpdateExclusiveLock, true);
    if (!held && !ConditionalLockRelationOid(c->relid, ShareUpdateExclusiveLock)) return;
    uint64 rows = 0, target = 0;
    if (!refresh_if_due(c, rel, refresh_growth, &rows, &target)) {
        // Not due: dead entries made up the count. Rows are counted again once the index has
        // gained as many entries as rows are missing (each new row adds an entry).
        c->refresh_check = entries + (target - rows);
        if (!held) UnlockRelationOid(c->relid, ShareUpdateExclusiveLock);
    }
}

bool refresh_in_background_worker(TriggerConfig* c, Relation rel, double growth) {
    if (!may_refresh(c, rel)) return false;
    uint64 rows = 0, target = 0;
    return refresh_if_due(c, rel, growth, &rows, &target);
}

bool reflag_arrivals_in_background_worker(TriggerConfig* c, Relation rel) {
    if (!may_refresh(c, rel)) return false;
    uint64 target = 0;
    const uint64 rows = count_rows(c, rel, 1.0, &target);
    if (!c->tmpl_found || rows <= uint64(std::max<int64>(c->tmpl_rows, 0))) return false;
    run_refresh(c, rel, false);
    return true;
}

void register_trigger_gucs() {
    static const struct config_enum_entry modes[] = {
        {"off", kRefreshOff, false}, {"on", kRefreshOn, false},    {"background", kRefreshBackground, false},
        {"true", kRefreshOn, true},  {"false", kRefreshOff, true}, {"yes", kRefreshOn, true},
        {"no", kRefreshOff, true},   {"1", kRefreshOn, true},      {"0", kRefreshOff, true},
        {nullptr, 0, false}};
    DefineCustomEnumVariable("spotsigs.trigger_refresh",
                             "Lets a spotsigs_flag_duplicates trigger without a threshold refresh its table's "
                             "statistics as the table grows: off, on (in the inserting statement) or background.",
                             "When the table holds spotsigs.trigger_refresh_growth times the rows of its stored "
                             "statistics (and at least 16), an insert by the table's owner runs spotsigs_analyze and "
                             "re-flags every row with spotsigs_flag_batch: before its own row is flagged (on), or in "
                             "a background worker once its transaction has ended (background).",
                             &refresh_mode, kRefreshOn, modes, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomRealVariable("spotsigs.trigger_refresh_growth",
                             "How much a table must grow past its stored statistics before a trigger without a "
                             "threshold refreshes them.",
                             "A factor of the rows the statistics were gathered from: smaller refreshes more often "
                             "(flags closer to the whole table's template), larger costs less.",
                             &refresh_growth, 1.25, 1.01, 1000.0, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

}  // namespace spotsigs::pg
