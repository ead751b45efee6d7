// Plain PostgreSQL code (no C++ objects): SPI queries into palloc'd arrays and the call's
// tuplestore, so that PostgreSQL errors may be raised anywhere here. See citus.hpp.
#include "pg/join/citus.hpp"

extern "C" {
#include "catalog/pg_type_d.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
}

#include <utility>

namespace spotsigs::pg {

namespace {

// Rows fetched from an SPI cursor at a time.
constexpr long kBatch = 10000;

// The schema-qualified name of this extension's function fn, quoted for a query.
char* own_function(FunctionCallInfo fcinfo, const char* fn) {
    char* schema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
    return quote_qualified_identifier(schema, fn);
}

// "SELECT * FROM fn($1, ..., $n)" with fn qualified by this extension's schema.
char* call_query(FunctionCallInfo fcinfo, const char* fn, int nargs) {
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfo(&q, "SELECT * FROM %s(", own_function(fcinfo, fn));
    for (int i = 1; i <= nargs; ++i) appendStringInfo(&q, i > 1 ? ", $%d" : "$%d", i);
    appendStringInfoChar(&q, ')');
    return q.data;
}

// Runs query through an SPI cursor and calls row(values, nulls) for each row of the result
// (values valid until the next call). Between batches it checks for interrupts.
template <class Row>
void each_row(const char* query, int nargs, Oid* types, Datum* values, const char* nulls, Row row) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    Portal portal = SPI_cursor_open_with_args(nullptr, query, nargs, types, values, nulls, false, 0);
    for (;;) {
        SPI_cursor_fetch(portal, true, kBatch);
        if (SPI_processed == 0) break;
        TupleDesc desc = SPI_tuptable->tupdesc;
        Datum v[3];
        bool n[3];
        int natts = desc->natts < 3 ? desc->natts : 3;
        for (uint64 i = 0; i < SPI_processed; ++i) {
            for (int a = 0; a < natts; ++a) v[a] = SPI_getbinval(SPI_tuptable->vals[i], desc, a + 1, &n[a]);
            row(v, n);
        }
        SPI_freetuptable(SPI_tuptable);
        CHECK_FOR_INTERRUPTS();
    }
    SPI_cursor_close(portal);
    SPI_finish();
}

int compare_ids(const void* a, const void* b) {
    int64 x = *(const int64*)a, y = *(const int64*)b;
    return x < y ? -1 : x > y;
}

// Index of id in the sorted ids[0..n); the pairs come from the same rows, so it is there.
uint32 index_of(const int64* ids, uint32 n, int64 id) {
    const int64* p = (const int64*)bsearch(&id, ids, n, sizeof(int64), compare_ids);
    if (p == nullptr) elog(ERROR, "spotsigs_clusters: pair id " INT64_FORMAT " is not a row of the table", id);
    return (uint32)(p - ids);
}

// Root of x in a union-find forest, halving paths on the way.
uint32 root_of(uint32* parent, uint32 x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

}  // namespace

bool citus_distributed(FunctionCallInfo fcinfo, Oid relid) {
    if (!OidIsValid(get_extension_oid("citus", true))) return false;
    Oid types[1] = {REGCLASSOID};
    Datum values[1] = {ObjectIdGetDatum(relid)};
    bool distributed = false;
    each_row(call_query(fcinfo, "spotsigs_citus_distributed", 1), 1, types, values, nullptr,
             [&](Datum* v, bool* n) { distributed = !n[0] && DatumGetBool(v[0]); });
    return distributed;
}

void citus_rows(FunctionCallInfo fcinfo, const char* fn, int nargs, Oid* types, Datum* values, const char* nulls,
                bool swap) {
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    each_row(call_query(fcinfo, fn, nargs), nargs, types, values, nulls, [&](Datum* v, bool* n) {
        if (swap) {
            std::swap(v[0], v[1]);
            std::swap(n[0], n[1]);
        }
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
    });
}

void citus_clusters(FunctionCallInfo fcinfo, const char* relname, const char* id_column, const char* sig_column,
                    Oid* types, Datum* args, const char* nulls) {
    // The ids of the rows (only ids cross the network), sorted.
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfo(&q, "SELECT %s::bigint FROM %s WHERE %s IS NOT NULL AND %s IS NOT NULL",
                     quote_identifier(id_column), relname, quote_identifier(id_column), quote_identifier(sig_column));
    Size cap = 1024, n = 0;
    int64* ids = (int64*)palloc(cap * sizeof(int64));
    each_row(q.data, 0, nullptr, nullptr, nullptr, [&](Datum* v, bool*) {
        if (n == cap) {
            if (cap >= PG_UINT32_MAX / 2)
                ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                                errmsg("spotsigs_clusters handles at most 2^31 rows")));
            cap *= 2;
            ids = (int64*)repalloc_huge(ids, cap * sizeof(int64));
        }
        ids[n++] = DatumGetInt64(v[0]);
    });
    qsort(ids, n, sizeof(int64), compare_ids);
    for (Size i = 1; i < n; ++i)
        if (ids[i] == ids[i - 1])
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("id column of relation %s is not unique", relname),
                            errdetail("The id " INT64_FORMAT " occurs more than once.", ids[i])));
    // Components: each pair links two rows; a root is the smallest index, so the smallest id.
    uint32* parent = (uint32*)MemoryContextAllocHuge(CurrentMemoryContext, (n ? n : 1) * sizeof(uint32));
    for (Size i = 0; i < n; ++i) parent[i] = (uint32)i;
    each_row(call_query(fcinfo, "spotsigs_citus_join", 6), 6, types, args, nulls, [&](Datum* v, bool*) {
        uint32 a = root_of(parent, index_of(ids, (uint32)n, DatumGetInt64(v[0])));
        uint32 b = root_of(parent, index_of(ids, (uint32)n, DatumGetInt64(v[1])));
        if (a != b) parent[a < b ? b : a] = a < b ? a : b;
    });
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    for (Size i = 0; i < n; ++i) {
        Datum v[2] = {Int64GetDatum(ids[i]), Int64GetDatum(ids[root_of(parent, (uint32)i)])};
        bool nl[2] = {false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nl);
        if ((i & 0xFFFF) == 0) CHECK_FOR_INTERRUPTS();
    }
}

}  // namespace spotsigs::pg
