// The content trigger's automatic re-analysis (trigger_reanalyze.hpp).
#include "pg/trigger/trigger_reanalyze.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
}

#include "pg/compat.hpp"
#include "pg/index/index.hpp"
#include "pg/trigger/trigger_template.hpp"

namespace spotsigs::pg {

namespace {

bool reanalyze_enabled = true;

// The relation being re-flagged by this backend, InvalidOid when none.
Oid reflag_relid = InvalidOid;

// Due when the index counts n rows, at least the minimum, and has gained at least as many since
// this backend first saw the stored statistics as they were computed on (and at least the
// minimum): the table has about doubled. Counting entries gained, not entries, keeps the dead
// entries of the re-flag's own UPDATEs (and of rows removed but not yet vacuumed) from bringing
// the next analysis forward; entries of concurrent uncommitted inserts count, so an analysis may
// come early, never more often than once per kReanalyzeMinRows entries.
bool due(TriggerConfig* c, uint64 n) {
    if (!c->tmpl_base_known) {
        c->tmpl_base = n;
        c->tmpl_base_known = true;
        if (!c->tmpl_found) c->tmpl_base = 0;  // no statistics: due at the minimum
    }
    if (n < kReanalyzeMinRows) return false;
    if (!c->tmpl_found) return true;
    const uint64 rows = uint64(c->tmpl_rows > 0 ? c->tmpl_rows : 0);
    return n >= c->tmpl_base && n - c->tmpl_base >= (rows > kReanalyzeMinRows ? rows : kReanalyzeMinRows);
}

Datum name_datum(const char* s) { return DirectFunctionCall1(namein, CStringGetDatum(s)); }

// spotsigs_analyze(rel, sig, id) and spotsigs_flag_batch(rel, id, sig, dup, sim, NULL, min) of
// the extension's schema, through SPI (the caller's identity: it owns the table).
void run_analysis(const TriggerConfig* c, Relation rel) {
    TupleDesc desc = RelationGetDescr(rel);
    const char* sig = NameStr(TupleDescAttr(desc, c->sig_att - 1)->attname);
    const char* id = NameStr(TupleDescAttr(desc, c->id_att - 1)->attname);
    const char* dup = NameStr(TupleDescAttr(desc, c->dup_att - 1)->attname);
    const char* sim = c->sim_att != 0 ? NameStr(TupleDescAttr(desc, c->sim_att - 1)->attname) : nullptr;
    const char* schema = quote_identifier(get_namespace_name(c->ext_schema));

    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsigs_flag_duplicates: SPI_connect failed");
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql, "SELECT %s.spotsigs_analyze($1, $2, $3)", schema);
    Oid atypes[3] = {REGCLASSOID, NAMEOID, NAMEOID};
    Datum avalues[3] = {ObjectIdGetDatum(c->relid), name_datum(sig), name_datum(id)};
    int rc = SPI_execute_with_args(sql.data, 3, atypes, avalues, nullptr, false, 0);
    if (rc != SPI_OK_SELECT) elog(ERROR, "spotsigs_flag_duplicates: analyzing failed: %s", SPI_result_code_string(rc));

    resetStringInfo(&sql);
    appendStringInfo(&sql, "SELECT %s.spotsigs_flag_batch($1, $2, $3, $4, $5, $6, $7)", schema);
    Oid ftypes[7] = {REGCLASSOID, NAMEOID, NAMEOID, NAMEOID, NAMEOID, FLOAT8OID, INT8OID};
    Datum fvalues[7] = {ObjectIdGetDatum(c->relid),
                        name_datum(id),
                        name_datum(sig),
                        name_datum(dup),
                        sim != nullptr ? name_datum(sim) : (Datum)0,
                        (Datum)0,
                        Int64GetDatum(PG_INT64_MIN)};
    const char fnulls[8] = {' ', ' ', ' ', ' ', sim != nullptr ? ' ' : 'n', 'n', ' ', '\0'};
    rc = SPI_execute_with_args(sql.data, 7, ftypes, fvalues, fnulls, false, 0);
    if (rc != SPI_OK_SELECT) elog(ERROR, "spotsigs_flag_duplicates: re-flagging failed: %s", SPI_result_code_string(rc));
    SPI_finish();
}

}  // namespace

bool reflagging(Oid relid) { return OidIsValid(reflag_relid) && reflag_relid == relid; }

void maybe_reanalyze(TriggerConfig* c, Relation rel) {
    if (!reanalyze_enabled || !c->content || OidIsValid(reflag_relid)) return;
    Relation index = index_open(c->index_oid, AccessShareLock);
    const uint64 n = index::indexed_rows(index);
    index_close(index, AccessShareLock);
    if (!due(c, n)) return;
    // Analyzing needs the table's ownership (as ANALYZE); the re-flag creates temporary tables,
    // which a security-restricted operation may not.
    if (InSecurityRestrictedOperation() || !SPOTSIGS_REL_OWNERCHECK(c->relid, GetUserId())) return;
    // The lock spotsigs_flag_batch takes, held to the end of the transaction: it serializes the
    // re-analyses of the table. When another transaction holds it, this row keeps the template
    // stored (no waiting, so two inserting sessions never wait on each other here).
    if (!ConditionalLockRelationOid(c->relid, ShareUpdateExclusiveLock)) return;
    // A fresh look at the store: a concurrent session may have analyzed since this statement began.
    c->tmpl_lxid = InvalidLocalTransactionId;
    refresh_trigger_template(c, rel);
    if (!due(c, n)) return;

    reflag_relid = c->relid;
    PG_TRY();
    { run_analysis(c, rel); }
    PG_FINALLY();
    { reflag_relid = InvalidOid; }
    PG_END_TRY();
    c->tmpl_lxid = InvalidLocalTransactionId;
    refresh_trigger_template(c, rel);
    // The new statistics' base: the count after the re-flag, whose UPDATEs added entries too.
    index = index_open(c->index_oid, AccessShareLock);
    c->tmpl_base = index::indexed_rows(index);
    c->tmpl_base_known = true;
    index_close(index, AccessShareLock);
}

void register_trigger_gucs() {
    DefineCustomBoolVariable(
        "spotsigs.trigger_reanalyze",
        "Lets a content-measure spotsigs_flag_duplicates trigger analyze its table as it grows.",
        "When the spotsigs index counts at least twice the rows of the stored statistics (and at least 16), "
        "an insert by the table's owner runs spotsigs_analyze and re-flags every row with spotsigs_flag_batch.",
        &reanalyze_enabled, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

}  // namespace spotsigs::pg
