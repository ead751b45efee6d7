// A fixed set of words (antecedents, stopwords) looked up by their bytes: open addressing with
// linear probing, built once, then read-only and thread-safe.
//
// Lookups take tokenizer words, which are followed by at least kWordSlack readable bytes, so
// a word's first 16 bytes are read with two fixed 8-byte loads and masked to its length. For
// words of up to 16 bytes these two integers and the length identify the word exactly, so a
// probe compares integers without branching on the length; longer words also compare bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/text/word_builder.hpp"

namespace spotsigs {

// Maps each of a list of distinct words to its position in that list.
class WordTable {
public:
    // Builds the table; words must be distinct.
    explicit WordTable(const std::vector<std::string>& words) {
        for (size_t n = 0; n <= 16; ++n) {  // masks in memory order, whatever the endianness
            unsigned char bytes[16] = {};
            std::memset(bytes, 0xFF, n);
            std::memcpy(&lo_mask_[n], bytes, 8);
            std::memcpy(&hi_mask_[n], bytes + 8, 8);
        }
        size_t cap = 16;
        while (cap < 2 * words.size()) cap *= 2;
        slots_.assign(cap, Slot{});
        mask_ = cap - 1;
        for (size_t i = 0; i < words.size(); ++i) {
            const std::string& w = words[i];
            std::string padded = w + std::string(detail::kWordSlack, '\0');
            Slot s;
            key_of(padded.data(), w.size(), s.a, s.b);
            s.len = uint32_t(w.size());
            s.value = int32_t(i);
            s.off = uint32_t(bytes_.size());
            bytes_ += w;
            max_len_ = std::max(max_len_, w.size());
            size_t k = position(s.a, s.b, w.size());
            while (slots_[k].value >= 0) k = (k + 1) & mask_;
            slots_[k] = s;
        }
    }

    // The position of word in the original list, or -1 when it is not in the table. The word
    // must be followed by kWordSlack readable bytes, as every tokenizer word is.
    int32_t find(std::string_view word) const noexcept {
        size_t n = word.size();
        if (n > max_len_) return -1;
        uint64_t a, b;
        key_of(word.data(), n, a, b);
        if (n > 16) return find_long(word, a, b);
        for (size_t k = position(a, b, n);; k = (k + 1) & mask_) {
            const Slot& s = slots_[k];
            // One branch per probe: stop on a hit or on an empty slot (value < 0).
            unsigned hit = ((s.a ^ a) | (s.b ^ b) | (s.len ^ n)) == 0;
            int32_t result = s.value | -int32_t(hit ^ 1u);  // value on a hit, else -1
            if (hit | (uint32_t(s.value) >> 31)) return result;
        }
    }

private:
    // One table entry; value < 0 marks an empty slot (its len 0 never matches a word).
    struct Slot {
        uint64_t a = 0, b = 0;  // the first 16 bytes, masked to the length
        uint32_t len = 0;
        int32_t value = -1;
        uint32_t off = 0;  // the word's bytes in bytes_ (compared only for words > 16 bytes)
    };

    // The masked first 16 bytes of the n bytes at s (16 bytes readable).
    void key_of(const char* s, size_t n, uint64_t& a, uint64_t& b) const noexcept {
        size_t m = n < 16 ? n : 16;
        uint64_t x, y;
        std::memcpy(&x, s, 8);
        std::memcpy(&y, s + 8, 8);
        a = x & lo_mask_[m];
        b = y & hi_mask_[m];
    }

    // The first slot to probe for a key.
    size_t position(uint64_t a, uint64_t b, size_t n) const noexcept {
        uint64_t h = (a ^ (b * 0xbf58476d1ce4e5b9ULL) ^ (uint64_t(n) << 57)) * 0x9E3779B97F4A7C15ULL;
        return size_t(h ^ (h >> 32)) & mask_;
    }

    // Lookup of a word longer than 16 bytes: the key may collide, so bytes are compared.
    int32_t find_long(std::string_view word, uint64_t a, uint64_t b) const noexcept {
        for (size_t k = position(a, b, word.size());; k = (k + 1) & mask_) {
            const Slot& s = slots_[k];
            if (s.value < 0) return -1;
            if (s.a == a && s.b == b && s.len == word.size() &&
                std::memcmp(bytes_.data() + s.off, word.data(), word.size()) == 0)
                return s.value;
        }
    }

    std::vector<Slot> slots_;
    std::string bytes_;
    size_t mask_ = 0;
    size_t max_len_ = 0;
    uint64_t lo_mask_[17] = {};
    uint64_t hi_mask_[17] = {};
};

}  // namespace spotsigs
