// Posting lists held in memory, grown one document at a time: the index's pending list as a
// searchable structure, so a search reads the postings of its own signatures instead of comparing
// the query with every pending row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "index_search.hpp"
#include "multiset.hpp"

namespace spotsigs {

// An inverted index over documents added in any order; each list keeps insertion order.
class MemoryPostings {
public:
    // Adds a document: one posting (id, |sig|, frequency) per distinct signature. Empty
    // multisets add nothing (they match no query).
    void add(uint64_t id, const MultisetView& sig);
    // Documents added (empty ones included).
    size_t documents() const noexcept { return documents_; }
    // Approximate heap bytes held (for the caller's memory limit).
    size_t bytes() const noexcept { return bytes_; }

    // A PostingSource over these lists for one query (valid while both are unchanged).
    class Source : public PostingSource {
    public:
        Source(const MemoryPostings& m, const MultisetView& q);
        uint64_t count(uint32_t i, uint64_t lo, uint64_t hi) override;
        void scan(uint32_t i, uint64_t lo, uint64_t hi,
                  const std::function<bool(const Posting&)>& fn) override;

    private:
        std::vector<const std::vector<Posting>*> lists_;  // per query signature, or null
    };

private:
    std::unordered_map<uint64_t, std::vector<Posting>> lists_;
    size_t documents_ = 0;
    size_t bytes_ = 0;
};

}  // namespace spotsigs
