// The content measure's statistics in passes over the rows (content_passes.hpp).
#include "core/template/content_passes.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "core/common/error.hpp"
#include "core/join/join_internal.hpp"
#include "core/signature/hash.hpp"
#include "core/template/content.hpp"

namespace spotsigs {

namespace {

// Signatures are dealt into 2^kBucketBits buckets by the top bits of fmix64 of their hash; a
// range of buckets is the unit of the passes (the finest split there is).
constexpr unsigned kBucketBits = 12;
constexpr size_t kBuckets = size_t(1) << kBucketBits;

// Work (entries visited, comparisons, pairs) between two looks at poll and the stop flag.
constexpr size_t kWork = size_t(1) << 16;

// Bytes a range is planned to take per entry of its signatures: the entry (16) and its share of
// the samples (at most 12: a signature on m >= 2 pages holds 16 bytes and 4 per sampled page);
// the pairs come on top (measured once the samples are known: a range whose pairs do not fit
// is split in two and read again).
constexpr size_t kRangeBytesPerEntry = 28;
// Bytes an overlap read takes per entry it keeps (hash and frequency) and per page (where its
// entries start and how many).
constexpr size_t kOverlapBytesPerEntry = 12;
constexpr size_t kOverlapBytesPerPage = 12;

inline size_t bucket_of(uint64_t h) noexcept {
    return static_cast<size_t>(fmix64(h) >> (64 - kBucketBits));
}

// The inverse of an odd number modulo 2^64 (Newton's iteration, each step doubling the bits that
// are right; an odd a is its own inverse modulo 8).
constexpr uint64_t odd_inverse(uint64_t a) {
    uint64_t x = a;
    for (int i = 0; i < 5; ++i) x *= 2 - a * x;
    return x;
}

// The id whose fmix64 is k (every step of fmix64 can be undone).
uint64_t unmix(uint64_t k) {
    k ^= k >> 33;
    k *= odd_inverse(0xc4ceb93fe53d87cdULL);
    k ^= k >> 33;
    k *= odd_inverse(0xff51afd7ed558ccdULL);
    k ^= k >> 33;
    return k;
}

// Counts work and, every kWork units, calls poll and throws Error(Canceled) once cancel is set.
class Work {
public:
    explicit Work(const TemplatePassOptions& o) : o_(o) {}
    void add(size_t n) {
        work_ += n;
        if (work_ < kWork) return;
        work_ = 0;
        if (o_.poll) o_.poll();
        join_detail::throw_if_canceled(o_.cancel);
    }

private:
    const TemplatePassOptions& o_;
    size_t work_ = 0;
};

// std::sort that counts its comparisons as work.
template <class T, class Less>
void sort_counted(std::vector<T>& v, Less less, Work& work) {
    std::sort(v.begin(), v.end(), [&](const T& x, const T& y) {
        work.add(1);
        return less(x, y);
    });
}

struct Range {
    size_t lo;  // first bucket
    size_t hi;  // one past the last
};

// [lo, hi) cut into ranges of at most `budget` bytes at per_entry bytes an entry of hist (one
// bucket alone may be more), at least min_parts of them where there are buckets enough.
std::vector<Range> plan(const std::vector<size_t>& hist, size_t per_entry, size_t fixed_per_part, size_t budget,
                        size_t min_parts) {
    std::vector<Range> out;
    const size_t parts = std::max<size_t>(1, std::min(min_parts, kBuckets));
    for (size_t p = 0; p < parts; ++p) {
        const size_t lo = kBuckets * p / parts, hi = kBuckets * (p + 1) / parts;
        size_t start = lo, bytes = fixed_per_part;
        for (size_t b = lo; b < hi; ++b) {
            const size_t add = hist[b] * per_entry;
            if (b > start && budget != 0 && bytes + add > budget) {
                out.push_back(Range{start, b});
                start = b;
                bytes = fixed_per_part;
            }
            bytes += add;
        }
        out.push_back(Range{start, hi});
    }
    return out;
}

struct Entry {
    uint64_t hash;
    uint32_t rank;
    uint32_t freq;
};

// The samples of the signatures of one or more ranges of buckets and the distinct pairs of their
// pages, judged together once the pairs' overlaps are summed: the overlap reads serve every range
// of the group at once.
struct Group {
    std::vector<uint64_t> sigs;    // per signature held by two or more pages
    std::vector<size_t> start{0};  // per signature + 1: offsets into ranks
    std::vector<uint32_t> ranks;   // each sample's ranks, ascending
    std::vector<uint64_t> pairs;   // distinct pairs of sampled pages (a << 32 | b, a < b), ascending
    size_t ranges = 0;             // ranges collected

