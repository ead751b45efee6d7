// Unit tests of the tokenizer: words, Unicode lowercasing, invalid UTF-8, HTML, references.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/text/tokenize.hpp"

using spotsigs::tokenize;
using Words = std::vector<std::string>;

namespace {

// All words of doc, copied out of the callback.
Words words(std::string_view doc) {
    Words out;
    tokenize(doc, [&](std::string_view w) { out.emplace_back(w); });
    return out;
}

// Seconds taken by tokenizing doc (to catch quadratic behaviour on hostile input).
double seconds_to_tokenize(const std::string& doc) {
    auto t0 = std::chrono::steady_clock::now();
    size_t n = 0;
    tokenize(doc, [&](std::string_view) { ++n; });
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// doc repeated until it is at least `bytes` long.
std::string repeat(const std::string& piece, size_t bytes) {
    std::string s;
    while (s.size() < bytes) s += piece;
    return s;
}

}  // namespace

TEST(Tokenize, PlainWordsAndPunctuation) {
    EXPECT_EQ(words("Hello, World! 42 times_two x2"), (Words{"hello", "world", "42", "times", "two", "x2"}));
    EXPECT_EQ(words(""), Words{});
    EXPECT_EQ(words(" \t\n.,;"), Words{});
}

TEST(Tokenize, ApostrophesAndHyphensSplit) {
    EXPECT_EQ(words("don't e-mail it's"), (Words{"don", "t", "e", "mail", "it", "s"}));
    EXPECT_EQ(words("don\xE2\x80\x99t"), (Words{"don", "t"}));  // U+2019 right single quote
}

TEST(Tokenize, UnicodeLowercasing) {
    EXPECT_EQ(words("\xC3\x89"
                    "COLE"),
              Words{"\xC3\xA9"
                    "cole"});                                              // ÉCOLE -> école
    EXPECT_EQ(words("\xCE\x91\xCE\x98\xCE\x97\xCE\x9D\xCE\x91"),           // ΑΘΗΝΑ
              Words{"\xCE\xB1\xCE\xB8\xCE\xB7\xCE\xBD\xCE\xB1"});          // αθηνα
    EXPECT_EQ(words("\xD0\x9C\xD0\x9E\xD0\xA1\xD0\x9A\xD0\x92\xD0\x90"),   // МОСКВА
              Words{"\xD0\xBC\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0"});  // москва
    // Simple one-to-one mappings: Σ -> σ everywhere (no final-sigma rule), İ -> i, Kelvin -> k.
    EXPECT_EQ(words("\xCE\xA3\xCE\xA3"), Words{"\xCF\x83\xCF\x83"});
    EXPECT_EQ(words("\xC4\xB0"
                    "stanbul"),
              Words{"istanbul"});
    EXPECT_EQ(words("\xE2\x84\xAA"), Words{"k"});
    EXPECT_EQ(words("\xE1\xBA\x9E"), Words{"\xC3\x9F"});  // capital sharp s -> ß
    EXPECT_EQ(words("stra\xC3\x9F"
                    "e"),
              Words{"stra\xC3\x9F"
                    "e"});  // ß stays
}

TEST(Tokenize, OtherScriptsDigitsAndMarks) {
    EXPECT_EQ(words("\xE6\x9D\xB1\xE4\xBA\xAC \xD9\xA3\xD9\xA4"),  // 東京 ٣٤
              (Words{"\xE6\x9D\xB1\xE4\xBA\xAC", "\xD9\xA3\xD9\xA4"}));
    // A combining mark stays inside a word; with nothing before it, it is dropped.
    EXPECT_EQ(words("E\xCC\x81t\xC3\xA9"), Words{"e\xCC\x81t\xC3\xA9"});
    EXPECT_EQ(words(" \xCC\x81"
                    "abc"),
              Words{"abc"});
    // Devanagari: consonants with vowel signs (Mc/Mn) form one word.
    EXPECT_EQ(words("\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\x82\xE0\xA4\xA6\xE0\xA5\x80"),
              Words{"\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\x82\xE0\xA4\xA6\xE0\xA5\x80"});
    // Symbols such as emoji and the no-break space separate words.
    EXPECT_EQ(words("a\xF0\x9F\x98\x80"
                    "b\xC2\xA0"
                    "c"),
              (Words{"a", "b", "c"}));
}

TEST(Tokenize, InvalidUtf8BytesSeparate) {
    EXPECT_EQ(words("a\xFF"
                    "b"),
              (Words{"a", "b"}));
    EXPECT_EQ(words("caf\xC3"), Words{"caf"});  // truncated at the end
    EXPECT_EQ(words("x\xE2\x82"
                    "y"),
              (Words{"x", "y"}));  // truncated in the middle
    EXPECT_EQ(words("a\xC0\xAF"
                    "b"),
              (Words{"a", "b"}));  // overlong '/'
    EXPECT_EQ(words("a\xED\xA0\x80"
                    "b"),
              (Words{"a", "b"}));  // surrogate
    EXPECT_EQ(words("a\xF4\x90\x80\x80"
                    "b"),
              (Words{"a", "b"}));                                 // above U+10FFFF
    EXPECT_EQ(words("\x80\x80\xC3\xA9\xBF"), Words{"\xC3\xA9"});  // stray continuation bytes
    std::string nul("a\0b", 3);
    EXPECT_EQ(words(nul), (Words{"a", "b"}));
}

TEST(Tokenize, TagsSeparateWords) {
    EXPECT_EQ(words("foo<b>bar</b>baz"), (Words{"foo", "bar", "baz"}));
    EXPECT_EQ(words("<p class=\"x>y\" title='a>b'>text</p>"), Words{"text"});
    EXPECT_EQ(words("<!DOCTYPE html><?xml version=\"1.0\"?><br/>ok"), Words{"ok"});
    EXPECT_EQ(words("<P CLASS=Big>Up</P>"), Words{"up"});
}

TEST(Tokenize, LessThanThatIsNotMarkupIsText) {
    EXPECT_EQ(words("a < b"), (Words{"a", "b"}));
    EXPECT_EQ(words("x<3 and 1<2"), (Words{"x", "3", "and", "1", "2"}));
    EXPECT_EQ(words("see <a href"), (Words{"see", "a", "href"}));  // no '>' anywhere after
    EXPECT_EQ(words("end <"), Words{"end"});
}

TEST(Tokenize, CommentsAreDropped) {
    EXPECT_EQ(words("a<!-- b -- > c -->d"), (Words{"a", "d"}));
    EXPECT_EQ(words("a<!---->b<!-->c<!--->d"), (Words{"a", "b", "c", "d"}));
    EXPECT_EQ(words("a<!-- x --!>b"), (Words{"a", "b"}));
    EXPECT_EQ(words("a<!-- never closed b c"), Words{"a"});
}

TEST(Tokenize, RawTextElementsAreDropped) {
    EXPECT_EQ(words("a<script>var x = 1 < 2; y = '<b>';</script>b"), (Words{"a", "b"}));
    EXPECT_EQ(words("a<STYLE type=text/css>p { color: red }</Style >b"), (Words{"a", "b"}));
    EXPECT_EQ(words("a<noscript>enable js</noscript>b<template><p>t</p></template>c"), (Words{"a", "b", "c"}));
    EXPECT_EQ(words("<script>x</scriptx>still</script>after"), Words{"after"});
    EXPECT_EQ(words("a<script>never closed"), Words{"a"});
    EXPECT_EQ(words("<scripts>kept</scripts>"), Words{"kept"});  // not a raw-text element
}

TEST(Tokenize, NamedReferences) {
    EXPECT_EQ(words("caf&eacute; &Eacute;T&Eacute;"), (Words{"caf\xC3\xA9", "\xC3\xA9t\xC3\xA9"}));
    EXPECT_EQ(words("AT&amp;T fish&nbsp;chips don&rsquo;t a&mdash;b"),
              (Words{"at", "t", "fish", "chips", "don", "t", "a", "b"}));
    EXPECT_EQ(words("&lt;b&gt;bold&lt;/b&gt;"), (Words{"b", "bold", "b"}));  // decoded '<' is text
    EXPECT_EQ(words("&Sigma;&sigma;&szlig;&thetasym;&apos;x"), (Words{"\xCF\x83\xCF\x83\xC3\x9F\xCF\x91", "x"}));
    // Legacy names work without ';', others do not; unknown names stay text.
    EXPECT_EQ(words("a&amp b&nbsp c&eacute d&bogus; e&"), (Words{"a", "b", "c", "eacute", "d", "bogus", "e"}));
}

TEST(Tokenize, NumericReferences) {
    EXPECT_EQ(words("caf&#233; caf&#xE9; caf&#XE9; &#65;&#x62;c &#65"),
              (Words{"caf\xC3\xA9", "caf\xC3\xA9", "caf\xC3\xA9", "abc", "a"}));
    EXPECT_EQ(words("a&#x1F600;b a&#0;b a&#xD800;b a&#x110000;b a&#99999999999;b"),
              (Words{"a", "b", "a", "b", "a", "b", "a", "b", "a", "b"}));
    EXPECT_EQ(words("&#;x &#x;y &#z"), (Words{"x", "x", "y", "z"}));
    // 128..159 are read as Windows-1252: &#150; is an en dash, &#138; is Š.
    EXPECT_EQ(words("a&#150;b &#138;koda"), (Words{"a", "b", "\xC5\xA1koda"}));
}

TEST(Tokenize, PollIsCalledAboutEveryMegabyte) {
    std::string doc = repeat("lorem ipsum dolor sit amet ", 5u << 20);
    int calls = 0;
    spotsigs::PollFn poll = [&] { ++calls; };
    tokenize(
        doc, [](std::string_view) {}, poll);
    EXPECT_GE(calls, 4);
    EXPECT_LE(calls, 6);
    // Also inside long skipped regions.
    std::string skipped = "<script>" + repeat("x = 1; ", 5u << 20) + "</script>";
    calls = 0;
    tokenize(
        skipped, [](std::string_view) {}, poll);
    EXPECT_GE(calls, 4);
}

TEST(Tokenize, PollMayAbort) {
    std::string doc = repeat("word ", 3u << 20);
    spotsigs::PollFn poll = [] { throw std::runtime_error("stop"); };
    EXPECT_THROW(tokenize(
                     doc, [](std::string_view) {}, poll),
                 std::runtime_error);
}

TEST(Tokenize, HostileMarkupStaysLinear) {
    const size_t n = 4u << 20;
    for (const char* piece : {"<a ", "<a \"", "<a x=\"", "<a x='>", "</", "<!", "<!--", "&#x", "&amp", "<script>",
                              "<a x=\">\" ", "<a x=\"1\" y=\"", "<a =\"", "<a=\">"}) {
        double s = seconds_to_tokenize(repeat(piece, n));
        EXPECT_LT(s, 2.0) << "piece " << piece;
    }
}

TEST(Tokenize, LongWordsAndMixedRanges) {
    std::string w = repeat("abcdefghij", 100000);
    EXPECT_EQ(words(w), Words{w});
    std::string upper = "ABC" + w + "\xC3\x89";  // forces the buffer after a long range
    Words got = words(upper);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], "abc" + w + "\xC3\xA9");
}
