// Unit tests of the index search logic against a brute-force reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include <sys/resource.h>

#include "core/common/error.hpp"
#include "core/index/df_cache.hpp"
#include "core/index/index_search.hpp"
#include "core/index/memory_postings.hpp"
#include "core/signature/multiset.hpp"
#include "core/template/content.hpp"
#include "core/template/stored.hpp"

using namespace spotsigs;

namespace {

// Posting lists held in memory, built from a set of documents (id = position).
class MemorySource : public PostingSource {
public:
    // Indexes docs; the query's hashes are bound later with bind().
    explicit MemorySource(const std::vector<Multiset>& docs) {
        for (size_t d = 0; d < docs.size(); ++d)
            for (size_t i = 0; i < docs[d].hashes.size(); ++i)
                lists_[docs[d].hashes[i]].push_back(
                    Posting{d, static_cast<uint32_t>(docs[d].length), docs[d].freqs[i]});
        for (auto& [h, l] : lists_) std::sort(l.begin(), l.end(), posting_before);
    }
    // Sets the query whose signature indexes count() and scan() refer to.
    void bind(const Multiset& q) {
        q_ = &q;
        touched.assign(q.hashes.size(), false);
    }
    // The query signatures whose lists count() or scan() read since bind().
    std::vector<bool> touched;
    // Postings scan() has delivered to the search since construction.
    uint64_t delivered = 0;
    // Total postings of the query's i-th signature (the exact estimate).
    uint64_t total(uint32_t i) { return list(i).size(); }
    // Number of postings in the length range.
    uint64_t count(uint32_t i, uint64_t lo, uint64_t hi) override {
        touched[i] = true;
        uint64_t n = 0;
        for (const Posting& p : list(i))
            if (p.length >= lo && p.length <= hi) ++n;
        return n;
    }
    // Delivers the postings in the length range, by descending length.
    void scan(uint32_t i, uint64_t lo, uint64_t hi, const std::function<bool(const Posting&)>& fn) override {
        touched[i] = true;
        for (const Posting& p : list(i)) {
            if (p.length > hi) continue;
            if (p.length < lo) break;
            ++delivered;
            if (!fn(p)) break;
        }
    }

private:
    // The list of the query's i-th signature (empty when absent).
    const std::vector<Posting>& list(uint32_t i) {
        static const std::vector<Posting> none;
        auto it = lists_.find(q_->hashes[i]);
        return it == lists_.end() ? none : it->second;
    }
    std::map<uint64_t, std::vector<Posting>> lists_;
    const Multiset* q_ = nullptr;
};

// A random multiset over a small hash universe, so documents overlap.
Multiset random_doc(std::mt19937_64& rng, int universe, int max_distinct) {
    std::uniform_int_distribution<int> nd(0, max_distinct), h(0, universe - 1), f(1, 4);
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    int n = nd(rng);
    for (int i = 0; i < n; ++i) pairs.emplace_back(uint64_t(h(rng)) * 0x9e3779b97f4a7c15ULL, f(rng) > 3 ? f(rng) : 1);
    return Multiset::from_pairs(pairs);
}

// A near duplicate of d: a few signatures dropped, added or changed in frequency.
Multiset mutate(std::mt19937_64& rng, const Multiset& d, int universe) {
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    std::uniform_int_distribution<int> coin(0, 9), h(0, universe - 1);
    for (size_t i = 0; i < d.hashes.size(); ++i) {
        int c = coin(rng);
        if (c == 0) continue;
        pairs.emplace_back(d.hashes[i], c == 1 ? d.freqs[i] + 1 : d.freqs[i]);
    }
    if (coin(rng) < 5) pairs.emplace_back(uint64_t(h(rng)) * 0x9e3779b97f4a7c15ULL, 1);
    return Multiset::from_pairs(pairs);
}

// A collection mixing random documents and clusters of near duplicates.
std::vector<Multiset> corpus(uint64_t seed, size_t n, int universe) {
    std::mt19937_64 rng(seed);
    std::vector<Multiset> docs;
    while (docs.size() < n) {
        Multiset d = random_doc(rng, universe, 40);
        docs.push_back(d);
        int copies = int(rng() % 4);
        for (int c = 0; c < copies && docs.size() < n; ++c) docs.push_back(mutate(rng, d, universe));
    }
    return docs;
}

// Sorted ids of the brute-force matches at tau.
std::vector<uint64_t> brute(const std::vector<Multiset>& docs, const Multiset& q, double tau) {
    std::vector<uint64_t> ids;
    for (size_t d = 0; d < docs.size(); ++d)
        if (similarity(q.view(), docs[d].view()) >= tau) ids.push_back(d);
    return ids;
}

// Sorted ids of a search result.
std::vector<uint64_t> ids_of(const std::vector<Match>& m) {
    std::vector<uint64_t> ids;
    for (const Match& x : m) ids.push_back(x.id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

// The k most similar ids with similarity > 0 (ties broken by id), the way the index's ordered
// (<->) scan finds them: a threshold search per tier of order_tier(), from the highest, until k
// matches at or above the current tier are known.
std::vector<Match> top_k(const MultisetView& q, size_t k, PostingSource& src) {
    std::vector<Match> res;
    for (size_t t = 0; t < order_tier_count(); ++t) {
        res = threshold_search(q, order_tier(t), src);
        if (res.size() >= k) break;
    }
    std::sort(res.begin(), res.end(), [](const Match& a, const Match& b) {
        return a.similarity != b.similarity ? a.similarity > b.similarity : a.id < b.id;
    });
    if (res.size() > k) res.resize(k);
    return res;
}

// Decodes a whole run of n postings with decode_posting; throws Error(DataCorrupted) on malformed
// bytes or trailing data.
std::vector<Posting> decode_run(const unsigned char* data, size_t len, uint32_t n) {
    std::vector<Posting> out(n);
    const unsigned char* pos = data;
    const unsigned char* end = data + len;
    for (uint32_t i = 0; i < n; ++i) decode_posting(pos, end, out[i], i ? &out[i - 1] : nullptr);
    if (pos != end) throw Error(ErrorKind::DataCorrupted, "corrupt spotsigs index", "trailing bytes after postings");
    return out;
}

}  // namespace

TEST(IndexSearch, LengthRangeMatchesDefinition) {
    for (uint64_t q = 1; q < 300; ++q)
        for (double tau : {0.05, 0.3, 0.44, 0.5, 0.8, 0.9, 0.99, 1.0}) {
            LengthRange r = length_range(q, tau);
            for (uint64_t y = 1; y < 700; ++y) {
                bool in = y >= r.lo && y <= r.hi;
                bool ok = double(std::min(q, y)) / double(std::max(q, y)) >= tau;
                ASSERT_EQ(in, ok) << "q=" << q << " y=" << y << " tau=" << tau;
            }
        }
    EXPECT_TRUE(length_range(0, 0.5).empty());
}

TEST(IndexSearch, PartitioningIsMonotoneAndCovering) {
    for (uint32_t g : {1u, 10u, 25u, 100u}) {
        Partitioning p(g);
        EXPECT_EQ(p.partition_of(0), 0u);
        EXPECT_EQ(p.upper(p.count() - 1), kMaxLength);
        for (uint32_t k = 0; k + 1 < p.count(); ++k) EXPECT_EQ(p.upper(k) + 1, p.lower(k + 1));
        for (uint64_t len : std::vector<uint64_t>{1, 2, 17, 1000, 123456, kMaxLength}) {
            uint32_t k = p.partition_of(len);
            EXPECT_LE(p.lower(k), len);
            EXPECT_GE(p.upper(k), len);
        }
    }
    EXPECT_LT(Partitioning(10).count(), 300u);
}

TEST(IndexSearch, PaperExampleExactBoundary) {
    // Paper 4.3.2: d1 = {s1:5,s2:4,s3:4}, d3 = {s1:4,s2:5,s3:5}: similarity exactly 0.8.
    std::vector<Multiset> docs = {
        Multiset::from_pairs({{1, 5}, {2, 4}, {3, 4}}),
        Multiset::from_pairs({{1, 8}, {2, 4}}),
        Multiset::from_pairs({{1, 4}, {2, 5}, {3, 5}}),
    };
    MemorySource src(docs);
    src.bind(docs[0]);
    EXPECT_EQ(ids_of(threshold_search(docs[0].view(), 0.8, src)), (std::vector<uint64_t>{0, 2}));
    EXPECT_EQ(ids_of(threshold_search(docs[0].view(), 0.8, src)), brute(docs, docs[0], 0.8));
}

TEST(IndexSearch, ThresholdEqualsBruteForce) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        std::vector<Multiset> docs = corpus(seed, 400, seed % 2 ? 60 : 400);
        MemorySource src(docs);
        for (size_t qi = 0; qi < docs.size(); qi += 7) {
            src.bind(docs[qi]);
            for (double tau : {1e-12, 0.1, 0.3, 0.44, 0.5, 0.7, 0.8, 0.9, 1.0}) {
                auto got = threshold_search(docs[qi].view(), tau, src);
                ASSERT_EQ(ids_of(got), brute(docs, docs[qi], tau)) << "seed " << seed << " q " << qi << " tau " << tau;
                for (const Match& m : got) ASSERT_EQ(m.similarity, similarity(docs[qi].view(), docs[m.id].view()));
            }
        }
    }
}

