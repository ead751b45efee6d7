// Printing and parsing the text form of a spotsig.
#include "core/signature/text_format.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/common/error.hpp"

namespace spotsigs {

std::string to_text(const MultisetView& m) {
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 + size_t(m.size) * 20);
    out.push_back('{');
    for (uint32_t i = 0; i < m.size; ++i) {
        if (i) out.push_back(',');
        uint64_t h = m.hashes[i];
        for (int s = 60; s >= 0; s -= 4) out.push_back(kHex[(h >> s) & 15]);
        if (m.freqs[i] != 1) {
            out.push_back(':');
            out += std::to_string(m.freqs[i]);
        }
    }
    out.push_back('}');
    return out;
}

namespace {

// The error message for a bad literal, quoting it like PostgreSQL's own types (long ones cut).
std::string message(std::string_view text) {
    std::string quoted(text.substr(0, 64));
    if (text.size() > 64) quoted += "...";
    return "invalid input syntax for type spotsig: \"" + quoted + "\"";
}

// A cursor over the literal that reports errors with the 1-based character position.
struct Cursor {
    std::string_view s;
    size_t i = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorKind::InvalidText, message(s), what + " at position " + std::to_string(i + 1));
    }
    void blanks() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    }
    bool at(char c) const { return i < s.size() && s[i] == c; }
};

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

Multiset parse_text(std::string_view text) {
    Cursor c{text};
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    c.blanks();
    if (!c.at('{')) c.fail("expected \"{\"");
    ++c.i;
    c.blanks();
    if (c.at('}')) {
        ++c.i;
    } else {
        for (;;) {
            c.blanks();
            uint64_t h = 0;
            int digits = 0;
            for (int v; c.i < text.size() && (v = hex_value(text[c.i])) >= 0; ++c.i) {
                if (++digits > 16) c.fail("hash longer than 16 hex digits");
                h = (h << 4) | uint64_t(v);
            }
            if (digits == 0) c.fail("expected a hexadecimal hash");
            c.blanks();
            uint64_t f = 1;
            if (c.at(':')) {
                ++c.i;
                c.blanks();
                f = 0;
                int fd = 0;
                const size_t start = c.i;
                // Leading zeros are allowed; f saturates just past the limit, so it cannot wrap.
                for (; c.i < text.size() && text[c.i] >= '0' && text[c.i] <= '9'; ++c.i, ++fd)
                    if (f <= kMaxLength) f = f * 10 + uint64_t(text[c.i] - '0');
                if (fd == 0) c.fail("expected a frequency");
                if (f == 0) c.fail("frequency must be at least 1");
                if (f > kMaxLength)
                    throw Error(ErrorKind::ProgramLimit, "signature frequency exceeds 2147483647",
                                "The frequency at position " + std::to_string(start + 1) + " is " +
                                    std::string(text.substr(start, std::min<size_t>(fd, 40))) + (fd > 40 ? "..." : "") +
                                    ".");
                c.blanks();
            }
            pairs.emplace_back(h, f);
            if (c.at(',')) {
                ++c.i;
                continue;
            }
            if (c.at('}')) {
                ++c.i;
                break;
            }
            c.fail(c.i < text.size() ? "expected \",\" or \"}\"" : "unexpected end of input");
        }
    }
    c.blanks();
    if (c.i != text.size()) c.fail("junk after \"}\"");
    // A well-formed literal whose sums exceed the limits gets from_pairs' own ProgramLimit error.
    return Multiset::from_pairs(std::move(pairs));
}

}  // namespace spotsigs
