// Plain PostgreSQL code (no C++ objects): SPI queries into palloc'd arrays and the call's
// tuplestore, so that PostgreSQL errors may be raised anywhere here. See citus.hpp.
#include "pg/join/citus.hpp"

#include "pg/citus/pairs.hpp"
#include "pg/join/join_read.hpp"
#include "pg/type/datum.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "commands/extension.h"
#include "common/base64.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
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

// "fn($1, ..., $n)" with fn qualified by this extension's schema.
char* own_call(FunctionCallInfo fcinfo, const char* fn, int nargs) {
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfo(&q, "%s(", own_function(fcinfo, fn));
    for (int i = 1; i <= nargs; ++i) appendStringInfo(&q, i > 1 ? ", $%d" : "$%d", i);
    appendStringInfoChar(&q, ')');
    return q.data;
}

// "SELECT * FROM fn($1, ..., $n)" (own_call).
char* call_query(FunctionCallInfo fcinfo, const char* fn, int nargs) {
    return psprintf("SELECT * FROM %s", own_call(fcinfo, fn, nargs));
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

// Seconds from start to now.
double seconds_since(TimestampTz start) {
    return (double)(GetCurrentTimestamp() - start) / USECS_PER_SEC;
}

// The pairs of a distributed join planned by this extension's function fn(args) (nargs
// arguments: spotsigs_citus_join_tasks or spotsigs_citus_join_rs_tasks), which returns {"rel": the
// relation whose nodes run the tasks, "tasks": {"host:port": call}, "swapped": bool} or NULL. The
// tasks run at once on their nodes (spotsigs_citus_on_nodes) and pair(id1, id2, similarity) is
// called for each pair they send back. A task's value is a line of counts, then a line per
// matching: 'S' and its own pairs (id1 < id2 already), or 'C' and its cross pairs (its own row's
// id first), packed (src/pg/citus/pairs.cpp). ordered puts the smaller id of a cross pair first
// (the self-join); otherwise a cross pair is passed as (other row's id, own row's id), or as sent
// when "swapped". They are decoded here, into the caller's result, rather than through a
// set-returning SQL function whose rows PL/pgSQL would copy once more per level. Logs at LOG how
// long the tasks and reading their pairs took.
template <class Pair>
void each_citus_pair(FunctionCallInfo fcinfo, const char* fn, int nargs, Oid* types, Datum* args, const char* nulls,
                     bool ordered, Pair pair) {
    MemoryContext caller = CurrentMemoryContext;
    Datum rel = (Datum)0;
    Datum tasks = (Datum)0;
    bool swapped = false;
    bool have_tasks = false;
    StringInfoData plan;
    initStringInfo(&plan);
    appendStringInfo(&plan,
                     "SELECT (p ->> 'rel')::pg_catalog.oid, p -> 'tasks', "
                     "coalesce((p ->> 'swapped')::pg_catalog.bool, false) FROM %s",
                     own_call(fcinfo, fn, nargs));
    appendStringInfoString(&plan, " p WHERE p IS NOT NULL");
    each_row(plan.data, nargs, types, args, nulls, [&](Datum* v, bool* n) {
        if (n[0] || n[1]) return;
        MemoryContext old = MemoryContextSwitchTo(caller);
        rel = v[0];
        tasks = PointerGetDatum(PG_DETOAST_DATUM_COPY(v[1]));
        MemoryContextSwitchTo(old);
        swapped = !n[2] && DatumGetBool(v[2]);
        have_tasks = true;
    });
    if (!have_tasks) return;
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfo(&q, "SELECT t.value FROM %s($1, $2) t", own_function(fcinfo, "spotsigs_citus_on_nodes"));
    Oid run_types[2] = {REGCLASSOID, JSONBOID};
    Datum run_args[2] = {rel, tasks};
    const TimestampTz started = GetCurrentTimestamp();
    double tasks_s = -1;
    int nodes = 0;
    auto flipped = [&pair](int64 id1, int64 id2, double similarity) { pair(id2, id1, similarity); };
    each_row(q.data, 2, run_types, run_args, nullptr, [&](Datum* v, bool* n) {
        if (tasks_s < 0) tasks_s = seconds_since(started);
        ++nodes;
        if (n[0]) return;
        text* t = DatumGetTextPP(v[0]);
        const char* p = VARDATA_ANY(t);
        const char* end = p + VARSIZE_ANY_EXHDR(t);
        const char* eol = (const char*)memchr(p, '\n', end - p);
        for (p = eol ? eol + 1 : end; p < end;) {
            eol = (const char*)memchr(p, '\n', end - p);
            if (eol == nullptr) eol = end;
            if (eol > p) {
                const bool cross = *p == 'C';
                if (!cross || ordered || swapped) each_packed_pair(p + 1, (int)(eol - p - 1), cross && ordered, pair);
                else each_packed_pair(p + 1, (int)(eol - p - 1), false, flipped);
            }
            p = eol + 1;
        }
        if ((Pointer)t != DatumGetPointer(v[0])) pfree(t);
    });
    ereport(LOG, (errmsg("spotsigs_citus_run: the tasks on %d nodes %.2f s, reading their pairs %.2f s", nodes,
                         tasks_s < 0 ? 0.0 : tasks_s, seconds_since(started) - (tasks_s < 0 ? 0.0 : tasks_s))));
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

// The packed rows of spotsigs_citus_pack: this tag (its format's version), then per row a
// big-endian int64 id, int32 n and the n bytes of the signature's binary form (spotsig_send).
constexpr char kPackTag[4] = {'S', 'S', 'R', '1'};
// The most packed bytes whose base64 text still fits one text value (4 characters per 3 bytes).
constexpr Size kMaxPacked = (MaxAllocSize - VARHDRSZ - 16) / 4 * 3;

// Appends to out one packed row: id and b, the binary form of its signature. whats names the rows
// in the error raised past what one text value holds.
void pack_row(StringInfo out, int64 id, bytea* b, const char* whats) {
    Size n = VARSIZE(b) - VARHDRSZ;
    if (out->len + 12 + n > kMaxPacked)
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("the signatures of %s exceed what one transfer holds (%zu bytes)", whats, (size_t)kMaxPacked),
                 errhint("Use more shards (citus.shard_count) for a distributed table, or smaller batches.")));
    uint64 id_be = pg_hton64((uint64)id);
    uint32 n_be = pg_hton32((uint32)n);
    appendBinaryStringInfo(out, (const char*)&id_be, 8);
    appendBinaryStringInfo(out, (const char*)&n_be, 4);
    appendBinaryStringInfo(out, VARDATA(b), (int)n);
}