TEST(IndexSearch, AnyFrequencyEstimatesGiveExactResults) {
    // Estimates only order the lists: exact ones, none known (all 0), inverted ones (commonest
    // first) and random ones must all give the brute-force matches with exact similarities.
    for (uint64_t seed = 11; seed <= 13; ++seed) {
        std::vector<Multiset> docs = corpus(seed, 400, seed % 2 ? 60 : 400);
        MemorySource src(docs);
        std::mt19937_64 rng(seed);
        for (size_t qi = 0; qi < docs.size(); qi += 5) {
            src.bind(docs[qi]);
            const size_t n = docs[qi].hashes.size();
            std::vector<std::vector<uint64_t>> estimates(4, std::vector<uint64_t>(n));
            for (uint32_t i = 0; i < n; ++i) {
                estimates[0][i] = src.total(i);
                estimates[1][i] = 0;
                estimates[2][i] = 1000 - src.total(i);
                estimates[3][i] = rng() % 50;
            }
            for (double tau : {1e-12, 0.3, 0.44, 0.7, 0.8, 0.9, 1.0})
                for (size_t e = 0; e < estimates.size(); ++e) {
                    auto got = threshold_search(docs[qi].view(), tau, src, estimates[e].data());
                    ASSERT_EQ(ids_of(got), brute(docs, docs[qi], tau))
                        << "seed " << seed << " q " << qi << " tau " << tau << " estimates " << e;
                    for (const Match& m : got) ASSERT_EQ(m.similarity, similarity(docs[qi].view(), docs[m.id].view()));
                }
        }
    }
}

