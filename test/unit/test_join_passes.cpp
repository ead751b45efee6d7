// Unit tests of the self-join in passes (join_passes.hpp) against the brute-force join.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/join/join_bounds.hpp"
#include "core/join/join_passes.hpp"

using namespace spotsigs;

namespace {

// A collection of n documents with ids 1..n: lengths spread over 1..max_distinct (many distinct
// lengths, so that passes have boundaries to fall on), near-duplicates of earlier documents for
// pairs at every threshold, frequencies up to 3 and an empty document now and then.
Collection pass_docs(uint32_t seed, size_t n, uint32_t max_distinct) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> docs;
    Collection c;
    for (size_t i = 0; i < n; ++i) {
        std::vector<std::pair<uint64_t, uint64_t>> d;
        if (rng() % 3 == 0 && !docs.empty()) {
            d = docs[rng() % docs.size()];
            const size_t edits = rng() % 4;
            for (size_t e = 0; e < edits; ++e) {
                if (!d.empty() && rng() % 2) d.erase(d.begin() + static_cast<long>(rng() % d.size()));
                else d.push_back({rng() % 400 + 1, 1 + rng() % 3});
            }
        } else if (rng() % 40 != 0) {
            const size_t k = 1 + rng() % max_distinct;
            for (size_t j = 0; j < k; ++j) d.push_back({rng() % 400 + 1, 1 + (rng() % 5 == 0 ? rng() % 3 : 0)});
        }
        docs.push_back(d);
        c.add(static_cast<int64_t>(i + 1), Multiset::from_pairs(d).view());
    }
    return c;
}

using Triples = std::vector<std::tuple<uint32_t, uint32_t, double>>;

Triples triples_of(const JoinPairs& pairs) {
    Triples t;
    for (const JoinPair& p : pairs) t.emplace_back(p.a, p.b, p.similarity);
    return t;
}

