// SQL entry points of the quality toolkit: shingles(), document-frequency statistics and the
// IDF-range filter, I-Match fingerprints, min-hash LSH band keys and cosine similarity.
#include "pg/pg.hpp"

extern "C" {
#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
}

#include <vector>

#include "core/quality/cosine.hpp"
#include "core/quality/idf_filter.hpp"
#include "core/quality/imatch.hpp"
#include "core/quality/minhash.hpp"
#include "core/quality/shingles.hpp"
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace {

// Polls for query cancel while a large document is tokenised.
const PollFn& cancel_poll() {
    static const PollFn poll = [] { check_interrupts(); };
    return poll;
}

// The aggregate state of spotsig_df_agg: a counter owned by C++ and freed with the context.
struct DfState {
    MemoryContextCallback cb;
    DfCounter* counter;
};

// Deletes the counter when the aggregate's memory context is reset or deleted.
void free_df_state(void* arg) {
    auto* st = static_cast<DfState*>(arg);
    delete st->counter;
    st->counter = nullptr;
}

// A detoasted statistics value kept across calls, keyed by its on-disk TOAST pointer.
struct StatsCache {
    Oid toastrel = InvalidOid;
    Oid valueid = InvalidOid;
    struct varlena* value = nullptr;
};

// Detoasts the statistics argument; a value stored out of line is detoasted once per query
// (per call site) and reused, since the same statistics row is passed for every document.
struct varlena* fetch_stats_cached(FunctionCallInfo fcinfo, Datum d) {
    auto* raw = reinterpret_cast<struct varlena*>(DatumGetPointer(d));
    if (!VARATT_IS_EXTERNAL_ONDISK(raw)) return fetch_spotsig(d);
    struct varatt_external ext;
    VARATT_EXTERNAL_GET_POINTER(ext, raw);
    auto* cache = static_cast<StatsCache*>(fcinfo->flinfo->fn_extra);
    if (cache == nullptr) {
        cache = static_cast<StatsCache*>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(StatsCache)));
        fcinfo->flinfo->fn_extra = cache;
    }
    if (cache->value == nullptr || cache->toastrel != ext.va_toastrelid || cache->valueid != ext.va_valueid) {
        if (cache->value != nullptr) pfree(cache->value);
        cache->value = nullptr;
        MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
        struct varlena* v = detoast_attr(raw);
        MemoryContextSwitchTo(old);
        cache->toastrel = ext.va_toastrelid;
        cache->valueid = ext.va_valueid;
        cache->value = v;
    }
    return cache->value;
}

// Builds a palloc'd bigint[] from 64-bit keys (PostgreSQL errors become PgError).
Datum make_int8_array(const std::vector<uint64_t>& keys) {
    ArrayType* arr = nullptr;
    pg_guard([&] {
        Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * (keys.empty() ? 1 : keys.size())));
        for (size_t i = 0; i < keys.size(); ++i) elems[i] = Int64GetDatum(static_cast<int64>(keys[i]));
        arr = construct_array(elems, static_cast<int>(keys.size()), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
    });
    return PointerGetDatum(arr);
}

}  // namespace

// shingles(doc text, n int) -> spotsig: the word n-shingles of a document.
SPOTSIGS_FUNCTION(spotsigs_shingles) {
    std::string_view doc = text_view(PG_GETARG_DATUM(0));
    int n = PG_GETARG_INT32(1);
    return pg_entry([&] {
        Multiset m = shingles(doc, n, cancel_poll());
        return make_spotsig(m.view());
    });
}

