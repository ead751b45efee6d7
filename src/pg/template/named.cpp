// The templates content queries name (named.hpp): the backend's cache of prepared templates, the
// lookups of the stored version, and the visibility rule of spotsigs_stats.
//
// Why a name and not the template itself: a stored template can hold a hundred thousand
// signatures (about 1 MB), and a statement builds a query value for its index condition and again
// for the condition's recheck; copying and comparing that value cost more than the search. A
// version (analyzed_at, a new clock_timestamp for every analyze) names one template for good, so
// a backend prepares it once and answers every later query from the same copy.
#include "pg/template/named.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
}

#include <algorithm>
#include <cstring>

#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg {

namespace {

// The transaction that last wrote the store in this backend (spotsigs_analyze), else invalid.
LocalTransactionId store_written = InvalidLocalTransactionId;

}  // namespace

const SignatureSet* PreparedTemplate::set_for(size_t lookups) const {
    if (set_ == nullptr) {
        looked_up_ += lookups;
        if (looked_up_ >= hashes.size() / 4 && !hashes.empty())
            set_ = std::make_unique<SignatureSet>(hashes.data(), hashes.size());
    }
    return set_.get();
}

uint32_t PreparedTemplate::content_of(const MultisetView& doc, uint64_t* out_hashes, uint32_t* out_freqs,
                                      uint64_t* length) const {
    if (const SignatureSet* s = set_for(doc.size)) return spotsigs::content_of(doc, *s, out_hashes, out_freqs, length);
    return spotsigs::content_of(doc, hashes.data(), hashes.size(), out_hashes, out_freqs, length);
}

double PreparedTemplate::content_similarity(const MultisetView& qc, const MultisetView& b) const {
    if (const SignatureSet* s = set_for(b.size)) return spotsigs::content_similarity(qc, b, *s);
    return spotsigs::content_similarity(qc, b, hashes.data(), hashes.size());
}

bool snapshot_key(SnapKey* k) {
    *k = SnapKey{};
    if (!ActiveSnapshotSet()) return false;
    Snapshot s = GetActiveSnapshot();
    if (s->snapshot_type != SNAPSHOT_MVCC || s->suboverflowed) return false;
    const uint32 n = s->xcnt + (uint32)s->subxcnt;
    if (n > (uint32)SnapKey::kXids) return false;
    k->lxid = SPOTSIGS_MY_LXID();
    k->xmin = s->xmin;
    k->xmax = s->xmax;
    k->curcid = k->lxid == store_written ? s->curcid : InvalidCommandId;
    k->n = n;
    for (uint32 i = 0; i < s->xcnt; ++i) k->xids[i] = s->xip[i];
    for (int32 i = 0; i < s->subxcnt; ++i) k->xids[s->xcnt + (uint32)i] = s->subxip[i];
    std::sort(k->xids, k->xids + n);
    k->valid = true;
    return true;
}

bool same_snapshot(const SnapKey& a, const SnapKey& b) {
    return a.valid && b.valid && a.lxid == b.lxid && a.xmin == b.xmin && a.xmax == b.xmax && a.curcid == b.curcid &&
           a.n == b.n && std::equal(a.xids, a.xids + a.n, b.xids);
}

