// The guaranteed ('locked') concurrency mode: locks on the length buckets where the new row's
// near duplicates can lie.
//
// A spotsig b can reach similarity tau with a only if tau*|a| <= |b| <= |a|/tau (multiset Jaccard
// is at most min/max of the lengths). Lengths are grouped in buckets (core/common/length_buckets.hpp).
// An inserter of length L takes, in ascending bucket order, an exclusive transaction-level
// lock on bucket(L) and shared ones on the other buckets of [tau*L, L/tau]. Of two near
// duplicates a and b, b's range holds |a|, so b locks bucket(|a|), which a holds exclusively:
// the two transactions cannot hold their locks at once, and the later one queries (with a fresh
// READ COMMITTED snapshot) only after the earlier one has committed or aborted. The locks are
// object locks (pg_class, table, bucket), which no SQL command takes, so that only the table's
// writers can hold them (advisory locks are open to every role).
#pragma once

#include "pg/pg.hpp"

namespace spotsigs::pg {

// Takes the locks for a row of the given length in table relid, at threshold tau.
void lock_length_buckets(Oid relid, uint64 length, double tau);

}  // namespace spotsigs::pg
