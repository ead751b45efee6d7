// Posting lists held in memory, grown one document at a time: the index's pending list as a
// searchable structure, so a search reads the postings of its own signatures instead of comparing
// the query with every pending row.
//
// Every row a COPY writes with the trigger on is added here before the next row's search, so add()
// is on the ingest path: one open-addressing table of lists (one cache miss to find a list, no
// allocation per signature) and postings appended to fixed-size chunks (growth never copies them).
// First writes to fresh memory are what this costs most on a virtual machine, so the table is
// kept small (16-byte slots) and, once large, asks for huge pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/index/index_search.hpp"
#include "core/signature/multiset.hpp"

namespace spotsigs {

// An inverted index over documents added in any order; each list keeps insertion order.
class MemoryPostings {
public:
    MemoryPostings();
    // Adds a document: one posting (id, |sig|, frequency) per distinct signature. Empty
    // multisets add nothing (they match no query).
    void add(uint64_t id, const MultisetView& sig);
    // Forgets every document but keeps the memory (the table at its size, the chunks) for the
    // next ones: a backend's copy of a pending list starts over after every merge, and fresh
    // memory is what growing it anew cost most.
    void clear() noexcept;
    // Documents added (empty ones included).
    size_t documents() const noexcept { return documents_; }
    // Heap bytes held (for the caller's memory limit).
    size_t bytes() const noexcept;

    // A PostingSource over these lists for one query (valid while both are unchanged).
    class Source : public PostingSource {
    public:
        Source(const MemoryPostings& m, const MultisetView& q);
        uint64_t count(uint32_t i, uint64_t lo, uint64_t hi) override;
        void scan(uint32_t i, uint64_t lo, uint64_t hi, const std::function<bool(const Posting&)>& fn) override;

    private:
        const MemoryPostings& m_;
        std::vector<uint32_t> slot_;  // per query signature: its table slot, or kNone
    };

private:
    static constexpr uint32_t kNone = UINT32_MAX;
    static constexpr unsigned kChunkBits = 12;  // postings per chunk: 4,096 (64 kB + 16 kB)

    // One list: its signature, its last posting and its length (0: the slot is free). The
    // postings of a list form a ring (the last one's successor is the first), so 16 bytes find
    // both ends.
    struct Slot {
        uint64_t hash;
        uint32_t tail;
        uint32_t count;
    };
    // A run of postings with the index of each one's successor in its list.
    struct Chunk {
        Posting postings[size_t(1) << kChunkBits];
        uint32_t next[size_t(1) << kChunkBits];
    };

    // The slot holding hash, or the free slot where it belongs.
    size_t find(uint64_t hash) const noexcept;
    // A table of n free slots.
    static std::vector<Slot> new_table(size_t n);
    // Doubles the table.
    void grow();
    Posting& posting(uint32_t k) noexcept { return chunks_[k >> kChunkBits]->postings[k & kMask]; }
    uint32_t& next(uint32_t k) noexcept { return chunks_[k >> kChunkBits]->next[k & kMask]; }
    const Chunk& chunk_of(uint32_t k) const noexcept { return *chunks_[k >> kChunkBits]; }

    static constexpr uint32_t kMask = (uint32_t(1) << kChunkBits) - 1;
    std::vector<Slot> table_;  // power-of-two size, at most 70% used
    unsigned shift_;           // 64 - log2(table size)
    size_t lists_ = 0;
    std::vector<std::unique_ptr<Chunk>> chunks_;
    uint32_t npostings_ = 0;
    size_t documents_ = 0;
};

}  // namespace spotsigs
