// The prefix-group self-join: the default ('partitioned') matcher of a self-join.
//
// The index-based matcher (join_probe.cpp) orders signatures by exact document frequency, which
// costs a dictionary of every distinct signature and a re-coded copy of every document, work
// proportional to all signature occurrences before any pair is found. This matcher needs neither:
//
//  1. The global order (Lemma 4 allows any fixed total order) is the hash order the documents are
//     stored in, except that signatures frequent in a sample of the documents come last, in
//     ascending sample count (FrequentSignatures), so that a signature shared by many documents
//     rarely lands in a prefix. A document's order is its stored order with those moved to the end.
//  2. Every document lists only its prefix (join_prefix.cpp; while the rows are read when they come
//     through a ReadPipeline) (Lemma 5 with the smallest requirement of any partner,
//     req(x + lo(x))): a walk over its first signatures, about (1 - tau) of its mass. Each listed
//     signature carries the document's collection index and its suffix mass (as a slack above
//     the listing threshold, which saturates: the mass read back, m_A(s), is never below the
//     true suffix mass suf_A(s); join_prefix.hpp PrefixEntry).
//  3. The entries, kept in coarse buckets by the top bits of their mixed hash, are sorted bucket
//     by bucket by their key, the next 24 mixed bits (each bucket small enough for the cache, split
//     by up to 14 bits of the key into runs of about two entries, then each run sorted; entries
//     whose key no other entry of the bucket has are mostly dropped first, see sort_bucket): a
//     group of equal keys lists the documents that hold the signature in their prefix, put
//     shortest first (by length rank). Two signatures whose 32 mixed bits agree (among n distinct
//     prefix signatures about n^2 / 2^33 pairs are expected) make one group; every step below stays
//     exact, since it then sees every mark it would have seen in the two groups and more (so
//     counts can only grow), and a document that meets itself in such a group is skipped.
//     Within a group, a document A pairs with the
//     earlier entries B while |B| >= lo(|A|) (Lemma 3: the scan stops at the first shorter one:
//     the length partition bound). Every such pair is written down once per group it shares,
//     marked "passed" when
//         min(m_A(s), m_B(s)) >= req(|A| + |B|)
//     holds there, and "uncounted" when both documents hold s more than once.
//     Proof that no result is lost: let s* be the first common signature of a result pair in the
//     global order. By Lemma 4 both suffix masses at s* are at least o >= req(|A| + |B|) >=
//     req(|A| + lo(|A|)), req(|B| + lo(|B|)) (Lemma 2, lo(x) <= x and |A|,|B| >= both lo's),
//     so s* is in both prefixes, the pair shares s*'s group and is marked passed there (m >= suf).
//  4. The marks of a pair are gathered (a sort); a pair is verified only if one of them passed
//     and, unless one is uncounted, the number of its marks, at least the C of Lemma 7, gives
//     C + max(need_A, need_B) - 1 >= req(|A| + |B|). No bound on the deficit at the last shared
//     signature may be applied here: a group of two signatures can add a mark with a deficit that
//     no shared signature has, so such a bound would drop results (the unit test
//     JoinGroups.SignaturesSharingAKeyOnlyAddCandidates makes such groups on purpose). Each pair
//     left is verified by merging the two hash-sorted documents with Lemma 6's cut-off; the
//     similarity of a result is computed exactly as similarity() does.
#include <algorithm>
#include <atomic>
#include <functional>

#include "core/common/error.hpp"
#include "core/join/join_bounds.hpp"
#include "core/join/join_internal.hpp"
#include "core/join/join_prefix.hpp"
#include "core/join/pair_sink.hpp"
#include "core/memory/block_lists.hpp"
#include "core/memory/huge_pages.hpp"

