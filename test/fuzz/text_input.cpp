// libFuzzer target: parse_text on arbitrary bytes either throws Error(InvalidText or
// ProgramLimit), or returns a valid multiset whose canonical text parses back to the same value
// and text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/error.hpp"
#include "core/signature/multiset.hpp"
#include "core/signature/text_format.hpp"
#include "fuzz_checks.hpp"

using namespace spotsigs;
using spotsigs::fuzz::require;

// Parses one input and checks the round trip.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    Multiset m;
    try {
        m = parse_text(text);
    } catch (const Error& e) {
        require(e.kind() == ErrorKind::InvalidText || e.kind() == ErrorKind::ProgramLimit);
        return 0;
    }
    spotsigs::fuzz::require_valid(m);
    std::string canonical = to_text(m.view());
    Multiset again = parse_text(canonical);
    require(equal(again.view(), m.view()));
    require(to_text(again.view()) == canonical);
    return 0;
}
