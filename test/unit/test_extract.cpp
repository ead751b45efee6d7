// Unit tests of extraction: the paper's example, the slides' algorithm, configuration checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/common/error.hpp"
#include "core/extract/extract.hpp"
#include "core/signature/hash.hpp"
#include "core/text/tokenize.hpp"

using namespace spotsigs;
using Pairs = std::vector<std::pair<std::string, uint32_t>>;

namespace {

const char kPaperSentence[] =
    "At a rally to kick off a weeklong campaign for the South Carolina primary, Obama tried to "
    "set the record straight from an attack circulating widely on the Internet that is designed "
    "to play into prejudices against Muslims and fears of terrorism.";

// terms() as (text, freq) pairs, in the returned order.
Pairs terms_of(const Extractor& ex, std::string_view doc) {
    Pairs out;
    for (const Term& t : ex.terms(doc)) out.emplace_back(t.text, t.freq);
    return out;
}

// An extractor with uniform specs and the default stopwords.
Extractor uniform(const std::vector<std::string>& antecedents, int d, int c) {
    return Extractor(ExtractConfig::uniform(antecedents, d, c, default_stopwords()));
}

// The multiset that the given texts and counts hash to.
Multiset multiset_of(const Pairs& terms) {
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    for (const auto& [text, freq] : terms) pairs.emplace_back(signature_hash(text), freq);
    return Multiset::from_pairs(std::move(pairs));
}

// The error kind and message thrown by f.
template <class F>
std::pair<ErrorKind, std::string> error_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        return {e.kind(), std::string(e.what()) + " / " + e.detail()};
    }
    return {ErrorKind::Internal, "no error"};
}

// The slides' algorithm written plainly over a token vector (as the reference to compare
// against): signatures as text with counts, ordered by first occurrence.
Pairs reference_terms(std::string_view doc, const std::vector<SpotSpec>& specs,
                      const std::vector<std::string>& stopwords) {
    std::vector<std::string> tokens;
    tokenize(doc, [&](std::string_view w) { tokens.emplace_back(w); });
    auto is_stop = [&](const std::string& w) {
        for (const std::string& s : stopwords)
            if (s == w) return true;
        return false;
    };
    Pairs out;
    std::map<std::string, size_t> where;
    for (size_t i = 0; i < tokens.size(); ++i) {
        std::vector<std::pair<int, int>> seen;
        for (const SpotSpec& sp : specs) {
            if (sp.antecedent != tokens[i]) continue;
            if (std::find(seen.begin(), seen.end(), std::make_pair(sp.distance, sp.chain)) != seen.end()) continue;
            seen.emplace_back(sp.distance, sp.chain);
            std::string sig = tokens[i];
            int found = 0;
            size_t k = i + size_t(sp.distance);
            for (int j = 0; j < sp.chain; ++j) {
                while (k < tokens.size() && is_stop(tokens[k])) ++k;
                if (k >= tokens.size()) break;
                sig += ":" + tokens[k];
                ++found;
                k += size_t(sp.distance);
            }
            if (found == 0) continue;
            auto [it, added] = where.emplace(sig, out.size());
            if (added) out.emplace_back(sig, 1);
            else ++out[it->second].second;
        }
    }
    return out;
}

}  // namespace

TEST(Extract, PaperExample) {
    Extractor ex = uniform({"a", "an", "the", "is"}, 1, 2);
    Pairs expected = {{"a:rally:kick", 1},        {"a:weeklong:campaign", 1},   {"the:south:carolina", 1},
                      {"the:record:straight", 1}, {"an:attack:circulating", 1}, {"the:internet:designed", 1},
                      {"is:designed:play", 1}};
    EXPECT_EQ(terms_of(ex, kPaperSentence), expected);
    Multiset m = ex.extract(kPaperSentence);
    EXPECT_EQ(m.length, 7u);
    EXPECT_TRUE(equal(m.view(), multiset_of(expected).view()));
}

TEST(Extract, SignatureHashIsPinned) {
    // Part of the stored format: these values must never change.
    EXPECT_EQ(signature_hash("the:south:carolina"), 0xb2327455114ed692ULL);
    SigHasher h;
    h.add("the");
    h.add_separator();
    h.add("south");
    h.add_separator();
    h.add("carolina");
    EXPECT_EQ(h.finish(), 0xb2327455114ed692ULL);
}

TEST(Extract, DistanceTwoFollowsTheSlides) {
    // Tokens: 0 the, 1 quick, 2 brown, 3 fox, 4 jumps, 5 over*, 6 the*, 7 lazy, 8 dog, 9 and*,
    // 10 runs, 11 far, 12 away (* = stopword). the@0 with d=2: k=2 brown, k=4 jumps, k=6 is a
    // stopword so skip to 7 lazy, then k=9 is a stopword so skip to 10 runs. the@6: k=8 dog,
    // k=10 runs, k=12 away, k=14 is past the end: the chain is cut with three words.
    Extractor ex = uniform({"the"}, 2, 4);
    EXPECT_EQ(terms_of(ex, "The quick brown fox jumps over the lazy dog and runs far away"),
              (Pairs{{"the:brown:jumps:lazy:runs", 1}, {"the:dog:runs:away", 1}}));
}

