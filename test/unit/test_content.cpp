// Unit tests of the content measure: the template signatures against a reference written here
// from the definition in content.hpp, and the content join against brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/signature/hash.hpp"
#include "core/template/content.hpp"
#include "core/template/content_passes.hpp"
#include "reference_jaccard.hpp"

using namespace spotsigs;

namespace {

using Doc = std::map<uint64_t, uint64_t>;  // hash -> frequency

// Multiset Jaccard, by the reference's overlap and union.
double ref_similarity(const Doc& x, const Doc& y) {
    auto [o, u] = spotsigs_test::overlap_union(x, y);
    return u == 0 ? 0.0 : double(o) / double(u);
}

Doc minus(const Doc& d, const std::set<uint64_t>& drop) {
    Doc out;
    for (auto& [h, f] : d)
        if (!drop.count(h)) out[h] = f;
    return out;
}

// The definition, literally: per signature held by >= 2 pages, its first kSample pages by
// fmix64(id); the mean similarity over their pairs in the current measure; kRounds rounds.
std::set<uint64_t> ref_templates(const std::vector<Doc>& docs, const std::vector<int64_t>& ids) {
    std::map<uint64_t, std::vector<std::pair<uint64_t, size_t>>> pages;  // hash -> (key, doc)
    for (size_t i = 0; i < docs.size(); ++i)
        for (auto& hf : docs[i]) pages[hf.first].emplace_back(fmix64(uint64_t(ids[i])), i);
    std::set<uint64_t> drop;
    for (int round = 0; round < kRounds; ++round) {
        std::vector<Doc> cur;
        for (const Doc& d : docs) cur.push_back(minus(d, drop));
        std::set<uint64_t> next;
        for (auto& [h, list] : pages) {
            if (list.size() < 2) continue;
            auto sorted = list;
            std::sort(sorted.begin(), sorted.end());
            size_t m = std::min<size_t>(sorted.size(), kSample);
            double sum = 0;
            for (size_t a = 0; a < m; ++a)
                for (size_t b = a + 1; b < m; ++b) sum += ref_similarity(cur[sorted[a].second], cur[sorted[b].second]);
            if (sum < kCoherence * double(m * (m - 1) / 2)) next.insert(h);
        }
        drop = next;
    }
    return drop;
}

Collection make(const std::vector<Doc>& docs, const std::vector<int64_t>& ids) {
    Collection c;
    for (size_t i = 0; i < docs.size(); ++i) {
        std::vector<std::pair<uint64_t, uint64_t>> p(docs[i].begin(), docs[i].end());
        Multiset m = Multiset::from_pairs(p);
        c.add(ids[i], m.view());
    }
    return c;
}

// A collection like the web: sites whose pages share template signatures, stories copied onto
// pages of several sites, each page with some signatures of its own.
struct Web {
    std::vector<Doc> docs;
    std::vector<int64_t> ids;
};

// With big set, stories run from 10 to 640 signatures and every seventh page has 1,200 of its
// own, so pages span every size of sketch the statistics keep.
Web make_web(unsigned seed, int sites, int stories, int pages, bool big = false) {
    std::mt19937_64 rng(seed);
    Web w;
    auto sig = [&](uint64_t kind, uint64_t a, uint64_t b) { return fmix64(kind << 56 ^ a << 28 ^ b); };
    for (int p = 0; p < pages; ++p) {
        Doc d;
        int site = int(rng() % sites), story = int(rng() % stories);
        for (int k = 0; k < 12; ++k) d[sig(1, site, k)] += 1 + rng() % 2;  // template
        for (int k = 0; k < 3; ++k) d[sig(2, rng() % 4, k)] += 1;          // boilerplate everywhere
        const int story_size = big ? 10 * (1 + story % 4) * (1 + story % 4) * (1 + story % 4) : 10;
        for (int k = 0; k < story_size; ++k)
            if (rng() % 8) d[sig(3, story, k)] += 1 + rng() % 3;  // the story, edited
        const int own = big && p % 7 == 0 ? 1200 : 1 + int(rng() % 4);
        for (int k = 0; k < own; ++k) d[sig(4, p, k)] += 1;  // the page's own
        w.docs.push_back(d);
        w.ids.push_back(int64_t(rng() % 100000) * (rng() % 2 ? 1 : -1) * 1000 + p);  // unique
    }
    return w;
}

std::vector<uint64_t> as_vector(const std::set<uint64_t>& s) {
    return {s.begin(), s.end()};
}

}  // namespace