TEST(IndexSearch, UnverifiedCandidatesCoverEveryMatch) {
    // A search that may hand candidates back: its matches plus the candidates that verify equal
    // the brute force, every bound is at least the candidate's similarity, and it does stop early.
    size_t handed = 0;
    for (uint64_t seed = 31; seed <= 33; ++seed) {
        std::vector<Multiset> docs = corpus(seed, 400, seed % 2 ? 60 : 400);
        MemorySource src(docs);
        for (size_t qi = 0; qi < docs.size(); qi += 5) {
            src.bind(docs[qi]);
            for (double tau : {1e-12, 0.3, 0.44, 0.7, 0.8, 0.9, 1.0})
                for (bool estimated : {false, true}) {
                    std::vector<uint64_t> est(docs[qi].hashes.size());
                    for (uint32_t i = 0; i < est.size(); ++i) est[i] = src.total(i);
                    std::vector<Unverified> rest;
                    auto got = threshold_search(docs[qi].view(), tau, src, estimated ? est.data() : nullptr, &rest);
                    handed += rest.size();
                    for (const Unverified& u : rest) {
                        double s = similarity(docs[qi].view(), docs[u.id].view());
                        ASSERT_GE(u.bound, s);
                        ASSERT_EQ(u.length, docs[u.id].length);
                        if (s >= tau) got.push_back(Match{u.id, s});
                    }
                    ASSERT_EQ(ids_of(got), brute(docs, docs[qi], tau))
                        << "seed " << seed << " q " << qi << " tau " << tau;
                }
        }
    }
    EXPECT_GT(handed, 0u);
}