namespace spotsigs::join_detail {

namespace {

// Each coarse bucket of entries is split by up to kMaxFineBits more bits of the mixed hash before the
// sort, enough for runs of about two entries even in the largest buckets, so that the sort is
// mostly this counting pass; the candidates go to kPartitions ranges of the shorter document's rank.
constexpr unsigned kMaxFineBits = 14;
// How many chunks ahead the singleton filter fetches a bucket's entries (within the next block
// at the latest).
constexpr uint32_t kFetchChunks = 4;
static_assert(kFetchChunks <= PrefixLists::Chunks::kBlockEntries, "the look-ahead stays within one block");
constexpr size_t kPartitions = 64;

// A pair's entry in one group is written as
//     (shorter rank) << 32 | (longer rank) << kMarkBits | short << 1 | uncounted,
// where short is set unless min(m_A(s), m_B(s)) >= req(|A| + |B|) (Lemma 4 admits the pair at
// s), and uncounted when both documents hold s more than once. The ranks must therefore stay
// below 2^30; past that the index matcher runs.
constexpr uint32_t kUncounted = 1;
constexpr uint32_t kShort = 2;
constexpr unsigned kMarkBits = 2;
constexpr size_t kMaxRanks = size_t(1) << (32 - kMarkBits);

}  // namespace

FrequentSignatures::FrequentSignatures(const Collection& docs, size_t sample_docs, uint32_t min_count) {
    const size_t n = docs.size();
    if (n == 0) return;
    const size_t step = std::max<size_t>(1, n / std::max<size_t>(1, sample_docs));
    // Counting every sampled hash in a table keyed by hash needs a table of every sampled
    // signature (8,192 documents of about 88 signatures: 32 MB, past the cache), whose misses
    // would dominate a join of a small collection. Two passes do the same in a few MB:
    //  1. keyless counters indexed by the hash's mixed bits, saturating at 255: a counter is at
    //     least the count of every hash that maps to it, so a hash counted min_count times lands
    //     on a counter of at least min(min_count, 255);
    //  2. only the hashes on such counters (the frequent ones and few colliding others) are
    //     counted exactly in a keyed table, which therefore yields exactly the counts a table of
    //     every sampled hash would.
    uint64_t occ = 0;
    for (size_t d = 0; d < n; d += step) occ += docs.doc(d).size;
    size_t cells = 1024;
    while (cells < 4 * occ) cells *= 2;  // about one hash per 4 counters: few collisions
    HugeVector<uint8_t> counter;
    reserve_huge(counter, cells);
    counter.assign(cells, 0);
    const size_t cmask = cells - 1;
    for (size_t d = 0; d < n; d += step) {
        MultisetView v = docs.doc(d);
        for (uint32_t i = 0; i < v.size; ++i) {
            uint8_t& c = counter[dictionary_mix(v.hashes[i]) & cmask];
            c = static_cast<uint8_t>(c + (c != 255));
        }
    }
    const uint8_t pass = static_cast<uint8_t>(std::min<uint32_t>(std::max<uint32_t>(min_count, 1), 255));
    HugeVector<uint64_t> maybe;  // the hashes on a counter of at least `pass`, once per occurrence
    for (size_t d = 0; d < n; d += step) {
        MultisetView v = docs.doc(d);
        for (uint32_t i = 0; i < v.size; ++i)
            if (counter[dictionary_mix(v.hashes[i]) & cmask] >= pass) maybe.push_back(v.hashes[i]);
    }
    HugeVector<uint8_t>().swap(counter);
    size_t cap = 64;
    while (cap < 2 * maybe.size()) cap *= 2;
    HugeVector<Slot> table(cap, Slot{0, 0});  // here `order` holds the count, 0 = empty
    const size_t mask = cap - 1;
    for (uint64_t h : maybe) {
        size_t k = dictionary_mix(h) & mask;
        while (table[k].order != 0 && table[k].hash != h) k = (k + 1) & mask;
        table[k].hash = h;
        ++table[k].order;
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
        const size_t bit = dictionary_mix(frequent[r].second) >> (64 - kFilterLog2);
        filter_[bit / 64] |= uint64_t(1) << (bit % 64);
    }
    count_ = frequent.size();
}

namespace {

// Everything the workers of one group join share (read-only while they run).
struct GroupJob {
    const Collection* docs;
    HugeVector<uint32_t> orig;  // collection index by rank (length, then collection index)
    HugeVector<uint32_t> len;   // length by rank
    // By collection index: second << 63 | rank << 32 | length (0: an empty document), second set
    // for a document of the second side (JoinOptions::sides; ranks stay below 2^30).
    HugeVector<uint64_t> rank_len;
    // Bit (side of A) << 1 | (side of B) is set when the pairs of such documents are wanted (0:
    // the first side, 1: the second; every pair without JoinOptions::sides).
    uint32_t wanted = 0b1111;
    const RequiredOverlap* req;
    double tau;
    std::vector<uint32_t> lo;    // min_partner_length by length, up to the longest document
    std::vector<uint32_t> need;  // need(x) = req(x + lo(x)) by length, over the same range

