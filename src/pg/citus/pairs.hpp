// The packed pairs of a distributed join's task (src/pg/citus/pairs.cpp describes the format).
#pragma once

#include "pg/pg.hpp"

#include <type_traits>

struct ReturnSetInfo;

namespace spotsigs::pg {

// Appends the row (id1, id2, similarity) to the materialized result of a set-returning call.
void put_pair_row(ReturnSetInfo* rsinfo, int64 id1, int64 id2, double similarity);

using PackedPairFn = void (*)(void* arg, int64 id1, int64 id2, double similarity);

// Calls fn(arg, id1, id2, similarity) for each pair of the base64 text b64[0..len) that
// spotsigs_citus_pairs_agg wrote, in its order; with ordered, each with the smaller id first.
// Malformed data raises 22P03. Checks for interrupts as it goes. PostgreSQL code.
void each_packed_pair(const char* b64, int len, bool ordered, PackedPairFn fn, void* arg);

template <class F>
void each_packed_pair(const char* b64, int len, bool ordered, F& f) {
    each_packed_pair(
        b64, len, ordered,
        [](void* a, int64 x, int64 y, double s) { (*static_cast<std::remove_reference_t<F>*>(a))(x, y, s); }, &f);
}

}  // namespace spotsigs::pg
