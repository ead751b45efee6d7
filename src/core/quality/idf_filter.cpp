// Document-frequency counting and the IDF-range filter (a merge over two sorted hash arrays).
#include "core/quality/idf_filter.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "core/common/error.hpp"

namespace spotsigs {

void DfCounter::add(const MultisetView& doc) {
    for (uint32_t i = 0; i < doc.size; ++i) ++df_[doc.hashes[i]];
    ++docs_;
}

Multiset DfCounter::result() const {
    std::vector<std::pair<uint64_t, uint64_t>> pairs(df_.begin(), df_.end());
    return Multiset::from_pairs(std::move(pairs));
}

double normalized_idf(uint64_t df, uint64_t n) noexcept {
    double d = df == 0 ? 1.0 : static_cast<double>(df);
    return std::log(static_cast<double>(n) / d) / std::log(static_cast<double>(n));
}

Multiset idf_filter(const MultisetView& doc, const MultisetView& df, uint64_t n, double lo, double hi) {
    if (n < 2)
        throw Error(ErrorKind::InvalidParameter, "the collection must hold at least 2 documents",
                    "n is " + std::to_string(n) + ".");
    Multiset out;
    uint32_t j = 0;
    for (uint32_t i = 0; i < doc.size; ++i) {
        uint64_t h = doc.hashes[i];
        while (j < df.size && df.hashes[j] < h) ++j;
        uint64_t f = (j < df.size && df.hashes[j] == h) ? df.freqs[j] : 0;
        double idf = normalized_idf(f, n);
        if (idf < lo || idf > hi) continue;
        out.hashes.push_back(h);
        out.freqs.push_back(doc.freqs[i]);
        out.length += doc.freqs[i];
    }
    return out;
}

}  // namespace spotsigs