    // lo(x): the shortest partner length of a document of length x (Lemma 3).
    uint64_t lo_of(uint64_t x) const noexcept { return x < lo.size() ? lo[x] : min_partner_length(x, tau); }
    // need(x): the suffix mass down to which a document of length x lists its prefix (Lemma 5).
    uint64_t need_of(uint64_t x) const noexcept { return x < need.size() ? need[x] : (*req)(x + lo_of(x)); }
};

// The overlap of two documents whose frequency arrays are WA and WB bytes wide, or some value
// below t once Lemma 6 shows it cannot reach t. One instance per pair of widths, so that the
// merge reads each frequency without a switch on its width (FreqView's reader branches on the
// width at every read, in the innermost loop of the verification).
template <unsigned WA, unsigned WB>
uint64_t verify_overlap_widths(const MultisetView& a, const MultisetView& b, uint64_t t) noexcept {
    uint64_t o = 0, ra = a.length, rb = b.length;
    uint32_t i = 0, j = 0;
    const uint32_t na = a.size, nb = b.size;
    const uint64_t* ha = a.hashes;
    const uint64_t* hb = b.hashes;
    const unsigned char* fa_data = a.freqs.data;
    const unsigned char* fb_data = b.freqs.data;
    while (i < na && j < nb) {
        if (o + std::min(ra, rb) < t) return o;
        const uint64_t x = ha[i], y = hb[j];
        if (x < y) {
            ra -= freq_at<WA>(fa_data, i++);
        } else if (y < x) {
            rb -= freq_at<WB>(fb_data, j++);
        } else {
            const uint32_t fa = freq_at<WA>(fa_data, i++), fb = freq_at<WB>(fb_data, j++);
            o += std::min(fa, fb);
            ra -= fa;
            rb -= fb;
        }
    }
    return o;
}

// verify_overlap_widths() for a's width WA and b's, whichever it is.
template <unsigned WA>
uint64_t verify_overlap_b(const MultisetView& a, const MultisetView& b, uint64_t t) noexcept {
    switch (b.freqs.width) {
        case 0: return verify_overlap_widths<WA, 0>(a, b, t);
        case 1: return verify_overlap_widths<WA, 1>(a, b, t);
        case 2: return verify_overlap_widths<WA, 2>(a, b, t);
        default: return verify_overlap_widths<WA, 4>(a, b, t);
    }
}

// The overlap of two documents, or some value below t once Lemma 6 shows it cannot reach t.
uint64_t verify_overlap(const MultisetView& a, const MultisetView& b, uint64_t t) noexcept {
    switch (a.freqs.width) {
        case 0: return verify_overlap_b<0>(a, b, t);
        case 1: return verify_overlap_b<1>(a, b, t);
        case 2: return verify_overlap_b<2>(a, b, t);
        default: return verify_overlap_b<4>(a, b, t);
    }
}

// verify_overlap() for two documents whose frequencies are all 1 (both stored without a
// frequency array): the unseen masses are then the counts of unseen signatures, and the merge
// advances without data-dependent branches (a mispredicted branch per step is most of the cost
// of merging two unrelated hash lists).
uint64_t verify_overlap_sets(const MultisetView& a, const MultisetView& b, uint64_t t) noexcept {
    uint64_t o = 0;
    uint32_t i = 0, j = 0;
    const uint32_t na = a.size, nb = b.size;
    while (i < na && j < nb) {
        if (o + std::min(na - i, nb - j) < t) return o;
        const uint64_t x = a.hashes[i], y = b.hashes[j];
        o += x == y;
        i += x <= y;
        j += y <= x;
    }
    return o;
}

// Sorts the marks [first, last) of one shorter document (partner rank << kMarkBits | marks)
// ascending, so that each partner's marks are adjacent; tmp is scratch. Short lists go to
// std::sort (insertion sort); longer ones, by a byte-wise radix sort of their distance from the
// smallest, over only the bytes that the largest distance uses. The long lists come from clusters
// of near duplicates, whose pairs share most prefix signatures (a mark each), and whose members
// have ranks close together (one or two bytes of distance); there std::sort's comparison branches
// are mispredicted about half the time. Such lists hold about half of all marks of the textcorpus
// documents at tau 0.44.
void sort_marks(uint32_t* first, uint32_t* last, std::vector<uint32_t>& tmp) {
    const size_t n = static_cast<size_t>(last - first);
    if (n <= 64) {
        std::sort(first, last);
        return;
    }
    uint32_t lo = first[0], hi = first[0];
    for (size_t i = 1; i < n; ++i) {
        lo = std::min(lo, first[i]);
        hi = std::max(hi, first[i]);
    }
    const uint32_t span = hi - lo;
    tmp.resize(n);
    uint32_t* src = first;
    uint32_t* dst = tmp.data();
    for (unsigned shift = 0; shift < 32 && (span >> shift) != 0; shift += 8) {
        uint32_t at[257] = {};
        for (size_t i = 0; i < n; ++i) ++at[((src[i] - lo) >> shift & 255) + 1];
        for (size_t d = 1; d <= 256; ++d) at[d] += at[d - 1];
        for (size_t i = 0; i < n; ++i) dst[at[(src[i] - lo) >> shift & 255]++] = src[i];
        std::swap(src, dst);
    }
    if (src != first) std::copy(src, src + n, first);
}

// A pair being verified: both documents' collection indexes and views.
struct Verify {
    uint32_t da, db;
    MultisetView a, b;
};
// How many pairs ahead of the one verified their documents are fetched.
constexpr size_t kAhead = 8;

// One worker's candidate pairs (shorter rank << 32 | longer rank), a list per partition.
using CandidateLists = BlockLists<uint64_t, kPartitions>;

// Calls f(c) for every candidate c of partition p in the workers' lists.
template <class F>
void for_each_candidate(const std::vector<CandidateLists>& cands, size_t p, F&& f) {
    for (const CandidateLists& w : cands)
        for (const auto* block : w.bucket(p))
            for (uint32_t i = 0; i < block->count; ++i) f(block->e[i]);
}

// The candidate partitions ordered by their estimated verification cost, highest first: the
// candidates times the mean length of the partition's shorter documents (plus a constant for the
// fixed cost of a pair). Taken in rank order, the workers could end far apart: the partition of
// the longest documents, or one of short documents that holds a large cluster of near duplicates,
// can carry a fifth or more of the verification, and either could come last.
std::vector<size_t> costliest_first(const GroupJob& job, const std::vector<CandidateLists>& cands, size_t per_part) {
    const size_t n = job.len.size();
    std::vector<double> cost(kPartitions, 0);
    for (size_t p = 0; p < kPartitions; ++p) {
        const size_t r0 = std::min(n, p * per_part), r1 = std::min(n, (p + 1) * per_part);
        if (r0 == r1) continue;
        uint64_t count = 0, mass = 0;
        for (const CandidateLists& w : cands)
            for (const auto* block : w.bucket(p)) count += block->count;
        for (size_t r = r0; r < r1; ++r) mass += job.len[r];
        cost[p] = static_cast<double>(count) * (static_cast<double>(mass) / static_cast<double>(r1 - r0) + 16.0);
    }
    std::vector<size_t> order(kPartitions);
    for (size_t p = 0; p < kPartitions; ++p) order[p] = p;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return cost[x] > cost[y]; });
    return order;
}

// Marks the documents of the second side in job.rank_len and sets job.wanted.
void mark_sides(GroupJob& job, const PairSides& sides) {
    const Collection& docs = *job.docs;
    for (size_t d = 0; d < docs.size(); ++d)
        if (job.rank_len[d] != 0 && !sides.first(sides.context, docs.id(d))) job.rank_len[d] |= uint64_t(1) << 63;
    job.wanted = sides.keep == PairSides::Keep::Across ? 0b0110 : 0b0111;
}

// Ranks the non-empty documents by (length, collection index) into job.orig/len/rank_len.
void rank_documents(GroupJob& job, MemoryBudget& budget) {
    const Collection& docs = *job.docs;
    const size_t total = docs.size();
    budget.charge(total * 4 * sizeof(uint32_t), "the document ranks");
    uint64_t max_len = 0;
    size_t n = 0;
    for (size_t d = 0; d < total; ++d) {
        const uint64_t x = docs.length(d);
        max_len = std::max(max_len, x);
        n += x != 0;
    }
    reserve_huge(job.orig, n);
    reserve_huge(job.len, n);
    reserve_huge(job.rank_len, total);
    job.orig.resize(n);
    job.len.resize(n);
    job.rank_len.assign(total, 0);
    if (max_len <= 4 * total + 1024) {
        // Lengths are small: a counting sort by length keeps each length's documents in
        // collection order, which is the (length, index) order.
        std::vector<uint32_t> at(max_len + 2, 0);
        for (size_t d = 0; d < total; ++d) ++at[docs.length(d) + 1];
        for (size_t x = 1; x < at.size(); ++x) at[x] += at[x - 1];
        const uint32_t empty = at[1];  // the empty documents come first: they get no rank
        for (size_t d = 0; d < total; ++d) {
            const uint64_t x = docs.length(d);
            if (x == 0) continue;
            const uint32_t r = at[x]++ - empty;
            job.orig[r] = static_cast<uint32_t>(d);
            job.len[r] = static_cast<uint32_t>(x);
            job.rank_len[d] = static_cast<uint64_t>(r) << 32 | x;
        }
        return;
    }
    budget.charge(n * sizeof(uint64_t), "sorting the document ranks");
    HugeVector<uint64_t> key;  // length << 32 | collection index
    reserve_huge(key, n);
    for (size_t d = 0; d < total; ++d) {
        const uint64_t x = docs.length(d);
        if (x != 0) key.push_back(x << 32 | d);
    }
    std::sort(key.begin(), key.end());
    for (size_t r = 0; r < n; ++r) {
        job.orig[r] = static_cast<uint32_t>(key[r]);
        job.len[r] = static_cast<uint32_t>(key[r] >> 32);
        job.rank_len[job.orig[r]] = static_cast<uint64_t>(r) << 32 | job.len[r];
    }
    budget.release(n * sizeof(uint64_t));
}