// The packed rows in out as base64 text.
text* packed_text(StringInfo out) {
    int len = pg_b64_enc_len(out->len);
    text* t = (text*)palloc(VARHDRSZ + len);
    int written = pg_b64_encode(reinterpret_cast<const spotsigs_b64_byte*>(out->data), out->len, VARDATA(t), len);
    if (written < 0) elog(ERROR, "spotsigs_citus_pack: base64 encoding failed");
    SET_VARSIZE(t, VARHDRSZ + written);
    return t;
}

[[noreturn]] void malformed_pack(const char* what) {
    ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("malformed spotsigs row data: %s", what)));
    pg_unreachable();
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

void citus_rs_pairs(FunctionCallInfo fcinfo, Oid* types, Datum* args, const char* nulls, bool swap) {
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    auto put = [rsinfo, swap](int64 batch_id, int64 archive_id, double similarity) {
        put_pair_row(rsinfo, swap ? archive_id : batch_id, swap ? batch_id : archive_id, similarity);
    };
    each_citus_pair(fcinfo, "spotsigs_citus_join_rs_tasks", 10, types, args, nulls, false, put);
}

void citus_self_pairs(FunctionCallInfo fcinfo, Oid* types, Datum* args, const char* nulls) {
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    auto put = [rsinfo](int64 id1, int64 id2, double similarity) { put_pair_row(rsinfo, id1, id2, similarity); };
    each_citus_pair(fcinfo, "spotsigs_citus_join_tasks", 7, types, args, nulls, true, put);
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
    auto link = [&](int64 id1, int64 id2, double) {
        uint32 a = root_of(parent, index_of(ids, (uint32)n, id1));
        uint32 b = root_of(parent, index_of(ids, (uint32)n, id2));
        if (a != b) parent[a < b ? b : a] = a < b ? a : b;
    };
    each_citus_pair(fcinfo, "spotsigs_citus_join_tasks", 7, types, args, nulls, true, link);
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    for (Size i = 0; i < n; ++i) {
        Datum v[2] = {Int64GetDatum(ids[i]), Int64GetDatum(ids[root_of(parent, (uint32)i)])};
        bool nl[2] = {false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nl);
        if ((i & 0xFFFF) == 0) CHECK_FOR_INTERRUPTS();
    }
}

}  // namespace spotsigs::pg

