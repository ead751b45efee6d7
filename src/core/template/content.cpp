// The content measure's statistics: which signatures of a collection are template signatures.
#include "core/template/content.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/common/error.hpp"
#include "core/join/join_internal.hpp"
#include "core/signature/hash.hpp"

namespace spotsigs {

namespace {

// Most similarities a worker remembers (content.hpp's memory bound counts them).
constexpr size_t kMemoEntries = size_t(1) << 16;

// How much work (signature entries visited, or comparisons of a sort) a loop of the statistics
// does between two looks at the stop flag: a few hundred microseconds of work at most, so that a
// canceled call stops within tens of milliseconds however its input is shaped.
constexpr size_t kCancelWork = size_t(1) << 16;

// Counts work and, after every kCancelWork units, calls poll (which may throw) and throws
// Error(Canceled) once the caller asked to stop. One per thread.
class StopCheck {
public:
    explicit StopCheck(const CancelToken* cancel, const PollFn& poll = kNoPoll) : cancel_(cancel), poll_(poll) {}
    // Counts n units of work done.
    void add(size_t n) {
        work_ += n;
        if (work_ >= kCancelWork) {
            work_ = 0;
            if (poll_) poll_();
            join_detail::throw_if_canceled(cancel_);
        }
    }

private:
    static inline const PollFn kNoPoll{};
    const CancelToken* cancel_;
    const PollFn& poll_;
    size_t work_ = 0;
};

// std::sort of [first, last) by less that stops with Error(Canceled) within kCancelWork
// comparisons of a cancel (the comparator counts; a sort left halfway holds a permutation of the
// range, which the caller then drops).
template <class It, class Less>
void sort_checked(It first, It last, Less less, const CancelToken* cancel) {
    if (cancel == nullptr) {
        std::sort(first, last, less);
        return;
    }
    StopCheck check(cancel);
    std::sort(first, last, [&](const auto& x, const auto& y) {
        check.add(1);
        return less(x, y);
    });
}

// One (signature, page) entry; pages are numbered by their rank in the fixed id order.
struct Entry {
    uint64_t hash;
    uint32_t rank;
    uint32_t freq;
};

// The bits of the bucket number the entries are dealt by (shared_entries): about
// kBucketEntries entries a bucket, between 2^8 and 2^12 buckets (more would scatter the writes
// of the dealing over too many pages).
constexpr size_t kBucketEntries = size_t(1) << 14;
unsigned bucket_bits(size_t entries) {
    unsigned bits = 8;
    while (bits < 12 && (entries >> bits) > kBucketEntries) ++bits;
    return bits;
}

// The most entries a bucket may have to be grouped through a hash table (Grouper); a larger one,
// which only hashes crowded into few values of fmix64's top bits make, is sorted in place.
constexpr size_t kTableEntries = size_t(1) << 18;

// The slots of the table that groups a bucket of m entries (Grouper): at least twice m.
size_t table_slots(size_t m) {
    size_t cap = 16;
    while (cap < 2 * m) cap *= 2;
    return cap;
}

// Bytes a worker's Grouper holds at most when the largest bucket has m entries: a table of 16-byte
// slots, and per entry of its bucket a slot number (4 bytes) and a copy (16 bytes).
size_t grouper_bytes(size_t m) {
    m = std::min(m, kTableEntries);
    return table_slots(m) * 16 + m * 20;
}

// Bytes the statistics hold at once beside the documents, for e entries, of which s belong to
// the g signatures held by two or more pages (g <= s / 2: pass s / 2 when g is not known), n
// pages and a largest bucket of m entries (template_memory_bytes says how).
size_t statistics_bytes(size_t e, size_t s, size_t g, size_t n, int threads, size_t m) {
    const size_t workers = size_t(std::max(threads, 1));
    // Finding the entries: every entry (16 bytes), the buckets' counts per worker and each
    // worker's Grouper. Grouping them: the entries (the kept ones packed at the front), per
    // signature its hash and sample offset (8 each), the samples' ranks (4 s at most), the pages'
    // rows (8 bytes an entry, 16 a page with the offsets and lengths): 16 e + 12 s + 16 g + 16 n.
    // Merging equal samples: the rows, the hashes, offsets and ranks of the first samples, the
    // sort's keyed order (16 g), sample_of (4 g) and the merged samples' offsets (8 g) and ranks
    // (4 s): 16 s + 44 g + 16 n. Judging: the merged samples (hashes 8 g, sample_of 4 g, offsets
    // 8 g, ranks 4 s), the two rounds' rows (8 s + 16 n each), the keep and drop flags (2 g) and
    // the sketches (at most 161 bytes a page and 2 bytes an entry): 22 s + 22 g + 193 n. Beside
    // them: the page order (8 bytes a page) and each worker's memo (at most kMemoEntries +
    // kSample^2 entries of at most 64 bytes with the table). A collection of many copies of each
    // page has g far below s / 2 (s / 14 for 14 copies), which is what lets its statistics run in
    // one go where the bound at g = s / 2 would send them to passes.
    const size_t finding = 16 * e + workers * (grouper_bytes(m) + (size_t(8) << 12) + 64);
    const size_t grouping = 16 * e + 12 * s + 16 * g + 16 * n;
    const size_t merging = 16 * s + 44 * g + 16 * n;
    const size_t judging = 22 * s + 22 * g + 193 * n;
    const size_t peak = std::max(std::max(finding, grouping), std::max(merging, judging));
    return peak + 8 * n + workers * (kMemoEntries + kSample * kSample) * 64;
}

// The pages' signatures held by two or more pages: per page (by rank), their numbers (the
// signatures' positions in Groups::hashes, ascending) and frequencies, and the page's length
// (every signature's frequency counts, those held by one page too). Two pages share only
// signatures held by two or more pages, so their overlap, and with the lengths their
// similarity, are those of the whole pages.
struct Rows {
    // A signature's number and frequency side by side: building the rows writes both at a place
    // no cache holds (the rows are filled signature by signature), so one line is missed, not two.
    struct Entry {
        uint32_t sig;
        uint32_t freq;
    };
    std::vector<size_t> start;  // per rank + 1: offsets into entry
    std::vector<Entry> entry;
    std::vector<uint64_t> length;  // per rank

