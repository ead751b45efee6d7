// The all-pairs similarity join (paper Algorithm 1 plus PPJoin filters) over in-memory data.
//
// Exactness is the contract: join() returns exactly the pairs with similarity(a, b) >= tau, the
// same set as the brute-force method, for every method.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cancel.hpp"
#include "multiset.hpp"

namespace spotsigs {

// Many multisets in compact columnar storage (copied out of the database on the main thread).
class Collection {
public:
    // Appends a document; returns its index.
    uint32_t add(int64_t id, const MultisetView& sig);
    size_t size() const noexcept { return ids_.size(); }
    int64_t id(size_t i) const noexcept { return ids_[i]; }
    // The i-th document's multiset.
    MultisetView doc(size_t i) const noexcept;
    // Bytes held by this collection.
    size_t memory_bytes() const noexcept;
    // Reserves room for n documents with total distinct signatures.
    void reserve(size_t n, size_t total);

private:
    std::vector<int64_t> ids_;
    std::vector<uint64_t> offsets_{0};
    std::vector<uint64_t> hashes_;
    std::vector<uint32_t> freqs_;
    std::vector<uint64_t> lengths_;
};

// Which matcher to run: the paper's Table 2 variants.
enum class JoinMethod { Partitioned, NoPart, NoPrune, BruteForce };

struct JoinOptions {
    double tau = 0.8;                 // threshold in (0, 1]
    int threads = 1;                  // worker threads, >= 1
    JoinMethod method = JoinMethod::Partitioned;
    size_t memory_limit = 0;          // bytes for the matcher's own structures; 0 = no limit
    CancelToken* cancel = nullptr;    // polled by workers; progress counts probe documents done
};

// One result: indexes into the collection(s) and the similarity.
struct JoinPair {
    uint32_t a;
    uint32_t b;
    double similarity;
};

// Self-join: every pair a < b (by index) with similarity >= tau. Throws Error(Canceled) when
// cancel->stop is set, Error(OutOfMemory) when memory_limit would be exceeded.
std::vector<JoinPair> self_join(const Collection& docs, const JoinOptions& opt);

// R-S join: every (r, s) with similarity >= tau; a indexes r, b indexes s.
std::vector<JoinPair> rs_join(const Collection& r, const Collection& s, const JoinOptions& opt);

}  // namespace spotsigs