using namespace spotsigs::pg;

// spotsigs_citus_pack(rel regclass, id_column name, sig_column name) -> text: the rows of rel
// with an id and a signature, read as the caller (privileges and row security apply, as to any
// query), packed (kPackTag) and base64-encoded: what a Citus task fetches from another node's
// shard in one text value. The relation and its columns pass the joins' checks (resolve_source):
// a user column each, an integer id (a cast of any other type could merge distinct ids) and a
// spotsig signature (the bytes sent are its binary form, which only the spotsig type defines).
// The signatures travel in their binary form and are checked by the receive function on
// arrival (spotsigs_citus_unpack), so no text is formatted or parsed.
SPOTSIGS_FUNCTION(spotsigs_citus_pack) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("the arguments must not be NULL")));
    JoinSource src = resolve_source(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)), NameStr(*PG_GETARG_NAME(2)),
                                    spotsig_type_oid(fcinfo), "spotsigs_citus_pack");
    const char* relname = src.relname;
    const char* query = src.query;
    StringInfoData out;
    initStringInfo(&out);
    appendBinaryStringInfo(&out, kPackTag, sizeof kPackTag);
    MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "spotsigs_citus_pack", ALLOCSET_SMALL_SIZES);
    FmgrInfo send;
    bool have_send = false;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    Portal portal = SPI_cursor_open_with_args(nullptr, query, 0, nullptr, nullptr, nullptr, true, 0);
    for (;;) {
        SPI_cursor_fetch(portal, true, kBatch);
        if (SPI_processed == 0) break;
        TupleDesc desc = SPI_tuptable->tupdesc;
        if (!have_send) {
            Oid fn;
            bool varlena;
            getTypeBinaryOutputInfo(SPI_gettypeid(desc, 2), &fn, &varlena);
            fmgr_info(fn, &send);
            have_send = true;
        }
        for (uint64 i = 0; i < SPI_processed; ++i) {
            bool null_id, null_sig;
            Datum id = SPI_getbinval(SPI_tuptable->vals[i], desc, 1, &null_id);
            Datum sig = SPI_getbinval(SPI_tuptable->vals[i], desc, 2, &null_sig);
            if (null_id || null_sig) continue;  // not returned by the query; kept out all the same
            MemoryContext old = MemoryContextSwitchTo(row_cxt);
            bytea* b = SendFunctionCall(&send, sig);
            MemoryContextSwitchTo(old);
            pack_row(&out, DatumGetInt64(id), b, relname);
            MemoryContextReset(row_cxt);
        }
        SPI_freetuptable(SPI_tuptable);
        CHECK_FOR_INTERRUPTS();
    }
    SPI_cursor_close(portal);
    SPI_finish();
    MemoryContextDelete(row_cxt);
    PG_RETURN_TEXT_P(packed_text(&out));
}

// The value a distributed join's coordinator broadcasts (its template), held for the query that
// broadcasts it (spotsigs_citus_template_arg): a copy in TopTransactionContext, so that it goes
// with the transaction however the transaction ends; the callback forgets the pointer then.
struct varlena* held_value = nullptr;
bool held_callback = false;

