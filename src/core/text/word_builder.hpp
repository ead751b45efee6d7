// Assembling one word of the tokenizer's output: a view of the input while its bytes can be
// taken unchanged, else a copy in a buffer that is reused for every word. Every view handed
// out is followed by at least kWordSlack readable bytes (for fixed-size loads by the reader).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "core/text/utf8.hpp"

namespace spotsigs::detail {

// Readable bytes guaranteed after the end of every word view (their values are unspecified).
constexpr size_t kWordSlack = 16;

// Collects the bytes of one word.
class WordBuilder {
public:
    // Builds words over the input [base, base + size).
    WordBuilder(const char* base, size_t size) : base_(base), size_(size) {}

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
            append(base_ + b, e - b);
        }
    }

    // Adds ASCII input bytes [b, e), lowercased.
    void add_lower_ascii(size_t b, size_t e) {
        to_buffer();
        size_t old = len_;
        append(base_ + b, e - b);
        for (size_t k = old; k < len_; ++k)
            if (buf_[k] >= 'A' && buf_[k] <= 'Z') buf_[k] = char(buf_[k] + 32);
    }

    // Adds one (already lowercased) code point in UTF-8.
    void add_code_point(uint32_t cp) {
        to_buffer();
        char tmp[4];
        append(tmp, utf8::encode(cp, tmp));
    }

    // Hands the finished word, if any, to on_word and starts a new one.
    template <class OnWord>
    void flush(OnWord& on_word) {
        if (mode_ == kRange && e_ + kWordSlack > size_) to_buffer();  // too close to the end
        if (mode_ == kRange) on_word(std::string_view(base_ + b_, e_ - b_));
        else if (mode_ == kBuffer) on_word(std::string_view(buf_.get(), len_));
        mode_ = kEmpty;
    }

private:
    // Switches to buffer mode, copying the range collected so far.
    void to_buffer() {
        if (mode_ == kBuffer) return;
        len_ = 0;
        if (mode_ == kRange) append(base_ + b_, e_ - b_);
        mode_ = kBuffer;
    }

    // Appends bytes to the buffer, keeping kWordSlack bytes of room after them.
    void append(const char* s, size_t n) {
        if (len_ + n + kWordSlack > cap_) {
            size_t cap = std::max<size_t>({64, 2 * cap_, len_ + n + kWordSlack});
            std::unique_ptr<char[]> bigger(new char[cap]());  // zeroed, so every byte is readable
            if (len_ != 0) std::memcpy(bigger.get(), buf_.get(), len_);
            buf_ = std::move(bigger);
            cap_ = cap;
        }
        std::memcpy(buf_.get() + len_, s, n);
        len_ += n;
    }

    enum Mode { kEmpty, kRange, kBuffer };
    const char* base_;
    size_t size_;
    Mode mode_ = kEmpty;
    size_t b_ = 0, e_ = 0;         // the range, in kRange mode
    std::unique_ptr<char[]> buf_;  // the copy, in kBuffer mode
    size_t len_ = 0, cap_ = 0;
};

}  // namespace spotsigs::detail
