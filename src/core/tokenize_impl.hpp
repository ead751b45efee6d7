// The tokenizer declared in tokenize.hpp: one pass over the bytes, an ASCII byte-class table for
// the common case, UTF-8 decoding only for bytes >= 0x80, HTML markup and references handled
// inline. Words are handed out as views into the input when no byte needs lowercasing or
// decoding, else from one reused buffer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "char_refs.hpp"
#include "html_markup.hpp"
#include "tokenize.hpp"
#include "unicode_tables.hpp"
#include "utf8.hpp"

namespace spotsigs {
namespace detail {

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

// The end of the run of ASCII letters and digits that continues at i; ORs the class bits of
// its bytes into seen. Scans 16 bytes at a time where SSE2 is available.
inline size_t alnum_run_end(const unsigned char* p, size_t i, size_t n, uint8_t& seen) noexcept {
#if defined(__SSE2__)
    const __m128i lower_bit = _mm_set1_epi8(0x20);
    const __m128i a = _mm_set1_epi8('a'), zero = _mm_set1_epi8('0'), upper_a = _mm_set1_epi8('A');
    const __m128i span25 = _mm_set1_epi8(25), span9 = _mm_set1_epi8(9);
    // x - base <= span, unsigned: min(x - base, span) == x - base.
    auto in_range = [](__m128i x, __m128i base, __m128i span) {
        __m128i d = _mm_sub_epi8(x, base);
        return _mm_cmpeq_epi8(_mm_min_epu8(d, span), d);
    };
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        __m128i alpha = in_range(_mm_or_si128(v, lower_bit), a, span25);
        unsigned word = unsigned(_mm_movemask_epi8(_mm_or_si128(alpha, in_range(v, zero, span9))));
        unsigned upper = unsigned(_mm_movemask_epi8(in_range(v, upper_a, span25)));
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

// Collects the bytes of one word: a range of the input while they can be taken unchanged,
// copied into a buffer (reused for every word) as soon as something has to be rewritten.
class WordBuilder {
public:
    // Builds words over the input that starts at base.
    explicit WordBuilder(const char* base) : base_(base) {}

    // True when no character has been added since the last flush.
    bool empty() const noexcept { return mode_ == kEmpty; }

    // Adds input bytes [b, e) as they are.
    void add_same(size_t b, size_t e) {
        if (mode_ == kEmpty) {
            mode_ = kRange;
            b_ = b;
            e_ = e;
        } else if (mode_ == kRange && e_ == b) {
            e_ = e;
        } else {
            to_buffer();
            buf_.append(base_ + b, e - b);
        }
    }

    // Adds ASCII input bytes [b, e), lowercased.
    void add_lower_ascii(size_t b, size_t e) {
        to_buffer();
        size_t old = buf_.size();
        buf_.append(base_ + b, e - b);
        for (size_t k = old; k < buf_.size(); ++k)
            if (buf_[k] >= 'A' && buf_[k] <= 'Z') buf_[k] = char(buf_[k] + 32);
    }

    // Input bytes [b, e) lowercased, as a view of the buffer (only while the word is empty).
    std::string_view lowered_ascii(size_t b, size_t e) {
        buf_.assign(base_ + b, e - b);
        for (char& c : buf_)
            if (c >= 'A' && c <= 'Z') c = char(c + 32);
        return std::string_view(buf_);
    }

    // Adds one (already lowercased) code point in UTF-8.
    void add_code_point(uint32_t cp) {
        to_buffer();
        char tmp[4];
        buf_.append(tmp, utf8::encode(cp, tmp));
    }

    // Hands the finished word, if any, to on_word and starts a new one.
    template <class OnWord>
    void flush(OnWord& on_word) {
        if (mode_ == kRange)
            on_word(std::string_view(base_ + b_, e_ - b_));
        else if (mode_ == kBuffer)
            on_word(std::string_view(buf_));
        mode_ = kEmpty;
    }

private:
    // Switches to buffer mode, copying the range collected so far.
    void to_buffer() {
        if (mode_ == kRange)
            buf_.assign(base_ + b_, e_ - b_);
        else if (mode_ == kEmpty)
            buf_.clear();
        mode_ = kBuffer;
    }

    enum Mode { kEmpty, kRange, kBuffer };
    const char* base_;
    Mode mode_ = kEmpty;
    size_t b_ = 0, e_ = 0;
    std::string buf_;
};

// One tokenizer run over one document.
template <class OnWord>
class Tokenizer {
public:
    // Prepares to scan doc, reporting words to on_word and calling poll every megabyte.
    Tokenizer(std::string_view doc, OnWord& on_word, const PollFn& poll)
        : in_{reinterpret_cast<const unsigned char*>(doc.data()), doc.size(), poll},
          markup_(in_),
          word_(doc.data()),
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
                uint8_t seen = k;
                size_t j = alnum_run_end(p, i + 1, n, seen);
                if (word_.empty() && (j == n || kByteClass[p[j]] == 0)) {
                    // The common case: the run is the whole word and a plain separator ends it.
                    if (seen & kByteUpper)
                        on_word_(word_.lowered_ascii(i, j));
                    else
                        on_word_(std::string_view(reinterpret_cast<const char*>(p + i), j - i));
                    i = (j == n) ? n : j + 1;
                    continue;
                }
                if (seen & kByteUpper)
                    word_.add_lower_ascii(i, j);
                else
                    word_.add_same(i, j);
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
            if (pr.lower_delta == 0)
                word_.add_same(i, i + len);
            else
                word_.add_code_point(uint32_t(int32_t(cp) + pr.lower_delta));
        } else {
            word_.flush(on_word_);
        }
        return i + len;
    }

    // Adds a code point that came from a character reference (or ends the word).
    void add_decoded(uint32_t cp) {
        if (cp < 0x80) {
            uint8_t k = kByteClass[cp];
            if (k & kByteAlnum)
                word_.add_code_point((k & kByteUpper) ? cp + 32 : cp);
            else
                word_.flush(on_word_);
            return;
        }
        const unicode::CharProps& pr = unicode::char_props(cp);
        if (pr.cls == unicode::kWord || (pr.cls == unicode::kMark && !word_.empty()))
            word_.add_code_point(uint32_t(int32_t(cp) + pr.lower_delta));
        else
            word_.flush(on_word_);
    }

    html::ScanInput in_;
    html::MarkupSkipper markup_;
    WordBuilder word_;
    OnWord& on_word_;
};

}  // namespace detail

// Runs the tokenizer over doc (see tokenize.hpp).
template <class OnWord>
void tokenize(std::string_view doc, OnWord&& on_word, const PollFn& poll) {
    detail::Tokenizer<std::remove_reference_t<OnWord>> run(doc, on_word, poll);
    run.run();
}

}  // namespace spotsigs
