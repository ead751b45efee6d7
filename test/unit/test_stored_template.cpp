// Unit tests of the content measure against a given template (core/template/stored.hpp): the
// content similarity equals the similarity of the two rows without the template, and the content
// bound of the index's search keeps every row whose content similarity reaches the threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "core/index/index_search.hpp"
#include "core/signature/multiset.hpp"
#include "core/template/content.hpp"
#include "core/template/stored.hpp"

using namespace spotsigs;

namespace {

// A random multiset over hashes 1 .. vocab, with a share of the template's hashes.
Multiset random_doc(std::mt19937_64& rng, uint64_t vocab, size_t distinct, uint32_t max_freq) {
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    std::uniform_int_distribution<uint64_t> h(1, vocab);
    std::uniform_int_distribution<uint32_t> f(1, max_freq);
    for (size_t k = 0; k < distinct; ++k) pairs.emplace_back(h(rng), f(rng));
    return Multiset::from_pairs(pairs);
}

}  // namespace

TEST(StoredTemplate, ContainsIsBinarySearch) {
    std::vector<uint64_t> t = {3, 7, 9, 100};
    EXPECT_TRUE(template_contains(t.data(), t.size(), 7));
    EXPECT_FALSE(template_contains(t.data(), t.size(), 8));
    EXPECT_FALSE(template_contains(t.data(), 0, 7));
    EXPECT_FALSE(template_contains(nullptr, 0, 0));
}

TEST(StoredTemplate, ContentSimilarityEqualsSimilarityWithoutTemplate) {
    std::mt19937_64 rng(45);
    for (int trial = 0; trial < 400; ++trial) {
        const uint64_t vocab = 20 + rng() % 200;
        std::vector<uint64_t> t;
        for (uint64_t h = 1; h <= vocab; ++h)
            if (rng() % 4 == 0) t.push_back(h);
        if (trial % 10 == 0) t.clear();  // no template: the plain measure
        Multiset a = random_doc(rng, vocab, rng() % 40, 1 + rng() % 5);
        Multiset b = random_doc(rng, vocab, rng() % 40, 1 + rng() % 5);
        Multiset ac = without_signatures(a.view(), t);
        Multiset bc = without_signatures(b.view(), t);
        std::vector<uint64_t> hashes(a.hashes.size() + 1);
        std::vector<uint32_t> freqs(a.hashes.size() + 1);
        uint64_t len = 0;
        uint32_t n = content_of(a.view(), t.data(), t.size(), hashes.data(), freqs.data(), &len);
        ASSERT_EQ(std::vector<uint64_t>(hashes.begin(), hashes.begin() + n), ac.hashes);
        ASSERT_EQ(std::vector<uint32_t>(freqs.begin(), freqs.begin() + n), ac.freqs);
        ASSERT_EQ(len, ac.length);
        // Bitwise equal, not merely close: both are the same expression on the same integers.
        ASSERT_EQ(content_similarity(ac.view(), b.view(), t.data(), t.size()), similarity(ac.view(), bc.view()));
        ASSERT_EQ(content_similarity(ac.view(), b.view(), SignatureSet(t)), similarity(ac.view(), bc.view()));
    }
}

// The claim at content_bound (core/index/index_search.hpp): every b whose content similarity to
// a's content reaches tau has a content bound (its plain overlap with a's content over |ac|) that
// reaches tau too, also where b's template part makes b far longer than ac.
TEST(StoredTemplate, ContentBoundLosesNoMatch) {
    std::mt19937_64 rng(7);
    size_t matches = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        const uint64_t vocab = 10 + rng() % 60;
        std::vector<uint64_t> t;
        for (uint64_t h = 1; h <= vocab; ++h)
            if (rng() % 3 == 0) t.push_back(h);
        Multiset a = random_doc(rng, vocab, 1 + rng() % 30, 1 + rng() % 3);
        Multiset b = random_doc(rng, vocab, 1 + rng() % 30, 1 + rng() % 20);
        Multiset ac = without_signatures(a.view(), t);
        Multiset bc = without_signatures(b.view(), t);
        const double tau = 0.05 + 0.95 * double(rng() % 1000) / 1000.0;
        const double cs = content_similarity(ac.view(), b.view(), t.data(), t.size());
        ASSERT_EQ(overlap(ac.view(), b.view()), overlap(ac.view(), bc.view()));
        if (cs < tau) continue;
        ++matches;
        ASSERT_GE(content_bound(overlap(ac.view(), b.view()), ac.length), tau)
            << "tau " << tau << " |qc| " << ac.length << " |b| " << b.length;
        ASSERT_GE(content_bound(overlap(ac.view(), b.view()), ac.length), cs);
    }
    EXPECT_GT(matches, 500u);
}

// The empty template: the content of a row is the row, and the content similarity is the plain
// similarity bit for bit (a bare % under 'auto' with no statistics relies on it; empty rows too).
TEST(StoredTemplate, EmptyTemplateIsThePlainSimilarity) {
    std::mt19937_64 rng(8);
    for (int trial = 0; trial < 400; ++trial) {
        const size_t na = trial % 50 == 0 ? 0 : 1 + rng() % 60, nb = trial % 70 == 1 ? 0 : 1 + rng() % 60;
        Multiset a = random_doc(rng, 80, na, 3), b = random_doc(rng, 80, nb, 3);
        std::vector<uint64_t> h(a.hashes.size() + 1);
        std::vector<uint32_t> f(a.hashes.size() + 1);
        uint64_t length = 0;
        const uint32_t n = content_of(a.view(), nullptr, 0, h.data(), f.data(), &length);
        ASSERT_EQ(n, a.hashes.size());
        ASSERT_EQ(length, a.length);
        MultisetView qc;
        qc.hashes = h.data();
        qc.freqs.data = reinterpret_cast<const unsigned char*>(f.data());
        qc.freqs.width = 4;
        qc.size = n;
        qc.length = length;
        const double plain = similarity(a.view(), b.view()), content = content_similarity(qc, b.view(), nullptr, 0);
        ASSERT_EQ(std::memcmp(&plain, &content, sizeof plain), 0) << "trial " << trial;
    }
}
