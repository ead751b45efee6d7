// HTML character references: &#233; &#xE9; and named ones such as &eacute; (tokenizer helper).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/text/html_entities.hpp"

namespace spotsigs::html {

// Code points for numeric references 128..159, which HTML reads as Windows-1252 (0 = keep).
inline constexpr uint16_t kWindows1252[32] = {0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
                                              0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0,      0x017D, 0,
                                              0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
                                              0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};

// Value of an ASCII digit in the given base (10 or 16), or -1.
inline int digit_value(unsigned char c, int base) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (base == 16) {
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    }
    return -1;
}

// True for an ASCII letter.
inline bool is_ascii_alpha(unsigned char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The code point of a named reference (name without '&' and ';'), or 0 when unknown.
inline uint32_t lookup_named(std::string_view name) noexcept {
    const NamedRef* end = kNamedRefs + sizeof(kNamedRefs) / sizeof(kNamedRefs[0]);
    const NamedRef* it =
        std::lower_bound(kNamedRefs, end, name, [](const NamedRef& r, std::string_view n) { return r.name < n; });
    return (it != end && it->name == name) ? it->cp : 0;
}

// True for the few old names that HTML also accepts without the closing ';'.
inline bool legacy_without_semicolon(std::string_view name) noexcept {
    return name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "nbsp";
}

// Decodes a numeric reference at p ("&#..."); returns bytes consumed (0 if none) and sets cp.
inline size_t decode_numeric(const unsigned char* p, size_t avail, uint32_t& cp) noexcept {
    size_t i = 2;
    int base = 10;
    if (i < avail && (p[i] == 'x' || p[i] == 'X')) {
        base = 16;
        ++i;
    }
    size_t first = i;
    uint32_t value = 0;
    for (int d; i < avail && (d = digit_value(p[i], base)) >= 0; ++i)
        if (value <= 0x10FFFF) value = value * uint32_t(base) + uint32_t(d);  // saturates above
    if (i == first) return 0;  // "&#" or "&#x" without digits is plain text
    if (i < avail && p[i] == ';') ++i;
    if (value >= 0x80 && value <= 0x9F && kWindows1252[value - 0x80] != 0) value = kWindows1252[value - 0x80];
    if (value == 0 || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) value = 0xFFFD;
    cp = value;
    return i;
}

// Decodes the reference starting at p[0] == '&' with `avail` bytes readable. Returns the bytes
// consumed and sets cp, or returns 0 when the text is not a known reference (left as text).
inline size_t decode_char_ref(const unsigned char* p, size_t avail, uint32_t& cp) noexcept {
    if (avail >= 2 && p[1] == '#') return decode_numeric(p, avail, cp);
    if (avail < 2 || !is_ascii_alpha(p[1])) return 0;
    size_t i = 1;
    while (i < avail && i <= kLongestRefName + 1 && (is_ascii_alpha(p[i]) || digit_value(p[i], 10) >= 0)) ++i;
    std::string_view name(reinterpret_cast<const char*>(p + 1), i - 1);
    if (name.size() > kLongestRefName) return 0;
    bool semicolon = i < avail && p[i] == ';';
    if (!semicolon && !legacy_without_semicolon(name)) return 0;
    uint32_t value = lookup_named(name);
    if (value == 0) return 0;
    cp = value;
    return semicolon ? i + 1 : i;
}

}  // namespace spotsigs::html