// Self-join of docs in passes planned for pass_bytes of documents each (0: a quarter of
// opt.memory_limit) and run by run_planned_passes as the PostgreSQL layer runs them (margin 0:
// without replanning after a pass): each pass's documents copied into a collection of their own
// and joined with opt and probe_below, each pass held to opt.memory_limit (copied documents plus
// the matcher's structures), keeping the pairs the pass reports. Returns the pairs as
// self_join() does (indexes into docs, sorted by (a, b)); passes, when given, receives how many
// passes ran.
JoinPairs self_join_in_passes(const Collection& docs, const JoinOptions& opt, uint64_t pass_bytes = 0,
                              size_t* passes = nullptr, double margin = 0) {
    const std::vector<LengthCount> hist = length_histogram(docs);
    const uint64_t limit = opt.memory_limit == 0 ? UINT64_MAX : opt.memory_limit;
    JoinPairs all;
    auto run = [&](const JoinPass& p) {
        // The pass's documents, in collection order (so a < b stays a < b once mapped back).
        Collection part;
        std::vector<uint32_t> orig;
        for (size_t d = 0; d < docs.size(); ++d)
            if (docs.length(d) != 0 && p.reads(docs.length(d))) {
                part.add(docs.id(d), docs.doc(d));
                orig.push_back(static_cast<uint32_t>(d));
            }
        const size_t held = part.memory_bytes();
        if (held >= limit) return PassResult{false, held + 1, 0};
        JoinOptions o = opt;
        o.probe_below = p.probe_hi;
        o.memory_limit = opt.memory_limit == 0 ? 0 : limit - held;
        o.sink = nullptr;
        size_t peak = 0;
        o.accounted_peak = &peak;
        JoinPairs pairs;
        try {
            pairs = self_join(part, o);
        } catch (const JoinMemoryError& e) {
            return PassResult{false, held + e.at_least(), 0};
        }
        for (const JoinPair& q : pairs) {
            const uint64_t x = part.length(q.a), y = part.length(q.b);
            if (p.reports(x, y)) all.push_back(JoinPair{orig[q.a], orig[q.b], q.similarity});
        }
        return PassResult{true, 0, held + peak};
    };
    auto too_large = [&](const JoinPass& p, uint64_t at_least) {
        throw JoinMemoryError("similarity join exceeds its memory limit of " + std::to_string(limit) + " bytes",
                              "one pass (lengths " + std::to_string(p.probe_lo) + " to " + std::to_string(p.read_hi) +
                                  ") needs more than " + std::to_string(at_least) + " bytes",
                              at_least);
    };
    uint64_t worst = 0;
    const size_t ran = run_planned_passes(hist, opt.tau, limit, pass_bytes != 0 ? pass_bytes : limit / 4, margin, run,
                                          too_large, worst);
    if (passes != nullptr) *passes = ran;
    std::sort(all.begin(), all.end(),
              [](const JoinPair& x, const JoinPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
    return all;
}

// The passes of plan that read documents of lengths m <= M and report their pairs.
size_t passes_reporting(const std::vector<JoinPass>& plan, uint64_t m, uint64_t M) {
    size_t n = 0;
    for (const JoinPass& p : plan) n += p.reads(m) && p.reads(M) && p.reports(m, M);
    return n;
}

// The brute-force self-join without a limit: the reference.
Triples brute(const Collection& c, double tau) {
    JoinOptions opt;
    opt.tau = tau;
    opt.method = JoinMethod::BruteForce;
    return triples_of(self_join(c, opt));
}

}  // namespace

TEST(JoinPasses, MaxPartnerLengthMatchesDefinition) {
    for (double tau : {1.0, 0.95, 0.9, 0.8, 0.7, 0.5, 0.44, 0.3, 0.2, 0.1, 0.01}) {
        for (uint64_t x = 1; x < 400; ++x) {
            uint64_t y = x;
            while (join_detail::ratio_reaches(x, y + 1, tau)) ++y;
            ASSERT_EQ(max_partner_length(x, tau), y) << "x=" << x << " tau=" << tau;
        }
    }
    EXPECT_EQ(max_partner_length(UINT32_MAX, 0.5), uint64_t(UINT32_MAX));
    EXPECT_EQ(max_partner_length(1000, 1e-9), uint64_t(UINT32_MAX));
}

TEST(JoinPasses, PlansCoverEveryLengthOnce) {
    Collection c = pass_docs(3, 3000, 60);
    const std::vector<LengthCount> hist = length_histogram(c);
    for (double tau : {0.95, 0.8, 0.5, 0.2}) {
        for (uint64_t budget : {uint64_t(1), uint64_t(20000), uint64_t(200000), UINT64_MAX}) {
            const std::vector<JoinPass> plan = plan_passes(hist, tau, budget);
            ASSERT_FALSE(plan.empty());
            EXPECT_EQ(plan.front().probe_lo, 1u);
            EXPECT_FALSE(plan.front().continues());
            EXPECT_EQ(plan.back().probe_hi, uint64_t(UINT32_MAX) + 1);
            for (size_t k = 0; k < plan.size(); ++k) {
                const JoinPass& p = plan[k];
                EXPECT_LT(p.probe_lo, p.probe_hi);
                uint64_t longest = 0;  // the longest length of the histogram the pass probes
                size_t lengths = 0, partners = 0;
                for (const LengthCount& h : hist) {
                    if (h.length >= p.probe_lo && h.length < p.probe_hi) {
                        longest = h.length;
                        ++lengths;
                    } else {
                        partners += p.reads(h.length);
                    }
                }
                const bool last_of_range = k + 1 == plan.size() || !plan[k + 1].continues();
                if (last_of_range) {
                    EXPECT_EQ(p.read_hi, max_partner_length(longest, tau)) << "tau=" << tau << " k=" << k;
                }
                if (k > 0 && p.continues()) {
                    EXPECT_EQ(p.probe_lo, plan[k - 1].probe_lo);
                    EXPECT_EQ(p.probe_hi, plan[k - 1].probe_hi);
                    EXPECT_EQ(p.part_lo, plan[k - 1].read_hi + 1);
                    EXPECT_GE(p.part_lo, p.probe_hi);
                } else if (k > 0) {
                    EXPECT_EQ(p.probe_lo, plan[k - 1].probe_hi) << "tau=" << tau;
                }
                // Over the budget only where nothing smaller is possible: one probe length and
                // no partner beyond it, or one partner length in a continuing pass.
                if (pass_read_bytes(p, hist) > budget) {
                    if (p.continues()) {
                        EXPECT_EQ(partners, 1u) << "tau=" << tau << " k=" << k;
                    } else {
                        EXPECT_EQ(lengths, 1u) << "tau=" << tau << " k=" << k;
                        EXPECT_EQ(partners, 0u) << "tau=" << tau << " k=" << k;
                    }
                }
            }
            // Every pair of lengths that can be similar is read and reported by exactly one pass.
            for (const LengthCount& a : hist)
                for (const LengthCount& b : hist)
                    if (a.length <= b.length && b.length <= max_partner_length(a.length, tau)) {
                        ASSERT_EQ(passes_reporting(plan, a.length, b.length), 1u)
                            << "tau=" << tau << " budget=" << budget << " lengths " << a.length << ", " << b.length;
                    }
            if (budget == UINT64_MAX) {
                EXPECT_EQ(plan.size(), 1u);
            }
        }
    }
}

// At low thresholds a length's partners can take more than a pass holds: the plan then covers a
// probe range of many lengths with passes over ranges of partners, instead of a pass (and a read
// of the relation) per length; the budget holds wherever one length allows.
TEST(JoinPasses, WidePartnerRangesArePlannedInParts) {
    std::vector<LengthCount> hist;
    for (uint64_t l = 100; l <= 1000; ++l) hist.push_back(LengthCount{l, 10, 10 * (33 + 8 * l)});
    uint64_t total = 0;
    for (const LengthCount& h : hist) total += h.bytes;
    const uint64_t budget = total / 8;  // below the partners of any length from 150 on at 0.5
    const std::vector<JoinPass> plan = plan_passes(hist, 0.5, budget);
    size_t ranges = 0, continuing = 0;
    for (const JoinPass& p : plan) {
        ranges += !p.continues();
        continuing += p.continues();
        EXPECT_LE(pass_read_bytes(p, hist), budget);
    }
    EXPECT_GT(continuing, 0u);
    EXPECT_LT(ranges, 40u) << "a probe range per length is " << hist.size();
    EXPECT_LT(plan.size(), 120u);
    for (const LengthCount& a : hist)
        for (const LengthCount& b : hist)
            if (a.length <= b.length && b.length <= max_partner_length(a.length, 0.5)) {
                ASSERT_EQ(passes_reporting(plan, a.length, b.length), 1u) << a.length << ", " << b.length;
            }
    // Planned again over one probe range (as after a pass that did not fit): within it only.
    const JoinPass& r = plan[plan.size() / 2];
    const std::vector<JoinPass> again = plan_passes(hist, 0.5, budget / 2, r.probe_lo, r.probe_hi);
    EXPECT_EQ(again.front().probe_lo, r.probe_lo);
    EXPECT_EQ(again.back().probe_hi, r.probe_hi);
}

// Where one length's partners just fit a pass, a plan of whole passes would probe a length or
// two in each, every pass reading nearly the same partners; passes that would probe under a
// quarter of their read take partner ranges instead. Lengths 100 to 10,000 whose bytes fall as
// 1 / length: every length with its partners (up to twice it at 0.5) takes about the same.
TEST(JoinPasses, NarrowProbeRangesTakePartnerRanges) {
    std::vector<LengthCount> hist;
    for (uint64_t l = 100; l <= 10000; l += 10) hist.push_back(LengthCount{l, 1, 1000000000 / l});
    uint64_t widest = 0;  // the most bytes one length and its partners take at 0.5
    for (const LengthCount& a : hist) {
        uint64_t w = 0;
        for (const LengthCount& b : hist) w += b.length >= a.length && b.length <= 2 * a.length ? b.bytes : 0;
        widest = std::max(widest, w);
    }
    const uint64_t budget = widest + widest / 20;  // every length's partners fit, barely
    const std::vector<JoinPass> plan = plan_passes(hist, 0.5, budget);
    EXPECT_LT(plan.size(), 30u) << "whole passes take 38 here";
    for (const JoinPass& p : plan) EXPECT_LE(pass_read_bytes(p, hist), budget);
    for (const LengthCount& a : hist)
        for (const LengthCount& b : hist)
            if (a.length <= b.length && b.length <= max_partner_length(a.length, 0.5)) {
                ASSERT_EQ(passes_reporting(plan, a.length, b.length), 1u) << a.length << ", " << b.length;
            }
}

TEST(JoinPasses, SplitPartnersHalvesAndCovers) {
    std::vector<LengthCount> hist;
    for (uint64_t l = 10; l <= 40; ++l) hist.push_back(LengthCount{l, 5, 5 * (33 + 8 * l)});
    const JoinPass p{10, 12, 30, 15};
    ASSERT_TRUE(p.continues());
    JoinPass a, b;
    ASSERT_TRUE(split_partners(p, hist, a, b));
    EXPECT_EQ(a.probe_lo, 10u);
    EXPECT_EQ(b.probe_hi, 12u);
    EXPECT_EQ(a.part_lo, 15u);
    EXPECT_EQ(b.part_lo, a.read_hi + 1);
    EXPECT_EQ(b.read_hi, 30u);
    EXPECT_LT(a.read_hi, b.read_hi);
    for (uint64_t m = 10; m < 12; ++m)
        for (uint64_t M = 15; M <= 30; ++M) EXPECT_EQ(passes_reporting({a, b}, m, M), 1u) << m << ", " << M;
    const JoinPass one{10, 12, 15, 15};
    EXPECT_FALSE(split_partners(one, hist, a, b));
    const JoinPass first{10, 12, 30};
    EXPECT_FALSE(split_partners(first, hist, a, b)) << "only a continuing pass splits its partners";
}

// probe_below keeps exactly the pairs whose shorter document is shorter, for every method.
TEST(JoinPasses, ProbeBelowKeepsThePairsOfShorterDocuments) {
    Collection c = pass_docs(7, 500, 30);
    for (double tau : {0.9, 0.6, 0.3}) {
        const Triples all = brute(c, tau);
        for (uint64_t below : {uint64_t(2), uint64_t(9), uint64_t(17), uint64_t(40)}) {
            Triples want;
            for (const auto& t : all)
                if (std::min(c.length(std::get<0>(t)), c.length(std::get<1>(t))) < below) want.push_back(t);
            for (JoinMethod m :
                 {JoinMethod::BruteForce, JoinMethod::NoPrune, JoinMethod::NoPart, JoinMethod::Partitioned}) {
                JoinOptions opt;
                opt.tau = tau;
                opt.method = m;
                opt.threads = 2;
                opt.probe_below = below;
                EXPECT_EQ(triples_of(self_join(c, opt)), want)
                    << "tau=" << tau << " below=" << below << " method=" << static_cast<int>(m);
            }
        }
    }
}

// From one pass to many: always the brute-force pairs, each once. Passes are planned for few
// documents each (many passes), or for all of them under a limit just too small for that (the
// pass is then split when the matcher runs out). Every pass needs some 3 MB at least: the prefix-group
// matcher's 256 buckets and 64 partitions take an 8 KB block each.
TEST(JoinPasses, ManyPassesGiveTheBruteForcePairs) {
    Collection c = pass_docs(11, 3000, 50);
    struct Case {
        size_t limit;
        uint64_t pass_bytes;
        size_t min_passes;
        size_t max_passes;
    };
    for (double tau : {0.9, 0.6, 0.3}) {
        const Triples want = brute(c, tau);
        // What one pass over everything needs: a limit just below it makes that pass fail and split.
        // (The pass copies the non-empty documents into a collection of its own, as here.)
        Collection copy;
        for (size_t d = 0; d < c.size(); ++d)
            if (c.length(d) != 0) copy.add(c.id(d), c.doc(d));
        size_t peak = 0;
        JoinOptions one;
        one.tau = tau;
        one.threads = 3;
        one.accounted_peak = &peak;
        self_join(copy, one);
        const size_t whole = copy.memory_bytes() + peak;
        const Case cases[] = {{0, 0, 1, 1},
                              {size_t(64) << 20, 20000, 10, 10000},
                              {size_t(64) << 20, 1, 20, 10000},
                              {whole - 1, UINT64_MAX, 2, 10000}};
        for (const Case& k : cases) {
            for (JoinMethod m : {JoinMethod::NoPart, JoinMethod::Partitioned}) {
                for (int threads : {1, 3}) {
                    if ((m == JoinMethod::NoPart) != (threads == 1)) continue;  // two of the four
                    JoinOptions opt;
                    opt.tau = tau;
                    opt.method = m;
                    opt.threads = threads;
                    opt.memory_limit = k.limit;
                    size_t passes = 0;
                    Triples got;
                    try {
                        got = triples_of(self_join_in_passes(c, opt, k.pass_bytes, &passes));
                    } catch (const Error& e) {
                        FAIL() << "tau=" << tau << " limit=" << k.limit << ": " << e.what() << " " << e.detail();
                    }
                    EXPECT_EQ(got, want) << "tau=" << tau << " limit=" << k.limit << " method=" << static_cast<int>(m);
                    // The limit below one pass is the prefix-group matcher's with 3 threads: its
                    // candidates (charged by the slabs their lists may take) then give way to the
                    // index matcher, which fits (the pass is not split) or not (it is split).
                    if (k.limit != whole - 1) {
                        EXPECT_GE(passes, k.min_passes) << "tau=" << tau << " limit=" << k.limit;
                    }
                    EXPECT_LE(passes, k.max_passes) << "tau=" << tau << " limit=" << k.limit;
                }
            }
        }
    }
}

// Pairs right at a pass boundary: lengths x and max_partner_length(x) pair, x and one more do not.
TEST(JoinPasses, PairsAtPassBoundaries) {
    const double tau = 0.8;
    Collection c;
    int64_t id = 1;
    for (uint64_t x = 4; x < 60; x += 3) {
        const uint64_t y = max_partner_length(x, tau);
        // A: x signatures; B: A plus y - x more, at similarity x / y >= tau; C: one more than B.
        std::vector<std::pair<uint64_t, uint64_t>> a, b, cc;
        for (uint64_t k = 0; k < x; ++k) a.push_back({1000 * x + k, 1});
        b = a;
        for (uint64_t k = x; k < y; ++k) b.push_back({1000 * x + k, 1});
        cc = b;
        cc.push_back({1000 * x + y, 1});
        for (auto* d : {&a, &b, &cc}) c.add(id++, Multiset::from_pairs(*d).view());
    }
    const Triples want = brute(c, tau);
    ASSERT_FALSE(want.empty());
    // Every distinct length its own pass, a few lengths a pass, and one pass.
    for (uint64_t pass_bytes : {uint64_t(1), uint64_t(2000), uint64_t(10000), UINT64_MAX}) {
        JoinOptions opt;
        opt.tau = tau;
        opt.memory_limit = size_t(64) << 20;
        size_t passes = 0;
        EXPECT_EQ(triples_of(self_join_in_passes(c, opt, pass_bytes, &passes)), want) << "pass_bytes=" << pass_bytes;
        if (pass_bytes == 1) {
            EXPECT_GE(passes, length_histogram(c).size());
        }
    }
}

// When even one length and its partners do not fit, the error says how much would be needed.
TEST(JoinPasses, SmallestPassThatDoesNotFitFails) {
    Collection c = pass_docs(13, 2000, 40);
    JoinOptions opt;
    opt.tau = 0.5;
    opt.memory_limit = 50000;
    try {
        self_join_in_passes(c, opt);
        FAIL() << "a 50,000-byte limit was enough";
    } catch (const JoinMemoryError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory);
        EXPECT_GT(e.at_least(), opt.memory_limit);
        EXPECT_NE(e.detail().find("one pass (lengths "), std::string::npos) << e.detail();
    }
}