// One document of a group: its rank, length, suffix mass at the group's signature, whether it
// holds that signature more than once, and its side (GroupJob::rank_len).
struct Member {
    uint32_t rank;
    uint32_t len;
    uint32_t mass;
    bool several;
    uint8_t side;
};

// A worker's scratch for sorting one coarse bucket and pairing its groups.
struct SortScratch {
    std::vector<Member> members;
    HugeVector<PrefixEntry> gathered;
    HugeVector<PrefixEntry> sorted;
    HugeVector<uint64_t> at;      // where each fine bucket starts
    HugeVector<uint64_t> next;    // where its next entry goes
    std::vector<uint64_t> seen;   // the singleton filter's bitmaps: slots hit once,
    std::vector<uint64_t> twice;  // and slots hit again
    uint64_t filtered = 0;        // entries that went through the filter,
    uint64_t kept = 0;            // and those it kept

    // Whether to filter the next bucket: for the first 4,096 entries, then while the filter has
    // dropped more than half of them (where most signatures repeat it costs a pass and drops little).
    bool filtering() const noexcept { return filtered < 4096 || 2 * kept < filtered; }
};

// Puts the n entries of e, already placed by their fine bucket (fine buckets; bucket f from
// at[f] to at[f + 1]), in key order; the entries of one key in any order. An entry never leaves
// its fine bucket (the earlier ones hold smaller keys), and most fine buckets hold one to three
// entries: one insertion sort over all of them sorts them without a branch per fine bucket.
// Insertion sort is quadratic in a crowded fine bucket (keys made to share their top bits): past
// 8 moves an entry it gives way to a sort per fine bucket.
void sort_within_fine(PrefixEntry* e, size_t n, const uint64_t* at, size_t fine) {
    const size_t budget = 8 * n + 64;
    size_t moves = 0;
    for (size_t k = 1; k < n; ++k) {
        const PrefixEntry x = e[k];
        size_t j = k;
        for (; j > 0 && x.key() < e[j - 1].key(); --j) e[j] = e[j - 1];
        e[j] = x;
        moves += k - j;
        if (moves > budget) {
            auto by_key = [](const PrefixEntry& a, const PrefixEntry& b) { return a.key() < b.key(); };
            for (size_t f = 0; f < fine; ++f) std::sort(e + at[f], e + at[f + 1], by_key);
            return;
        }
    }
}

// Copies the entries of coarse bucket c of lists into s.sorted ordered by key (the entries of one
// key in no particular order), leaving out (while filtering() holds) most entries whose key no
// other entry of the bucket has; returns the number of entries copied. Every entry whose key is
// shared is copied, so every group of two or more is whole. The kept entries' lines of rank_len
// (GroupJob::rank_len, which the pairing reads next) are fetched on the way.
size_t sort_bucket(const PrefixLists& lists, size_t c, const uint64_t* rank_len, SortScratch& s) {
    const size_t all = lists.bucket_slots(c);
    s.gathered.resize(all);
    size_t n = 0;
    if (s.filtering()) {
        // Most entries of a corpus whose signatures rarely repeat have a key no other entry
        // has: a group of one, which pairs with nothing (nine in ten of the textcorpus entries at
        // tau 0.9). Two bitmaps over the key's low bits (16 bits per slot) find the bits hit more
        // than once, reading only the keys; only the entries on those are kept, which every entry
        // whose key another entry shares is. (Empty slots count as hits of key 0, which only keeps
        // more.) With 16 bits a slot, about one lone key in 16 shares a bit with another and is
        // kept, while the two bitmaps of a bucket of the cache's size stay in the second-level
        // cache.
        unsigned lb = 9;
        while (lb < 24 && (size_t(1) << lb) < 16 * all) ++lb;  // the key has 24 bits
        const uint32_t mask = static_cast<uint32_t>((size_t(1) << lb) - 1);
        s.seen.assign(size_t(1) << (lb - 6), 0);
        s.twice.assign(size_t(1) << (lb - 6), 0);
        uint64_t* seen = s.seen.data();
        uint64_t* twice = s.twice.data();
        // The entries were written with streaming stores and are read here for the first time,
        // from memory, in 8 KB blocks strewn over the slabs: both lines of the chunk kFetchChunks
        // ahead are fetched while these are counted (the second pass, which reads the documents'
        // line too, then finds them in the cache).
        const std::vector<PrefixLists::Block*>& blocks = lists.bucket(c);
        for (size_t bi = 0; bi < blocks.size(); ++bi) {
            const auto* block = blocks[bi];
            const auto* next = bi + 1 < blocks.size() ? blocks[bi + 1] : block;
            for (uint32_t k = 0; k < block->count; ++k) {
                // The chunk kFetchChunks on, in the next block past this one's end.
                const uint32_t a = k + kFetchChunks;
                const PrefixChunk* ahead = a < block->count ? &block->e[a] : &next->e[a - block->count];
                __builtin_prefetch(ahead->word);
                __builtin_prefetch(ahead->doc);
                for (uint32_t j = 0; j < PrefixChunk::kSlots; ++j) {
                    const uint32_t x = PrefixEntry::key_of_word(block->e[k].word[j]) & mask;
                    const uint64_t bit = uint64_t(1) << (x & 63);
                    twice[x >> 6] |= seen[x >> 6] & bit;
                    seen[x >> 6] |= bit;
                }
            }
        }
        for (const auto* block : lists.bucket(c))
            for (uint32_t k = 0; k < block->count; ++k) {
                const PrefixChunk& ch = block->e[k];
                for (uint32_t j = 0; j < PrefixChunk::kSlots; ++j) {
                    const uint32_t x = PrefixEntry::key_of_word(ch.word[j]) & mask;
                    s.gathered[n] = PrefixEntry{ch.word[j], ch.doc[j]};
                    n += ((twice[x >> 6] >> (x & 63)) & 1) & (ch.doc[j] != PrefixChunk::kEmpty);
                }
            }
        s.filtered += all;
        s.kept += n;
    } else {
        for (const auto* block : lists.bucket(c))
            for (uint32_t k = 0; k < block->count; ++k) {
                const PrefixChunk& ch = block->e[k];
                for (uint32_t j = 0; j < PrefixChunk::kSlots; ++j) {
                    s.gathered[n] = PrefixEntry{ch.word[j], ch.doc[j]};
                    n += ch.doc[j] != PrefixChunk::kEmpty;
                }
            }
    }
    unsigned bits = 0;
    while (bits < kMaxFineBits && (size_t(2) << bits) < n) ++bits;
    const size_t fine = size_t(1) << bits;
    // The fine bucket: the word's top `bits` bits (those of the key).
    auto fine_of = [&](uint32_t word) { return static_cast<size_t>(bits == 0 ? 0 : word >> (32 - bits)); };
    s.sorted.resize(n);
    s.at.assign(fine + 1, 0);
    for (size_t k = 0; k < n; ++k) ++s.at[fine_of(s.gathered[k].word) + 1];
    for (size_t f = 1; f <= fine; ++f) s.at[f] += s.at[f - 1];
    s.next.assign(s.at.begin(), s.at.end() - 1);
    for (size_t k = 0; k < n; ++k) {
        // The pairing reads each kept entry's rank and length next: fetched while the bucket's
        // few thousand entries are placed, the lines are in the cache by then.
        __builtin_prefetch(rank_len + s.gathered[k].doc);
        s.sorted[s.next[fine_of(s.gathered[k].word)]++] = s.gathered[k];
    }
    sort_within_fine(s.sorted.data(), n, s.at.data(), fine);
    return n;
}

