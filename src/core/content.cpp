// The content measure's statistics: which signatures of a collection are template signatures.
#include "content.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "error.hpp"
#include "hash.hpp"
#include "join_internal.hpp"

namespace spotsigs {

namespace {

// One (signature, page) entry; pages are numbered by their rank in the fixed id order.
struct Entry {
    uint64_t hash;
    uint32_t rank;
};

// The signatures held by two or more pages: for each, where its sample of ranks starts in
// `ranks` (ascending rank, at most kSample of them).
struct Groups {
    std::vector<uint64_t> hashes;
    std::vector<uint32_t> start;  // hashes.size() + 1 offsets into ranks
    std::vector<uint32_t> ranks;
};

// Every signature held by two or more pages with the sample of pages it is judged on.
Groups shared_signatures(const Collection& docs, const std::vector<uint32_t>& rank_of) {
    std::vector<Entry> e;
    size_t total = 0;
    for (size_t i = 0; i < docs.size(); ++i) total += docs.doc(i).size;
    e.reserve(total);
    for (size_t i = 0; i < docs.size(); ++i) {
        MultisetView v = docs.doc(i);
        for (uint32_t k = 0; k < v.size; ++k) e.push_back(Entry{v.hashes[k], rank_of[i]});
    }
    std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
        return a.hash != b.hash ? a.hash < b.hash : a.rank < b.rank;
    });
    Groups g;
    g.start.push_back(0);
    for (size_t i = 0; i < e.size();) {
        size_t j = i;
        while (j < e.size() && e[j].hash == e[i].hash) ++j;
        if (j - i >= 2) {
            g.hashes.push_back(e[i].hash);
            for (size_t k = i; k < j && k - i < kSample; ++k) g.ranks.push_back(e[k].rank);
            g.start.push_back(static_cast<uint32_t>(g.ranks.size()));
        }
        i = j;
    }
    return g;
}

// Marks in `keep` the groups whose sampled pages have a mean pairwise similarity (in `docs`,
// whose i-th page has rank rank_of[i]) of at least kCoherence.
void judge(const Groups& g, const Collection& docs, const std::vector<uint32_t>& doc_of_rank,
           std::vector<char>& keep, int threads, CancelToken* cancel) {
    const size_t n = g.hashes.size();
    keep.assign(n, 0);
    // A story's signatures share their pages, so the same pairs recur group after group: each
    // worker remembers the similarities it computed.
    std::vector<std::unordered_map<uint64_t, double>> cache(static_cast<size_t>(threads));
    join_detail::run_workers(threads, n, 256, [&](int w, size_t begin, size_t end) {
        auto& memo = cache[static_cast<size_t>(w)];
        for (size_t k = begin; k < end; ++k) {
            if (cancel != nullptr && cancel->stopped()) return;
            const uint32_t* r = g.ranks.data() + g.start[k];
            const size_t m = g.start[k + 1] - g.start[k];
            double sum = 0;
            for (size_t a = 0; a < m; ++a)
                for (size_t b = a + 1; b < m; ++b) {
                    uint64_t key = uint64_t(r[a]) << 32 | r[b];  // r is ascending: r[a] < r[b]
                    auto it = memo.find(key);
                    if (it == memo.end())
                        it = memo.emplace(key, similarity(docs.doc(doc_of_rank[r[a]]),
                                                          docs.doc(doc_of_rank[r[b]]))).first;
                    sum += it->second;
                }
            // mean = sum / pairs >= kCoherence, with pairs = m (m - 1) / 2 >= 1.
            keep[k] = sum >= kCoherence * double(m * (m - 1) / 2);
        }
    });
    if (cancel != nullptr && cancel->stopped()) throw Error(ErrorKind::Canceled, "canceled");
}

}  // namespace

std::vector<uint64_t> template_signatures(const Collection& docs, int threads, CancelToken* cancel) {
    if (threads < 1) threads = 1;
    const size_t n = docs.size();
    // The fixed page order: by fmix64 of the id (a bijection, so distinct ids never tie), then
    // by position for the duplicate ids a caller may not have rejected.
    std::vector<uint32_t> doc_of_rank(n);
    std::iota(doc_of_rank.begin(), doc_of_rank.end(), 0u);
    std::sort(doc_of_rank.begin(), doc_of_rank.end(), [&](uint32_t a, uint32_t b) {
        uint64_t x = fmix64(static_cast<uint64_t>(docs.id(a))), y = fmix64(static_cast<uint64_t>(docs.id(b)));
        return x != y ? x < y : a < b;
    });
    std::vector<uint32_t> rank_of(n);
    for (uint32_t r = 0; r < n; ++r) rank_of[doc_of_rank[r]] = r;
    const Groups g = shared_signatures(docs, rank_of);

    std::vector<uint64_t> drop;
    std::vector<char> keep;
    for (int round = 0; round < kRounds; ++round) {
        if (round == 0) {
            judge(g, docs, doc_of_rank, keep, threads, cancel);
        } else {
            Collection content = without_signatures(docs, drop);
            judge(g, content, doc_of_rank, keep, threads, cancel);
        }
        drop.clear();
        for (size_t k = 0; k < g.hashes.size(); ++k)
            if (!keep[k]) drop.push_back(g.hashes[k]);  // g.hashes is ascending
    }
    return drop;
}

Multiset without_signatures(const MultisetView& doc, const std::vector<uint64_t>& drop) {
    Multiset m;
    m.hashes.reserve(doc.size);
    m.freqs.reserve(doc.size);
    size_t d = 0;
    for (uint32_t k = 0; k < doc.size; ++k) {
        uint64_t h = doc.hashes[k];
        // Both ascending: a search from the last position keeps this O(size log |drop|).
        d = static_cast<size_t>(std::lower_bound(drop.begin() + static_cast<std::ptrdiff_t>(d), drop.end(), h) -
                                drop.begin());
        if (d < drop.size() && drop[d] == h) continue;
        m.hashes.push_back(h);
        m.freqs.push_back(doc.freqs[k]);
        m.length += doc.freqs[k];
    }
    return m;
}

Collection without_signatures(const Collection& docs, const std::vector<uint64_t>& drop) {
    Collection out;
    size_t total = 0;
    for (size_t i = 0; i < docs.size(); ++i) total += docs.doc(i).size;
    out.reserve(docs.size(), total);
    for (size_t i = 0; i < docs.size(); ++i) {
        Multiset m = without_signatures(docs.doc(i), drop);
        out.add(docs.id(i), m.view());
    }
    return out;
}

}  // namespace spotsigs