// The content measure's search (SearchMeasure::kContentBound). A template of every third hash of
// the universe's first 60; queries are documents' contents. Exact against the brute force of the
// content bound (with and without estimates and unverified candidates), a superset of the content
// matches, and every value an upper bound of the content similarity, in double and as a distance.
TEST(IndexSearch, ContentBoundSearchEqualsBruteForceAndKeepsEveryContentMatch) {
    size_t content_matches = 0, handed = 0;
    for (uint64_t seed = 41; seed <= 44; ++seed) {
        std::vector<Multiset> docs = corpus(seed, 400, seed % 2 ? 60 : 400);
        std::vector<uint64_t> t;
        for (uint64_t h = 0; h < 60; h += 3) t.push_back(h * 0x9e3779b97f4a7c15ULL);
        std::sort(t.begin(), t.end());
        MemorySource src(docs);
        for (size_t qi = 0; qi < docs.size(); qi += 5) {
            Multiset qc = without_signatures(docs[qi].view(), t);
            src.bind(qc);
            std::vector<uint64_t> est(qc.hashes.size());
            for (uint32_t i = 0; i < est.size(); ++i) est[i] = src.total(i);
            for (double tau : {1e-12, 0.05, 0.3, 0.4, 0.44, 0.7, 0.8, 1.0}) {
                std::vector<uint64_t> bound_ids, content_ids;
                for (size_t d = 0; d < docs.size(); ++d) {
                    if (qc.length > 0 && content_bound(overlap(qc.view(), docs[d].view()), qc.length) >= tau)
                        bound_ids.push_back(d);
                    if (content_similarity(qc.view(), docs[d].view(), t.data(), t.size()) >= tau)
                        content_ids.push_back(d);
                }
                content_matches += content_ids.size();
                for (int mode = 0; mode < 3; ++mode) {
                    std::vector<Unverified> rest;
                    auto got = threshold_search(qc.view(), tau, src, mode == 0 ? nullptr : est.data(),
                                                mode == 2 ? &rest : nullptr, SearchMeasure::kContentBound);
                    for (const Match& m : got) {
                        ASSERT_EQ(m.similarity, content_bound(overlap(qc.view(), docs[m.id].view()), qc.length));
                        double cs = content_similarity(qc.view(), docs[m.id].view(), t.data(), t.size());
                        ASSERT_GE(m.similarity, cs);
                        ASSERT_LE(1.0 - m.similarity, 1.0 - cs);
                    }
                    handed += rest.size();
                    std::vector<uint64_t> all = ids_of(got);
                    for (const Unverified& u : rest) {
                        double b = content_bound(overlap(qc.view(), docs[u.id].view()), qc.length);
                        ASSERT_GE(u.bound, b);
                        if (b >= tau) got.push_back(Match{u.id, b});
                        all.push_back(u.id);
                    }
                    ASSERT_EQ(ids_of(got), bound_ids) << "seed " << seed << " q " << qi << " tau " << tau;
                    std::sort(all.begin(), all.end());
                    ASSERT_TRUE(std::includes(all.begin(), all.end(), content_ids.begin(), content_ids.end()))
                        << "seed " << seed << " q " << qi << " tau " << tau;
                }
            }
        }
    }
    EXPECT_GT(content_matches, 1000u);
    EXPECT_GT(handed, 0u);
}

// Rows longer than any plain match reach the content bound: a row holding q's content and a
// template part of any size is a content match at similarity 1.
TEST(IndexSearch, ContentBoundSearchFindsRowsWithLargeTemplates) {
    std::vector<std::pair<uint64_t, uint64_t>> qp, bp;
    for (uint64_t h = 1; h <= 10; ++h) qp.emplace_back(h, 1);
    bp = qp;
    std::vector<uint64_t> t;
    for (uint64_t h = 1000; h < 1500; ++h) {
        bp.emplace_back(h, 1);
        t.push_back(h);
    }
    std::vector<Multiset> docs = {Multiset::from_pairs(bp), Multiset::from_pairs(qp)};
    MemorySource src(docs);
    Multiset q = Multiset::from_pairs(qp);
    src.bind(q);
    EXPECT_EQ(ids_of(threshold_search(q.view(), 0.9, src)), std::vector<uint64_t>({1}));
    auto got = threshold_search(q.view(), 0.9, src, nullptr, nullptr, SearchMeasure::kContentBound);
    EXPECT_EQ(ids_of(got), std::vector<uint64_t>({0, 1}));
    EXPECT_EQ(content_similarity(q.view(), docs[0].view(), t.data(), t.size()), 1.0);
    EXPECT_EQ(content_length_range(10, 0.9).lo, 9u);
    EXPECT_EQ(content_length_range(10, 0.9).hi, kMaxLength);
    EXPECT_TRUE(content_length_range(0, 0.9).empty());
}