TEST(Content, TemplatesMatchTheDefinition) {
    for (unsigned seed = 1; seed <= 12; ++seed) {
        Web w = make_web(seed, 2 + seed % 4, 3 + seed % 7, 30 + 5 * int(seed));
        Collection c = make(w.docs, w.ids);
        std::vector<uint64_t> want = as_vector(ref_templates(w.docs, w.ids));
        EXPECT_FALSE(want.empty()) << "seed " << seed;
        for (int threads : {1, 2, 3}) EXPECT_EQ(template_signatures(c, threads), want) << "seed " << seed;
    }
}

TEST(Content, TemplatesMatchTheDefinitionOnLargePages) {
    for (unsigned seed = 1; seed <= 1; ++seed) {
        Web w = make_web(seed, 2 + seed % 4, 4 + seed % 5, 40, true);
        Collection c = make(w.docs, w.ids);
        std::vector<uint64_t> want = as_vector(ref_templates(w.docs, w.ids));
        EXPECT_FALSE(want.empty()) << "seed " << seed;
        for (int threads : {1, 2}) EXPECT_EQ(template_signatures(c, threads), want) << "seed " << seed;
    }
}

// Three sites, two stories each copied onto one page of every site, plus one page per site with
// a story of its own; every page holds `site_sigs` signatures of its site and `story_sigs` of
// its story. Returns the template signatures and the pairs of the content join at its default.
std::pair<std::vector<uint64_t>, std::set<std::pair<int64_t, int64_t>>> three_sites(uint64_t site_sigs,
                                                                                    uint64_t story_sigs) {
    std::vector<Doc> docs;
    std::vector<int64_t> ids;
    for (int site = 0; site < 3; ++site)
        for (int story = 0; story < 3; ++story) {
            Doc d;
            for (uint64_t k = 0; k < site_sigs; ++k) d[100 + 20 * site + k] = 1;
            uint64_t own = story < 2 ? story : 10 + site;  // story 2 is a different one per site
            for (uint64_t k = 0; k < story_sigs; ++k) d[1000 + 100 * own + k] = 1;
            docs.push_back(d);
            ids.push_back(10 * site + story);
        }
    std::vector<uint64_t> drop = template_signatures(make(docs, ids));
    Collection content = without_signatures(make(docs, ids), drop);
    JoinOptions opt;
    opt.tau = kContentThreshold;
    std::set<std::pair<int64_t, int64_t>> pairs;
    for (const JoinPair& p : self_join(content, opt)) pairs.emplace(content.id(p.a), content.id(p.b));
    return {drop, pairs};
}

TEST(Content, SiteTemplatesGoStoriesStay) {
    // 4 site signatures, 10 of the story: pages of one site share 4 of 24 (0.17), copies of a
    // story 10 of 18 (0.56); the site signatures go, and the copies become identical.
    auto [drop, pairs] = three_sites(4, 10);
    std::vector<uint64_t> want;
    for (uint64_t site = 0; site < 3; ++site)
        for (uint64_t k = 0; k < 4; ++k) want.push_back(100 + 20 * site + k);
    EXPECT_EQ(drop, want);
    std::set<std::pair<int64_t, int64_t>> copies = {{0, 10}, {0, 20}, {10, 20}, {1, 11}, {1, 21}, {11, 21}};
    EXPECT_EQ(pairs, copies);
}

TEST(Content, TemplateLargerThanTheStoryWins) {
    // The documented failure mode: 8 site signatures, 6 of the story. Pages of one site share
    // 8 of 20 (0.4), copies of a story 6 of 22 (0.27): the measure takes the sites for the
    // content and the stories for a template, and pairs the pages of each site.
    auto [drop, pairs] = three_sites(8, 6);
    std::vector<uint64_t> want;
    for (uint64_t story : {0, 1})
        for (uint64_t k = 0; k < 6; ++k) want.push_back(1000 + 100 * story + k);
    EXPECT_EQ(drop, want);
    std::set<std::pair<int64_t, int64_t>> sites = {{0, 1},   {0, 2},   {1, 2},   {10, 11}, {10, 12},
                                                   {11, 12}, {20, 21}, {20, 22}, {21, 22}};
    EXPECT_EQ(pairs, sites);
}

