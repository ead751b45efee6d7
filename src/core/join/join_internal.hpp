// Internal pieces of the join shared by its source files (not part of the public interface).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/join/join.hpp"

namespace spotsigs::join_detail {

// Counts the bytes the matcher's own structures take and enforces JoinOptions::memory_limit.
class MemoryBudget {
public:
    // A budget of limit bytes; 0 means unlimited.
    explicit MemoryBudget(size_t limit) : limit_(limit) {}
    // Reports the peak to opt.accounted_peak (when set) at the end of the budget's life.
    MemoryBudget(size_t limit, size_t* peak_out) : limit_(limit), peak_out_(peak_out) {}
    MemoryBudget(const MemoryBudget&) = default;
    // Records bytes about to be allocated for what; throws Error(OutOfMemory) past the limit.
    void charge(size_t bytes, const char* what);
    // Gives bytes back (after a structure is freed).
    void release(size_t bytes) noexcept { used_ -= bytes < used_ ? bytes : used_; }
    // Bytes charged so far, and the most charged at once.
    size_t used() const noexcept { return used_; }
    size_t peak() const noexcept { return peak_; }
    // Raises the reported peak to bytes (the result pairs, counted by WorkerGuard, come on top).
    void note_peak(size_t bytes) const noexcept {
        if (peak_out_ != nullptr && bytes > *peak_out_) *peak_out_ = bytes;
    }
    // The limit, 0 for none.
    size_t limit() const noexcept { return limit_; }
    // Throws the out-of-memory error for what.
    [[noreturn]] void fail(const char* what, size_t needed) const;

private:
    size_t limit_;
    size_t used_ = 0;
    size_t peak_ = 0;
    size_t* peak_out_ = nullptr;
};

// Hash -> dense signature id, ids given in ascending document frequency (rarest first).
class SignatureDictionary {
public:
    // Counts the document frequency of every signature of docs and numbers them, on threads
    // workers (ranges of documents counted apart, then merged: the ids do not depend on threads).
    // When entry_ids is given it receives the id of every signature occurrence of docs, document
    // after document in collection order (entry_off[d] is where document d starts).
    void build(const Collection& docs, MemoryBudget& budget, const CancelToken* cancel, int threads = 1,
               std::vector<uint32_t>* entry_ids = nullptr, std::vector<uint64_t>* entry_off = nullptr);
    // The dense id of hash, or UINT32_MAX when the dictionary does not hold it.
    uint32_t find(uint64_t hash) const noexcept;
    // Asks the cache for the slot of hash ahead of a find() (lookups are memory-bound).
    void prefetch(uint64_t hash) const noexcept;
    // Number of distinct signatures.
    uint32_t size() const noexcept { return count_; }
    // Bytes held.
    size_t memory_bytes() const noexcept { return slots_.size() * sizeof(Slot); }

private:
    struct Slot {
        uint64_t hash;
        uint32_t df;  // 0 marks an empty slot
        uint32_t id;  // first the order of first appearance, then the final id
    };
    // The slot holding hash, or the empty slot where it would go.
    size_t probe(uint64_t hash) const noexcept;
    // Doubles the table (or more, to at least min_cap slots), rehashing every entry.
    void grow(MemoryBudget& budget, size_t min_cap = 0);
    // Counts documents [d0, d1) (about expect distinct signatures: the first table's size),
    // numbering new signatures in order of first appearance; writes the id of each occurrence to
    // entry_out when it is not null.
    void add_range(const Collection& docs, size_t d0, size_t d1, size_t expect, MemoryBudget& budget,
                   const CancelToken* cancel, uint32_t* entry_out);
    // Adds other's counts (other covered documents after this one's); remap[j] receives the id
    // here of other's signature j.
    void absorb(const SignatureDictionary& other, MemoryBudget& budget, std::vector<uint32_t>& remap);
    // Counts the document ranges [first[p], first[p + 1]) apart on the workers, each into its own
    // table (about estimates[p] distinct signatures; distinct for all of them), the ids of range
    // p's occurrences to entries[p] when not null, then merges the tables in range order into this
    // one: remap[p] receives the map from range p's ids to this dictionary's, for p >= 1.
    void count_apart(const Collection& docs, const std::vector<size_t>& first, const std::vector<size_t>& estimates,
                     size_t distinct, MemoryBudget& budget, const CancelToken* cancel, uint32_t* const* entries,
                     std::vector<std::vector<uint32_t>>& remap);
    // Gives the signatures their final ids, in ascending document frequency with ties in order of
    // first appearance, and returns the map from first-appearance order to final id. Charges
    // *scratch bytes to budget, which the caller releases once done with the map.
    std::vector<uint32_t> renumber_by_df(MemoryBudget& budget, size_t* scratch);

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    uint32_t count_ = 0;
};

// floor(r / d) for r < 2^30 by a multiplication and a shift (the prefix-group matcher files
// every candidate under its shorter document's rank / d, and a 64-bit division per candidate
// stalled its pairing loop). With l = ceil(log2 d), k = 30 + l and m = ceil(2^k / d):
// m = 2^k / d + e with 0 <= e < 1, so r m / 2^k = r / d + r e / 2^k where r e / 2^k < 2^30 / 2^k
// = 2^-l <= 1 / d. Writing r = q d + t with 0 <= t <= d - 1, r / d + r e / 2^k < q + (d - 1) / d
// + 1 / d = q + 1, and it is at least q: its floor is q. (Granlund and Montgomery, 1994.) m is
// below 2^31 + 1, so r m stays below 2^62.
class RankDivider {
public:
    static constexpr unsigned kRankBits = 30;
    explicit RankDivider(uint64_t d) noexcept {
        unsigned l = 0;
        while ((uint64_t(1) << l) < d) ++l;
        shift_ = kRankBits + l;
        mul_ = ((uint64_t(1) << shift_) + d - 1) / d;
    }
    // floor(r / d), for r < 2^kRankBits.
    uint64_t operator()(uint64_t r) const noexcept { return (r * mul_) >> shift_; }

private:
    uint64_t mul_;
    unsigned shift_;
};

// Spreads a 64-bit hash over the table (the inputs need not be well mixed).
inline size_t dictionary_mix(uint64_t h) noexcept {
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
    return static_cast<size_t>(h);
}

// Inline: these run once per signature occurrence (88M times for 1M documents).
inline size_t SignatureDictionary::probe(uint64_t hash) const noexcept {
    size_t i = dictionary_mix(hash) & mask_;
    while (slots_[i].df != 0 && slots_[i].hash != hash) i = (i + 1) & mask_;
    return i;
}

inline void SignatureDictionary::prefetch(uint64_t hash) const noexcept {
    __builtin_prefetch(&slots_[dictionary_mix(hash) & mask_]);
}

inline uint32_t SignatureDictionary::find(uint64_t hash) const noexcept {
    if (slots_.empty()) return UINT32_MAX;
    const Slot& s = slots_[probe(hash)];
    return s.df != 0 ? s.id : UINT32_MAX;
}

// The signatures frequent in a sample of a collection, each with its place among them (ascending
// sample count, then hash): the prefix-group join orders them after all others. Only the order
// depends on the sample; which documents pair never does.
class FrequentSignatures {
public:
    static constexpr uint32_t kNone = UINT32_MAX;
    // Counts every signature of about sample_docs evenly spaced documents of docs; those counted
    // at least min_count times are frequent.
    FrequentSignatures(const Collection& docs, size_t sample_docs, uint32_t min_count);
    // The place of hash among the frequent signatures, or kNone when it is not one of them.
    uint32_t order_of(uint64_t hash) const noexcept {
        const size_t m = dictionary_mix(hash);
        // Most hashes are not frequent: a clear filter bit (4 KB, stays in the first-level
        // cache) answers for them without a probe of the table.
        const size_t bit = m >> (64 - kFilterLog2);
        if ((filter_[bit / 64] >> (bit % 64) & 1) == 0) return kNone;
        for (size_t k = m & mask_; slots_[k].order != kNone; k = (k + 1) & mask_)
            if (slots_[k].hash == hash) return slots_[k].order;
        return kNone;
    }
    // Number of frequent signatures.
    size_t size() const noexcept { return count_; }
    // Bytes held.
    size_t memory_bytes() const noexcept { return slots_.size() * sizeof(Slot) + filter_.size() * sizeof(uint64_t); }

private:
    struct Slot {
        uint64_t hash;
        uint32_t order;  // kNone marks an empty slot
    };
    // The filter has 2^kFilterLog2 bits, indexed by the top bits of dictionary_mix(hash) (the
    // table by its low bits); a frequent hash's bit is set.
    static constexpr unsigned kFilterLog2 = 15;
    std::vector<uint64_t> filter_ = std::vector<uint64_t>((size_t(1) << kFilterLog2) / 64, 0);
    std::vector<Slot> slots_ = std::vector<Slot>(1, Slot{0, kNone});
    size_t mask_ = 0;
    size_t count_ = 0;
};

// The sample behind FrequentSignatures in the prefix-group join: 8,192 documents, and a
// signature counted 3 times there (in 1M documents: df around 400 or more) goes last.
constexpr size_t kFrequentSample = 8192;
constexpr uint32_t kFrequentMinCount = 3;

// The sample for a whole collection of n documents: one in 64 of them, at least 1,024 and at most
// kFrequentSample. The sample is counted whole while the listing reads only each prefix, so on a
// small collection a full sample of 8,192 documents would cost a large share of the join; the
// sample only orders the signatures, and on the textcorpus documents every size from 1,024 to
// 8,192 gave the same candidates.
inline size_t frequent_sample_for(size_t n) noexcept {
    const size_t s = n / 64;
    return s < 1024 ? 1024 : (s > kFrequentSample ? kFrequentSample : s);
}

// Non-empty documents re-coded to dense ids, sorted by (length, collection index): the "rank".
// Each document's ids are ascending, i.e. its signatures are in global rarest-first order.
struct DocStore {
    std::vector<uint32_t> len;   // length by rank
    std::vector<uint32_t> lead;  // mass of signatures absent from the dictionary, by rank
    std::vector<uint32_t> orig;  // collection index by rank
    std::vector<uint64_t> off;   // offsets into sig/freq by rank (size + 1 entries)
    std::vector<uint32_t> sig;   // dense signature ids
    std::vector<uint32_t> freq;  // their frequencies

