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

// What the threshold of a search bounds.
enum class SearchMeasure : uint8_t {
    // similarity(q, y) >= tau: the matches and their similarities, exactly.
    kPlain,
    // The content measure's overlap bound: fl(o / |q|) >= tau, o the overlap of q and y. When q is
    // a row's content (no signature of a template t), every row whose content similarity to q
    // against t reaches tau passes it (content_bound below), so the matches are candidates of the
    // content measure, each with fl(o / |q|), an upper bound of its content similarity.
    kContentBound,
};

// The content bound fl(o / |q|) of an overlap o with a query of length qlen (qlen > 0), computed
// as similarity() would compute the similarity of q with a row equal to the overlap.
//
// Claim: let q be a row's content (it holds no signature of the template t), b any row, bc the
// content of b (b without the signatures of t), o = overlap(q, bc). Then
// fl(o / (|q| + |bc| - o)) >= tau implies content_bound(o, |q|) >= tau, and o is also the plain
// overlap of q and b.
// Proof: q holds no signature of t, so the signatures q shares with b are all in bc, with the same
// frequencies: overlap(q, b) = overlap(q, bc) = o. o <= |bc|, so the integer denominator
// |q| + |bc| - o is at least |q| (integers below 2^53 are exact doubles), and a correctly rounded
// division does not grow with its divisor: fl(o / (|q| + |bc| - o)) <= fl(o / |q|). QED.
// So a search of q at tau that passes every row with fl(o / |q|) >= tau keeps every content
// match; |b| >= |bc| >= o bounds the lengths from below only (a row's template part may be any
// size), and the overlap is read from q's lists alone, none of which is a template signature's.
inline double content_bound(uint64_t o, uint64_t qlen) noexcept {
    return similarity_from_overlap(o, qlen, o);
}

// The lengths of the rows that can pass the content bound at tau for a query of length qlen:
// [the least o with content_bound(o, qlen) >= tau, kMaxLength]; empty when qlen is 0.
LengthRange content_length_range(uint64_t qlen, double tau) noexcept;

// Every id with similarity(q, y) >= tau, exactly; order unspecified. tau must be in (0, 1].
// Signatures are read in ascending order of their posting counts, from src.count() for all of
// them first; with df_estimate (one estimate per query signature) in ascending order of the
// estimates instead, and count() and the lookups behind it happen only for the lists read. The
// order only decides how much is read: the result is exact for any estimates.
// With unverified, a caller that can compute similarities itself (from the rows) lets the search
// stop early: once no new candidate can be admitted and the live candidates are no more than the
// lists left to read, they are appended to *unverified instead of being completed. Every id with
// similarity >= tau is then either returned or among them (with bound >= its similarity).
// With measure kContentBound, "similarity" above reads content_bound(overlap, |q|) throughout:
// every id whose content bound reaches tau, with that bound, exactly (or among the unverified,
// with a bound at least its content bound).
std::vector<Match> threshold_search(const MultisetView& q, double tau, PostingSource& src,
                                    const uint64_t* df_estimate = nullptr,
                                    std::vector<Unverified>* unverified = nullptr,
                                    SearchMeasure measure = SearchMeasure::kPlain);

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