TEST(Content, JudgedOnTheFirstSamplePagesByKey) {
    // Signature X on kSample + 5 pages. By the fixed order (fmix64 of the id), the first
    // kSample - 1 pages hold X, a shared block C of 4 signatures and 4 of their own (pairwise
    // 5/13 = 0.385), the kSample-th holds X and C only (5/9 = 0.556 to each of them), the other 5
    // hold X and 10 of their own. The mean over the first kSample pages is
    // (105 * 5/13 + 15 * 5/9) / 120 = 0.406: X (and C) are content; over kSample - 1 pages
    // (0.385) or over all pages they would be templates.
    static_assert(kSample == 16, "the similarities below are worked out for 16");
    const uint64_t X = 1;
    std::vector<int64_t> ids;
    for (int64_t id = 1; id <= int64_t(kSample) + 5; ++id) ids.push_back(id);
    std::vector<int64_t> by_key = ids;
    std::sort(by_key.begin(), by_key.end(),
              [](int64_t a, int64_t b) { return fmix64(uint64_t(a)) < fmix64(uint64_t(b)); });
    std::vector<Doc> docs(ids.size());
    for (size_t r = 0; r < by_key.size(); ++r) {
        Doc& d = docs[size_t(by_key[r] - 1)];
        d[X] = 1;
        uint64_t own = 1000 + 100 * r;
        if (r + 1 < kSample) {
            for (uint64_t k = 0; k < 4; ++k) d[10 + k] = 1, d[own + k] = 1;
        } else if (r + 1 == kSample) {
            for (uint64_t k = 0; k < 4; ++k) d[10 + k] = 1;
        } else {
            for (uint64_t k = 0; k < 10; ++k) d[own + k] = 1;
        }
    }
    std::vector<uint64_t> drop = template_signatures(make(docs, ids));
    EXPECT_FALSE(std::binary_search(drop.begin(), drop.end(), X));
    EXPECT_EQ(drop, as_vector(ref_templates(docs, ids)));
}

namespace {

// The inverse of fmix64 (each step of it is invertible: x ^= x >> 33 is its own inverse, and the
// multipliers are odd), so that tests can choose the mixed values of their hashes.
uint64_t inverse_of_odd(uint64_t a) {
    uint64_t x = a;                              // correct to 3 bits: a * a = 1 mod 8 for odd a
    for (int i = 0; i < 5; ++i) x *= 2 - a * x;  // Newton's step doubles the correct bits
    return x;
}

uint64_t unmix64(uint64_t k) {
    k ^= k >> 33;
    k *= inverse_of_odd(0xc4ceb93fe53d87cdULL);
    k ^= k >> 33;
    k *= inverse_of_odd(0xff51afd7ed558ccdULL);
    k ^= k >> 33;
    return k;
}

}  // namespace

TEST(Content, UnmixInvertsFmix64) {
    for (uint64_t k : {uint64_t(0), uint64_t(1), uint64_t(12345), ~uint64_t(0), uint64_t(0x8000000000000001ULL)})
        EXPECT_EQ(fmix64(unmix64(k)), k);
}

// The statistics find the signatures held by two or more pages through a table of slots of the
// hashes' fmix64: signatures that share a slot (here: every page's own signature, and one
// signature shared by the copies of each story, all with the same low 40 bits of their fmix64)
// change nothing, with pages whose rows become empty and pages without any signature beside.
TEST(Content, SharedSlotsAndEmptyPagesChangeNothing) {
    for (unsigned seed = 1; seed <= 4; ++seed) {
        Web w = make_web(seed, 3, 4, 50);
        for (size_t p = 0; p < w.docs.size(); ++p) {
            w.docs[p][unmix64(uint64_t(p + 1) << 40 | 77)] = 1;         // held by this page only
            w.docs[p][unmix64(uint64_t(1000 + p % 5) << 40 | 77)] = 2;  // held by every fifth page
        }
        // Pages with no signature, and pages holding only signatures of one site's template (their
        // rows become empty in the second round).
        for (int k = 0; k < 4; ++k) {
            w.docs.push_back(Doc());
            w.ids.push_back(7000000 + k);
            Doc t;
            for (auto& [h, f] : w.docs[0])
                if (t.size() < 6) t[h] = f;
            w.docs.push_back(t);
            w.ids.push_back(8000000 + k);
        }
        Collection c = make(w.docs, w.ids);
        std::vector<uint64_t> want = as_vector(ref_templates(w.docs, w.ids));
        for (int threads : {1, 2}) EXPECT_EQ(template_signatures(c, threads), want) << "seed " << seed;
    }
}

