// A Bloom filter over 64-bit signature hashes: "certainly absent" or "maybe present".
//
// The index keeps one for each segment a backend wrote itself (the pending-list merges of a long
// COPY), so a search skips the lookups of hashes the segment cannot hold: every lookup pins a page
// of the segment, and a row of new content finds none of its hashes in the small segments.
//
// Blocked layout: each key sets kProbes bits of one 64-bit word, so a test reads one cache line.
// A key added is always reported present (no false negatives); an absent key is reported
// present with probability about 1-2% at the default 16 bits per key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/signature/hash.hpp"

namespace spotsigs {

class KeyFilter {
public:
    // An empty filter sized for expected_keys keys at bits_per_key bits each (at least 64 bits).
    explicit KeyFilter(size_t expected_keys, unsigned bits_per_key = 16);

    // Adds a key.
    void add(uint64_t key) noexcept {
        const uint64_t m = mix(key);
        words_[m >> shift_] |= mask_of(m);
    }

    // False only when key was never added.
    bool may_contain(uint64_t key) const noexcept {
        const uint64_t m = mix(key);
        const uint64_t w = mask_of(m);
        return (words_[m >> shift_] & w) == w;
    }

    // Bytes held.
    size_t bytes() const noexcept { return words_.size() * sizeof(uint64_t); }

private:
    static constexpr unsigned kProbes = 3;

    // A bijective mix of the key (signature hashes are already spread; this guards against
    // keys that differ only in their low bits).
    static uint64_t mix(uint64_t k) noexcept { return fmix64(k); }
    // The kProbes bits a mixed key sets in its word (positions from its low 18 bits; its top
    // bits choose the word).
    static uint64_t mask_of(uint64_t m) noexcept {
        uint64_t w = 0;
        for (unsigned p = 0; p < kProbes; ++p) w |= uint64_t(1) << ((m >> (6 * p)) & 63);
        return w;
    }

    std::vector<uint64_t> words_;  // a power of two of them
    unsigned shift_;               // 64 - log2(words)
};

}  // namespace spotsigs
