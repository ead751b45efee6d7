// Preparing a join: the memory budget, the signature dictionary and the re-coded documents.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/common/error.hpp"
#include "core/join/join_internal.hpp"
#include "core/memory/huge_pages.hpp"

namespace spotsigs::join_detail {

namespace {

// How often long loops on the calling thread look at the cancel flag.
constexpr size_t kCancelStride = 4096;

}  // namespace

void MemoryBudget::fail(const char* what, size_t needed) const {
    throw JoinMemoryError("similarity join exceeds its memory limit of " + std::to_string(limit_) + " bytes",
                          std::string(what) + " needs " + std::to_string(needed) + " more bytes with " +
                              std::to_string(used_) + " already in use",
                          used_ + needed);
}

void MemoryBudget::charge(size_t bytes, const char* what) {
    if (limit_ != 0 && (bytes > limit_ || used_ > limit_ - bytes)) fail(what, bytes);
    used_ += bytes;
    if (used_ > peak_) peak_ = used_;
}

void throw_if_canceled(const CancelToken* cancel) {
    if (cancel != nullptr && cancel->stopped()) throw Error(ErrorKind::Canceled, "canceled");
}

// HyperLogLog sketches (2^12 registers, a few percent off) of the distinct hashes of document
// ranges: one streaming pass, so that a dictionary can be allocated once at its final size
// instead of doubling its way there (every doubling is fresh memory, rehashed), and so that the
// build knows whether counting ranges apart pays.
constexpr unsigned kSketchBits = 12;
using Sketch = std::vector<uint8_t>;

// The sketch of documents [d0, d1).
static Sketch sketch_of(const Collection& docs, size_t d0, size_t d1) {
    Sketch reg(size_t(1) << kSketchBits, 0);
    for (size_t d = d0; d < d1; ++d) {
        MultisetView v = docs.doc(d);
        for (uint32_t i = 0; i < v.size; ++i) {
            uint64_t x = v.hashes[i];  // splitmix64's finalizer: the inputs need not be well mixed
            x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
            x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
            x ^= x >> 31;
            const size_t r = static_cast<size_t>(x >> (64 - kSketchBits));
            const uint8_t rank =
                static_cast<uint8_t>(__builtin_clzll((x << kSketchBits) | (uint64_t(1) << (kSketchBits - 1))) + 1);
            if (rank > reg[r]) reg[r] = rank;
        }
    }
    return reg;
}

// The estimated number of distinct hashes of a sketch.
static size_t estimate_of(const Sketch& reg) {
    double sum = 0;
    size_t zeros = 0;
    for (uint8_t r : reg) {
        sum += std::ldexp(1.0, -static_cast<int>(r));
        zeros += r == 0;
    }
    const double md = static_cast<double>(reg.size());
    double e = 0.7213 / (1 + 1.079 / md) * md * md / sum;
    if (e <= 2.5 * md && zeros > 0) e = md * std::log(md / static_cast<double>(zeros));
    return static_cast<size_t>(e);
}

// Slots for an estimated count: at most half full at the estimate plus 6%, about four standard
// errors of a sketch of 2^12 registers (1.04 / 2^6 = 1.6%), so usually no doubling at all.
static size_t slots_for(size_t estimate) {
    return estimate / 100 * 212;
}

void SignatureDictionary::grow(MemoryBudget& budget, size_t min_cap) {
    size_t cap = slots_.empty() ? 1024 : slots_.size() * 2;
    while (cap < min_cap) cap *= 2;
    budget.charge(cap * sizeof(Slot), "the signature dictionary");
    std::vector<Slot> old;
    old.swap(slots_);
    reserve_huge(slots_, cap);
    slots_.assign(cap, Slot{0, 0, 0});
    mask_ = cap - 1;
    for (const Slot& s : old)
        if (s.df != 0) slots_[probe(s.hash)] = s;
    budget.release(old.size() * sizeof(Slot));
}

void SignatureDictionary::add_range(const Collection& docs, size_t d0, size_t d1, size_t expect, MemoryBudget& budget,
                                    const CancelToken* cancel, uint32_t* entry_out) {
    if (slots_.empty()) grow(budget, slots_for(expect));
    constexpr uint32_t kAhead = 8;
    for (size_t d = d0; d < d1; ++d) {
        if ((d - d0) % kCancelStride == 0) throw_if_canceled(cancel);
        MultisetView v = docs.doc(d);
        for (uint32_t i = 0; i < v.size; ++i) {
            if (i + kAhead < v.size) prefetch(v.hashes[i + kAhead]);
            // Keep the load at most one half so that probes stay short.
            if ((static_cast<size_t>(count_) + 1) * 2 > slots_.size()) grow(budget);
            Slot& s = slots_[probe(v.hashes[i])];
            if (s.df == 0) {
                s.hash = v.hashes[i];
                s.id = count_++;
            }
            ++s.df;
            if (entry_out != nullptr) *entry_out++ = s.id;
        }
    }
}

void SignatureDictionary::absorb(const SignatureDictionary& other, MemoryBudget& budget, std::vector<uint32_t>& remap) {
    // Other's slots by its ids (its order of first appearance), so that the signatures new to
    // this dictionary get ids in that order, as one pass over both ranges would have given.
    std::vector<size_t> by_id(other.count_);
    for (size_t k = 0; k < other.slots_.size(); ++k)
        if (other.slots_[k].df != 0) by_id[other.slots_[k].id] = k;
    remap.resize(other.count_);
    for (uint32_t j = 0; j < other.count_; ++j) {
        const Slot& o = other.slots_[by_id[j]];
        if ((static_cast<size_t>(count_) + 1) * 2 > slots_.size()) grow(budget);
        Slot& s = slots_[probe(o.hash)];
        if (s.df == 0) {
            s.hash = o.hash;
            s.id = count_++;
        }
        s.df += o.df;
        remap[j] = s.id;
    }
}

namespace {

// off[d] = the signature occurrences of docs before document d, for d in [0, n] (charged to budget).
void occurrence_offsets(const Collection& docs, MemoryBudget& budget, std::vector<uint64_t>& off) {
    const size_t n = docs.size();
    budget.charge((n + 1) * sizeof(uint64_t), "the signature occurrences");
    reserve_huge(off, n + 1);
    off.assign(n + 1, 0);
    for (size_t d = 0; d < n; ++d) off[d + 1] = off[d] + docs.doc(d).size;
}

// The documents in `parts` ranges of about equal signature counts (off as occurrence_offsets
// gives it): range p is documents [first[p], first[p + 1]).
std::vector<size_t> split_by_occurrences(const std::vector<uint64_t>& off, size_t parts) {
    const size_t n = off.size() - 1;
    const uint64_t total = off[n];
    std::vector<size_t> first(parts + 1, n);
    first[0] = 0;
    for (size_t p = 1; p < parts; ++p)
        first[p] = static_cast<size_t>(std::lower_bound(off.begin(), off.end(), total * p / parts) - off.begin());
    for (size_t p = 1; p <= parts; ++p) first[p] = std::max(first[p], first[p - 1]);
    return first;
}

// Sketches each range of documents on the workers: estimates[p] receives the distinct hashes of
// range p; returns those of all ranges together (the union of the sketches).
size_t estimate_distinct(const Collection& docs, const std::vector<size_t>& first, std::vector<size_t>& estimates) {
    const size_t parts = first.size() - 1;
    std::vector<Sketch> sketch(parts);
    run_workers(static_cast<int>(parts), parts, 1, [&](int, size_t b, size_t e) {
        for (size_t p = b; p < e; ++p) sketch[p] = sketch_of(docs, first[p], first[p + 1]);
    });
    Sketch all = sketch[0];
    for (size_t p = 1; p < parts; ++p)
        for (size_t k = 0; k < all.size(); ++k) all[k] = std::max(all[k], sketch[p][k]);
    estimates.resize(parts);
    for (size_t p = 0; p < parts; ++p) estimates[p] = estimate_of(sketch[p]);
    return estimate_of(all);
}

// Rewrites every occurrence id e[0, total) once, from its range's own ids to the final ids:
// through perm in range 0 (whose ids are this dictionary's), through remap[p] in range p >= 1.
// In chunks on the workers; chunks may straddle ranges, so each looks its range up.
void rewrite_occurrences(uint32_t* e, size_t total, const std::vector<size_t>& first, const std::vector<uint64_t>& off,
                         const std::vector<uint32_t>& perm, const std::vector<std::vector<uint32_t>>& remap) {
    const size_t parts = first.size() - 1;
    const size_t chunk = std::max<size_t>(1, (total + 4 * parts - 1) / (4 * parts));
    run_workers(static_cast<int>(parts), total, chunk, [&](int, size_t b, size_t end) {
        while (b < end) {
            // The range holding occurrence b, and where it ends.
            size_t p = 0;
            while (p + 1 < parts && off[first[p + 1]] <= b) ++p;
            const size_t stop = std::min<size_t>(end, off[first[p + 1]]);
            const uint32_t* m = p == 0 ? perm.data() : remap[p].data();
            for (; b < stop; ++b) e[b] = m[e[b]];
        }
    });
}

}  // namespace

void SignatureDictionary::count_apart(const Collection& docs, const std::vector<size_t>& first,
                                      const std::vector<size_t>& estimates, size_t distinct, MemoryBudget& budget,
                                      const CancelToken* cancel, uint32_t* const* entries,
                                      std::vector<std::vector<uint32_t>>& remap) {
    const size_t parts = first.size() - 1;
    // Each part charges its own budget (a share of what is left); the sum is charged after.
    const size_t left = budget.limit() == 0 ? 0 : (budget.limit() > budget.used() ? budget.limit() - budget.used() : 1);
    std::vector<MemoryBudget> budgets(parts, MemoryBudget(left == 0 ? 0 : std::max<size_t>(1, left / parts)));
    std::vector<SignatureDictionary> local(parts);
    run_workers(static_cast<int>(parts), parts, 1, [&](int, size_t b, size_t e) {
        for (size_t p = b; p < e; ++p)
            local[p].add_range(docs, first[p], first[p + 1], estimates[p], budgets[p], cancel, entries[p]);
    });
    size_t held = 0;
    for (const MemoryBudget& pb : budgets) held += pb.used();
    budget.charge(held, "the signature dictionary");
    *this = std::move(local[0]);
    // Room for every signature at once: at most one more allocation.
    if (slots_for(distinct) > slots_.size()) grow(budget, slots_for(distinct));
    remap.assign(parts, {});
    for (size_t p = 1; p < parts; ++p) {
        throw_if_canceled(cancel);
        budget.charge(local[p].count_ * (sizeof(uint32_t) + sizeof(size_t)), "merging the signature dictionary");
        absorb(local[p], budget, remap[p]);
        budget.release(local[p].memory_bytes() + local[p].count_ * sizeof(size_t));
        local[p] = SignatureDictionary();
    }
}

std::vector<uint32_t> SignatureDictionary::renumber_by_df(MemoryBudget& budget, size_t* scratch) {
    // A counting sort on df: ties stay in order of first appearance.
    uint32_t max_df = 0;
    for (const Slot& s : slots_) max_df = std::max(max_df, s.df);
    *scratch = (static_cast<size_t>(max_df) + 2 + count_) * sizeof(uint32_t);
    budget.charge(*scratch, "ordering the signatures");
    std::vector<uint32_t> df_of, next(static_cast<size_t>(max_df) + 2, 0);
    reserve_huge(df_of, count_);
    df_of.resize(count_);
    for (const Slot& s : slots_)
        if (s.df != 0) df_of[s.id] = s.df;
    for (uint32_t f : df_of) ++next[f + 1];
    for (size_t f = 1; f < next.size(); ++f) next[f] += next[f - 1];
    std::vector<uint32_t>& perm = df_of;  // reused in place: df_of[p] is read before it is set
    for (uint32_t p = 0; p < count_; ++p) perm[p] = next[df_of[p]]++;
    for (Slot& s : slots_)
        if (s.df != 0) s.id = perm[s.id];
    return std::move(perm);
}

void SignatureDictionary::build(const Collection& docs, MemoryBudget& budget, const CancelToken* cancel, int threads,
                                std::vector<uint32_t>* entry_ids, std::vector<uint64_t>* entry_off) {
    // The documents in `parts` ranges of about equal signature counts, each counted into its own
    // table on a worker; the tables are then merged in range order. Ids (order of first
    // appearance, then the final ids) come out the same for any number of parts.
    const size_t n = docs.size();
    std::vector<uint64_t> local_off;
    std::vector<uint64_t>& off = entry_off != nullptr ? *entry_off : local_off;
    occurrence_offsets(docs, budget, off);
    const uint64_t total = off[n];
    if (entry_ids != nullptr) {
        budget.charge(total * sizeof(uint32_t), "the signature occurrences");
        reserve_huge(*entry_ids, total);
        entry_ids->resize(total);
    }
    size_t parts = static_cast<size_t>(std::max(1, threads));
    if (total < (uint64_t(1) << 16)) parts = 1;  // small inputs: not worth a merge
    std::vector<size_t> first = split_by_occurrences(off, parts);
    std::vector<size_t> estimates;
    const size_t distinct = estimate_distinct(docs, first, estimates);
    // Counting ranges apart costs a table per range and the merge of every range's signatures
    // into the first; it pays only when signatures repeat across documents: with fewer than 4
    // occurrences per distinct signature, the merge repeats nearly all of the counting.
    if (parts > 1 && total < 4 * static_cast<uint64_t>(distinct)) {
        parts = 1;
        first = {0, n};
    }
    // Where each range's occurrence ids go (none without entry_ids).
    std::vector<uint32_t*> entries(parts, nullptr);
    if (entry_ids != nullptr)
        for (size_t p = 0; p < parts; ++p) entries[p] = entry_ids->data() + off[first[p]];
    // remap[p] maps range p's own ids to this dictionary's (range 0 keeps its ids); the
    // occurrences are rewritten once, at the end, through remap and the final order together.
    std::vector<std::vector<uint32_t>> remap(parts);
    if (parts == 1) add_range(docs, 0, n, distinct, budget, cancel, entries[0]);
    else count_apart(docs, first, estimates, distinct, budget, cancel, entries.data(), remap);
    if (entry_off == nullptr) budget.release((n + 1) * sizeof(uint64_t));

    // Final ids in ascending document frequency (the global rarest-first order).
    size_t scratch = 0;
    const std::vector<uint32_t> perm = renumber_by_df(budget, &scratch);
    for (size_t p = 1; p < parts; ++p)
        for (uint32_t& id : remap[p]) id = perm[id];
    if (entry_ids != nullptr) rewrite_occurrences(entry_ids->data(), entry_ids->size(), first, off, perm, remap);
    for (size_t p = 1; p < parts; ++p) budget.release(remap[p].size() * sizeof(uint32_t));
    budget.release(scratch);
}

size_t DocStore::memory_bytes() const noexcept {
    return (len.capacity() + lead.capacity() + orig.capacity() + sig.capacity() + freq.capacity()) * sizeof(uint32_t) +
           off.capacity() * sizeof(uint64_t);
}

void DocStore::build(const Collection& docs, const SignatureDictionary& dict, const std::vector<uint32_t>* entry_ids,
                     const std::vector<uint64_t>* entry_off, int threads, MemoryBudget& budget,
                     const CancelToken* cancel) {
    constexpr size_t kChunk = 256;
    constexpr uint32_t kAhead = 8;
    size_t n = 0;
    for (size_t d = 0; d < docs.size(); ++d) n += docs.doc(d).empty() ? 0 : 1;
    budget.charge(n * (3 * sizeof(uint32_t) + sizeof(uint64_t)) + sizeof(uint64_t), "the re-coded documents");
    reserve_huge(orig, n);
    for (size_t d = 0; d < docs.size(); ++d)
        if (!docs.doc(d).empty()) orig.push_back(static_cast<uint32_t>(d));
    // Rank = position in (length, collection index) order; the index is the tie-break.
    std::stable_sort(orig.begin(), orig.end(),
                     [&docs](uint32_t x, uint32_t y) { return docs.doc(x).length < docs.doc(y).length; });
    reserve_huge(len, n);
    reserve_huge(lead, n);
    reserve_huge(off, n + 1);
    len.resize(n);
    lead.assign(n, 0);
    off.assign(n + 1, 0);

    // Pass 1: how many signatures of each document the dictionary holds (all of them when it
    // was built from these documents).
    for (size_t r = 0; r < n; ++r) {
        MultisetView v = docs.doc(orig[r]);
        len[r] = static_cast<uint32_t>(v.length);
        off[r + 1] = v.size;
    }
    if (entry_ids == nullptr) {
        run_workers(threads, n, kChunk, [&](int, size_t begin, size_t end) {
            throw_if_canceled(cancel);
            for (size_t r = begin; r < end; ++r) {
                MultisetView v = docs.doc(orig[r]);
                uint64_t found = 0;
                for (uint32_t i = 0; i < v.size; ++i) {
                    if (i + kAhead < v.size) dict.prefetch(v.hashes[i + kAhead]);
                    found += dict.find(v.hashes[i]) != UINT32_MAX;
                }
                off[r + 1] = found;
            }
        });
    }
    for (size_t r = 0; r < n; ++r) off[r + 1] += off[r];
    const size_t entries = off[n];
    budget.charge(entries * 2 * sizeof(uint32_t), "the re-coded documents");
    reserve_huge(sig, entries);
    reserve_huge(freq, entries);
    sig.resize(entries);
    freq.resize(entries);

    // Pass 2: the (id, frequency) pairs of each document sorted by id; signatures the
    // dictionary lacks only add to the document's lead mass.
    run_workers(threads, n, kChunk, [&](int, size_t begin, size_t end) {
        throw_if_canceled(cancel);
        std::vector<uint64_t> tmp;
        for (size_t r = begin; r < end; ++r) {
            MultisetView v = docs.doc(orig[r]);
            tmp.clear();
            uint32_t absent = 0;
            if (entry_ids != nullptr) {
                const uint32_t* ids = entry_ids->data() + (*entry_off)[orig[r]];
                for (uint32_t i = 0; i < v.size; ++i) tmp.push_back(static_cast<uint64_t>(ids[i]) << 32 | v.freqs[i]);
            } else {
                for (uint32_t i = 0; i < v.size; ++i) {
                    if (i + kAhead < v.size) dict.prefetch(v.hashes[i + kAhead]);
                    uint32_t id = dict.find(v.hashes[i]);
                    if (id == UINT32_MAX) absent += v.freqs[i];  // cannot be common with any indexed document
                    else tmp.push_back(static_cast<uint64_t>(id) << 32 | v.freqs[i]);
                }
            }
            std::sort(tmp.begin(), tmp.end());
            lead[r] = absent;
            uint64_t o = off[r];
            for (uint64_t x : tmp) {
                sig[o] = static_cast<uint32_t>(x >> 32);
                freq[o++] = static_cast<uint32_t>(x);
            }
        }
    });
    throw_if_canceled(cancel);
}

}  // namespace spotsigs::join_detail
