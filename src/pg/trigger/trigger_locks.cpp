// Advisory locks on length buckets for the 'locked' mode of spotsigs_flag_duplicates().
#include "pg/trigger/trigger_locks.hpp"

extern "C" {
#include "utils/fmgrprotos.h"
}

#include "core/common/length_buckets.hpp"

namespace spotsigs::pg {

void lock_length_buckets(Oid relid, uint64 length, double tau) {
    if (length == 0) return;
    BucketRange r = length_bucket_range(length, tau);
    Datum table_key = Int32GetDatum(int32(relid));
    for (int b = r.first; b <= r.last; ++b) {
        if (b == r.own) DirectFunctionCall2(pg_advisory_xact_lock_int4, table_key, Int32GetDatum(b));
        else DirectFunctionCall2(pg_advisory_xact_lock_shared_int4, table_key, Int32GetDatum(b));
    }
}

}  // namespace spotsigs::pg
