// The text form of a spotsig: '{h1:f1,h2,...}' with each hash as 16 lowercase hex digits,
// ascending, and ':freq' written only when the frequency is not 1. '{}' is the empty value.
#pragma once

#include <string>
#include <string_view>

#include "core/signature/multiset.hpp"

namespace spotsigs {

// The canonical text of m (what spotsig_out prints).
std::string to_text(const MultisetView& m);

// Parses a literal. Accepts blanks around tokens, 1 to 16 hex digits of either case, and
// hashes in any order; a hash given twice has its frequencies summed. Frequencies are decimal
// integers from 1 to 2147483647, leading zeros allowed. Throws Error(InvalidText) naming the
// problem and its position, or Error(ProgramLimit) when a frequency, a summed frequency or the
// length exceeds 2147483647.
Multiset parse_text(std::string_view text);

}  // namespace spotsigs
