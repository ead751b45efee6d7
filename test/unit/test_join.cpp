// Unit tests of the similarity join: every method against a reference written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/join/join_bounds.hpp"
#include "core/join/join_internal.hpp"
#include "core/join/join_prefix.hpp"
#include "core/join/pair_sink.hpp"
#include "reference_jaccard.hpp"

using namespace spotsigs;

namespace {

using Doc = std::vector<std::pair<uint64_t, uint64_t>>;  // (hash, frequency), any order

const JoinMethod kMethods[] = {JoinMethod::BruteForce, JoinMethod::NoPrune, JoinMethod::NoPart,
                               JoinMethod::Partitioned};

// The name of a method, for failure messages.
const char* name(JoinMethod m) {
    switch (m) {
        case JoinMethod::BruteForce: return "BruteForce";
        case JoinMethod::NoPrune: return "NoPrune";
        case JoinMethod::NoPart: return "NoPart";
        case JoinMethod::Partitioned: return "Partitioned";
    }
    return "?";
}

// A collection holding the given documents with ids 100 + index.
Collection make(const std::vector<Doc>& docs) {
    Collection c;
    for (size_t i = 0; i < docs.size(); ++i) {
        Multiset m = Multiset::from_pairs(docs[i]);
        c.add(static_cast<int64_t>(100 + i), m.view());
    }
    return c;
}

using spotsigs_test::overlap_union;

// True when o / u >= tau holds exactly for the real numbers (tau taken as the exact binary value).
bool exact_reaches(uint64_t o, uint64_t u, double tau) {
    int e;
    double m = std::frexp(tau, &e);                                 // tau = m * 2^e, m in [0.5, 1)
    auto mant = static_cast<unsigned __int128>(std::ldexp(m, 53));  // tau = mant * 2^(e - 53)
    int k = 53 - e;                                                 // tau = mant / 2^k, k >= 53 since tau <= 1
    return (static_cast<unsigned __int128>(o) << k) >= mant * u;
}

// The contract's decision for overlap o and union u: the double quotient compared with tau.
// The exact rational test may differ, but only when the quotient rounds to tau itself; `ties`
// counts the pairs where they differ and `bad_ties` those where they differ otherwise.
bool reported(uint64_t o, uint64_t u, double tau, int* ties, int* bad_ties) {
    double q = static_cast<double>(o) / static_cast<double>(u);
    bool f = q >= tau;
    if (f != exact_reaches(o, u, tau)) {
        if (ties != nullptr) ++*ties;
        if (bad_ties != nullptr && q != tau) ++*bad_ties;
    }
    return f;
}

// Overlap and union of every pair i < j of docs (computed once, reused for every tau).
struct PairTable {
    std::vector<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t>> rows;

    // Fills the table with nested loops over all pairs of non-empty documents.
    explicit PairTable(const std::vector<Doc>& docs) {
        for (size_t i = 0; i < docs.size(); ++i)
            for (size_t j = i + 1; j < docs.size(); ++j) {
                if (docs[i].empty() || docs[j].empty()) continue;
                auto [o, u] = overlap_union(docs[i], docs[j]);
                if (o > 0) rows.emplace_back(i, j, o, u);
            }
    }
    // The reference self-join result at tau.
    std::vector<std::tuple<uint32_t, uint32_t, double>> at(double tau, int* ties = nullptr,
                                                           int* bad_ties = nullptr) const {
        std::vector<std::tuple<uint32_t, uint32_t, double>> out;
        for (auto& [i, j, o, u] : rows)
            if (reported(o, u, tau, ties, bad_ties))
                out.emplace_back(i, j, static_cast<double>(o) / static_cast<double>(u));
        return out;
    }
};

// (a, b, similarity) triples of the reference self-join: nested loops over all pairs.
std::vector<std::tuple<uint32_t, uint32_t, double>> ref_self(const std::vector<Doc>& docs, double tau) {
    return PairTable(docs).at(tau);
}

// The reference R-S join.
std::vector<std::tuple<uint32_t, uint32_t, double>> ref_rs(const std::vector<Doc>& r, const std::vector<Doc>& s,
                                                           double tau) {
    std::vector<std::tuple<uint32_t, uint32_t, double>> out;
    for (size_t i = 0; i < r.size(); ++i)
        for (size_t j = 0; j < s.size(); ++j) {
            if (r[i].empty() || s[j].empty()) continue;
            auto [o, u] = overlap_union(r[i], s[j]);
            if (reported(o, u, tau, nullptr, nullptr))
                out.emplace_back(i, j, static_cast<double>(o) / static_cast<double>(u));
        }
    return out;
}

// Join output as comparable triples.
std::vector<std::tuple<uint32_t, uint32_t, double>> triples(const JoinPairs& pairs) {
    std::vector<std::tuple<uint32_t, uint32_t, double>> out;
    for (const JoinPair& p : pairs) out.emplace_back(p.a, p.b, p.similarity);
    return out;
}

// Runs a self-join with the given method, threshold and threads.
std::vector<std::tuple<uint32_t, uint32_t, double>> run_self(const Collection& c, JoinMethod m, double tau,
                                                             int threads = 1) {
    JoinOptions opt;
    opt.tau = tau;
    opt.method = m;
    opt.threads = threads;
    return triples(self_join(c, opt));
}

// Checks every method (with 1 and 3 threads) against the reference result want.
void expect_all_methods(const Collection& c, const std::vector<std::tuple<uint32_t, uint32_t, double>>& want,
                        double tau, const std::string& what) {
    for (JoinMethod m : kMethods)
        for (int threads : {1, 3})
            ASSERT_EQ(run_self(c, m, tau, threads), want)
                << what << " tau=" << tau << " method=" << name(m) << " threads=" << threads;
}

// Checks every method against the reference self-join of docs.
void expect_all_methods(const std::vector<Doc>& docs, double tau, const std::string& what) {
    expect_all_methods(make(docs), ref_self(docs, tau), tau, what);
}

// A random collection: a pool of base documents, near-duplicate variants, Zipf-ish hashes and
// skewed frequencies.
std::vector<Doc> random_docs(uint32_t seed, size_t n, size_t max_distinct, uint64_t vocab, uint64_t max_freq) {
    std::mt19937_64 rng(seed);
    std::vector<Doc> docs;
    auto pick_hash = [&]() {
        // Squaring a uniform draw skews toward small (frequent) hashes.
        double u = std::uniform_real_distribution<double>(0, 1)(rng);
        return static_cast<uint64_t>(u * u * static_cast<double>(vocab)) * 0x9e3779b97f4a7c15ULL;
    };
    auto pick_freq = [&]() -> uint64_t {
        uint64_t f = 1;
        while (f < max_freq && (rng() & 3) == 0) f = f * 2 + (rng() & 1);
        return std::min(f, max_freq);
    };
    while (docs.size() < n) {
        uint64_t roll = rng() % 10;
        if (roll < 4 && !docs.empty()) {
            // A variant of an earlier document: change a few signatures or frequencies.
            Doc d = docs[rng() % docs.size()];
            int edits = static_cast<int>(rng() % 4);
            for (int e = 0; e < edits; ++e) {
                uint64_t kind = rng() % 3;
                if (kind == 0 || d.empty()) d.push_back({pick_hash(), pick_freq()});
                else if (kind == 1) d.erase(d.begin() + static_cast<long>(rng() % d.size()));
                else d[rng() % d.size()].second = pick_freq();
            }
            docs.push_back(d);
        } else if (roll == 4) {
            docs.push_back({});
        } else {
            Doc d;
            size_t k = 1 + rng() % max_distinct;
            for (size_t i = 0; i < k; ++i) d.push_back({pick_hash(), pick_freq()});
            docs.push_back(d);
        }
    }
    return docs;
}

// The paper's section 4.3.2 documents.
std::vector<Doc> paper_example() {
    return {{{1, 5}, {2, 4}, {3, 4}}, {{1, 8}, {2, 4}}, {{1, 4}, {2, 5}, {3, 5}}};
}

// The pair a Java prototype bound dropped: similarity 11/15.
std::vector<Doc> regression_11_15() {
    return {{{'b', 1}, {'c', 3}, {'d', 4}, {'e', 2}, {'f', 3}}, {{'b', 2}, {'c', 3}, {'d', 4}, {'f', 4}}};
}

}  // namespace

