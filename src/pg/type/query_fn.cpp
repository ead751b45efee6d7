// The spotsigs_query composite: its constructor spotsig_query(sig, threshold) and the operator
// function of `spotsig % spotsigs_query` (see query.hpp).
#include "pg/type/query.hpp"

extern "C" {
#include "access/htup_details.h"
#include "executor/executor.h"
#include "funcapi.h"
}

#include <cstring>

#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace spotsigs::pg {

bool read_query(Datum query, struct varlena** sig, double* tau) {
    HeapTupleHeader t = DatumGetHeapTupleHeader(query);
    bool sig_null = false, tau_null = false;
    Datum s = GetAttributeByNum(t, 1, &sig_null);
    Datum th = GetAttributeByNum(t, 2, &tau_null);
    if (sig_null || tau_null) return false;
    *tau = DatumGetFloat8(th);
    check_threshold_value(*tau);
    *sig = fetch_spotsig(s);
    return true;
}

bool read_content_query(Datum query, struct varlena** content, double* tau, struct varlena** tmpl) {
    HeapTupleHeader t = DatumGetHeapTupleHeader(query);
    bool isnull[3] = {false, false, false};
    Datum c = GetAttributeByNum(t, 1, &isnull[0]);
    Datum th = GetAttributeByNum(t, 2, &isnull[1]);
    Datum tm = GetAttributeByNum(t, 3, &isnull[2]);
    if (isnull[0] || isnull[1] || isnull[2]) return false;
    *tau = DatumGetFloat8(th);
    check_threshold_value(*tau);
    *content = fetch_spotsig(c);
    *tmpl = fetch_spotsig(tm);
    return true;
}

}  // namespace spotsigs::pg

// spotsig_query(sig, threshold) RETURNS spotsigs_query.
SPOTSIGS_FUNCTION(spotsig_query) {
    double tau = PG_GETARG_FLOAT8(1);
    check_threshold_value(tau);
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("spotsig_query must return the composite type spotsigs_query")));
    desc = BlessTupleDesc(desc);
    Datum values[2] = {PG_GETARG_DATUM(0), Float8GetDatum(tau)};
    bool nulls[2] = {false, false};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

// a % spotsig_query(q, tau): similarity(a, q) >= tau; NULL when a field of the query is NULL.
SPOTSIGS_FUNCTION(spotsig_similar_query) {
    struct varlena* q;
    double tau;
    if (!read_query(PG_GETARG_DATUM(1), &q, &tau)) PG_RETURN_NULL();
    struct varlena* a = fetch_spotsig(PG_GETARG_DATUM(0));
    double sim = 0;
    pg_entry([&] {
        sim = similarity(view_of(a), view_of(q));
        return Datum(0);
    });
    PG_RETURN_BOOL(sim >= tau);
}

namespace {

// The parsed query of spotsig_content_similar and spotsig_content_distance, kept across the calls of one expression (an
// index scan's recheck or a sequential scan calls it once per row with the same query): its bytes, to recognise it, and
// its content (without the template), threshold and template.
struct ContentQueryCache {
    char* raw;  // the composite's bytes, or NULL
    uint32 raw_len;
    MultisetView qc;  // the content, arrays in fn_mcxt
    double tau;
    struct varlena* tmpl;  // detoasted: inside raw, or a copy in fn_mcxt (tmpl_owned)
    bool tmpl_owned;
    bool null_field;
};

// The content similarity of the row in argument 0 to the content query in argument 1 (its parsed
// form cached in fn_extra); false when a field of the query is NULL.
bool content_similarity_arg(FunctionCallInfo fcinfo, double* sim, double* tau) {
    HeapTupleHeader th = PG_GETARG_HEAPTUPLEHEADER(1);
    const uint32 len = HeapTupleHeaderGetDatumLength(th);
    ContentQueryCache* c = (ContentQueryCache*)fcinfo->flinfo->fn_extra;
    if (c == nullptr || c->raw == nullptr || c->raw_len != len || std::memcmp(c->raw, th, len) != 0) {
        MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
        if (c == nullptr) {
            c = (ContentQueryCache*)palloc0(sizeof(ContentQueryCache));
            fcinfo->flinfo->fn_extra = c;
        }
        // The previous query's memory goes (a nested loop makes a new query per outer row).
        if (c->raw != nullptr) pfree(c->raw);
        if (c->qc.hashes != nullptr) pfree((void*)c->qc.hashes);
        if (c->qc.freqs.data != nullptr) pfree((void*)c->qc.freqs.data);
        if (c->tmpl_owned) pfree(c->tmpl);
        c->raw = nullptr;  // invalid until filled (an error below leaves it so)
        c->qc = MultisetView();
        c->tmpl = nullptr;
        c->tmpl_owned = false;
        // The fields are read from a copy that lives as long as the cache.
        char* raw = (char*)palloc(len);
        std::memcpy(raw, th, len);
        struct varlena *qc, *t;
        double tau = 0;
        bool ok = read_content_query(PointerGetDatum(raw), &qc, &tau, &t);
        c->null_field = !ok;
        if (ok) {
            // The query's content without the template once more, so the answer is the
            // definition's whatever way the value was made (the constructor removed it already).
            MultisetView qv, tv;
            pg_entry([&] {
                qv = view_of(qc);
                tv = view_of(t);
                return Datum(0);
            });
            uint64* h = (uint64*)palloc(sizeof(uint64) * (qv.size > 0 ? qv.size : 1));
            uint32* f = (uint32*)palloc(sizeof(uint32) * (qv.size > 0 ? qv.size : 1));
            uint64_t qlen = 0;
            uint32 n = 0;
            pg_entry([&] {
                n = spotsigs::content_of(qv, tv.hashes, tv.size, h, f, &qlen);
                return Datum(0);
            });
            c->qc.hashes = h;
            c->qc.freqs.data = reinterpret_cast<const unsigned char*>(f);
            c->qc.freqs.width = 4;
            c->qc.size = n;
            c->qc.length = qlen;
            c->tau = tau;
            c->tmpl = t;
            c->tmpl_owned = (char*)t < raw || (char*)t >= raw + len;  // decompressed into a copy
            if ((char*)qc < raw || (char*)qc >= raw + len) pfree(qc);
        }
        c->raw_len = len;
        c->raw = raw;
        MemoryContextSwitchTo(old);
    }
    if (c->null_field) return false;
    struct varlena* a = fetch_spotsig(PG_GETARG_DATUM(0));
    pg_entry([&] {
        MultisetView tv = view_of(c->tmpl);
        *sim = spotsigs::content_similarity(c->qc, view_of(a), tv.hashes, tv.size);
        return Datum(0);
    });
    *tau = c->tau;
    return true;
}

}  // namespace

// a % spotsig_content_query(q, rel, column): the content similarity of a and q without the
// query's template, >= its threshold; the query holds q's content already. NULL when a field of
// the query is NULL.
SPOTSIGS_FUNCTION(spotsig_content_similar) {
    double sim = 0, tau = 0;
    if (!content_similarity_arg(fcinfo, &sim, &tau)) PG_RETURN_NULL();
    PG_RETURN_BOOL(sim >= tau);
}

// a <-> spotsig_content_query(q, rel, column): 1 - the content similarity of a and q without the
// query's template (the threshold plays no part); NULL when a field of the query is NULL.
SPOTSIGS_FUNCTION(spotsig_content_distance) {
    double sim = 0, tau = 0;
    if (!content_similarity_arg(fcinfo, &sim, &tau)) PG_RETURN_NULL();
    PG_RETURN_FLOAT8(1.0 - sim);
}