TEST(IndexSearch, EstimatesSpareTheListsOfNewSignatures) {
    // A query of signatures new to the collection, ordered by exact estimates, reads only the
    // lists up to the end of admission, not one list per signature as counting them all does.
    std::vector<Multiset> docs = corpus(21, 1000, 3000);
    MemorySource src(docs);
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    for (uint64_t h = 1; h <= 60; ++h) pairs.emplace_back(h * 0x51ed270b27a1f1e5ULL + 7, 1);
    Multiset novel = Multiset::from_pairs(pairs);
    src.bind(novel);
    std::vector<uint64_t> est(novel.hashes.size());
    for (uint32_t i = 0; i < est.size(); ++i) est[i] = src.total(i);
    EXPECT_TRUE(threshold_search(novel.view(), 0.8, src, est.data()).empty());
    size_t read = std::count(src.touched.begin(), src.touched.end(), true);
    EXPECT_GT(read, 0u);
    EXPECT_LE(read, novel.hashes.size() / 4);
    src.bind(novel);
    EXPECT_TRUE(threshold_search(novel.view(), 0.8, src).empty());
    EXPECT_EQ(size_t(std::count(src.touched.begin(), src.touched.end(), true)), novel.hashes.size());
}

TEST(IndexSearch, DfCacheKeepsFrequentSignatures) {
    DfCache c(4, 16);  // 16 slots
    EXPECT_EQ(c.get(42), 0u);
    c.put(42, 15);  // below min_df: not kept
    EXPECT_EQ(c.get(42), 0u);
    c.put(42, 100);
    EXPECT_EQ(c.get(42), 100u);
    c.put(42, 3);  // its own entry drops below min_df: removed
    EXPECT_EQ(c.get(42), 0u);
    // Among hashes that share a slot, the larger count stays.
    std::vector<uint64_t> same = {1};
    for (uint64_t g = 2; same.size() < 3; ++g) {
        DfCache probe(4, 16);
        probe.put(1, 1000);
        probe.put(g, 1001);
        if (probe.get(1) == 0) same.push_back(g);
    }
    DfCache d(4, 16);
    d.put(same[0], 500);
    d.put(same[1], 20);  // smaller: does not evict
    EXPECT_EQ(d.get(same[0]), 500u);
    EXPECT_EQ(d.get(same[1]), 0u);
    d.put(same[2], 900);  // larger: evicts
    EXPECT_EQ(d.get(same[0]), 0u);
    EXPECT_EQ(d.get(same[2]), 900u);
}

