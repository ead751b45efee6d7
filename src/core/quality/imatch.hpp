// I-Match fingerprints (Chowdhury et al.): one hash over a document's distinct (IDF-filtered)
// terms or signatures; documents with equal fingerprints are duplicates.
#pragma once

#include <cstdint>
#include <optional>

#include "core/signature/multiset.hpp"

namespace spotsigs {

// The fingerprint of the distinct signatures of m (frequencies are ignored, as I-Match hashes
// the set of its lexicon terms); none for an empty multiset, which must match nothing.
std::optional<uint64_t> imatch_fingerprint(const MultisetView& m) noexcept;

}  // namespace spotsigs
