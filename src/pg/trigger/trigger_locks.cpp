// Advisory locks on length buckets for the 'locked' mode of spotsigs_flag_duplicates().
#include "pg/trigger/trigger_locks.hpp"

extern "C" {
#include "utils/fmgrprotos.h"
}

#include <cmath>

namespace spotsigs::pg {

int length_bucket(uint64 length) {
    if (length < 16) return int(length);
    int msb = 63 - __builtin_clzll(length);
    return 8 * (msb - 2) + int((length >> (msb - 3)) & 7);
}

void lock_length_buckets(Oid relid, uint64 length, double tau) {
    if (length == 0) return;
    // Widened by one on each side so that rounding can only add buckets, never drop one.
    double lo_d = std::floor(tau * double(length)) - 1.0;
    double hi_d = std::ceil(double(length) / tau) + 1.0;
    uint64 lo = lo_d < 1.0 ? 1 : uint64(lo_d);
    uint64 hi = uint64(hi_d);
    int own = length_bucket(length);
    int first = length_bucket(lo);
    int last = length_bucket(hi);
    Datum table_key = Int32GetDatum(int32(relid));
    for (int b = first; b <= last; ++b) {
        if (b == own) DirectFunctionCall2(pg_advisory_xact_lock_int4, table_key, Int32GetDatum(b));
        else DirectFunctionCall2(pg_advisory_xact_lock_shared_int4, table_key, Int32GetDatum(b));
    }
}

}  // namespace spotsigs::pg
