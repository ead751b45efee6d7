// The prefix entries of the prefix-group self-join (join_groups.cpp) and the lister that writes
// them: split from the matcher so that the entries can be listed while the rows are still being
// read (read_pipeline.hpp), one document at a time, in any order of documents.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/join/join.hpp"
#include "core/join/join_bounds.hpp"
#include "core/join/join_internal.hpp"
#include "core/memory/block_lists.hpp"

namespace spotsigs::join_detail {

// One prefix signature of a document, in 8 bytes: a word of 24 bits of its mixed hash (the key:
// below the 8 bits that chose its coarse bucket, so 32 mixed bits in all tell signatures apart;
// two signatures that share them are simply treated as one, see join_groups.cpp) above an 8-bit
// tag, and the document (its collection index). The tag holds, in its low bit, whether the
// document holds the signature more than once, and above it the slack: how far the suffix mass
// there lies above the document's own listing threshold need(x) (the lister stops below it, so
// the slack is never negative), saturated at kSlackUnknown. The matcher rebuilds the mass as
// need(x) + slack, or as the whole length x once saturated: never below the true mass, which is
// all its bounds need (a larger mass only admits more pairs).
struct PrefixEntry {
    uint32_t word;
    uint32_t doc;

    static constexpr unsigned kTagBits = 8;
    static constexpr uint32_t kSeveral = 1;
    static constexpr uint32_t kSlackUnknown = (uint32_t(1) << (kTagBits - 1)) - 1;
    // The tag of an entry with this slack that the document holds more than once or not.
    static uint32_t tag(uint64_t slack, bool several) noexcept {
        return static_cast<uint32_t>(std::min<uint64_t>(slack, kSlackUnknown)) << 1 | (several ? kSeveral : 0);
    }
    // The key of a word.
    static uint32_t key_of_word(uint32_t w) noexcept { return w >> kTagBits; }
    // The key.
    uint32_t key() const noexcept { return key_of_word(word); }
    // An upper bound on the suffix mass at this signature, exact unless the slack saturated, for a
    // document of length len whose prefix was listed down to need.
    uint64_t mass(uint64_t len, uint64_t need) const noexcept {
        const uint32_t slack = (word >> 1) & kSlackUnknown;
        return slack == kSlackUnknown ? len : need + slack;
    }
    // Whether the document holds this signature more than once.
    bool several() const noexcept { return (word & kSeveral) != 0; }
};

// Sixteen prefix entries of one coarse bucket as two cache lines, words apart from documents:
// the pass that drops entries whose key no other entry has (join_groups.cpp) reads only the
// words. A slot whose doc is kEmpty holds no entry (the last, partly filled group of a seal()).
struct alignas(64) PrefixChunk {
    static constexpr uint32_t kSlots = 16;
    static constexpr uint32_t kEmpty = UINT32_MAX;
    uint32_t word[kSlots];
    uint32_t doc[kSlots];
};

// Prefix entries kept in coarse buckets by the top kCoarseBits bits of the mixed hash (a group
// of equal hashes is never split), in BlockLists of PrefixChunks (256 buckets of 8 KB blocks,
// cache-sized to append to; the entries of 1M documents take about 75 MB, on huge pages).
// Mixed, because a prefix holds a document's smallest hashes: by the raw hash's top bits the
// entries would crowd a few buckets, each too large for the cache and a tail for one worker
// alone. Eight bytes an entry instead of the sixteen of a whole hash, document and mass: at low
// thresholds the listing's stores, the page faults of fresh memory and the bucket filter's reads
// of the entries make up most of the work around the matching, all in proportion to their bytes.
class PrefixLists {
public:
    static constexpr unsigned kCoarseBits = 8;
    static constexpr size_t kCoarse = size_t(1) << kCoarseBits;
    using Chunks = BlockLists<PrefixChunk, kCoarse>;
    using Block = Chunks::Block;

    PrefixLists() = default;
    PrefixLists(PrefixLists&& other) noexcept { swap(other); }
    PrefixLists& operator=(PrefixLists&& other) noexcept {
        if (this != &other) {
            clear();
            swap(other);
        }
        return *this;
    }

