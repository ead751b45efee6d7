// The content measure's statistics (content.hpp) over rows read again for each pass instead of
// held at once: the template of the definition, the same set template_signatures gives, within a
// memory limit that need not hold the rows.
//
// A signature's decision depends only on its own sample and on the similarities of the sample's
// pages in the round. So the signatures are split by a hash (the top bits of fmix64 of the
// signature) into ranges: one read of a range collects its (signature, page) entries and finds its
// signatures held by two or more pages, their samples and the distinct pairs of sampled pages.
// The samples and pairs of consecutive ranges are gathered into a group while it fits in half of
// the limit; the group's pairs then have their overlaps summed over further reads shared by all
// its ranges, each holding the sampled pages' signatures of one hash range (the overlap of two
// pages is the sum over signature ranges of their overlaps within each range), and its
// signatures are judged. With the pages' lengths (the round's) the similarity of a pair, and the
// sum over a sample's pairs in the definition's order, are those of the one-pass statistics bit
// for bit. The second round does the same with the first round's template removed from every
// page; a sample does not depend on the round, so when one group held the whole first round it
// is judged again as it is, after the overlap reads alone. The overlap reads then keep only
// the signatures that pass a filter of those held by two or more pages (no other adds to an
// overlap). Reads: 1 + R + G x Q a round (R ranges, G groups, Q overlap reads a group), and
// with one group 1 + R + 2 Q in all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/common/cancel.hpp"
#include "core/signature/multiset.hpp"

namespace spotsigs {

// One read of every row: calls visit(id, row) once for each, in any order. Every read must give
// the same rows; a caller that cannot promise it checks it (the joins' passes compare a digest).
using RowVisit = std::function<void(int64_t id, const MultisetView& row)>;
using RowSource = std::function<void(const RowVisit& visit)>;

struct TemplatePassOptions {
    // Bytes the statistics may hold at once (0: no limit). The rows are never held: a row is
    // looked at while visit runs.
    size_t memory_limit = 0;
    // At least this many signature ranges per round, and overlap reads per range (tests; 0: as
    // few as the limit allows).
    size_t ranges = 0;
    size_t overlap_ranges = 0;
    // A group's judgement finds each sample pair among its first page's pairs through an index of
    // where each page's pairs start (4 bytes a row, when the limit leaves room); false searches
    // all the group's pairs, as when it does not (tests: both give the same template).
    bool page_index = true;
    const CancelToken* cancel = nullptr;
    PollFn poll;  // called every few thousand units of work (may throw)
    // Called with an id two rows share (must throw); by default Error(InvalidParameter).
    std::function<void(int64_t)> repeated_id;
    // Called when a read gives a row the first read did not (must throw); by default
    // Error(InvalidParameter).
    std::function<void()> rows_changed;
};

// What the passes did.
struct TemplatePassInfo {
    size_t reads = 0;       // reads of the rows (the first, which tallies them, included)
    size_t ranges = 0;      // signature ranges judged, over both rounds
    size_t peak_bytes = 0;  // the most bytes held at once
    size_t shared = 0;      // signatures held by two or more pages
    size_t rows = 0;        // rows read
};

// The template signatures (ascending) of the rows read gives, exactly as template_signatures
// (content.hpp) on those rows. Throws Error(OutOfMemory) when even one signature bucket, or the
// 16 bytes a row of the page order and lengths, cannot fit memory_limit; Error(Canceled) when
// cancel is set; and what read, poll and the callbacks throw.
std::vector<uint64_t> template_signatures_in_passes(const RowSource& read, const TemplatePassOptions& opt,
                                                    TemplatePassInfo* info = nullptr);

}  // namespace spotsigs