    // Number of documents held.
    size_t size() const noexcept { return len.size(); }
    // Re-codes the non-empty documents of docs (budget-checked), on threads workers: through
    // entry_ids/entry_off from dict's build over docs when given, else by looking up each hash.
    void build(const Collection& docs, const SignatureDictionary& dict, const std::vector<uint32_t>* entry_ids,
               const std::vector<uint64_t>* entry_off, int threads, MemoryBudget& budget, const CancelToken* cancel);
    // Bytes held.
    size_t memory_bytes() const noexcept;
};

// One posting: a document (by rank), its length, and its mass from the signature on. The length
// is here, not looked up by rank, because the probes read it for every posting (a random access
// into an array of every document otherwise); where the signature sits in the document is found
// again, by a binary search, only for the pairs that are verified.
struct Posting {
    uint32_t rank;  // the document's rank in its DocStore
    uint32_t len;   // the document's length
    uint32_t suf;   // the document's mass from this signature to its end (suf_B of Lemma 4)
};

// Inverted lists over dense signature ids; every list is sorted by ascending rank, i.e. by
// ascending length, so a length partition of it is one contiguous run.
struct InvertedIndex {
    std::vector<uint64_t> start;  // list of id i is postings[start[i] .. start[i+1])
    std::vector<Posting> postings;

