// libFuzzer target: parse_binary on arbitrary bytes either throws Error(InvalidBinary or
// ProgramLimit), or returns a valid multiset from a prefix of the input whose binary form parses
// back to the same value, and which equals the value of the same pairs given as text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/common/error.hpp"
#include "core/signature/binary_format.hpp"
#include "core/signature/multiset.hpp"
#include "core/signature/text_format.hpp"
#include "fuzz_checks.hpp"

using namespace spotsigs;
using spotsigs::fuzz::require;

// Parses one input and checks the round trips.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Multiset m;
    size_t used = 0;
    try {
        m = parse_binary(data, size, &used);
    } catch (const Error& e) {
        require(e.kind() == ErrorKind::InvalidBinary || e.kind() == ErrorKind::ProgramLimit);
        return 0;
    }
    require(used >= 4 && used <= size && (used - 4) % 12 == 0);
    spotsigs::fuzz::require_valid(m);
    require(m.hashes.size() <= (used - 4) / 12);
    // The canonical binary form parses back to the same value and bytes.
    std::string canonical = to_binary(m.view());
    size_t used2 = 0;
    Multiset again = parse_binary(reinterpret_cast<const unsigned char*>(canonical.data()), canonical.size(), &used2);
    require(used2 == canonical.size() && equal(again.view(), m.view()));
    require(to_binary(again.view()) == canonical);
    // The same pairs written as a text literal give the same value.
    std::string text = "{";
    for (size_t k = 0; k < (used - 4) / 12; ++k) {
        const uint8_t* p = data + 4 + 12 * k;
        static const char kHex[] = "0123456789abcdef";
        if (k) text += ',';
        for (int b = 0; b < 8; ++b) {
            text += kHex[p[b] >> 4];
            text += kHex[p[b] & 15];
        }
        uint32_t f = (uint32_t(p[8]) << 24) | (uint32_t(p[9]) << 16) | (uint32_t(p[10]) << 8) | p[11];
        text += ':' + std::to_string(f);
    }
    text += '}';
    require(equal(parse_text(text).view(), m.view()));
    return 0;
}
