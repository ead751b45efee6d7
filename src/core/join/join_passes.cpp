// Planning a self-join in passes over length ranges (see join_passes.hpp).
#include "core/join/join_passes.hpp"

#include <algorithm>
#include <cmath>

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

std::vector<JoinPass> plan_passes(const std::vector<LengthCount>& hist, double tau, uint64_t pass_bytes,
                                  uint64_t start) {
    std::vector<JoinPass> out;
    std::vector<uint64_t> sums(hist.size() + 1, 0);
    for (size_t k = 0; k < hist.size(); ++k) sums[k + 1] = sums[k] + hist[k].bytes;
    uint64_t lo = start;
    for (size_t i = first_at_least(hist, start); i < hist.size();) {
        // The pass's probe lengths are hist[i..j]; j grows while the documents it reads fit.
        size_t j = i;
        while (j + 1 < hist.size()) {
            const size_t end = first_at_least(hist, max_partner_length(hist[j + 1].length, tau) + 1);
            if (bytes_between(sums, i, end) > pass_bytes) break;
            ++j;
        }
        const uint64_t hi = j + 1 < hist.size() ? hist[j + 1].length : kLongest + 1;
        out.push_back(JoinPass{lo, hi, max_partner_length(hist[j].length, tau)});
        lo = hi;
        i = j + 1;
    }
    if (out.empty()) out.push_back(JoinPass{start, kLongest + 1, kLongest});
    return out;
}

bool split_pass(const JoinPass& p, const std::vector<LengthCount>& hist, double tau, JoinPass& first,
                JoinPass& second) {
    const size_t i = first_at_least(hist, p.probe_lo), j = first_at_least(hist, p.probe_hi);
    if (j <= i + 1) return false;
    // The probe lengths hist[i..j) split where half of their documents come before.
    uint64_t total = 0, seen = 0;
    for (size_t k = i; k < j; ++k) total += hist[k].docs;
    size_t m = i + 1;
    for (size_t k = i; k + 1 < j; ++k) {
        seen += hist[k].docs;
        m = k + 1;
        if (2 * seen >= total) break;
    }
    const uint64_t mid = hist[m].length;
    first = JoinPass{p.probe_lo, mid, max_partner_length(hist[m - 1].length, tau)};
    second = JoinPass{mid, p.probe_hi, p.read_hi};
    return true;
}

uint64_t pass_read_bytes(const JoinPass& p, const std::vector<LengthCount>& hist) noexcept {
    uint64_t b = 0;
    for (size_t k = first_at_least(hist, p.probe_lo); k < hist.size() && hist[k].length <= p.read_hi; ++k)
        b += hist[k].bytes;
    return b;
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