// The statistics deal the entries into buckets by the top bits of fmix64 of their hashes and
// group each bucket through a table, or by a sort when the bucket is too large for one: hashes
// crowded into one bucket (here over 300,000 entries, every hash's fmix64 below 2^56) give the
// template of the same collection with spread hashes, hash for hash (the definition does not
// depend on the hashes' values).
TEST(Content, CrowdedBucketChangesNothing) {
    Web w = make_web(11, 3, 8, 4000);
    for (size_t p = 0; p < w.docs.size(); ++p) {
        for (uint64_t k = 0; k < 70; ++k) w.docs[p][fmix64(uint64_t(5) << 56 ^ p << 8 ^ k)] = 1;  // own
        w.docs[p][fmix64(uint64_t(6) << 56 ^ p % 10)] = 1 + p % 3;                                // on every tenth page
    }
    std::vector<Doc> crowded;
    std::set<uint64_t> seen;
    for (const Doc& d : w.docs) {
        Doc x;
        for (auto& [h, f] : d) {
            x[unmix64(h >> 8)] = f;
            seen.insert(h);
        }
        crowded.push_back(x);
    }
    std::set<uint64_t> distinct;
    for (const Doc& d : crowded)
        for (auto& hf : d) distinct.insert(hf.first);
    ASSERT_EQ(distinct.size(), seen.size()) << "the crowded hashes must stay distinct";
    size_t entries = 0;
    for (const Doc& d : crowded) entries += d.size();
    ASSERT_GT(entries, size_t(300000));
    const std::vector<uint64_t> spread = template_signatures(make(w.docs, w.ids), 2);
    EXPECT_FALSE(spread.empty());
    std::vector<uint64_t> want;
    for (uint64_t h : spread) want.push_back(unmix64(h >> 8));
    std::sort(want.begin(), want.end());
    for (int threads : {1, 2}) EXPECT_EQ(template_signatures(make(crowded, w.ids), threads), want);
}

// With a memory limit, the statistics either give the same template or fail with OutOfMemory
// before they hold most of their structures; the bound of template_memory_bytes always fits.
TEST(Content, MemoryLimit) {
    Web w = make_web(5, 3, 5, 80);
    Collection c = make(w.docs, w.ids);
    std::vector<uint64_t> want = template_signatures(c, 2);
    EXPECT_EQ(template_signatures(c, 2, nullptr, c.memory_bytes() + template_memory_bytes(c, 2)), want);
    try {
        template_signatures(c, 2, nullptr, c.memory_bytes() + 1000);
        ADD_FAILURE() << "finished beyond its limit";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory);
        EXPECT_NE(std::string(e.what()).find("the content statistics need "), std::string::npos) << e.what();
    }
}

// 8 copies of each of 2,000 pages of 150 random signatures (frequencies 1 to max_freq), with
// distinct ids: every entry shared, a signature for every 8 entries.
Web copies_of_pages(unsigned seed, unsigned max_freq) {
    std::mt19937_64 rng(seed);
    Web w;
    for (int p = 0; p < 2000; ++p) {
        Doc d;
        for (int k = 0; k < 150; ++k) d[rng()] += 1 + rng() % max_freq;
        for (int copy = 0; copy < 8; ++copy) {
            w.docs.push_back(d);
            w.ids.push_back(int64_t(copy) * 100000 + p);
        }
    }
    return w;
}

// The limit counts the signatures held by two or more pages, not the bound of half their entries:
// a collection of 8 copies of each page (every entry shared, a signature for every 8 entries)
// runs in one go within about four fifths of template_memory_bytes, and still refuses a limit
// far below what it holds.
TEST(Content, MemoryLimitCountsSignatures) {
    const Web copies = copies_of_pages(11, 1);
    Collection c = make(copies.docs, copies.ids);
    const std::vector<uint64_t> want = template_signatures(c, 1);
    const size_t bound = template_memory_bytes(c, 1);
    EXPECT_EQ(template_signatures(c, 1, nullptr, c.memory_bytes() + bound * 85 / 100), want);
    try {
        template_signatures(c, 1, nullptr, c.memory_bytes() + bound / 2);
        ADD_FAILURE() << "finished beyond its limit";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory);
    }
}

// Releasing the collection once its entries are copied: the same template, the collection left
// empty, and a limit that the statistics with the collection held would exceed is enough.
TEST(Content, ReleasingTheCollection) {
    const Web copies = copies_of_pages(12, 2);
    Collection c = make(copies.docs, copies.ids);
    const std::vector<uint64_t> want = template_signatures(c, 1);
    const size_t limit = template_memory_bytes(c, 1) * 9 / 10;
    EXPECT_THROW(template_signatures(c, 1, nullptr, limit), Error);
    EXPECT_EQ(template_signatures_releasing(c, 1, nullptr, limit), want);
    EXPECT_EQ(c.size(), 0u);
    Web w = make_web(5, 3, 5, 80);
    const std::vector<uint64_t> web = template_signatures(make(w.docs, w.ids), 2);
    ASSERT_FALSE(web.empty());
    Collection d = make(w.docs, w.ids);
    EXPECT_EQ(template_signatures_releasing(d, 2), web);
    EXPECT_EQ(d.size(), 0u);
}