    // Indexes every signature (prefix == false), or only each document's indexing prefix:
    // the signatures whose suffix mass reaches req(len + lo(len)) - extend (join_bounds.hpp
    // Lemma 5; extend > 0 lengthens the prefixes for the count filter, Lemma 8).
    void build(const DocStore& docs, uint32_t num_sigs, bool prefix, double tau, uint32_t extend, MemoryBudget& budget,
               const CancelToken* cancel);
    // Bytes held.
    size_t memory_bytes() const noexcept;
};

// Which filters a probe applies; the four methods and the experimental variants are settings.
struct ProbeConfig {
    bool prune = true;         // length/unseen-mass breaks (Lemma 3, 4 with pos_A only)
    bool positional = true;    // also prune on the partner's suffix mass (Lemma 4 with pos_B)
    bool prefix_index = true;  // index only the prefixes (Lemma 5)
    bool partitions = true;    // bound each probe's scan by the tau partitions (own + right)
    // With prune, positional and prefix_index: the shared mass every verified pair must reach
    // in its prefixes (join_bounds.hpp Lemma 8), 0 for none. Prefixes grow by count - 1.
    uint32_t count = 0;
};

// The shared prefix mass the default method's probes require of a pair before verifying it
// (ProbeConfig::count): its prefixes grow by 2. At tau 0.2 on the scaled textcorpus documents
// most candidate pairs share one prefix signature only, and 2 to 5 gave about the same time.
constexpr uint32_t kCountFilterMass = 3;

// The configuration JoinMethod m runs with.
ProbeConfig config_for(JoinMethod m);

// Runs body(worker, begin, end) over [0, total) in dynamic chunks on threads workers, each with
// every signal blocked. Exceptions in a worker are rethrown here after all workers are joined;
// after the first one, the other workers take no new chunks.
void run_workers(int threads, size_t total, size_t chunk,
                 const std::function<void(int worker, size_t begin, size_t end)>& body);

// Shared by the workers of one join: cancel token, output budget and a pair counter.
class WorkerGuard {
public:
    // Watches opt.cancel and limits pairs to what fits beside the already charged structures;
    // streams: the matcher puts its pairs to opt.sink as it goes (see add_pairs).
    WorkerGuard(const JoinOptions& opt, const MemoryBudget& budget, bool streams = false);
    // True once the caller asked to stop (workers return promptly when it is).
    bool stopped() const noexcept { return cancel_ != nullptr && cancel_->stopped(); }
    // Adds done probe documents to the caller's progress counter.
    void progress(uint64_t done) noexcept {
        if (cancel_ != nullptr) cancel_->progress.fetch_add(done, std::memory_order_relaxed);
    }
    // Accounts for n more result pairs; throws JoinMemoryError past the limit, unless the matcher
    // streams: then n is the room of the runs (vector capacity) the workers fill, held only until
    // their run is put, and a matcher that has begun to put must not fail (its caller cannot take
    // pairs back).
    void add_pairs(size_t n);
    // Puts run (counted by add_pairs: its pairs, or when streaming its room) to sink, leaving it
    // empty: they leave the matcher.
    void hand_over(PairSink& sink, JoinPairs& run);
    // Accounts for n more candidate bytes (the prefix-group matcher's lists); false past the limit.
    bool add_candidate_bytes(size_t n) noexcept;
    // Takes back n candidate bytes added before.
    void release_candidate_bytes(size_t n) noexcept { candidate_bytes_.fetch_sub(n, std::memory_order_relaxed); }
    // True when n candidate bytes more than those added would still fit.
    bool candidates_fit(size_t n) const noexcept {
        return limit_ == 0 || base_ + candidate_bytes_.load(std::memory_order_relaxed) + n <= limit_;
    }
    // Between the matcher's steps (no worker running): the candidates take bytes from now on
    // (what their lists took, in place of what was reserved for them).
    void settle_candidates(size_t bytes) noexcept;
    // Between the matcher's steps: the structures are what the budget holds now, plus extra
    // bytes of scratch the next step's workers take; false when that and the candidates do not
    // fit the limit.
    bool rebase(size_t extra) noexcept;
    // Counts n more verified candidate pairs (reported to JoinOptions::candidates at the end).
    void add_verified(uint64_t n) noexcept { verified_.fetch_add(n, std::memory_order_relaxed); }
    // Reports the most the structures, pairs and candidates took at once as the budget's peak,
    // and the verified pairs to JoinOptions::candidates.
    ~WorkerGuard();

private:
    // How many times the held pairs are counted: twice when they are merged at the end, once
    // when they stream.
    size_t copies() const noexcept { return streams_ ? 1 : 2; }
    // The bytes held now (structures, candidates and pairs), raising the peak to them.
    size_t note_now() noexcept;

