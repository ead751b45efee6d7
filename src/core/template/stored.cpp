// The content measure against a given template.
#include "core/template/stored.hpp"

#include <algorithm>

namespace spotsigs {

bool template_contains(const uint64_t* t, size_t n, uint64_t h) noexcept {
    return n != 0 && std::binary_search(t, t + n, h);
}

uint32_t content_of(const MultisetView& doc, const uint64_t* t, size_t n, uint64_t* hashes, uint32_t* freqs,
                    uint64_t* length) noexcept {
    uint32_t k = 0;
    uint64_t len = 0;
    for (uint32_t i = 0; i < doc.size; ++i) {
        if (template_contains(t, n, doc.hashes[i])) continue;
        hashes[k] = doc.hashes[i];
        freqs[k] = doc.freqs[i];
        len += freqs[k];
        ++k;
    }
    *length = len;
    return k;
}

double content_similarity(const MultisetView& qc, const MultisetView& b, const uint64_t* t, size_t n) noexcept {
    // b's content length: |b| less the frequencies of its template signatures. The overlap of qc
    // with b is its overlap with b's content, since qc holds no template signature.
    uint64_t bc = b.length;
    for (uint32_t i = 0; i < b.size; ++i)
        if (template_contains(t, n, b.hashes[i])) bc -= b.freqs[i];
    if (qc.empty() || bc == 0) return 0.0;
    uint64_t o = overlap(qc, b);
    return static_cast<double>(o) / static_cast<double>(qc.length + bc - o);
}

double candidate_threshold(uint64_t qc_length, double tau, uint64_t max_length) noexcept {
    if (qc_length == 0) return 1.0;  // an empty content has content similarity 0: nothing to find
    const double q = static_cast<double>(qc_length);
    double bound = tau * q / ((1.0 - tau) * q + static_cast<double>(max_length));
    // Each operation above and in the search's own computations errs by at most a few units in
    // the last place (relative 2^-52 each); a relative margin of 1e-6 covers them all.
    bound *= 1.0 - 1e-6;
    return std::max(std::min(bound, 1.0), kMinCandidateThreshold);
}

}  // namespace spotsigs