TEST(Content, IndependentOfReadOrder) {
    Web w = make_web(7, 3, 5, 80);
    std::vector<uint64_t> first = template_signatures(make(w.docs, w.ids));
    std::reverse(w.docs.begin(), w.docs.end());
    std::reverse(w.ids.begin(), w.ids.end());
    EXPECT_EQ(template_signatures(make(w.docs, w.ids), 2), first);
}

TEST(Content, JoinIsExact) {
    // The content join returns precisely the pairs whose content similarity (the reference's,
    // on the documents without the reference's templates) reaches tau, with every method.
    for (unsigned seed = 20; seed < 26; ++seed) {
        Web w = make_web(seed, 3, 6, 70);
        std::set<uint64_t> drop = ref_templates(w.docs, w.ids);
        Collection content = without_signatures(make(w.docs, w.ids), as_vector(drop));
        for (double tau : {0.1, 0.3, kContentThreshold, 0.55, 0.8, 1.0}) {
            std::set<std::tuple<uint32_t, uint32_t, double>> want;
            for (uint32_t i = 0; i < w.docs.size(); ++i)
                for (uint32_t j = i + 1; j < w.docs.size(); ++j) {
                    double s = ref_similarity(minus(w.docs[i], drop), minus(w.docs[j], drop));
                    if (s >= tau && s > 0) want.emplace(i, j, s);
                }
            for (JoinMethod m :
                 {JoinMethod::BruteForce, JoinMethod::NoPrune, JoinMethod::NoPart, JoinMethod::Partitioned})
                for (int threads : {1, 2}) {
                    JoinOptions opt;
                    opt.tau = tau;
                    opt.method = m;
                    opt.threads = threads;
                    std::set<std::tuple<uint32_t, uint32_t, double>> got;
                    for (const JoinPair& p : self_join(content, opt))
                        got.emplace(std::min(p.a, p.b), std::max(p.a, p.b), p.similarity);
                    EXPECT_EQ(got, want) << "seed " << seed << " tau " << tau << " method " << int(m);
                }
        }
    }
}

TEST(Content, WithoutSignatures) {
    Doc d = {{3, 2}, {5, 1}, {9, 4}, {12, 1}};
    Multiset m = Multiset::from_pairs({d.begin(), d.end()});
    Multiset r = without_signatures(m.view(), {1, 5, 12, 40});
    EXPECT_EQ(r.hashes, (std::vector<uint64_t>{3, 9}));
    EXPECT_EQ(r.freqs, (std::vector<uint32_t>{2, 4}));
    EXPECT_EQ(r.length, 6u);
    EXPECT_EQ(without_signatures(m.view(), {}).length, 8u);
}

// The copy on several threads (ranges copied apart, then joined) equals the copy on one: same
// documents, ids, signatures, frequencies (some past one byte) and lengths, in the same order.
TEST(Content, WithoutSignaturesThreads) {
    std::vector<Doc> docs;
    std::vector<int64_t> ids;
    for (int i = 0; i < 20000; ++i) {
        Doc d;
        const int n = i % 7 == 0 ? 0 : 1 + (i * 13) % 40;
        for (int k = 0; k < n; ++k) d[uint64_t(1 + k * 3 + i % 5)] = k % 9 == 0 ? 300 + i % 3 : 1;
        docs.push_back(d);
        ids.push_back(int64_t(i) * 7 - 5000);
    }
    const Collection c = make(docs, ids);
    const std::vector<uint64_t> drop = {4, 10, 31, 61, 100};
    const Collection one = without_signatures(c, drop, nullptr, 1);
    for (int threads : {2, 3, 8}) {
        const Collection many = without_signatures(c, drop, nullptr, threads);
        ASSERT_EQ(many.size(), one.size());
        for (size_t i = 0; i < one.size(); ++i) {
            ASSERT_EQ(many.id(i), one.id(i));
            const MultisetView a = one.doc(i), b = many.doc(i);
            ASSERT_EQ(a.size, b.size);
            ASSERT_EQ(a.length, b.length);
            for (uint32_t k = 0; k < a.size; ++k) {
                ASSERT_EQ(a.hashes[k], b.hashes[k]);
                ASSERT_EQ(a.freqs[k], b.freqs[k]);
            }
        }
    }
}

TEST(Content, Cancel) {
    Web w = make_web(3, 3, 5, 60);
    CancelToken token;
    token.stop = true;
    try {
        template_signatures(make(w.docs, w.ids), 2, &token);
        ADD_FAILURE() << "finished although canceled";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Canceled);
    }
}

