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

namespace spotsigs {

// The measure's constants (documented in the README, "Choosing a threshold and a method").
constexpr double kCoherence = 0.4;         // least mean similarity of the pages holding a content signature
constexpr int kRounds = 2;                 // rounds of the estimate (the first on the plain measure)
constexpr uint32_t kSample = 16;           // most pages a signature is judged on
constexpr double kContentThreshold = 0.4;  // the default threshold of the content measure

// The template signatures of docs (ascending hashes), judged on up to `threads` threads. Throws
// Error(Canceled) when cancel is set.
std::vector<uint64_t> template_signatures(const Collection& docs, int threads = 1, CancelToken* cancel = nullptr);

// An upper bound on the bytes template_signatures(docs, threads) holds at once beside docs:
// its (signature, page) entries and samples, and the copy of docs without the first round's
// template signatures.
size_t template_memory_bytes(const Collection& docs, int threads);

// docs without the signatures in drop (ascending): same documents, ids and order.
Collection without_signatures(const Collection& docs, const std::vector<uint64_t>& drop);

// One multiset without the signatures in drop (ascending).
Multiset without_signatures(const MultisetView& doc, const std::vector<uint64_t>& drop);

}  // namespace spotsigs