// The length tables of job for documents up to half of req's table: lo(x) and need(x).
void fill_length_tables(GroupJob& job, const RequiredOverlap& req, uint64_t table) {
    job.req = &req;
    job.lo.resize(table / 2);
    job.need.resize(table / 2);
    for (uint64_t x = 0; x < job.lo.size(); ++x) {
        job.lo[x] = static_cast<uint32_t>(x == 0 ? 0 : min_partner_length(x, job.tau));
        job.need[x] = static_cast<uint32_t>(x == 0 ? 0 : req(x + job.lo[x]));  // x + lo(x) < table
    }
}

// The candidate cap shared by the workers of step 3: candidates written down so far, and whether
// the matcher gives way to the index matcher (past the cap or the memory limit).
struct CandidateCap {
    double cap;                        // candidates allowed in all
    std::atomic<uint64_t> emitted{0};  // written down by finished buckets
    std::atomic<uint64_t> buckets_done{0};
    std::atomic<bool> too_many{false};

    explicit CandidateCap(double c) : cap(c) {}
    bool exceeded() const noexcept { return too_many.load(std::memory_order_relaxed); }
    // Within a bucket, after k more candidates: false once the cap is passed.
    bool room_for(uint64_t k) {
        if (static_cast<double>(emitted.load(std::memory_order_relaxed) + k) > cap) too_many.store(true);
        return !exceeded();
    }
    // Keeps the memory limit over a worker's candidate lists, which hold `charged` bytes against
    // it: charges the slabs they may take before the next call (kReserveBlocks more blocks);
    // false (and the matcher gives way) when those do not fit.
    bool reserve(const CandidateLists& lists, size_t& charged, WorkerGuard& guard) {
        const size_t want = lists.memory_bytes_after(kReserveBlocks);
        if (want > charged) {
            if (guard.add_candidate_bytes(want - charged)) {
                charged = want;
            } else {
                guard.release_candidate_bytes(want - charged);
                too_many.store(true);
            }
        }
        return !exceeded();
    }
    // Candidates written between two reserve() calls of a worker: they open at most one block per
    // partition (a block holds more), and seal() at most one more per partition after the last.
    static constexpr uint64_t kReserveEvery = 512;
    static constexpr size_t kReserveBlocks = 2 * kPartitions;
    static_assert(kReserveEvery < CandidateLists::kBlockEntries, "a block fills once between two reserves");
    // A bucket finished with k candidates.
    void finish_bucket(uint64_t k) {
        const uint64_t so_far = emitted.fetch_add(k, std::memory_order_relaxed) + k;
        if (static_cast<double>(so_far) > cap) too_many.store(true);
        // The buckets hold the entries by mixed hash, so each carries about its share of the
        // candidates: once 16 of the 256 project past the cap, the rest would too, and the index
        // matcher takes over now rather than after most of the work (which matcher runs never
        // changes the pairs).
        const uint64_t done = buckets_done.fetch_add(1, std::memory_order_relaxed) + 1;
        if (done >= 16 && static_cast<double>(so_far) * PrefixLists::kCoarse > cap * static_cast<double>(done))
            too_many.store(true);
    }
};

