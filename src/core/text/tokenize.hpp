// Tokeniser: UTF-8 text or HTML in, lowercase words (runs of Unicode letters and digits) out.
//
// HTML handling: tags, comments, <!DOCTYPE>/<?...?> and the contents of <script>, <style>
// (and <noscript>, <template>) are dropped and act as word separators; character references
// (&amp; &eacute; &#233; &#xE9;) are decoded. Plain text passes through the same scanner: a '<'
// that does not start a tag is ordinary punctuation.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/common/cancel.hpp"

namespace spotsigs {

// Calls on_word(std::string_view word) for every word of doc, in order. The view is valid only
// during the call. Invalid UTF-8 bytes are treated as separators. poll is called about every
// megabyte of input.
template <class OnWord>
void tokenize(std::string_view doc, OnWord&& on_word, const PollFn& poll = {});

}  // namespace spotsigs

#include "core/text/tokenize_impl.hpp"