TEST(Extract, ChainCutAtEndOfDocument) {
    Extractor ex = uniform({"the"}, 1, 3);
    EXPECT_EQ(terms_of(ex, "was it the best"), (Pairs{{"the:best", 1}}));
    EXPECT_EQ(terms_of(ex, "see the"), Pairs{});            // nothing after the antecedent
    EXPECT_EQ(terms_of(ex, "the of and to the"), Pairs{});  // only stopwords after it
}

TEST(Extract, NoAntecedentGivesEmptyMultiset) {
    Extractor ex(ExtractConfig::defaults());
    Multiset m = ex.extract("Stocks rallied sharply today; investors cheered quarterly earnings.");
    EXPECT_TRUE(m.hashes.empty());
    EXPECT_EQ(m.length, 0u);
    EXPECT_TRUE(ex.extract("").hashes.empty());
    EXPECT_TRUE(ex.terms("").empty());
}

TEST(Extract, RepeatedAntecedentsAndOverlaps) {
    // Every "a" skips the stopwords after it and lands on the same words.
    Extractor ex = uniform({"a"}, 1, 2);
    EXPECT_EQ(terms_of(ex, "a a a a a x y"), (Pairs{{"a:x:y", 5}}));
    // Chains overlap when an antecedent falls inside an earlier chain.
    Extractor ex2 = uniform({"obama"}, 1, 2);
    EXPECT_EQ(terms_of(ex2, "obama obama said"), (Pairs{{"obama:obama:said", 1}, {"obama:said", 1}}));
}

TEST(Extract, SeveralSpecsPerAntecedent) {
    Extractor ex(ExtractConfig::parse_specs("the(1,1) the(2,1), the(1,1)", default_stopwords()));
    EXPECT_EQ(terms_of(ex, "the cat sat"), (Pairs{{"the:cat", 1}, {"the:sat", 1}}));
}

TEST(Extract, HtmlPage) {
    Extractor ex = uniform({"the"}, 1, 2);
    const char* page =
        "<html><head><title>News</title><style>.the { big cats }</style>"
        "<script>var s = 'the hidden words';</script></head><body>"
        "<!-- the comment text --><nav><a href=\"/\">Home</a></nav>"
        "<p>Visit the caf&eacute; <b>on</b> the Rue&nbsp;Royale today</p></body></html>";
    EXPECT_EQ(terms_of(ex, page), (Pairs{{"the:caf\xC3\xA9:rue", 1}, {"the:rue:royale", 1}}));
}

TEST(Extract, ExtractMatchesTerms) {
    Extractor ex(ExtractConfig::defaults());
    std::string doc = std::string(kPaperSentence) + " " + kPaperSentence +
                      " The cat is on the mat and the dog was in the house, as it would have been.";
    Pairs terms = terms_of(ex, doc);
    ASSERT_FALSE(terms.empty());
    EXPECT_TRUE(equal(ex.extract(doc).view(), multiset_of(terms).view()));
}

TEST(Extract, MatchesReferenceOnRandomText) {
    const std::vector<std::string> vocab = {"a", "the", "is", "of", "and", "x", "y", "z", "w", "Obama"};
    const std::vector<std::string> stop = {"a", "the", "is", "of", "and"};
    std::mt19937 rng(12345);
    for (int round = 0; round < 400; ++round) {
        std::vector<SpotSpec> specs;
        int nspecs = 1 + int(rng() % 4);
        for (int s = 0; s < nspecs; ++s) {
            const char* ante[] = {"a", "the", "x", "obama"};
            specs.push_back(SpotSpec{ante[rng() % 4], 1 + int(rng() % 4), 1 + int(rng() % 4)});
        }
        std::string doc;
        int len = int(rng() % 60);
        for (int i = 0; i < len; ++i) doc += vocab[rng() % vocab.size()] + " ";
        ExtractConfig cfg;
        cfg.specs = specs;
        cfg.stopwords = stop;
        Extractor ex(cfg);
        Pairs want = reference_terms(doc, specs, stop);
        ASSERT_EQ(terms_of(ex, doc), want) << "doc: " << doc;
        ASSERT_TRUE(equal(ex.extract(doc).view(), multiset_of(want).view())) << "doc: " << doc;
    }
}

TEST(Extract, PollIsPassedThrough) {
    Extractor ex(ExtractConfig::defaults());
    std::string doc;
    while (doc.size() < (3u << 20)) doc += kPaperSentence;
    int calls = 0;
    ex.extract(doc, [&] { ++calls; });
    EXPECT_GE(calls, 2);
    EXPECT_THROW(ex.extract(doc, [] { throw Error(ErrorKind::Canceled, "canceled"); }), Error);
}

