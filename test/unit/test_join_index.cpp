// The index matcher's count filter (join_bounds.hpp Lemma 8) against the brute-force method, at
// the low thresholds where it matters: many short documents (two documents of 1 and 5 signatures
// that share one reach 0.2), groups of identical documents, documents that share exactly the
// one signature that the lengthened prefixes must still find, with 1 and 2 threads, and with
// every shared mass l from 1 (prefix filter alone) to beyond the documents' lengths.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/join/join.hpp"
#include "core/join/join_internal.hpp"
#include "core/signature/multiset.hpp"

using namespace spotsigs;

namespace {

using Doc = std::vector<std::pair<uint64_t, uint64_t>>;  // (hash, frequency)
using Triples = std::vector<std::tuple<uint32_t, uint32_t, double>>;

Collection make(const std::vector<Doc>& docs) {
    Collection c;
    for (size_t i = 0; i < docs.size(); ++i) c.add(static_cast<int64_t>(i), Multiset::from_pairs(docs[i]).view());
    return c;
}

Triples triples(const JoinPairs& pairs) {
    Triples out;
    for (const JoinPair& p : pairs) out.emplace_back(p.a, p.b, p.similarity);
    return out;
}

// The default method's probe configuration with shared mass l.
join_detail::ProbeConfig counting(uint32_t l) {
    join_detail::ProbeConfig cfg = join_detail::config_for(JoinMethod::Partitioned);
    cfg.count = l;
    return cfg;
}

// Short documents (1 to 6 signatures, half of them), longer ones, near-duplicate variants and
// groups of identical copies, over a vocabulary small enough that many pairs share a signature
// and a few of them are frequent; frequencies mostly 1, some up to max_freq.
std::vector<Doc> corpus(uint32_t seed, size_t n, uint64_t vocab, uint64_t max_freq) {
    std::mt19937_64 rng(seed);
    std::vector<Doc> docs;
    auto hash = [&] {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        return static_cast<uint64_t>(u * u * static_cast<double>(vocab)) * 0x9e3779b97f4a7c15ULL + 1;
    };
    auto freq = [&]() -> uint64_t { return rng() % 5 == 0 ? 1 + rng() % max_freq : 1; };
    while (docs.size() < n) {
        const uint64_t roll = rng() % 10;
        if (roll < 2 && !docs.empty()) {  // identical copies of an earlier document
            const Doc d = docs[rng() % docs.size()];
            for (uint64_t k = 1 + rng() % 6; k > 0; --k) docs.push_back(d);
        } else if (roll < 4 && !docs.empty()) {  // a variant: a signature added, dropped or reweighted
            Doc d = docs[rng() % docs.size()];
            if (d.empty() || rng() % 2) d.push_back({hash(), freq()});
            else if (rng() % 2) d.erase(d.begin() + static_cast<long>(rng() % d.size()));
            else d[rng() % d.size()].second = freq();
            docs.push_back(d);
        } else {
            Doc d;
            const size_t k = roll < 7 ? 1 + rng() % 6 : 7 + rng() % 40;
            for (size_t i = 0; i < k; ++i) d.push_back({hash(), freq()});
            docs.push_back(d);
        }
    }
    return docs;
}

// Expects the index matcher with every shared mass, and the default self-join, to return the
// brute-force pairs of docs at tau.
void expect_exact(const std::vector<Doc>& docs, double tau, const std::string& what) {
    const Collection c = make(docs);
    for (int threads : {1, 2}) {
        JoinOptions opt;
        opt.tau = tau;
        opt.threads = threads;
        opt.method = JoinMethod::BruteForce;
        const Triples want = triples(self_join(c, opt));
        for (uint32_t l : {1u, 2u, 3u, 5u, 60u})
            ASSERT_EQ(triples(join_detail::index_self_join(c, opt, counting(l))), want)
                << what << " tau " << tau << " l " << l << " threads " << threads;
        opt.method = JoinMethod::Partitioned;
        ASSERT_EQ(triples(self_join(c, opt)), want) << what << " tau " << tau << " threads " << threads;
    }
}

}  // namespace

