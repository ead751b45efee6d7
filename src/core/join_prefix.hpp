// The prefix entries of the prefix-group self-join (join_groups.cpp) and the lister that writes
// them: split from the matcher so that the entries can be listed while the rows are still being
// read (read_pipeline.hpp), one document at a time, in any order of documents.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "block_lists.hpp"
#include "join.hpp"
#include "join_bounds.hpp"
#include "join_internal.hpp"

namespace spotsigs::join_detail {

// One prefix signature of a document: its hash, the document (its collection index) and its
// suffix mass there;
// suf's top bit (kSeveral) says that the document holds the signature more than once (a
// document's length is below 2^31, kMaxLength, so the mass fits the other 31 bits).
struct PrefixEntry {
    uint64_t hash;
    uint32_t doc;
    uint32_t suf;

    static constexpr uint32_t kSeveral = uint32_t(1) << 31;
    // The suffix mass at this signature.
    uint32_t mass() const noexcept { return suf & ~kSeveral; }
    // Whether the document holds this signature more than once.
    bool several() const noexcept { return (suf & kSeveral) != 0; }
};

// Prefix entries kept in coarse buckets by the top kCoarseBits bits of the mixed hash (a group
// of equal hashes is never split), in BlockLists (256 buckets of 8 KB blocks, cache-sized to
// append to; the entries of 1M documents take 150 MB, on huge pages). Mixed, because a prefix
// holds a document's smallest hashes: by the raw hash's top bits the 9.1M entries of the 1M
// scaled rows at tau 0.9 filled 27 of the 256 buckets, four of them with 336K entries each (5 MB
// to sort, past the cache, and a tail that one worker finished alone).
class PrefixLists : public BlockLists<PrefixEntry, size_t(1) << 8> {
public:
    static constexpr unsigned kCoarseBits = 8;
    static constexpr size_t kCoarse = size_t(1) << kCoarseBits;
    static_assert(kCoarse == kBuckets, "one list per coarse bucket");

    // The hash's bits mixed: its coarse bucket is the top kCoarseBits of them.
    static uint64_t spread(uint64_t hash) noexcept { return dictionary_mix(hash); }
    // The coarse bucket of a hash.
    static size_t bucket_of(uint64_t hash) noexcept { return static_cast<size_t>(spread(hash) >> (64 - kCoarseBits)); }
    // Appends one entry to its hash's bucket.
    void add(const PrefixEntry& e) { BlockLists::add(bucket_of(e.hash), e); }
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
// them, the threshold they were listed for, and the ranges of documents whose prefixes are still
// to be listed (list_unlisted() does it). Built by list_all_prefixes() or ReadPipeline.
struct ListedPrefixes {
    double tau = 0;
    std::unique_ptr<FrequentSignatures> frequent;
    PrefixLists lists;
    std::vector<std::pair<uint32_t, uint32_t>> unlisted;  // [first, last) document ranges

    // Records document d as not listed (documents come in ascending order).
    void defer(uint32_t d) {
        if (!unlisted.empty() && unlisted.back().second == d) ++unlisted.back().second;
        else unlisted.emplace_back(d, d + 1);
    }
};

// Lists the prefixes of the documents of out.unlisted on threads workers (with out.frequent),
// leaving out.unlisted empty.
void list_unlisted(const Collection& docs, int threads, const CancelToken* cancel, ListedPrefixes& out);

// Lists the prefixes of every document of docs on threads workers (the frequent signatures from
// an evenly spaced sample of docs).
void list_all_prefixes(const Collection& docs, double tau, int threads, const CancelToken* cancel,
                       ListedPrefixes& out);

// The prefix-group self-join over prefixes already listed for docs (listed.tau must equal
// opt.tau): fills result and returns true, or returns false past max_candidates_per_doc
// candidate pairs per document. Consumes listed.lists.
bool group_self_join_listed(const Collection& docs, ListedPrefixes& listed, const JoinOptions& opt,
                            double max_candidates_per_doc, JoinPairs& result);

}  // namespace spotsigs::join_detail
