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

namespace {

// The backend's prepared templates: a copy of each value's bytes and its set, the one used last
// at the back.
struct PreparedTemplate {
    std::string bytes;
    std::shared_ptr<const SignatureSet> set;
};
std::vector<PreparedTemplate> prepared_templates;
constexpr size_t kPreparedTemplates = 2;

}  // namespace

std::shared_ptr<const SignatureSet> template_set(const struct varlena* tmpl) {
    const char* p = (const char*)tmpl;
    const size_t n = VARSIZE_ANY(tmpl);
    std::shared_ptr<const SignatureSet> out;
    pg_entry([&] {
        for (size_t k = 0; k < prepared_templates.size(); ++k) {
            PreparedTemplate& e = prepared_templates[k];
            if (e.bytes.size() == n && std::memcmp(e.bytes.data(), p, n) == 0) {
                out = e.set;
                std::rotate(prepared_templates.begin() + k, prepared_templates.begin() + k + 1,
                            prepared_templates.end());
                return Datum(0);
            }
        }
        MultisetView t = view_of(tmpl);
        PreparedTemplate e{std::string(p, n), std::make_shared<const SignatureSet>(t.hashes, t.size)};
        out = e.set;
        if (prepared_templates.size() == kPreparedTemplates) prepared_templates.erase(prepared_templates.begin());
        prepared_templates.push_back(std::move(e));
        return Datum(0);
    });
    return out;
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

// The results spotsig_content_query holds in its memory, each with a serial number (never 0, never
// reused). A registered address holds the same bytes until it is unregistered (the constructor
// unregisters a result before it frees it, also when its memory goes with the expression's), so
// an operator that parsed the value at that address under that serial need not compare the
// bytes again (with a large template they are most of the work of a rechecked row), and the
// template's prepared set travels with the value to the operators and the index key.
struct RegisteredValue {
    const void* p;
    uint64 serial;
    std::shared_ptr<const SignatureSet> set;  // its template, prepared
};
std::vector<RegisteredValue> registered_values;
uint64 next_value_serial = 1;

// Registers p, whose template is prepared as set (pg_entry: may allocate), and returns its serial.
uint64 register_value(const void* p, std::shared_ptr<const SignatureSet> set) {
    uint64 serial = next_value_serial++;
    pg_entry([&] {
        registered_values.push_back(RegisteredValue{p, serial, std::move(set)});
        return Datum(0);
    });
    return serial;
}

// Forgets p (noexcept).
void unregister_value(const void* p) noexcept {
    for (size_t k = 0; k < registered_values.size(); ++k)
        if (registered_values[k].p == p) {
            registered_values[k] = std::move(registered_values.back());
            registered_values.pop_back();
            return;
        }
}

// The serial of p, or 0 when p is not a registered result; *set (when not null) gets its prepared
// template.
uint64 registered_serial(const void* p, std::shared_ptr<const SignatureSet>* set = nullptr) noexcept {
    for (const RegisteredValue& v : registered_values)
        if (v.p == p) {
            if (set != nullptr) *set = v.set;
            return v.serial;
        }
    return 0;
}

// The parsed query of spotsig_content_similar and spotsig_content_distance, kept across the calls of one expression (an
// index scan's recheck or a sequential scan calls it once per row with the same query): its bytes, to recognise it, and
// its content (without the template), threshold and template.
struct ContentQueryCache {
    bool parsed;      // the fields below describe a value
    char* raw;        // a copy of the value's bytes when it is not a registered result, or NULL
    uint32 raw_len;   // its length
    uint64 serial;    // the registered serial of the value parsed, or 0
    MultisetView qc;  // the content, arrays in fn_mcxt
    double tau;
    bool null_field;
    std::shared_ptr<const spotsigs::SignatureSet>* set;  // the template's signatures (new/delete), or null
};

// Frees the cache's set when the function's memory context goes away.
void free_content_query_cache(void* arg) {
    auto* c = static_cast<ContentQueryCache*>(arg);
    delete c->set;
    c->set = nullptr;
}

// The content similarity of the row in argument 0 to the content query in argument 1 (its parsed
// form cached in fn_extra); false when a field of the query is NULL.
bool content_similarity_arg(FunctionCallInfo fcinfo, double* sim, double* tau) {
    HeapTupleHeader th = PG_GETARG_HEAPTUPLEHEADER(1);
    const uint32 len = HeapTupleHeaderGetDatumLength(th);
    ContentQueryCache* c = (ContentQueryCache*)fcinfo->flinfo->fn_extra;
    // The same value as parsed: by its registered serial (the constructor's result, unchanged
    // while registered), else by its bytes.
    std::shared_ptr<const SignatureSet> registered_set;
    const uint64 serial = registered_serial(th, &registered_set);
    const bool same = c != nullptr && c->parsed &&
                      ((serial != 0 && serial == c->serial) ||
                       (c->raw != nullptr && c->raw_len == len && std::memcmp(c->raw, th, len) == 0));
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
            delete c->set;
            c->set = nullptr;
            return Datum(0);
        });
        c->raw = nullptr;
        c->qc = MultisetView();
        struct varlena *qc, *t;
        double tau = 0;
        bool ok = read_content_query(PointerGetDatum(th), &qc, &tau, &t);
        c->null_field = !ok;
        if (ok) {
            // The query's content without the template once more, so the answer is the
            // definition's whatever way the value was made (the constructor removed it already).
            std::shared_ptr<const spotsigs::SignatureSet> set =
                registered_set != nullptr ? registered_set : template_set(t);
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
                n = spotsigs::content_of(qv, *set, h, f, &qlen);
                c->set = new std::shared_ptr<const spotsigs::SignatureSet>(std::move(set));
                return Datum(0);
            });
            c->qc.hashes = h;
            c->qc.freqs.data = reinterpret_cast<const unsigned char*>(f);
            c->qc.freqs.width = 4;
            c->qc.size = n;
            c->qc.length = qlen;
            c->tau = tau;
            // Fields decompressed into copies are not needed any more.
            const char* base = (const char*)th;
            if ((char*)qc < base || (char*)qc >= base + len) pfree(qc);
            if ((char*)t < base || (char*)t >= base + len) pfree(t);
        }
        // A value that is not a registered result is recognised by its bytes: keep a copy.
        if (serial == 0) {
            c->raw = (char*)palloc(len);
            std::memcpy(c->raw, th, len);
        }
        c->raw_len = len;
        c->serial = serial;
        c->parsed = true;
        MemoryContextSwitchTo(old);
    }
    if (c->null_field) return false;
    struct varlena* a = fetch_spotsig(PG_GETARG_DATUM(0));
    pg_entry([&] {
        *sim = spotsigs::content_similarity(c->qc, view_of(a), **c->set);
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

namespace {

// What spotsig_content_query keeps across the calls of one expression (a scan rechecking its
// index condition evaluates the constructor again for every row): the template of the last
// (relation, column) asked for, read once, and the result's row type.
struct ContentCtorCache {
    bool valid;  // rel, column and last are set
    Oid rel;
    NameData column;
    TupleDesc desc;  // blessed, in fn_mcxt
    // The last result (in fn_mcxt), whose template field is the template of (rel, column), and
    // the sig it was made of (detoasted, in fn_mcxt; null for a NULL sig): the same sig again
    // (the recheck of one query's rows) returns it as it is.
    HeapTuple last;  // its t_data is the composite datum, registered (register_value)
    struct varlena* last_sig;
};

// Unregisters the constructor's last result when the expression's memory goes.
void forget_last_result(void* arg) {
    auto* c = static_cast<ContentCtorCache*>(arg);
    if (c->last != nullptr) unregister_value(c->last->t_data);
    c->last = nullptr;
}

// The backend's prepared lookup of a template in spotsigs_stats, for the extension's schema it
// was prepared in (the plan cache replans it when the view changes).
SPIPlanPtr template_plan = nullptr;
Oid template_plan_schema = InvalidOid;

// The templates the backend read last (TopMemoryContext), by (schema, relation, column) and the
// analyzed_at of the statistics they came from: a stored template changes only with a new
// analyze, which stores a new analyzed_at, so an equal one names the same template. Whether the
// caller may see it is asked of spotsigs_stats at every lookup.
struct TemplateCacheEntry {
    Oid nsp;
    Oid rel;
    NameData column;
    TimestampTz at;
    struct varlena* tmpl;
    std::shared_ptr<const SignatureSet> set;  // tmpl prepared, or null until asked for
    uint64 last_use;
};
constexpr int kTemplateCache = 4;
TemplateCacheEntry template_cache[kTemplateCache];
uint64 template_clock = 0;

// The last lookup's answer, for a lookup of the same (schema, relation, column) by the same user in
// the same transaction under a snapshot with the same xmin, xmax and command id: such a lookup
// sees the same rows of the store and the same catalog (a change committed since, or made by
// this transaction, would change the snapshot), so it would find the same answer. One statement
// looks up twice (its index condition, and the condition's recheck).
struct TemplateMemo {
    bool valid;
    LocalTransactionId lxid;
    TransactionId xmin, xmax;
    CommandId curcid;
    Oid user, nsp, rel;
    NameData column;
    bool found;      // else the caller sees no template: the empty value
    TimestampTz at;  // analyzed_at of the template found
};
TemplateMemo template_memo;

// Fills *m with the identity of a lookup now; false when there is no active snapshot.
bool memo_key(TemplateMemo* m, Oid nsp, Oid rel, Name column) {
    if (!ActiveSnapshotSet()) return false;
    Snapshot snap = GetActiveSnapshot();
    m->lxid = SPOTSIGS_MY_LXID();
    m->xmin = snap->xmin;
    m->xmax = snap->xmax;
    m->curcid = snap->curcid;
    m->user = GetUserId();
    m->nsp = nsp;
    m->rel = rel;
    namestrcpy(&m->column, NameStr(*column));
    return true;
}

// True when the memo answers the lookup k.
bool memo_matches(const TemplateMemo& m, const TemplateMemo& k) {
    return m.valid && m.lxid == k.lxid && m.xmin == k.xmin && m.xmax == k.xmax && m.curcid == k.curcid &&
           m.user == k.user && m.nsp == k.nsp && m.rel == k.rel && strcmp(NameStr(m.column), NameStr(k.column)) == 0;
}

// The cached template of (nsp, rel, column) analyzed at at, or null.
TemplateCacheEntry* cached_template(Oid nsp, Oid rel, Name column, TimestampTz at) {
    for (TemplateCacheEntry& x : template_cache)
        if (x.tmpl != nullptr && x.nsp == nsp && x.rel == rel && x.at == at &&
            strcmp(NameStr(x.column), NameStr(*column)) == 0)
            return &x;
    return nullptr;
}

// The template found (valid until the next lookup), or the empty value (palloc'd) for null.
const struct varlena* template_or_empty(const struct varlena* found) {
    if (found != nullptr) return found;
    return (const struct varlena*)DatumGetPointer(pg_entry([&] { return make_spotsig(MultisetView()); }));
}

// The template of (rel, column) that spotsigs_stats shows the caller (the view applies the
// caller's privileges and row security, as pg_stats does), else the empty value: valid until the
// next call (the backend's cache holds it). *set gets it prepared (null for the empty value).
const struct varlena* content_template(FunctionCallInfo fcinfo, Oid rel, Name column,
                                       std::shared_ptr<const SignatureSet>* set) {
    set->reset();
    Oid nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
    TemplateMemo key = {};
    const bool keyed = memo_key(&key, nsp, rel, column);
    if (keyed && memo_matches(template_memo, key)) {
        if (!template_memo.found) return template_or_empty(nullptr);
        TemplateCacheEntry* e = cached_template(nsp, rel, column, template_memo.at);
        if (e != nullptr) {
            e->last_use = ++template_clock;
            if (e->set == nullptr) e->set = template_set(e->tmpl);
            *set = e->set;
            return template_or_empty(e->tmpl);
        }
    }
    template_memo.valid = false;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsig_content_query: SPI_connect failed");
    if (template_plan == nullptr || template_plan_schema != nsp) {
        if (template_plan != nullptr) SPI_freeplan(template_plan);
        template_plan = nullptr;
        char* q = psprintf(
            "SELECT s.analyzed_at, s.template FROM %s.spotsigs_stats s "
            "WHERE s.relation OPERATOR(pg_catalog.=) $1 AND s.sig_column OPERATOR(pg_catalog.=) $2",
            quote_identifier(get_namespace_name(nsp)));
        Oid types[2] = {REGCLASSOID, NAMEOID};
        SPIPlanPtr plan = SPI_prepare(q, 2, types);
        if (plan == nullptr)
            elog(ERROR, "spotsig_content_query: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
        if (SPI_keepplan(plan) != 0) elog(ERROR, "spotsig_content_query: SPI_keepplan failed");
        template_plan = plan;
        template_plan_schema = nsp;
    }
    Datum args[2] = {ObjectIdGetDatum(rel), NameGetDatum(column)};
    int rc = SPI_execute_plan(template_plan, args, nullptr, true, 1);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "spotsig_content_query: reading the template failed: %s", SPI_result_code_string(rc));
    struct varlena* found = nullptr;  // the template, in TopMemoryContext (the cache's)
    bool at_null = true, t_null = true;
    TimestampTz at = 0;
    if (SPI_processed > 0) {
        HeapTuple tup = SPI_tuptable->vals[0];
        at = DatumGetTimestampTz(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &at_null));
        Datum t = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &t_null);
        if (!t_null && !at_null) {
            TemplateCacheEntry* e = cached_template(nsp, rel, column, at);
            if (e == nullptr) {
                // Not cached: the least recently used entry takes it (the template is detoasted
                // only now).
                e = &template_cache[0];
                for (TemplateCacheEntry& x : template_cache)
                    if (x.last_use < e->last_use) e = &x;
                if (e->tmpl != nullptr) pfree(e->tmpl);
                e->tmpl = nullptr;
                e->set.reset();
                struct varlena* v = fetch_spotsig(t);
                struct varlena* copy = (struct varlena*)MemoryContextAlloc(TopMemoryContext, VARSIZE_ANY(v));
                std::memcpy(copy, v, VARSIZE_ANY(v));
                e->nsp = nsp;
                e->rel = rel;
                namestrcpy(&e->column, NameStr(*column));
                e->at = at;
                e->tmpl = copy;
            }
            e->last_use = ++template_clock;
            found = e->tmpl;
        }
    }
    SPI_finish();
    if (found != nullptr) {
        TemplateCacheEntry* e = cached_template(nsp, rel, column, at);
        if (e->set == nullptr) e->set = template_set(e->tmpl);
        *set = e->set;
    }
    if (keyed) {
        template_memo = key;
        template_memo.found = found != nullptr;
        template_memo.at = at;
        template_memo.valid = true;
    }
    return template_or_empty(found);
}

}  // namespace

