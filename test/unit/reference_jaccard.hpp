// The reference for multiset Jaccard in the unit tests: computed with maps, independent of the
// library's merge.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

namespace spotsigs_test {

// Overlap (sum of the smaller counts) and union (sum of the larger ones) of two documents given
// as (hash, frequency) pairs in any order (equal hashes are summed).
template <class Doc>
std::pair<uint64_t, uint64_t> overlap_union(const Doc& x, const Doc& y) {
    std::map<uint64_t, uint64_t> fx, fy;
    for (auto& p : x) fx[p.first] += p.second;
    for (auto& p : y) fy[p.first] += p.second;
    uint64_t o = 0, u = 0;
    for (auto& [h, f] : fx) {
        auto it = fy.find(h);
        uint64_t g = it == fy.end() ? 0 : it->second;
        o += std::min(f, g);
        u += std::max(f, g);
    }
    for (auto& [h, g] : fy)
        if (!fx.count(h)) u += g;
    return {o, u};
}

}  // namespace spotsigs_test