namespace {

// One (relation, column): what the store held for it under the snapshot `seen`, and the template
// of that version, prepared.
struct Entry {
    bool used;
    Oid rel;
    NameData column;
    bool found;
    TimestampTz version;       // found only
    TemplateRef tmpl;          // the template of tmpl_version, prepared (kept while found is unknown)
    TimestampTz tmpl_version;  // tmpl's version
    SnapKey seen;
    uint64 last_use;
};
constexpr int kEntries = 4;
Entry entries[kEntries];
uint64 clock = 0;

// The extension's schema, remembered; looked up again when the store is not found in it.
Oid ext_schema = InvalidOid;

// The store's OID, or InvalidOid when the catalog has none (an installation whose catalog
// predates it: no statistics).
Oid store_relid() {
    if (OidIsValid(ext_schema)) {
        Oid r = get_relname_relid("spotsigs_template_store", ext_schema);
        if (OidIsValid(r)) return r;
    }
    // The schema of the extension spotsigs, from its row in pg_extension.
    ext_schema = InvalidOid;
    Relation ext = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum("spotsigs"));
    SysScanDesc scan = systable_beginscan(ext, ExtensionNameIndexId, true, nullptr, 1, &key);
    HeapTuple tup = systable_getnext(scan);
    if (HeapTupleIsValid(tup)) ext_schema = ((Form_pg_extension)GETSTRUCT(tup))->extnamespace;
    systable_endscan(scan);
    table_close(ext, AccessShareLock);
    return OidIsValid(ext_schema) ? get_relname_relid("spotsigs_template_store", ext_schema) : InvalidOid;
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

// Reads the row of (rel, column) in the store under the active snapshot (the latest one when none
// is active) into e: found, version, and the template when its version is not the one e holds.
// Read directly, not through SQL: the store belongs to the extension and this lookup runs for
// every statement of a content query; the caller applies spotsigs_stats's rule itself.
void read_store(Oid rel, const char* column, Entry* e) {
    Oid store_id = store_relid();
    if (!OidIsValid(store_id)) {
        e->found = false;
        return;
    }
    Relation store = table_open(store_id, AccessShareLock);
    TupleDesc desc = RelationGetDescr(store);
    const AttrNumber a_rel = store_attnum(desc, "relation"), a_col = store_attnum(desc, "sig_column"),
                     a_tmpl = store_attnum(desc, "template"), a_at = store_attnum(desc, "analyzed_at");
    NameData name;
    namestrcpy(&name, column);
    ScanKeyData keys[2];
    ScanKeyInit(&keys[0], a_rel, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(rel));
    ScanKeyInit(&keys[1], a_col, BTEqualStrategyNumber, F_NAMEEQ, NameGetDatum(&name));
    const Oid pk = SPOTSIGS_PRIMARY_KEY_INDEX(store);
    Snapshot snap = ActiveSnapshotSet() ? GetActiveSnapshot() : GetLatestSnapshot();
    SysScanDesc scan = systable_beginscan(store, pk, OidIsValid(pk), snap, 2, keys);
    HeapTuple tup = systable_getnext(scan);
    bool found = false;
    TimestampTz version = 0;
    if (HeapTupleIsValid(tup)) {
        bool n1 = false, n2 = false;
        version = DatumGetTimestampTz(heap_getattr(tup, a_at, desc, &n1));
        Datum t = heap_getattr(tup, a_tmpl, desc, &n2);
        found = !n1 && !n2;
        if (found && !(e->tmpl != nullptr && e->tmpl_version == version)) {
            e->tmpl.reset();
            struct varlena* v = fetch_spotsig(t);
            TemplateRef prepared;
            pg_entry([&] {
                const MultisetView m = view_of(v);
                prepared = std::make_shared<const PreparedTemplate>(m.hashes, m.size);
                return Datum(0);
            });
            if ((Pointer)v != DatumGetPointer(t)) pfree(v);
            e->tmpl = std::move(prepared);
            e->tmpl_version = version;
        }
    }
    systable_endscan(scan);
    table_close(store, AccessShareLock);
    e->found = found;
    e->version = version;
}

// The entry of (rel, column), current for the active snapshot.
Entry* lookup(Oid rel, const char* column) {
    SnapKey key;
    snapshot_key(&key);
    Entry* e = nullptr;
    for (Entry& x : entries)
        if (x.used && x.rel == rel && std::strcmp(NameStr(x.column), column) == 0) e = &x;
    if (e != nullptr && same_snapshot(e->seen, key)) {
        e->last_use = ++clock;
        return e;
    }
    if (e == nullptr) {
        // The least recently used entry takes (rel, column).
        e = &entries[0];
        for (Entry& x : entries)
            if (!x.used || (e->used && x.last_use < e->last_use)) e = &x;
        e->used = false;
        e->found = false;
        e->tmpl.reset();
        e->rel = rel;
        namestrcpy(&e->column, column);
    }
    e->seen = SnapKey{};  // not current until read_store has run to its end
    e->used = true;
    read_store(rel, column, e);
    e->seen = key;
    e->last_use = ++clock;
    return e;
}

}  // namespace

void note_store_written() {
    store_written = SPOTSIGS_MY_LXID();
}

TemplateRef empty_template() {
    static TemplateRef empty;
    if (empty == nullptr)
        pg_entry([&] {
            empty = std::make_shared<const PreparedTemplate>(nullptr, 0);
            return Datum(0);
        });
    return empty;
}

bool template_visible(Oid rel, const char* column) {
    const AttrNumber att = get_attnum(rel, column);
    if (att == InvalidAttrNumber) return false;  // no such relation or column (or dropped)
    const Oid user = GetUserId();
    if (pg_class_aclcheck(rel, user, ACL_SELECT) != ACLCHECK_OK &&
        pg_attribute_aclcheck(rel, att, user, ACL_SELECT) != ACLCHECK_OK)
        return false;
    return check_enable_rls(rel, InvalidOid, true) != RLS_ENABLED;
}

void current_template(Oid rel, const char* column, bool* found, TimestampTz* version, TemplateRef* out) {
    Entry* e = lookup(rel, column);
    *found = e->found;
    *version = e->found ? e->version : 0;
    if (e->found) *out = e->tmpl;
    else out->reset();
}

TemplateRef named_template(Oid rel, const char* column, TimestampTz version) {
    if (!template_visible(rel, column))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied for the statistics of column %s of relation %s", column,
                               get_rel_name(rel) != nullptr ? quote_identifier(get_rel_name(rel)) : "(dropped)"),
                        errdetail("A content query may name only statistics that spotsigs_stats shows its user.")));
    Entry* e = lookup(rel, column);
    if (!e->found || e->version != version)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("the statistics this content query was made with are no longer stored for column %s of %s",
                        column, get_rel_name(rel) != nullptr ? quote_identifier(get_rel_name(rel)) : "(dropped)"),
                 errdetail("spotsigs_analyze has replaced the statistics it names since it was made."),
                 errhint("Make the query value again with spotsig_content_query.")));
    return e->tmpl;
}

}  // namespace spotsigs::pg