// Step 3 for one worker: sorts coarse buckets and writes the candidate pairs of their groups down,
// each into the partition of its shorter document's rank.
class GroupPairer {
public:
    // charged: the bytes the worker's lists (out) hold against the limit (CandidateCap::reserve).
    GroupPairer(const GroupJob& job, const RankDivider& part_of, uint64_t below, CandidateLists& out, size_t& charged,
                SortScratch& scratch, CandidateCap& cap, WorkerGuard& guard)
        : job_(job),
          part_of_(part_of),
          below_(below),
          out_(out),
          charged_(charged),
          s_(scratch),
          cap_(cap),
          guard_(guard) {}

    // Pairs the groups of coarse bucket c; false when the worker is to stop (cap or cancel).
    bool pair_bucket(const PrefixLists& lists, size_t c) {
        const size_t m = sort_bucket(lists, c, job_.rank_len.data(), s_);
        const PrefixEntry* entries = s_.sorted.data();
        k_ = 0;
        if (!cap_.reserve(out_, charged_, guard_)) return false;
        for (size_t g = 0; g < m;) {
            size_t h = g + 1;
            const uint32_t key = entries[g].key();
            while (h < m && entries[h].key() == key) ++h;
            const bool go_on = h - g == 1   ? true  // a signature in one prefix only: most of them
                               : h - g == 2 ? pair_two(entries[g], entries[g + 1])  // three in four groups
                                            : pair_group(entries + g, entries + h);
            if (!go_on) return false;
            g = h;
        }
        cap_.finish_bucket(k_);
        return true;
    }

private:
    // A group member: its rank, length, mass and side, from one read of rank_len.
    Member member(const PrefixEntry& pe) const noexcept {
        const uint64_t rl = job_.rank_len[pe.doc];
        const uint32_t len = static_cast<uint32_t>(rl);
        return Member{static_cast<uint32_t>(rl >> 32) & static_cast<uint32_t>(kMaxRanks - 1), len,
                      static_cast<uint32_t>(pe.mass(len, job_.need_of(len))), pe.several(),
                      static_cast<uint8_t>(rl >> 63)};
    }
    // Whether the caller wants the pair of a and b (JoinOptions::sides).
    bool wanted(const Member& a, const Member& b) const noexcept {
        return (job_.wanted >> (a.side << 1 | b.side) & 1) != 0;
    }
    // Writes the candidate of a and the shorter-ranked b (b.rank < a.rank) down, marked; false
    // when the worker is to stop. A large group can hold more candidates than the cap allows:
    // checked every 65,536 candidates, so that memory stays bounded by the cap; the lists' memory
    // is reserved every CandidateCap::kReserveEvery.
    bool write(const Member& a, const Member& b) {
        const uint64_t la = a.len, lb = b.len;
        if (lb < below_) {  // else another pass's pair (join_passes.hpp), counted all the same
            const uint64_t t = (*job_.req)(la + lb), v = std::min(a.mass, b.mass);
            const uint32_t marks = (v >= t ? 0 : kShort) | (a.several && b.several ? kUncounted : 0);
            out_.add(part_of_(b.rank), static_cast<uint64_t>(b.rank) << 32 | a.rank << kMarkBits | marks);
        }
        ++k_;
        if (k_ % CandidateCap::kReserveEvery == 0 && !cap_.reserve(out_, charged_, guard_)) return false;
        return k_ % 65536 != 0 || (cap_.room_for(k_) && !guard_.stopped());
    }
    // A group of two entries.
    bool pair_two(const PrefixEntry& x, const PrefixEntry& y) {
        Member b = member(x), a = member(y);
        if (a.rank < b.rank) std::swap(a, b);
        if (b.len < job_.lo_of(a.len) || b.rank == a.rank || !wanted(a, b)) return true;
        return write(a, b);
    }
    // A group of three or more entries: its documents by rank, each paired with the earlier ones
    // down to the shortest admissible length (Lemma 3).
    bool pair_group(const PrefixEntry* first, const PrefixEntry* last) {
        std::vector<Member>& group = s_.members;
        group.clear();
        for (const PrefixEntry* e = first; e != last; ++e) group.push_back(member(*e));
        std::sort(group.begin(), group.end(), [](const Member& x, const Member& y) { return x.rank < y.rank; });
        for (size_t i = 1; i < group.size(); ++i) {
            const Member a = group[i];
            const uint64_t lo = job_.lo_of(a.len);
            for (size_t j = i; j > 0; --j) {
                const Member& b = group[j - 1];
                if (b.len < lo) break;           // shorter ones follow: outside a's length partitions
                if (b.rank == a.rank) continue;  // two signatures of one document, one key
                if (!wanted(a, b)) continue;
                if (!write(a, b)) return false;
            }
        }
        return true;
    }

    const GroupJob& job_;
    const RankDivider& part_of_;
    const uint64_t below_;
    CandidateLists& out_;
    size_t& charged_;
    SortScratch& s_;
    CandidateCap& cap_;
    WorkerGuard& guard_;
    uint64_t k_ = 0;  // candidates of the current bucket
};

