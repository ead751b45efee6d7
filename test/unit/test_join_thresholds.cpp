// Property test of the join over random thresholds: tiny, denormal, and one ulp either side of
// the similarities and length ratios the data holds. Every method, self and R-S, must equal the
// core's brute-force method, and every case must finish within a time bound (a matcher that
// loops is reported and the run aborted, since a stuck thread cannot be joined).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/join/join.hpp"
#include "core/signature/multiset.hpp"

using namespace spotsigs;

namespace {

using Triples = std::vector<std::tuple<uint32_t, uint32_t, double>>;

constexpr auto kCaseLimit = std::chrono::seconds(20);

// Random documents over a small vocabulary (so many pairs are similar) with mixed frequencies.
std::vector<Multiset> random_docs(std::mt19937_64& rng, size_t n) {
    std::vector<Multiset> docs;
    for (size_t i = 0; i < n; ++i) {
        std::vector<std::pair<uint64_t, uint64_t>> d;
        size_t k = rng() % 12;  // 0 gives an empty document
        for (size_t j = 0; j < k; ++j)
            d.push_back({(rng() % 20) * 0x9e3779b97f4a7c15ULL, 1 + rng() % (rng() % 2 ? 3 : 300)});
        docs.push_back(Multiset::from_pairs(d));
    }
    return docs;
}

Collection collect(const std::vector<Multiset>& docs, size_t begin, size_t end) {
    Collection c;
    for (size_t i = begin; i < end; ++i) c.add(static_cast<int64_t>(i), docs[i].view());
    return c;
}

Triples triples(const JoinPairs& pairs) {
    Triples out;
    for (const JoinPair& p : pairs) out.emplace_back(p.a, p.b, p.similarity);
    std::sort(out.begin(), out.end());
    return out;
}

// Runs f on its own thread; fails (and aborts: the thread cannot be stopped) past kCaseLimit.
template <class F>
Triples bounded(F f, const std::string& what) {
    std::packaged_task<Triples()> task(f);
    std::future<Triples> fut = task.get_future();
    std::thread t(std::move(task));
    if (fut.wait_for(kCaseLimit) != std::future_status::ready) {
        std::fprintf(stderr, "join did not finish within the time bound: %s\n", what.c_str());
        std::fflush(stderr);
        std::abort();
    }
    t.join();
    return fut.get();
}

// The thresholds probed for a data set: fixed extremes, random ones, and the neighbours of the
// ratios that decide pairs and partitions.
std::vector<double> thresholds(std::mt19937_64& rng, const std::vector<Multiset>& docs) {
    std::vector<double> taus = {std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::min(),
                                std::nextafter(std::numeric_limits<double>::min(), 0.0),
                                1e-300,
                                5e-20,
                                1e-20,
                                1e-30,
                                1e-10,
                                1.0,
                                std::nextafter(1.0, 0.0),
                                std::nextafter(0.5, 0.0),
                                0.5,
                                std::nextafter(0.5, 1.0)};
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int i = 0; i < 6; ++i) {
        double t = unit(rng);
        if (t > 0.0) taus.push_back(t);
        taus.push_back(std::ldexp(1.0 + unit(rng), -static_cast<int>(rng() % 1074)));  // any scale
    }
    for (int i = 0; i < 6; ++i) {
        const Multiset& a = docs[rng() % docs.size()];
        const Multiset& b = docs[rng() % docs.size()];
        double ratios[2] = {similarity(a.view(), b.view()), 0.0};
        uint64_t x = a.view().length, y = b.view().length;
        if (x && y) ratios[1] = static_cast<double>(std::min(x, y)) / static_cast<double>(std::max(x, y));
        for (double r : ratios) {
            if (!(r > 0.0)) continue;
            for (double t : {std::nextafter(r, 0.0), r, std::nextafter(r, 2.0)})
                if (t > 0.0 && t <= 1.0) taus.push_back(t);
        }
    }
    return taus;
}

const JoinMethod kMethods[] = {JoinMethod::NoPrune, JoinMethod::NoPart, JoinMethod::Partitioned};

}  // namespace

TEST(JoinThresholds, EveryMethodEqualsBruteForceAtAnyThreshold) {
    std::mt19937_64 rng(34);
    for (int round = 0; round < 6; ++round) {
        std::vector<Multiset> docs = random_docs(rng, 40 + rng() % 60);
        size_t half = docs.size() / 2;
        Collection all = collect(docs, 0, docs.size());
        Collection r = collect(docs, 0, half), s = collect(docs, half, docs.size());
        for (double tau : thresholds(rng, docs)) {
            char what[128];
            std::snprintf(what, sizeof what, "round %d tau %.17g", round, tau);
            JoinOptions ref;
            ref.tau = tau;
            ref.method = JoinMethod::BruteForce;
            Triples want_self = bounded([&] { return triples(self_join(all, ref)); }, what);
            Triples want_rs = bounded([&] { return triples(rs_join(r, s, ref)); }, what);
            for (JoinMethod m : kMethods)
                for (int threads : {1, 2}) {
                    JoinOptions opt = ref;
                    opt.method = m;
                    opt.threads = threads;
                    std::string tag = std::string(what) + " method " + std::to_string(static_cast<int>(m)) +
                                      " threads " + std::to_string(threads);
                    ASSERT_EQ(bounded([&] { return triples(self_join(all, opt)); }, tag), want_self) << tag;
                    ASSERT_EQ(bounded([&] { return triples(rs_join(r, s, opt)); }, tag), want_rs) << tag;
                }
        }
    }
}
