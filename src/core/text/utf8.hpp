// Strict UTF-8 decoding of one character and encoding of one code point (tokenizer helpers).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spotsigs::utf8 {

// Returned by decode() for a byte that does not start a well-formed sequence.
constexpr uint32_t kInvalid = 0xFFFFFFFFu;

// True for a continuation byte 10xxxxxx.
inline bool is_cont(unsigned char c) noexcept {
    return (c & 0xC0u) == 0x80u;
}

// Decodes the character starting at p[0] (p[0] >= 0x80) with at most `avail` bytes readable.
// Sets len to the bytes consumed; on malformed input returns kInvalid with len = 1, so that
// every bad byte becomes one separator. Rejects overlong forms, surrogates and > U+10FFFF.
inline uint32_t decode(const unsigned char* p, size_t avail, size_t& len) noexcept {
    unsigned char c = p[0];
    len = 1;
    if (c >= 0xC2 && c <= 0xDF) {
        if (avail < 2 || !is_cont(p[1])) return kInvalid;
        len = 2;
        return (uint32_t(c & 0x1F) << 6) | (p[1] & 0x3F);
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (avail < 3 || !is_cont(p[1]) || !is_cont(p[2])) return kInvalid;
        if (c == 0xE0 && p[1] < 0xA0) return kInvalid;  // overlong
        if (c == 0xED && p[1] > 0x9F) return kInvalid;  // surrogate
        len = 3;
        return (uint32_t(c & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (avail < 4 || !is_cont(p[1]) || !is_cont(p[2]) || !is_cont(p[3])) return kInvalid;
        if (c == 0xF0 && p[1] < 0x90) return kInvalid;  // overlong
        if (c == 0xF4 && p[1] > 0x8F) return kInvalid;  // beyond U+10FFFF
        len = 4;
        return (uint32_t(c & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) | (uint32_t(p[2] & 0x3F) << 6) |
               (p[3] & 0x3F);
    }
    return kInvalid;
}

// Writes the UTF-8 form of a valid code point to out (room for 4 bytes); returns its length.
inline size_t encode(uint32_t cp, char* out) noexcept {
    if (cp < 0x80) {
        out[0] = char(cp);
        return 1;
    }
    if (cp < 0x800) {
        out[0] = char(0xC0 | (cp >> 6));
        out[1] = char(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = char(0xE0 | (cp >> 12));
        out[1] = char(0x80 | ((cp >> 6) & 0x3F));
        out[2] = char(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = char(0xF0 | (cp >> 18));
    out[1] = char(0x80 | ((cp >> 12) & 0x3F));
    out[2] = char(0x80 | ((cp >> 6) & 0x3F));
    out[3] = char(0x80 | (cp & 0x3F));
    return 4;
}

}  // namespace spotsigs::utf8