// Step 4's filter for the partition of ranks [r0, r1): its candidates gathered by shorter
// document (a counting sort into `longer`, at[k] then where those of rank r0 + k end), each
// pair's marks brought together, and the pairs that Lemmas 4 and 7 let through appended to
// admitted (shorter rank << 32 | longer rank). False when the worker is to stop.
struct PartitionScratch {
    HugeVector<uint32_t> at;        // counting sort by the shorter document's rank
    HugeVector<uint32_t> longer;    // the partners, grouped by that rank
    HugeVector<uint64_t> admitted;  // the pairs to verify
    std::vector<uint32_t> radix;    // sort_marks()'s scratch
};
bool admit_pairs(const GroupJob& job, const std::vector<CandidateLists>& cands, size_t p, size_t r0, size_t r1,
                 const WorkerGuard& guard, PartitionScratch& s) {
    const RequiredOverlap& req = *job.req;
    s.at.assign(r1 - r0 + 1, 0);
    for_each_candidate(cands, p, [&](uint64_t c) { ++s.at[(c >> 32) - r0 + 1]; });
    for (size_t k = 1; k < s.at.size(); ++k) s.at[k] += s.at[k - 1];
    s.longer.resize(s.at.back());
    for_each_candidate(cands, p, [&](uint64_t c) { s.longer[s.at[(c >> 32) - r0]++] = static_cast<uint32_t>(c); });
    s.admitted.clear();
    for (size_t rb = r0, begin = 0; rb < r1; begin = s.at[rb - r0], ++rb) {
        if ((rb - r0) % 256 == 0 && guard.stopped()) return false;
        uint32_t* first = s.longer.data() + begin;
        uint32_t* last = s.longer.data() + s.at[rb - r0];
        if (first == last) continue;
        sort_marks(first, last, s.radix);
        const uint64_t lb = job.len[rb];
        const uint64_t need_b = job.need_of(lb);
        uint32_t* kept = first;
        for (const uint32_t* c = first; c != last;) {
            const uint32_t ra = *c >> kMarkBits;
            uint32_t uncounted = 0, shared = 0, short_everywhere = kShort;
            for (; c != last && *c >> kMarkBits == ra; ++c, ++shared) {
                short_everywhere &= *c;
                uncounted |= *c & kUncounted;
            }
            if (short_everywhere != 0) continue;  // Lemma 4 at the first common signature
            if (uncounted == 0) {
                const uint64_t la = job.len[ra];
                if (shared + std::max(job.need_of(la), need_b) - 1 < req(la + lb)) continue;  // Lemma 7
            }
            *kept++ = ra;
        }
        for (const uint32_t* ra = first; ra != kept; ++ra) s.admitted.push_back(static_cast<uint64_t>(rb) << 32 | *ra);
    }
    return true;
}

// Step 4's verification: the admitted pairs verified in order while the documents of the pair
// kAhead further on are fetched (most verified documents are short: on the textcorpus documents
// at tau 0.44 nearly all verified pairs hold no signature twice and have about 19 distinct ones
// between them, so a pair's cost is mostly waiting for the two documents' first lines, and the
// partners of one document alone are too few to fetch ahead across). The results go to out;
// with run > 0, full(out) is called each time out grew (to account its room) or holds run
// pairs. False when the worker is to stop.
bool verify_admitted(const GroupJob& job, const HugeVector<uint64_t>& admitted, WorkerGuard& guard, JoinPairs& out,
                     size_t run = 0, const std::function<void(JoinPairs&)>& full = nullptr) {
    const Collection& docs = *job.docs;
    const RequiredOverlap& req = *job.req;
    Verify window[kAhead];  // the views of the next kAhead pairs
    const size_t todo = admitted.size();
    guard.add_verified(todo);
    size_t room = out.capacity();
    auto fetch = [&](size_t k) {
        Verify& v = window[k % kAhead];
        v.da = job.orig[static_cast<uint32_t>(admitted[k])];
        v.db = job.orig[admitted[k] >> 32];
        v.a = docs.doc(v.da);
        v.b = docs.doc(v.db);
        __builtin_prefetch(v.a.hashes);
        __builtin_prefetch(v.b.hashes);
        if (v.a.freqs.width != 0) __builtin_prefetch(v.a.freqs.data);
        if (v.b.freqs.width != 0) __builtin_prefetch(v.b.freqs.data);
    };
    for (size_t k = 0; k < std::min(todo, kAhead); ++k) fetch(k);
    for (size_t k = 0; k < todo; ++k) {
        if (k % 1024 == 1023 && guard.stopped()) return false;
        const Verify v = window[k % kAhead];
        if (k + kAhead < todo) fetch(k + kAhead);
        const MultisetView& a = v.a;
        const MultisetView& b = v.b;
        const uint64_t t = req(a.length + b.length);
        const uint64_t o =
            (a.freqs.width | b.freqs.width) == 0 ? verify_overlap_sets(a, b, t) : verify_overlap(a, b, t);
        if (o < t) continue;
        // Exactly similarity()'s arithmetic.
        const double sim = static_cast<double>(o) / static_cast<double>(a.length + b.length - o);
        out.push_back(JoinPair{std::min(v.da, v.db), std::max(v.da, v.db), sim});
        if (run != 0 && (out.size() >= run || out.capacity() != room)) {  // full, or grown
            full(out);
            room = out.capacity();
        }
    }
    return true;
}

}  // namespace

bool group_self_join(const Collection& docs, const JoinOptions& opt, double max_candidates_per_doc, JoinPairs& result) {
    ListedPrefixes listed;
    list_all_prefixes(docs, opt.tau, opt.threads, opt.cancel, listed);
    return group_self_join_listed(docs, listed, opt, max_candidates_per_doc, result);
}

