// The spotsig type's input/output, binary send/receive, equality and hash support functions.
#include "pg/pg.hpp"

extern "C" {
#include "common/hashfn.h"
#include "libpq/pqformat.h"
}

#include <algorithm>
#include <cstring>
#include <string>

#include "core/signature/binary_format.hpp"
#include "core/signature/packed.hpp"
#include "core/signature/text_format.hpp"
#include "pg/boundary.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

// spotsig_in(cstring): parses the text form.
SPOTSIGS_FUNCTION(spotsig_in) {
    const char* str = PG_GETARG_CSTRING(0);
    return pg_entry([&] {
        Multiset m = parse_text(str);
        return make_spotsig(m.view());
    });
}

// spotsig_out(spotsig): prints the canonical text form.
SPOTSIGS_FUNCTION(spotsig_out) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    char* out = nullptr;
    pg_entry([&] {
        std::string s = to_text(view_of(v));
        pg_guard([&] { out = pnstrdup(s.data(), s.size()); });
        return Datum(0);
    });
    PG_RETURN_CSTRING(out);
}

// spotsig_send(spotsig): int32 count, then per signature int64 hash and int32 frequency.
SPOTSIGS_FUNCTION(spotsig_send) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    MultisetView m;
    pg_entry([&] {
        m = view_of(v);
        return Datum(0);
    });
    StringInfoData buf;
    pq_begintypsend(&buf);
    // The whole value's room at once, then unchecked writes (a value can hold millions of
    // signatures: a template, a distributed join's rows).
    enlargeStringInfo(&buf, static_cast<int>(4 + size_t(m.size) * 12));
    pq_writeint32(&buf, m.size);
    for (uint32_t i = 0; i < m.size; ++i) {
        pq_writeint64(&buf, static_cast<int64>(m.hashes[i]));
        pq_writeint32(&buf, m.freqs[i]);
    }
    PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

// spotsig_recv(internal): reads the send format (binary_format.hpp: hashes in any order).
SPOTSIGS_FUNCTION(spotsig_recv) {
    StringInfo buf = reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    const unsigned char* data = reinterpret_cast<const unsigned char*>(buf->data) + buf->cursor;
    size_t avail = static_cast<size_t>(buf->len - buf->cursor);
    return pg_entry([&] {
        // What spotsig_send wrote (every value another node or a binary COPY sends) is packed
        // straight from the bytes (at most kMaxDistinct signatures: well within palloc's 1 GB);
        // anything else goes through the multiset.
        const BinaryPlan plan = plan_binary(data, avail);
        if (plan.canonical) {
            struct varlena* out = nullptr;
            pg_guard([&] { out = static_cast<struct varlena*>(palloc(plan.packed_size + VARHDRSZ)); });
            SET_VARSIZE(out, plan.packed_size + VARHDRSZ);
            pack_binary(data, plan, reinterpret_cast<unsigned char*>(VARDATA(out)));
            buf->cursor += static_cast<int>(plan.consumed);
            return PointerGetDatum(out);
        }
        size_t used = 0;
        Multiset m = parse_binary(data, avail, &used);
        buf->cursor += static_cast<int>(used);
        return make_spotsig(m.view());
    });
}

// True when two detoasted spotsigs are equal: canonical packing makes this a byte comparison.
static bool bytes_equal(const struct varlena* a, const struct varlena* b) {
    return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
           std::memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

// spotsig_eq(a, b): the same signatures with the same frequencies.
SPOTSIGS_FUNCTION(spotsig_eq) {
    PG_RETURN_BOOL(bytes_equal(fetch_spotsig(PG_GETARG_DATUM(0)), fetch_spotsig(PG_GETARG_DATUM(1))));
}

// spotsig_ne(a, b): not spotsig_eq.
SPOTSIGS_FUNCTION(spotsig_ne) {
    PG_RETURN_BOOL(!bytes_equal(fetch_spotsig(PG_GETARG_DATUM(0)), fetch_spotsig(PG_GETARG_DATUM(1))));
}

// Total order for btree: by length, then number of distinct signatures, then canonical bytes.
static int compare(const struct varlena* a, const struct varlena* b) {
    // The header holds n (offset 4) and length (offset 8); see packed.hpp.
    const unsigned char* pa = reinterpret_cast<const unsigned char*>(VARDATA_ANY(a));
    const unsigned char* pb = reinterpret_cast<const unsigned char*>(VARDATA_ANY(b));
    size_t la = VARSIZE_ANY_EXHDR(a), lb = VARSIZE_ANY_EXHDR(b);
    if (la >= kPackedHeaderSize && lb >= kPackedHeaderSize) {
        uint32 na, nb, lena, lenb;
        std::memcpy(&na, pa + 4, 4);
        std::memcpy(&nb, pb + 4, 4);
        std::memcpy(&lena, pa + 8, 4);
        std::memcpy(&lenb, pb + 8, 4);
        if (lena != lenb) return lena < lenb ? -1 : 1;
        if (na != nb) return na < nb ? -1 : 1;
    }
    int c = std::memcmp(pa, pb, std::min(la, lb));
    if (c != 0) return c < 0 ? -1 : 1;
    return la == lb ? 0 : (la < lb ? -1 : 1);
}

// spotsig_cmp(a, b): btree support function.
SPOTSIGS_FUNCTION(spotsig_cmp) {
    PG_RETURN_INT32(compare(fetch_spotsig(PG_GETARG_DATUM(0)), fetch_spotsig(PG_GETARG_DATUM(1))));
}

// spotsig_lt(a, b): a sorts before b.
SPOTSIGS_FUNCTION(spotsig_lt) {
    PG_RETURN_BOOL(compare(fetch_spotsig(PG_GETARG_DATUM(0)), fetch_spotsig(PG_GETARG_DATUM(1))) < 0);
}

// spotsig_le(a, b): a sorts before b or equals it.
SPOTSIGS_FUNCTION(spotsig_le) {
    PG_RETURN_BOOL(compare(fetch_spotsig(PG_GETARG_DATUM(0)), fetch_spotsig(PG_GETARG_DATUM(1))) <= 0);
}

// spotsig_gt(a, b): a sorts after b.
SPOTSIGS_FUNCTION(spotsig_gt) {
    PG_RETURN_BOOL(compare(fetch_spotsig(PG_GETARG_DATUM(0)), fetch_spotsig(PG_GETARG_DATUM(1))) > 0);
}

// spotsig_ge(a, b): a sorts after b or equals it.
SPOTSIGS_FUNCTION(spotsig_ge) {
    PG_RETURN_BOOL(compare(fetch_spotsig(PG_GETARG_DATUM(0)), fetch_spotsig(PG_GETARG_DATUM(1))) >= 0);
}

// spotsig_hash(a): a 32-bit hash of the canonical bytes, for hash joins and hash aggregation.
SPOTSIGS_FUNCTION(spotsig_hash) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    return hash_any(reinterpret_cast<const unsigned char*>(VARDATA_ANY(v)), VARSIZE_ANY_EXHDR(v));
}

// spotsig_hash_extended(a, seed): the 64-bit seeded variant.
SPOTSIGS_FUNCTION(spotsig_hash_extended) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    return hash_any_extended(reinterpret_cast<const unsigned char*>(VARDATA_ANY(v)), VARSIZE_ANY_EXHDR(v),
                             PG_GETARG_INT64(1));
}
