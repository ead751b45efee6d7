// The content measure in the trigger. C-style PostgreSQL code: no C++ object with a destructor.
#include "pg/trigger/trigger_template.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "storage/proc.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <cstring>

#include "core/template/content.hpp"
#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/type/datum.hpp"

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

// The attribute number of the store's column name.
AttrNumber store_attnum(TupleDesc desc, const char* name) {
    for (int i = 0; i < desc->natts; ++i) {
        Form_pg_attribute a = TupleDescAttr(desc, i);
        if (!a->attisdropped && std::strcmp(NameStr(a->attname), name) == 0) return a->attnum;
    }
    elog(ERROR, "spotsigs: the store has no column %s", name);
    return InvalidAttrNumber;
}

// Makes c hold the template of the store's row `tup` (version at, on rows rows), or none when tup
// is NULL: the hashes copied into a new context, and their SignatureSet built there.
void take_template(TriggerConfig* c, HeapTuple tup, TupleDesc desc, AttrNumber a_tmpl, TimestampTz at, int64 rows) {
    MemoryContext fresh = nullptr;
    uint64* hashes = nullptr;
    size_t n = 0;
    if (tup != nullptr) {
        fresh = AllocSetContextCreate(c->cxt, "spotsigs trigger template", ALLOCSET_DEFAULT_SIZES);
        bool isnull = false;
        Datum t = heap_getattr(tup, a_tmpl, desc, &isnull);
        struct varlena* v = fetch_spotsig(t);
        const uint64* h = nullptr;
        pg_entry([&] {
            MultisetView m = view_of(v);
            n = m.size;
            h = m.hashes;
            return Datum(0);
        });
        hashes = (uint64*)MemoryContextAlloc(fresh, sizeof(uint64) * (n > 0 ? n : 1));
        if (n > 0) std::memcpy(hashes, h, sizeof(uint64) * n);
        if ((Pointer)v != DatumGetPointer(t)) pfree(v);
    }
    const SignatureSet* set = tup != nullptr ? template_set(hashes, n, fresh) : nullptr;
    if (c->tmpl_cxt != nullptr) MemoryContextDelete(c->tmpl_cxt);
    c->tmpl_cxt = fresh;
    c->tmpl_found = tup != nullptr;
    c->tmpl = hashes;
    c->ntmpl = n;
    c->tmpl_set = set;
    c->tmpl_at = tup != nullptr ? at : 0;
    c->tmpl_rows = tup != nullptr ? rows : 0;
    c->refresh_check = 0;
}

}  // namespace

void refresh_trigger_template(TriggerConfig* c, Relation rel) {
    const LocalTransactionId lxid = SPOTSIGS_MY_LXID();
    const TimestampTz stmt = GetCurrentStatementStartTimestamp();
    if (c->tmpl_lxid == lxid && c->tmpl_stmt == stmt) return;
    // The store's row of (table, column) read directly under the active snapshot, as the statistics
    // lookup of a content query reads it (pg/template/named.cpp): no statement to plan, and the
    // template (up to a few MB, toasted) is detoasted only when its version (analyzed_at, new for
    // every analyze) is not the one held. An installation whose catalog predates the store (the
    // library updated, ALTER EXTENSION not yet run) has no statistics.
    const Oid store_id = get_relname_relid("spotsigs_template_store", c->ext_schema);
    if (!OidIsValid(store_id)) {
        if (c->tmpl_found) take_template(c, nullptr, nullptr, 0, 0, 0);
    } else {
        Relation store = table_open(store_id, AccessShareLock);
        TupleDesc desc = RelationGetDescr(store);
        const AttrNumber a_rel = store_attnum(desc, "relation"), a_col = store_attnum(desc, "sig_column"),
                         a_rows = store_attnum(desc, "rows_analyzed"), a_tmpl = store_attnum(desc, "template"),
                         a_at = store_attnum(desc, "analyzed_at");
        NameData column;
        namestrcpy(&column, NameStr(TupleDescAttr(RelationGetDescr(rel), c->sig_att - 1)->attname));
        ScanKeyData keys[2];
        ScanKeyInit(&keys[0], a_rel, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(c->relid));
        ScanKeyInit(&keys[1], a_col, BTEqualStrategyNumber, F_NAMEEQ, NameGetDatum(&column));
        const Oid pk = SPOTSIGS_PRIMARY_KEY_INDEX(store);
        Snapshot snap = ActiveSnapshotSet() ? GetActiveSnapshot() : GetLatestSnapshot();
        SysScanDesc scan = systable_beginscan(store, pk, OidIsValid(pk), snap, 2, keys);
        HeapTuple tup = systable_getnext(scan);
        if (HeapTupleIsValid(tup)) {
            bool n1 = false, n2 = false;
            const TimestampTz at = DatumGetTimestampTz(heap_getattr(tup, a_at, desc, &n1));
            const int64 rows = DatumGetInt64(heap_getattr(tup, a_rows, desc, &n2));
            if (!c->tmpl_found || at != c->tmpl_at) take_template(c, tup, desc, a_tmpl, at, rows);
        } else if (c->tmpl_found) {
            take_template(c, nullptr, nullptr, 0, 0, 0);
        }
        systable_endscan(scan);
        table_close(store, AccessShareLock);
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