namespace {

// Pages whose signatures are small typed-in numbers, not fmix64-finished hashes: all of them fall
// in one of the statistics' 256 buckets, whose sort then holds every entry (the shape of a
// reported slow cancel). Page i holds i * per / 2 + k for k < per, so neighbours share half.
Collection unmixed_pages(uint32_t pages, uint32_t per) {
    Collection c;
    Multiset m;
    for (uint32_t i = 0; i < pages; ++i) {
        m.hashes.clear();
        m.freqs.assign(per, 1);
        for (uint32_t k = 0; k < per; ++k) m.hashes.push_back(uint64_t(i) * (per / 2) + k + 1);
        m.length = per;
        c.add(i + 1, m.view());
    }
    return c;
}

double seconds(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// Canceled before it starts, the statistics stop within a small fraction of a whole run's time:
// the counting, the bucket sorts (one bucket holding every entry here), the grouping and the
// sketches look at the stop flag as they go, not only the judging at the end.
TEST(Content, CancelStopsEveryPhase) {
    const Collection c = unmixed_pages(1000, 2000);
    for (int threads : {1, 2}) {
        auto t0 = std::chrono::steady_clock::now();
        template_signatures(c, threads);
        const double whole = seconds(t0);
        CancelToken token;
        token.stop = true;
        t0 = std::chrono::steady_clock::now();
        try {
            template_signatures(c, threads, &token);
            ADD_FAILURE() << "finished although canceled";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Canceled);
        }
        const double stopped = seconds(t0);
        EXPECT_LT(stopped, whole / 20) << threads << " threads: " << stopped << " s canceled, " << whole << " s whole";
        try {
            without_signatures(c, {1, 2, 3}, &token);
            ADD_FAILURE() << "without_signatures finished although canceled";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Canceled);
        }
    }
}

// A cancel that comes while the statistics run ends them within a small fraction of a whole
// run (the flag set from another thread, as the backend's thread sets it).
TEST(Content, CancelWhileRunning) {
    const Collection c = unmixed_pages(1000, 2000);
    auto t0 = std::chrono::steady_clock::now();
    template_signatures(c, 2);
    const double whole = seconds(t0);
    CancelToken token;
    std::chrono::steady_clock::time_point set_at;
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::duration<double>(whole / 10));
        set_at = std::chrono::steady_clock::now();
        token.stop = true;
    });
    EXPECT_THROW(template_signatures(c, 2, &token), Error);
    const auto returned = std::chrono::steady_clock::now();
    stopper.join();
    const double late = std::chrono::duration<double>(returned - set_at).count();
    EXPECT_LT(late, whole / 5) << late << " s after the cancel, " << whole << " s whole";
}

// The prepared set: membership as a std::set says, for spread hashes and for typed-in keys whose
// low bits all agree (they would share one probe run without the mixing), 0 included.
TEST(Content, SignatureSet) {
    std::vector<uint64_t> keys;
    for (uint64_t k = 0; k < 20000; ++k) keys.push_back(k << 20);
    for (uint64_t k = 1; k < 20000; ++k) keys.push_back(fmix64(k));
    keys.push_back(keys[5]);  // a repeat
    const SignatureSet set(keys);
    const std::set<uint64_t> want(keys.begin(), keys.end());
    for (uint64_t k = 0; k < 40000; ++k) {
        EXPECT_EQ(set.contains(k << 20), want.count(k << 20) == 1) << k;
        EXPECT_EQ(set.contains(fmix64(k)), want.count(fmix64(k)) == 1) << k;
        EXPECT_EQ(set.contains(k), want.count(k) == 1) << k;
    }
    EXPECT_FALSE(SignatureSet(std::vector<uint64_t>{5}).contains(0));
}

// remove_into keeps exactly the signatures contains() rejects, with their frequencies and in
// their order, for documents shorter and longer than its blocks, 0 among them or not.
TEST(Content, RemoveIntoKeepsWhatContainsRejects) {
    std::mt19937_64 rng(11);
    std::vector<uint64_t> keys{0};
    for (int i = 0; i < 5000; ++i) keys.push_back(rng() % 20000);
    const SignatureSet set(keys);
    Multiset out;
    for (int t = 0; t < 400; ++t) {
        std::vector<std::pair<uint64_t, uint64_t>> p;
        const int n = t % 100;
        for (int i = 0; i < n; ++i) p.emplace_back(i == 0 && t % 3 == 0 ? 0 : rng() % 30000, 1 + rng() % 5);
        const Multiset doc = Multiset::from_pairs(p);
        Multiset want;
        for (size_t k = 0; k < doc.hashes.size(); ++k)
            if (!set.contains(doc.hashes[k])) {
                want.hashes.push_back(doc.hashes[k]);
                want.freqs.push_back(doc.freqs[k]);
                want.length += doc.freqs[k];
            }
        set.remove_into(doc.view(), out);
        ASSERT_EQ(out.hashes, want.hashes) << t;
        ASSERT_EQ(out.freqs, want.freqs) << t;
        ASSERT_EQ(out.length, want.length) << t;
    }
}

