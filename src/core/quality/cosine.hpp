// Cosine similarity of spotsig frequency vectors.
#pragma once

#include "core/signature/multiset.hpp"

namespace spotsigs {

// Cosine of the two term-frequency vectors: sum fa*fb / (||a|| * ||b||); 0 when either side is
// empty. Plain tf weights: filter by IDF range first (idf_filter) to discount common signatures.
double cosine_similarity(const MultisetView& a, const MultisetView& b) noexcept;

}  // namespace spotsigs
