// The prefix-group self-join: the default ('partitioned') matcher of a self-join.
//
// The index-based matcher (join_probe.cpp) orders signatures by exact document frequency, which
// costs a dictionary of every distinct signature and a re-coded copy of every document; on 1M
// documents that preparation took over 80% of the join. This matcher needs neither:
//
//  1. The global order (Lemma 4 allows any fixed total order) is the hash order the documents are
//     stored in, except that signatures frequent in a sample of the documents come last, in
//     ascending sample count (FrequentSignatures), so that a signature shared by many documents
//     rarely lands in a prefix. A document's order is its stored order with those moved to the end.
//  2. Every document lists only its prefix (Lemma 5 with the smallest requirement of any partner,
//     req(x + lo(x))): a walk over its first signatures, about (1 - tau) of its mass. Each listed
//     signature carries the document's rank (length order) and its suffix mass.
//  3. The entries are sorted by (hash, rank): a group of equal hashes lists the documents that hold
//     the signature in their prefix, shortest first. Within a group, a document A pairs with the
//     earlier entries B while |B| >= lo(|A|) (Lemma 3: the scan stops at the first shorter one:
//     the length partition bound), and a pair is a candidate when
//         min(suf_A(s), suf_B(s)) >= req(|A| + |B|).
//     Proof that no result is lost: let s* be the first common signature of a result pair in the
//     global order. By Lemma 4 both suffix masses at s* are at least o >= req(|A| + |B|) >=
//     req(|A| + lo(|A|)), req(|B| + lo(|B|)) (Lemma 2, lo(x) <= x and |A|,|B| >= both lo's),
//     so s* is in both prefixes, the pair shares s*'s group and passes the test there.
//  4. Candidates (a pair may pass in several groups) are sorted and made unique, and each is
//     verified by merging the two hash-sorted documents with Lemma 6's cut-off; the similarity of
//     a result is computed exactly as similarity() does.
#include <algorithm>
#include <atomic>

#include "huge_pages.hpp"
#include "join_bounds.hpp"
#include "join_internal.hpp"

