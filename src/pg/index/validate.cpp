// amvalidate: an operator class of spotsigs has % (strategy 1, search) and <-> (strategy 2,
// ordering by float8), both over the indexed type, optionally % against a composite query with
// its own threshold (strategy 3, spotsigs_query) or a content query (strategy 4,
// spotsigs_content_query), <-> against a content query (strategy 5, ordering by float8), and no
// support functions.
#include "pg/index/index.hpp"

extern "C" {
#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type_d.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
}

namespace spotsigs::pg::index {

bool amvalidate(Oid opclassoid) {
    bool ok = true;
    HeapTuple ct = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
    if (!HeapTupleIsValid(ct)) elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
    Form_pg_opclass cls = (Form_pg_opclass)GETSTRUCT(ct);
    Oid family = cls->opcfamily;
    Oid intype = cls->opcintype;
    char* name = pstrdup(NameStr(cls->opcname));
    ReleaseSysCache(ct);

    CatCList* ops = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(family));
    bool have[6] = {false, false, false, false, false, false};
    for (int i = 0; i < ops->n_members; ++i) {
        Form_pg_amop op = (Form_pg_amop)GETSTRUCT(&ops->members[i]->tuple);
        bool good;
        if (op->amopstrategy == kStrategySimilar)
            good = op->amoppurpose == AMOP_SEARCH && check_amop_signature(op->amopopr, BOOLOID, intype, intype);
        else if (op->amopstrategy == kStrategySimilarQuery || op->amopstrategy == kStrategyContentQuery)
            good = op->amoppurpose == AMOP_SEARCH && type_is_rowtype(op->amoprighttype) &&
                   check_amop_signature(op->amopopr, BOOLOID, intype, op->amoprighttype);
        else if (op->amopstrategy == kStrategyDistance)
            good = op->amoppurpose == AMOP_ORDER && check_amop_signature(op->amopopr, FLOAT8OID, intype, intype);
        else if (op->amopstrategy == kStrategyContentDistance)
            good = op->amoppurpose == AMOP_ORDER && type_is_rowtype(op->amoprighttype) &&
                   check_amop_signature(op->amopopr, FLOAT8OID, intype, op->amoprighttype);
        else good = false;
        if (!good) {
            ereport(INFO, (errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
                           errmsg("spotsigs operator class \"%s\" has an invalid operator %s at strategy %d", name,
                                  format_operator(op->amopopr), op->amopstrategy)));
            ok = false;
        } else {
            have[op->amopstrategy] = true;
        }
    }
    ReleaseSysCacheList(ops);
    if (!have[kStrategySimilar]) {
        ereport(INFO, (errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
                       errmsg("spotsigs operator class \"%s\" lacks the %% operator (strategy 1)", name)));
        ok = false;
    }
    CatCList* procs = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(family));
    if (procs->n_members > 0) {
        ereport(INFO,
                (errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
                 errmsg("spotsigs operator class \"%s\" has support functions; the access method uses none", name)));
        ok = false;
    }
    ReleaseSysCacheList(procs);
    return ok;
}

}  // namespace spotsigs::pg::index
