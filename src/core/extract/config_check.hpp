// Validation shared by the configuration builders and the Extractor (internal to the core).
#pragma once

#include <string>
#include <string_view>

namespace spotsigs {

// The word the tokenizer makes of raw (lowercased, references decoded); throws
// Error(InvalidParameter) naming raw and `what` ("antecedent", "stopword") unless raw yields
// exactly one word.
std::string single_word(std::string_view raw, const char* what);

// Throws Error(InvalidParameter) naming the value unless 1 <= distance <= kMaxDistance and
// 1 <= chain <= kMaxChain; context, if not empty, names where the values came from.
void check_spec_numbers(int distance, int chain, std::string_view context = {});

// Text quoted for an error message: at most about 60 bytes, cut on a UTF-8 boundary.
std::string quote_for_message(std::string_view text);

}  // namespace spotsigs