    // The hash's bits mixed: its coarse bucket is the top kCoarseBits of them, its key the next 24.
    static uint64_t spread(uint64_t hash) noexcept { return dictionary_mix(hash); }
    // The coarse bucket of a hash.
    static size_t bucket_of(uint64_t hash) noexcept { return static_cast<size_t>(spread(hash) >> (64 - kCoarseBits)); }
    // The key of a hash (PrefixEntry::key).
    static uint32_t key_of(uint64_t hash) noexcept { return word_of(spread(hash), 0) >> PrefixEntry::kTagBits; }
    // The entry word of a mixed hash m with this tag.
    static uint32_t word_of(uint64_t m, uint32_t tag) noexcept {
        return (static_cast<uint32_t>(m >> (32 - kCoarseBits)) & ~((uint32_t(1) << PrefixEntry::kTagBits) - 1)) | tag;
    }
    // Appends the entry of a signature with this hash and tag (PrefixEntry::tag); seal() before
    // reading.
    void add(uint64_t hash, uint32_t doc, uint32_t tag) {
        const uint64_t m = spread(hash);
        const size_t b = static_cast<size_t>(m >> (64 - kCoarseBits));
        PrefixChunk& st = stage_[b];
        const uint32_t k = stage_n_[b];
        st.word[k] = word_of(m, tag);
        st.doc[k] = doc;
        ++entries_;
        if (k + 1 < PrefixChunk::kSlots) {
            stage_n_[b] = static_cast<uint8_t>(k + 1);
            return;
        }
        flush(b);
    }
    // Writes out every partly filled chunk (its free slots marked empty) and seals the blocks
    // (block_lists.hpp); entries may be added after it.
    void seal() {
        for (size_t b = 0; b < kCoarse; ++b) {
            if (stage_n_[b] == 0) continue;
            PrefixChunk& st = stage_[b];
            for (uint32_t k = stage_n_[b]; k < PrefixChunk::kSlots; ++k) {
                st.word[k] = 0;
                st.doc[k] = PrefixChunk::kEmpty;
            }
            stage_n_[b] = 0;
            chunks_.add(b, st);
        }
        chunks_.seal();
    }
    // Moves every entry of other into this one (other ends empty); both are sealed first.
    void absorb(PrefixLists& other) {
        seal();
        other.seal();
        chunks_.absorb(other.chunks_);
        entries_ += other.entries_;
        other.entries_ = 0;
    }
    // The blocks of chunks of bucket c (as of the last seal()).
    const std::vector<Block*>& bucket(size_t c) const noexcept { return chunks_.bucket(c); }
    // The slots of bucket c (as of the last seal()): at least its entries.
    uint64_t bucket_slots(size_t c) const noexcept { return chunks_.bucket_entries(c) * PrefixChunk::kSlots; }
    // Entries held, staged ones included.
    uint64_t entries() const noexcept { return entries_; }
    // Bytes held (the slabs).
    size_t memory_bytes() const noexcept { return chunks_.memory_bytes(); }
    // An upper bound of the bytes held once `blocks` more blocks are opened (BlockLists).
    size_t memory_bytes_after(size_t blocks) const noexcept { return chunks_.memory_bytes_after(blocks); }
    // Frees everything.
    void clear() noexcept {
        chunks_.clear();
        for (size_t b = 0; b < kCoarse; ++b) stage_n_[b] = 0;
        entries_ = 0;
    }

private:
    // Sends bucket b's full staging chunk to its block (out of line: once per 16 entries, and
    // inlined it kept add() itself from being inlined into the lister's loop).
    __attribute__((noinline)) void flush(size_t b) {
        stage_n_[b] = 0;
        chunks_.add(b, stage_[b]);
    }
    // Exchanges everything with other.
    void swap(PrefixLists& other) noexcept {
        std::swap(chunks_, other.chunks_);
        for (size_t b = 0; b < kCoarse; ++b) {
            std::swap(stage_[b], other.stage_[b]);
            std::swap(stage_n_[b], other.stage_n_[b]);
        }
        std::swap(entries_, other.entries_);
    }

    Chunks chunks_;
    PrefixChunk stage_[kCoarse];     // each bucket's chunk being filled (32 KB)
    uint8_t stage_n_[kCoarse] = {};  // and its entries
    uint64_t entries_ = 0;
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
    // req(s): tabulated as the lengths are met (0: not yet computed; req(s) >= 1 for s >= 2), so
    // that a lister of a few documents does not compute the whole table. A lister serves one
    // thread.
    uint64_t required(uint64_t s) {
        if (s >= req_.size()) return required_overlap_exact(s, tau_);
        uint32_t& r = req_[s];
        if (r == 0) r = static_cast<uint32_t>(required_overlap_exact(s, tau_));
        return r;
    }

    double tau_;
    const FrequentSignatures* frequent_;
    std::vector<uint32_t> req_;
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
void list_all_prefixes(const Collection& docs, double tau, int threads, const CancelToken* cancel, ListedPrefixes& out);

// The prefix-group self-join over prefixes already listed for docs (listed.tau must equal
// opt.tau): fills result and returns true, or returns false past max_candidates_per_doc
// candidate pairs per document. Consumes listed.lists.
bool group_self_join_listed(const Collection& docs, ListedPrefixes& listed, const JoinOptions& opt,
                            double max_candidates_per_doc, JoinPairs& result);

}  // namespace spotsigs::join_detail