// Minor page faults of this process so far.
static long minor_faults() {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

TEST(IndexSearch, DfCacheTouchesOnlyTheSlotsUsed) {
    // A new backend creates the cache for its first search of an index: creating it must not
    // write its slots (64 MB here, 16,384 pages of 4 kB), only a put or get touches a page.
    long before = minor_faults();
    DfCache c(22, 16);
    for (uint64_t h = 1; h <= 100; ++h) c.put(h * 0x9e3779b97f4a7c15ULL, 1000 + h);
    long faults = minor_faults() - before;
    EXPECT_LT(faults, 1000) << "creating the cache wrote its slots";
    for (uint64_t h = 1; h <= 100; ++h) EXPECT_EQ(c.get(h * 0x9e3779b97f4a7c15ULL), 1000 + h);
    EXPECT_EQ(c.get(12345), 0u);
}

TEST(IndexSearch, DfCacheFirstSearchesTakeFewFaults) {
    // A backend's first searches put their hashes all over the cache's slots (2^17 of them, 2 MB,
    // as an index scan makes it): with the slots in one transparent huge page, that is a fault or
    // two, not one per 4 kB page reached (about 500 here). Needs the kernel to offer huge pages
    // to a mapping that asks (transparent_hugepage "always" or "madvise").
    std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode;
    std::getline(thp, mode);
    if (mode.find("[never]") != std::string::npos || mode.empty()) GTEST_SKIP() << "no transparent huge pages";
    long before = minor_faults();
    DfCache c(17, 16);
    std::mt19937_64 rng(3);
    std::vector<uint64_t> hs(3000);
    for (uint64_t& h : hs) h = rng();
    for (uint64_t h : hs) c.put(h, 100);
    long faults = minor_faults() - before;
    EXPECT_LT(faults, 64) << "the slots were touched in 4 kB pages";
    size_t kept = 0;
    for (uint64_t h : hs) kept += c.get(h) == 100;
    EXPECT_GT(kept, 2900u);
}

class MemoryPostingsTest : public ::testing::TestWithParam<int> {};

TEST_P(MemoryPostingsTest, EqualBruteForce) {
    // The pending list's in-memory lists: documents added in shuffled id order, empty ones too,
    // searched at every threshold (lists are unsorted, so every length filter is exercised). A
    // universe of 300 signatures makes long lists over several posting chunks; one of 20,000
    // makes the table of lists double several times while documents are added.
    std::vector<Multiset> docs = corpus(17, 600, GetParam());
    docs.push_back(Multiset{});
    std::vector<size_t> order(docs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
    MemoryPostings mem;
    for (size_t d : order) mem.add(d, docs[d].view());
    EXPECT_EQ(mem.documents(), docs.size());
    EXPECT_GT(mem.bytes(), 0u);
    for (double tau : {0.05, 0.3, 0.44, 0.6, 0.8, 0.9, 1.0})
        for (size_t qi = 0; qi < docs.size(); qi += 7) {
            MemoryPostings::Source src(mem, docs[qi].view());
            std::vector<Match> m = threshold_search(docs[qi].view(), tau, src);
            ASSERT_EQ(ids_of(m), brute(docs, docs[qi], tau)) << "tau=" << tau << " q=" << qi;
            for (const Match& x : m) ASSERT_EQ(x.similarity, similarity(docs[qi].view(), docs[x.id].view()));
        }
}

INSTANTIATE_TEST_SUITE_P(IndexSearch, MemoryPostingsTest, ::testing::Values(300, 20000));

TEST(IndexSearch, MemoryPostingsClearForgetsEveryDocumentAndKeepsMemory) {
    // After clear(), the lists hold only what is added next (searches equal a brute force over
    // the new documents alone), across reused chunks and a table already grown.
    std::vector<Multiset> first = corpus(11, 800, 5000), second = corpus(12, 300, 5000);
    MemoryPostings mem;
    for (size_t d = 0; d < first.size(); ++d) mem.add(d, first[d].view());
    const size_t held = mem.bytes();
    mem.clear();
    EXPECT_EQ(mem.documents(), 0u);
    EXPECT_EQ(mem.bytes(), held);
    for (size_t d = 0; d < second.size(); ++d) mem.add(d, second[d].view());
    EXPECT_EQ(mem.documents(), second.size());
    EXPECT_EQ(mem.bytes(), held);  // fewer postings than before: no new chunk, no larger table
    // Queries from both sets: the first set's documents must no longer be found, the second's must.
    size_t found = 0;
    for (const std::vector<Multiset>* qs : {&first, &second})
        for (double tau : {0.1, 0.5, 1.0})
            for (size_t qi = 0; qi < qs->size(); qi += 13) {
                const Multiset& q = (*qs)[qi];
                MemoryPostings::Source src(mem, q.view());
                std::vector<uint64_t> got = ids_of(threshold_search(q.view(), tau, src));
                ASSERT_EQ(got, brute(second, q, tau)) << "tau=" << tau << " q=" << qi;
                found += got.size();
            }
    EXPECT_GT(found, 0u);
}

TEST(IndexSearch, MemoryPostingsKeepInsertionOrder) {
    // A list is scanned in the order its postings were added (across chunks and table growth),
    // and count() is its length.
    MemoryPostings mem;
    std::vector<uint64_t> added;
    for (uint64_t d = 0; d < 9000; ++d) {
        // signature 7 in every document, and a new list each time
        Multiset m = Multiset::from_pairs({{7, 1}, {1000 + d, 2}});
        uint64_t id = (d * 7919) % 100003;
        mem.add(id, m.view());
        added.push_back(id);
    }
    Multiset q = Multiset::from_pairs({{7, 1}});
    MemoryPostings::Source src(mem, q.view());
    EXPECT_EQ(src.count(0, 0, UINT64_MAX), added.size());
    std::vector<uint64_t> seen;
    src.scan(0, 0, UINT64_MAX, [&](const Posting& p) {
        seen.push_back(p.id);
        EXPECT_EQ(p.length, 3u);
        return true;
    });
    EXPECT_EQ(seen, added);
}

TEST(IndexSearch, HighThresholdReadsFewerPostings) {
    std::vector<Multiset> docs = corpus(42, 2000, 3000);
    MemorySource src(docs);
    uint64_t low = 0, high = 0;
    for (size_t qi = 0; qi < docs.size(); qi += 50) {
        src.bind(docs[qi]);
        uint64_t before = src.delivered;
        threshold_search(docs[qi].view(), 1e-12, src);
        uint64_t between = src.delivered;
        threshold_search(docs[qi].view(), 0.8, src);
        low += between - before;
        high += src.delivered - between;
    }
    EXPECT_LT(high * 2, low);
}

TEST(IndexSearch, TopKEqualsFullSort) {
    std::vector<Multiset> docs = corpus(7, 500, 200);
    MemorySource src(docs);
    for (size_t qi = 0; qi < docs.size(); qi += 11) {
        src.bind(docs[qi]);
        std::vector<Match> all;
        for (size_t d = 0; d < docs.size(); ++d) {
            double s = similarity(docs[qi].view(), docs[d].view());
            if (s > 0) all.push_back(Match{d, s});
        }
        std::sort(all.begin(), all.end(), [](const Match& a, const Match& b) {
            return a.similarity != b.similarity ? a.similarity > b.similarity : a.id < b.id;
        });
        for (size_t k : {1u, 10u, 50u}) {
            auto got = top_k(docs[qi].view(), k, src);
            size_t n = std::min(k, all.size());
            ASSERT_EQ(got.size(), n);
            for (size_t i = 0; i < n; ++i) {
                ASSERT_EQ(got[i].id, all[i].id);
                ASSERT_EQ(got[i].similarity, all[i].similarity);
            }
        }
    }
}

TEST(IndexSearch, EmptyQueryAndBadTau) {
    std::vector<Multiset> docs = corpus(3, 50, 100);
    MemorySource src(docs);
    Multiset empty;
    src.bind(empty);
    EXPECT_TRUE(threshold_search(empty.view(), 0.5, src).empty());
    EXPECT_THROW(threshold_search(empty.view(), 0.0, src), Error);
    EXPECT_THROW(threshold_search(empty.view(), 1.5, src), Error);
}

TEST(IndexSearch, PostingCodecRoundTrip) {
    std::mt19937_64 rng(9);
    std::vector<Posting> ps;
    for (int i = 0; i < 1000; ++i) ps.push_back(Posting{rng() >> 16, uint32_t(1 + rng() % 5000), 1});
    for (auto& p : ps) p.freq = uint32_t(1 + rng() % p.length);
    ps.push_back(Posting{UINT64_MAX, uint32_t(kMaxLength), uint32_t(kMaxLength)});
    std::sort(ps.begin(), ps.end(), posting_before);
    ps.erase(std::unique(ps.begin(), ps.end(),
                         [](const Posting& a, const Posting& b) { return a.id == b.id && a.length == b.length; }),
             ps.end());
    std::vector<unsigned char> buf(ps.size() * kMaxPostingBytes);
    size_t n = 0;
    for (size_t i = 0; i < ps.size(); ++i) n += encode_posting(buf.data() + n, ps[i], i ? &ps[i - 1] : nullptr);
    auto back = decode_run(buf.data(), n, uint32_t(ps.size()));
    ASSERT_EQ(back.size(), ps.size());
    for (size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(back[i].id, ps[i].id);
        EXPECT_EQ(back[i].length, ps[i].length);
        EXPECT_EQ(back[i].freq, ps[i].freq);
    }
    EXPECT_THROW(decode_run(buf.data(), n - 1, uint32_t(ps.size())), Error);
    EXPECT_THROW(decode_run(buf.data(), n, uint32_t(ps.size()) - 1), Error);
}
