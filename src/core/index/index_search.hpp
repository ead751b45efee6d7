// The search logic of the spotsigs index access method, free of PostgreSQL.
//
// The index keeps, per (signature hash, length partition), a posting list of (id, |y|, freq)
// sorted by descending |y| and then ascending id. A threshold query q at tau:
//  * visits only lengths that can reach tau: fl(min(|q|,|y|) / max(|q|,|y|)) >= tau (paper eq. 6);
//  * reads q's signatures rarest first, admitting new candidates only while an unseen entry could
//    still reach tau with the overlap left in q's unread signatures (the prefix bound), then only
//    completes the overlaps of the live candidates, dropping each as soon as it cannot reach tau;
//  * computes each survivor's exact similarity from its accumulated overlap o and |y| with the same
//    floating-point expression as similarity(), so results equal a sequential scan's.
// A bound prunes only when its computed value is < tau; the bounds are monotone in the overlap and
// every rounding step (integer to double, one division) is monotone, so pruning never loses a match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/index/posting_sort.hpp"
#include "core/signature/multiset.hpp"

namespace spotsigs {

// One entry of a posting list: the row id (a packed heap TID), its length |y| and the frequency
// of the list's signature in it.
struct Posting {
    uint64_t id = 0;
    uint32_t length = 0;
    uint32_t freq = 0;
};

// The similarity of two multisets of lengths a and b with overlap o (same expression as similarity()).
inline double similarity_from_overlap(uint64_t o, uint64_t a, uint64_t b) noexcept {
    if (a == 0 || b == 0) return 0.0;
    return static_cast<double>(o) / static_cast<double>(a + b - o);
}

// True unless an overlap of at most omax between lengths a and b proves similarity < tau.
bool overlap_may_reach(uint64_t omax, uint64_t a, uint64_t b, double tau) noexcept;

// Inclusive range of lengths |y| with fl(min/max) >= tau for |q| = qlen; empty when lo > hi.
struct LengthRange {
    uint64_t lo = 1;
    uint64_t hi = 0;
    bool empty() const noexcept { return lo > hi; }
};

// The lengths that can reach tau against a query of length qlen (tau in (0, 1]).
LengthRange length_range(uint64_t qlen, double tau) noexcept;

// Geometric length partitions: boundaries b0 = 1, b(k+1) = bk + max(1, bk * growth / 100), in
// integers so that every platform computes the same partitions. Length 0 is partition 0 alone.
class Partitioning {
public:
    // growth_percent in [1, 1000].
    explicit Partitioning(uint32_t growth_percent);
    // The partition holding length len.
    uint32_t partition_of(uint64_t len) const noexcept;
    // The smallest length in partition p.
    uint64_t lower(uint32_t p) const noexcept;
    // The largest length in partition p.
    uint64_t upper(uint32_t p) const noexcept;
    // Number of partitions (covering lengths 0 .. kMaxLength).
    uint32_t count() const noexcept { return static_cast<uint32_t>(starts_.size()); }

private:
    std::vector<uint64_t> starts_;  // starts_[p] = smallest length of partition p
};

// Access to the posting lists of the query's signatures (implemented over pages or memory).
class PostingSource {
public:
    virtual ~PostingSource() = default;
    // Number of postings of query signature i with length in [lo, hi] (may over-estimate).
    virtual uint64_t count(uint32_t i, uint64_t lo, uint64_t hi) = 0;
    // Calls fn on the postings of query signature i with length in [lo, hi] (postings outside the
    // range may be delivered too and are ignored), in any order; stops early when fn returns false.
    virtual void scan(uint32_t i, uint64_t lo, uint64_t hi, const std::function<bool(const Posting&)>& fn) = 0;
    // A hint: the lists of query signatures idx[0..n) are read next, so a source that looks
    // lists up may look these up together (ascending idx). The default ignores it.
    virtual void prepare(const uint32_t* idx, size_t n) {
        (void)idx;
        (void)n;
    }
};

// One result of a search.
struct Match {
    uint64_t id;
    double similarity;
};

// A candidate a search leaves to its caller: its length and the most its similarity can be.
struct Unverified {
    uint64_t id;
    uint32_t length;
    double bound;
};

// Every id with similarity(q, y) >= tau, exactly; order unspecified. tau must be in (0, 1].
// Signatures are read in ascending order of their posting counts, from src.count() for all of
// them first; with df_estimate (one estimate per query signature) in ascending order of the
// estimates instead, and count() and the lookups behind it happen only for the lists read. The
// order only decides how much is read: the result is exact for any estimates.
// With unverified, a caller that can compute similarities itself (from the rows) lets the search
// stop early: once no new candidate can be admitted and the live candidates are no more than the
// lists left to read, they are appended to *unverified instead of being completed. Every id with
// similarity >= tau is then either returned or among them (with bound >= its similarity).
std::vector<Match> threshold_search(const MultisetView& q, double tau, PostingSource& src,
                                    const uint64_t* df_estimate = nullptr,
                                    std::vector<Unverified>* unverified = nullptr);

// The thresholds an ordered (<->) scan descends through: each tier returns the matches with
// similarity in [tier(t), tier(t-1)); after the last positive tier come the rows with similarity 0.
double order_tier(size_t t) noexcept;
// Number of positive tiers.
size_t order_tier_count() noexcept;

// ---- posting list coding: varints, lengths as deltas, ids as deltas within equal lengths ----

// Most bytes one encoded posting takes.
constexpr size_t kMaxPostingBytes = 20;

// Appends p (after prev, or first in a run when prev is null) to out; returns bytes written.
size_t encode_posting(unsigned char* out, const Posting& p, const Posting* prev) noexcept;

// Decodes one posting at *pos (< end) into out; false on malformed bytes (frequency 0 is allowed:
// document lists store the distinct count, 0 for an empty value).
bool decode_posting_nothrow(const unsigned char*& pos, const unsigned char* end, Posting& out,
                            const Posting* prev) noexcept;

// Decodes one posting at *pos (< end) into out; throws Error(DataCorrupted) on malformed bytes.
void decode_posting(const unsigned char*& pos, const unsigned char* end, Posting& out, const Posting* prev);

// Orders postings as lists keep them (list_order_before).
inline bool posting_before(const Posting& a, const Posting& b) noexcept {
    return list_order_before(a.length, a.id, b.length, b.id);
}

// Appends a varint (7 bits a byte, low first) to out; returns bytes written.
size_t put_varint(unsigned char* out, uint64_t v) noexcept;

}  // namespace spotsigs