// Building the set and removing it from a multiset call poll as they go (every few thousand
// keys), so a backend can serve a cancel during a call with millions of signatures.
TEST(Content, SignatureSetPolls) {
    const size_t n = size_t(1) << 20;
    std::vector<uint64_t> keys(n);
    for (size_t k = 0; k < n; ++k) keys[k] = fmix64(k + 1);
    size_t polls = 0;
    const PollFn count = [&] { ++polls; };
    const SignatureSet set(keys.data(), keys.size(), nullptr, count);
    EXPECT_GE(polls, n >> 16);
    Multiset m = Multiset::from_pairs({});
    for (size_t k = 0; k < n; ++k) {
        m.hashes.push_back(k + 1);
        m.freqs.push_back(1);
    }
    m.length = n;
    std::sort(m.hashes.begin(), m.hashes.end());
    polls = 0;
    Multiset out;
    set.remove_into(m.view(), out, count);
    EXPECT_GE(polls, n >> 16);
    // A poll that throws (a cancel) ends the call.
    const PollFn cancel = [] { throw Error(ErrorKind::Canceled, "canceled"); };
    EXPECT_THROW(SignatureSet(keys.data(), keys.size(), nullptr, cancel), Error);
    EXPECT_THROW(set.remove_into(m.view(), out, cancel), Error);
    EXPECT_EQ(without_signatures(m.view(), {2, 4}).length, n - 2);
}

namespace {

// The rows of c as a source read again for each pass, in a new shuffled order each time.
RowSource shuffled_source(const Collection& c, unsigned seed, size_t* reads = nullptr) {
    return [&c, seed, reads](const RowVisit& visit) {
        std::vector<size_t> order(c.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::mt19937 rng(seed + unsigned(reads != nullptr ? (*reads)++ : 0));
        std::shuffle(order.begin(), order.end(), rng);
        for (size_t i : order) visit(c.id(i), c.doc(i));
    };
}

}  // namespace

// In passes, with the signatures split into 1 to 64 ranges and each range's overlaps summed over
// 1 to 5 reads, the template is the one-pass statistics' and the reference's, whatever order
// each read gives the rows in.
TEST(ContentPasses, EqualOnePassAndReference) {
    for (unsigned seed = 1; seed <= 8; ++seed) {
        Web w = make_web(seed, 2 + seed % 4, 3 + seed % 7, 30 + 5 * int(seed));
        Collection c = make(w.docs, w.ids);
        std::vector<uint64_t> want = as_vector(ref_templates(w.docs, w.ids));
        ASSERT_FALSE(want.empty());
        ASSERT_EQ(template_signatures(c), want) << "seed " << seed;
        for (size_t ranges : {0, 1, 2, 3, 7, 64})
            for (size_t overlap_ranges : {0, 2, 5}) {
                TemplatePassOptions opt;
                opt.ranges = ranges;
                opt.overlap_ranges = overlap_ranges;
                // The sample pairs found through the pages' index, or by a search of all pairs.
                opt.page_index = (ranges + overlap_ranges) % 2 == 0;
                TemplatePassInfo info;
                EXPECT_EQ(template_signatures_in_passes(shuffled_source(c, seed), opt, &info), want)
                    << "seed " << seed << ", " << ranges << " ranges, " << overlap_ranges
                    << " overlap reads, page index " << opt.page_index;
                EXPECT_EQ(info.rows, c.size());
                EXPECT_EQ(info.ranges, 2 * std::max<size_t>(ranges, 1));
                // Without a limit every range's samples are judged together: the first read, one
                // read per range of its entries, then the overlap reads, shared by all ranges, in
                // each round (the second judges the first's samples again).
                EXPECT_EQ(info.reads, 1 + std::max<size_t>(ranges, 1) + 2 * std::max<size_t>(overlap_ranges, 1))
                    << "seed " << seed << ", " << ranges << " ranges, " << overlap_ranges << " overlap reads";
            }
    }
}

// Large pages (every sketch size of the one-pass statistics), pages sharing a slot of its table,
// empty pages and pages that hold nothing but template: the same template in passes.
TEST(ContentPasses, EqualOnLargeAndEmptyPages) {
    Web w = make_web(1, 3, 6, 40, true);
    for (int k = 0; k < 4; ++k) {
        w.docs.push_back(Doc());
        w.ids.push_back(7000000 + k);
        Doc t;
        for (auto& [h, f] : w.docs[0])
            if (t.size() < 6) t[h] = f;
        w.docs.push_back(t);
        w.ids.push_back(8000000 + k);
    }
    Collection c = make(w.docs, w.ids);
    std::vector<uint64_t> want = as_vector(ref_templates(w.docs, w.ids));
    EXPECT_EQ(template_signatures(c), want);
    for (size_t ranges : {1, 5, 300}) {
        TemplatePassOptions opt;
        opt.ranges = ranges;
        opt.overlap_ranges = 3;
        EXPECT_EQ(template_signatures_in_passes(shuffled_source(c, 9), opt), want) << ranges << " ranges";
    }
}

// Under a memory limit the passes plan (and split) their ranges to fit it, hold at most the limit
// by their own count, and give the same template; a limit below the rows' order fails with
// OutOfMemory before it holds more.
TEST(ContentPasses, MemoryLimit) {
    Web w = make_web(5, 4, 9, 400);
    Collection c = make(w.docs, w.ids);
    std::vector<uint64_t> want = template_signatures(c);
    TemplatePassInfo unlimited;
    EXPECT_EQ(template_signatures_in_passes(shuffled_source(c, 1), TemplatePassOptions(), &unlimited), want);
    EXPECT_EQ(unlimited.reads, 4u);  // the first read, one of the entries, and one of the overlaps a round
    for (size_t limit : {size_t(200) << 10, size_t(100) << 10, size_t(80) << 10}) {
        TemplatePassOptions opt;
        opt.memory_limit = limit;
        TemplatePassInfo info;
        EXPECT_EQ(template_signatures_in_passes(shuffled_source(c, 2), opt, &info), want) << limit;
        EXPECT_LE(info.peak_bytes, limit);
        EXPECT_GT(info.ranges, 2u) << limit;
        EXPECT_GT(unlimited.peak_bytes, limit);
    }
    TemplatePassOptions tiny;
    tiny.memory_limit = 4 << 10;
    try {
        template_signatures_in_passes(shuffled_source(c, 3), tiny);
        ADD_FAILURE() << "finished beyond its limit";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory);
        EXPECT_NE(std::string(e.what()).find("the content statistics need "), std::string::npos) << e.what();
    }
}