TEST(JoinIndex, CountFilterAgreesWithBruteForce) {
    for (uint32_t seed = 1; seed <= 12; ++seed) {
        const auto docs = corpus(seed, 150 + 20 * seed, 30 + 25 * seed, seed % 3 == 0 ? 40 : 3);
        for (double tau : {0.1, 0.15, 0.2, 0.25, 0.3, 0.44, 0.6, 0.9, 1.0})
            ASSERT_NO_FATAL_FAILURE(expect_exact(docs, tau, "seed " + std::to_string(seed)));
    }
}

TEST(JoinIndex, CountFilterAgreesWithBruteForceRs) {
    for (uint32_t seed = 50; seed < 58; ++seed) {
        const auto all = corpus(seed, 240, 120, seed % 2 ? 30 : 2);
        const Collection r = make({all.begin(), all.begin() + 100}), s = make({all.begin() + 100, all.end()});
        for (double tau : {0.1, 0.2, 0.3, 0.6, 0.9}) {
            JoinOptions opt;
            opt.tau = tau;
            opt.method = JoinMethod::BruteForce;
            const Triples want = triples(rs_join(r, s, opt));
            for (int threads : {1, 2})
                for (uint32_t l : {1u, 2u, 3u, 5u}) {
                    opt.threads = threads;
                    ASSERT_EQ(triples(join_detail::index_rs_join(r, s, opt, counting(l))), want)
                        << "seed " << seed << " tau " << tau << " l " << l;
                }
        }
    }
}

// Pairs that share a single signature and still reach tau, because one side is short: {x} with
// {x, y1..y4} is 1/5 = 0.2, {x, z} with {x, w1..w8} is 1/10 ... one more signature on either
// side and they miss 0.2. The count filter must let a pair through on mass 1 whenever its
// requirement t is 1 (min(t, l) = 1), and copies of the short documents make groups of identical
// ones whose pairs all reach 1.0.
TEST(JoinIndex, ShortDocumentsSharingOneSignature) {
    std::vector<Doc> docs;
    for (uint64_t x = 1; x <= 6; ++x) {
        const uint64_t h = x * 1000;
        for (size_t extra = 0; extra <= 6; ++extra) {
            Doc d = {{h, 1}};
            for (size_t k = 0; k < extra; ++k) d.push_back({h + 1 + k + 100 * x * extra, 1});
            docs.push_back(d);
            if (extra < 2) docs.push_back(d);  // an identical copy
        }
        docs.push_back({{h, 2}});  // the signature twice
        docs.push_back({{h, 1}, {h + 999, 3}});
    }
    for (double tau : {0.1, 1.0 / 7, 1.0 / 6, 0.2, 0.25, 1.0 / 3, 0.5, 1.0})
        ASSERT_NO_FATAL_FAILURE(expect_exact(docs, tau, "short"));
}

// Long documents whose only overlap lies in the last signatures that the lengthened prefixes
// still hold: a pair of 30-signature documents sharing k of them, for k around the requirement.
TEST(JoinIndex, OverlapAtTheEndOfThePrefixes) {
    std::vector<Doc> docs;
    for (uint64_t k = 1; k <= 14; ++k) {
        Doc a, b;
        for (uint64_t i = 0; i < 30; ++i) {
            a.push_back({(k << 32) + i + 1, 1});
            b.push_back({(k << 32) + (i < 30 - k ? 100 + i : i) + 1, 1});
        }
        docs.push_back(a);
        docs.push_back(b);
    }
    for (double tau : {0.05, 0.1, 0.15, 0.2, 0.25, 0.3})
        ASSERT_NO_FATAL_FAILURE(expect_exact(docs, tau, "tail overlap"));
}