// spotsig_df_accum(state internal, sig spotsig): counts one document's distinct signatures.
SPOTSIGS_FUNCTION(spotsig_df_accum) {
    MemoryContext aggcxt;
    if (!AggCheckCallContext(fcinfo, &aggcxt))
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("spotsig_df_accum called in non-aggregate context")));
    DfState* st = PG_ARGISNULL(0) ? nullptr : reinterpret_cast<DfState*>(PG_GETARG_POINTER(0));
    if (st == nullptr) {
        st = static_cast<DfState*>(MemoryContextAllocZero(aggcxt, sizeof(DfState)));
        st->cb.func = free_df_state;
        st->cb.arg = st;
        pg_entry([&] {
            st->counter = new DfCounter;
            return Datum(0);
        });
        MemoryContextRegisterResetCallback(aggcxt, &st->cb);
    }
    if (PG_ARGISNULL(1)) PG_RETURN_POINTER(st);
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(1));
    pg_entry([&] {
        st->counter->add(view_of(v));
        return Datum(0);
    });
    PG_RETURN_POINTER(st);
}

// spotsig_df_final(state internal) -> spotsig: the document frequencies as a spotsig.
SPOTSIGS_FUNCTION(spotsig_df_final) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    auto* st = reinterpret_cast<DfState*>(PG_GETARG_POINTER(0));
    return pg_entry([&] {
        Multiset m = st->counter->result();
        return make_spotsig(m.view());
    });
}

// spotsig_filter(sig, df spotsig, n bigint, lo float8, hi float8): keeps lo <= idf <= hi.
SPOTSIGS_FUNCTION(spotsig_filter) {
    struct varlena* sig = fetch_spotsig(PG_GETARG_DATUM(0));
    struct varlena* df = fetch_stats_cached(fcinfo, PG_GETARG_DATUM(1));
    int64 n = PG_GETARG_INT64(2);
    double lo = PG_GETARG_FLOAT8(3);
    double hi = PG_GETARG_FLOAT8(4);
    if (n < 2)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("the collection must hold at least 2 documents"),
                 errdetail("n is " INT64_FORMAT ".", n)));
    return pg_entry([&] {
        Multiset m = idf_filter(view_of(sig), view_of(df), static_cast<uint64_t>(n), lo, hi);
        return make_spotsig(m.view());
    });
}

// spotsig_idf(df int, n bigint) -> float8: the normalised IDF log(n/df)/log(n).
SPOTSIGS_FUNCTION(spotsig_idf) {
    int64 df = PG_GETARG_INT64(0);
    int64 n = PG_GETARG_INT64(1);
    if (n < 2 || df < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("idf needs n >= 2 and df >= 0"),
                        errdetail("df is " INT64_FORMAT ", n is " INT64_FORMAT ".", df, n)));
    PG_RETURN_FLOAT8(normalized_idf(static_cast<uint64_t>(df), static_cast<uint64_t>(n)));
}

// imatch(sig) -> bigint: the I-Match fingerprint of the distinct signatures; NULL when empty.
SPOTSIGS_FUNCTION(spotsig_imatch) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    bool has = false;
    uint64_t fp = 0;
    pg_entry([&] {
        auto r = imatch_fingerprint(view_of(v));
        has = r.has_value();
        fp = r.value_or(0);
        return Datum(0);
    });
    if (!has) PG_RETURN_NULL();
    PG_RETURN_INT64(static_cast<int64>(fp));
}

// spotsig_lsh_keys(sig, k int, l int, seed bigint) -> bigint[]: l min-hash band keys.
SPOTSIGS_FUNCTION(spotsig_lsh_keys) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    int k = PG_GETARG_INT32(1);
    int l = PG_GETARG_INT32(2);
    uint64_t seed = static_cast<uint64_t>(PG_GETARG_INT64(3));
    return pg_entry([&] {
        std::vector<uint64_t> keys = lsh_band_keys(view_of(v), k, l, seed);
        return make_int8_array(keys);
    });
}

// cosine_similarity(a, b) -> float8: cosine of the frequency vectors; 0 when either is empty.
SPOTSIGS_FUNCTION(spotsig_cosine_similarity) {
    struct varlena* a = fetch_spotsig(PG_GETARG_DATUM(0));
    struct varlena* b = fetch_spotsig(PG_GETARG_DATUM(1));
    double r = 0;
    pg_entry([&] {
        r = cosine_similarity(view_of(a), view_of(b));
        return Datum(0);
    });
    PG_RETURN_FLOAT8(r);
}
