// SignatureCounts (src/core/extract/signature_counts.hpp) over a general map, for
// containers_bench.sh: SPOTSIGS_COUNTS_MAP names the map template (boost::unordered_flat_map,
// std::unordered_map).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace spotsigs {

// Accumulates (hash, count) occurrences; equal hashes are summed.
class SignatureCounts {
public:
    // Adds count occurrences of hash.
    void add(uint64_t hash, uint64_t count) { map_[hash] += count; }

    // The distinct hashes with their counts, in no particular order.
    std::vector<std::pair<uint64_t, uint64_t>> pairs() const {
        std::vector<std::pair<uint64_t, uint64_t>> out;
        out.reserve(map_.size());
        for (const auto& e : map_) out.emplace_back(e.first, e.second);
        return out;
    }

private:
    SPOTSIGS_COUNTS_MAP<uint64_t, uint64_t> map_;
};

}  // namespace spotsigs
