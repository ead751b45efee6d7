// The signature hash: part of the stored format, so it must never change.
//
// A signature's text is its words joined by ':' (e.g. "the:south:carolina", UTF-8, lowercase).
// Its hash is 64-bit FNV-1a over those bytes, finished with the MurmurHash3 fmix64 mixer so that
// the high bits are as good as the low ones (the index and the join partition on them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace spotsigs {

// MurmurHash3's fmix64 finaliser: a bijection of 64-bit integers with good avalanche (finishes
// signature hashes, and mixes keys where only some of their bits are used).
inline uint64_t fmix64(uint64_t k) noexcept {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb93fe53d87cdULL;
    k ^= k >> 33;
    return k;
}

// Incremental hasher: feed the pieces of a signature's text in order, then call finish().
class SigHasher {
public:
    // Adds bytes to the text being hashed.
    void add(std::string_view bytes) noexcept {
        for (unsigned char c : bytes) {
            h_ ^= c;
            h_ *= 0x100000001b3ULL;
        }
    }
    // Adds the ':' separator between two words.
    void add_separator() noexcept { add(std::string_view(":", 1)); }
    // The final 64-bit hash.
    uint64_t finish() const noexcept { return fmix64(h_); }

private:
    uint64_t h_ = 0xcbf29ce484222325ULL;
};

// The hash of a whole signature text such as "the:south:carolina".
inline uint64_t signature_hash(std::string_view text) noexcept {
    SigHasher h;
    h.add(text);
    return h.finish();
}

}  // namespace spotsigs