    bool empty() const noexcept { return ranges == 0; }
    size_t bytes() const noexcept {
        return sigs.capacity() * sizeof(uint64_t) + start.capacity() * sizeof(size_t) +
               ranks.capacity() * sizeof(uint32_t) + pairs.capacity() * sizeof(uint64_t);
    }
    void clear() { *this = Group(); }
};

class Passes {
public:
    Passes(const RowSource& read, const TemplatePassOptions& opt, TemplatePassInfo& info)
        : read_(read), opt_(opt), info_(info), work_(opt) {}

    // Per round, the ranges' samples and pairs are collected into a group while it stays within
    // half of what the limit leaves; the group's pairs then get their overlaps in reads shared by
    // all its ranges, and its signatures are judged. When one group held the whole first round,
    // the second round judges the same samples (a sample depends only on which pages hold the
    // signature, not on the round), so it reads the rows only for the overlaps.
    std::vector<uint64_t> run() {
        first_read();
        bool kept = false;  // group_ holds the previous round's every sample and pair
        for (int round = 0; round < kRounds; ++round) {
            lengths_done_ = round == 0;
            std::vector<uint64_t> found;
            found_ = &found;
            if (kept && !fits(finish_bytes(group_.pairs.size()) + (group_.ranges > 1 ? one_bucket_bytes() : 0))) {
                // Beside the first round's template it no longer fits: collected again in ranges.
                group_.clear();
                std::vector<uint64_t>().swap(filter_);
                kept = false;
            }
            if (kept) {
                info_.ranges += group_.ranges;
            } else {
                std::vector<Range> todo = plan(hist_, kRangeBytesPerEntry, 0, budget() / 2, opt_.ranges);
                std::reverse(todo.begin(), todo.end());
                bool flushed = false;
                while (!todo.empty()) {
                    const Range r = todo.back();
                    const Step step = collect_range(r, round);
                    if (step == Step::kAdded) {
                        todo.pop_back();
                        ++info_.ranges;
                    } else if (step == Step::kGroupFull) {
                        finish_group(round, found, false);
                        flushed = true;
                    } else {
                        // Too large alone: its halves, the lower one first.
                        todo.pop_back();
                        const size_t mid = r.lo + (r.hi - r.lo) / 2;
                        todo.push_back(Range{mid, r.hi});
                        todo.push_back(Range{r.lo, mid});
                    }
                }
                kept = !flushed && round + 1 < kRounds;
                if (kept) build_filter();
            }
            finish_group(round, found, kept && round + 1 < kRounds);
            sort_counted(found, std::less<uint64_t>(), work_);
            found_ = nullptr;
            if (round == 0) info_.shared = shared_;
            if (round + 1 == kRounds) return found;
            prev_.reset();
            prev_ = std::make_unique<SignatureSet>(found, opt_.cancel);
        }
        return {};
    }

private:
    enum class Step { kAdded, kGroupFull, kSplit };

    // Bytes held beside a range's structures: the page order and lengths, the bucket counts, the
    // read's bitmap, the previous round's template, the group and the shared signatures' filter.
    size_t fixed() const {
        return (keys_.capacity() + lengths_.capacity() + hist_.capacity() + seen_.capacity() + filter_.capacity() +
                (found_ != nullptr ? found_->capacity() : 0)) *
                   sizeof(uint64_t) +
               (prev_ ? prev_->memory_bytes() : 0) + group_.bytes();
    }
    // What a range may take (0: no limit); at least 1 with a limit.
    size_t budget() const {
        if (opt_.memory_limit == 0) return 0;
        const size_t f = fixed();
        return opt_.memory_limit > f ? opt_.memory_limit - f : 1;
    }
    // Notes that extra bytes are held beside fixed().
    void held(size_t extra) { info_.peak_bytes = std::max(info_.peak_bytes, fixed() + extra); }
    bool fits(size_t extra) const { return opt_.memory_limit == 0 || fixed() + extra <= opt_.memory_limit; }
    // The least a group of p pairs needs beside fixed() to have their overlaps summed: the
    // overlaps, the needed pages' bitmap and numbering, and per needed page (n_ at most) where
    // its entries start and how many.
    size_t finish_bytes(size_t p) const {
        return p * sizeof(uint32_t) + (n_ + 63) / 64 * (sizeof(uint64_t) + sizeof(uint32_t)) + 8 +
               n_ * kOverlapBytesPerPage;
    }

