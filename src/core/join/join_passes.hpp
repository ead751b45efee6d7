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
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
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
// documents with lengths in [probe_lo, read_hi].
struct JoinPass {
    uint64_t probe_lo;
    uint64_t probe_hi;
    uint64_t read_hi;
};

// The largest y >= x with fl(x / y) >= tau: the longest partner a document of length x >= 1 can
// have (Lemma 3), capped at UINT32_MAX (no stored length is longer).
uint64_t max_partner_length(uint64_t x, double tau) noexcept;

// The bytes a Collection takes for one document with `distinct` signatures at frequency width
// `width` (0, 1, 2 or 4): its hashes, frequencies and per-document entries.
uint64_t collection_bytes_of(uint64_t distinct, unsigned width) noexcept;

// Passes over the lengths of hist (ascending, non-empty lengths, no length twice), each reading
// at most pass_bytes of documents where the lengths allow it (one length and its partners that
// take more make a pass of their own), covering every length as the proof above requires.
// With start, the plan covers only the lengths from start on (its first pass starts there): the
// rest of a plan replanned once passes have shown what they need.
std::vector<JoinPass> plan_passes(const std::vector<LengthCount>& hist, double tau, uint64_t pass_bytes,
                                  uint64_t start = 1);

// Splits pass p in two passes that cover its probe range, at the length that halves its documents
// read; false when p's probe range holds only one length of hist (it cannot be split).
bool split_pass(const JoinPass& p, const std::vector<LengthCount>& hist, double tau, JoinPass& first, JoinPass& second);

// The bytes of the documents a pass reads, from hist.
uint64_t pass_read_bytes(const JoinPass& p, const std::vector<LengthCount>& hist) noexcept;

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