TEST(Join, PaperExample) {
    auto docs = paper_example();
    auto want = ref_self(docs, 0.8);
    ASSERT_EQ(want.size(), 1u);
    EXPECT_EQ(std::get<0>(want[0]), 0u);
    EXPECT_EQ(std::get<1>(want[0]), 2u);
    EXPECT_EQ(std::get<2>(want[0]), 0.8);
    expect_all_methods(docs, 0.8, "paper example");
    // The other two pairs appear exactly at their own similarities.
    expect_all_methods(docs, 9.0 / 16.0, "paper example at 9/16");
    expect_all_methods(docs, 8.0 / 18.0, "paper example at 8/18");
    EXPECT_EQ(ref_self(docs, 8.0 / 18.0).size(), 3u);
}

TEST(Join, Regression11Over15) {
    auto docs = regression_11_15();
    for (double tau : {0.7, 11.0 / 15.0}) {
        auto want = ref_self(docs, tau);
        ASSERT_EQ(want.size(), 1u) << tau;
        EXPECT_EQ(std::get<2>(want[0]), 11.0 / 15.0);
        expect_all_methods(docs, tau, "11/15");
    }
    // Just above the similarity nothing may be reported.
    double above = std::nextafter(11.0 / 15.0, 1.0);
    EXPECT_TRUE(ref_self(docs, above).empty());
    expect_all_methods(docs, above, "11/15 just above");
    // The same pair found from either side of an R-S join.
    Collection a = make({docs[0]}), b = make({docs[1]});
    for (JoinMethod m : kMethods) {
        JoinOptions opt;
        opt.tau = 0.7;
        opt.method = m;
        EXPECT_EQ(rs_join(a, b, opt).size(), 1u) << name(m);
        EXPECT_EQ(rs_join(b, a, opt).size(), 1u) << name(m);
    }
}

TEST(Join, RandomSelfJoins) {
    int ties = 0, bad_ties = 0;
    for (uint32_t seed = 1; seed <= 30; ++seed) {
        size_t n = 20 + seed * 7;
        auto docs = random_docs(seed, n, 3 + seed % 25, 40 + seed * 13, seed % 3 == 0 ? 1000 : 6);
        PairTable table(docs);
        Collection c = make(docs);
        for (double tau : {0.2, 0.44, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0}) {
            ASSERT_NO_FATAL_FAILURE(
                expect_all_methods(c, table.at(tau, &ties, &bad_ties), tau, "seed " + std::to_string(seed)));
        }
    }
    // The exact rational test and the contract's rounded one disagree only on pairs whose
    // similarity rounds to tau itself (e.g. 1/5 at tau = 0.2, whose double lies above 1/5);
    // those pairs are reported, as similarity() >= tau holds for them.
    EXPECT_GT(ties, 0);
    EXPECT_EQ(bad_ties, 0);
}

TEST(Join, RandomRsJoins) {
    for (uint32_t seed = 100; seed < 125; ++seed) {
        auto all = random_docs(seed, 120, 2 + seed % 17, 60, seed % 2 ? 50 : 3);
        std::vector<Doc> r(all.begin(), all.begin() + 50), s(all.begin() + 50, all.end());
        Collection cr = make(r), cs = make(s);
        for (double tau : {0.3, 0.6, 0.8, 0.9, 1.0}) {
            auto want = ref_rs(r, s, tau);
            for (JoinMethod m : kMethods)
                for (int threads : {1, 2}) {
                    JoinOptions opt;
                    opt.tau = tau;
                    opt.method = m;
                    opt.threads = threads;
                    ASSERT_EQ(triples(rs_join(cr, cs, opt)), want)
                        << "seed " << seed << " tau " << tau << " " << name(m);
                    // The other way round: the dictionary is then the other side's.
                    ASSERT_EQ(triples(rs_join(cs, cr, opt)), ref_rs(s, r, tau))
                        << "seed " << seed << " tau " << tau << " " << name(m) << " (S first)";
                }
        }
    }
}

// The candidates a join reports: brute force verifies every pair of documents (none empty here:
// each compared with every document after it, or every s of an R-S join); the filtered methods verify
// every pair they return and no more than brute force does, and filter some out on random data.
TEST(Join, CountsVerifiedCandidates) {
    auto docs = random_docs(7, 90, 12, 200, 6);
    docs.erase(std::remove_if(docs.begin(), docs.end(), [](const Doc& d) { return d.empty(); }), docs.end());
    std::vector<Doc> r(docs.begin(), docs.begin() + 30), s(docs.begin() + 30, docs.end());
    Collection c = make(docs), cr = make(r), cs = make(s);
    for (int threads : {1, 2})
        for (JoinMethod m : kMethods) {
            std::atomic<uint64_t> self{0}, rs{0};
            JoinOptions opt;
            opt.tau = 0.6;
            opt.method = m;
            opt.threads = threads;
            opt.candidates = &self;
            size_t self_pairs = self_join(c, opt).size();
            opt.candidates = &rs;
            size_t rs_pairs = rs_join(cr, cs, opt).size();
            const uint64_t all_self = docs.size() * (docs.size() - 1) / 2, all_rs = r.size() * s.size();
            if (m == JoinMethod::BruteForce) {
                EXPECT_EQ(self.load(), all_self) << threads;
                EXPECT_EQ(rs.load(), all_rs) << threads;
            } else {
                EXPECT_GE(self.load(), self_pairs) << name(m) << " " << threads;
                EXPECT_LT(self.load(), all_self) << name(m) << " " << threads;
                EXPECT_GE(rs.load(), rs_pairs) << name(m) << " " << threads;
                EXPECT_LT(rs.load(), all_rs) << name(m) << " " << threads;
            }
            EXPECT_GT(self_pairs, 0u);
        }
}

TEST(Join, EmptyDocumentsNeverPair) {
    std::vector<Doc> docs = {{}, {}, {{1, 1}}, {}, {{1, 1}}};
    for (double tau : {1e-9, 0.5, 1.0}) {
        auto want = ref_self(docs, tau);
        ASSERT_EQ(want.size(), 1u);
        expect_all_methods(docs, tau, "empties");
    }
    expect_all_methods({}, 0.5, "no documents");
    expect_all_methods({{}}, 0.5, "one empty");
}

TEST(Join, IdenticalDocumentsAndTauOne) {
    std::vector<Doc> docs;
    Doc base = {{5, 3}, {9, 1}, {77, 1000}, {1234567, 2}};
    for (int i = 0; i < 12; ++i) docs.push_back(base);
    Doc other = base;
    other[0].second = 4;  // one occurrence more: similarity just below 1
    docs.push_back(other);
    docs.push_back({{5, 1000}});
    auto want = ref_self(docs, 1.0);
    EXPECT_EQ(want.size(), 66u);
    expect_all_methods(docs, 1.0, "identical");
    expect_all_methods(docs, 0.999, "identical 0.999");
}

TEST(Join, EqualLengths) {
    // Every document has length 12 and shares most signatures.
    std::mt19937 rng(7);
    std::vector<Doc> docs;
    for (int i = 0; i < 150; ++i) {
        Doc d;
        int left = 12;
        uint64_t h = rng() % 4;
        while (left > 0) {
            int f = 1 + static_cast<int>(rng() % std::min(left, 4));
            d.push_back({h, static_cast<uint64_t>(f)});
            h += 1 + rng() % 3;
            left -= f;
        }
        docs.push_back(d);
    }
    for (double tau : {0.5, 0.6, 0.7, 0.8, 9.0 / 15.0, 10.0 / 14.0, 1.0})
        expect_all_methods(docs, tau, "equal lengths");
}

