// Cosine similarity by a merge over the two sorted hash arrays.
#include "core/quality/cosine.hpp"

#include <cmath>

namespace spotsigs {

double cosine_similarity(const MultisetView& a, const MultisetView& b) noexcept {
    if (a.empty() || b.empty()) return 0.0;
    double dot = 0, na = 0, nb = 0;
    for (uint32_t i = 0; i < a.size; ++i) na += double(a.freqs[i]) * a.freqs[i];
    for (uint32_t j = 0; j < b.size; ++j) nb += double(b.freqs[j]) * b.freqs[j];
    uint32_t i = 0, j = 0;
    while (i < a.size && j < b.size) {
        if (a.hashes[i] < b.hashes[j]) {
            ++i;
        } else if (b.hashes[j] < a.hashes[i]) {
            ++j;
        } else {
            dot += double(a.freqs[i]) * b.freqs[j];
            ++i;
            ++j;
        }
    }
    double c = dot / (std::sqrt(na) * std::sqrt(nb));
    return c > 1.0 ? 1.0 : c;
}

}  // namespace spotsigs