    // The most an overlap read of one bucket can take (every row needed, and its vectors grown by
    // half once more): a group of more than one range is kept within the limit with it, so that
    // its overlap reads cannot fail where each of its ranges alone would not.
    size_t one_bucket_bytes() const {
        const size_t most = hist_.empty() ? 0 : *std::max_element(hist_.begin(), hist_.end());
        return most * kOverlapBytesPerEntry * 3 / 2;
    }

    [[noreturn]] void too_large(const std::string& what, size_t need) const {
        throw Error(ErrorKind::OutOfMemory,
                    "the content statistics need " + std::to_string((need >> 10) + 1) + " kB in passes",
                    "Their smallest step, " + what + ", needs " + std::to_string((need >> 10) + 1) + " kB.");
    }

    void rows_changed() const {
        if (opt_.rows_changed) opt_.rows_changed();
        throw Error(ErrorKind::InvalidParameter, "the rows changed between two reads of the content statistics");
    }

    // The first read: every row's place in the page order and its length, and the number of
    // entries in each bucket.
    void first_read() {
        hist_.assign(kBuckets, 0);
        std::vector<std::pair<uint64_t, uint64_t>> kl;
        bool over = false;
        size_t rows = 0;
        ++info_.reads;
        read_([&](int64_t id, const MultisetView& row) {
            ++rows;
            if (!over) {
                kl.emplace_back(fmix64(static_cast<uint64_t>(id)), row.length);
                over = !fits(kl.capacity() * sizeof(kl[0]));
                if (over) std::vector<std::pair<uint64_t, uint64_t>>().swap(kl);
            }
            for (uint32_t k = 0; k < row.size; ++k) ++hist_[bucket_of(row.hashes[k])];
            entries_ += row.size;
            work_.add(row.size + 1);
        });
        info_.rows = rows;
        if (over) too_large("the order of the " + std::to_string(rows) + " rows", fixed() + 24 * rows);
        held(kl.capacity() * sizeof(kl[0]));
        sort_counted(
            kl, [](const auto& x, const auto& y) { return x.first < y.first; }, work_);
        for (size_t i = 1; i < kl.size(); ++i)
            if (kl[i].first == kl[i - 1].first) {
                const int64_t id = static_cast<int64_t>(unmix(kl[i].first));
                if (opt_.repeated_id) opt_.repeated_id(id);
                throw Error(ErrorKind::InvalidParameter, "the id " + std::to_string(id) + " occurs more than once");
            }
        n_ = kl.size();
        keys_.resize(n_);
        lengths_.resize(n_);
        for (size_t i = 0; i < n_; ++i) {
            keys_[i] = kl[i].first;
            lengths_[i] = kl[i].second;
        }
        std::vector<std::pair<uint64_t, uint64_t>>().swap(kl);
        seen_.assign((n_ + 63) / 64, 0);
        if (!fits(0)) too_large("the order of the " + std::to_string(n_) + " rows", fixed());
    }

    // Reads every row again, calling f(rank, row); checks that the rows are the first read's.
    template <class F>
    void read_ranked(F&& f) {
        std::fill(seen_.begin(), seen_.end(), 0);
        size_t rows = 0;
        ++info_.reads;
        read_([&](int64_t id, const MultisetView& row) {
            const uint64_t key = fmix64(static_cast<uint64_t>(id));
            auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
            if (it == keys_.end() || *it != key) rows_changed();
            const uint32_t rank = static_cast<uint32_t>(it - keys_.begin());
            uint64_t& w = seen_[rank / 64];
            if (w >> (rank % 64) & 1) rows_changed();
            w |= uint64_t(1) << (rank % 64);
            ++rows;
            if (!lengths_done_) {
                // The round's length: without the previous round's template.
                uint64_t len = row.length;
                for (uint32_t k = 0; k < row.size; ++k)
                    if (prev_->contains(row.hashes[k])) len -= row.freqs[k];
                lengths_[rank] = len;
            }
            f(rank, row);
            work_.add(row.size + 1);
        });
        if (rows != n_) rows_changed();
        lengths_done_ = true;
    }