TEST(Join, LengthsOnPartitionBoundaries) {
    for (double tau : {0.7, 0.8, 0.9}) {
        // Lengths p_k - 1, p_k, p_k + 1 for the first partition boundaries, all drawn from one
        // vocabulary so that long documents contain short ones.
        std::vector<uint64_t> lens;
        uint64_t p = 1;
        while (p < 200) {
            for (uint64_t l : {p - 1, p, p + 1})
                if (l >= 1) lens.push_back(l);
            double est = std::floor(static_cast<double>(p) / tau) + 1.0;
            uint64_t y = static_cast<uint64_t>(est);
            while (y > p + 1 && !(static_cast<double>(p) / static_cast<double>(y - 1) >= tau)) --y;
            while (static_cast<double>(p) / static_cast<double>(y) >= tau) ++y;
            p = y;
        }
        std::vector<Doc> docs;
        for (uint64_t l : lens) {
            Doc d;
            for (uint64_t i = 0; i < l; ++i) d.push_back({i, 1});  // a prefix of one sequence
            docs.push_back(d);
            Doc heavy = {{0, l}};  // the same length as one heavy signature
            docs.push_back(heavy);
        }
        expect_all_methods(docs, tau, "boundaries");
    }
}

TEST(Join, ExactTies) {
    // Pairs whose similarity equals tau exactly as computed: reported by every method.
    std::vector<Doc> docs = {
        {{1, 3}, {2, 3}, {3, 3}, {4, 3}},  // 12
        {{1, 3}, {2, 3}, {3, 3}, {4, 1}},  // 10: sim 10/12
        {{1, 3}, {2, 3}, {3, 3}},          //  9: sim with the first 9/12 = 0.75
    };
    for (double tau : {10.0 / 12.0, 9.0 / 12.0, 9.0 / 10.0, 0.75}) expect_all_methods(docs, tau, "ties");
}

TEST(Join, ThreadsAgree) {
    auto docs = random_docs(4242, 600, 30, 300, 20);
    Collection c = make(docs);
    for (JoinMethod m : {JoinMethod::NoPart, JoinMethod::Partitioned})
        for (double tau : {0.5, 0.8}) {
            auto one = run_self(c, m, tau, 1);
            for (int t : {2, 4, 7}) EXPECT_EQ(run_self(c, m, tau, t), one) << name(m) << " " << t;
        }
}

TEST(Join, LargeCollectionsWithParallelDictionary) {
    // Past 65,536 signature occurrences the dictionary is counted in ranges on several workers and
    // merged: self and R-S joins must still equal the brute-force method (every pair through
    // similarity()), for any number of threads.
    auto docs = random_docs(777, 2500, 120, 20000, 6);
    size_t occurrences = 0;
    for (const Doc& d : docs) occurrences += d.size();
    ASSERT_GT(occurrences, size_t(1) << 16);
    Collection c = make(docs);
    for (double tau : {0.5, 0.8}) {
        auto want = run_self(c, JoinMethod::BruteForce, tau);
        ASSERT_GT(want.size(), 100u);
        for (int t : {1, 2, 3}) EXPECT_EQ(run_self(c, JoinMethod::Partitioned, tau, t), want) << tau << " " << t;
    }
    std::vector<Doc> r(docs.begin(), docs.begin() + 300);
    Collection cr = make(r);
    JoinOptions opt;
    opt.tau = 0.6;
    opt.method = JoinMethod::BruteForce;
    auto want = triples(rs_join(cr, c, opt));
    ASSERT_GT(want.size(), 100u);
    opt.method = JoinMethod::Partitioned;
    for (int t : {1, 2}) {
        opt.threads = t;
        EXPECT_EQ(triples(rs_join(cr, c, opt)), want) << t;
    }
}

TEST(Join, ProgressCountsProbeDocuments) {
    auto docs = random_docs(99, 300, 10, 100, 4);
    Collection c = make(docs);
    for (JoinMethod m : kMethods) {
        CancelToken token;
        JoinOptions opt;
        opt.tau = 0.6;
        opt.method = m;
        opt.threads = 2;
        opt.cancel = &token;
        self_join(c, opt);
        EXPECT_EQ(token.progress.load(), docs.size()) << name(m);
    }
}

TEST(Join, InvalidOptions) {
    Collection c = make(paper_example());
    for (double tau : {0.0, -0.5, 1.0000001, std::nan("")}) {
        JoinOptions opt;
        opt.tau = tau;
        try {
            self_join(c, opt);
            ADD_FAILURE() << "tau " << tau << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidParameter);
        }
    }
    JoinOptions opt;
    opt.threads = 0;
    EXPECT_THROW(self_join(c, opt), Error);
}

TEST(Join, CancelStopsPromptly) {
    // Many documents sharing frequent signatures: minutes of work without a cancel.
    std::vector<Doc> docs;
    std::mt19937 rng(5);
    for (int i = 0; i < 40000; ++i) {
        Doc d;
        for (int k = 0; k < 40; ++k) d.push_back({rng() % 60, 1 + rng() % 3});
        docs.push_back(d);
    }
    Collection c = make(docs);
    for (JoinMethod m : kMethods) {
        CancelToken token;
        JoinOptions opt;
        opt.tau = 0.3;
        opt.method = m;
        opt.threads = 2;
        opt.cancel = &token;
        auto t0 = std::chrono::steady_clock::now();
        std::thread stopper([&token] {
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            token.stop.store(true);
        });
        try {
            self_join(c, opt);
            ADD_FAILURE() << name(m) << " finished although canceled";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Canceled) << name(m);
        }
        stopper.join();
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_LT(secs, 2.0) << name(m);
    }
    // A token already set stops the join before any work.
    CancelToken token;
    token.stop = true;
    JoinOptions opt;
    opt.cancel = &token;
    EXPECT_THROW(self_join(c, opt), Error);
}

TEST(Join, MemoryLimit) {
    Collection c = make(random_docs(17, 400, 20, 200, 5));
    for (JoinMethod m : {JoinMethod::NoPrune, JoinMethod::NoPart, JoinMethod::Partitioned}) {
        JoinOptions opt;
        opt.method = m;
        opt.memory_limit = 1000;
        try {
            self_join(c, opt);
            ADD_FAILURE() << name(m) << " ignored the memory limit";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory);
            EXPECT_NE(std::string(e.what()).find("1000 bytes"), std::string::npos) << e.what();
        }
    }
    // The result alone can exceed the limit: 1000 identical documents make ~500,000 pairs.
    std::vector<Doc> same(1000, Doc{{1, 2}, {2, 3}});
    Collection s = make(same);
    for (JoinMethod m : kMethods) {
        JoinOptions opt;
        opt.method = m;
        opt.threads = 2;
        opt.memory_limit = 2u << 20;
        try {
            self_join(s, opt);
            ADD_FAILURE() << name(m) << " ignored the memory limit for pairs";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory) << name(m);
        }
        opt.memory_limit = 0;
        EXPECT_EQ(self_join(s, opt).size(), 1000u * 999u / 2u) << name(m);
    }
}

TEST(Join, RequiredOverlapMatchesDefinition) {
    using join_detail::min_partner_length;
    using join_detail::required_overlap_exact;
    for (double tau : {0.01, 0.3, 0.44, 0.5, 0.7, 11.0 / 15.0, 0.8, 0.9, 0.99, 1.0}) {
        for (uint64_t s = 2; s < 1500; ++s) {
            uint64_t o = 1;
            while (!(static_cast<double>(o) / static_cast<double>(s - o) >= tau)) ++o;
            ASSERT_EQ(required_overlap_exact(s, tau), o) << "s=" << s << " tau=" << tau;
        }
        for (uint64_t b = 1; b < 1500; ++b) {
            uint64_t a = 1;
            while (!(static_cast<double>(a) / static_cast<double>(b) >= tau)) ++a;
            ASSERT_EQ(min_partner_length(b, tau), a) << "b=" << b << " tau=" << tau;
        }
    }
    // Large totals stay exact too.
    for (uint64_t s : {uint64_t(4294967294ULL), uint64_t(3000000001ULL), uint64_t(123456789)}) {
        uint64_t o = required_overlap_exact(s, 0.8);
        EXPECT_TRUE(static_cast<double>(o) / static_cast<double>(s - o) >= 0.8);
        EXPECT_FALSE(static_cast<double>(o - 1) / static_cast<double>(s - o + 1) >= 0.8);
    }
}

