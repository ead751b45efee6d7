// Collection statistics (document frequencies of signatures) and IDF-range filtering
// (paper section 5.1: idf = log(N / df) / log(N), signatures kept when lo <= idf <= hi).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "core/signature/multiset.hpp"

namespace spotsigs {

// Accumulates document frequencies: each added document counts once per distinct signature.
class DfCounter {
public:
    // Counts one document.
    void add(const MultisetView& doc);
    // The statistics as a multiset whose frequencies are document frequencies.
    Multiset result() const;
    // Number of documents added so far.
    uint64_t documents() const noexcept { return docs_; }

private:
    std::unordered_map<uint64_t, uint64_t> df_;
    uint64_t docs_ = 0;
};

// Normalised IDF of a signature with document frequency df in a collection of n documents;
// df 0 (a signature the statistics never saw) counts as df 1. Requires n >= 2.
double normalized_idf(uint64_t df, uint64_t n) noexcept;

// The part of doc whose signatures have lo <= idf <= hi under the statistics df (a multiset
// whose frequencies are document frequencies, e.g. DfCounter::result()) of a collection of n
// documents; frequencies are kept. Throws Error(InvalidParameter) when n < 2.
Multiset idf_filter(const MultisetView& doc, const MultisetView& df, uint64_t n, double lo, double hi);

}  // namespace spotsigs
