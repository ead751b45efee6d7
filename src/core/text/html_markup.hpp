// Skipping HTML markup for the tokenizer: tags (with quoted attribute values), comments,
// <!...> and <?...> constructs, and the raw contents of <script>, <style>, <noscript> and
// <template>. Every search is linear overall, also on hostile input, and polls every megabyte.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>

#include "core/common/cancel.hpp"

namespace spotsigs::html {

// Bytes of input between two calls of the poll callback.
constexpr size_t kPollBytes = size_t(1) << 20;

// The document being scanned, with the poll schedule.
struct ScanInput {
    const unsigned char* p;
    size_t n;
    const PollFn& poll;
    size_t next_poll = kPollBytes;

    // Calls poll once the scan has passed the next megabyte mark.
    void poll_at(size_t pos) {
        if (pos >= next_poll) {
            next_poll = pos + kPollBytes;
            if (poll) poll();
        }
    }
    // Position of the first byte ch at or after from, or n; polls while crossing megabytes.
    size_t find_byte(size_t from, unsigned char ch) {
        while (from < n) {
            size_t end = std::min(n, from + kPollBytes);
            const void* hit = std::memchr(p + from, ch, end - from);
            if (hit != nullptr) return size_t(static_cast<const unsigned char*>(hit) - p);
            from = end;
            poll_at(from);
        }
        return n;
    }
};

// ASCII lowercase of one byte.
inline unsigned char ascii_lower(unsigned char c) noexcept {
    return (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c + 32) : c;
}

// True for the blanks that end a tag name or separate attributes.
inline bool is_tag_space(unsigned char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

// Finds where markup that starts with '<' ends. Keeps memos of failed searches so that a
// document full of stray '<' or unbalanced quotes is still scanned in linear time.
class MarkupSkipper {
public:
    // Prepares to skip markup in the given input.
    explicit MarkupSkipper(ScanInput& in) : in_(in), budget_(2 * in.n + kPollBytes) {}

    // p[i] is '<'. Returns the position just after the markup starting there, or i itself when
    // this '<' does not start markup (then it is ordinary punctuation).
    size_t skip(size_t i) {
        const unsigned char* p = in_.p;
        if (i + 1 >= in_.n) return i;
        unsigned char c = p[i + 1];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return start_tag(i);
        if (c == '!' && i + 3 < in_.n && p[i + 2] == '-' && p[i + 3] == '-') return comment(i + 4);
        if (c == '/' || c == '!' || c == '?') return to_gt(i + 2, i);
        return i;
    }

private:
    static constexpr size_t kNone = std::numeric_limits<size_t>::max();

    // Position after the first '>' at or after from, or fail when there is none.
    size_t to_gt(size_t from, size_t fail) {
        if (from >= no_gt_from_) return fail;
        size_t g = in_.find_byte(from, '>');
        if (g >= in_.n) {
            no_gt_from_ = std::min(no_gt_from_, from);
            return fail;
        }
        return g + 1;
    }

    // j is just after "<!--": the position after the closing "-->" (or "--!>"), or the end.
    size_t comment(size_t j) {
        const unsigned char* p = in_.p;
        if (j < in_.n && p[j] == '>') return j + 1;                         // <!-->
        if (j + 1 < in_.n && p[j] == '-' && p[j + 1] == '>') return j + 2;  // <!--->
        for (size_t k = j;;) {
            size_t g = (k >= no_gt_from_) ? in_.n : in_.find_byte(k, '>');
            if (g >= in_.n) {
                no_gt_from_ = std::min(no_gt_from_, k);
                return in_.n;  // an unterminated comment runs to the end, as in browsers
            }
            if (g >= j + 2 && p[g - 1] == '-' && p[g - 2] == '-') return g + 1;
            if (g >= j + 3 && p[g - 1] == '!' && p[g - 2] == '-' && p[g - 3] == '-') return g + 1;
            k = g + 1;
        }
    }

    // p[i] is '<' followed by a letter: skips the start tag and, for raw-text elements, their
    // contents up to the closing tag.
    size_t start_tag(size_t i) {
        const unsigned char* p = in_.p;
        if (i + 1 >= no_gt_from_) return i;  // no '>' follows: cannot be a tag
        size_t e = i + 1;
        while (e < in_.n && !is_tag_space(p[e]) && p[e] != '/' && p[e] != '>') in_.poll_at(++e);
        if (e >= in_.n) {  // the name ran to the end, so no '>' follows either
            no_gt_from_ = i + 1;
            return i;
        }
        size_t end = attributes(e);
        if (end == kNone) end = to_gt(e, kNone);
        if (end == kNone) return i;  // no '>' anywhere after: the '<' is plain text
        size_t name_len = e - (i + 1);
        if (is_raw_text(p + i + 1, name_len)) return raw_text_end(end, p + i + 1, name_len);
        return end;
    }

    // Scans attributes from j up to the tag's '>', honouring quoted values after '='.
    // Returns the position after '>', or kNone if the quote-aware scan fails.
    size_t attributes(size_t j) {
        if (budget_ == 0) return kNone;  // too much failed scanning: plain '>' search from now on
        const unsigned char* p = in_.p;
        size_t start = j;
        size_t scanned = in_.n;  // how far this attempt read before failing
        while (j < in_.n) {
            in_.poll_at(j);
            unsigned char c = p[j];
            if (c == '>') return j + 1;
            ++j;
            if (c != '=') continue;
            while (j < in_.n && is_tag_space(p[j])) ++j;
            if (j < in_.n && (p[j] == '"' || p[j] == '\'')) {
                size_t& memo = no_quote_from_[p[j] == '"' ? 0 : 1];
                if (j + 1 >= memo) {  // known: that quote never comes back
                    scanned = j;
                    break;
                }
                size_t q = in_.find_byte(j + 1, p[j]);
                if (q >= in_.n) {
                    memo = j + 1;
                    break;
                }
                j = q + 1;
            }
        }
        size_t spent = scanned - start;
        budget_ = spent >= budget_ ? 0 : budget_ - spent;
        return kNone;
    }

    // True when the element's contents are skipped: script, style, noscript, template.
    static bool is_raw_text(const unsigned char* name, size_t len) {
        static const char* const kNames[] = {"script", "style", "noscript", "template"};
        for (const char* k : kNames)
            if (std::strlen(k) == len && same_ascii_ci(name, k, len)) return true;
        return false;
    }

    // Case-insensitive comparison of len bytes with a lowercase ASCII word.
    static bool same_ascii_ci(const unsigned char* a, const char* lower, size_t len) {
        for (size_t k = 0; k < len; ++k)
            if (ascii_lower(a[k]) != static_cast<unsigned char>(lower[k])) return false;
        return true;
    }

    // From j, the position of the closing tag "</name" (any case), or the end of the input.
    size_t raw_text_end(size_t j, const unsigned char* name, size_t len) {
        char lower[8];
        for (size_t k = 0; k < len; ++k) lower[k] = char(ascii_lower(name[k]));
        const unsigned char* p = in_.p;
        for (size_t k = j;; ++k) {
            k = in_.find_byte(k, '<');
            if (k >= in_.n) return in_.n;
            size_t after = k + 2 + len;
            if (after <= in_.n && p[k + 1] == '/' && same_ascii_ci(p + k + 2, lower, len) &&
                (after == in_.n || is_tag_space(p[after]) || p[after] == '/' || p[after] == '>'))
                return k;
        }
    }

    ScanInput& in_;
    size_t no_gt_from_ = kNone;                 // no '>' at or after this position
    size_t no_quote_from_[2] = {kNone, kNone};  // no '"' / '\'' at or after these positions
    size_t budget_;                             // bytes failed attribute scans may still spend
};

}  // namespace spotsigs::html
