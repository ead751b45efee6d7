// Word n-shingles of a document, in the spotsig representation (the paper's shingling baseline).
#pragma once

#include <string_view>

#include "core/common/cancel.hpp"
#include "core/signature/multiset.hpp"

namespace spotsigs {

// Largest shingle width accepted (bigger values are refused as absurd).
constexpr int kMaxShingleWidth = 100;

// The multiset of word n-shingles of a UTF-8 document (HTML or plain text): every run of n
// consecutive words of the tokeniser (tokenize.hpp), hashed like a signature whose words are
// joined by ':' (so the 1-shingle "obama" has signature_hash("obama")). A document with fewer
// than n words has no shingles. Throws Error(InvalidParameter) unless 1 <= n <= kMaxShingleWidth.
Multiset shingles(std::string_view doc, int n, const PollFn& poll = {});

}  // namespace spotsigs
