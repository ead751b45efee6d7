// Planning a self-join in passes over length ranges (see join_passes.hpp).
#include "core/join/join_passes.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

#include "core/join/join_bounds.hpp"
#include "core/join/join_internal.hpp"

namespace spotsigs {

namespace {

constexpr uint64_t kLongest = UINT32_MAX;  // no stored length is longer (packed.hpp)

// Index of the first entry of hist with length >= len.
size_t first_at_least(const std::vector<LengthCount>& hist, uint64_t len) {
    return static_cast<size_t>(
        std::lower_bound(hist.begin(), hist.end(), len, [](const LengthCount& c, uint64_t l) { return c.length < l; }) -
        hist.begin());
}

// The bytes of hist's entries [i, j) from the running sums sums (sums[k]: entries before k).
uint64_t bytes_between(const std::vector<uint64_t>& sums, size_t i, size_t j) {
    return sums[j] - sums[i];
}

}  // namespace

uint64_t max_partner_length(uint64_t x, double tau) noexcept {
    if (x >= kLongest) return kLongest;
    const double est = std::floor(static_cast<double>(x) / tau);
    uint64_t y = est >= static_cast<double>(kLongest) ? kLongest : std::max<uint64_t>(x, static_cast<uint64_t>(est));
    // fl(x / y) >= tau is monotone in y (Lemma 0): walk from the estimate to its last y.
    while (y > x && !join_detail::ratio_reaches(x, y, tau)) --y;
    while (y < kLongest && join_detail::ratio_reaches(x, y + 1, tau)) ++y;
    return y;
}

uint64_t collection_bytes_of(uint64_t distinct, unsigned width) noexcept {
    // ids, where, lengths (8 bytes each), sizes, fpos (4 each), width (1), then the signatures.
    return 33 + distinct * (8 + width);
}

namespace {

// Appends the passes of one probe range whose first length's partners do not fit pass_bytes:
// the probe lengths hist[i..] taking up to half of pass_bytes (at least one, none at or past
// stop), then passes over consecutive partner ranges from lo to the range's read_hi, each
// reading the probe documents and partners within pass_bytes (at least one partner length).
// Returns the index of the first length after the probe range.
size_t plan_partner_ranges(const std::vector<LengthCount>& hist, const std::vector<uint64_t>& sums, double tau,
                           uint64_t pass_bytes, size_t i, uint64_t lo, uint64_t stop, std::vector<JoinPass>& out) {
    size_t j = i;  // the probe lengths are hist[i..j]
    while (j + 1 < hist.size() && hist[j + 1].length < stop && bytes_between(sums, i, j + 2) <= pass_bytes / 2) ++j;
    const uint64_t hi = j + 1 < hist.size() ? std::min(stop, hist[j + 1].length) : std::min(stop, kLongest + 1);
    const uint64_t read_hi = max_partner_length(hist[j].length, tau);
    const size_t end = first_at_least(hist, read_hi + 1);  // past the last partner length
    const uint64_t probe = bytes_between(sums, i, j + 1);
    // The first pass: the probe lengths and the partners after them that fit.
    size_t e = j + 1;
    while (e < end && bytes_between(sums, i, e + 1) <= pass_bytes) ++e;
    if (e == end) {  // everything fits after all
        out.push_back(JoinPass{lo, hi, read_hi});
        return j + 1;
    }
    out.push_back(JoinPass{lo, hi, hist[e].length - 1});
    // The next ones: the probe lengths and each further range of partners.
    while (e < end) {
        size_t f = e + 1;
        while (f < end && probe + bytes_between(sums, e, f + 1) <= pass_bytes) ++f;
        out.push_back(JoinPass{lo, hi, f < end ? hist[f].length - 1 : read_hi, hist[e].length});
        e = f;
    }
    return j + 1;
}

}  // namespace

std::vector<JoinPass> plan_passes(const std::vector<LengthCount>& hist, double tau, uint64_t pass_bytes, uint64_t start,
                                  uint64_t stop) {
    std::vector<JoinPass> out;
    std::vector<uint64_t> sums(hist.size() + 1, 0);
    for (size_t k = 0; k < hist.size(); ++k) sums[k + 1] = sums[k] + hist[k].bytes;
    const uint64_t last = std::min(stop, kLongest + 1);
    uint64_t lo = start;
    for (size_t i = first_at_least(hist, start); i < hist.size() && hist[i].length < stop;) {
        // The pass's probe lengths are hist[i..j]; j grows while the documents it reads fit.
        size_t j = i;
        while (j + 1 < hist.size() && hist[j + 1].length < stop) {
            const size_t end = first_at_least(hist, max_partner_length(hist[j + 1].length, tau) + 1);
            if (bytes_between(sums, i, end) > pass_bytes) break;
            ++j;
        }
        // Partner ranges instead when hist[i]'s partners alone do not fit, or when the pass would
        // probe under a quarter of what it may read: it would spend most of its read on partners
        // that the next passes read again (plan_partner_ranges falls back to one pass when all
        // fits).
        const size_t first_end = first_at_least(hist, max_partner_length(hist[i].length, tau) + 1);
        const bool too_wide = bytes_between(sums, i, first_end) > pass_bytes;
        const bool too_narrow =
            j + 1 < hist.size() && hist[j + 1].length < stop && bytes_between(sums, i, j + 1) < pass_bytes / 4;
        if (too_wide || too_narrow) {
            i = plan_partner_ranges(hist, sums, tau, pass_bytes, i, lo, stop, out);
            lo = out.back().probe_hi;
            continue;
        }
        const uint64_t hi = j + 1 < hist.size() ? std::min(stop, hist[j + 1].length) : last;
        out.push_back(JoinPass{lo, hi, max_partner_length(hist[j].length, tau)});
        lo = hi;
        i = j + 1;
    }
    if (out.empty()) out.push_back(JoinPass{start, last, kLongest});
    return out;
}

bool split_partners(const JoinPass& p, const std::vector<LengthCount>& hist, JoinPass& first, JoinPass& second) {
    const size_t i = first_at_least(hist, p.part_lo), j = first_at_least(hist, p.read_hi + 1);
    if (!p.continues() || j <= i + 1) return false;
    uint64_t total = 0, seen = 0;
    for (size_t k = i; k < j; ++k) total += hist[k].docs;
    size_t m = i + 1;
    for (size_t k = i; k + 1 < j; ++k) {
        seen += hist[k].docs;
        m = k + 1;
        if (2 * seen >= total) break;
    }
    first = JoinPass{p.probe_lo, p.probe_hi, hist[m].length - 1, p.part_lo};
    second = JoinPass{p.probe_lo, p.probe_hi, p.read_hi, hist[m].length};
    return true;
}

uint64_t pass_read_bytes(const JoinPass& p, const std::vector<LengthCount>& hist) noexcept {
    uint64_t b = 0;
    for (size_t k = first_at_least(hist, p.probe_lo); k < hist.size() && hist[k].length <= p.read_hi; ++k)
        if (p.reads(hist[k].length)) b += hist[k].bytes;
    return b;
}

uint64_t pass_bytes_estimate(uint64_t docs, uint64_t bytes, uint64_t max_len, int threads, int sides) noexcept {
    // Signature occurrences: a Collection holds 33 bytes a document and at least 8 an occurrence.
    const uint64_t e = bytes > 33 * docs ? (bytes - 33 * docs) / 8 : 0;
    // Filed documents: chunks and per-document arrays grow by doubling (twice the bytes), plus each
    // pipeline's batch buffers (4 of 2 MB).
    const uint64_t read = 2 * bytes + static_cast<uint64_t>(std::max(sides, 1)) * (uint64_t(8) << 20);
    // The matcher, with at most one distinct signature per occurrence: the dictionary (slots for
    // twice the signatures, rounded up to a power of two, 16 bytes each; its merge and ordering
    // scratch), the occurrences and re-coded documents, the inverted index or the prefix entries,
    // ranks and candidate lists, per-thread counts, and the length tables (4 bytes an entry,
    // at most 2^20 entries each, a few of them).
    const uint64_t t = static_cast<uint64_t>(std::max(threads, 1));
    const uint64_t table = std::min<uint64_t>(2 * max_len + 2, uint64_t(1) << 20);
    const uint64_t matcher = 160 * e + 96 * docs + 8 * t * docs + 16 * table + (uint64_t(1) << 20);
    return 2 * bytes + std::max(read - 2 * bytes, matcher);
}

uint64_t smallest_passes_estimate(const std::vector<LengthCount>& hist, double tau, int threads, int sides) {
    // For each probe length i: its documents with those of its largest partner length in
    // (i, end), end = past its last partner length; end never decreases as i grows, so a queue
    // of candidate maxima (largest bytes first) slides along.
    uint64_t most = 0;
    std::deque<size_t> window;  // indexes in (i, end), bytes decreasing
    size_t end = 0;
    for (size_t i = 0; i < hist.size(); ++i) {
        const uint64_t hi = max_partner_length(hist[i].length, tau);
        const size_t stop = first_at_least(hist, hi + 1);
        for (; end < stop; ++end) {
            if (end <= i) continue;
            while (!window.empty() && hist[window.back()].bytes <= hist[end].bytes) window.pop_back();
            window.push_back(end);
        }
        end = std::max(end, i + 1);
        while (!window.empty() && window.front() <= i) window.pop_front();
        uint64_t docs = hist[i].docs, bytes = hist[i].bytes, longest = hist[i].length;
        if (!window.empty()) {
            const LengthCount& m = hist[window.front()];
            docs += m.docs;
            bytes += m.bytes;
            longest = hist[stop - 1].length;
        }
        most = std::max(most, pass_bytes_estimate(docs, bytes, longest, threads, sides));
    }
    return most;
}

size_t run_planned_passes(const std::vector<LengthCount>& hist, double tau, uint64_t limit, uint64_t pass_bytes,
                          double margin, const std::function<PassResult(const JoinPass&)>& run,
                          const std::function<void(const JoinPass&, uint64_t at_least)>& too_large,
                          uint64_t& worst_peak) {
    std::deque<JoinPass> todo;
    for (const JoinPass& p : plan_passes(hist, tau, pass_bytes)) todo.push_back(p);
    size_t ran = 0;
    while (!todo.empty()) {
        const JoinPass p = todo.front();
        todo.pop_front();
        const PassResult out = run(p);
        const uint64_t read = pass_read_bytes(p, hist);
        if (out.fits) {
            ++ran;
            worst_peak = std::max(worst_peak, out.peak);
            // The rest replanned for what this pass needed per byte of its documents, with a
            // margin (fewer passes mean fewer reads of the relation); not in the middle of a
            // probe range, whose passes share its plan.
            if (margin > 0 && !todo.empty() && !todo.front().continues() && read > 0 && out.peak > 0) {
                const double per_byte = static_cast<double>(out.peak) / static_cast<double>(read);
                const uint64_t start = todo.front().probe_lo;
                todo.clear();
                const auto bytes = static_cast<uint64_t>(margin * static_cast<double>(limit) / per_byte);
                for (const JoinPass& q : plan_passes(hist, tau, std::max<uint64_t>(bytes, 1), start)) todo.push_back(q);
            }
            continue;
        }
        if (p.continues()) {
            JoinPass a, b;
            if (!split_partners(p, hist, a, b)) too_large(p, out.at_least);
            todo.push_front(b);
            todo.push_front(a);
            continue;
        }
        // p began its probe range: the passes continuing it go, and the range is planned again
        // for half of what p read, unless p reads one length only (nothing left to divide).
        while (!todo.empty() && todo.front().continues() && todo.front().probe_lo == p.probe_lo) todo.pop_front();
        const size_t i = first_at_least(hist, p.probe_lo), j = first_at_least(hist, p.probe_hi);
        const bool single = j <= i + 1 && first_at_least(hist, p.read_hi + 1) <= i + 1;
        if (single || read <= 1) too_large(p, out.at_least);
        const std::vector<JoinPass> again = plan_passes(hist, tau, read / 2, p.probe_lo, p.probe_hi);
        for (auto q = again.rbegin(); q != again.rend(); ++q) todo.push_front(*q);
    }
    return ran;
}

std::vector<LengthCount> LengthTally::sorted() const {
    std::vector<LengthCount> h;
    for (size_t len = 1; len < counts_.size(); ++len)
        if (counts_[len].docs != 0) h.push_back(LengthCount{len, counts_[len].docs, counts_[len].bytes});
    for (const auto& [len, c] : far_) h.push_back(LengthCount{len, c.docs, c.bytes});
    return h;
}

std::vector<LengthCount> merge_histograms(const std::vector<LengthCount>& a, const std::vector<LengthCount>& b) {
    std::vector<LengthCount> m;
    m.reserve(a.size() + b.size());
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
        if (j == b.size() || (i < a.size() && a[i].length < b[j].length)) {
            m.push_back(a[i++]);
        } else if (i == a.size() || b[j].length < a[i].length) {
            m.push_back(b[j++]);
        } else {
            m.push_back(LengthCount{a[i].length, a[i].docs + b[j].docs, a[i].bytes + b[j].bytes});
            ++i;
            ++j;
        }
    }
    return m;
}

std::vector<LengthCount> length_histogram(const Collection& docs) {
    LengthTally t;
    for (size_t d = 0; d < docs.size(); ++d) {
        const MultisetView v = docs.doc(d);
        t.add(v.length, v.size, v.freqs.width);
    }
    return t.sorted();
}

}  // namespace spotsigs