// The collection returns every document exactly as added: frequencies of every width (all 1,
// up to 255, up to 65535, larger), documents spread over several storage chunks, and a
// document larger than a chunk.
TEST(Collection, StoresEveryWidthAcrossChunks) {
    std::vector<Doc> docs;
    std::mt19937_64 rng(7);
    const uint64_t tops[] = {1, 200, 60000, 3000000};
    for (size_t i = 0; i < 3000; ++i) {
        size_t n = i == 1500 ? 20000 : 1 + rng() % 12;  // one document bigger than a chunk
        uint64_t top = tops[i % 4];
        Doc d;
        for (size_t k = 0; k < n; ++k) d.emplace_back(k * 7919 + i, 1 + rng() % top);
        docs.push_back(d);
    }
    docs.push_back({});  // an empty document
    Collection c = make(docs);
    ASSERT_EQ(c.size(), docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
        Multiset m = Multiset::from_pairs(docs[i]);
        MultisetView want = m.view(), got = c.doc(i);
        ASSERT_EQ(got.size, want.size) << i;
        ASSERT_EQ(got.length, want.length) << i;
        EXPECT_EQ(c.id(i), static_cast<int64_t>(100 + i));
        for (uint32_t k = 0; k < want.size; ++k) {
            ASSERT_EQ(got.hashes[k], want.hashes[k]) << i << ":" << k;
            ASSERT_EQ(got.freqs[k], want.freqs[k]) << i << ":" << k;
        }
    }
}

// The prefix-group matcher on its own (self_join may leave it for the index matcher): a cap no
// collection reaches, and the reference result.
std::vector<std::tuple<uint32_t, uint32_t, double>> run_groups(const Collection& c, double tau, int threads) {
    JoinOptions opt;
    opt.tau = tau;
    opt.threads = threads;
    JoinPairs pairs;
    EXPECT_TRUE(join_detail::group_self_join(c, opt, 1e18, pairs));
    return triples(pairs);
}

TEST(JoinGroups, AgreesWithReference) {
    for (uint32_t seed = 1; seed <= 30; ++seed) {
        auto docs = random_docs(seed, 20 + seed * 7, 3 + seed % 25, 40 + seed * 13, seed % 3 == 0 ? 1000 : 6);
        PairTable table(docs);
        Collection c = make(docs);
        for (double tau : {0.2, 0.44, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0})
            for (int threads : {1, 3})
                ASSERT_EQ(run_groups(c, tau, threads), table.at(tau)) << "seed " << seed << " tau " << tau;
    }
}

// A document is on the first side when its id (100 + index) is in the set the context points to.
bool in_first(const void* context, int64_t id) {
    return static_cast<const std::set<int64_t>*>(context)->count(id) != 0;
}

// With sides, the prefix-group matcher returns exactly the wanted pairs of the reference (each
// kind of split: one side empty, every third document, a random half, all but one) and finds
// fewer candidates than without them; every matcher's result holds the wanted pairs (the others
// may return more: JoinOptions::sides).
TEST(JoinGroups, SidesKeepExactlyTheWantedPairs) {
    for (uint32_t seed = 1; seed <= 8; ++seed) {
        auto docs = random_docs(seed, 40 + seed * 9, 3 + seed % 25, 40 + seed * 13, seed % 3 == 0 ? 1000 : 6);
        PairTable table(docs);
        Collection c = make(docs);
        std::mt19937_64 rng(seed);
        for (int split = 0; split < 4; ++split) {
            std::set<int64_t> first;
            for (size_t i = 0; i < docs.size(); ++i) {
                const bool in = split == 0 ? false : split == 1 ? i % 3 == 0 : split == 2 ? rng() % 2 == 0 : i != 5;
                if (in) first.insert(static_cast<int64_t>(100 + i));
            }
            for (PairSides::Keep keep : {PairSides::Keep::WithFirst, PairSides::Keep::Across}) {
                PairSides sides;
                sides.first = in_first;
                sides.context = &first;
                sides.keep = keep;
                auto wanted = [&](uint32_t a, uint32_t b) {
                    const int n = int(first.count(100 + a)) + int(first.count(100 + b));
                    return keep == PairSides::Keep::Across ? n == 1 : n >= 1;
                };
                for (double tau : {0.2, 0.44, 0.7, 0.9}) {
                    std::vector<std::tuple<uint32_t, uint32_t, double>> want;
                    for (const auto& t : table.at(tau))
                        if (wanted(std::get<0>(t), std::get<1>(t))) want.push_back(t);
                    const std::string what = "seed " + std::to_string(seed) + " split " + std::to_string(split) +
                                             (keep == PairSides::Keep::Across ? " across" : " with first") + " tau " +
                                             std::to_string(tau);
                    for (int threads : {1, 3}) {
                        std::atomic<uint64_t> with{0}, without{0};
                        JoinOptions opt;
                        opt.tau = tau;
                        opt.threads = threads;
                        opt.candidates = &without;
                        JoinPairs all;
                        ASSERT_TRUE(join_detail::group_self_join(c, opt, 1e18, all)) << what;
                        opt.sides = &sides;
                        opt.candidates = &with;
                        JoinPairs got;
                        ASSERT_TRUE(join_detail::group_self_join(c, opt, 1e18, got)) << what;
                        ASSERT_EQ(triples(got), want) << what << " threads " << threads;
                        EXPECT_LE(with.load(), without.load()) << what;
                        if (want.size() < table.at(tau).size()) {
                            EXPECT_LT(with.load(), without.load()) << what;
                        }
                    }
                    for (JoinMethod m : kMethods) {
                        JoinOptions opt;
                        opt.tau = tau;
                        opt.method = m;
                        opt.sides = &sides;
                        auto got = triples(self_join(c, opt));
                        decltype(got) kept;
                        for (const auto& t : got)
                            if (wanted(std::get<0>(t), std::get<1>(t))) kept.push_back(t);
                        ASSERT_EQ(kept, want) << what << " method " << name(m);
                    }
                }
            }
        }
    }
}

// The verification merges two multisets with one instance per pair of frequency widths (0, 1, 2
// or 4 bytes: join_groups.cpp). Documents over 20 light signatures and one heavy one whose
// frequency sets the width: 1 (width 0), 2 and 255 (width 1), 256 and 65,535 (width 2), 65,536
// and 70,000 (width 4). Neighbouring frequencies make pairs of similar length across the width
// boundaries, so results come from merges of widths (0, 1), (1, 1), (1, 2), (2, 2), (2, 4) and
// (4, 4), either way round; every threshold equals the reference.
TEST(JoinGroups, VerifiesAcrossFrequencyWidths) {
    std::mt19937_64 rng(4242);
    std::vector<uint64_t> light(20);
    for (uint64_t& h : light) h = rng();
    const uint64_t heavy = rng();
    std::vector<Doc> docs;
    for (uint64_t f : {1, 2, 255, 256, 65535, 65536, 70000})
        for (int v = 0; v < 3; ++v) {
            Doc d{{heavy, f}};
            for (uint64_t h : light)
                if (rng() % 10 != 0) d.push_back({h, 1});
            d.push_back({rng(), 1});  // one signature of its own
            docs.push_back(d);
        }
    PairTable table(docs);
    Collection c = make(docs);
    for (double tau : {0.5, 0.8, 0.9, 0.95, 0.99}) {
        ASSERT_FALSE(table.at(tau).empty()) << tau;
        for (int threads : {1, 3}) ASSERT_EQ(run_groups(c, tau, threads), table.at(tau)) << "tau " << tau;
    }
}

