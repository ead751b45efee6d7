// The all-pairs similarity join (paper Algorithm 1 plus PPJoin filters) over in-memory data.
//
// Exactness is the contract: self_join() and rs_join() return exactly the pairs with
// similarity(a, b) >= tau, the same set as the brute-force method, for every method (with
// JoinOptions::sides, less some or all of the pairs it does not want).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/common/cancel.hpp"
#include "core/common/error.hpp"
#include "core/memory/huge_alloc.hpp"
#include "core/signature/multiset.hpp"

namespace spotsigs {

// Many multisets in compact columnar storage (copied out of the database on the main thread).
class Collection {
public:
    // Appends a document; returns its index.
    uint32_t add(int64_t id, const MultisetView& sig);
    // Appends other's documents after this one's, in their order, taking over other's chunks
    // (their signatures are not copied); other is left empty.
    void append(Collection&& other);
    size_t size() const noexcept { return ids_.size(); }
    int64_t id(size_t i) const noexcept { return ids_[i]; }
    // The i-th document's multiset (inline: the join's lister and verification ask for it once
    // per document and twice per verified pair).
    MultisetView doc(size_t i) const noexcept {
        MultisetView v;
        const Chunk& c = chunks_[where_[i] >> 32];
        v.hashes = c.hashes.data() + (where_[i] & 0xffffffffu);
        v.freqs.data = c.freqs.data() + fpos_[i];
        v.freqs.width = widths_[i];
        v.size = sizes_[i];
        v.length = lengths_[i];
        return v;
    }
    // The i-th document's length (sum of its frequencies).
    uint64_t length(size_t i) const noexcept { return lengths_[i]; }
    // Bytes held by this collection.
    size_t memory_bytes() const noexcept;
    // Reserves room for n documents with total distinct signatures (a hint: storage also grows).
    void reserve(size_t n, size_t total);
    // From now on, storage grows by less than doubling where doubling would take memory_bytes()
    // past bytes (0: no bound): by what the next document needs, at least, so a reader that
    // stops adding once memory_bytes() passes its limit overshoots it by about one document.
    void limit_growth(size_t bytes) noexcept { growth_limit_ = bytes; }
    // The bytes memory_bytes() grows by when add() takes a document of sig.size distinct
    // signatures (the chunk and per-document arrays it would
    // allocate, as add() sizes them now): a reader charges it before it adds.
    size_t growth_for(const MultisetView& sig) const noexcept;
    // The allocated but unwritten part of the current chunk's hashes and frequency bytes: where
    // the next documents go (a ReadPipeline's reader faults it in ahead of the filing thread).
    struct Room {
        unsigned char* begin = nullptr;
        unsigned char* end = nullptr;
    };
    void room(Room& hashes, Room& freqs) noexcept;

private:
    // Signatures live in chunks that are never moved or copied once allocated (growing one
    // contiguous array would copy everything read so far, and touch it all again); each
    // document's signatures sit in one chunk.
    // Chunks are reserved once and never grow, and may come from the reserved huge pages
    // (huge_alloc.hpp): they hold most of a large join's memory.
    struct Chunk {
        HugeVector<uint64_t> hashes;
        HugeVector<unsigned char> freqs;  // per document, in its own width (0, 1, 2 or 4 bytes)
    };
    // Starts a new chunk with room for at least the given hashes and frequency bytes.
    void new_chunk(size_t hashes, size_t freq_bytes);

