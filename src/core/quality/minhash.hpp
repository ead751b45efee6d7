// Min-hashing with banding (LSH) over spotsig multisets, for the LSH-S baseline.
#pragma once

#include <cstdint>
#include <vector>

#include "core/signature/multiset.hpp"

namespace spotsigs {

// Limits on k (rows per band) and l (bands); k * l must not exceed kMaxMinhashes.
constexpr int kMaxMinhashes = 4096;

// The l band keys of a multiset: band b concatenates k min-hashes (functions b*k .. b*k+k-1 of a
// family derived from seed) and is hashed together with b into one 64-bit key. Two values share
// a band's key with probability about J^k, J their multiset Jaccard similarity: the min-hashes
// run over the set of (signature, occurrence number) pairs, whose set Jaccard is the multiset
// Jaccard. An empty multiset has no keys. Throws Error(InvalidParameter) unless k, l >= 1 and
// k * l <= kMaxMinhashes.
std::vector<uint64_t> lsh_band_keys(const MultisetView& m, int k, int l, uint64_t seed);

}  // namespace spotsigs
