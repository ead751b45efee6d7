// Length buckets of the trigger's 'locked' mode: which spotsig lengths a new row's near
// duplicates can have, as a range of buckets a writer locks (src/pg/trigger/trigger_locks.hpp).
//
// A spotsig b can reach similarity tau with a only if tau*|a| <= |b| <= |a|/tau (multiset Jaccard
// is at most min/max of the lengths), and every stored length is in [1, kMaxLength]. Lengths are
// grouped in buckets: one per length below 16, then 8 per doubling (the top four bits), a
// monotone integer function.
#pragma once

#include <cstdint>

namespace spotsigs {

// The bucket of a spotsig length: L below 16, else 8 per doubling; monotone in L. Lengths in
// [1, kMaxLength] have buckets in [1, 231].
int length_bucket(uint64_t length);

// The buckets a row of length L locks: [first, last] holds the bucket of every length in
// [tau*L, L/tau] that a stored value can have (so within [1, kMaxLength]), widened by one length
// on each side so that rounding can only add buckets; own is bucket(L). Defined for every tau in
// (0, 1], however small: L/tau may exceed every integer type (or be infinite), and is bounded by
// kMaxLength before any conversion. L must be in [1, kMaxLength].
struct BucketRange {
    int first;
    int own;
    int last;
};
BucketRange length_bucket_range(uint64_t length, double tau);

}  // namespace spotsigs