    // The filter of the signatures held by two or more pages (group_ has them all): a bitmap of
    // 16 bits a signature, bit (fmix64(h) mod its size) set for each. Two pages share only such
    // signatures, so the overlap reads keep a page's signatures whose bit is set and no others
    // (the others add nothing to any overlap). Built only where it fits beside the group.
    void build_filter() {
        std::vector<uint64_t>().swap(filter_);
        size_t bits = 64;
        while (bits < 16 * group_.sigs.size()) bits *= 2;
        if (group_.sigs.empty() || !fits(finish_bytes(group_.pairs.size()) + bits / 8)) return;
        filter_.assign(bits / 64, 0);
        filter_mask_ = bits - 1;
        for (uint64_t h : group_.sigs) {
            const uint64_t f = fmix64(h) & filter_mask_;
            filter_[f / 64] |= uint64_t(1) << (f % 64);
        }
        work_.add(group_.sigs.size());
        held(finish_bytes(group_.pairs.size()));
    }
    bool may_be_shared(uint64_t h) const noexcept {
        if (filter_.empty()) return true;
        const uint64_t f = fmix64(h) & filter_mask_;
        return (filter_[f / 64] >> (f % 64) & 1) != 0;
    }

    // Collects into group_ the samples of the signatures of the buckets of r held by two or more
    // pages, and their distinct pairs: kAdded; kGroupFull (nothing added) when the group must be
    // judged first to make room, kSplit when r alone would not fit and can be split.
    Step collect_range(const Range r, int round) {
        size_t e = 0;
        for (size_t b = r.lo; b < r.hi; ++b) e += hist_[b];
        const bool splittable = r.hi - r.lo > 1;
        // The entries and, at most, the samples of their signatures (reserved below).
        const size_t first_bytes = e * sizeof(Entry) + (e / 2) * (2 * sizeof(uint64_t)) + e * sizeof(uint32_t) + 8;
        if (!fits(first_bytes + (group_.empty() ? 0 : finish_bytes(group_.pairs.size())))) {
            if (!group_.empty()) return Step::kGroupFull;
            if (splittable) return Step::kSplit;
            too_large("the entries of one signature bucket", fixed() + first_bytes);
        }
        // The range's entries, then per signature held by two or more pages its sample.
        std::vector<Entry> entries;
        entries.reserve(e);
        held(entries.capacity() * sizeof(Entry));
        read_ranked([&](uint32_t rank, const MultisetView& row) {
            for (uint32_t k = 0; k < row.size; ++k) {
                const size_t b = bucket_of(row.hashes[k]);
                if (b >= r.lo && b < r.hi) {
                    if (entries.size() == e) rows_changed();
                    entries.push_back(Entry{row.hashes[k], rank, row.freqs[k]});
                }
            }
        });
        sort_counted(
            entries,
            [](const Entry& x, const Entry& y) { return x.hash != y.hash ? x.hash < y.hash : x.rank < y.rank; }, work_);
        std::vector<uint64_t> sigs;
        std::vector<size_t> start{0};
        std::vector<uint32_t> ranks;
        sigs.reserve(e / 2);  // every signature kept has two entries or more
        start.reserve(e / 2 + 1);
        ranks.reserve(e);
        size_t raw_pairs = 0, shared = 0;
        for (size_t i = 0; i < entries.size();) {
            size_t j = i;
            while (j < entries.size() && entries[j].hash == entries[i].hash) ++j;
            work_.add(j - i);
            if (j - i >= 2) {
                sigs.push_back(entries[i].hash);
                const size_t m = std::min<size_t>(j - i, kSample);
                for (size_t k = i; k < i + m; ++k) ranks.push_back(entries[k].rank);
                start.push_back(ranks.size());
                raw_pairs += m * (m - 1) / 2;
                shared += j - i;
            }
            i = j;
        }
        const size_t samples_bytes = sigs.capacity() * sizeof(uint64_t) + start.capacity() * sizeof(size_t) +
                                     ranks.capacity() * sizeof(uint32_t);
        held(entries.capacity() * sizeof(Entry) + samples_bytes);
        std::vector<Entry>().swap(entries);
        // The range's pairs, then the group's merged with them, and the samples copied into the
        // group; then the overlaps of all of them.
        const size_t all_pairs = group_.pairs.size() + raw_pairs;
        const size_t tight =
            sigs.size() * sizeof(uint64_t) + (start.size() - 1) * sizeof(size_t) + ranks.size() * sizeof(uint32_t);
        const size_t need = samples_bytes + raw_pairs * sizeof(uint64_t) + all_pairs * sizeof(uint64_t) + tight +
                            finish_bytes(all_pairs);
        const bool over_half = opt_.memory_limit != 0 && !group_.empty() &&
                               group_.bytes() + tight + raw_pairs * sizeof(uint64_t) >
                                   (opt_.memory_limit - std::min(opt_.memory_limit, fixed() - group_.bytes())) / 2;
        if (over_half || !fits(need) || (!group_.empty() && !fits(need + one_bucket_bytes()))) {
            if (!group_.empty()) return Step::kGroupFull;
            if (splittable) return Step::kSplit;
            too_large("the pairs of the samples of one signature bucket", fixed() + need);
        }
        if (round == 0) shared_ += sigs.size();
        if (round == 0) shared_entries_ += shared;
        std::vector<uint64_t> pairs;
        pairs.reserve(raw_pairs);
        for (size_t s = 0; s + 1 < start.size(); ++s) {
            const uint32_t* x = ranks.data() + start[s];
            const size_t m = start[s + 1] - start[s];
            for (size_t a = 0; a < m; ++a)
                for (size_t b = a + 1; b < m; ++b) pairs.push_back(uint64_t(x[a]) << 32 | x[b]);
            work_.add(m * m);
        }
        sort_counted(pairs, std::less<uint64_t>(), work_);
        pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
        {
            std::vector<uint64_t> merged;
            merged.reserve(group_.pairs.size() + pairs.size());
            held(samples_bytes + pairs.capacity() * sizeof(uint64_t) + merged.capacity() * sizeof(uint64_t));
            std::merge(group_.pairs.begin(), group_.pairs.end(), pairs.begin(), pairs.end(),
                       std::back_inserter(merged));
            work_.add(merged.size());
            merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
            std::vector<uint64_t>().swap(pairs);
            group_.pairs.swap(merged);
        }
        // The samples appended to the group's (its vectors sized exactly: the old and the new
        // are held together while they are copied).
        held(samples_bytes + tight);
        append(group_.sigs, sigs);
        const size_t base = group_.ranks.size();
        std::vector<size_t> at;
        at.reserve(group_.start.size() + start.size() - 1);
        at = group_.start;
        for (size_t s = 1; s < start.size(); ++s) at.push_back(base + start[s]);
        group_.start.swap(at);
        std::vector<size_t>().swap(at);
        append(group_.ranks, ranks);
        ++group_.ranges;
        held(samples_bytes);
        return Step::kAdded;
    }

