// The spotsigs_query composite: its constructor spotsig_query(sig, threshold) and the operator
// function of `spotsig % spotsigs_query` (see query.hpp).
#include "pg/type/query.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/template/content.hpp"
#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
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

namespace {

// The backend's prepared templates of values that carry one: a copy of each template's bytes and
// its preparation, the one used last at the back.
struct CarriedTemplate {
    std::string bytes;
    TemplateRef tmpl;
};
std::vector<CarriedTemplate> carried_templates;
constexpr size_t kCarriedTemplates = 2;

// The template value tmpl (a detoasted spotsig) prepared, from carried_templates.
TemplateRef carried_template(const struct varlena* tmpl) {
    const char* p = (const char*)tmpl;
    const size_t n = VARSIZE_ANY(tmpl);
    TemplateRef out;
    pg_entry([&] {
        for (size_t k = 0; k < carried_templates.size(); ++k) {
            CarriedTemplate& e = carried_templates[k];
            if (e.bytes.size() == n && std::memcmp(e.bytes.data(), p, n) == 0) {
                out = e.tmpl;
                std::rotate(carried_templates.begin() + k, carried_templates.begin() + k + 1, carried_templates.end());
                return Datum(0);
            }
        }
        MultisetView t = view_of(tmpl);
        CarriedTemplate e{std::string(p, n), std::make_shared<const PreparedTemplate>(t.hashes, t.size)};
        out = e.tmpl;
        if (carried_templates.size() == kCarriedTemplates) carried_templates.erase(carried_templates.begin());
        carried_templates.push_back(std::move(e));
        return Datum(0);
    });
    return out;
}

}  // namespace

bool read_content_query(Datum query, struct varlena** content, double* tau, TemplateRef* tmpl) {
    HeapTupleHeader t = DatumGetHeapTupleHeader(query);
    bool isnull[6] = {false, false, false, false, false, false};
    Datum f[6];
    for (int k = 0; k < 6; ++k) f[k] = GetAttributeByNum(t, (AttrNumber)(k + 1), &isnull[k]);
    if (isnull[0] || isnull[1]) return false;
    *tau = DatumGetFloat8(f[1]);
    check_threshold_value(*tau);
    const int named = (isnull[3] ? 0 : 1) + (isnull[4] ? 0 : 1) + (isnull[5] ? 0 : 1);
    if ((named != 0 && named != 3) || (named == 3 && !isnull[2]))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("a content query carries its template or names it by relation, column and version"),
                        errdetail("Set either the field template, or all of template_relation, template_column "
                                  "and template_version.")));
    if (isnull[2] && named == 0) return false;
    *content = fetch_spotsig(f[0]);
    if (!isnull[2]) {
        *tmpl = carried_template(fetch_spotsig(f[2]));
    } else {
        *tmpl = named_template(DatumGetObjectId(f[3]), NameStr(*DatumGetName(f[4])), DatumGetTimestampTz(f[5]));
    }
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

// The parsed query of spotsig_content_similar and spotsig_content_distance, kept across the calls
// of one expression (an index scan's recheck or a sequential scan calls it once per row with the
// same query): a copy of its bytes, to recognise it (a value names its template, so it is small;
// a value that carries one is compared whole), and its content (without the template), threshold
// and template.
struct ContentQueryCache {
    bool parsed;      // the fields below describe a value
    char* raw;        // a copy of the value's bytes
    uint32 raw_len;   // its length
    MultisetView qc;  // the content, arrays in fn_mcxt
    double tau;
    bool null_field;
    TemplateRef* tmpl;  // the template (new/delete), or null
};

// Frees the cache's template reference when the function's memory context goes away.
void free_content_query_cache(void* arg) {
    auto* c = static_cast<ContentQueryCache*>(arg);
    delete c->tmpl;
    c->tmpl = nullptr;
}

