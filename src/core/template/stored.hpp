// The content measure against a given template (a sorted array of signature hashes, such as the
// one spotsigs_analyze() stores): membership, a row's content and the content similarity of two
// rows. The index's search of the content measure is content_bound in core/index/index_search.hpp.
//
// Everything here is noexcept and allocation-free, so PostgreSQL-side code may call it on
// palloc'd arrays.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/signature/multiset.hpp"

namespace spotsigs {

// True when h is one of t[0 .. n) (ascending).
bool template_contains(const uint64_t* t, size_t n, uint64_t h) noexcept;

// Writes doc without the signatures in t[0 .. n) (ascending) to hashes and freqs (room for
// doc.size entries each); returns the number written and sets *length to their frequencies' sum.
uint32_t content_of(const MultisetView& doc, const uint64_t* t, size_t n, uint64_t* hashes, uint32_t* freqs,
                    uint64_t* length) noexcept;

// similarity(content(a), content(b)) for a row a whose content is qc (no signature of t) and a
// row b, computed with similarity()'s expression on the same integers, so the value equals
// similarity(spotsig_remove(a, t), spotsig_remove(b, t)) exactly.
double content_similarity(const MultisetView& qc, const MultisetView& b, const uint64_t* t, size_t n) noexcept;

class SignatureSet;
// content_of with the template prepared as a set (core/template/content.hpp): the same result.
uint32_t content_of(const MultisetView& doc, const SignatureSet& t, uint64_t* hashes, uint32_t* freqs,
                    uint64_t* length) noexcept;

// content_similarity with the template prepared as a set (core/template/content.hpp): the same value, bit
// for bit, at a hash probe per signature of b instead of a binary search.
double content_similarity(const MultisetView& qc, const MultisetView& b, const SignatureSet& t) noexcept;

}  // namespace spotsigs
