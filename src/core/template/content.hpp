// The content measure: multiset Jaccard over a collection's content signatures, i.e. without the
// signatures its pages share as a template rather than as content.
//
// A signature is a *template* signature of a collection when the pages holding it are, on
// average, not near duplicates of one another: the mean similarity over the pairs of those
// pages is below kCoherence. Copies of one story share their signatures and are near
// duplicates of one another, so a story's signatures stay however many copies there are; pages
// that share a site template, a footer or boilerplate prose but carry different text are not,
// so those signatures go, however few or many pages hold them. (A document frequency cannot
// tell the two apart: both kinds recur on many pages.)
//
// The similarities the mean is taken over come from the plain measure in the first round and
// from the previous round's content signatures in each later one (kRounds rounds): a template
// makes the pages that carry it look alike, and once the template's other signatures are gone
// that likeness goes with them. A signature held by more than kSample pages is judged on the
// kSample of them whose ids come first in a fixed pseudo-random order (fmix64 of the id), so the
// result depends only on the set of (id, signature) rows, never on the order they are read in.
// Signatures held by one page are content.
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/cancel.hpp"
#include "core/join/join.hpp"
#include "core/signature/hash.hpp"

namespace spotsigs {

// The measure's constants (documented in the README, "Choosing a threshold and a method").
constexpr double kCoherence = 0.4;         // least mean similarity of the pages holding a content signature
constexpr int kRounds = 2;                 // rounds of the estimate (the first on the plain measure)
constexpr uint32_t kSample = 16;           // most pages a signature is judged on
constexpr double kContentThreshold = 0.4;  // the default threshold of the content measure

// The template signatures of docs (ascending hashes), judged on up to `threads` threads. Throws
// Error(Canceled) when cancel is set, and Error(OutOfMemory) when docs and what it would hold
// exceed memory_limit bytes (0: no limit): before it copies docs' (signature, page) entries when
// they alone would, else once it knows how many of them belong to signatures held by two or more
// pages, before it allocates the rest of its structures. shared, when
// given, receives how many signatures two or more pages hold (the candidates for the template).
std::vector<uint64_t> template_signatures(const Collection& docs, int threads = 1, CancelToken* cancel = nullptr,
                                          size_t memory_limit = 0, size_t* shared = nullptr);

// template_signatures(docs, ...) for a caller that needs nothing of docs after it: docs is emptied
// as soon as its (signature, page) entries are copied, and counts against memory_limit only until
// then (the statistics of the largest tables need about a quarter less memory at their peak).
// docs is left empty when it returns (when it throws, emptied or not).
std::vector<uint64_t> template_signatures_releasing(Collection& docs, int threads = 1, CancelToken* cancel = nullptr,
                                                    size_t memory_limit = 0, size_t* shared = nullptr);

// An upper bound on the bytes template_signatures(docs, threads) holds at once beside docs, for
// docs whose every signature is held by two or more pages: the table that finds those
// signatures, their (signature, page) entries, the samples, and the pages' rows of those
// signatures in both rounds.
size_t template_memory_bytes(const Collection& docs, int threads);

// docs without the signatures in drop (ascending): same documents, ids and order, copied on up
// to threads threads. Throws Error(Canceled) when cancel is set.
Collection without_signatures(const Collection& docs, const std::vector<uint64_t>& drop,
                              const CancelToken* cancel = nullptr, int threads = 1);

// One multiset without the signatures in drop (ascending).
Multiset without_signatures(const MultisetView& doc, const std::vector<uint64_t>& drop);

// A set of signature hashes, prepared once for removing them from many multisets: open
// addressing with linear probing on the low bits of fmix64 of the hash (hashes a caller typed in
// need not be spread, fmix64 spreads them); 0 is kept aside as the empty slot's mark. In front
// of the table, a bitmap with one bit per value of the top bits of the same fmix64, set for
// every key: a clear bit proves absence, and the bitmap (about 8 bits a key) is small enough to
// stay in cache where the table is not.
class SignatureSet {
public:
    // The set of keys (any order, repeats allowed). Long builds look at cancel (throwing
    // Error(Canceled) once it is set) and call poll (which may throw) every few thousand keys.
    SignatureSet(const uint64_t* keys, size_t n, const CancelToken* cancel = nullptr, const PollFn& poll = {});
    explicit SignatureSet(const std::vector<uint64_t>& keys, const CancelToken* cancel = nullptr)
        : SignatureSet(keys.data(), keys.size(), cancel) {}
    bool contains(uint64_t k) const noexcept {
        if (k == 0) return has_zero_;
        const uint64_t x = fmix64(k);
        const uint64_t f = x >> filter_shift_;
        if ((filter_[f / 64] >> (f % 64) & 1) == 0) return false;
        return in_table(k, x);
    }
    // doc without the members of the set, into m (cleared first); poll as for the constructor.
    void remove_into(const MultisetView& doc, Multiset& m, const PollFn& poll = {}) const;
    // Bytes held.
    size_t memory_bytes() const noexcept;

private:
    // Whether k (not 0, x = fmix64(k)) is in the table.
    bool in_table(uint64_t k, uint64_t x) const noexcept {
        for (size_t i = x & mask_;; i = (i + 1) & mask_) {
            if (slots_[i] == k) return true;
            if (slots_[i] == 0) return false;  // at most half full: an empty slot always follows
        }
    }
    std::vector<uint64_t> slots_;
    std::vector<uint64_t> filter_;  // bit (fmix64(k) >> filter_shift_) set for every key k
    unsigned filter_shift_ = 64;
    size_t mask_ = 0;
    bool has_zero_ = false;
};

}  // namespace spotsigs
