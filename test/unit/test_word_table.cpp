// Unit tests of the word table used for stopword and antecedent lookups.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/extract/word_table.hpp"
#include "core/text/word_builder.hpp"

using spotsigs::WordTable;

namespace {

// Looks word up the way the extractor does: from a buffer with the tokenizer's slack after it.
int32_t lookup(const WordTable& t, const std::string& word) {
    std::string padded = word + std::string(spotsigs::detail::kWordSlack, 'Z');
    return t.find(std::string_view(padded.data(), word.size()));
}

}  // namespace

TEST(WordTable, FindsExactlyTheListedWords) {
    std::mt19937 rng(99);
    std::vector<std::string> words;
    for (size_t len = 1; len <= 40; ++len) {
        for (int copies = 0; copies < 3; ++copies) {
            std::string w;
            for (size_t k = 0; k < len; ++k) w.push_back(char('a' + rng() % 3));
            if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
        }
    }
    WordTable table(words);
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string& w = words[i];
        EXPECT_EQ(lookup(table, w), int32_t(i)) << w;
        for (std::string other : {w + "a", w.substr(0, w.size() - 1), "b" + w}) {
            auto it = std::find(words.begin(), words.end(), other);
            int32_t want = it == words.end() ? -1 : int32_t(it - words.begin());
            if (!other.empty()) {
                EXPECT_EQ(lookup(table, other), want) << other;
            }
        }
        std::string changed = w;
        changed.back() = 'z';
        EXPECT_EQ(lookup(table, changed), -1) << changed;
    }
}

TEST(WordTable, LongWordsWithEqualPrefixAndSuffix) {
    // Same first 16 and last bytes, same length: only the middle differs.
    std::string a = std::string(16, 'x') + "middle-one" + std::string(16, 'y');
    std::string b = std::string(16, 'x') + "middle-two" + std::string(16, 'y');
    WordTable table({a});
    EXPECT_EQ(lookup(table, a), 0);
    EXPECT_EQ(lookup(table, b), -1);
}

TEST(WordTable, EmptyTable) {
    WordTable table({});
    EXPECT_EQ(lookup(table, "the"), -1);
}