// The prefix-group matcher drops the entries whose hash no other entry of their bucket has
// before sorting (join_groups.cpp sort_bucket), while that drops at least half of them. Two
// collections of 3,000 documents, well past the 4,096 entries after which a worker decides: one
// of mostly unique signatures with near-duplicate pairs (the filter stays on) and one of 40 base
// documents in many variants (it turns off); both equal the brute-force method (itself checked
// against the reference above) on 1 and 3 threads.
TEST(JoinGroups, SingletonFilterOnAndOff) {
    std::mt19937_64 rng(77);
    auto fresh = [&](size_t n) {
        Doc d;
        for (size_t k = 0; k < n; ++k) d.push_back({rng(), 1 + rng() % 3});
        return d;
    };
    auto variant = [&](Doc d) {
        for (int e = 0; e < 3 && !d.empty(); ++e) {
            if (rng() % 2 == 0) d[rng() % d.size()] = {rng(), 1};
            else d[rng() % d.size()].second = 1 + rng() % 3;
        }
        return d;
    };
    std::vector<Doc> unique_mostly, many_variants, bases;
    while (unique_mostly.size() < 3000) {
        Doc d = fresh(10 + rng() % 60);
        unique_mostly.push_back(d);
        if (rng() % 5 == 0) unique_mostly.push_back(variant(d));
    }
    for (int b = 0; b < 40; ++b) bases.push_back(fresh(10 + rng() % 60));
    while (many_variants.size() < 3000) many_variants.push_back(variant(bases[rng() % bases.size()]));
    for (const auto* docs : {&unique_mostly, &many_variants}) {
        Collection c = make(*docs);
        // One brute-force run: the pairs at a higher tau are those whose similarity reaches it.
        const auto all = run_self(c, JoinMethod::BruteForce, 0.3);
        for (double tau : {0.3, 0.6, 0.9}) {
            std::vector<std::tuple<uint32_t, uint32_t, double>> want;
            for (const auto& t : all)
                if (std::get<2>(t) >= tau) want.push_back(t);
            ASSERT_FALSE(want.empty());
            for (int threads : {1, 3})
                ASSERT_EQ(run_groups(c, tau, threads), want)
                    << (docs == &unique_mostly ? "mostly unique" : "many variants") << " tau " << tau << " threads "
                    << threads;
        }
    }
}

// dictionary_mix (join_internal.hpp) undone, to make hashes with chosen mixed bits.
uint64_t unmix(uint64_t m) {
    m ^= m >> 29 ^ m >> 58;
    uint64_t inv = 0x9e3779b97f4a7c15ULL;  // Newton's iteration for the inverse mod 2^64
    for (int k = 0; k < 6; ++k) inv *= 2 - 0x9e3779b97f4a7c15ULL * inv;
    m *= inv;
    return m ^ m >> 31 ^ m >> 62;
}

// Hashes whose prefix entries share their key: the matcher groups entries by 32 mixed bits
// (bucket and key), not by the whole hash (join_prefix.hpp). For 40 seeds, documents drawn from
// 40 families of three hashes that differ only below those bits, so that nearly every group
// mixes signatures and documents meet themselves in a group: still exactly the reference pairs,
// and no document paired with itself. (Seed 8 caught a bound on the last shared signature's
// deficit that such a group can fool; without the skip of a document met twice every seed fails.)
TEST(JoinGroups, SignaturesSharingAKeyOnlyAddCandidates) {
    using join_detail::PrefixLists;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        std::mt19937_64 rng(seed);
        std::vector<std::vector<uint64_t>> families(40);
        for (auto& f : families) {
            const uint64_t top = rng() & ~uint64_t(0xffffffff);
            for (uint64_t low : {uint64_t(1), uint64_t(2), uint64_t(3) + (rng() & 0xfff00000)})
                f.push_back(unmix(top | low));
            ASSERT_EQ(join_detail::dictionary_mix(f[0]), top | 1);
            for (uint64_t h : f) {
                EXPECT_EQ(PrefixLists::bucket_of(h), PrefixLists::bucket_of(f[0]));
                EXPECT_EQ(PrefixLists::key_of(h), PrefixLists::key_of(f[0]));
            }
            EXPECT_NE(f[1], f[0]);
        }
        std::vector<Doc> docs;
        for (int d = 0; d < 300; ++d) {
            std::set<uint64_t> picked;
            const size_t n = 2 + rng() % 9;
            while (picked.size() < n) {
                const auto& f = families[rng() % families.size()];
                picked.insert(f[rng() % 3]);
            }
            Doc doc;
            for (uint64_t h : picked) doc.push_back({h, 1 + rng() % 3});
            docs.push_back(doc);
            if (rng() % 3 == 0) docs.push_back(doc);  // some exact duplicates too
        }
        PairTable table(docs);
        Collection c = make(docs);
        for (double tau : {0.2, 0.44, 0.6, 0.8, 1.0})
            for (int threads : {1, 3}) {
                const auto got = run_groups(c, tau, threads);
                ASSERT_FALSE(got.empty());
                ASSERT_EQ(got, table.at(tau)) << "seed " << seed << " tau " << tau << " threads " << threads;
            }
    }
}

// A bucket's kept entries are placed by the top bits of their key and then put in key order by
// one insertion sort, which gives way to a sort per fine bucket past 8 moves an entry
// (join_groups.cpp sort_within_fine). 300 hashes whose keys differ only below their top 14
// bits (so one fine bucket holds them all), in 600 one-signature documents: each hash once in
// descending key order, then once more in another order, so that no key's two entries are
// adjacent before the sort and the insertion sort runs out of moves. Every pair of equal
// documents is found, and nothing else.
TEST(JoinGroups, CrowdedFineBucketIsSortedWhole) {
    using join_detail::PrefixLists;
    std::mt19937_64 rng(5150);
    const uint64_t top = rng() & ~((uint64_t(1) << 42) - 1);  // bucket and the key's top 14 bits
    const size_t kHashes = 300;
    std::vector<uint64_t> hashes;
    for (uint64_t k = 0; k < kHashes; ++k)
        hashes.push_back(unmix(top | (kHashes - 1 - k) << 32 | (rng() & 0xffffffff)));
    for (uint64_t h : hashes) ASSERT_EQ(join_detail::dictionary_mix(h) >> 42, top >> 42);
    ASSERT_GT(PrefixLists::key_of(hashes[0]), PrefixLists::key_of(hashes[1]));  // descending keys
    std::vector<Doc> docs;
    for (uint64_t h : hashes) docs.push_back({{h, 1}});
    std::vector<uint64_t> again = hashes;
    std::shuffle(again.begin(), again.end(), rng);
    for (uint64_t h : again) docs.push_back({{h, 1}});
    PairTable table(docs);
    Collection c = make(docs);
    for (double tau : {0.5, 1.0}) {
        ASSERT_EQ(table.at(tau).size(), kHashes);
        for (int threads : {1, 2}) ASSERT_EQ(run_groups(c, tau, threads), table.at(tau)) << "tau " << tau;
    }
}

// The prefix-group matcher with a sink: every pair goes through the sink exactly once (none is
// returned), within the bound the matcher announced; sorted, they are the reference result.
TEST(JoinGroups, SinkGetsEveryPairOnce) {
    for (uint32_t seed = 1; seed <= 12; ++seed) {
        auto docs = random_docs(seed, 40 + seed * 11, 3 + seed % 25, 40 + seed * 13, seed % 3 == 0 ? 1000 : 6);
        PairTable table(docs);
        Collection c = make(docs);
        for (double tau : {0.3, 0.6, 0.9, 1.0})
            for (int threads : {1, 3}) {
                std::atomic<int> wakes{0};  // the workers put concurrently
                PairSink sink([&] { ++wakes; });
                JoinOptions opt;
                opt.tau = tau;
                opt.threads = threads;
                opt.sink = &sink;
                JoinPairs left;
                ASSERT_TRUE(join_detail::group_self_join(c, opt, 1e18, left));
                EXPECT_TRUE(left.empty());
                std::vector<JoinPairs> runs;
                JoinPairs all;
                const bool any = sink.take(runs);
                EXPECT_EQ(any, !runs.empty());
                EXPECT_FALSE(sink.ready());
                for (const JoinPairs& r : runs) {
                    EXPECT_FALSE(r.empty());  // empty runs are not handed over
                    all.insert(all.end(), r.begin(), r.end());
                }
                EXPECT_EQ(wakes.load(), static_cast<int>(runs.size()));
                EXPECT_LE(all.size(), sink.bound());
                join_detail::sort_pairs(all);
                ASSERT_EQ(triples(all), table.at(tau)) << "seed " << seed << " tau " << tau << " threads " << threads;
            }
    }
}

