// Preparing a join: the memory budget, the signature dictionary and the re-coded documents.
#include <algorithm>
#include <numeric>
#include <string>

#include "error.hpp"
#include "join_internal.hpp"

namespace spotsigs::join_detail {

namespace {

// Spreads a 64-bit hash over the table (the inputs need not be well mixed).
inline size_t mix(uint64_t h) noexcept {
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
    return static_cast<size_t>(h);
}

// How often long loops on the calling thread look at the cancel flag.
constexpr size_t kCancelStride = 4096;

}  // namespace

void MemoryBudget::fail(const char* what, size_t needed) const {
    throw Error(ErrorKind::OutOfMemory,
                "similarity join exceeds its memory limit of " + std::to_string(limit_) + " bytes",
                std::string(what) + " needs " + std::to_string(needed) + " more bytes with " +
                    std::to_string(used_) + " already in use");
}

void MemoryBudget::charge(size_t bytes, const char* what) {
    if (limit_ != 0 && (bytes > limit_ || used_ > limit_ - bytes)) fail(what, bytes);
    used_ += bytes;
}

void throw_if_canceled(const CancelToken* cancel) {
    if (cancel != nullptr && cancel->stopped()) throw Error(ErrorKind::Canceled, "canceled");
}

size_t SignatureDictionary::probe(uint64_t hash) const noexcept {
    size_t i = mix(hash) & mask_;
    while (slots_[i].df != 0 && slots_[i].hash != hash) i = (i + 1) & mask_;
    return i;
}

void SignatureDictionary::grow(MemoryBudget& budget) {
    size_t cap = slots_.empty() ? 1024 : slots_.size() * 2;
    budget.charge(cap * sizeof(Slot), "the signature dictionary");
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{0, 0, 0});
    mask_ = cap - 1;
    for (const Slot& s : old)
        if (s.df != 0) slots_[probe(s.hash)] = s;
    budget.release(old.size() * sizeof(Slot));
}

void SignatureDictionary::build(const Collection& docs, MemoryBudget& budget, const CancelToken* cancel) {
    grow(budget);
    for (size_t d = 0; d < docs.size(); ++d) {
        if (d % kCancelStride == 0) throw_if_canceled(cancel);
        MultisetView v = docs.doc(d);
        for (uint32_t i = 0; i < v.size; ++i) {
            // Keep the load at most one half so that probes stay short.
            if ((static_cast<size_t>(count_) + 1) * 2 > slots_.size()) grow(budget);
            Slot& s = slots_[probe(v.hashes[i])];
            if (s.df == 0) {
                s.hash = v.hashes[i];
                ++count_;
            }
            ++s.df;
        }
    }
    // Dense ids in ascending document frequency, ties by hash: the global rarest-first order.
    std::vector<uint32_t> used;
    budget.charge(static_cast<size_t>(count_) * sizeof(uint32_t), "ordering the signatures");
    used.reserve(count_);
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].df != 0) used.push_back(static_cast<uint32_t>(i));
    std::sort(used.begin(), used.end(), [this](uint32_t x, uint32_t y) {
        const Slot& a = slots_[x];
        const Slot& b = slots_[y];
        return a.df != b.df ? a.df < b.df : a.hash < b.hash;
    });
    for (uint32_t id = 0; id < used.size(); ++id) slots_[used[id]].id = id;
    budget.release(static_cast<size_t>(count_) * sizeof(uint32_t));
}

uint32_t SignatureDictionary::find(uint64_t hash) const noexcept {
    if (slots_.empty()) return UINT32_MAX;
    const Slot& s = slots_[probe(hash)];
    return s.df != 0 ? s.id : UINT32_MAX;
}

size_t DocStore::memory_bytes() const noexcept {
    return (len.capacity() + lead.capacity() + orig.capacity() + sig.capacity() + freq.capacity()) *
               sizeof(uint32_t) +
           off.capacity() * sizeof(uint64_t);
}

void DocStore::build(const Collection& docs, const SignatureDictionary& dict, MemoryBudget& budget,
                     const CancelToken* cancel) {
    size_t n = 0, entries = 0;
    for (size_t d = 0; d < docs.size(); ++d) {
        MultisetView v = docs.doc(d);
        if (v.empty()) continue;
        ++n;
        entries += v.size;
    }
    budget.charge(n * (3 * sizeof(uint32_t) + sizeof(uint64_t)) + sizeof(uint64_t) +
                      entries * 2 * sizeof(uint32_t),
                  "the re-coded documents");
    orig.reserve(n);
    for (size_t d = 0; d < docs.size(); ++d)
        if (!docs.doc(d).empty()) orig.push_back(static_cast<uint32_t>(d));
    // Rank = position in (length, collection index) order; the index is the tie-break.
    std::stable_sort(orig.begin(), orig.end(), [&docs](uint32_t x, uint32_t y) {
        return docs.doc(x).length < docs.doc(y).length;
    });
    len.resize(n);
    lead.assign(n, 0);
    off.reserve(n + 1);
    off.push_back(0);
    sig.reserve(entries);
    freq.reserve(entries);
    std::vector<uint64_t> tmp;
    for (size_t r = 0; r < n; ++r) {
        if (r % kCancelStride == 0) throw_if_canceled(cancel);
        MultisetView v = docs.doc(orig[r]);
        len[r] = static_cast<uint32_t>(v.length);
        tmp.clear();
        for (uint32_t i = 0; i < v.size; ++i) {
            uint32_t id = dict.find(v.hashes[i]);
            if (id == UINT32_MAX)
                lead[r] += v.freqs[i];  // cannot be common with any indexed document
            else
                tmp.push_back(static_cast<uint64_t>(id) << 32 | v.freqs[i]);
        }
        std::sort(tmp.begin(), tmp.end());
        for (uint64_t x : tmp) {
            sig.push_back(static_cast<uint32_t>(x >> 32));
            freq.push_back(static_cast<uint32_t>(x));
        }
        off.push_back(sig.size());
    }
}

}  // namespace spotsigs::join_detail
