// The prefix entries of the prefix-group self-join (join_groups.cpp) and the lister that writes
// them: split from the matcher so that the entries can be listed while the rows are still being
// read (read_pipeline.hpp), one document at a time, in any order of documents.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "join.hpp"
#include "join_bounds.hpp"
#include "join_internal.hpp"

namespace spotsigs::join_detail {

// One prefix signature of a document: its hash, the document (its collection index while
// listed, its length rank once the matcher takes the entries) and its suffix mass there.
struct PrefixEntry {
    uint64_t hash;
    uint32_t doc;
    uint32_t suf;
};

// Prefix entries kept in coarse buckets by the hash's top kCoarseBits bits (a group of equal
// hashes is never split), each bucket a list of fixed-size blocks: appending touches one block
// per bucket (256 x 8 KB, cache-sized), and lists of several listers join by moving blocks. The
// blocks are carved from slabs that grow to 8 MB on transparent huge pages (the entries of 1M
// documents take 150 MB; on 4 KB pages their first touch cost one page fault per 4 KB).
class PrefixLists {
public:
    static constexpr unsigned kCoarseBits = 8;
    static constexpr size_t kCoarse = size_t(1) << kCoarseBits;
    static constexpr uint32_t kBlockEntries = 511;  // with the count: 8 KB per block
    struct Block {
        uint32_t count = 0;
        PrefixEntry e[kBlockEntries];
    };

    PrefixLists() = default;
    // Moves take the slabs along and leave other empty (a defaulted move would leave other with
    // stale counts, and a defaulted assignment would drop this one's slabs without freeing them).
    PrefixLists(PrefixLists&& other) noexcept { swap(other); }
    PrefixLists& operator=(PrefixLists&& other) noexcept {
        if (this != &other) {
            clear();
            swap(other);
        }
        return *this;
    }
    ~PrefixLists() { clear(); }

    // The coarse bucket of a hash.
    static size_t bucket_of(uint64_t hash) noexcept { return static_cast<size_t>(hash >> (64 - kCoarseBits)); }

    // Appends one entry.
    void add(const PrefixEntry& e) {
        std::vector<Block*>& b = buckets_[bucket_of(e.hash)];
        if (b.empty() || b.back()->count == kBlockEntries) b.push_back(new_block());
        Block& k = *b.back();
        k.e[k.count++] = e;
        ++entries_;
    }
    // Moves every entry of other into this one (other ends empty).
    void absorb(PrefixLists& other);
    // The blocks of coarse bucket c.
    const std::vector<Block*>& bucket(size_t c) const noexcept { return buckets_[c]; }
    // Entries in coarse bucket c.
    uint64_t bucket_entries(size_t c) const noexcept;
    // Entries held.
    uint64_t entries() const noexcept { return entries_; }
    // Bytes held (the slabs).
    size_t memory_bytes() const noexcept { return bytes_; }
    // Frees everything.
    void clear() noexcept;

private:
    struct Slab {
        void* base;
        size_t blocks;
    };
    // A fresh block from the current slab, or from a new one.
    Block* new_block();
    // Exchanges everything with other.
    void swap(PrefixLists& other) noexcept;

    std::vector<Block*> buckets_[kCoarse];
    std::vector<Slab> slabs_;
    size_t used_ = 0;  // blocks handed out from slabs_.back()
    uint64_t entries_ = 0;
    size_t bytes_ = 0;
};

// Lists documents' prefixes for one threshold under one global order (stored hash order, the
// frequent signatures last): the signatures whose suffix mass reaches req(x + lo(x)) for a
// document of length x (join_bounds.hpp Lemma 5 with the smallest requirement of any partner).
class PrefixLister {
public:
    // A lister for threshold tau ordering frequent's signatures last (frequent must outlive it).
    PrefixLister(double tau, const FrequentSignatures& frequent);
    // Appends the prefix entries of document d (view v; d is recorded as the entry's document).
    void list(uint32_t d, const MultisetView& v, PrefixLists& out);

private:
    double tau_;
    const FrequentSignatures* frequent_;
    RequiredOverlap req_;
    std::vector<uint64_t> stash_;  // the frequent signatures of the current document
};

// A collection's prefix entries, ready for the matcher: the frequent signatures that ordered
// them, and the threshold they were listed for. Built by list_all_prefixes() or ReadPipeline.
struct ListedPrefixes {
    double tau = 0;
    std::unique_ptr<FrequentSignatures> frequent;
    PrefixLists lists;
};

// Lists the prefixes of every document of docs on threads workers (the frequent signatures from
// an evenly spaced sample of docs).
void list_all_prefixes(const Collection& docs, double tau, int threads, const CancelToken* cancel,
                       ListedPrefixes& out);

// The prefix-group self-join over prefixes already listed for docs (listed.tau must equal
// opt.tau): fills result and returns true, or returns false past max_candidates_per_doc
// candidate pairs per document. Consumes listed.lists.
bool group_self_join_listed(const Collection& docs, ListedPrefixes& listed, const JoinOptions& opt,
                            double max_candidates_per_doc, std::vector<JoinPair>& result);

}  // namespace spotsigs::join_detail
