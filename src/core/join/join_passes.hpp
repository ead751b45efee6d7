// A self-join in passes over ranges of document lengths, for joins whose rows or structures do
// not fit the memory limit at once.
//
// A pass covers the probe lengths [probe_lo, probe_hi): it reads only the documents whose length
// lies in [probe_lo, read_hi], read_hi = max_partner_length(l) for l the longest length of a
// document in the probe range (the histogram's; no document has a length in (l, probe_hi)), and
// reports only the pairs whose shorter document has a length below probe_hi
// (JoinOptions::probe_below).
//
// Proof that the passes of plan_passes() together report every result pair exactly once. Their
// probe ranges are consecutive: the first starts at 1, each next one where the one before ends,
// and the last ends past the longest document, so every length lies in exactly one of them. Take
// a result pair A, B with m = min(|A|, |B|) (both non-empty: empty documents pair with nothing)
// and let P be the pass whose probe range holds m.
//  - P reports it. The shorter document has length m >= probe_lo, so P reads it. The longer one,
//    of length y >= m, passes the exact length filter (join_bounds.hpp Lemma 3): fl(m / y) >= tau,
//    so y <= max_partner_length(m) <= max_partner_length(l) = read_hi, since m <= l (m is the
//    length of a document in P's probe range; the largest partner length grows with the length:
//    fl(x / y) grows with x, Lemma 0), and P reads it too.
//    The matcher is exact on the documents it is given, so it finds the pair, and keeps it since
//    m < probe_hi.
//  - No other pass reports it. A pass Q reports only pairs of documents it read whose shorter
//    length is below Q.probe_hi; it read none shorter than Q.probe_lo, so that length lies in Q's
//    probe range; only P's probe range holds m.
// Similarities are computed as in a single pass (the same documents, the same arithmetic), and
// only the length order, not the collection, decides which pass a pair belongs to.
//
// Partner ranges. At low thresholds the partners of one length can take more than a pass may
// hold (at tau 0.5 every length from l to 2l): a plan of whole passes would then give each
// length a pass of its own, each reading nearly the same rows again. Such a probe range is
// instead covered by several passes, each reading the probe rows and one range of partner
// lengths: [part_lo, read_hi], consecutive ranges that start at probe_lo (the first pass's, with
// part_lo = 0) and end at the probe range's read_hi. A pass then reports only the pairs whose
// longer document's length lies in its partner range (JoinPass::reports). The proof above holds
// with one more step: P is now the one pass among those sharing the probe range that holds
// M = max(|A|, |B|) in its partner range (m <= M <= max_partner_length(m) <= the range's read_hi,
// and the partner ranges divide [probe_lo, read_hi] into consecutive parts); it reads A (m is
// in the probe range, which every such pass reads) and B, and reports the pair; the others
// sharing the probe range do not, since M is not in their partner range.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "core/join/join.hpp"

namespace spotsigs {

// The documents of one length: how many, and the bytes they take in a Collection.
struct LengthCount {
    uint64_t length;
    uint64_t docs;
    uint64_t bytes;
};

// One pass: pairs whose shorter document's length is in [probe_lo, probe_hi); it reads the
// documents with lengths in [probe_lo, read_hi]. With part_lo > probe_lo (then part_lo >=
// probe_hi) it continues a probe range begun by another pass: it reads only [probe_lo, probe_hi)
// and [part_lo, read_hi], and reports only the pairs whose longer document is at least part_lo.
struct JoinPass {
    uint64_t probe_lo;
    uint64_t probe_hi;
    uint64_t read_hi;
    uint64_t part_lo = 0;

