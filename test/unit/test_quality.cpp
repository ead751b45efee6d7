// Unit tests of the quality baselines: shingles, IDF statistics and filter, I-Match, min-hash
// LSH keys and cosine similarity.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/common/error.hpp"
#include "core/quality/cosine.hpp"
#include "core/quality/idf_filter.hpp"
#include "core/quality/imatch.hpp"
#include "core/quality/minhash.hpp"
#include "core/quality/shingles.hpp"
#include "core/signature/hash.hpp"

using namespace spotsigs;

namespace {

// A multiset from signature texts with counts.
Multiset ms(std::initializer_list<std::pair<const char*, uint64_t>> items) {
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    for (auto& it : items) pairs.emplace_back(signature_hash(it.first), it.second);
    return Multiset::from_pairs(pairs);
}

// The frequency of one signature text in m (0 when absent).
uint32_t freq_of(const Multiset& m, const char* text) {
    uint64_t h = signature_hash(text);
    for (size_t i = 0; i < m.hashes.size(); ++i)
        if (m.hashes[i] == h) return m.freqs[i];
    return 0;
}

}  // namespace

TEST(Shingles, WordPairsJoinedByColon) {
    Multiset m = shingles("The cat sat; the cat ran.", 2);
    EXPECT_EQ(m.length, 5u);
    EXPECT_EQ(m.hashes.size(), 4u);
    EXPECT_EQ(freq_of(m, "the:cat"), 2u);
    EXPECT_EQ(freq_of(m, "cat:sat"), 1u);
    EXPECT_EQ(freq_of(m, "sat:the"), 1u);
    EXPECT_EQ(freq_of(m, "cat:ran"), 1u);
}

TEST(Shingles, SingleWordsAndHtml) {
    Multiset m = shingles("<p>Obama <b>spoke</b></p><script>var x;</script> obama", 1);
    EXPECT_EQ(m.length, 3u);
    EXPECT_EQ(freq_of(m, "obama"), 2u);
    EXPECT_EQ(freq_of(m, "spoke"), 1u);
    EXPECT_EQ(freq_of(m, "var"), 0u);
}

TEST(Shingles, ShortDocumentAndBadWidth) {
    EXPECT_TRUE(shingles("two words", 3).hashes.empty());
    EXPECT_TRUE(shingles("", 1).hashes.empty());
    EXPECT_THROW(shingles("x", 0), Error);
    EXPECT_THROW(shingles("x", kMaxShingleWidth + 1), Error);
}

TEST(Idf, DocumentFrequenciesCountDocumentsOnce) {
    DfCounter c;
    Multiset d1 = ms({{"a", 3}, {"b", 1}}), d2 = ms({{"a", 1}, {"c", 2}}), d3 = ms({{"a", 1}});
    c.add(d1.view());
    c.add(d2.view());
    c.add(d3.view());
    Multiset df = c.result();
    EXPECT_EQ(c.documents(), 3u);
    EXPECT_EQ(freq_of(df, "a"), 3u);
    EXPECT_EQ(freq_of(df, "b"), 1u);
    EXPECT_EQ(freq_of(df, "c"), 1u);
}

TEST(Idf, NormalisedIdf) {
    EXPECT_DOUBLE_EQ(normalized_idf(100, 100), 0.0);
    EXPECT_DOUBLE_EQ(normalized_idf(1, 100), 1.0);
    EXPECT_DOUBLE_EQ(normalized_idf(10, 100), 0.5);
    EXPECT_DOUBLE_EQ(normalized_idf(0, 100), 1.0);
}

TEST(Idf, FilterKeepsTheRangeWithFrequencies) {
    // n = 100: df 100 -> idf 0, df 10 -> 0.5, df 1 -> 1, unseen -> 1.
    Multiset df = ms({{"common", 100}, {"mid", 10}, {"rare", 1}});
    Multiset doc = ms({{"common", 4}, {"mid", 3}, {"rare", 2}, {"unseen", 1}});
    Multiset mid = idf_filter(doc.view(), df.view(), 100, 0.2, 0.85);
    EXPECT_EQ(mid.hashes.size(), 1u);
    EXPECT_EQ(mid.length, 3u);
    EXPECT_EQ(freq_of(mid, "mid"), 3u);
    Multiset all = idf_filter(doc.view(), df.view(), 100, 0.0, 1.0);
    EXPECT_EQ(all.length, 10u);
    Multiset high = idf_filter(doc.view(), df.view(), 100, 0.9, 1.0);
    EXPECT_EQ(high.length, 3u);
    EXPECT_THROW(idf_filter(doc.view(), df.view(), 1, 0.0, 1.0), Error);
}

