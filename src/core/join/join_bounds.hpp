// The exact thresholds every pruning step of the join rests on, each with its proof.
//
// Notation: A and B are non-empty multisets, a = |A| and b = |B| their lengths (sums of
// frequencies), o = sum over common signatures of min(freqA, freqB) their overlap, s = a + b.
// The join reports (A, B) iff similarity() returns a value >= tau, where similarity() computes
// fl(o / (s - o)): both operands are integers below 2^53, so they convert exactly and the quotient
// is the correctly rounded real quotient.
//
// Lemma 0 (monotone rounding). Correct rounding is monotone: x <= y implies fl(x) <= fl(y).
//
// Lemma 1 (the required overlap). For a fixed s >= 2, q(o) = o / (s - o) is strictly increasing in
// o on [0, s), so by Lemma 0 "fl(q(o)) >= tau" is monotone in o: false up to some integer, true
// from it on. Call req(s) the smallest integer o >= 1 with fl(o / (s - o)) >= tau. It exists and
// is at most ceil(s / 2): there q(o) >= 1 >= tau. Hence, exactly,
//     similarity(A, B) >= tau  <=>  o >= req(a + b).
// Every pruning test below proves "o <= U" for some integer U and prunes iff U < req(a + b); no
// floating-point value other than the one similarity() itself computes is ever compared to tau.
//
// Lemma 2 (req grows with s). For fixed o, q(o) = o / (s - o) decreases as s grows, so by Lemma 0
// the predicate can only turn false; thus req(s) <= req(s') whenever s <= s'.
//
// Lemma 3 (length filter, paper eq. 6 made exact). o <= min(a, b). With a <= b, o = a gives
// q = a / b, so "req(a + b) <= min(a, b)" <=> fl(min(a,b) / max(a,b)) >= tau. A pair that fails it
// can never be reported. For fixed b the set of partner lengths a <= b that pass is an interval
// [lo(b), b], lo(b) the smallest a with fl(a / b) >= tau (monotone in a by Lemma 0).
//
// Lemma 4 (unseen mass; the corrected delta1 of the paper). Fix any total order on signatures and
// sort both documents by it. Let s* be the first common signature of A and B, and pos_X(s*) the
// mass of X's signatures that come before s*; suf_X(s*) = |X| - pos_X(s*). Every common signature
// is at or after s* in both documents, and min(fA, fB) <= each side's frequency, so
//     o <= min(suf_A(s*), suf_B(s*)).
// The paper's delta1 is pos_A of the list being read (the mass of the lists finished so far); its
// bound for multisets is therefore "prune B iff min(a - delta1, b - pos_B) < req(a + b)". The
// paper's own line 18 test (delta1 + delta2 > (1 - tau)|d_i| for a shorter partner) is not a valid
// upper bound (A = {x, y1..y10}, B = {y1..y10}, tau = 0.9: it skips B at sim 10/11); the paper's
// algorithm only survives it because the shorter document probes too. Here every bound is
// Lemma 4 or Lemma 5, and each pair is examined from one side only.
//
// Lemma 5 (prefixes). If o >= req(a + b) =: t, then by Lemma 4 the first common signature s*
// has suf_A(s*) >= t and suf_B(s*) >= t. So a probe needs to read only the signatures whose
// suffix mass reaches the smallest t of any admissible partner, and an indexed document needs to
// be listed only under the signatures whose suffix mass reaches the smallest t of any partner.
// By Lemma 2 and Lemma 3 the smallest t for a document of length x whose partners are at least
// as long is req(2x); whose partners may be shorter is req(x + lo(x)). (PPJoin's prefix filter,
// generalised to multisets by counting mass instead of tokens.)
//
// Lemma 6 (verification cut-off). While merging two sorted documents, with o_seen the overlap of
// the signatures merged so far and r_A, r_B the masses still ahead on each side, the final
// overlap is at most o_seen + min(r_A, r_B) (the same argument as Lemma 4 on the remainders);
// the merge stops as soon as that is below t. (The Java prototype instead rejected when the
// mass of mismatches exceeded (1 - tau) * max(a, b); with A = {b:1,c:3,d:4,e:2,f:3} and
// B = {b:2,c:3,d:4,f:4} the mismatch mass is 4 > 3.9 at tau = 0.7 although sim = 11/15. The right
// test compares against the union, which is larger than max(a, b).)
//
// Lemma 7 (shared prefix count; PPJoin's prefix overlap, for multisets). Fix a total order and let
// P_X be the prefix of X under it: the longest initial segment of X's signatures whose every
// member has suffix mass >= need_X (Lemma 5 with need_X = req(x + lo(x))). The mass of X after
// P_X, r_X, is then below need_X: r_X <= need_X - 1. Let e_X be P_X's last signature and say
// e_A <= e_B in the order. A common signature w <= e_A lies in P_A (an initial segment of A) and,
// as w <= e_B, in P_B. A common signature w > e_A lies after P_A, so those add at most r_A to the
// overlap. With C = the sum of min(fA, fB) over the signatures in both prefixes,
//     o <= C + r_A <= C + max(need_A, need_B) - 1,
// and symmetrically when e_B <= e_A. When no signature in both prefixes has a frequency above 1
// in both documents, C is the number of signatures the prefixes share. For tau = 0.9 and two
// documents of 88 distinct signatures, need = req(168) = 80 and req(176) = 84: the pair needs 5
// of its 9 prefix signatures in common, where Lemma 4 lets any single one through.
//
// Lemma 8 (count filter over lengthened prefixes). Fix a pair, t = req(a + b) and an integer
// l >= 1. Cover each document X by the longest initial segment Q_X of its signatures whose every
// member has suffix mass >= c_X, with c_A, c_B <= t - l + 1. The mass after Q_X is below c_X and
// never negative: r_X <= max(0, t - l). Lemma 7's argument (a common signature beyond the segment
// that ends first lies in that segment's remainder) gives o <= C + max(0, t - l), C the sum of
// min(fA, fB) over the signatures in both segments; so o >= t implies C >= min(t, l), and C is at
// most S = the sum of fA over those signatures. A pair whose S is below min(t, l) is dropped
// unverified. The index matcher lists each indexed document down to c_B = need_B - (l - 1) and
// reads a probe's lists, for a partner of requirement t, while A's suffix mass is at least
// t - (l - 1) (with need_A <= t and need_B <= t from Lemma 2, as in Lemma 5); so it meets every
// signature of both segments and sums S exactly. With l = 1 this is Lemma 5 alone; at low
// thresholds the prefixes hold most of each document, two documents that share one signature
// among them are most candidates, and l = 3 drops them for two more signatures per prefix.