namespace spotsigs::join_detail {

namespace {

// The entries are bucketed by their hash's top kBucketBits bits, the candidates by the shorter
// document's rank into kPartitions rank ranges; documents are listed in kListChunks ranges.
constexpr unsigned kBucketBits = 13;
constexpr size_t kBuckets = size_t(1) << kBucketBits;
constexpr size_t kPartitions = 64;
constexpr size_t kListChunks = 64;

// One prefix signature of a document: its hash, the document's rank and the suffix mass there.
struct PrefixEntry {
    uint64_t hash;
    uint32_t rank;
    uint32_t suf;
};

}  // namespace

FrequentSignatures::FrequentSignatures(const Collection& docs, size_t sample_docs, uint32_t min_count) {
    const size_t n = docs.size();
    if (n == 0) return;
    const size_t step = std::max<size_t>(1, n / std::max<size_t>(1, sample_docs));
    // Count the sample's hashes in an open-addressing table (at most half full).
    uint64_t occ = 0;
    for (size_t d = 0; d < n; d += step) occ += docs.doc(d).size;
    size_t cap = 1024;
    while (cap < 2 * occ) cap *= 2;
    std::vector<Slot> table;
    reserve_huge(table, cap);
    table.assign(cap, Slot{0, 0});  // here `order` holds the count, 0 = empty
    const size_t mask = cap - 1;
    for (size_t d = 0; d < n; d += step) {
        MultisetView v = docs.doc(d);
        for (uint32_t i = 0; i < v.size; ++i) {
            size_t k = dictionary_mix(v.hashes[i]) & mask;
            while (table[k].order != 0 && table[k].hash != v.hashes[i]) k = (k + 1) & mask;
            table[k].hash = v.hashes[i];
            ++table[k].order;
        }
    }
    // The frequent ones in ascending (count, hash): their place in the global order.
    std::vector<std::pair<uint32_t, uint64_t>> frequent;
    for (const Slot& t : table)
        if (t.order >= min_count) frequent.emplace_back(t.order, t.hash);
    std::sort(frequent.begin(), frequent.end());
    size_t fcap = 64;
    while (fcap < 2 * frequent.size()) fcap *= 2;
    slots_.assign(fcap, Slot{0, kNone});
    mask_ = fcap - 1;
    for (uint32_t r = 0; r < frequent.size(); ++r) {
        size_t k = dictionary_mix(frequent[r].second) & mask_;
        while (slots_[k].order != kNone) k = (k + 1) & mask_;
        slots_[k] = Slot{frequent[r].second, r};
    }
    count_ = frequent.size();
}

uint32_t FrequentSignatures::order_of(uint64_t hash) const noexcept {
    if (count_ == 0) return kNone;
    size_t k = dictionary_mix(hash) & mask_;
    while (slots_[k].order != kNone) {
        if (slots_[k].hash == hash) return slots_[k].order;
        k = (k + 1) & mask_;
    }
    return kNone;
}


namespace {

// Everything the workers of one group join share (read-only while they run).
struct GroupJob {
    const Collection* docs;
    std::vector<uint32_t> orig;     // collection index by rank (length, then collection index)
    std::vector<uint32_t> len;      // length by rank
    std::vector<uint32_t> rank_of;  // rank by collection index (UINT32_MAX: empty document)
    const FrequentSignatures* frequent;
    const RequiredOverlap* req;
    double tau;
};

// The bucket of an entry: its hash's top bits (a group of equal hashes is never split).
inline size_t bucket_of(uint64_t hash) noexcept { return static_cast<size_t>(hash >> (64 - kBucketBits)); }

// An upper bound on how many prefix entries a document of length x with size distinct
// signatures lists: each listed one has suffix mass >= need and mass >= 1.
inline uint64_t prefix_bound(uint64_t x, uint32_t size, uint64_t need) noexcept {
    return need > x ? 0 : std::min<uint64_t>(size, x - need + 1);
}

// Appends document d's prefix entries (global order: stored hash order, frequent ones last).
void list_prefix(const GroupJob& job, uint32_t d, std::vector<PrefixEntry>& out,
                 std::vector<uint64_t>& stash) {
    const MultisetView v = job.docs->doc(d);
    const uint32_t r = job.rank_of[d];
    const uint64_t x = v.length;
    const uint64_t need = (*job.req)(x + min_partner_length(x, job.tau));
    uint64_t suf = x;
    stash.clear();
    for (uint32_t i = 0; i < v.size; ++i) {
        const uint32_t fo = job.frequent->order_of(v.hashes[i]);
        if (fo != FrequentSignatures::kNone) {
            stash.push_back(static_cast<uint64_t>(fo) << 32 | i);
            continue;
        }
        if (suf < need) return;  // every later signature has less mass after it
        out.push_back(PrefixEntry{v.hashes[i], r, static_cast<uint32_t>(suf)});
        suf -= v.freqs[i];
    }
    // The whole non-frequent part was in the prefix: go on with the frequent ones, in order.
    std::sort(stash.begin(), stash.end());
    for (uint64_t s : stash) {
        if (suf < need) return;
        const uint32_t i = static_cast<uint32_t>(s);
        out.push_back(PrefixEntry{v.hashes[i], r, static_cast<uint32_t>(suf)});
        suf -= v.freqs[i];
    }
}

// The overlap of two documents, or some value below t once Lemma 6 shows it cannot reach t.
uint64_t verify_overlap(const MultisetView& a, const MultisetView& b, uint64_t t) noexcept {
    uint64_t o = 0, ra = a.length, rb = b.length;
    uint32_t i = 0, j = 0;
    while (i < a.size && j < b.size) {
        if (o + std::min(ra, rb) < t) return o;
        const uint64_t x = a.hashes[i], y = b.hashes[j];
        if (x < y) {
            ra -= a.freqs[i++];
        } else if (y < x) {
            rb -= b.freqs[j++];
        } else {
            const uint32_t fa = a.freqs[i++], fb = b.freqs[j++];
            o += std::min(fa, fb);
            ra -= fa;
            rb -= fb;
        }
    }
    return o;
}

// Ranks the non-empty documents by (length, collection index) into job.orig/len/rank_of.
void rank_documents(GroupJob& job, MemoryBudget& budget) {
    const Collection& docs = *job.docs;
    const size_t total = docs.size();
    budget.charge(total * (3 * sizeof(uint32_t) + sizeof(uint64_t)), "the document ranks");
    std::vector<uint64_t> key;  // length << 32 | collection index
    reserve_huge(key, total);
    for (size_t d = 0; d < total; ++d) {
        const uint64_t x = docs.doc(d).length;
        if (x != 0) key.push_back(x << 32 | d);
    }
    std::sort(key.begin(), key.end());
    const size_t n = key.size();
    reserve_huge(job.orig, n);
    reserve_huge(job.len, n);
    reserve_huge(job.rank_of, total);
    job.orig.resize(n);
    job.len.resize(n);
    job.rank_of.assign(total, UINT32_MAX);
    for (size_t r = 0; r < n; ++r) {
        job.orig[r] = static_cast<uint32_t>(key[r]);
        job.len[r] = static_cast<uint32_t>(key[r] >> 32);
        job.rank_of[job.orig[r]] = static_cast<uint32_t>(r);
    }
    budget.release(total * sizeof(uint64_t));
}

// The prefix entries of every document, bucketed by hash and each bucket sorted by (hash, rank);
// start[b] is where bucket b begins.
std::vector<PrefixEntry> list_and_sort(const GroupJob& job, int threads, MemoryBudget& budget,
                                       const CancelToken* cancel, std::vector<uint64_t>& start) {
    const size_t total = job.docs->size();
    const size_t chunks = std::min(kListChunks, std::max<size_t>(1, total));
    auto chunk_begin = [&](size_t c) { return total * c / chunks; };
    // Each range of documents lists into its own array (reserved at its upper bound) and counts
    // its entries per bucket.
    std::vector<std::vector<PrefixEntry>> part(chunks);
    std::vector<uint64_t> hist(chunks * kBuckets, 0);
    std::vector<uint64_t> reserved(chunks, 0);
    for (size_t c = 0; c < chunks; ++c)
        for (size_t d = chunk_begin(c); d < chunk_begin(c + 1); ++d) {
            const MultisetView v = job.docs->doc(d);
            if (v.empty()) continue;
            reserved[c] += prefix_bound(v.length, v.size, (*job.req)(v.length + min_partner_length(v.length, job.tau)));
        }
    uint64_t bound = 0;
    for (uint64_t x : reserved) bound += x;
    budget.charge(bound * sizeof(PrefixEntry) + hist.size() * sizeof(uint64_t), "the prefix entries");
    run_workers(threads, chunks, 1, [&](int, size_t c0, size_t c1) {
        std::vector<uint64_t> stash;
        for (size_t c = c0; c < c1; ++c) {
            if (cancel != nullptr && cancel->stopped()) return;
            std::vector<PrefixEntry>& out = part[c];
            reserve_huge(out, reserved[c]);
            for (size_t d = chunk_begin(c); d < chunk_begin(c + 1); ++d)
                if (job.rank_of[d] != UINT32_MAX) list_prefix(job, static_cast<uint32_t>(d), out, stash);
            uint64_t* h = &hist[c * kBuckets];
            for (const PrefixEntry& e : out) ++h[bucket_of(e.hash)];
        }
    });
    throw_if_canceled(cancel);
    // Bucket-major offsets: bucket b holds chunk 0's entries of b, then chunk 1's, ...
    start.assign(kBuckets + 1, 0);
    uint64_t listed = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
        start[b] = listed;
        for (size_t c = 0; c < chunks; ++c) {
            const uint64_t k = hist[c * kBuckets + b];
            hist[c * kBuckets + b] = listed;
            listed += k;
        }
    }
    start[kBuckets] = listed;
    budget.charge(listed * sizeof(PrefixEntry), "sorting the prefix entries");
    std::vector<PrefixEntry> sorted;
    reserve_huge(sorted, listed);
    sorted.resize(listed);
    run_workers(threads, chunks, 1, [&](int, size_t c0, size_t c1) {
        for (size_t c = c0; c < c1; ++c) {
            uint64_t* at = &hist[c * kBuckets];
            for (const PrefixEntry& e : part[c]) sorted[at[bucket_of(e.hash)]++] = e;
            std::vector<PrefixEntry>().swap(part[c]);
        }
    });
    budget.release(bound * sizeof(PrefixEntry) + hist.size() * sizeof(uint64_t));
    throw_if_canceled(cancel);
    run_workers(threads, kBuckets, 16, [&](int, size_t b0, size_t b1) {
        if (cancel != nullptr && cancel->stopped()) return;
        std::sort(sorted.begin() + static_cast<long>(start[b0]), sorted.begin() + static_cast<long>(start[b1]),
                  [](const PrefixEntry& x, const PrefixEntry& y) {
                      return x.hash != y.hash ? x.hash < y.hash : x.rank < y.rank;
                  });
    });
    throw_if_canceled(cancel);
    return sorted;
}

}  // namespace

