// Privilege and row-security checks of the trigger's matches (trigger_visibility.hpp).
#include "pg/trigger/trigger_visibility.hpp"

extern "C" {
#include "catalog/partition.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
}

namespace spotsigs::pg {

namespace {

// True when the user may SELECT column att of relid (through the table or the column).
bool may_select(Oid relid, AttrNumber att, Oid user) {
    return pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK ||
           pg_attribute_aclcheck(relid, att, user, ACL_SELECT) == ACLCHECK_OK;
}

// The probe's query. Every name is quoted and the table qualified; the one operator is named
// with its schema, so the caller's search_path has no say in what it runs.
char* probe_query(Oid relid, AttrNumber id_att) {
    return psprintf("SELECT 1 FROM ONLY %s WHERE %s OPERATOR(pg_catalog.=) $1",
                    quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid)),
                    quote_identifier(get_attname(relid, id_att, false)));
}

// True when the user may SELECT the primary key and spotsig columns of the partition c->relid
// through a partitioned table above it (whose columns have the same names, not necessarily the
// same numbers).
bool readable_through_ancestor(const TriggerConfig* c, Oid user) {
    List* ancestors = get_partition_ancestors(c->relid);
    ListCell* lc;
    bool granted = false;
    foreach (lc, ancestors) {
        Oid up = lfirst_oid(lc);
        if (may_select(up, get_attnum(up, get_attname(c->relid, c->id_att, false)), user) &&
            may_select(up, get_attnum(up, get_attname(c->relid, c->sig_att, false)), user))
            granted = true;
    }
    list_free(ancestors);
    return granted;
}

}  // namespace

void check_match_privilege(const TriggerConfig* c, Relation rel) {
    Oid user = GetUserId();
    if (may_select(c->relid, c->id_att, user) && may_select(c->relid, c->sig_att, user)) return;
    // A partition's rows are also readable through the partitioned tables above it.
    if (rel->rd_rel->relispartition && readable_through_ancestor(c, user)) return;
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("spotsigs_flag_duplicates: permission denied for table %s", RelationGetRelationName(rel)),
                    errdetail("The trigger tells the writer the id of a matching row and its similarity, so "
                              "the writer needs SELECT on the columns \"%s\" and \"%s\".",
                              get_attname(c->relid, c->id_att, false), get_attname(c->relid, c->sig_att, false))));
}

bool row_security_applies(const TriggerConfig* c, Relation rel) {
    // The trigger fires on a partition and searches its index; the policies a query through
    // the partitioned table would apply are the ancestors', which the probe (a query on the
    // partition) would not apply. Refused rather than half applied. The ancestors are looked up
    // at every firing, not cached with the configuration: attaching the partitioned table to
    // another one invalidates neither this partition's relcache entry nor its configuration.
    if (rel->rd_rel->relispartition) {
        List* ancestors = get_partition_ancestors(c->relid);
        ListCell* lc;
        foreach (lc, ancestors)
            if (check_enable_rls(lfirst_oid(lc), InvalidOid, true) == RLS_ENABLED)
                ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                                errmsg("spotsigs_flag_duplicates: row-level security of \"%s\", a partitioned "
                                       "table that \"%s\" belongs to, is not supported",
                                       get_rel_name(lfirst_oid(lc)), RelationGetRelationName(rel)),
                                errdetail("The trigger searches the partition, where the partitioned table's "
                                          "policies do not apply.")));
        list_free(ancestors);
    }
    if (check_enable_rls(c->relid, InvalidOid, true) != RLS_ENABLED) return false;
    // A partition's own policies apply only to queries that name the partition: a query through a
    // partitioned table applies that table's policies alone. A user who may read the columns
    // through a partitioned table above (none of which has row-level security for the user, or it
    // was refused above) sees every row of the partition there, so nothing is hidden from it;
    // probing the partition would apply policies that user is not subject to, and fail with
    // 42501 when it has no SELECT on the partition itself.
    if (rel->rd_rel->relispartition && readable_through_ancestor(c, GetUserId())) return false;
    return true;
}

bool row_visible(TriggerConfig* c, Datum id) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsigs_flag_duplicates: SPI_connect failed");
    if (c->visible_plan == nullptr) {
        Oid argtype = c->id_type;
        SPIPlanPtr plan = SPI_prepare(probe_query(c->relid, c->id_att), 1, &argtype);
        if (plan == nullptr)
            elog(ERROR, "spotsigs_flag_duplicates: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
        if (SPI_keepplan(plan) != 0) elog(ERROR, "spotsigs_flag_duplicates: SPI_keepplan failed");
        c->visible_plan = plan;
    }
    // Read-only: the query runs under the active snapshot, the one the index search used.
    Datum args[1] = {id};
    int rc = SPI_execute_plan(c->visible_plan, args, nullptr, true, 1);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "spotsigs_flag_duplicates: row-security probe failed: %s", SPI_result_code_string(rc));
    bool visible = SPI_processed > 0;
    SPI_finish();
    return visible;
}

}  // namespace spotsigs::pg