    // dst with src appended, its capacity its size.
    template <class T>
    static void append(std::vector<T>& dst, const std::vector<T>& src) {
        std::vector<T> out;
        out.reserve(dst.size() + src.size());
        out.insert(out.end(), dst.begin(), dst.end());
        out.insert(out.end(), src.begin(), src.end());
        dst.swap(out);
    }

    // Judges the group's signatures in round `round`, appending the template ones to found; the
    // group is cleared unless keep.
    void finish_group(int round, std::vector<uint64_t>& found, bool keep) {
        if (group_.sigs.empty()) {
            if (!keep) group_.clear();
            return;
        }
        const std::vector<uint64_t>& pairs = group_.pairs;
        std::vector<uint32_t> overlap(pairs.size(), 0);
        std::vector<uint64_t> needed((n_ + 63) / 64, 0);
        for (uint64_t p : pairs) {
            needed[(p >> 32) / 64] |= uint64_t(1) << ((p >> 32) % 64);
            needed[(p & 0xffffffffu) / 64] |= uint64_t(1) << ((p & 0xffffffffu) % 64);
        }
        work_.add(pairs.size());
        const size_t range_bytes = overlap.capacity() * sizeof(uint32_t) + needed.capacity() * sizeof(uint64_t);
        held(range_bytes);
        if (!pairs.empty()) add_overlaps(round, range_bytes, pairs, overlap, needed);
        // Where each page's pairs start: the pairs (a, b) of page a are pairs[first[a], first[a + 1])
        // (pairs ascend by a << 32 | b), so a sample's pair is found among a's few partners rather
        // than among all the group's pairs, whose search missed the cache at nearly every step.
        // Built once the overlap reads have released their per-page arrays (finish_bytes counts
        // kOverlapBytesPerPage a page for them); without room, the search of all pairs stays.
        std::vector<uint32_t> first;
        const size_t first_bytes = (n_ + 1) * sizeof(uint32_t);
        if (opt_.page_index && pairs.size() < UINT32_MAX && fits(range_bytes + first_bytes)) {
            first.resize(n_ + 1);
            size_t i = 0;
            for (size_t a = 0; a <= n_; ++a) {
                while (i < pairs.size() && (pairs[i] >> 32) < a) ++i;
                first[a] = static_cast<uint32_t>(i);
            }
            held(range_bytes + first_bytes);
        }
        auto find = [&](uint64_t key) {
            auto lo = pairs.begin(), hi = pairs.end();
            if (!first.empty()) {
                lo += first[key >> 32];
                hi = pairs.begin() + first[(key >> 32) + 1];
            }
            return static_cast<size_t>(std::lower_bound(lo, hi, key) - pairs.begin());
        };
        // Judge every signature as the definition says: the mean over its sample's pairs, in
        // order, of the pages' similarity in the round.
        for (size_t s = 0; s + 1 < group_.start.size(); ++s) {
            const uint32_t* x = group_.ranks.data() + group_.start[s];
            const size_t m = group_.start[s + 1] - group_.start[s];
            double sum = 0;
            for (size_t a = 0; a < m; ++a)
                for (size_t b = a + 1; b < m; ++b) {
                    const uint64_t key = uint64_t(x[a]) << 32 | x[b];
                    const uint64_t o = overlap[find(key)];
                    const uint64_t la = lengths_[x[a]], lb = lengths_[x[b]];
                    sum += la == 0 || lb == 0 ? 0.0 : static_cast<double>(o) / static_cast<double>(la + lb - o);
                }
            work_.add(m * m);
            if (sum < kCoherence * static_cast<double>(m * (m - 1) / 2)) found.push_back(group_.sigs[s]);
        }
        if (!keep) {
            group_.clear();
            std::vector<uint64_t>().swap(filter_);
        }
    }
    // Adds to overlap[i] the overlap of the pages of pairs[i] in the round (without the previous
    // round's template), over reads of the needed pages' signatures of a range of buckets each
    // (only those that pass the shared signatures' filter, when there is one).
    // The ranges are planned on the needed pages' share of the entries (pages of average size);
    // a read whose entries do not fit stops keeping them, and its range is read again in halves
    // (its overlaps are added only once a read completes).
    void add_overlaps(int round, size_t range_bytes, const std::vector<uint64_t>& pairs, std::vector<uint32_t>& overlap,
                      const std::vector<uint64_t>& needed) {
        // The needed pages numbered in rank order: before[w] pages in the words before w.
        std::vector<uint32_t> before(needed.size() + 1, 0);
        for (size_t w = 0; w < needed.size(); ++w)
            before[w + 1] = before[w] + static_cast<uint32_t>(__builtin_popcountll(needed[w]));
        const size_t m = before.back();
        auto index = [&](uint32_t rank) {
            const uint64_t below = (uint64_t(1) << (rank % 64)) - 1;
            return before[rank / 64] + static_cast<uint32_t>(__builtin_popcountll(needed[rank / 64] & below));
        };
        range_bytes += before.capacity() * sizeof(uint32_t);
        const size_t per_page = m * kOverlapBytesPerPage;
        const size_t base = range_bytes + per_page;
        const size_t budget_left = opt_.memory_limit == 0 ? 0
                                   : opt_.memory_limit > fixed() + range_bytes
                                       ? opt_.memory_limit - fixed() - range_bytes
                                       : 1;
        std::vector<size_t> share(kBuckets);
        for (size_t b = 0; b < kBuckets; ++b) {
            share[b] = n_ == 0 ? 0 : (hist_[b] * m + n_ - 1) / n_;
            // With the filter: about the bucket's entries of shared signatures (the signatures are
            // spread evenly over the buckets), and the share of the others that pass it (about
            // one in sixteen; a read that finds more splits).
            if (!filter_.empty()) share[b] = std::min(share[b], shared_entries_ * hist_[b] / entries_ + share[b] / 8);
        }
        std::vector<Range> todo = plan(share, kOverlapBytesPerEntry, per_page, budget_left, opt_.overlap_ranges);
        std::reverse(todo.begin(), todo.end());
        while (!todo.empty()) {
            const Range q = todo.back();
            todo.pop_back();
            if (!fits(base)) too_large("the sampled pages of one signature range", fixed() + base);
            std::vector<size_t> at(m, 0);
            std::vector<uint32_t> count(m, 0);
            std::vector<uint64_t> hashes;
            std::vector<uint32_t> freqs;
            size_t planned = 0;
            for (size_t b = q.lo; b < q.hi; ++b) planned += share[b];
            if (fits(base + planned * kOverlapBytesPerEntry)) {
                hashes.reserve(planned);
                freqs.reserve(planned);
            }
            bool over = false;
            read_ranked([&](uint32_t rank, const MultisetView& row) {
                if (over || (needed[rank / 64] >> (rank % 64) & 1) == 0) return;
                const uint32_t i = index(rank);
                at[i] = hashes.size();
                for (uint32_t k = 0; k < row.size; ++k) {
                    const uint64_t h = row.hashes[k];
                    const size_t b = bucket_of(h);
                    if (b < q.lo || b >= q.hi || !may_be_shared(h) || (round > 0 && prev_->contains(h))) continue;
                    if (hashes.size() == hashes.capacity()) {
                        // Grows by half, within the limit.
                        const size_t want = std::max<size_t>(1024, hashes.capacity() + hashes.capacity() / 2);
                        if (!fits(base + want * kOverlapBytesPerEntry)) {
                            over = true;
                            return;
                        }
                        hashes.reserve(want);
                        freqs.reserve(want);
                        held(base + hashes.capacity() * sizeof(uint64_t) + freqs.capacity() * sizeof(uint32_t));
                    }
                    hashes.push_back(h);
                    freqs.push_back(row.freqs[k]);
                }
                count[i] = static_cast<uint32_t>(hashes.size() - at[i]);
            });
            if (over) {
                if (q.hi - q.lo == 1)
                    too_large("the signatures of one bucket on the sampled pages",
                              fixed() + base + hashes.capacity() * kOverlapBytesPerEntry * 3 / 2);
                const size_t mid = q.lo + (q.hi - q.lo) / 2;
                todo.push_back(Range{mid, q.hi});
                todo.push_back(Range{q.lo, mid});
                continue;
            }
            for (size_t i = 0; i < pairs.size(); ++i) {
                const uint32_t a = index(static_cast<uint32_t>(pairs[i] >> 32));
                const uint32_t b = index(static_cast<uint32_t>(pairs[i]));
                const uint64_t* x = hashes.data() + at[a];
                const uint64_t* xe = x + count[a];
                const uint64_t* y = hashes.data() + at[b];
                const uint64_t* ye = y + count[b];
                const uint32_t* fx = freqs.data() + at[a];
                const uint32_t* fy = freqs.data() + at[b];
                const uint64_t o = sorted_overlap(x, xe, fx, y, ye, fy);
                overlap[i] += static_cast<uint32_t>(o);
                work_.add(count[a] + count[b] + 1);
            }
        }
    }