// The content similarity of the row in argument 0 to the content query in argument 1 (its parsed
// form cached in fn_extra); false when a field of the query is NULL. With decide, *sim is only on
// the right side of *tau: a bound of the similarity when the bound settles the comparison.
bool content_similarity_arg(FunctionCallInfo fcinfo, double* sim, double* tau, bool decide) {
    HeapTupleHeader th = PG_GETARG_HEAPTUPLEHEADER(1);
    const uint32 len = HeapTupleHeaderGetDatumLength(th);
    ContentQueryCache* c = (ContentQueryCache*)fcinfo->flinfo->fn_extra;
    const bool same = c != nullptr && c->parsed && c->raw_len == len && std::memcmp(c->raw, th, len) == 0;
    if (!same) {
        MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
        if (c == nullptr) {
            c = (ContentQueryCache*)palloc0(sizeof(ContentQueryCache));
            auto* cb = (MemoryContextCallback*)palloc0(sizeof(MemoryContextCallback));
            cb->func = free_content_query_cache;
            cb->arg = c;
            MemoryContextRegisterResetCallback(fcinfo->flinfo->fn_mcxt, cb);
            fcinfo->flinfo->fn_extra = c;
        }
        // The previous query's memory goes (a nested loop makes a new query per outer row).
        c->parsed = false;  // until filled (an error below leaves it so)
        if (c->raw != nullptr) pfree(c->raw);
        if (c->qc.hashes != nullptr) pfree((void*)c->qc.hashes);
        if (c->qc.freqs.data != nullptr) pfree((void*)c->qc.freqs.data);
        pg_entry([&] {
            delete c->tmpl;
            c->tmpl = nullptr;
            return Datum(0);
        });
        c->raw = nullptr;
        c->qc = MultisetView();
        struct varlena* qc;
        double tau = 0;
        TemplateRef tmpl;
        bool ok = read_content_query(PointerGetDatum(th), &qc, &tau, &tmpl);
        c->null_field = !ok;
        if (ok) {
            // The query's content without the template once more, so the answer is the
            // definition's whatever way the value was made (the constructors removed it already).
            MultisetView qv;
            pg_entry([&] {
                qv = view_of(qc);
                return Datum(0);
            });
            uint64* h = (uint64*)palloc(sizeof(uint64) * (qv.size > 0 ? qv.size : 1));
            uint32* f = (uint32*)palloc(sizeof(uint32) * (qv.size > 0 ? qv.size : 1));
            uint64_t qlen = 0;
            uint32 n = 0;
            pg_entry([&] {
                n = tmpl->content_of(qv, h, f, &qlen);
                c->tmpl = new TemplateRef(std::move(tmpl));
                return Datum(0);
            });
            c->qc.hashes = h;
            c->qc.freqs.data = reinterpret_cast<const unsigned char*>(f);
            c->qc.freqs.width = 4;
            c->qc.size = n;
            c->qc.length = qlen;
            c->tau = tau;
            // A field decompressed into a copy is not needed any more.
            const char* base = (const char*)th;
            if ((char*)qc < base || (char*)qc >= base + len) pfree(qc);
        }
        c->raw = (char*)palloc(len);
        std::memcpy(c->raw, th, len);
        c->raw_len = len;
        c->parsed = true;
        MemoryContextSwitchTo(old);
    }
    if (c->null_field) return false;
    struct varlena* a = fetch_spotsig(PG_GETARG_DATUM(0));
    pg_entry([&] {
        const MultisetView b = view_of(a);
        if (decide && !c->qc.empty()) {
            // The content similarity is fl(o / (|qc| + |bc| - o)), o the overlap of the query's
            // content with the row (its overlap with the row's content: qc holds no template
            // signature) and |bc| the row's content length, o <= |bc| <= |b|. A correctly rounded
            // division does not grow with its divisor, so the value lies between the two below;
            // when one of them settles the comparison with tau, the row's template part (a probe
            // per signature of the row) need not be counted.
            const uint64_t o = spotsigs::overlap(c->qc, b);
            const double lo = o == 0 ? 0.0 : static_cast<double>(o) / static_cast<double>(c->qc.length + b.length - o);
            const double hi = static_cast<double>(o) / static_cast<double>(c->qc.length);
            if (lo >= c->tau || hi < c->tau) {
                *sim = lo >= c->tau ? lo : hi;
                return Datum(0);
            }
        }
        *sim = (*c->tmpl)->content_similarity(c->qc, b);
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
    if (!content_similarity_arg(fcinfo, &sim, &tau, true)) PG_RETURN_NULL();
    PG_RETURN_BOOL(sim >= tau);
}

// a <-> spotsig_content_query(q, rel, column): 1 - the content similarity of a and q without the
// query's template (the threshold plays no part); NULL when a field of the query is NULL.
SPOTSIGS_FUNCTION(spotsig_content_distance) {
    double sim = 0, tau = 0;
    if (!content_similarity_arg(fcinfo, &sim, &tau, false)) PG_RETURN_NULL();
    PG_RETURN_FLOAT8(1.0 - sim);
}

namespace spotsigs::pg {

HeapTuple form_content_query(TupleDesc desc, struct varlena* sig, double tau, bool found, Oid rel, const char* column,
                             TimestampTz version, const TemplateRef& tmpl) {
    Datum values[6] = {Datum(0), Float8GetDatum(tau), Datum(0), Datum(0), Datum(0), Datum(0)};
    bool nulls[6] = {sig == nullptr, false, false, true, true, true};
    NameData name;
    if (found) {
        // Named: the template field is NULL.
        nulls[2] = true;
        nulls[3] = nulls[4] = nulls[5] = false;
        namestrcpy(&name, column);
        values[3] = ObjectIdGetDatum(rel);
        values[4] = NameGetDatum(&name);
        values[5] = TimestampTzGetDatum(version);
    } else {
        // The empty template, carried.
        values[2] = pg_entry([&] { return make_spotsig(MultisetView()); });
    }
    if (sig != nullptr) {
        MultisetView q;
        pg_entry([&] {
            q = view_of(sig);
            return Datum(0);
        });
        if (!found) {
            values[0] = PointerGetDatum(sig);
        } else {
            uint64* h = (uint64*)palloc(sizeof(uint64) * (q.size > 0 ? q.size : 1));
            uint32* f = (uint32*)palloc(sizeof(uint32) * (q.size > 0 ? q.size : 1));
            values[0] = pg_entry([&] {
                uint64_t len = 0;
                MultisetView m;
                m.size = tmpl->content_of(q, h, f, &len);
                m.length = len;
                m.hashes = h;
                m.freqs.data = reinterpret_cast<const unsigned char*>(f);
                m.freqs.width = 4;
                return make_spotsig(m);
            });
        }
    }
    return heap_form_tuple(desc, values, nulls);
}

}  // namespace spotsigs::pg

namespace spotsigs::pg {

ResultMemo* result_memo(FunctionCallInfo fcinfo, const char* fn) {
    ResultMemo* c = (ResultMemo*)fcinfo->flinfo->fn_extra;
    if (c != nullptr) return c;
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s must return the composite type spotsigs_content_query", fn)));
    c = (ResultMemo*)MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ResultMemo));
    MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
    c->desc = BlessTupleDesc(CreateTupleDescCopy(desc));
    MemoryContextSwitchTo(old);
    fcinfo->flinfo->fn_extra = c;
    return c;
}

HeapTupleHeader memo_result(const ResultMemo* m, Oid rel, const char* column, const struct varlena* sig,
                            double setting) {
    if (!m->valid || m->user != GetUserId() || m->rel != rel || m->setting != setting ||
        std::strcmp(NameStr(m->column), column) != 0)
        return nullptr;
    SnapKey now;
    if (!snapshot_key(&now) || !same_snapshot(now, m->snap)) return nullptr;
    if (sig == nullptr ? m->last_sig != nullptr
                       : m->last_sig == nullptr || VARSIZE_ANY(sig) != VARSIZE_ANY(m->last_sig) ||
                             std::memcmp(sig, m->last_sig, VARSIZE_ANY(sig)) != 0)
        return nullptr;
    return m->last->t_data;
}

HeapTupleHeader memo_keep(ResultMemo* m, MemoryContext cxt, HeapTuple tup, Oid rel, const char* column,
                          const struct varlena* sig, double setting) {
    m->valid = false;
    if (m->last != nullptr) heap_freetuple(m->last);
    if (m->last_sig != nullptr) pfree(m->last_sig);
    m->last = nullptr;
    m->last_sig = nullptr;
    // heap_form_tuple set the datum fields of the header, and no field is stored externally, so
    // the copy's t_data is the composite datum as it is.
    MemoryContext old = MemoryContextSwitchTo(cxt);
    m->last = heap_copytuple(tup);
    if (sig != nullptr) {
        m->last_sig = (struct varlena*)palloc(VARSIZE_ANY(sig));
        std::memcpy(m->last_sig, sig, VARSIZE_ANY(sig));
    }
    MemoryContextSwitchTo(old);
    if (snapshot_key(&m->snap)) {
        m->user = GetUserId();
        m->rel = rel;
        namestrcpy(&m->column, column);
        m->setting = setting;
        m->valid = true;
    }
    return m->last->t_data;
}

}  // namespace spotsigs::pg

