// A fixed set of words (antecedents, stopwords) looked up by their bytes: open addressing with
// linear probing, built once, then read-only and thread-safe.
//
// A word of up to 16 bytes is represented exactly by two 64-bit keys read with overlapping
// loads plus its length, so a lookup compares two integers instead of calling memcmp; only
// longer words (never in the shipped lists) also compare their bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace spotsigs {

// Reads 8 bytes from p (any alignment).
inline uint64_t load64(const char* p) noexcept {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// Reads 4 bytes from p (any alignment).
inline uint32_t load32(const char* p) noexcept {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Two integers that, together with the length, identify a word of up to 16 bytes exactly
// (longer words: their first and last 8 bytes). Never reads outside [s, s + n).
struct WordKey {
    uint64_t a = 0;
    uint64_t b = 0;

    // Builds the key of the n bytes at s.
    static WordKey of(const char* s, size_t n) noexcept {
        WordKey k;
        if (n > 8) {
            k.a = load64(s);
            k.b = load64(s + n - 8);
        } else if (n >= 4) {
            k.a = (uint64_t(load32(s)) << 32) | load32(s + n - 4);
        } else if (n > 0) {
            k.a = (uint64_t(uint8_t(s[0])) << 16) | (uint64_t(uint8_t(s[n >> 1])) << 8) | uint8_t(s[n - 1]);
        }
        return k;
    }

    // Mixes the key and the length into a table position hash.
    uint64_t hash(size_t n) const noexcept {
        uint64_t h = (a ^ (uint64_t(n) << 56)) * 0x9E3779B97F4A7C15ULL;
        h ^= b * 0xbf58476d1ce4e5b9ULL;
        return h ^ (h >> 32);
    }
};

// Maps each of a list of distinct words to its position in that list.
class WordTable {
public:
    // Builds the table; words must be distinct.
    explicit WordTable(const std::vector<std::string>& words) {
        size_t cap = 16;
        while (cap < 2 * words.size()) cap *= 2;
        slots_.assign(cap, Slot{});
        mask_ = cap - 1;
        for (size_t i = 0; i < words.size(); ++i) {
            const std::string& w = words[i];
            Slot s;
            s.key = WordKey::of(w.data(), w.size());
            s.len = uint32_t(w.size());
            s.value = int32_t(i);
            s.off = uint32_t(bytes_.size());
            bytes_ += w;
            if (w.size() > max_len_) max_len_ = w.size();
            size_t k = s.key.hash(w.size()) & mask_;
            while (slots_[k].value >= 0) k = (k + 1) & mask_;
            slots_[k] = s;
        }
    }

    // The position of word in the original list, or -1 when it is not in the table.
    int32_t find(std::string_view word) const noexcept {
        size_t n = word.size();
        if (n > max_len_) return -1;
        WordKey key = WordKey::of(word.data(), n);
        for (size_t k = key.hash(n) & mask_;; k = (k + 1) & mask_) {
            const Slot& s = slots_[k];
            if (s.key.a == key.a && s.key.b == key.b && s.len == n && s.value >= 0 &&
                (n <= 16 || std::memcmp(bytes_.data() + s.off, word.data(), n) == 0))
                return s.value;
            if (s.value < 0) return -1;
        }
    }

private:
    // One table entry; value < 0 marks an empty slot.
    struct Slot {
        WordKey key;
        uint32_t len = 0;
        int32_t value = -1;
        uint32_t off = 0;  // the word's bytes in bytes_ (compared only for words > 16 bytes)
    };
    std::vector<Slot> slots_;
    std::string bytes_;
    size_t mask_ = 0;
    size_t max_len_ = 0;
};

}  // namespace spotsigs