// spotsig_content_query(sig, rel, sig_column) -> spotsigs_content_query: (sig without the template
// t, 0.4, t), t the template stored for (rel, sig_column) as spotsigs_stats shows it to the caller,
// else empty (also for a NULL rel or column); the content field is NULL for a NULL sig. STABLE:
// the template is read once per expression.
SPOTSIGS_FUNCTION(spotsig_content_query) {
    MemoryContext fcxt = fcinfo->flinfo->fn_mcxt;
    ContentCtorCache* c = (ContentCtorCache*)fcinfo->flinfo->fn_extra;
    if (c == nullptr) {
        c = (ContentCtorCache*)MemoryContextAllocZero(fcxt, sizeof(ContentCtorCache));
        auto* cb = (MemoryContextCallback*)MemoryContextAllocZero(fcxt, sizeof(MemoryContextCallback));
        cb->func = forget_last_result;
        cb->arg = c;
        MemoryContextRegisterResetCallback(fcxt, cb);
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("spotsig_content_query must return the composite type spotsigs_content_query")));
        MemoryContext old = MemoryContextSwitchTo(fcxt);
        c->desc = BlessTupleDesc(CreateTupleDescCopy(desc));
        MemoryContextSwitchTo(old);
        fcinfo->flinfo->fn_extra = c;
    }
    const bool no_table = PG_ARGISNULL(1) || PG_ARGISNULL(2);
    const Oid rel = no_table ? InvalidOid : PG_GETARG_OID(1);
    const char* column = no_table ? "" : NameStr(*PG_GETARG_NAME(2));
    struct varlena* sig = PG_ARGISNULL(0) ? nullptr : fetch_spotsig(PG_GETARG_DATUM(0));
    const struct varlena* tmpl;
    std::shared_ptr<const SignatureSet> set;  // tmpl prepared
    if (c->valid && c->rel == rel && strcmp(NameStr(c->column), column) == 0) {
        if (sig == nullptr ? c->last_sig == nullptr
                           : c->last_sig != nullptr && VARSIZE_ANY(sig) == VARSIZE_ANY(c->last_sig) &&
                                 std::memcmp(sig, c->last_sig, VARSIZE_ANY(sig)) == 0) {
            // The same query again: the last result itself, unchanged until this expression's
            // next call with another value (a caller keeps a value across rows only as a copy,
            // since results normally live in memory reset for every row; none frees one).
            PG_RETURN_DATUM(PointerGetDatum(c->last->t_data));
        }
        bool isnull = false;
        tmpl = (const struct varlena*)DatumGetPointer(heap_getattr(c->last, 3, c->desc, &isnull));
        registered_serial(c->last->t_data, &set);
    } else {
        c->valid = false;
        tmpl = no_table ? template_or_empty(nullptr) : content_template(fcinfo, rel, PG_GETARG_NAME(2), &set);
    }
    if (set == nullptr) set = template_set(tmpl);
    Datum values[3] = {Datum(0), Float8GetDatum(spotsigs::kContentThreshold), PointerGetDatum(tmpl)};
    bool nulls[3] = {sig == nullptr, false, false};
    if (sig != nullptr) {
        MultisetView q;
        pg_entry([&] {
            q = view_of(sig);
            return Datum(0);
        });
        uint64* h = (uint64*)palloc(sizeof(uint64) * (q.size > 0 ? q.size : 1));
        uint32* f = (uint32*)palloc(sizeof(uint32) * (q.size > 0 ? q.size : 1));
        values[0] = pg_entry([&] {
            uint64_t len = 0;
            MultisetView m;
            m.size = spotsigs::content_of(q, *set, h, f, &len);
            m.length = len;
            m.hashes = h;
            m.freqs.data = reinterpret_cast<const unsigned char*>(f);
            m.freqs.width = 4;
            return make_spotsig(m);
        });
    }
    // The result is formed in the function's memory and kept; the previous one goes after it (its
    // template field may be the source of this one's).
    MemoryContext old = MemoryContextSwitchTo(fcxt);
    HeapTuple tup = heap_form_tuple(c->desc, values, nulls);
    struct varlena* sig_copy = nullptr;
    if (sig != nullptr) {
        sig_copy = (struct varlena*)palloc(VARSIZE_ANY(sig));
        std::memcpy(sig_copy, sig, VARSIZE_ANY(sig));
    }
    MemoryContextSwitchTo(old);
    register_value(tup->t_data, set);
    if (c->last != nullptr) {
        unregister_value(c->last->t_data);
        heap_freetuple(c->last);
    }
    if (c->last_sig != nullptr) pfree(c->last_sig);
    // heap_form_tuple sets the datum fields of the header (length, row type), and no field is
    // stored externally (they are detoasted values), so t_data is the composite datum as it is.
    c->last = tup;
    c->last_sig = sig_copy;
    c->rel = rel;
    namestrcpy(&c->column, column);
    c->valid = true;
    PG_RETURN_DATUM(PointerGetDatum(tup->t_data));
}

namespace spotsigs::pg {

std::shared_ptr<const SignatureSet> content_query_set(Datum query, const struct varlena* tmpl) {
    std::shared_ptr<const SignatureSet> set;
    if (registered_serial(DatumGetPointer(query), &set) != 0 && set != nullptr) return set;
    return template_set(tmpl);
}

}  // namespace spotsigs::pg
