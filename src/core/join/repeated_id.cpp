// The smallest repeated id among a collection's ids (see repeated_id.hpp).
#include "core/join/repeated_id.hpp"

#include <algorithm>

#include "core/memory/huge_alloc.hpp"

namespace spotsigs {

namespace {
// A bitmap is used when the ids' range has at most this many values per row (at most 8 bytes
// of bitmap per row, the size of the id itself).
constexpr uint64_t kDenseSpan = 64;

// The smallest repeated id among n ids, id(i) the i-th.
template <class IdAt>
std::optional<int64_t> smallest_repeated(size_t n, const IdAt& id) {
    if (n < 2) return std::nullopt;
    int64_t lo = id(0), hi = lo;
    bool ascending = true;
    for (size_t i = 1; i < n; ++i) {
        const int64_t x = id(i);
        ascending = ascending && id(i - 1) <= x;
        lo = std::min(lo, x);
        hi = std::max(hi, x);
    }
    std::optional<int64_t> smallest;
    if (ascending) {
        for (size_t i = 1; i < n; ++i)
            if (id(i) == id(i - 1)) return id(i);
        return std::nullopt;
    }
    // hi >= lo, so the unsigned difference is the span even where the signed one overflows.
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    if (span / kDenseSpan < n) {
        HugeVector<uint64_t> seen(span / 64 + 1, 0);  // from the pool when allowed
        for (size_t i = 0; i < n; ++i) {
            const int64_t x = id(i);
            const uint64_t b = static_cast<uint64_t>(x) - static_cast<uint64_t>(lo);
            const uint64_t bit = uint64_t(1) << (b % 64);
            if (seen[b / 64] & bit) {
                if (!smallest || x < *smallest) smallest = x;
            } else {
                seen[b / 64] |= bit;
            }
        }
        return smallest;
    }
    HugeVector<int64_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = id(i);
    std::sort(ids.begin(), ids.end());
    auto dup = std::adjacent_find(ids.begin(), ids.end());
    if (dup != ids.end()) smallest = *dup;
    return smallest;
}

}  // namespace

std::optional<int64_t> repeated_id(const Collection& docs) {
    return smallest_repeated(docs.size(), [&](size_t i) { return docs.id(i); });
}

std::optional<int64_t> repeated_id(const std::vector<int64_t>& ids) {
    return smallest_repeated(ids.size(), [&](size_t i) { return ids[i]; });
}

}  // namespace spotsigs