// spotsig_content_query(sig, rel, sig_column) -> spotsigs_content_query: sig without the template
// t stored for (rel, sig_column), at 0.4, naming t by (rel, sig_column, its analyzed_at) when
// spotsigs_stats shows it to the caller; else sig with the empty template (also for a NULL rel or
// column). The content field is NULL for a NULL sig. STABLE: the statistics are those the
// statement's snapshot sees; a call with the arguments of the last one under the same snapshot
// and user (the recheck of one query's rows calls it for every row) returns the same value.
SPOTSIGS_FUNCTION(spotsig_content_query) {
    MemoryContext fcxt = fcinfo->flinfo->fn_mcxt;
    ResultMemo* c = result_memo(fcinfo, "spotsig_content_query");
    const bool no_table = PG_ARGISNULL(1) || PG_ARGISNULL(2);
    const Oid rel = no_table ? InvalidOid : PG_GETARG_OID(1);
    const char* column = no_table ? "" : NameStr(*PG_GETARG_NAME(2));
    struct varlena* sig = PG_ARGISNULL(0) ? nullptr : fetch_spotsig(PG_GETARG_DATUM(0));
    HeapTupleHeader kept = memo_result(c, rel, column, sig, spotsigs::kContentThreshold);
    if (kept != nullptr) PG_RETURN_DATUM(PointerGetDatum(kept));
    bool found = false;
    TimestampTz version = 0;
    TemplateRef tmpl;
    if (!no_table && template_visible(rel, column)) current_template(rel, column, &found, &version, &tmpl);
    HeapTuple tup = form_content_query(c->desc, sig, spotsigs::kContentThreshold, found, rel, column, version, tmpl);
    tmpl.reset();
    PG_RETURN_DATUM(PointerGetDatum(memo_keep(c, fcxt, tup, rel, column, sig, spotsigs::kContentThreshold)));
}
