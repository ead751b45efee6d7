// The pairs a distributed join's task sends back to the coordinator, packed.
//
// A task runs inside one query of Citus's executor, which carries its value back as text. The
// pairs travel as base64 text of a tag and then, per pair, id1 and id2 as zigzag varints (7 bits
// a byte, low bits first: a million ids take 3 bytes each) and the 64 bits of the similarity,
// big-endian: the coordinator reads back the very doubles the task computed, and neither side
// builds or parses a JSON value per pair (spotsigs_citus_pairs_agg on the task's node,
// spotsigs_citus_pairs on the coordinator).
#include "pg/citus/pairs.hpp"

extern "C" {
#include "common/base64.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "port/pg_bswap.h"
#include "utils/tuplestore.h"
}

#include <cstring>
#include <utility>

namespace {

// The format's version: a coordinator and a worker of different spotsigs versions fail clearly.
constexpr char kPairsTag[4] = {'S', 'S', 'P', '1'};
constexpr int kMaxPairBytes = 10 + 10 + 8;
// The most packed bytes whose base64 text still fits one text value (4 characters per 3 bytes).
constexpr Size kMaxPacked = (MaxAllocSize - VARHDRSZ - 16) / 4 * 3;

void put64(StringInfo s, uint64 v) {
    v = pg_hton64(v);
    appendBinaryStringInfoNT(s, reinterpret_cast<const char*>(&v), 8);
}

// Appends id as a zigzag varint (room for 10 bytes must be there).
void put_id(StringInfo s, int64 id) {
    uint64 z = (static_cast<uint64>(id) << 1) ^ static_cast<uint64>(id >> 63);
    while (z >= 0x80) {
        s->data[s->len++] = static_cast<char>((z & 0x7f) | 0x80);
        z >>= 7;
    }
    s->data[s->len++] = static_cast<char>(z);
    s->data[s->len] = '\0';
}

[[noreturn]] void malformed_pairs(const char* what);

// Reads a zigzag varint id at *p (before end), advancing *p.
int64 get_id(const char** p, const char* end) {
    uint64 z = 0;
    for (int shift = 0;; shift += 7) {
        if (*p == end || shift > 63) malformed_pairs("truncated or overlong id");
        const unsigned char b = static_cast<unsigned char>(*(*p)++);
        z |= static_cast<uint64>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) break;
    }
    return static_cast<int64>((z >> 1) ^ (~(z & 1) + 1));
}

uint64 get64(const char* p) {
    uint64 v;
    memcpy(&v, p, 8);
    return pg_ntoh64(v);
}

[[noreturn]] void malformed_pairs(const char* what) {
    ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("malformed spotsigs pair data: %s", what)));
    pg_unreachable();
}

}  // namespace

// spotsigs_citus_pairs_add(state internal, id1 bigint, id2 bigint, similarity float8) -> internal:
// the transition function of the aggregate spotsigs_citus_pairs_agg (a StringInfo of the packed
// pairs in the aggregate's context).
SPOTSIGS_FUNCTION(spotsigs_citus_pairs_add) {
    MemoryContext agg;
    if (!AggCheckCallContext(fcinfo, &agg)) elog(ERROR, "spotsigs_citus_pairs_add called outside an aggregate");
    if (PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("a pair's ids and similarity must not be NULL")));
    StringInfo s = PG_ARGISNULL(0) ? nullptr : reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    if (s == nullptr) {
        MemoryContext old = MemoryContextSwitchTo(agg);
        s = makeStringInfo();
        MemoryContextSwitchTo(old);
        appendBinaryStringInfo(s, kPairsTag, sizeof kPairsTag);
    }
    if (static_cast<Size>(s->len) + kMaxPairBytes > kMaxPacked)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("the pairs of one task exceed what one transfer holds (%zu bytes)", (size_t)kMaxPacked),
                        errhint("Use more shards (citus.shard_count), or a higher threshold.")));
    enlargeStringInfo(s, kMaxPairBytes);
    put_id(s, PG_GETARG_INT64(1));
    put_id(s, PG_GETARG_INT64(2));
    const double sim = PG_GETARG_FLOAT8(3);
    uint64 bits;
    memcpy(&bits, &sim, 8);
    put64(s, bits);
    PG_RETURN_POINTER(s);
}

// spotsigs_citus_pairs_final(state internal) -> text: the packed pairs as base64 text (the tag
// alone when there were none).
SPOTSIGS_FUNCTION(spotsigs_citus_pairs_final) {
    StringInfoData empty;
    StringInfo s = PG_ARGISNULL(0) ? nullptr : reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    if (s == nullptr) {
        initStringInfo(&empty);
        appendBinaryStringInfo(&empty, kPairsTag, sizeof kPairsTag);
        s = &empty;
    }
    const int len = pg_b64_enc_len(s->len);
    text* t = static_cast<text*>(palloc(VARHDRSZ + len));
    const int written = pg_b64_encode(reinterpret_cast<const spotsigs_b64_byte*>(s->data), s->len, VARDATA(t), len);
    if (written < 0) elog(ERROR, "spotsigs_citus_pairs_agg: base64 encoding failed");
    SET_VARSIZE(t, VARHDRSZ + written);
    PG_RETURN_TEXT_P(t);
}

namespace spotsigs::pg {

void each_packed_pair(const char* b64, int b64_len, bool ordered, PackedPairFn fn, void* arg) {
    const int cap = pg_b64_dec_len(b64_len);
    char* data = static_cast<char*>(palloc(cap + 1));
    const int len = pg_b64_decode(b64, b64_len, reinterpret_cast<spotsigs_b64_byte*>(data), cap);
    if (len < 0) malformed_pairs("not base64");
    if (len < static_cast<int>(sizeof kPairsTag) || memcmp(data, kPairsTag, sizeof kPairsTag) != 0)
        malformed_pairs("unknown format (the nodes' spotsigs versions differ?)");
    uint64 n = 0;
    const char* end = data + len;
    for (const char* p = data + sizeof kPairsTag; p < end; p += 8) {
        int64 a = get_id(&p, end);
        int64 b = get_id(&p, end);
        if (end - p < 8) malformed_pairs("truncated pair");
        const uint64 bits = get64(p);
        double sim;
        memcpy(&sim, &bits, 8);
        if (ordered && b < a) std::swap(a, b);
        fn(arg, a, b, sim);
        if ((++n & 0xFFFF) == 0) CHECK_FOR_INTERRUPTS();
    }
    pfree(data);
}

void put_pair_row(ReturnSetInfo* rsinfo, int64 id1, int64 id2, double similarity) {
    Datum v[3] = {Int64GetDatum(id1), Int64GetDatum(id2), Float8GetDatum(similarity)};
    bool nulls[3] = {false, false, false};
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
}

}  // namespace spotsigs::pg

// spotsigs_citus_pairs(data text, ordered boolean) -> TABLE(id1 bigint, id2 bigint, similarity
// float8): the pairs spotsigs_citus_pairs_agg packed, in their order; with ordered, each with the
// smaller id first. Malformed data raises 22P03.
SPOTSIGS_FUNCTION(spotsigs_citus_pairs) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("the arguments must not be NULL")));
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    text* in = PG_GETARG_TEXT_PP(0);
    auto put = [rsinfo](int64 a, int64 b, double sim) { spotsigs::pg::put_pair_row(rsinfo, a, b, sim); };
    spotsigs::pg::each_packed_pair(VARDATA_ANY(in), VARSIZE_ANY_EXHDR(in), PG_GETARG_BOOL(1), put);
    return Datum(0);
}