// A repeated id, and a read that gives other rows than the first, end the passes through the
// caller's callbacks (or with InvalidParameter); a set stop flag ends them with Canceled.
TEST(ContentPasses, RepeatedIdsChangedRowsCancel) {
    Web w = make_web(2, 3, 4, 60);
    w.ids[7] = w.ids[3];
    Collection dup = make(w.docs, w.ids);
    int64_t named = 0;
    TemplatePassOptions opt;
    opt.repeated_id = [&](int64_t id) {
        named = id;
        throw Error(ErrorKind::InvalidParameter, "repeated");
    };
    EXPECT_THROW(template_signatures_in_passes(shuffled_source(dup, 1), opt), Error);
    EXPECT_EQ(named, w.ids[3]);

    w.ids[7] = 99999999;
    Collection c = make(w.docs, w.ids);
    Collection more = make(w.docs, w.ids);
    more.add(123456789, c.doc(0));
    size_t reads = 0;
    RowSource changing = [&](const RowVisit& visit) {
        const Collection& rows = reads++ == 0 ? c : more;
        for (size_t i = 0; i < rows.size(); ++i) visit(rows.id(i), rows.doc(i));
    };
    bool called = false;
    TemplatePassOptions watch;
    watch.rows_changed = [&] {
        called = true;
        throw Error(ErrorKind::Internal, "changed");
    };
    EXPECT_THROW(template_signatures_in_passes(changing, watch), Error);
    EXPECT_TRUE(called);
    // A read that gives a row twice (and so one row fewer in the count) is refused as well.
    reads = 0;
    RowSource twice = [&](const RowVisit& visit) {
        for (size_t i = 0; i < c.size(); ++i) visit(c.id(reads > 0 && i == 1 ? 0 : i), c.doc(i));
        ++reads;
    };
    EXPECT_THROW(template_signatures_in_passes(twice, TemplatePassOptions()), Error);

    CancelToken token;
    token.stop = true;
    TemplatePassOptions canceled;
    canceled.cancel = &token;
    Collection big = unmixed_pages(300, 400);
    try {
        template_signatures_in_passes(shuffled_source(big, 1), canceled);
        ADD_FAILURE() << "finished although canceled";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Canceled);
    }
    // poll is called as the passes go (the backend serves interrupts there).
    size_t polls = 0;
    TemplatePassOptions polled;
    polled.poll = [&] { ++polls; };
    EXPECT_EQ(template_signatures_in_passes(shuffled_source(big, 1), polled), template_signatures(big));
    EXPECT_GT(polls, 0u);
}
