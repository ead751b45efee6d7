// The tokenizer's ASCII fast path: a byte-class table and 16-byte-at-a-time scanning of runs
// of ASCII letters and digits (SSE2 where available, plain table lookups elsewhere).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace spotsigs::detail {

// Bits of the byte-class table.
enum : uint8_t {
    kByteAlnum = 1,    // ASCII letter or digit
    kByteUpper = 2,    // ASCII uppercase letter
    kByteSpecial = 4,  // needs a closer look: '<', '&' or a byte >= 0x80
};

// Builds the 256-entry byte-class table at compile time.
constexpr std::array<uint8_t, 256> make_byte_classes() {
    std::array<uint8_t, 256> t{};
    for (int c = '0'; c <= '9'; ++c) t[c] = kByteAlnum;
    for (int c = 'a'; c <= 'z'; ++c) t[c] = kByteAlnum;
    for (int c = 'A'; c <= 'Z'; ++c) t[c] = kByteAlnum | kByteUpper;
    t['<'] = kByteSpecial;
    t['&'] = kByteSpecial;
    for (int c = 0x80; c < 0x100; ++c) t[c] = kByteSpecial;
    return t;
}

inline constexpr std::array<uint8_t, 256> kByteClass = make_byte_classes();

#if defined(__SSE2__)
// Per byte of 16: all ones where base <= x <= base + span (unsigned).
inline __m128i bytes_in_range(__m128i x, char base, char span) noexcept {
    __m128i d = _mm_sub_epi8(x, _mm_set1_epi8(base));
    return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(span)), d);
}

// Per byte of 16: all ones for ASCII letters and digits.
inline __m128i bytes_alnum(__m128i v) noexcept {
    __m128i alpha = bytes_in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 25);
    return _mm_or_si128(alpha, bytes_in_range(v, '0', 9));
}
#endif

// The end of the run of ASCII letters and digits that continues at i; ORs the class bits of
// its bytes into seen.
inline size_t alnum_run_end(const unsigned char* p, size_t i, size_t n, uint8_t& seen) noexcept {
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        unsigned word = unsigned(_mm_movemask_epi8(bytes_alnum(v)));
        unsigned upper = unsigned(_mm_movemask_epi8(bytes_in_range(v, 'A', 25)));
        if (word != 0xFFFFu) {
            unsigned len = unsigned(__builtin_ctz(~word));
            if (upper & ((1u << len) - 1u)) seen |= kByteUpper;
            return i + len;
        }
        if (upper) seen |= kByteUpper;
    }
#endif
    for (uint8_t k; i < n && ((k = kByteClass[p[i]]) & kByteAlnum); ++i) seen |= k;
    return i;
}

// For p[0] an ASCII letter or digit with 16 bytes readable: when the run of letters and digits
// starting there is shorter than 16 bytes, writes it lowercased to out (16 bytes written) and
// returns its length; otherwise returns 0. Always 0 without SSE2.
inline size_t short_ascii_word(const unsigned char* p, char* out) noexcept {
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    unsigned word = unsigned(_mm_movemask_epi8(bytes_alnum(v)));
    if (word == 0xFFFFu) return 0;
    __m128i upper = bytes_in_range(v, 'A', 25);
    v = _mm_or_si128(v, _mm_and_si128(upper, _mm_set1_epi8(0x20)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
    return size_t(__builtin_ctz(~word));
#else
    (void)p;
    (void)out;
    return 0;
#endif
}

}  // namespace spotsigs::detail