    uint32_t size(uint32_t r) const noexcept { return static_cast<uint32_t>(start[r + 1] - start[r]); }
};

// The similarity of the pages of ranks a and b, bit for bit similarity() of the whole pages
// (an empty page has length 0).
double similarity(const Rows& rows, uint32_t a, uint32_t b) noexcept {
    const uint64_t la = rows.length[a], lb = rows.length[b];
    if (la == 0 || lb == 0) return 0.0;
    const Rows::Entry* x = rows.entry.data() + rows.start[a];
    const Rows::Entry* const xe = rows.entry.data() + rows.start[a + 1];
    const Rows::Entry* y = rows.entry.data() + rows.start[b];
    const Rows::Entry* const ye = rows.entry.data() + rows.start[b + 1];
    uint64_t o = 0;  // the sum over common numbers of the smaller frequency
    while (x < xe && y < ye) {
        if (x->sig < y->sig) {
            ++x;
        } else if (y->sig < x->sig) {
            ++y;
        } else {
            o += std::min(x->freq, y->freq);
            ++x, ++y;
        }
    }
    return static_cast<double>(o) / static_cast<double>(la + lb - o);
}

// The signatures held by two or more pages, numbered in the order of `hashes` (by bucket, then
// by first page; any fixed order would do), each with the sample of pages it is judged on. Signatures
// with the same sample (a story's signatures on its copies) share one entry of `samples`: the
// sample's mean similarity is worked out once for all of them.
struct Groups {
    std::vector<uint64_t> hashes;
    std::vector<uint32_t> sample_of;  // per signature: its sample
    std::vector<size_t> start;        // per sample + 1: offsets into ranks
    std::vector<uint32_t> ranks;      // each sample's ranks, ascending, at most kSample
};

// Groups one bucket's entries (given in rank order) by signature through a hash table: the
// entries of signatures held by two or more pages are moved to the bucket's front, each
// signature's together and in rank order, signatures in the order of their first page. One per
// worker; its vectors are kept from bucket to bucket.
class Grouper {
public:
    // Returns how many entries are kept at the front of [x, x + m), m <= kTableEntries, and adds
    // the number of their signatures to *groups.
    size_t group(Entry* x, size_t m, StopCheck& check, size_t* groups) {
        const size_t cap = table_slots(m);
        const size_t mask = cap - 1;
        table_.assign(cap, Slot{0, 0, 0});
        slot_of_.resize(m);
        // count == 0 marks an empty slot; a signature's slot counts its entries.
        for (size_t i = 0; i < m; ++i) {
            const uint64_t h = x[i].hash;
            size_t s = fmix64(h) & mask;
            while (table_[s].count != 0 && table_[s].hash != h) s = (s + 1) & mask;
            Slot& t = table_[s];
            t.hash = h;
            ++t.count;
            slot_of_[i] = static_cast<uint32_t>(s);
        }
        check.add(m);
        // Each signature held twice or more gets its place at its first entry (kPlaced marks its
        // count from then on, and at is where its next entry goes).
        size_t kept = 0;
        copy_.resize(m);
        for (size_t i = 0; i < m; ++i) {
            Slot& t = table_[slot_of_[i]];
            if (t.count < 2) continue;
            if ((t.count & kPlaced) == 0) {
                t.at = static_cast<uint32_t>(kept);
                kept += t.count;
                t.count |= kPlaced;
                ++*groups;
            }
            copy_[t.at++] = x[i];
        }
        std::copy(copy_.begin(), copy_.begin() + static_cast<std::ptrdiff_t>(kept), x);
        check.add(m);
        return kept;
    }

private:
    static constexpr uint32_t kPlaced = uint32_t(1) << 31;  // above any count (m <= kTableEntries)
    struct Slot {
        uint64_t hash;
        uint32_t count;
        uint32_t at;
    };
    std::vector<Slot> table_;
    std::vector<uint32_t> slot_of_;
    std::vector<Entry> copy_;
};

// The entries shared_entries finds: the first size of data.
struct Entries {
    std::unique_ptr<Entry[]> data;
    size_t size;
};

// The entries of every signature held by two or more pages: each signature's together, in rank
// order. Every entry is dealt into 2^8 to 2^12 buckets by the top bits of fmix64 of its hash, in
// rank order (the workers take ranges of ranks, each writing its part of every bucket after the
// parts of the lower ranks), so that a signature's entries all land in one bucket, in rank order;
// each bucket is then grouped on its own (Grouper: a hash table small enough for the processor's
// caches, where a table of every signature at once is not), on up to `threads` threads, and the
// kept entries packed. Throws Error(OutOfMemory) when the statistics would not fit memory_limit
// bytes with docs (0: no limit): once the buckets are counted, before the entries are copied,
// when every entry with the workers' tables would not, and once the kept entries are counted,
// when the rest would not; and Error(Canceled) when cancel is set. With release (docs itself),
// docs is emptied once its entries are copied, and counts against the limit only before.
Entries shared_entries(const Collection& docs, const std::vector<uint32_t>& doc_of_rank, int threads,
                       const CancelToken* cancel, size_t memory_limit, Collection* release) {
    const size_t n = doc_of_rank.size();
    size_t e = 0;
    for (size_t i = 0; i < docs.size(); ++i) e += docs.doc(i).size;
    size_t largest = 0;  // the largest bucket's entries, once they are counted
    auto check_limit = [&](size_t s, size_t g) {
        if (memory_limit == 0) return;
        const size_t need = docs.memory_bytes() + statistics_bytes(e, s, g, n, threads, largest);
        if (need > memory_limit)
            throw Error(ErrorKind::OutOfMemory,
                        "the content statistics need " + std::to_string(need >> 10) + " kB with the documents");
    };
    const unsigned bits = bucket_bits(e);
    const unsigned shift = 64 - bits;
    const size_t buckets = size_t(1) << bits;
    // The workers' ranges of ranks, of about equal numbers of entries.
    const size_t workers = size_t(std::max(threads, 1));
    std::vector<uint32_t> from(workers + 1, static_cast<uint32_t>(n));
    {
        from[0] = 0;
        size_t seen = 0, w = 1;
        for (uint32_t r = 0; r < n && w < workers; ++r) {
            seen += docs.doc(doc_of_rank[r]).size;
            while (w < workers && seen * workers >= e * w) from[w++] = r + 1;
        }
    }
    // count[w * buckets + b]: the entries of worker w's ranks in bucket b; then where the next goes.
    std::vector<size_t> count(workers * buckets, 0);
    join_detail::run_workers(threads, workers, 1, [&](int, size_t begin, size_t end) {
        StopCheck check(cancel);
        for (size_t w = begin; w < end; ++w) {
            size_t* c = count.data() + w * buckets;
            for (uint32_t r = from[w]; r < from[w + 1]; ++r) {
                const MultisetView v = docs.doc(doc_of_rank[r]);
                for (uint32_t k = 0; k < v.size; ++k) ++c[fmix64(v.hashes[k]) >> shift];
                check.add(v.size + 1);
            }
        }
    });
    join_detail::throw_if_canceled(cancel);
    std::vector<size_t> start(buckets + 1, 0);
    for (size_t b = 0, at = 0; b < buckets; ++b) {
        start[b] = at;
        for (size_t w = 0; w < workers; ++w) {
            const size_t c = count[w * buckets + b];
            count[w * buckets + b] = at;
            at += c;
        }
    }
    start[buckets] = e;
    for (size_t b = 0; b < buckets; ++b) largest = std::max(largest, start[b + 1] - start[b]);
    check_limit(0, 0);
    // Every entry is written below: no value is needed first.
    std::unique_ptr<Entry[]> all(new Entry[e]);
    Entry* const out = all.get();
    join_detail::run_workers(threads, workers, 1, [&](int, size_t begin, size_t end) {
        StopCheck check(cancel);
        for (size_t w = begin; w < end; ++w) {
            size_t* at = count.data() + w * buckets;
            for (uint32_t r = from[w]; r < from[w + 1]; ++r) {
                const MultisetView v = docs.doc(doc_of_rank[r]);
                for (uint32_t k = 0; k < v.size; ++k)
                    out[at[fmix64(v.hashes[k]) >> shift]++] = Entry{v.hashes[k], r, v.freqs[k]};
                check.add(v.size + 1);
            }
        }
    });
    join_detail::throw_if_canceled(cancel);
    std::vector<size_t>().swap(count);
    if (release != nullptr) *release = Collection();  // docs is not read again
    std::vector<size_t> kept(buckets, 0);
    std::vector<size_t> groups(buckets, 0);  // per bucket: the signatures of its kept entries
    {
        std::vector<Grouper> grouper(workers);
        join_detail::run_workers(threads, buckets, 8, [&](int w, size_t begin, size_t end) {
            StopCheck check(cancel);
            for (size_t b = begin; b < end; ++b) {
                Entry* x = out + start[b];
                const size_t m = start[b + 1] - start[b];
                if (m <= kTableEntries) {
                    kept[b] = grouper[static_cast<size_t>(w)].group(x, m, check, &groups[b]);
                    continue;
                }
                // A crowded bucket: sorted by (signature, rank), then its runs of two or more
                // entries packed to the front.
                sort_checked(
                    x, x + m,
                    [](const Entry& p, const Entry& q) { return p.hash != q.hash ? p.hash < q.hash : p.rank < q.rank; },
                    cancel);
                size_t k = 0;
                for (size_t i = 0; i < m;) {
                    size_t j = i + 1;
                    while (j < m && x[j].hash == x[i].hash) ++j;
                    if (j - i >= 2) {
                        k = static_cast<size_t>(std::copy(x + i, x + j, x + k) - x);
                        ++groups[b];
                    }
                    i = j;
                }
                check.add(m);
                kept[b] = k;
            }
        });
    }
    join_detail::throw_if_canceled(cancel);
    size_t s = 0, g = 0;
    for (size_t b = 0; b < buckets; ++b) {
        if (s != start[b]) std::copy(out + start[b], out + start[b] + kept[b], out + s);
        s += kept[b];
        g += groups[b];
    }
    check_limit(s, g);
    return Entries{std::move(all), s};
}

// Every signature held by two or more pages, with its sample (its first kSample pages by
// rank), and the pages' rows of those signatures; length holds the pages' lengths by rank.
// Throws as shared_entries, and releases docs as it does.
Groups shared_signatures(const Collection& docs, const std::vector<uint32_t>& doc_of_rank, std::vector<uint64_t> length,
                         int threads, const CancelToken* cancel, size_t memory_limit, Collection* release, Rows& rows) {
    Entries found = shared_entries(docs, doc_of_rank, threads, cancel, memory_limit, release);
    const Entry* const e = found.data.get();
    const size_t entries = found.size;
    StopCheck check(cancel);
    const size_t n = doc_of_rank.size();
    // Every signature's sample, in the entries' order first, and each page's count of entries.
    std::vector<size_t> start{0};
    std::vector<uint32_t> ranks;
    Groups g;
    rows.start.assign(n + 1, 0);
    for (size_t i = 0; i < entries;) {
        size_t j = i;
        while (j < entries && e[j].hash == e[i].hash) ++j;
        check.add(j - i);
        if (j - i >= 2) {
            g.hashes.push_back(e[i].hash);
            for (size_t k = i; k < j && k - i < kSample; ++k) ranks.push_back(e[k].rank);
            start.push_back(ranks.size());
            for (size_t k = i; k < j; ++k) ++rows.start[e[k].rank + 1];
        }
        i = j;
    }
    for (size_t r = 1; r <= n; ++r) rows.start[r] += rows.start[r - 1];
    // The rows, signature by signature: each page's numbers come out ascending.
    rows.entry.resize(rows.start[n]);
    {
        std::vector<size_t> at(rows.start.begin(), rows.start.end() - 1);
        uint32_t id = 0;
        for (size_t i = 0; i < entries;) {
            size_t j = i;
            while (j < entries && e[j].hash == e[i].hash) ++j;
            check.add(j - i);
            if (j - i >= 2) {
                for (size_t k = i; k < j; ++k) {
                    const size_t p = at[e[k].rank]++;
                    rows.entry[p] = Rows::Entry{id, e[k].freq};
                }
                ++id;
            }
            i = j;
        }
    }
    found.data.reset();
    rows.length = std::move(length);
    // Equal samples made one: the signatures ordered by sample, and a new sample where it changes.
    const size_t m = g.hashes.size();
    auto span_less = [&](uint32_t x, uint32_t y) {
        return std::lexicographical_compare(ranks.begin() + start[x], ranks.begin() + start[x + 1],
                                            ranks.begin() + start[y], ranks.begin() + start[y + 1]);
    };
    // Each signature sorted by its sample's first two ranks (every sample has two or more), kept
    // beside it so that most comparisons read no sample, and by the whole sample on a tie: the
    // order is the samples' lexicographic order.
    struct Keyed {
        uint64_t first_two;
        uint32_t sig;
    };
    std::vector<Keyed> order(m);
    for (size_t k = 0; k < m; ++k)
        order[k] = Keyed{uint64_t(ranks[start[k]]) << 32 | ranks[start[k] + 1], static_cast<uint32_t>(k)};
    sort_checked(
        order.begin(), order.end(),
        [&](const Keyed& x, const Keyed& y) {
            return x.first_two != y.first_two ? x.first_two < y.first_two : span_less(x.sig, y.sig);
        },
        cancel);
    g.sample_of.resize(m);
    g.start.push_back(0);
    for (size_t k = 0; k < m; ++k) {
        check.add(kSample);
        uint32_t x = order[k].sig;
        if (k == 0 || span_less(order[k - 1].sig, x)) {
            g.ranks.insert(g.ranks.end(), ranks.begin() + start[x], ranks.begin() + start[x + 1]);
            g.start.push_back(g.ranks.size());
        }
        g.sample_of[x] = static_cast<uint32_t>(g.start.size() - 2);
    }
    return g;
}

// rows without the signatures whose flag in drop is set (numbers as in rows).
Rows without(const Rows& rows, const std::vector<char>& drop, const CancelToken* cancel) {
    StopCheck check(cancel);
    const size_t n = rows.length.size();
    Rows out;
    out.start.assign(n + 1, 0);
    out.length.resize(n);
    size_t total = 0;
    for (const Rows::Entry& x : rows.entry) total += !drop[x.sig];
    out.entry.reserve(total);
    for (size_t r = 0; r < n; ++r) {
        uint64_t length = rows.length[r];
        for (size_t i = rows.start[r]; i < rows.start[r + 1]; ++i) {
            const Rows::Entry x = rows.entry[i];
            if (drop[x.sig]) length -= x.freq;
            else out.entry.push_back(x);
        }
        out.start[r + 1] = out.entry.size();
        out.length[r] = length;
        check.add(rows.start[r + 1] - rows.start[r] + 1);
    }
    return out;
}

// Each page's signature sketches: bitmaps of 512 << j bits for j = 0 .. levels - 1, bit
// (h mod bits) set for h = fmix64(s) of every number s (Rows::Entry::sig) of the page's signatures held
// by two or more pages (the numbers are the same in every page's row and fmix64 spreads them
// like hashes, without reading each signature's hash from a table of all of them), each
// with its population count; a page has as many levels as it takes to reach 4 bits per such
// signature (at most kMaxLevels). They bound overlaps from above: in two sketches of the same
// size, a bit set in a's and clear in b's is set by at least one signature of a that b lacks
// (every signature b shares with another page sets its bit in b's sketch, and a signature held
// by both a and b is one), and distinct bits are set by distinct signatures, each of frequency
// >= 1 that adds to |a| and nothing to the overlap. So with c = popcount(a & b),
//     overlap(a, b) <= min(|a| - (pa - c), |b| - (pb - c)),
// pa and pb the two sketches' population counts. Level j - 1 is level j folded in half (bit i
// and bit i + bits / 2 ORed), since h mod (bits / 2) = (h mod bits) mod (bits / 2); bits is a
// power of two, so h mod bits is h & (bits - 1).
constexpr uint32_t kBaseWords = 8;
constexpr uint32_t kMaxLevels = 6;

// Population count of one word without relying on a POPCNT instruction being available.
inline uint32_t popcount64(uint64_t x) noexcept {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return static_cast<uint32_t>((x * 0x0101010101010101ULL) >> 56);
}

// popcount(u[k] & v[k]) summed over k < words; with the POPCNT instruction where the processor
// has it (chosen once, when the library loads).
__attribute__((target_clones("popcnt", "default"))) uint32_t and_count(const uint64_t* u, const uint64_t* v,
                                                                       size_t words) noexcept {
    uint32_t c = 0;
    for (size_t k = 0; k < words; ++k) c += static_cast<uint32_t>(__builtin_popcountll(u[k] & v[k]));
    return c;
}

// A page's sketch record: everything a bound reads of the page but the bits, in half a cache
// line, so that a sample's pages cost two cache lines each (the record and the smallest level).
struct alignas(32) SketchRecord {
    uint64_t length;             // the page's length in the round
    size_t upper;                // offset of its levels 1, 2, ... in Sketches::upper
    uint16_t count[kMaxLevels];  // population count of each level (at most 16384 bits)
    uint8_t levels;
};

struct Sketches {
    std::vector<SketchRecord> rec;  // per rank
    std::vector<uint64_t> store;    // level 0 of every page, kBaseWords words each, from base
    uint64_t* base = nullptr;       // store's first cache-line-aligned word
    std::vector<uint64_t> upper;    // the levels above 0, of the pages that have them

