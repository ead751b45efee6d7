// The template a content query names (spotsigs_content_query, src/sql/45_content_query.sql): a
// query value carries no template, only the relation, the column and the version of the stored
// statistics it was made with (their analyzed_at, new for every spotsigs_analyze), and every user
// of the value (the operators, the index scan, the SQL join) finds the template here. A backend
// reads and prepares the template of a version once and keeps it; whether a version is the
// stored one is read in the store once per snapshot.
//
// C-style PostgreSQL code apart from the shared pointers, which only the cache and its callers'
// explicit copies hold.
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "datatype/timestamp.h"
}

#include <cstdint>
#include <memory>
#include <vector>

#include "core/template/content.hpp"

namespace spotsigs::pg {

// A template prepared for the content measure: its hashes (ascending), searched in place (a
// galloping search from the previous signature's place, core/template/stored.hpp) until the
// signatures looked up in it add up to a quarter of its size, then through a hash set of it
// (content.hpp), built once. A backend's first searches (one query's signatures, a few
// candidates) thus cost a few searches instead of building a set of every template signature (a
// table of twice its size, written at random), and a backend that looks many rows up pays for
// the set once, when its searches have cost about as much. Both ways give the same values bit
// for bit (test_stored_template.cpp).
// Used on the backend's thread only (the lazy set is not synchronised).
class PreparedTemplate {
public:
    std::vector<uint64_t> hashes;
    PreparedTemplate(const uint64_t* h, size_t n) : hashes(h, h + n) {}
    // content_of (core/template/stored.hpp) against this template.
    uint32_t content_of(const MultisetView& doc, uint64_t* out_hashes, uint32_t* out_freqs, uint64_t* length) const;
    // content_similarity (core/template/stored.hpp) against this template.
    double content_similarity(const MultisetView& qc, const MultisetView& b) const;

private:
    // The set, once lookups more signatures (counted with the earlier ones) make it worth
    // building; null before. May throw (allocation).
    const SignatureSet* set_for(size_t lookups) const;
    mutable std::unique_ptr<SignatureSet> set_;
    mutable size_t looked_up_ = 0;
};
using TemplateRef = std::shared_ptr<const PreparedTemplate>;

// What a snapshot sees of the store: the transactions it sees as completed (its xmin, xmax and the
// transactions in progress it lists) and, in a transaction that wrote the store, its command id.
// Two snapshots with equal keys see the same rows of the store.
struct SnapKey {
    static constexpr int kXids = 64;
    bool valid;  // false: no key (no active MVCC snapshot, or too many transactions in progress)
    LocalTransactionId lxid;
    TransactionId xmin, xmax;
    CommandId curcid;
    uint32 n;
    TransactionId xids[kXids];  // in progress, sorted
};

// The key of the active snapshot; false (k->valid false) when it has none.
bool snapshot_key(SnapKey* k);

// Whether two keys are valid and equal.
bool same_snapshot(const SnapKey& a, const SnapKey& b);

// Records that the current transaction has written the store (spotsigs_analyze): its later
// commands see their own writes, so the lookups of this transaction count the command id.
void note_store_written();

// The empty template (no signature): the content measure is then the plain one, bit for bit.
TemplateRef empty_template();

// Whether the current user may see the statistics of (rel, column), by the rule of the view
// spotsigs_stats (and of pg_stats): the column exists, the user has SELECT on it (or on the
// table), and row-level security does not apply to the user on the table. Raises PostgreSQL
// errors.
bool template_visible(Oid rel, const char* column);

// The statistics stored for (rel, column) as the active snapshot sees them, whoever the user is:
// *found, and when found their version (analyzed_at) and template. One snapshot reads the store
// once per (rel, column); a version's template is read and prepared once per backend. Raises
// PostgreSQL errors.
void current_template(Oid rel, const char* column, bool* found, TimestampTz* version, TemplateRef* out);

// The template of (rel, column) at version: ERROR 42501 when the user may not see those
// statistics (template_visible), 55000 when they are not the ones stored for the column as the
// active snapshot sees them (analyzed again since the value was made, dropped, or restored from
// a dump taken before the last analyze). Raises PostgreSQL errors.
TemplateRef named_template(Oid rel, const char* column, TimestampTz version);

}  // namespace spotsigs::pg