    // The per-document arrays, like the chunks, from the pool when allowed.
    HugeVector<int64_t> ids_;
    HugeVector<uint64_t> where_;        // per document: chunk << 32 | offset within the chunk
    HugeVector<uint32_t> sizes_;        // per document: distinct signatures
    HugeVector<uint32_t> fpos_;         // per document: where its frequencies start in the chunk
    HugeVector<unsigned char> widths_;  // per document: frequency width (0 = all are 1)
    HugeVector<uint64_t> lengths_;
    std::vector<Chunk> chunks_;
    size_t next_chunk_ = 0;    // capacity (signatures) of the next chunk
    size_t growth_limit_ = 0;  // see limit_growth
    // The bytes memory_bytes() may still grow by under growth_limit_ (SIZE_MAX without one).
    size_t growth_room() const noexcept;
};

class PairSink;

// A self-join's two sides, when the caller wants only some of the pairs: first(context, id)
// tells whether a document is on the first side; keep names the pairs wanted. (A plain function
// and its context keep the options trivially destructible, as the PostgreSQL layer's frames
// need.)
struct PairSides {
    enum class Keep {
        WithFirst,  // the pairs with a document of the first side (not two of the second)
        Across,     // the pairs of one document of each side
    };
    bool (*first)(const void* context, int64_t id) = nullptr;
    const void* context = nullptr;
    Keep keep = Keep::WithFirst;
};

// Which matcher to run: the paper's Table 2 variants.
enum class JoinMethod { Partitioned, NoPart, NoPrune, BruteForce };

struct JoinOptions {
    double tau = 0.8;  // threshold in (0, 1]
    int threads = 1;   // worker threads, >= 1
    JoinMethod method = JoinMethod::Partitioned;
    size_t memory_limit = 0;        // bytes for the matcher's own structures; 0 = no limit
    CancelToken* cancel = nullptr;  // polled by workers; progress counts probe documents done
    // When set, the default method's matchers hand their result over here as they go, a finished
    // partition or a worker's batch at a time, unsorted (pair_sink.hpp); the return value then
    // holds only the pairs that did not go through the sink (all of them for the other methods,
    // sorted).
    PairSink* sink = nullptr;
    // Self-join only: when not 0, only the pairs whose shorter document is shorter than this
    // (one pass of join_passes.hpp); 0 keeps every pair.
    uint64_t probe_below = 0;
    // When set, receives the most bytes the matcher's structures were charged at once
    // (MemoryBudget's peak, result pairs included), for comparing the accounting with real use.
    size_t* accounted_peak = nullptr;
    // When set, the matcher adds to it the candidate pairs it verified (computed the overlap or
    // similarity of) once its workers are done: the work its filters left, for diagnostics and
    // the per-node balance of a distributed join. Atomic: a matcher thread writes it.
    std::atomic<uint64_t>* candidates = nullptr;
    // Self-join only: when set, the caller wants only the pairs sides->keep names. The
    // prefix-group matcher writes no other pair down (no candidate, no verification, not in its
    // result); the other matchers may still return them, so the caller filters what it gets.
    // (A distributed join's task: the rows it fetched are there only for their pairs with its
    // own.) first() is called once per document, on a matcher thread.
    const PairSides* sides = nullptr;
};

// The error of a join that would exceed JoinOptions::memory_limit (ErrorKind::OutOfMemory):
// at_least is the bytes the matcher's structures would have held at that point, a lower bound on
// the limit the join needs.
class JoinMemoryError : public Error {
public:
    JoinMemoryError(const std::string& message, std::string detail, size_t at_least)
        : Error(ErrorKind::OutOfMemory, message, std::move(detail)), at_least_(at_least) {}
    size_t at_least() const noexcept { return at_least_; }

private:
    size_t at_least_;
};

// One result: indexes into the collection(s) and the similarity.
struct JoinPair {
    uint32_t a;
    uint32_t b;
    double similarity;
};

// A join's result pairs (from the reserved pool when allowed: a million pairs are 16 MB).
using JoinPairs = HugeVector<JoinPair>;

// Self-join: every pair a < b (by index) with similarity >= tau. Throws Error(Canceled) when
// cancel->stop is set, Error(OutOfMemory) when memory_limit would be exceeded.
JoinPairs self_join(const Collection& docs, const JoinOptions& opt);

// R-S join: every (r, s) with similarity >= tau; a indexes r, b indexes s.
JoinPairs rs_join(const Collection& r, const Collection& s, const JoinOptions& opt);

}  // namespace spotsigs