bool group_self_join(const Collection& docs, const JoinOptions& opt, double max_candidates_per_doc,
                     std::vector<JoinPair>& result) {
    MemoryBudget budget(opt.memory_limit);
    const int threads = opt.threads;
    GroupJob job;
    job.docs = &docs;
    job.tau = opt.tau;
    rank_documents(job, budget);
    const size_t n = job.orig.size();
    const uint64_t max_len = n == 0 ? 0 : job.len[n - 1];
    const uint64_t table = std::min<uint64_t>(2 * max_len + 2, uint64_t(1) << 20);
    budget.charge(table * sizeof(uint32_t), "the threshold table");
    RequiredOverlap req(opt.tau, table);
    job.req = &req;
    throw_if_canceled(opt.cancel);
    FrequentSignatures frequent(docs, kFrequentSample, kFrequentMinCount);
    budget.charge(frequent.memory_bytes(), "the frequent signatures");
    job.frequent = &frequent;

    std::vector<uint64_t> start;
    std::vector<PrefixEntry> entries = list_and_sort(job, threads, budget, opt.cancel, start);

    // 3. Candidates from each group, on the workers by buckets (a group never spans two), sent
    // to the partition of the shorter document's rank.
    const size_t per_part = std::max<size_t>(1, (n + kPartitions - 1) / kPartitions);
    std::vector<std::vector<std::vector<uint64_t>>> cands(static_cast<size_t>(threads),
                                                          std::vector<std::vector<uint64_t>>(kPartitions));
    WorkerGuard guard(opt, budget);
    std::atomic<uint64_t> emitted{0};
    const double cap = max_candidates_per_doc * static_cast<double>(n);
    std::atomic<bool> too_many{false};
    run_workers(threads, kBuckets, 16, [&](int w, size_t b0, size_t b1) {
        if (guard.stopped() || too_many.load(std::memory_order_relaxed)) return;
        std::vector<std::vector<uint64_t>>& out = cands[static_cast<size_t>(w)];
        uint64_t k = 0;
        size_t group = start[b0];
        for (size_t i = start[b0]; i < start[b1]; ++i) {
            const PrefixEntry a = entries[i];
            if (i == start[b0] || entries[i - 1].hash != a.hash) group = i;
            const uint64_t la = job.len[a.rank];
            const uint64_t lo = min_partner_length(la, job.tau);
            for (size_t j = i; j > group; --j) {
                const PrefixEntry& b = entries[j - 1];
                const uint64_t lb = job.len[b.rank];
                if (lb < lo) break;  // shorter ones follow: outside a's length partitions
                if (std::min(a.suf, b.suf) >= req(la + lb)) {
                    out[b.rank / per_part].push_back(static_cast<uint64_t>(b.rank) << 32 | a.rank);
                    ++k;
                }
            }
        }
        // Candidate pairs count against the memory limit like result pairs (8 bytes each).
        guard.add_pairs((k + 1) / 2);
        if (static_cast<double>(emitted.fetch_add(k, std::memory_order_relaxed) + k) > cap) too_many.store(true);
    });
    throw_if_canceled(opt.cancel);
    if (too_many.load()) return false;
    budget.release(entries.size() * sizeof(PrefixEntry));
    std::vector<PrefixEntry>().swap(entries);

    // 4. Each partition's candidates made unique and verified, on the workers.
    std::vector<std::vector<JoinPair>> found(kPartitions);
    run_workers(threads, kPartitions, 1, [&](int, size_t p0, size_t p1) {
        std::vector<uint32_t> at;     // counting sort by the shorter document's rank
        std::vector<uint32_t> longer; // the partners, grouped by that rank
        for (size_t p = p0; p < p1; ++p) {
            if (guard.stopped()) return;
            const size_t r0 = std::min(n, p * per_part), r1 = std::min(n, (p + 1) * per_part);
            at.assign(r1 - r0 + 1, 0);
            size_t total = 0;
            for (const auto& w : cands) {
                for (uint64_t c : w[p]) ++at[(c >> 32) - r0 + 1];
                total += w[p].size();
            }
            for (size_t k = 1; k < at.size(); ++k) at[k] += at[k - 1];
            longer.resize(total);
            for (auto& w : cands) {
                for (uint64_t c : w[p]) longer[at[(c >> 32) - r0]++] = static_cast<uint32_t>(c);
                std::vector<uint64_t>().swap(w[p]);
            }
            // at[k] is now where the partners of rank r0 + k end (and those of r0 + k + 1 begin).
            std::vector<JoinPair>& out = found[p];
            for (size_t rb = r0, begin = 0; rb < r1; begin = at[rb - r0], ++rb) {
                if ((rb - r0) % 256 == 0 && guard.stopped()) return;
                uint32_t* first = longer.data() + begin;
                uint32_t* last = longer.data() + at[rb - r0];
                if (first == last) continue;
                std::sort(first, last);
                last = std::unique(first, last);
                const uint32_t db = job.orig[rb];
                const MultisetView b = docs.doc(db);
                for (const uint32_t* ra = first; ra != last; ++ra) {
                    const uint32_t da = job.orig[*ra];
                    const MultisetView a = docs.doc(da);
                    const uint64_t t = req(a.length + b.length);
                    const uint64_t o = verify_overlap(a, b, t);
                    if (o < t) continue;
                    // Exactly similarity()'s arithmetic.
                    const double sim = static_cast<double>(o) / static_cast<double>(a.length + b.length - o);
                    out.push_back(JoinPair{std::min(da, db), std::max(da, db), sim});
                }
            }
            guard.add_pairs(out.size());
            guard.progress(r1 - r0);
        }
    });
    throw_if_canceled(opt.cancel);
    guard.progress(docs.size() - n);  // the empty documents, which pair with nothing
    result = merge_sorted(found);
    return true;
}

}  // namespace spotsigs::join_detail