    // The words of level j of rank r (level j holds kBaseWords << j words).
    const uint64_t* level(uint32_t r, uint32_t j) const noexcept {
        if (j == 0) return base + size_t(kBaseWords) * r;
        return upper.data() + rec[r].upper + kBaseWords * ((size_t(1) << j) - 2);
    }
    uint64_t* level(uint32_t r, uint32_t j) noexcept {
        return const_cast<uint64_t*>(static_cast<const Sketches*>(this)->level(r, j));
    }
    // Asks for the cache lines a bound on the page of rank r reads first.
    void prefetch(uint32_t r) const noexcept {
        __builtin_prefetch(&rec[r]);
        __builtin_prefetch(base + size_t(kBaseWords) * r);
    }
};

// Throws Error(Canceled) when cancel is set.
Sketches sketch(const Rows& rows, const CancelToken* cancel) {
    static_assert(kBaseWords * sizeof(uint64_t) == 64, "level 0 is one cache line");
    StopCheck check(cancel);
    Sketches s;
    const size_t n = rows.length.size();
    s.rec.resize(n);
    size_t upper = 0;
    for (size_t r = 0; r < n; ++r) {
        check.add(1);
        uint64_t size = rows.size(static_cast<uint32_t>(r));
        uint32_t j = 1;
        while (j < kMaxLevels && (uint64_t(64 * kBaseWords) << (j - 1)) < 4 * size) ++j;
        SketchRecord& c = s.rec[r];
        c.length = rows.length[r];
        c.levels = static_cast<uint8_t>(j);
        c.upper = upper;
        upper += kBaseWords * ((size_t(1) << j) - 2);
    }
    s.store.assign(kBaseWords * (n + 1), 0);
    s.base = s.store.data() + (kBaseWords - reinterpret_cast<uintptr_t>(s.store.data()) / 8 % kBaseWords) % kBaseWords;
    s.upper.assign(upper, 0);
    for (size_t r = 0; r < n; ++r) {
        const uint32_t rr = static_cast<uint32_t>(r);
        check.add(rows.size(rr) + kBaseWords * ((size_t(1) << s.rec[r].levels) - 1));
        const uint32_t top = s.rec[r].levels - 1u;
        uint64_t* w = s.level(rr, top);
        const uint64_t mask = (uint64_t(64 * kBaseWords) << top) - 1;
        for (size_t k = rows.start[r]; k < rows.start[r + 1]; ++k) {
            const uint64_t bit = fmix64(rows.entry[k].sig) & mask;
            w[bit / 64] |= uint64_t(1) << (bit % 64);
        }
        for (uint32_t j = top + 1; j-- > 0;) {
            uint64_t* x = s.level(rr, j);
            const size_t words = size_t(kBaseWords) << j;
            if (j < top) {
                const uint64_t* y = s.level(rr, j + 1);
                for (size_t k = 0; k < words; ++k) x[k] = y[k] | y[words + k];
            }
            uint32_t c = 0;
            for (size_t k = 0; k < words; ++k) c += popcount64(x[k]);
            s.rec[r].count[j] = static_cast<uint16_t>(c);
        }
    }
    return s;
}

// An upper bound on the computed similarity of the pages of ranks x and y: the similarity an
// overlap at the bound above (on the larger level both have) would give. The computed
// similarity fl(o / (|a| + |b| - o)) does not decrease as o grows (the numerator grows, the
// denominator shrinks, and rounding is monotone), so the bound's computed value is at least the
// computed similarity.
inline double similarity_bound(const Sketches& s, uint32_t x, uint32_t y) noexcept {
    const SketchRecord& a = s.rec[x];
    const SketchRecord& b = s.rec[y];
    if (a.length == 0 || b.length == 0) return 0.0;
    const uint32_t j = std::min(a.levels, b.levels) - 1u;
    const uint32_t c = and_count(s.level(x, j), s.level(y, j), size_t(kBaseWords) << j);
    uint64_t oa = a.length - (a.count[j] - c);
    uint64_t ob = b.length - (b.count[j] - c);
    uint64_t o = std::min(oa, ob);
    return static_cast<double>(o) / static_cast<double>(a.length + b.length - o);
}

// Marks in `keep` the samples whose pages have a mean pairwise similarity (in `rows`) of at
// least kCoherence.
void judge(const Groups& g, const Rows& rows, std::vector<char>& keep, int threads, CancelToken* cancel) {
    const size_t n = g.start.size() - 1;
    keep.assign(n, 0);
    static_assert(kSample * (kSample - 1) / 2 <= 120, "the slack below is worked out for 120 pairs");
    constexpr size_t kPairs = kSample * (kSample - 1) / 2;
    const Sketches sk = sketch(rows, cancel);
    // Samples in order share their first pages, so pairs recur from one sample to the next: each
    // worker remembers the similarities of the last few thousand samples' pairs.
    std::vector<std::unordered_map<uint64_t, double>> cache(static_cast<size_t>(threads));
    join_detail::run_workers(threads, n, 256, [&](int w, size_t begin, size_t end) {
        auto& memo = cache[static_cast<size_t>(w)];
        double rest[kPairs + 1];  // rest[p]: the sum of the bounds of pairs p, p + 1, ... (in order)
        for (size_t k = begin; k < end; ++k) {
            if (cancel != nullptr && cancel->stopped()) return;
            if (memo.size() > kMemoEntries) memo.clear();
            const uint32_t* r = g.ranks.data() + g.start[k];
            const size_t m = g.start[k + 1] - g.start[k];
            // The next sample's pages are asked for now: samples rarely share pages where the
            // bounds decide (unrelated pages), and their misses then overlap this sample's work.
            if (k + 1 < end)
                for (size_t i = g.start[k + 1]; i < g.start[k + 2]; ++i) sk.prefetch(g.ranks[i]);
            // Keep when the sum over all pairs (in this order) reaches goal = kCoherence * pairs,
            // pairs = m (m - 1) / 2 >= 1. Each similarity lies in [0, bound], bound the sketch
            // bound of its pair (at most 1), so the loop stops once the pairs left cannot change
            // the answer: (a) sum >= goal: adding non-negative terms never lowers a
            // rounded-to-nearest sum, so the full sum reaches goal too; (b) sum + rest + kSlack <
            // goal, rest the computed sum of the bounds of the pairs left: the exact full sum is
            // at most sum + the exact sum of those bounds, and the rounded values of the full sum,
            // of sum and of rest each differ from their exact values by less than 2e-12 (at most
            // 120 additions of terms <= 120 carry errors below 120 * 120 * 2^-53), so the full
            // sum stays below goal.
            constexpr double kSlack = 1e-9;
            const size_t pairs = m * (m - 1) / 2;
            const double goal = kCoherence * double(pairs);
            {
                size_t p = pairs;
                rest[p] = 0;
                for (size_t a = m; a-- > 0;)
                    for (size_t b = m; b-- > a + 1;) {
                        --p;
                        rest[p] = rest[p + 1] + similarity_bound(sk, r[a], r[b]);
                    }
            }
            double sum = 0;
            size_t p = 0;
            auto open = [&] { return sum < goal && sum + rest[p] + kSlack >= goal; };
            for (size_t a = 0; a < m && open(); ++a)
                for (size_t b = a + 1; b < m && open(); ++b, ++p) {
                    uint64_t key = uint64_t(r[a]) << 32 | r[b];  // r is ascending: r[a] < r[b]
                    auto it = memo.find(key);
                    if (it == memo.end()) it = memo.emplace(key, similarity(rows, r[a], r[b])).first;
                    sum += it->second;
                }
            keep[k] = sum >= goal;
        }
    });
    if (cancel != nullptr && cancel->stopped()) throw Error(ErrorKind::Canceled, "canceled");
}

}  // namespace

size_t template_memory_bytes(const Collection& docs, int threads) {
    size_t e = 0;
    for (size_t i = 0; i < docs.size(); ++i) e += docs.doc(i).size;
    return statistics_bytes(e, e, e / 2, docs.size(), threads, e);
}

namespace {

std::vector<uint64_t> template_of(const Collection& docs, Collection* release, int threads, CancelToken* cancel,
                                  size_t memory_limit, size_t* shared) {
    if (threads < 1) threads = 1;
    const size_t n = docs.size();
    // The fixed page order: by fmix64 of the id (a bijection, so distinct ids never tie), then
    // by position for the duplicate ids a caller may not have rejected.
    std::vector<uint32_t> doc_of_rank(n);
    std::iota(doc_of_rank.begin(), doc_of_rank.end(), 0u);
    sort_checked(
        doc_of_rank.begin(), doc_of_rank.end(),
        [&](uint32_t a, uint32_t b) {
            uint64_t x = fmix64(static_cast<uint64_t>(docs.id(a))), y = fmix64(static_cast<uint64_t>(docs.id(b)));
            return x != y ? x < y : a < b;
        },
        cancel);
    std::vector<uint64_t> length(n);
    for (size_t r = 0; r < n; ++r) length[r] = docs.length(doc_of_rank[r]);
    Rows rows;
    const Groups g =
        shared_signatures(docs, doc_of_rank, std::move(length), threads, cancel, memory_limit, release, rows);
    if (shared != nullptr) *shared = g.hashes.size();
    std::vector<char> keep, drop(g.hashes.size(), 0);
    for (int round = 0; round < kRounds; ++round) {
        if (round == 0) {
            judge(g, rows, keep, threads, cancel);
        } else {
            judge(g, without(rows, drop, cancel), keep, threads, cancel);
        }
        for (size_t k = 0; k < g.hashes.size(); ++k) drop[k] = !keep[g.sample_of[k]];
    }
    std::vector<uint64_t> out;
    for (size_t k = 0; k < g.hashes.size(); ++k)
        if (drop[k]) out.push_back(g.hashes[k]);
    sort_checked(out.begin(), out.end(), std::less<uint64_t>(), cancel);
    return out;
}

}  // namespace

std::vector<uint64_t> template_signatures(const Collection& docs, int threads, CancelToken* cancel, size_t memory_limit,
                                          size_t* shared) {
    return template_of(docs, nullptr, threads, cancel, memory_limit, shared);
}

std::vector<uint64_t> template_signatures_releasing(Collection& docs, int threads, CancelToken* cancel,
                                                    size_t memory_limit, size_t* shared) {
    return template_of(docs, &docs, threads, cancel, memory_limit, shared);
}

SignatureSet::SignatureSet(const uint64_t* keys, size_t n, const CancelToken* cancel, const PollFn& poll) {
    StopCheck check(cancel, poll);
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    slots_.assign(cap, 0);
    mask_ = cap - 1;
    filter_shift_ = 64;
    while (filter_shift_ > 6 && (uint64_t(1) << (64 - filter_shift_)) < 4 * cap) --filter_shift_;
    filter_.assign((uint64_t(1) << (64 - filter_shift_)) / 64, 0);
    for (size_t j = 0; j < n; ++j) {
        const uint64_t k = keys[j];
        if (k == 0) {
            has_zero_ = true;
            continue;
        }
        const uint64_t x = fmix64(k);
        const uint64_t f = x >> filter_shift_;
        filter_[f / 64] |= uint64_t(1) << (f % 64);
        size_t i = x & mask_;
        size_t probes = 1;
        for (; slots_[i] != 0 && slots_[i] != k; ++probes) i = (i + 1) & mask_;
        slots_[i] = k;
        check.add(probes);
    }
}

size_t SignatureSet::memory_bytes() const noexcept {
    return (slots_.capacity() + filter_.capacity()) * sizeof(uint64_t);
}

void SignatureSet::remove_into(const MultisetView& doc, Multiset& m, const PollFn& poll) const {
    StopCheck check(nullptr, poll);
    m.hashes.resize(doc.size);
    m.freqs.resize(doc.size);
    m.length = 0;
    // contains() for a block of signatures at a time, in three rounds: the bitmap words of the
    // whole block are requested, then the table slots of those whose bit is set, then each is
    // decided. A large template's table (and often its bitmap) is far from the cache: the loads of
    // a block are then waited for together rather than one after another.
    constexpr uint32_t kBlock = 32;
    uint64_t mix[kBlock];
    bool maybe[kBlock];
    uint32_t kept = 0;
    for (uint32_t b = 0; b < doc.size; b += kBlock) {
        const uint32_t n = std::min(kBlock, doc.size - b);
        check.add(n);
        for (uint32_t j = 0; j < n; ++j) {
            mix[j] = fmix64(doc.hashes[b + j]);
            __builtin_prefetch(&filter_[(mix[j] >> filter_shift_) / 64]);
        }
        for (uint32_t j = 0; j < n; ++j) {
            const uint64_t f = mix[j] >> filter_shift_;
            maybe[j] = (filter_[f / 64] >> (f % 64) & 1) != 0;
            if (maybe[j]) __builtin_prefetch(&slots_[mix[j] & mask_]);
        }
        for (uint32_t j = 0; j < n; ++j) {
            const uint64_t h = doc.hashes[b + j];
            if (h == 0 ? has_zero_ : maybe[j] && in_table(h, mix[j])) continue;
            const uint32_t f = doc.freqs[b + j];
            m.hashes[kept] = h;
            m.freqs[kept] = f;
            m.length += f;
            ++kept;
        }
    }
    m.hashes.resize(kept);
    m.freqs.resize(kept);
}

Multiset without_signatures(const MultisetView& doc, const std::vector<uint64_t>& drop) {
    Multiset m;
    SignatureSet(drop).remove_into(doc, m);
    return m;
}

namespace {
// Documents [begin, end) of docs without the signatures of set, in their order.
Collection without_range(const Collection& docs, const SignatureSet& set, size_t begin, size_t end,
                         const CancelToken* cancel) {
    StopCheck check(cancel);
    Collection out;
    size_t total = 0;
    for (size_t i = begin; i < end; ++i) total += docs.doc(i).size;
    out.reserve(end - begin, total);
    Multiset m;
    for (size_t i = begin; i < end; ++i) {
        const MultisetView v = docs.doc(i);
        check.add(v.size + 1);
        // A document holding no signature of the set is added as it is, without the copy into m.
        uint32_t k = 0;
        while (k < v.size && !set.contains(v.hashes[k])) ++k;
        if (k == v.size) {
            out.add(docs.id(i), v);
            continue;
        }
        set.remove_into(v, m);
        out.add(docs.id(i), m.view());
    }
    return out;
}
}  // namespace

Collection without_signatures(const Collection& docs, const std::vector<uint64_t>& drop, const CancelToken* cancel,
                              int threads) {
    const SignatureSet set(drop, cancel);
    // Below this many documents a second thread costs more than it saves.
    constexpr size_t kMinPerThread = 4096;
    const size_t parts =
        std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), docs.size() / kMinPerThread));
    if (parts == 1) return without_range(docs, set, 0, docs.size(), cancel);
    // Contiguous ranges of about equal signature counts, each copied on its own thread into its
    // own collection; the collections are then joined in range order, so the documents keep
    // docs' order (the pairs' indexes stay valid in docs).
    size_t total = 0;
    for (size_t i = 0; i < docs.size(); ++i) total += docs.doc(i).size;
    std::vector<size_t> bounds{0};
    size_t seen = 0;
    for (size_t i = 0; i < docs.size() && bounds.size() < parts; ++i) {
        seen += docs.doc(i).size;
        if (seen * parts >= total * bounds.size()) bounds.push_back(i + 1);
    }
    while (bounds.size() <= parts) bounds.push_back(docs.size());
    bounds.back() = docs.size();
    std::vector<Collection> out(parts);
    join_detail::run_workers(static_cast<int>(parts), parts, 1, [&](int, size_t b, size_t e) {
        for (size_t p = b; p < e; ++p) out[p] = without_range(docs, set, bounds[p], bounds[p + 1], cancel);
    });
    for (size_t p = 1; p < parts; ++p) out[0].append(std::move(out[p]));
    return std::move(out[0]);
}

}  // namespace spotsigs
