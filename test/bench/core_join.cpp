// Benchmark of the similarity join on a synthetic collection resembling spot signatures of news.
//
//   make bench-core && build/core_join [N=200000] [seed=1]
//
// Documents: lengths log-normal around a median of 100 (clamped to [5, 5000]); signature
// occurrences drawn from a Zipf(1.0) law over 1,000,000 signatures and summed into multisets;
// 10% of the documents are near-duplicate variants of another one with a few occurrences moved.
// Prints, in one run, the time of each configuration and the ratios asked for.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/join/join.hpp"
#include "core/join/join_internal.hpp"

using namespace spotsigs;

namespace {

using Doc = std::vector<std::pair<uint64_t, uint64_t>>;

// A well-mixed 64-bit hash for signature number k (so hash order is unrelated to frequency).
uint64_t sig_hash(uint64_t k) {
    k += 0x9e3779b97f4a7c15ULL;
    k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ULL;
    k = (k ^ (k >> 27)) * 0x94d049bb133111ebULL;
    return k ^ (k >> 31);
}

// Draws signature numbers by Zipf's law through the cumulative distribution.
class Zipf {
public:
    // A Zipf law with exponent s over n signatures.
    Zipf(size_t n, double s) : cdf_(n), guide_(kGuide + 1) {
        double sum = 0;
        for (size_t i = 0; i < n; ++i) cdf_[i] = (sum += 1.0 / std::pow(static_cast<double>(i + 1), s));
        for (double& c : cdf_) c /= sum;
        // guide_[k] = first index whose cumulative probability reaches k / kGuide.
        for (size_t k = 0; k <= kGuide; ++k)
            guide_[k] = static_cast<size_t>(
                std::lower_bound(cdf_.begin(), cdf_.end(), static_cast<double>(k) / kGuide) - cdf_.begin());
    }
    // One draw: a binary search within the guide's bucket.
    template <class Rng>
    uint64_t operator()(Rng& rng) {
        double u = std::uniform_real_distribution<double>(0, 1)(rng);
        size_t k = std::min(kGuide - 1, static_cast<size_t>(u * kGuide));
        auto first = cdf_.begin() + static_cast<long>(guide_[k]);
        auto last = cdf_.begin() + static_cast<long>(std::min(cdf_.size(), guide_[k + 1] + 1));
        return static_cast<uint64_t>(std::lower_bound(first, last, u) - cdf_.begin());
    }

private:
    static constexpr size_t kGuide = size_t(1) << 16;
    std::vector<double> cdf_;
    std::vector<size_t> guide_;
};

// The synthetic collection of n documents.
Collection make_collection(size_t n, uint64_t seed, size_t* total_len) {
    std::mt19937_64 rng(seed);
    Zipf zipf(1000000, 1.0);
    std::lognormal_distribution<double> len_dist(std::log(100.0), 0.75);
    std::vector<std::vector<uint64_t>> occ;  // occurrence lists, kept for making variants
    occ.reserve(n);
    Collection c;
    *total_len = 0;
    for (size_t i = 0; i < n; ++i) {
        std::vector<uint64_t> o;
        if (i > 0 && rng() % 10 == 0) {
            // A near duplicate: copy an earlier document and replace 1-5 occurrences.
            o = occ[rng() % occ.size()];
            size_t edits = 1 + rng() % 5;
            for (size_t e = 0; e < edits && !o.empty(); ++e) o[rng() % o.size()] = zipf(rng);
        } else {
            double l = std::clamp(len_dist(rng), 5.0, 5000.0);
            o.resize(static_cast<size_t>(l));
            for (uint64_t& x : o) x = zipf(rng);
        }
        Doc d;
        for (uint64_t x : o) d.push_back({sig_hash(x), 1});
        Multiset m = Multiset::from_pairs(d);
        *total_len += m.length;
        c.add(static_cast<int64_t>(i), m.view());
        occ.push_back(std::move(o));
    }
    return c;
}

// The first n documents of c.
Collection subsample(const Collection& c, size_t n) {
    Collection s;
    for (size_t i = 0; i < n && i < c.size(); ++i) s.add(c.id(i), c.doc(i));
    return s;
}

// Seconds taken by f().
template <class F>
double seconds(F&& f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs one configuration, prints its line and returns its time.
double run(const char* label, const Collection& c, double tau, int threads, JoinMethod m,
           const join_detail::ProbeConfig* custom = nullptr) {
    JoinOptions opt;
    opt.tau = tau;
    opt.threads = threads;
    opt.method = m;
    size_t pairs = 0;
    double t = seconds([&] {
        auto out = custom ? join_detail::index_self_join(c, opt, *custom) : self_join(c, opt);
        pairs = out.size();
    });
    std::printf("%-34s n=%-7zu tau=%-5.2f threads=%d  %8.3f s  pairs=%zu\n", label, c.size(), tau, threads, t, pairs);
    std::fflush(stdout);
    return t;
}

}  // namespace

// Builds the collection and prints the timings.
int main(int argc, char** argv) {
    size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
    uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
    size_t total = 0;
    Collection c;
    double build = seconds([&] { c = make_collection(n, seed, &total); });
    std::vector<uint64_t> lens;
    for (size_t i = 0; i < c.size(); ++i) lens.push_back(c.doc(i).length);
    std::sort(lens.begin(), lens.end());
    std::printf("collection: %zu docs, total length %zu, median length %llu, max %llu, built in %.2f s\n", c.size(),
                total, static_cast<unsigned long long>(lens[lens.size() / 2]),
                static_cast<unsigned long long>(lens.back()), build);

    std::map<double, double> part1, part2;
    for (double tau : {1.0, 0.9, 0.8, 0.6, 0.44}) {
        part1[tau] = run("Partitioned", c, tau, 1, JoinMethod::Partitioned);
        part2[tau] = run("Partitioned", c, tau, 2, JoinMethod::Partitioned);
    }
    double nopart = run("NoPart", c, 0.9, 1, JoinMethod::NoPart);

    // Variants of Partitioned with one filter switched off, to show what each one buys.
    join_detail::ProbeConfig v = join_detail::config_for(JoinMethod::Partitioned);
    v.partitions = false;
    run("Partitioned without partitions", c, 0.9, 1, JoinMethod::Partitioned, &v);
    v = join_detail::config_for(JoinMethod::Partitioned);
    v.positional = false;
    run("Partitioned without positional", c, 0.9, 1, JoinMethod::Partitioned, &v);
    v = join_detail::config_for(JoinMethod::Partitioned);
    v.prefix_index = false;
    run("Partitioned with the full index", c, 0.9, 1, JoinMethod::Partitioned, &v);

    Collection small = subsample(c, std::min<size_t>(n, 20000));
    double noprune = run("NoPrune (subsample)", small, 0.9, 1, JoinMethod::NoPrune);
    double part_small = run("Partitioned (subsample)", small, 0.9, 1, JoinMethod::Partitioned);

    std::printf("\nNoPart / Partitioned at 0.9 (1 thread): %.1fx\n", nopart / part1[0.9]);
    std::printf("NoPrune / Partitioned at 0.9 on the subsample: %.1fx\n", noprune / part_small);
    for (auto& [tau, t] : part1) std::printf("2-thread speed-up of Partitioned at %.2f: %.2fx\n", tau, t / part2[tau]);
    return 0;
}
