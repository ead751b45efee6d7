// Counting signature hashes of one document: an open-addressing hash -> count map that grows
// with the number of distinct signatures, not with the document.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace spotsigs {

// Accumulates (hash, count) occurrences; equal hashes are summed.
class SignatureCounts {
public:
    // Adds count occurrences of hash.
    void add(uint64_t hash, uint64_t count) {
        if (2 * (used_ + 1) > slots_.size()) grow();
        size_t mask = slots_.size() - 1;
        for (size_t k = mix(hash) & mask;; k = (k + 1) & mask) {
            Slot& s = slots_[k];
            if (s.count == 0) {
                s.hash = hash;
                s.count = count;
                ++used_;
                return;
            }
            if (s.hash == hash) {
                s.count += count;
                return;
            }
        }
    }

    // The distinct hashes with their counts, in no particular order.
    std::vector<std::pair<uint64_t, uint64_t>> pairs() const {
        std::vector<std::pair<uint64_t, uint64_t>> out;
        out.reserve(used_);
        for (const Slot& s : slots_)
            if (s.count != 0) out.emplace_back(s.hash, s.count);
        return out;
    }

private:
    // One entry; count 0 marks an empty slot (every added count is at least 1).
    struct Slot {
        uint64_t hash = 0;
        uint64_t count = 0;
    };

    // Spreads the hash bits again so that hashes differing only high still spread.
    static uint64_t mix(uint64_t h) noexcept { return (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL >> 7; }

    // Doubles the table (starting at 64 slots) and reinserts the entries.
    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
        used_ = 0;
        for (const Slot& s : old)
            if (s.count != 0) add(s.hash, s.count);
    }

    std::vector<Slot> slots_;
    size_t used_ = 0;
};

}  // namespace spotsigs
