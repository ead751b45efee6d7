// A small direct-mapped cache of how many index postings a signature has, so that an index
// search can order the query's signatures rarest first without first looking every one of them
// up. Only frequent signatures are kept: any other hash reads as 0, "rare or unknown", which is
// what a hash seen for the first time usually is. The values only order a search, so a stale or
// evicted entry costs time, never a wrong result.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace spotsigs {

class DfCache {
public:
    // 2^log2_slots slots; postings counts below min_df are not kept.
    // The slots come zeroed from calloc, which hands out fresh pages of a large block without
    // writing them: a page of slots costs a page fault only when a hash first falls into it, so a
    // new backend's first searches pay for the few pages their hashes reach, not for all of them.
    explicit DfCache(unsigned log2_slots = 18, uint64_t min_df = 16)
        : shift_(64 - log2_slots),
          min_df_(min_df),
          slots_(static_cast<Slot*>(std::calloc(size_t(1) << log2_slots, sizeof(Slot)))) {
        if (!slots_) throw std::bad_alloc();
    }

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
    // All-zero bytes are an empty slot (calloc's zeroes are the initial state).
    struct Slot {
        uint64_t hash;
        uint32_t df;  // 0: empty
    };
    struct Free {
        void operator()(Slot* p) const noexcept { std::free(p); }
    };
    size_t slot_of(uint64_t hash) const noexcept { return size_t((hash * 0x9e3779b97f4a7c15ULL) >> shift_); }

    unsigned shift_;
    uint64_t min_df_;
    std::unique_ptr<Slot[], Free> slots_;
};

}  // namespace spotsigs
