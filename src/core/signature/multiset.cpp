// Multiset construction and the Jaccard similarities.
#include "core/signature/multiset.hpp"

#include <algorithm>
#include <limits>

#include "core/common/error.hpp"

namespace spotsigs {

Multiset Multiset::from_pairs(std::vector<std::pair<uint64_t, uint64_t>> pairs) {
    std::sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    Multiset m;
    m.hashes.reserve(pairs.size());
    m.freqs.reserve(pairs.size());
    uint64_t total = 0;
    constexpr uint64_t kMax = kMaxLength;
    for (size_t i = 0; i < pairs.size();) {
        uint64_t h = pairs[i].first;
        uint64_t f = 0;
        for (; i < pairs.size() && pairs[i].first == h; ++i) {
            f += pairs[i].second;
            if (f > kMax) throw Error(ErrorKind::ProgramLimit, "signature frequency exceeds 2147483647");
        }
        if (f == 0) continue;
        total += f;
        if (total > kMax) throw Error(ErrorKind::ProgramLimit, "spotsig length exceeds 2147483647");
        m.hashes.push_back(h);
        m.freqs.push_back(static_cast<uint32_t>(f));
    }
    m.length = total;
    return m;
}

uint64_t overlap(const MultisetView& a, const MultisetView& b) noexcept {
    uint64_t sum = 0;
    uint32_t i = 0, j = 0;
    while (i < a.size && j < b.size) {
        uint64_t x = a.hashes[i], y = b.hashes[j];
        if (x < y) {
            ++i;
        } else if (y < x) {
            ++j;
        } else {
            sum += std::min(a.freqs[i], b.freqs[j]);
            ++i;
            ++j;
        }
    }
    return sum;
}

double similarity(const MultisetView& a, const MultisetView& b) noexcept {
    if (a.empty() || b.empty()) return 0.0;
    uint64_t o = overlap(a, b);
    // sum of max = |a| + |b| - sum of min, since min + max = freqA + freqB per signature
    return static_cast<double>(o) / static_cast<double>(a.length + b.length - o);
}

double set_similarity(const MultisetView& a, const MultisetView& b) noexcept {
    if (a.empty() || b.empty()) return 0.0;
    uint64_t common = 0;
    uint32_t i = 0, j = 0;
    while (i < a.size && j < b.size) {
        if (a.hashes[i] < b.hashes[j]) {
            ++i;
        } else if (b.hashes[j] < a.hashes[i]) {
            ++j;
        } else {
            ++common;
            ++i;
            ++j;
        }
    }
    return static_cast<double>(common) / static_cast<double>(a.size + b.size - common);
}

bool equal(const MultisetView& a, const MultisetView& b) noexcept {
    if (a.size != b.size || a.length != b.length) return false;
    for (uint32_t i = 0; i < a.size; ++i)
        if (a.hashes[i] != b.hashes[i] || a.freqs[i] != b.freqs[i]) return false;
    return true;
}

}  // namespace spotsigs
