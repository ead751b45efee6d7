// Length partitions from the threshold (paper section 4.2), built with the exact rounded ratio.
//
// p_0 = 1 and p_{k+1} is the smallest integer y > p_k with fl(p_k / y) < tau. Two facts hold for
// every pair of lengths x <= y with fl(x / y) >= tau (the exact length filter, join_bounds.hpp
// Lemma 3), where x lies in [p_k, p_{k+1}):
//   (A) y < p_{k+2}: otherwise x / y <= (p_{k+1} - 1) / p_{k+2} < p_{k+1} / p_{k+2}, and by
//       monotone rounding fl(x / y) <= fl(p_{k+1} / p_{k+2}) < tau. So y lies in partition k or
//       k + 1, and a probe needs only its own partition and its right neighbour.
//   (B) any y in [p_k, p_{k+1}) passes: fl(x / y) >= fl(p_k / y) >= tau because y < p_{k+1} and
//       p_{k+1} is the first length that fails against p_k (fl(p_k / y) falls as y grows).
// Boundaries are generated up to a limit; every length at or beyond the last boundary falls in
// one final open partition, which keeps (A) (its right neighbour is the rest of the line) and
// gives up (B) only inside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace spotsigs::join_detail {

// The boundaries p_0 < p_1 < ... of the length partitions for one tau.
class TauPartitions {
public:
    // Boundaries covering lengths up to max_length, at most max_parts of them (tau in (0, 1]).
    TauPartitions(double tau, uint64_t max_length, size_t max_parts = size_t(1) << 22);
    // Index k of the partition [p_k, p_{k+1}) holding len (len >= 1).
    size_t partition_of(uint64_t len) const noexcept;
    // p_k; for k past the last boundary, UINT64_MAX (the open end).
    uint64_t lower(size_t k) const noexcept;
    // Number of boundaries (the last partition is [p_last, infinity)).
    size_t count() const noexcept { return bounds_.size(); }
    // Bytes held.
    size_t memory_bytes() const noexcept { return bounds_.capacity() * sizeof(uint64_t); }

private:
    std::vector<uint64_t> bounds_;
};

// p_{k+1} for p_k = p: the smallest integer y > p with fl(p / y) < tau.
uint64_t next_partition_bound(uint64_t p, double tau) noexcept;

}  // namespace spotsigs::join_detail
