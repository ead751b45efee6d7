// The spotsigs_query composite: its constructor spotsig_query(sig, threshold) and the operator
// function of `spotsig % spotsigs_query` (see query.hpp).
#include "pg/type/query.hpp"

extern "C" {
#include "access/htup_details.h"
#include "executor/executor.h"
#include "funcapi.h"
}

#include <vector>

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

// a % spotsig_content_query(q, rel, column): the content similarity of a and q without the
// query's template, >= its threshold; the query holds q's content already. NULL when a field of
// the query is NULL.
SPOTSIGS_FUNCTION(spotsig_content_similar) {
    struct varlena *qc, *t;
    double tau;
    if (!read_content_query(PG_GETARG_DATUM(1), &qc, &tau, &t)) PG_RETURN_NULL();
    struct varlena* a = fetch_spotsig(PG_GETARG_DATUM(0));
    double sim = 0;
    pg_entry([&] {
        // The query's content without the template once more, so the answer is the definition's
        // whatever way the value was made (the constructor has removed it already).
        MultisetView tv = view_of(t), qv = view_of(qc);
        std::vector<uint64_t> h(qv.size);
        std::vector<uint32_t> f(qv.size);
        spotsigs::Multiset m;
        uint64_t len = 0;
        uint32_t n = spotsigs::content_of(qv, tv.hashes, tv.size, h.data(), f.data(), &len);
        m.hashes.assign(h.begin(), h.begin() + n);
        m.freqs.assign(f.begin(), f.begin() + n);
        m.length = len;
        sim = spotsigs::content_similarity(m.view(), view_of(a), tv.hashes, tv.size);
        return Datum(0);
    });
    PG_RETURN_BOOL(sim >= tau);
}