// The histogram of two collections together is the histogram of their union.
TEST(JoinPasses, MergedHistogramsCountBothSides) {
    Collection r = pass_docs(21, 700, 50), s = pass_docs(22, 500, 80), both;
    for (const Collection* c : {&r, &s})
        for (size_t d = 0; d < c->size(); ++d) both.add(c->id(d), c->doc(d));
    const auto key = [](const std::vector<LengthCount>& h) {
        std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> k;
        for (const LengthCount& c : h) k.emplace_back(c.length, c.docs, c.bytes);
        return k;
    };
    EXPECT_EQ(key(merge_histograms(length_histogram(r), length_histogram(s))), key(length_histogram(both)));
    EXPECT_EQ(key(merge_histograms(length_histogram(r), {})), key(length_histogram(r)));
}

// An R-S join in passes as spotsigs_join_rs runs it: passes planned over both sides' lengths,
// each reading the rows of its lengths from both sides, joined without probe_below, keeping the
// pairs whose shorter row lies in the pass's probe range. Together: the brute-force pairs, once.
TEST(JoinPasses, RsPassesGiveTheBruteForcePairs) {
    Collection r = pass_docs(31, 900, 70), s = pass_docs(32, 700, 45);
    for (double tau : {0.9, 0.6, 0.3}) {
        JoinOptions brute_opt;
        brute_opt.tau = tau;
        brute_opt.method = JoinMethod::BruteForce;
        const Triples want = triples_of(rs_join(r, s, brute_opt));
        const std::vector<LengthCount> hist = merge_histograms(length_histogram(r), length_histogram(s));
        for (uint64_t pass_bytes : {uint64_t(1), uint64_t(20000), uint64_t(200000)}) {
            const std::vector<JoinPass> plan = plan_passes(hist, tau, pass_bytes);
            Triples got;
            for (const JoinPass& p : plan) {
                Collection part[2];
                std::vector<uint32_t> orig[2];
                for (int k = 0; k < 2; ++k) {
                    const Collection& side = k == 0 ? r : s;
                    for (size_t d = 0; d < side.size(); ++d)
                        if (side.length(d) != 0 && p.reads(side.length(d))) {
                            part[k].add(side.id(d), side.doc(d));
                            orig[k].push_back(static_cast<uint32_t>(d));
                        }
                }
                JoinOptions opt;
                opt.tau = tau;
                for (const JoinPair& q : rs_join(part[0], part[1], opt)) {
                    const uint64_t x = part[0].length(q.a), y = part[1].length(q.b);
                    if (p.reports(x, y)) got.emplace_back(orig[0][q.a], orig[1][q.b], q.similarity);
                }
            }
            std::sort(got.begin(), got.end());
            EXPECT_EQ(got, want) << "tau=" << tau << " pass_bytes=" << pass_bytes << " passes=" << plan.size();
            if (pass_bytes == 1) {
                EXPECT_GT(plan.size(), hist.size()) << "partner ranges of one length each";
            }
        }
    }
}

