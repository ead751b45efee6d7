// The tokenizer declared in tokenize.hpp: one pass over the bytes, an ASCII byte-class table
// (and SSE2 for short ASCII words) for the common case, UTF-8 decoding only for bytes >= 0x80,
// HTML markup and references handled inline. Words are handed out as views into the input or
// into a reused buffer, each followed by at least kWordSlack readable bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "core/text/ascii_scan.hpp"
#include "core/text/char_refs.hpp"
#include "core/text/html_markup.hpp"
#include "core/text/tokenize.hpp"
#include "core/text/unicode_tables.hpp"
#include "core/text/utf8.hpp"
#include "core/text/word_builder.hpp"

namespace spotsigs {
namespace detail {

// One tokenizer run over one document.
template <class OnWord>
class Tokenizer {
public:
    // Prepares to scan doc, reporting words to on_word and calling poll every megabyte.
    Tokenizer(std::string_view doc, OnWord& on_word, const PollFn& poll)
        : in_{reinterpret_cast<const unsigned char*>(doc.data()), doc.size(), poll},
          markup_(in_),
          word_(doc.data(), doc.size()),
          on_word_(on_word) {}

    // Scans the whole document.
    void run() {
        const unsigned char* p = in_.p;
        const size_t n = in_.n;
        size_t i = 0;
        while (i < n) {
            if (i >= in_.next_poll) in_.poll_at(i);
            uint8_t k = kByteClass[p[i]];
            if (k & kByteAlnum) {  // a run of ASCII letters and digits
                if (i + 16 <= n && word_.empty()) {
                    // The common case: a short word ended by a plain separator, lowercased into
                    // the scratch area in one step.
                    size_t len = short_ascii_word(p + i, scratch_);
                    if (len != 0 && kByteClass[p[i + len]] == 0) {
                        on_word_(std::string_view(scratch_, len));
                        i += len + 1;
                        continue;
                    }
                }
                uint8_t seen = k;
                size_t j = alnum_run_end(p, i + 1, n, seen);
                if (seen & kByteUpper) word_.add_lower_ascii(i, j);
                else word_.add_same(i, j);
                i = j;
            } else if (!(k & kByteSpecial)) {  // ASCII punctuation, blank or control
                word_.flush(on_word_);
                ++i;
            } else if (p[i] >= 0x80) {
                i = non_ascii(i);
            } else if (p[i] == '<') {
                size_t e = markup_.skip(i);
                word_.flush(on_word_);
                i = (e == i) ? i + 1 : e;
            } else {  // '&'
                uint32_t cp = 0;
                size_t len = html::decode_char_ref(p + i, n - i, cp);
                if (len == 0) {
                    word_.flush(on_word_);
                    ++i;
                } else {
                    add_decoded(cp);
                    i += len;
                }
            }
        }
        word_.flush(on_word_);
    }

private:
    // Handles the UTF-8 character at i (first byte >= 0x80); returns the next position.
    size_t non_ascii(size_t i) {
        size_t len = 1;
        uint32_t cp = utf8::decode(in_.p + i, in_.n - i, len);
        if (cp == utf8::kInvalid) {
            word_.flush(on_word_);
            return i + 1;
        }
        const unicode::CharProps& pr = unicode::char_props(cp);
        if (pr.cls == unicode::kWord || (pr.cls == unicode::kMark && !word_.empty())) {
            if (pr.lower_delta == 0) word_.add_same(i, i + len);
            else word_.add_code_point(uint32_t(int32_t(cp) + pr.lower_delta));
        } else {
            word_.flush(on_word_);
        }
        return i + len;
    }

    // Adds a code point that came from a character reference (or ends the word).
    void add_decoded(uint32_t cp) {
        if (cp < 0x80) {
            uint8_t k = kByteClass[cp];
            if (k & kByteAlnum) word_.add_code_point((k & kByteUpper) ? cp + 32 : cp);
            else word_.flush(on_word_);
            return;
        }
        const unicode::CharProps& pr = unicode::char_props(cp);
        if (pr.cls == unicode::kWord || (pr.cls == unicode::kMark && !word_.empty()))
            word_.add_code_point(uint32_t(int32_t(cp) + pr.lower_delta));
        else word_.flush(on_word_);
    }

    html::ScanInput in_;
    html::MarkupSkipper markup_;
    WordBuilder word_;
    OnWord& on_word_;
    char scratch_[16 + kWordSlack] = {};  // short ASCII words, with their slack
};

}  // namespace detail

// Runs the tokenizer over doc (see tokenize.hpp).
template <class OnWord>
void tokenize(std::string_view doc, OnWord&& on_word, const PollFn& poll) {
    detail::Tokenizer<std::remove_reference_t<OnWord>> run(doc, on_word, poll);
    run.run();
}

}  // namespace spotsigs