    const MemoryBudget& budget_;
    std::atomic<size_t> candidate_bytes_{0};
    CancelToken* cancel_;
    size_t limit_;                  // 0 = unlimited
    size_t base_;                   // bytes already charged for structures
    bool streams_;                  // pairs go to a sink
    std::atomic<size_t> pairs_{0};  // pairs held
    std::atomic<size_t> peak_{0};   // the most bytes of structures, candidates and pairs at once
    std::atomic<uint64_t> verified_{0};
    std::atomic<uint64_t>* verified_out_;
};

// The pairs of all workers, concatenated and sorted by (a, b).
JoinPairs merge_sorted(std::vector<JoinPairs>& parts);

// Sorts pairs by (a, b).
void sort_pairs(JoinPairs& pairs);

// The pairs of runs that are each sorted by (a, b), merged into one sorted vector by up to
// `threads` workers, each merging one slice of the key space; the runs are emptied.
JoinPairs merge_sorted_runs(std::vector<JoinPairs>& runs, int threads);

// Throws Error(InvalidParameter) unless tau is in (0, 1] and threads >= 1.
void check_options(const JoinOptions& opt);

// Throws Error(Canceled) when the caller asked to stop.
void throw_if_canceled(const CancelToken* cancel);

// The brute-force self-join and R-S join (every pair through similarity()).
JoinPairs brute_self_join(const Collection& docs, const JoinOptions& opt);
JoinPairs brute_rs_join(const Collection& r, const Collection& s, const JoinOptions& opt);

// The prefix-group self-join (join_groups.cpp), the default method's first choice: fills result
// and returns true, or returns false as soon as the pairs it writes down (one per group a pair
// shares) exceed max_candidates_per_doc per document (then the index-based matcher, which keeps
// no candidate lists, runs instead).
bool group_self_join(const Collection& docs, const JoinOptions& opt, double max_candidates_per_doc, JoinPairs& result);

// Pairs written down per document beyond which the default self-join leaves the prefix-group
// matcher for the index-based one: a bound on the candidate lists' memory (8 bytes each, 2 KB per
// document), not on speed: with Lemma 7's count filter the prefix-group matcher is the faster of
// the two at every threshold of the join benchmark, where its tables stay well below the cap
// (docs/matcher.md).
constexpr double kGroupCandidateCap = 256.0;

// The index-based self-join and R-S join with the filters of cfg.
JoinPairs index_self_join(const Collection& docs, const JoinOptions& opt, const ProbeConfig& cfg);
JoinPairs index_rs_join(const Collection& r, const Collection& s, const JoinOptions& opt, const ProbeConfig& cfg);

}  // namespace spotsigs::join_detail
