// The content measure against a given template (a sorted array of signature hashes, such as the
// one spotsigs_analyze() stores): membership, a row's content, the content similarity of two
// rows, and the plain-measure threshold an index search needs so that it loses no row whose
// content similarity reaches a threshold.
//
// Everything here is noexcept and allocation-free, so PostgreSQL-side code may call it on
// palloc'd arrays.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/signature/multiset.hpp"

namespace spotsigs {

// True when h is one of t[0 .. n) (ascending).
bool template_contains(const uint64_t* t, size_t n, uint64_t h) noexcept;

// Writes doc without the signatures in t[0 .. n) (ascending) to hashes and freqs (room for
// doc.size entries each); returns the number written and sets *length to their frequencies' sum.
uint32_t content_of(const MultisetView& doc, const uint64_t* t, size_t n, uint64_t* hashes, uint32_t* freqs,
                    uint64_t* length) noexcept;

// similarity(content(a), content(b)) for a row a whose content is qc (no signature of t) and a
// row b, computed with similarity()'s expression on the same integers, so the value equals
// similarity(spotsig_remove(a, t), spotsig_remove(b, t)) exactly.
double content_similarity(const MultisetView& qc, const MultisetView& b, const uint64_t* t, size_t n) noexcept;

// A threshold of the plain measure that every row b of length at most max_length whose content
// similarity to qc (a row's content, length qc_length) reaches tau also reaches against qc:
// similarity(qc, b) >= the result. Proof: let o be the content overlap, |bc| b's content length;
// content similarity o / (|qc| + |bc| - o) >= tau with |bc| >= o gives o >= tau |qc|. qc holds no
// template signature, so the plain overlap of qc and b is o too, and similarity(qc, b) =
// o / (|qc| + |b| - o) grows with o: it is at least tau |qc| / ((1 - tau) |qc| + |b|), and at least
// that with |b| = max_length. The value returned is that bound less a relative margin far above
// the rounding error of any of these computations, and at least kMinCandidateThreshold. Rows
// longer than max_length are not covered (the caller bounds the lengths it searches).
double candidate_threshold(uint64_t qc_length, double tau, uint64_t max_length) noexcept;

// The smallest threshold candidate_threshold returns (thresholds must be > 0).
constexpr double kMinCandidateThreshold = 1e-9;

}  // namespace spotsigs