    // Whether this pass continues a probe range that an earlier pass of the plan began.
    bool continues() const noexcept { return part_lo > probe_lo; }
    // Whether the pass reads the documents of length len.
    bool reads(uint64_t len) const noexcept {
        return len >= probe_lo && len <= read_hi && (!continues() || len < probe_hi || len >= part_lo);
    }
    // Whether the pass reports a pair of documents it read, of lengths x and y (in any order).
    bool reports(uint64_t x, uint64_t y) const noexcept {
        return std::min(x, y) < probe_hi && (!continues() || std::max(x, y) >= part_lo);
    }
};

// The largest y >= x with fl(x / y) >= tau: the longest partner a document of length x >= 1 can
// have (Lemma 3), capped at UINT32_MAX (no stored length is longer).
uint64_t max_partner_length(uint64_t x, double tau) noexcept;

// The bytes a Collection takes for one document with `distinct` signatures at frequency width
// `width` (0, 1, 2 or 4): its hashes, frequencies and per-document entries.
uint64_t collection_bytes_of(uint64_t distinct, unsigned width) noexcept;

// Passes over the lengths of hist (ascending, non-empty lengths, no length twice), each reading
// at most pass_bytes of documents where the lengths allow it, covering every length as the proof
// above requires. A length whose partners alone take more than pass_bytes, or a pass that would
// probe lengths taking under a quarter of pass_bytes (the rest of its read being partners that
// the next passes read again), starts a probe range of lengths taking up to half of pass_bytes,
// covered by passes over consecutive partner ranges (each within pass_bytes where one partner
// length allows). With start and stop, the plan covers
// only the probe lengths in [start, stop) (its first pass starts at start, its last ends at
// stop): the rest of a plan, or one probe range, planned again once passes have shown what they
// need.
std::vector<JoinPass> plan_passes(const std::vector<LengthCount>& hist, double tau, uint64_t pass_bytes,
                                  uint64_t start = 1, uint64_t stop = UINT64_MAX);

// Splits the partner range of a pass that continues a probe range in two passes, at the length
// that halves its partner documents; false when the range holds only one length of hist.
bool split_partners(const JoinPass& p, const std::vector<LengthCount>& hist, JoinPass& first, JoinPass& second);

// The bytes of the documents a pass reads, from hist.
uint64_t pass_read_bytes(const JoinPass& p, const std::vector<LengthCount>& hist) noexcept;

// An upper estimate of the bytes one pass holds at once beside what the call keeps: the pass's
// documents (`docs` of them, taking `bytes` in a Collection once filed, the longest of length
// max_len) read through the batch buffers of `sides` pipelines (2 for an R-S join), and the
// matcher's structures for them on `threads` threads, whichever method it takes (each structure at its largest: a
// dictionary slot, an index posting, prefix entries and ranks per signature occurrence, re-coded entries and counts per
// document, the length tables). Pairs in flight to the caller are not included.
uint64_t pass_bytes_estimate(uint64_t docs, uint64_t bytes, uint64_t max_len, int threads, int sides = 1) noexcept;

// The most pass_bytes_estimate gives for one of the smallest passes a plan over hist can come
// down to (a probe length with its largest partner length, join_passes.hpp's partner ranges):
// every pass of the join fits a limit that holds this beside what the call keeps, since a pass
// that does not fit is split until it is one of those.
uint64_t smallest_passes_estimate(const std::vector<LengthCount>& hist, double tau, int threads, int sides = 1);

// What running one pass gave: whether its documents and structures fit the memory limit (if
// not, at_least is a lower bound of the bytes it needs), and the most it held.
struct PassResult {
    bool fits = true;
    uint64_t at_least = 0;
    uint64_t peak = 0;
};

// Runs a join in passes over the lengths of hist within limit bytes: plans them for pass_bytes
// of documents each, calls run for each pass, and
//  - after a pass that fit, plans the rest (from the next probe range on) for margin * limit
//    divided by what that pass needed per byte of its documents (margin 0: keeps the plan);
//  - when a pass does not fit, plans its probe range again for half the bytes it read (a pass
//    continuing a probe range, whose first pass already ran, has its partner range split in two
//    instead); when the pass reads a single length and nothing can be split, calls too_large
//    (which must throw).
// Every pair of the join is then reported by exactly one pass that fit (the proof above: the
// passes that fit keep covering every probe length, and every partner range of a probe range,
// once). Returns the number of passes that fit; worst_peak gets the largest peak of one.
size_t run_planned_passes(const std::vector<LengthCount>& hist, double tau, uint64_t limit, uint64_t pass_bytes,
                          double margin, const std::function<PassResult(const JoinPass&)>& run,
                          const std::function<void(const JoinPass&, uint64_t at_least)>& too_large,
                          uint64_t& worst_peak);

// Counts documents by length as they come (the reader's tally of every row, kept even when the
// rows themselves no longer fit).
class LengthTally {
public:
    // Counts one document of the given length (0: skipped), distinct signatures and width.
    void add(uint64_t length, uint64_t distinct, unsigned width) {
        if (length == 0) return;
        LengthCount* c;
        if (length < kDense) {
            if (length >= counts_.size())
                counts_.resize(std::min<size_t>(kDense, std::max<size_t>(length + 1, 2 * counts_.size())));
            c = &counts_[length];
        } else {
            c = &far_[length];
        }
        c->docs += 1;
        c->bytes += collection_bytes_of(distinct, width);
    }
    // The histogram: ascending lengths, each once.
    std::vector<LengthCount> sorted() const;
    // Bytes held.
    size_t memory_bytes() const noexcept { return (counts_.capacity() + 2 * far_.size()) * sizeof(LengthCount); }

private:
    static constexpr uint64_t kDense = uint64_t(1) << 20;
    std::vector<LengthCount> counts_;      // by length below kDense (the length field unused)
    std::map<uint64_t, LengthCount> far_;  // the longer ones
};

// The histogram of the documents of a and b together (an R-S join's passes are planned over
// both sides: a pass reads the rows of its lengths from each).
std::vector<LengthCount> merge_histograms(const std::vector<LengthCount>& a, const std::vector<LengthCount>& b);

// The length histogram of docs (empty documents left out).
std::vector<LengthCount> length_histogram(const Collection& docs);

}  // namespace spotsigs