void forget_held_value(XactEvent, void*) {
    held_value = nullptr;
}

// spotsigs_citus_hold_value(sig spotsig) -> void: keeps a copy of sig for
// spotsigs_citus_held_value() until the transaction ends; NULL lets the held copy go. The
// broadcast query reads the value back by a function call, so that a template of millions of
// signatures is neither formatted into the query's text nor parsed out of it.
SPOTSIGS_FUNCTION(spotsigs_citus_hold_value) {
    if (!held_callback) {
        RegisterXactCallback(forget_held_value, nullptr);
        held_callback = true;
    }
    if (held_value != nullptr) pfree(held_value);
    held_value = nullptr;
    if (PG_ARGISNULL(0)) PG_RETURN_VOID();
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    held_value = PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(0));
    MemoryContextSwitchTo(old);
    PG_RETURN_VOID();
}

// spotsigs_citus_held_value() -> spotsig: a copy of the value held in this transaction. Without
// one it raises an error rather than return NULL: a broadcast query run anywhere else than in the
// holding backend must fail, not send the tasks no template (they would join by the plain measure).
SPOTSIGS_FUNCTION(spotsigs_citus_held_value) {
    if (held_value == nullptr)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("spotsigs_citus_held_value: no value is held in this transaction")));
    PG_RETURN_POINTER(PG_DETOAST_DATUM_COPY(PointerGetDatum(held_value)));
}

// spotsigs_citus_unpack(data text) -> TABLE(id bigint, sig spotsig): the rows spotsigs_citus_pack
// packed, each signature read by the type's receive function (which checks it). Malformed data
// raises 22P03.
SPOTSIGS_FUNCTION(spotsigs_citus_unpack) {
    if (PG_ARGISNULL(0)) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("data must not be NULL")));
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    text* in = PG_GETARG_TEXT_PP(0);
    int in_len = VARSIZE_ANY_EXHDR(in);
    char* data = (char*)palloc(pg_b64_dec_len(in_len) + 1);
    int len =
        pg_b64_decode(VARDATA_ANY(in), in_len, reinterpret_cast<spotsigs_b64_byte*>(data), pg_b64_dec_len(in_len));
    if (len < 0) malformed_pack("not base64");
    if (len < (int)sizeof kPackTag || memcmp(data, kPackTag, sizeof kPackTag) != 0)
        malformed_pack("unknown format (the nodes' spotsigs versions differ?)");
    Oid recv_fn, ioparam;
    getTypeBinaryInputInfo(TupleDescAttr(rsinfo->setDesc, 1)->atttypid, &recv_fn, &ioparam);
    FmgrInfo recv;
    fmgr_info(recv_fn, &recv);
    MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "spotsigs_citus_unpack", ALLOCSET_SMALL_SIZES);
    StringInfoData buf;
    initStringInfo(&buf);
    uint64 rows = 0;
    for (int at = sizeof kPackTag; at < len;) {
        if (len - at < 12) malformed_pack("truncated row header");
        uint64 id_be;
        uint32 n_be;
        memcpy(&id_be, data + at, 8);
        memcpy(&n_be, data + at + 8, 4);
        uint32 n = pg_ntoh32(n_be);
        at += 12;
        if (n > (uint32)(len - at)) malformed_pack("truncated signature");
        resetStringInfo(&buf);
        appendBinaryStringInfo(&buf, data + at, (int)n);
        at += (int)n;
        MemoryContext old = MemoryContextSwitchTo(row_cxt);
        Datum v[2] = {Int64GetDatum((int64)pg_ntoh64(id_be)), ReceiveFunctionCall(&recv, &buf, ioparam, -1)};
        bool nulls[2] = {false, false};
        MemoryContextSwitchTo(old);
        // The value is exactly its binary form: bytes the receive function left unread are
        // refused, as binary COPY refuses them.
        if (buf.cursor != buf.len) malformed_pack("stray bytes after a signature");
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
        MemoryContextReset(row_cxt);
        if ((++rows & 0x3FF) == 0) CHECK_FOR_INTERRUPTS();
    }
    return Datum(0);
}