// A pass reads the partners of the lengths it probes, not of the lengths up to the next one in
// the histogram: short documents and far longer ones (no length between) are separate passes that
// each read only their own rows, so a limit that holds either alone is enough.
TEST(JoinPasses, PassReadsOnlyPartnersOfLengthsPresent) {
    const std::vector<LengthCount> hist = {{1, 100000, 4000000}, {500, 30000, 120000000}};
    for (double tau : {0.9, 0.5}) {
        const std::vector<JoinPass> plan = plan_passes(hist, tau, 50000000);
        ASSERT_EQ(plan.size(), 2u);
        EXPECT_EQ(plan[0].read_hi, max_partner_length(1, tau));
        EXPECT_EQ(pass_read_bytes(plan[0], hist), 4000000u);
        EXPECT_EQ(pass_read_bytes(plan[1], hist), 120000000u);
    }
}

// pass_bytes_estimate bounds what a join of the documents is charged: under a memory limit of
// the estimate less the documents' own bytes, every method joins them on 1 and 3 threads.
TEST(JoinPasses, PassEstimateHoldsTheMatcher) {
    for (uint32_t seed = 1; seed <= 4; ++seed)
        for (size_t n : {size_t(50), size_t(1500)}) {
            const Collection c = pass_docs(seed, n, seed * 20);
            uint64_t docs = 0, bytes = 0, longest = 0;
            for (const LengthCount& l : length_histogram(c)) {
                docs += l.docs;
                bytes += l.bytes;
                longest = l.length;
            }
            for (int threads : {1, 3}) {
                const uint64_t est = pass_bytes_estimate(docs, bytes, longest, threads);
                ASSERT_GT(est, c.memory_bytes());
                for (JoinMethod m :
                     {JoinMethod::Partitioned, JoinMethod::NoPart, JoinMethod::NoPrune, JoinMethod::BruteForce})
                    for (double tau : {0.3, 0.8}) {
                        if (m == JoinMethod::BruteForce && n > 50) continue;  // the same structures, slowly
                        JoinOptions opt;
                        opt.tau = tau;
                        opt.threads = threads;
                        opt.method = m;
                        opt.memory_limit = est - c.memory_bytes();
                        EXPECT_NO_THROW(self_join(c, opt)) << "seed " << seed << " n " << n << " method " << int(m);
                    }
            }
            // The smallest passes' estimate covers a pass of all the documents of any one length.
            for (const LengthCount& l : length_histogram(c))
                EXPECT_GE(smallest_passes_estimate(length_histogram(c), 0.8, 1),
                          pass_bytes_estimate(l.docs, l.bytes, l.length, 1));
        }
}

// Near its growth limit a collection grows by what fits, not by doubling: its bytes stay within
// the limit and one document's worth.
TEST(JoinPasses, CollectionGrowthStaysNearItsLimit) {
    const Collection src = pass_docs(7, 20000, 60);
    const size_t limit = src.memory_bytes() / 3;
    Collection c;
    c.limit_growth(limit);
    for (size_t i = 0; i < src.size() && c.memory_bytes() <= limit; ++i) {
        c.add(src.id(i), src.doc(i));
        EXPECT_LE(c.memory_bytes(), limit + 4096 * 9 + 1024 * 33) << i;
    }
}
