// Building and validating extraction configurations: defaults, uniform specs, spec text.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/error.hpp"
#include "core/extract/config_check.hpp"
#include "core/extract/extract.hpp"
#include "core/text/tokenize.hpp"

namespace spotsigs {

std::string quote_for_message(std::string_view text) {
    constexpr size_t kMax = 60;
    bool cut = text.size() > kMax;
    if (cut) {
        size_t end = kMax;
        while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
        text = text.substr(0, end);
    }
    return "\"" + std::string(text) + (cut ? "...\"" : "\"");
}

std::string single_word(std::string_view raw, const char* what) {
    std::string word;
    int count = 0;
    tokenize(raw, [&](std::string_view w) {
        if (++count == 1) word.assign(w);
    });
    if (count != 1)
        throw Error(
            ErrorKind::InvalidParameter, std::string(what) + " " + quote_for_message(raw) + " is not a single word",
            count == 0 ? "It contains no letters or digits." : "It splits into " + std::to_string(count) + " words.");
    return word;
}

void check_spec_numbers(int distance, int chain, std::string_view context) {
    std::string where = context.empty() ? "" : " in " + quote_for_message(context);
    if (distance < 1 || distance > kMaxDistance)
        throw Error(ErrorKind::InvalidParameter, "distance " + std::to_string(distance) + where + " is out of range",
                    "The distance must be between 1 and " + std::to_string(kMaxDistance) + ".");
    if (chain < 1 || chain > kMaxChain)
        throw Error(ErrorKind::InvalidParameter, "chain " + std::to_string(chain) + where + " is out of range",
                    "The chain length must be between 1 and " + std::to_string(kMaxChain) + ".");
}

namespace {

// Lowercases and checks every stopword.
std::vector<std::string> checked_stopwords(std::vector<std::string> stopwords) {
    for (std::string& w : stopwords) w = single_word(w, "stopword");
    return stopwords;
}

// A cursor over a spot specification text such as "is(3,1), that(5,2)".
class SpecParser {
public:
    // Starts parsing text.
    explicit SpecParser(std::string_view text) : s_(text) {}

    // Parses all items; throws Error(InvalidParameter) naming the offending item.
    std::vector<SpotSpec> parse() {
        std::vector<SpotSpec> specs;
        for (skip_separators(); i_ < s_.size(); skip_separators()) specs.push_back(item());
        if (specs.empty())
            throw Error(ErrorKind::InvalidParameter, "spot specification is empty",
                        "Write items such as \"is(3,1), that(5,2)\".");
        return specs;
    }

private:
    // True for the blanks allowed around and between items.
    static bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

    // Skips blanks and commas between items.
    void skip_separators() {
        while (i_ < s_.size() && (blank(s_[i_]) || s_[i_] == ',')) ++i_;
    }

    // Skips blanks inside an item.
    void skip_blanks() {
        while (i_ < s_.size() && blank(s_[i_])) ++i_;
    }

    // Throws an error about the item that starts at start_.
    [[noreturn]] void fail(const std::string& what) const {
        size_t close = s_.find(')', start_);
        std::string_view item = s_.substr(start_, close == std::string_view::npos ? s_.npos : close + 1 - start_);
        throw Error(ErrorKind::InvalidParameter, "invalid spot specification item " + quote_for_message(item), what);
    }

    // Consumes the expected character or fails.
    void expect(char c, const char* after) {
        skip_blanks();
        if (i_ >= s_.size() || s_[i_] != c) fail(std::string("Expected \"") + c + "\" " + after + ".");
        ++i_;
    }

    // Parses an optionally signed decimal integer (clamped to +-999999999).
    int number(const char* what) {
        skip_blanks();
        bool negative = false;
        if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) negative = s_[i_++] == '-';
        size_t first = i_;
        long value = 0;
        for (; i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; ++i_)
            if (value < 999999999L) value = value * 10 + (s_[i_] - '0');
        if (i_ == first) fail(std::string("Expected a number for the ") + what + ".");
        if (value > 999999999L) value = 999999999L;
        return int(negative ? -value : value);
    }

    // Parses one item word(d, c).
    SpotSpec item() {
        start_ = i_;
        while (i_ < s_.size() && !blank(s_[i_]) && s_[i_] != '(' && s_[i_] != ')' && s_[i_] != ',') ++i_;
        std::string_view raw = s_.substr(start_, i_ - start_);
        if (raw.empty()) fail("Expected an antecedent word.");
        expect('(', "after the antecedent");
        int distance = number("distance");
        expect(',', "after the distance");
        int chain = number("chain length");
        expect(')', "after the chain length");
        std::string_view whole = s_.substr(start_, i_ - start_);
        check_spec_numbers(distance, chain, whole);
        return SpotSpec{single_word(raw, "antecedent"), distance, chain};
    }

    std::string_view s_;
    size_t i_ = 0;
    size_t start_ = 0;
};

}  // namespace

ExtractConfig ExtractConfig::defaults() {
    return uniform(default_antecedents(), kDefaultDistance, kDefaultChain, default_stopwords());
}

ExtractConfig ExtractConfig::uniform(const std::vector<std::string>& antecedents, int distance, int chain,
                                     std::vector<std::string> stopwords) {
    check_spec_numbers(distance, chain);
    if (antecedents.empty()) throw Error(ErrorKind::InvalidParameter, "antecedents must not be empty");
    ExtractConfig config;
    for (const std::string& a : antecedents)
        config.specs.push_back(SpotSpec{single_word(a, "antecedent"), distance, chain});
    config.stopwords = checked_stopwords(std::move(stopwords));
    return config;
}

ExtractConfig ExtractConfig::parse_specs(std::string_view text, std::vector<std::string> stopwords) {
    ExtractConfig config;
    config.specs = SpecParser(text).parse();
    config.stopwords = checked_stopwords(std::move(stopwords));
    return config;
}

}  // namespace spotsigs
