// A small direct-mapped cache of how many index postings a signature has, so that an index
// search can order the query's signatures rarest first without first looking every one of them
// up. Only frequent signatures are kept: any other hash reads as 0, "rare or unknown", which is
// what a hash seen for the first time usually is. The values only order a search, so a stale or
// evicted entry costs time, never a wrong result.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace spotsigs {

class DfCache {
public:
    // 2^log2_slots slots; postings counts below min_df are not kept.
    // The slots are a fresh anonymous mapping (zeroed by the kernel on first touch, nothing written
    // here) aligned to 2 MB and marked for transparent huge pages where the kernel offers them:
    // the hashes of a backend's searches fall all over the slots, and in 4 kB pages each page they
    // reach costs a page fault (two when it is read before it is written), so a new backend's
    // first dozens of searches would take hundreds of faults; one huge page takes one. Without
    // huge pages, only the pages the hashes reach are ever touched.
    explicit DfCache(unsigned log2_slots = 18, uint64_t min_df = 16)
        : shift_(64 - log2_slots), min_df_(min_df), bytes_((size_t(1) << log2_slots) * sizeof(Slot)) {
        slots_ = static_cast<Slot*>(map_aligned(bytes_));
        if (slots_ == nullptr) throw std::bad_alloc();
    }
    ~DfCache() { munmap(slots_, bytes_); }
    DfCache(const DfCache&) = delete;
    DfCache& operator=(const DfCache&) = delete;

    // The cached count of hash, or 0 when it is not cached.
    uint64_t get(uint64_t hash) const noexcept {
        const Slot& s = slots_[slot_of(hash)];
        return s.df != 0 && s.hash == hash ? s.df : 0;
    }

    // Records hash's count: kept when at least min_df and the slot holds nothing larger of
    // another hash; a count below min_df removes hash's own entry.
    void put(uint64_t hash, uint64_t df) noexcept {
        Slot& s = slots_[slot_of(hash)];
        uint32_t v = df > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(df);
        if (s.df != 0 && s.hash == hash) {
            s.df = df >= min_df_ ? v : 0;
        } else if (df >= min_df_ && v > s.df) {
            s.hash = hash;
            s.df = v;
        }
    }

    // Searches run with this cache (callers use it to warm the cache up first).
    uint64_t searches = 0;

private:
    // All-zero bytes are an empty slot (the mapping's zeroes are the initial state).
    struct Slot {
        uint64_t hash;
        uint32_t df;  // 0: empty
    };
    static constexpr size_t kHuge = size_t(2) << 20;

    // A zeroed mapping of n bytes, aligned to kHuge when n is at least kHuge (the unaligned ends
    // of a larger mapping are unmapped again); nullptr when the kernel refuses.
    static void* map_aligned(size_t n) {
        if (n < kHuge) {
            void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            return p == MAP_FAILED ? nullptr : p;
        }
        void* raw = mmap(nullptr, n + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) return nullptr;
        uintptr_t start = reinterpret_cast<uintptr_t>(raw), aligned = (start + kHuge - 1) & ~(kHuge - 1);
        if (aligned > start) munmap(raw, aligned - start);
        if (aligned + n < start + n + kHuge) munmap(reinterpret_cast<void*>(aligned + n), start + kHuge - aligned);
#ifdef MADV_HUGEPAGE
        madvise(reinterpret_cast<void*>(aligned), n, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
        return reinterpret_cast<void*>(aligned);
    }
    size_t slot_of(uint64_t hash) const noexcept {
        return size_t((hash * 0x9e3779b97f4a7c15ULL) >> shift_);
    }

    unsigned shift_;
    uint64_t min_df_;
    size_t bytes_;
    Slot* slots_;
};

}  // namespace spotsigs
