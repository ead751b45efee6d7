// The content measure in the trigger. C-style PostgreSQL code: no C++ object with a destructor.
#include "pg/trigger/trigger_template.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/index/index.hpp"
#include "pg/template/store.hpp"

namespace spotsigs::pg {

void refresh_trigger_template(TriggerConfig* c, Relation rel) {
    const LocalTransactionId lxid = SPOTSIGS_MY_LXID();
    const TimestampTz stmt = GetCurrentStatementStartTimestamp();
    if (c->tmpl_lxid == lxid && c->tmpl_stmt == stmt) return;
    MemoryContext fresh = AllocSetContextCreate(c->cxt, "spotsigs trigger template", ALLOCSET_DEFAULT_SIZES);
    StoredTemplate t;
    const char* column = NameStr(TupleDescAttr(RelationGetDescr(rel), c->sig_att - 1)->attname);
    stored_template(c->ext_schema, c->relid, column, fresh, &t);
    if (t.found == c->tmpl_found && (!t.found || t.at == c->tmpl_at)) {
        MemoryContextDelete(fresh);  // unchanged: keep the copy already held
    } else {
        if (c->tmpl_cxt != nullptr) MemoryContextDelete(c->tmpl_cxt);
        c->tmpl_cxt = fresh;
        c->tmpl_found = t.found;
        c->tmpl = t.found ? t.hashes : nullptr;
        c->ntmpl = t.found ? t.n : 0;
        c->tmpl_at = t.found ? t.at : 0;
        c->tmpl_rows = t.found ? t.rows : 0;
        c->refresh_check = 0;
    }
    c->tmpl_lxid = lxid;
    c->tmpl_stmt = stmt;
}

MultisetView trigger_content(const TriggerConfig* c, const MultisetView& q) {
    return without_template(q, c->tmpl, c->ntmpl);
}

}  // namespace spotsigs::pg
