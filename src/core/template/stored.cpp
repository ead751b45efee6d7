// The content measure against a given template.
#include "core/template/stored.hpp"

#include <algorithm>

#include "core/template/content.hpp"

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

namespace {

// similarity(qc, content(b)) where in_template tells the template's signatures.
template <typename InTemplate>
double content_similarity_with(const MultisetView& qc, const MultisetView& b, InTemplate in_template) noexcept {
    // b's content length: |b| less the frequencies of its template signatures. The overlap of qc
    // with b is its overlap with b's content, since qc holds no template signature.
    uint64_t bc = b.length;
    for (uint32_t i = 0; i < b.size; ++i)
        if (in_template(b.hashes[i])) bc -= b.freqs[i];
    if (qc.empty() || bc == 0) return 0.0;
    uint64_t o = overlap(qc, b);
    return static_cast<double>(o) / static_cast<double>(qc.length + bc - o);
}

}  // namespace

uint32_t content_of(const MultisetView& doc, const SignatureSet& t, uint64_t* hashes, uint32_t* freqs,
                    uint64_t* length) noexcept {
    uint32_t k = 0;
    uint64_t len = 0;
    for (uint32_t i = 0; i < doc.size; ++i) {
        if (t.contains(doc.hashes[i])) continue;
        hashes[k] = doc.hashes[i];
        freqs[k] = doc.freqs[i];
        len += freqs[k];
        ++k;
    }
    *length = len;
    return k;
}

double content_similarity(const MultisetView& qc, const MultisetView& b, const uint64_t* t, size_t n) noexcept {
    // b's hashes ascend, so each one is looked up from where the previous lookup ended: a search
    // over doubling steps, then a binary search in the last step (fewer probes than a binary
    // search of the whole template per signature, and each near the last).
    const uint64_t* from = t;
    const uint64_t* const end = t + n;
    return content_similarity_with(qc, b, [&](uint64_t h) {
        size_t step = 1;
        const uint64_t* lo = from;
        while (lo + step < end && lo[step] < h) {
            lo += step;
            step *= 2;
        }
        from = std::lower_bound(lo, lo + step < end ? lo + step + 1 : end, h);
        return from != end && *from == h;
    });
}

double content_similarity(const MultisetView& qc, const MultisetView& b, const SignatureSet& t) noexcept {
    return content_similarity_with(qc, b, [&](uint64_t h) { return t.contains(h); });
}

}  // namespace spotsigs