// Runs join (which puts to sink) on a thread of its own while this thread takes what it puts, as
// the PostgreSQL layer does (a put waits while the sink is full); returns every pair taken,
// sorted, and sets *ok to join's return value.
template <class F>
JoinPairs consume(PairSink& sink, F&& join, bool* ok = nullptr) {
    std::atomic<bool> done{false};
    bool result = false;
    std::thread producer([&] {
        result = join();
        done = true;
    });
    std::vector<JoinPairs> runs;
    JoinPairs all;
    auto take = [&] {
        while (sink.take(runs))
            for (const JoinPairs& r : runs) {
                EXPECT_FALSE(r.empty());
                all.insert(all.end(), r.begin(), r.end());
                sink.done(r.capacity());
            }
    };
    while (!done) {
        take();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    producer.join();
    take();
    if (ok != nullptr) *ok = result;
    join_detail::sort_pairs(all);
    return all;
}

// The index matcher, with every method's filters, hands every pair over through a sink (none is
// returned), also past the size of one worker's run; brute force ignores the sink.
TEST(JoinIndex, SinkGetsEveryPair) {
    std::vector<Doc> docs = random_docs(7, 120, 10, 200, 6);
    // 400 copies of one document: 79,800 pairs, more than a worker gathers before it puts.
    std::vector<Doc> same(400, Doc{{1, 2}, {2, 3}, {9, 1}});
    for (const std::vector<Doc>* d : {&docs, &same}) {
        Collection c = make(*d);
        for (JoinMethod m : {JoinMethod::NoPart, JoinMethod::NoPrune, JoinMethod::Partitioned})
            for (int threads : {1, 3}) {
                PairSink sink;
                JoinOptions opt;
                opt.tau = 0.5;
                opt.threads = threads;
                opt.method = m;
                opt.sink = &sink;
                JoinPairs left;
                JoinPairs got = consume(sink, [&] {
                    left = join_detail::index_self_join(c, opt, join_detail::config_for(m));
                    return true;
                });
                EXPECT_TRUE(left.empty()) << name(m);
                ASSERT_EQ(triples(got), ref_self(*d, 0.5)) << name(m) << " threads " << threads;
                EXPECT_EQ(sink.peak_bytes() % sizeof(JoinPair), 0u);
                EXPECT_GT(sink.peak_bytes(), 0u);
            }
    }
    Collection c = make(docs);
    PairSink sink;
    JoinOptions opt;
    opt.tau = 0.5;
    opt.threads = 2;
    opt.method = JoinMethod::BruteForce;
    opt.sink = &sink;
    JoinPairs got = self_join(c, opt);
    std::vector<JoinPairs> runs;
    EXPECT_FALSE(sink.take(runs));
    ASSERT_EQ(triples(got), ref_self(docs, 0.5));
}

// A matcher that streams holds its pairs only until it puts them: a result far larger than the
// limit goes through, where the same join without a sink fails for its pairs.
TEST(JoinIndex, StreamedPairsDoNotCountAgainstTheLimit) {
    std::vector<Doc> same(2000, Doc{{1, 2}, {2, 3}});  // ~2,000,000 pairs: 32 MB, 64 MB while merged
    Collection s = make(same);
    for (bool groups : {false, true}) {
        JoinOptions opt;
        opt.tau = 0.9;
        opt.threads = 2;
        // The prefix-group matcher also keeps its candidate entries (8 bytes a pair here, in
        // slabs that double, charged with the next one before they are written).
        opt.memory_limit = groups ? 48u << 20 : 2u << 20;
        JoinPairs got;
        auto run = [&] {
            if (groups) return join_detail::group_self_join(s, opt, 1e18, got);
            got = join_detail::index_self_join(s, opt, join_detail::config_for(JoinMethod::Partitioned));
            return true;
        };
        EXPECT_THROW(run(), JoinMemoryError) << (groups ? "groups" : "index");
        PairSink sink;
        opt.sink = &sink;
        bool ok = false;
        const JoinPairs taken = consume(sink, run, &ok);
        ASSERT_TRUE(ok);
        EXPECT_TRUE(got.empty());
        EXPECT_EQ(taken.size(), 2000u * 1999u / 2u) << (groups ? "groups" : "index");
        // The pairs in flight stay near the sink's bound, far below the result's 32 MB.
        EXPECT_LE(sink.peak_bytes(), 3 * PairSink::kQueuedPairs * sizeof(JoinPair));
    }
}

// A put waits while the runs put and not yet done have room for kQueuedPairs pairs, until the
// consumer has written them (taking them is not enough) or the stop flag is set; the peak counts
// the room of the runs put and not yet done.
TEST(PairSinkTest, PutWaitsForTheConsumer) {
    std::atomic<bool> stop{false};
    PairSink sink(nullptr, &stop);
    sink.put(JoinPairs(PairSink::kQueuedPairs));
    std::atomic<bool> second{false};
    std::thread putter([&] {
        sink.put(JoinPairs(3));
        second = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(second.load());  // the sink is full
    std::vector<JoinPairs> runs;
    ASSERT_TRUE(sink.take(runs));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(second.load());  // taken, but still held until written
    sink.done(runs[0].capacity());
    putter.join();
    EXPECT_TRUE(second.load());
    EXPECT_EQ(sink.peak_bytes(), PairSink::kQueuedPairs * sizeof(JoinPair));
    // Full again: only the stop flag lets a put through without a consumer.
    sink.put(JoinPairs(PairSink::kQueuedPairs));
    EXPECT_EQ(sink.peak_bytes(), (PairSink::kQueuedPairs + 3) * sizeof(JoinPair));
    std::thread stopped([&] { sink.put(JoinPairs(5)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
    stopped.join();
    EXPECT_EQ(sink.peak_bytes(), (PairSink::kQueuedPairs + 3 + 5) * sizeof(JoinPair));
}

// Runs put from several threads at once are all taken, each once.
TEST(PairSinkTest, TakesEveryRunFromManyThreads) {
    std::atomic<int> wakes{0};
    PairSink sink([&] { ++wakes; });
    std::vector<std::thread> putters;
    for (uint32_t t = 0; t < 4; ++t)
        putters.emplace_back([&sink, t] {
            for (uint32_t k = 0; k < 200; ++k) {
                JoinPairs run;
                for (uint32_t i = 0; i <= k % 3; ++i) run.push_back(JoinPair{t, k * 3 + i, 1.0});
                sink.put(std::move(run));
                sink.put(JoinPairs());  // dropped, wakes nobody
            }
        });
    std::map<std::pair<uint32_t, uint32_t>, int> seen;
    std::vector<JoinPairs> runs;
    size_t taken = 0;
    auto take_all = [&] {
        while (sink.take(runs))
            for (const JoinPairs& r : runs) {
                ++taken;
                for (const JoinPair& p : r) ++seen[{p.a, p.b}];
            }
    };
    while (taken < 800) take_all();
    for (std::thread& t : putters) t.join();
    take_all();
    EXPECT_EQ(taken, 800u);
    EXPECT_EQ(wakes.load(), 800);
    size_t pairs = 0;
    for (uint32_t k = 0; k < 200; ++k) pairs += 4 * (k % 3 + 1);
    EXPECT_EQ(seen.size(), pairs);
    for (const auto& [pair, n] : seen) EXPECT_EQ(n, 1);
    EXPECT_FALSE(sink.ready());
}

TEST(JoinResults, SortPairsOrdersByAThenB) {
    std::mt19937_64 rng(5);
    // Sizes on both sides of the radix sort's threshold; a and b drawn from narrow and full
    // ranges, clusters of equal a (a large cluster's pairs), and every b equal to 0.
    for (size_t n : {0, 1, 7, 2047, 2048, 2049, 50000})
        for (int shape = 0; shape < 4; ++shape) {
            JoinPairs pairs(n);
            for (size_t i = 0; i < n; ++i) {
                JoinPair& p = pairs[i];
                switch (shape) {
                    case 0:
                        p.a = static_cast<uint32_t>(rng() % 100);
                        p.b = static_cast<uint32_t>(rng() % 70000);
                        break;
                    case 1:
                        p.a = static_cast<uint32_t>(rng());
                        p.b = static_cast<uint32_t>(rng());
                        break;
                    case 2:
                        p.a = static_cast<uint32_t>(58000 + i % 300);
                        p.b = static_cast<uint32_t>(60000 - i / 300);
                        break;
                    default:
                        p.a = static_cast<uint32_t>(rng() % 5000);
                        p.b = 0;
                        break;
                }
                p.similarity = static_cast<double>(p.a ^ p.b);  // travels with its pair
            }
            JoinPairs want = pairs;
            std::stable_sort(want.begin(), want.end(),
                             [](const JoinPair& x, const JoinPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
            join_detail::sort_pairs(pairs);
            ASSERT_EQ(pairs.size(), want.size());
            for (size_t i = 0; i < n; ++i) {
                ASSERT_EQ(pairs[i].a, want[i].a) << n << " " << shape << " " << i;
                ASSERT_EQ(pairs[i].b, want[i].b) << n << " " << shape << " " << i;
                ASSERT_EQ(pairs[i].similarity, want[i].similarity) << n << " " << shape << " " << i;
            }
        }
}

TEST(JoinGroups, FrequentSignaturesAreExactlyTheSampleCounts) {
    // Hashes drawn from a skewed pool (counts from 1 to every document) plus one unique hash per
    // document slot, so that many keyless counters are shared by several hashes; one hash in
    // every document and one in 280 test the counters' saturation at 255.
    std::mt19937_64 rng(11);
    const size_t n = 3000;
    std::vector<Doc> docs(n);
    for (size_t i = 0; i < n; ++i) {
        Doc& d = docs[i];
        d.push_back({0xabcdefULL, 1});
        if (i % 10 < 1 || i < 250) d.push_back({0x123456ULL, 2});
        for (int k = 0; k < 20; ++k) {
            const uint64_t pick = rng() % 4 == 0 ? rng() % 50 : rng() % 20000;
            d.push_back({(pick + 1) * 0x9e3779b97f4a7c15ULL + 17, 1});
        }
        for (int k = 0; k < 10; ++k) d.push_back({rng() | 1, 1});
    }
    Collection c = make(docs);
    for (size_t sample : {size_t(3000), size_t(1000), size_t(77)})
        for (uint32_t min_count : {1u, 2u, 3u, 5u, 255u, 281u, 300u}) {
            // Reference: count each hash once per sampled document, exactly as documented.
            const size_t step = std::max<size_t>(1, n / sample);
            std::map<uint64_t, uint32_t> count;
            for (size_t d = 0; d < n; d += step) {
                MultisetView v = c.doc(d);
                for (uint32_t i = 0; i < v.size; ++i) ++count[v.hashes[i]];
            }
            std::vector<std::pair<uint32_t, uint64_t>> frequent;
            for (const auto& [h, k] : count)
                if (k >= min_count) frequent.emplace_back(k, h);
            std::sort(frequent.begin(), frequent.end());
            std::map<uint64_t, uint32_t> want;
            for (uint32_t r = 0; r < frequent.size(); ++r) want[frequent[r].second] = r;
            join_detail::FrequentSignatures got(c, sample, min_count);
            ASSERT_EQ(got.size(), frequent.size()) << sample << " " << min_count;
            for (const auto& [h, k] : count) {
                auto it = want.find(h);
                ASSERT_EQ(got.order_of(h), it == want.end() ? join_detail::FrequentSignatures::kNone : it->second)
                    << sample << " " << min_count << " " << h;
            }
        }
}

TEST(JoinGroups, FrequentSignaturesGoLast) {
    // Signatures 1..5 are in most documents (some documents hold nothing else, so their prefixes
    // run into the frequent part), with heavy frequencies; the others are each in one document,
    // except in the exact copies added after.
    std::mt19937_64 rng(7);
    std::vector<Doc> docs;
    for (uint64_t i = 0; i < 400; ++i) {
        Doc d;
        for (uint64_t h = 1; h <= 5; ++h)
            if (rng() % 4 != 0) d.push_back({h * 0x9e3779b97f4a7c15ULL, 1 + rng() % (i % 7 == 0 ? 50 : 3)});
        const uint64_t rare = i % 5 == 0 ? 0 : rng() % 12;
        for (uint64_t k = 0; k < rare; ++k) d.push_back({1000 + 100 * i + k, 1 + rng() % 2});
        docs.push_back(d);
    }
    join_detail::FrequentSignatures frequent(make(docs), join_detail::kFrequentSample, join_detail::kFrequentMinCount);
    EXPECT_EQ(frequent.size(), 5u);
    EXPECT_NE(frequent.order_of(3 * 0x9e3779b97f4a7c15ULL), join_detail::FrequentSignatures::kNone);
    EXPECT_EQ(frequent.order_of(1000 + 100 * 1), join_detail::FrequentSignatures::kNone);
    for (int i = 0; i < 200; ++i) docs.push_back(docs[rng() % docs.size()]);
    // Variants: one frequency changed.
    for (int i = 0; i < 100; ++i) {
        Doc d = docs[rng() % docs.size()];
        if (!d.empty()) d[rng() % d.size()].second += 1;
        docs.push_back(d);
    }
    Collection c = make(docs);
    PairTable table(docs);
    for (double tau : {0.1, 0.3, 0.5, 0.75, 0.9, 1.0})
        for (int threads : {1, 2}) ASSERT_EQ(run_groups(c, tau, threads), table.at(tau)) << "tau " << tau;
}

TEST(JoinGroups, GivesWayPastTheCandidateCap) {
    std::vector<Doc> same(300, Doc{{1, 2}, {2, 3}, {3, 1}});
    Collection c = make(same);
    JoinOptions opt;
    opt.tau = 0.9;
    JoinPairs pairs;
    EXPECT_FALSE(join_detail::group_self_join(c, opt, 10.0, pairs));  // 299 candidates per document
    EXPECT_TRUE(pairs.empty());
    EXPECT_TRUE(join_detail::group_self_join(c, opt, 1000.0, pairs));
    EXPECT_EQ(pairs.size(), 300u * 299u / 2u);
    // The default method then runs the index matcher: the same pairs.
    EXPECT_EQ(self_join(c, opt).size(), 300u * 299u / 2u);
}

TEST(JoinGroups, UnlistedRangesAreListedBeforeMatching) {
    // Prefixes listed for some documents, several ranges of others left unlisted (as a filing
    // thread behind its reader leaves them): the join equals the reference's.
    using join_detail::ListedPrefixes;
    for (uint32_t seed = 1; seed <= 6; ++seed) {
        auto docs = random_docs(seed, 400 + seed * 150, 3 + seed * 4, 60 + seed * 40, seed % 3 == 0 ? 1000 : 6);
        PairTable table(docs);
        Collection c = make(docs);
        for (double tau : {0.3, 0.6, 0.8, 1.0})
            for (int threads : {1, 2}) {
                ListedPrefixes listed;
                join_detail::list_all_prefixes(c, tau, threads, nullptr, listed);
                listed.lists.clear();
                join_detail::PrefixLister lister(tau, *listed.frequent);
                for (uint32_t d = 0; d < c.size(); ++d) {
                    if ((d / (17 + seed)) % 3 == 1) listed.defer(d);
                    else lister.list(d, c.doc(d), listed.lists);
                }
                ASSERT_GT(listed.unlisted.size(), 1u);
                JoinOptions opt;
                opt.tau = tau;
                opt.threads = threads;
                JoinPairs got;
                ASSERT_TRUE(join_detail::group_self_join_listed(c, listed, opt, 1e18, got));
                EXPECT_TRUE(listed.unlisted.empty());
                ASSERT_EQ(triples(got), table.at(tau)) << "seed " << seed << " tau " << tau << " threads " << threads;
            }
    }
}

TEST(JoinGroups, PrefixListsMoveTheirBlocks) {
    using join_detail::PrefixChunk;
    using join_detail::PrefixLists;
    // Enough entries in one bucket for several slabs (64, 128, ... blocks of 42 chunks of 16
    // entries): one hash, so one bucket.
    const uint64_t h = 977;
    const size_t bucket = PrefixLists::bucket_of(h);
    PrefixLists a;
    auto tag = [](uint32_t i) { return join_detail::PrefixEntry::tag(i % 200, i % 3 == 0); };
    for (uint32_t i = 0; i < 200000; ++i) a.add(h, i, tag(i));
    const size_t bytes = a.memory_bytes();
    PrefixLists b(std::move(a));
    EXPECT_EQ(a.entries(), 0u);
    EXPECT_EQ(a.memory_bytes(), 0u);
    EXPECT_EQ(b.entries(), 200000u);
    EXPECT_EQ(b.memory_bytes(), bytes);
    PrefixLists c;
    c.add(1, 1, 1);
    c = std::move(b);  // c's own slab is freed, b's taken
    EXPECT_EQ(b.entries(), 0u);
    EXPECT_EQ(c.entries(), 200000u);
    c.seal();
    EXPECT_EQ(c.bucket_slots(bucket), 200000u);  // 12,500 whole chunks
    // Absorbed into an empty list, the entries go on growing from the other's current slab.
    // (Two new blocks: carved at the wrong place they would overwrite filled ones.)
    PrefixLists d;
    d.absorb(c);
    for (uint32_t i = 0; i < 1000; ++i) d.add(h, i, tag(i));
    EXPECT_EQ(d.entries(), 201000u);
    EXPECT_EQ(d.memory_bytes(), bytes);
    d.seal();
    uint64_t seen = 0, sum = 0;
    for (const PrefixLists::Block* blk : d.bucket(bucket))
        for (uint32_t k = 0; k < blk->count; ++k)
            for (uint32_t j = 0; j < PrefixChunk::kSlots; ++j)
                if (blk->e[k].doc[j] != PrefixChunk::kEmpty) {
                    ++seen;
                    sum += blk->e[k].doc[j];
                    const join_detail::PrefixEntry e{blk->e[k].word[j], blk->e[k].doc[j]};
                    EXPECT_EQ(e.key(), PrefixLists::key_of(h));
                    EXPECT_EQ(e.several(), e.doc % 3 == 0);
                    // The slack rebuilt above a threshold of 10, or the whole length once it saturated.
                    const uint64_t slack = e.doc % 200;
                    EXPECT_EQ(e.mass(1000, 10), slack < join_detail::PrefixEntry::kSlackUnknown ? 10 + slack : 1000);
                }
    EXPECT_EQ(seen, 201000u);
    EXPECT_EQ(sum, 200000ull * 199999 / 2 + 1000ull * 999 / 2);
}

// A prefix entry keeps its suffix mass as a 7-bit slack above the document's listing threshold
// need(x) (join_prefix.hpp): rebuilt as the matcher rebuilds it, it is the true suffix mass
// while the slack fits, and the whole length (an upper bound, which the matcher's bounds allow)
// once it saturates. Documents of 1-400 distinct signatures with frequencies 1-3, none frequent,
// so the global order is the stored hash order; both cases occur.
TEST(JoinGroups, PrefixEntriesKeepTheirSuffixMass) {
    using join_detail::PrefixChunk;
    using join_detail::PrefixEntry;
    using join_detail::PrefixLists;
    std::mt19937_64 rng(99);
    std::vector<Doc> docs;
    for (int d = 0; d < 200; ++d) {
        Doc doc;
        const size_t n = 1 + rng() % 400;
        for (size_t k = 0; k < n; ++k) doc.push_back({rng(), 1 + rng() % 3});
        docs.push_back(doc);
    }
    Collection c = make(docs);
    const join_detail::FrequentSignatures none(c, c.size(), UINT32_MAX);  // nothing is frequent
    uint64_t exact = 0, saturated = 0;
    for (double tau : {0.2, 0.44, 0.9}) {
        join_detail::PrefixLister lister(tau, none);
        PrefixLists lists;
        for (uint32_t d = 0; d < c.size(); ++d) lister.list(d, c.doc(d), lists);
        lists.seal();
        // The true suffix masses of every document's signatures, by (document, bucket, key).
        std::map<std::tuple<uint32_t, size_t, uint32_t>, uint64_t> suffix;
        for (uint32_t d = 0; d < c.size(); ++d) {
            const MultisetView v = c.doc(d);
            uint64_t suf = v.length;
            for (uint32_t i = 0; i < v.size; ++i) {
                suffix[{d, PrefixLists::bucket_of(v.hashes[i]), PrefixLists::key_of(v.hashes[i])}] = suf;
                suf -= v.freqs[i];
            }
        }
        uint64_t listed = 0;
        for (size_t b = 0; b < PrefixLists::kCoarse; ++b)
            for (const PrefixLists::Block* blk : lists.bucket(b))
                for (uint32_t k = 0; k < blk->count; ++k)
                    for (uint32_t j = 0; j < PrefixChunk::kSlots; ++j) {
                        const PrefixEntry e{blk->e[k].word[j], blk->e[k].doc[j]};
                        if (e.doc == PrefixChunk::kEmpty) continue;
                        ++listed;
                        const uint64_t x = c.length(e.doc);
                        const uint64_t need =
                            join_detail::required_overlap_exact(x + join_detail::min_partner_length(x, tau), tau);
                        const uint64_t truth = suffix.at({e.doc, b, e.key()});
                        ASSERT_GE(truth, need);
                        if (truth - need < PrefixEntry::kSlackUnknown) {
                            ASSERT_EQ(e.mass(x, need), truth);
                            ++exact;
                        } else {
                            ASSERT_EQ(e.mass(x, need), x);
                            ++saturated;
                        }
                    }
        EXPECT_EQ(listed, lists.entries());
    }
    EXPECT_GT(exact, 1000u);
    EXPECT_GT(saturated, 1000u);
}

// RankDivider's multiply and shift equal the division for every divisor the matcher can use
// (1 up to the largest rank) on ranks near each multiple of it, at both ends and at random.
TEST(JoinGroups, RankDividerDividesExactly) {
    using join_detail::RankDivider;
    const uint64_t top = uint64_t(1) << RankDivider::kRankBits;
    std::mt19937_64 rng(5);
    std::vector<uint64_t> divisors = {1,    2,    3,     5,     7,     63,       64,      65,
                                      1000, 1123, 15625, 65535, 65537, top / 64, top / 3, top - 1};
    for (int k = 0; k < 40; ++k) divisors.push_back(1 + rng() % (top - 1));
    for (uint64_t d : divisors) {
        const RankDivider div(d);
        auto check = [&](uint64_t r) {
            if (r >= top) return;
            ASSERT_EQ(div(r), r / d) << "r " << r << " d " << d;
        };
        for (uint64_t r = 0; r < 2000; ++r) check(r);
        for (uint64_t r = top - 2000; r < top; ++r) check(r);
        for (uint64_t q = d; q < top; q += std::max<uint64_t>(d, top / 4096)) {
            const uint64_t at = q - q % d;  // a multiple of d
            for (uint64_t r = at - std::min<uint64_t>(at, 2); r <= at + 2; ++r) check(r);
        }
        for (int k = 0; k < 20000; ++k) check(rng() % top);
    }
}

// merge_sorted_runs with 1 to 4 workers gives the sorted concatenation of its runs, also when
// keys repeat across runs and when a slice boundary falls inside a run of equal a.
TEST(Join, MergeSortedRunsInSlices) {
    std::mt19937_64 rng(21);
    for (int round = 0; round < 12; ++round) {
        const size_t nruns = 1 + rng() % 70;
        std::vector<JoinPairs> runs(nruns);
        std::vector<uint64_t> all;
        const size_t per = round < 6 ? 3000 : 20;  // above and below the size that is split
        for (auto& r : runs) {
            const size_t m = rng() % (2 * per);
            for (size_t k = 0; k < m; ++k) {
                const uint32_t a = static_cast<uint32_t>(rng() % (round % 2 ? 50 : 200000));
                const uint32_t b = a + 1 + static_cast<uint32_t>(rng() % 1000);
                r.push_back(JoinPair{a, b, 0.5});
            }
            join_detail::sort_pairs(r);
            for (const JoinPair& p : r) all.push_back(static_cast<uint64_t>(p.a) << 32 | p.b);
        }
        std::sort(all.begin(), all.end());
        for (int threads = 1; threads <= 4; ++threads) {
            std::vector<JoinPairs> copy = runs;
            JoinPairs merged = join_detail::merge_sorted_runs(copy, threads);
            std::vector<uint64_t> got;
            for (const JoinPair& p : merged) got.push_back(static_cast<uint64_t>(p.a) << 32 | p.b);
            EXPECT_EQ(got, all) << "round " << round << ", threads " << threads;
            for (const auto& r : copy) EXPECT_TRUE(r.empty());
        }
    }
}