#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace spotsigs::join_detail {

// True when fl(num / den) >= tau; the one comparison with tau that every bound reduces to.
inline bool ratio_reaches(uint64_t num, uint64_t den, double tau) noexcept {
    return static_cast<double>(num) / static_cast<double>(den) >= tau;
}

// req(s) of Lemma 1: the least overlap that makes a pair of total length s reach tau (s >= 2).
inline uint64_t required_overlap_exact(uint64_t s, double tau) noexcept {
    const uint64_t top = (s + 1) / 2;  // ceil(s/2): always qualifies, and s - top >= 1
    double est = std::ceil(tau * static_cast<double>(s) / (1.0 + tau));
    uint64_t g = est < 1.0 ? 1 : (est > static_cast<double>(top) ? top : static_cast<uint64_t>(est));
    // The estimate is within a few units; walk to the exact boundary of the monotone predicate.
    while (g > 1 && ratio_reaches(g - 1, s - (g - 1), tau)) --g;
    while (!ratio_reaches(g, s - g, tau)) ++g;
    return g;
}

// lo(b) of Lemma 3: the shortest partner length a <= b with fl(a / b) >= tau (b >= 1).
inline uint64_t min_partner_length(uint64_t b, double tau) noexcept {
    double est = std::ceil(tau * static_cast<double>(b));
    uint64_t g = est < 1.0 ? 1 : (est > static_cast<double>(b) ? b : static_cast<uint64_t>(est));
    while (g > 1 && ratio_reaches(g - 1, b, tau)) --g;
    while (!ratio_reaches(g, b, tau)) ++g;  // ends at g = b at the latest, since tau <= 1
    return g;
}

// req(s) for one tau, tabulated for small totals and computed beyond the table.
class RequiredOverlap {
public:
    // Tabulates req(s) for s < table_size (entries below 2 are unused).
    RequiredOverlap(double tau, uint64_t table_size) : tau_(tau), table_(table_size, 0) {
        for (uint64_t s = 2; s < table_size; ++s) table_[s] = static_cast<uint32_t>(required_overlap_exact(s, tau));
    }
    // req(s) for the total length s = a + b >= 2.
    uint64_t operator()(uint64_t s) const noexcept {
        return s < table_.size() ? table_[s] : required_overlap_exact(s, tau_);
    }
    // Bytes held by the table.
    size_t memory_bytes() const noexcept { return table_.size() * sizeof(uint32_t); }

private:
    double tau_;
    std::vector<uint32_t> table_;
};

}  // namespace spotsigs::join_detail