TEST(IMatch, SetOfDistinctSignatures) {
    Multiset a = ms({{"x", 1}, {"y", 5}}), b = ms({{"y", 1}, {"x", 2}}), c = ms({{"x", 1}});
    ASSERT_TRUE(imatch_fingerprint(a.view()).has_value());
    EXPECT_EQ(imatch_fingerprint(a.view()), imatch_fingerprint(b.view()));
    EXPECT_NE(imatch_fingerprint(a.view()), imatch_fingerprint(c.view()));
    EXPECT_FALSE(imatch_fingerprint(Multiset().view()).has_value());
}

TEST(MinHash, IdenticalEmptyAndInvalid) {
    Multiset a = ms({{"x", 1}, {"y", 2}, {"z", 1}});
    auto ka = lsh_band_keys(a.view(), 6, 32, 0);
    EXPECT_EQ(ka.size(), 32u);
    Multiset copy = a;
    EXPECT_EQ(ka, lsh_band_keys(copy.view(), 6, 32, 0));
    EXPECT_NE(ka, lsh_band_keys(a.view(), 6, 32, 1));
    EXPECT_TRUE(lsh_band_keys(Multiset().view(), 6, 32, 0).empty());
    EXPECT_THROW(lsh_band_keys(a.view(), 0, 4, 0), Error);
    EXPECT_THROW(lsh_band_keys(a.view(), 4, 0, 0), Error);
    EXPECT_THROW(lsh_band_keys(a.view(), 64, 65, 0), Error);
    std::set<uint64_t> distinct(ka.begin(), ka.end());
    EXPECT_EQ(distinct.size(), 32u);  // the band number is part of the key
}

// The share of single-row bands that collide estimates the multiset Jaccard similarity.
TEST(MinHash, CollisionRateEstimatesMultisetJaccard) {
    Multiset a, b;
    std::vector<std::pair<uint64_t, uint64_t>> pa, pb;
    for (uint64_t i = 0; i < 60; ++i) pa.emplace_back(signature_hash("w" + std::to_string(i)), 1);
    for (uint64_t i = 30; i < 90; ++i) pb.emplace_back(signature_hash("w" + std::to_string(i)), 1);
    a = Multiset::from_pairs(pa);
    b = Multiset::from_pairs(pb);                                         // set Jaccard 30/90
    Multiset c = ms({{"p", 2}, {"q", 2}}), d = ms({{"p", 1}, {"q", 1}});  // multiset Jaccard 1/2
    const int l = 4000;
    auto rate = [&](const Multiset& x, const Multiset& y, int k = 1) {
        auto kx = lsh_band_keys(x.view(), k, l / k, 7), ky = lsh_band_keys(y.view(), k, l / k, 7);
        int same = 0;
        for (size_t i = 0; i < kx.size(); ++i) same += kx[i] == ky[i];
        return double(same) / kx.size();
    };
    EXPECT_NEAR(rate(a, b), 1.0 / 3.0, 0.04);
    EXPECT_NEAR(rate(c, d), 0.5, 0.04);
    EXPECT_NEAR(rate(c, d, 2), 0.25, 0.05);  // a band of k rows collides with probability J^k
    EXPECT_NEAR(rate(a, b, 2), 1.0 / 9.0, 0.04);
    EXPECT_NEAR(similarity(c.view(), d.view()), 0.5, 1e-12);
}

TEST(Cosine, HandExample) {
    Multiset a = ms({{"x", 1}, {"y", 2}}), b = ms({{"y", 1}, {"z", 1}});
    EXPECT_NEAR(cosine_similarity(a.view(), b.view()), 2.0 / std::sqrt(10.0), 1e-12);
    EXPECT_DOUBLE_EQ(cosine_similarity(a.view(), a.view()), 1.0);
    EXPECT_EQ(cosine_similarity(a.view(), Multiset().view()), 0.0);
    Multiset s = ms({{"x", 1}, {"y", 1}, {"z", 1}, {"w", 1}}), t = ms({{"x", 1}});
    EXPECT_NEAR(cosine_similarity(s.view(), t.view()), 0.5, 1e-12);
}