    const RowSource& read_;
    const TemplatePassOptions& opt_;
    TemplatePassInfo& info_;
    Work work_;
    size_t n_ = 0;
    size_t shared_ = 0;
    std::vector<uint64_t> keys_;     // fmix64 of every row's id, ascending: a row's rank is its place
    std::vector<uint64_t> lengths_;  // per rank: the length in the round
    std::vector<size_t> hist_;       // per bucket: the entries of the rows
    size_t entries_ = 0;             // the rows' entries
    size_t shared_entries_ = 0;      // those of signatures on two or more rows (in a round)
    std::vector<uint64_t> filter_;   // the shared signatures' filter (build_filter), or empty
    uint64_t filter_mask_ = 0;
    Group group_;                                   // the samples and pairs being collected
    std::vector<uint64_t> seen_;                    // per rank: whether the current read gave it already
    std::unique_ptr<SignatureSet> prev_;            // the previous round's template
    const std::vector<uint64_t>* found_ = nullptr;  // the round's template so far
    bool lengths_done_ = true;
};

}  // namespace

std::vector<uint64_t> template_signatures_in_passes(const RowSource& read, const TemplatePassOptions& opt,
                                                    TemplatePassInfo* info) {
    TemplatePassInfo local;
    TemplatePassInfo& i = info != nullptr ? *info : local;
    i = TemplatePassInfo();
    return Passes(read, opt, i).run();
}

}  // namespace spotsigs