bool group_self_join_listed(const Collection& docs, ListedPrefixes& listed, const JoinOptions& opt,
                            double max_candidates_per_doc, JoinPairs& result) {
    if (listed.tau != opt.tau || !listed.frequent)
        throw Error(ErrorKind::InvalidParameter, "prefix entries were listed for another threshold");
    // 1-2. The documents the reading left unlisted, on the workers.
    list_unlisted(docs, opt.threads, opt.cancel, listed);
    listed.lists.seal();
    MemoryBudget budget(opt.memory_limit, opt.accounted_peak);
    budget.charge(listed.lists.memory_bytes() + listed.frequent->memory_bytes(), "the prefix entries");
    const int threads = opt.threads;
    GroupJob job;
    job.docs = &docs;
    job.tau = opt.tau;
    if (docs.size() >= kMaxRanks) return false;
    rank_documents(job, budget);
    if (opt.sides != nullptr) mark_sides(job, *opt.sides);
    const size_t n = job.orig.size();
    const uint64_t max_len = n == 0 ? 0 : job.len[n - 1];
    const uint64_t table = std::min<uint64_t>(2 * max_len + 2, uint64_t(1) << 20);
    budget.charge(2 * table * sizeof(uint32_t), "the threshold and partner length tables");
    const RequiredOverlap req(opt.tau, table);
    fill_length_tables(job, req, table);
    throw_if_canceled(opt.cancel);

    // 3. Each coarse bucket sorted and its groups paired, on the workers.
    const size_t per_part = std::max<size_t>(1, (n + kPartitions - 1) / kPartitions);
    static_assert(kMaxRanks <= (size_t(1) << RankDivider::kRankBits), "ranks must fit the divider");
    const RankDivider part_of(per_part);  // rank / per_part
    std::vector<CandidateLists> cands(static_cast<size_t>(threads));
    std::vector<size_t> charged(static_cast<size_t>(threads), 0);  // each worker's lists' reservation
    std::vector<SortScratch> scratch(static_cast<size_t>(threads));
    // A worker's sort scratch for a bucket of m slots: the gathered and sorted entries, a group's
    // members, the filter's two bitmaps (under 32 bits a slot each) and the fine buckets' starts
    // and next places (under two of each per entry).
    uint64_t widest = 0;
    for (size_t c = 0; c < PrefixLists::kCoarse; ++c) widest = std::max(widest, listed.lists.bucket_slots(c));
    const size_t sort_bytes = static_cast<size_t>(threads) *
                              (widest * (2 * sizeof(PrefixEntry) + sizeof(Member) + 8 + 4 * sizeof(uint64_t)) + 4096);
    budget.charge(sort_bytes, "the buckets' sort scratch");
    WorkerGuard guard(opt, budget, true);
    CandidateCap cap(max_candidates_per_doc * static_cast<double>(n));
    // With probe_below, a pair is written down only when its shorter document is shorter.
    const uint64_t below = opt.probe_below == 0 ? UINT64_MAX : opt.probe_below;
    run_workers(threads, PrefixLists::kCoarse, 1, [&](int w, size_t c0, size_t c1) {
        const size_t k = static_cast<size_t>(w);
        GroupPairer pairer(job, part_of, below, cands[k], charged[k], scratch[k], cap, guard);
        for (size_t c = c0; c < c1; ++c)
            if (guard.stopped() || cap.exceeded() || !pairer.pair_bucket(listed.lists, c)) return;
    });
    throw_if_canceled(opt.cancel);
    for (CandidateLists& c : cands) c.seal();
    // The reservations give way to what the lists took (within them: CandidateCap::reserve).
    size_t cand_bytes = 0;
    for (const CandidateLists& c : cands) cand_bytes += c.memory_bytes();
    guard.settle_candidates(cand_bytes);
    if (cap.exceeded()) return false;
    budget.release(listed.lists.memory_bytes() + sort_bytes);
    listed.lists.clear();
    std::vector<SortScratch>().swap(scratch);
    // Step 4's scratch per worker, for the partition it holds at most: the counting sort's starts
    // (4 bytes a rank), the partners and the radix sort's copy (4 bytes a candidate each) and the
    // admitted pairs (8 bytes a candidate at most). It must fit now: no pair has left yet, and
    // the index matcher takes over when it does not.
    std::vector<uint64_t> part_cands(kPartitions, 0);
    for (const CandidateLists& w : cands)
        for (size_t p = 0; p < kPartitions; ++p) part_cands[p] += w.bucket_entries(p);
    std::sort(part_cands.begin(), part_cands.end(), std::greater<uint64_t>());
    size_t part_bytes = 0;
    for (size_t k = 0; k < std::min<size_t>(kPartitions, static_cast<size_t>(threads)); ++k)
        part_bytes += 4 * (per_part + 1) + 16 * part_cands[k];
    if (!guard.rebase(part_bytes)) return false;

    // 4. Each partition's candidates gathered, filtered and verified, on the workers, the costliest
    // partitions first.
    std::vector<JoinPairs> found(kPartitions);
    // Each result pair is at least one candidate entry.
    if (opt.sink != nullptr) opt.sink->set_bound(cap.emitted.load());
    const std::vector<size_t> order = costliest_first(job, cands, per_part);
    // With a sink, each worker's pairs go to it in runs of PairSink::run_pairs, reserved at that
    // size and accounted by their room (as the index matcher's, PairSink::in_flight_bytes).
    const size_t run = opt.sink == nullptr ? 0 : PairSink::run_pairs(opt.sink->capacity(), threads);
    std::vector<size_t> counted(kPartitions, 0);  // the room of found[p] accounted so far
    const std::function<void(JoinPairs&)> full = [&](JoinPairs& out) {
        size_t& c = counted[static_cast<size_t>(&out - found.data())];
        if (out.capacity() > c) {
            guard.add_pairs(out.capacity() - c);
            c = out.capacity();
        }
        if (out.size() < run) return;
        guard.hand_over(*opt.sink, out);  // unsorted: the caller writes rows meanwhile
        c = 0;
    };
    run_workers(threads, kPartitions, 1, [&](int, size_t q0, size_t q1) {
        PartitionScratch s;
        for (size_t q = q0; q < q1; ++q) {
            const size_t p = order[q];
            if (guard.stopped()) return;
            const size_t r0 = std::min(n, p * per_part), r1 = std::min(n, (p + 1) * per_part);
            JoinPairs& out = found[p];
            if (!admit_pairs(job, cands, p, r0, r1, guard, s) ||
                !verify_admitted(job, s.admitted, guard, out, run, full))
                return;
            if (run == 0) guard.add_pairs(out.size());
            if (run != 0) full(out);  // its last run's room
            // 5. Output.
            if (opt.sink != nullptr) {
                guard.hand_over(*opt.sink, out);  // the rest of its last run
            } else if (threads > 1) {
                sort_pairs(out);  // the runs are merged in slices on the workers below
            }
            guard.progress(r1 - r0);
        }
    });
    throw_if_canceled(opt.cancel);
    cands.clear();
    guard.progress(docs.size() - n);  // the empty documents, which pair with nothing
    // One thread: the partitions' pairs joined and sorted once (a radix sort) rather than each
    // partition sorted and the 64 runs merged through a heap.
    result = threads > 1 ? merge_sorted_runs(found, threads) : merge_sorted(found);
    return true;
}

}  // namespace spotsigs::join_detail
