// Length-bucket locks for the 'locked' mode of spotsigs_flag_duplicates().
#include "pg/trigger/trigger_locks.hpp"

extern "C" {
#include "catalog/pg_class.h"
#include "storage/lmgr.h"
}

#include "core/common/length_buckets.hpp"

namespace spotsigs::pg {

void lock_length_buckets(Oid relid, uint64 length, double tau) {
    if (length == 0) return;
    BucketRange r = length_bucket_range(length, tau);
    // Object locks (pg_class, the table, the bucket), not advisory ones: every role may take any
    // advisory lock, and one with no privilege on the table could hold these keys and stall its
    // writers. No SQL command takes an object lock of pg_class with a sub-id: only this trigger,
    // which fires for the table's writers alone. Buckets start at 1, so sub-id 0 (a whole-object
    // lock some code may take on a table's pg_class entry) is never used.
    for (int b = r.first; b <= r.last; ++b)
        LockDatabaseObject(RelationRelationId, relid, uint16(b), b == r.own ? ExclusiveLock : ShareLock);
}

}  // namespace spotsigs::pg