TEST(Extract, DocumentTooLarge) {
    Extractor ex(ExtractConfig::defaults());
    char byte = 'a';
    // The size is checked before any byte is read, so the view may claim more than exists.
    std::string_view huge(&byte, kMaxDocumentBytes + 1);
    EXPECT_EQ(error_of([&] { ex.extract(huge); }).first, ErrorKind::ProgramLimit);
    EXPECT_EQ(error_of([&] { ex.terms(huge); }).first, ErrorKind::ProgramLimit);
}

TEST(Config, Defaults) {
    ExtractConfig c = ExtractConfig::defaults();
    ASSERT_EQ(c.specs.size(), 23u);
    EXPECT_EQ(c.specs[0].antecedent, "a");
    EXPECT_EQ(c.specs[22].antecedent, "doing");
    for (const SpotSpec& s : c.specs) {
        EXPECT_EQ(s.distance, kDefaultDistance);
        EXPECT_EQ(s.chain, kDefaultChain);
    }
    EXPECT_EQ(default_stopwords().size(), 127u);
    EXPECT_EQ(c.stopwords, default_stopwords());
    EXPECT_NE(std::find(c.stopwords.begin(), c.stopwords.end(), "don"), c.stopwords.end());
    EXPECT_NE(std::find(c.stopwords.begin(), c.stopwords.end(), "t"), c.stopwords.end());
}

TEST(Config, UniformNormalizesAndValidates) {
    ExtractConfig c = ExtractConfig::uniform({"The", "\xC3\x89T\xC3\x89"}, 3, 4, {"Of", " and "});
    EXPECT_EQ(c.specs[0].antecedent, "the");
    EXPECT_EQ(c.specs[1].antecedent, "\xC3\xA9t\xC3\xA9");
    EXPECT_EQ(c.specs[1].distance, 3);
    EXPECT_EQ(c.specs[1].chain, 4);
    EXPECT_EQ(c.stopwords, (std::vector<std::string>{"of", "and"}));

    auto bad = [](auto f, const std::string& needle) {
        auto [kind, msg] = error_of(f);
        EXPECT_EQ(kind, ErrorKind::InvalidParameter) << msg;
        EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    };
    bad([] { ExtractConfig::uniform({"the"}, 0, 1, {}); }, "distance 0");
    bad([] { ExtractConfig::uniform({"the"}, 101, 1, {}); }, "distance 101");
    bad([] { ExtractConfig::uniform({"the"}, 1, 0, {}); }, "chain 0");
    bad([] { ExtractConfig::uniform({"the"}, 1, 101, {}); }, "chain 101");
    bad([] { ExtractConfig::uniform({"don't"}, 1, 1, {}); }, "\"don't\"");
    bad([] { ExtractConfig::uniform({"..."}, 1, 1, {}); }, "\"...\"");
    bad([] { ExtractConfig::uniform({"the"}, 1, 1, {"e-mail"}); }, "stopword \"e-mail\"");
    bad([] { ExtractConfig::uniform({}, 1, 1, {}); }, "antecedents");
    EXPECT_NO_THROW(ExtractConfig::uniform({"the"}, kMaxDistance, kMaxChain, {}));
}

TEST(Config, ParseSpecs) {
    ExtractConfig c = ExtractConfig::parse_specs("is(3,1), that(5,2)", {});
    ASSERT_EQ(c.specs.size(), 2u);
    EXPECT_EQ(c.specs[0].antecedent, "is");
    EXPECT_EQ(c.specs[0].distance, 3);
    EXPECT_EQ(c.specs[0].chain, 1);
    EXPECT_EQ(c.specs[1].antecedent, "that");
    EXPECT_EQ(c.specs[1].distance, 5);
    EXPECT_EQ(c.specs[1].chain, 2);
    ExtractConfig d = ExtractConfig::parse_specs("  IS ( 3 , 1 ) ,, that(5,2)\nthe(1,1)  ", {"A"});
    ASSERT_EQ(d.specs.size(), 3u);
    EXPECT_EQ(d.specs[0].antecedent, "is");
    EXPECT_EQ(d.specs[2].antecedent, "the");
    EXPECT_EQ(d.stopwords, std::vector<std::string>{"a"});
}

TEST(Config, ParseSpecsErrorsNameTheOffendingText) {
    auto bad = [](const std::string& text, const std::string& needle) {
        auto [kind, msg] = error_of([&] { ExtractConfig::parse_specs(text, {}); });
        EXPECT_EQ(kind, ErrorKind::InvalidParameter) << text << " -> " << msg;
        EXPECT_NE(msg.find(needle), std::string::npos) << text << " -> " << msg;
    };
    bad("", "empty");
    bad(" , ", "empty");
    bad("is", "\"is\"");
    bad("is(3)", "\"is(3)\"");
    bad("is(3,1", "\"is(3,1\"");
    bad("is(3,1), that(x,2)", "\"that(x,2)\"");
    bad("is(0,1)", "\"is(0,1)\"");
    bad("is(3,-1)", "chain -1");
    bad("is(1,99999999999)", "chain 999999999");
    bad("(3,1)", "\"(3,1)\"");
    bad("don't(1,1)", "\"don't\"");
    bad("is(3,1) that", "\"that\"");
}
