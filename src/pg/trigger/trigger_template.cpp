// The content measure in the trigger. C-style PostgreSQL code: no C++ object with a destructor.
#include "pg/trigger/trigger_template.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include "core/template/content.hpp"
#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/index/index.hpp"
#include "pg/template/store.hpp"

namespace spotsigs::pg {

namespace {

// Deletes the SignatureSet a template context's callback was registered for.
void delete_signature_set(void* arg) {
    delete static_cast<const SignatureSet*>(arg);
}

// The template t[0 .. n) as a SignatureSet that lives as long as cxt: built once per template, it
// answers membership with a bitmap test and a hash probe where the array needs a search. NULL
// when n is 0.
const SignatureSet* template_set(const uint64* t, size_t n, MemoryContext cxt) {
    if (n == 0) return nullptr;
    auto* cb = (MemoryContextCallback*)MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
    const SignatureSet* set = nullptr;
    pg_entry([&] {
        set = new SignatureSet(t, n);
        return Datum(0);
    });
    cb->func = delete_signature_set;
    cb->arg = const_cast<SignatureSet*>(set);
    MemoryContextRegisterResetCallback(cxt, cb);
    return set;
}

}  // namespace

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
        c->tmpl_set = template_set(c->tmpl, c->ntmpl, fresh);
        c->tmpl_at = t.found ? t.at : 0;
        c->tmpl_rows = t.found ? t.rows : 0;
        c->refresh_check = 0;
    }
    c->tmpl_lxid = lxid;
    c->tmpl_stmt = stmt;
}

MultisetView trigger_content(const TriggerConfig* c, const MultisetView& q) {
    if (c->tmpl_set == nullptr) return q;
    uint64* hashes = (uint64*)palloc(sizeof(uint64) * (q.size > 0 ? q.size : 1));
    uint32* freqs = (uint32*)palloc(sizeof(uint32) * (q.size > 0 ? q.size : 1));
    MultisetView out;
    pg_entry([&] {
        uint64_t length = 0;
        out.size = content_of(q, *static_cast<const SignatureSet*>(c->tmpl_set), hashes, freqs, &length);
        out.length = length;
        return Datum(0);
    });
    out.hashes = hashes;
    out.freqs.data = reinterpret_cast<const unsigned char*>(freqs);
    out.freqs.width = 4;
    return out;
}

}  // namespace spotsigs::pg
