// Append-only lists of small trivially copyable values in a fixed number of buckets, each bucket a
// list of 8 KB blocks carved from shared slabs on transparent huge pages: appending touches one
// block per bucket, lists of several writers join by moving blocks, and their memory is faulted
// in one 2 MB page at a time (on 4 KB pages a first touch of 100 MB costs 25,000 page faults,
// expensive on virtual machines) and never copied as vectors are when they grow.
//
// Entries are written a cache line at a time: each bucket gathers a line's worth in a staging
// line of its own (256 of them take 16 KB, in the first-level cache), and a full line goes to
// its block with streaming stores, which do not read the line in first. Written one by one, the
// entries of 256 scattered blocks would miss the cache on nearly every entry. An entry of one or
// more whole lines (a caller's own group of entries) goes out
// as it comes. Readers see the entries after seal(); a thread that added entries must pass
// stream_fence() (seal() does) before another thread reads them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/memory/huge_alloc.hpp"
#include "core/memory/huge_pages.hpp"

namespace spotsigs {

// Orders this thread's streaming stores before its later stores (so that a thread that joins or
// synchronises with it afterwards sees the lines): the end of every join worker passes it.
inline void stream_fence() noexcept {
#if defined(__SSE2__)
    _mm_sfence();
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

template <class T, size_t Buckets>
class BlockLists {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "blocks are copied and freed as raw memory");

public:
    static constexpr size_t kBuckets = Buckets;
    // Entries per staging line: they are written a line at a time (T's size divides 64), or one
    // at a time when an entry is whole lines.
    static constexpr uint32_t kStage = sizeof(T) >= 64 ? 1 : static_cast<uint32_t>(64 / sizeof(T));
    static_assert(sizeof(T) <= 64 ? 64 % sizeof(T) == 0 : sizeof(T) % 64 == 0, "entries tile cache lines");
    static_assert(alignof(T) >= 64 || sizeof(T) < 64, "an entry of whole lines starts a line");
    // 8 KB blocks: a line of header, then the entries, whose lines are then aligned.
    static constexpr uint32_t kBlockEntries = static_cast<uint32_t>((8192 - 64) / sizeof(T));
    struct alignas(64) Block {
        uint32_t count = 0;
        alignas(64) T e[kBlockEntries];
    };

    BlockLists() = default;
    // Moves take the slabs along and leave other empty (a defaulted move would leave other with
    // stale counts, and a defaulted assignment would drop this one's slabs without freeing them).
    BlockLists(BlockLists&& other) noexcept { swap(other); }
    BlockLists& operator=(BlockLists&& other) noexcept {
        if (this != &other) {
            clear();
            swap(other);
        }
        return *this;
    }
    BlockLists(const BlockLists&) = delete;
    BlockLists& operator=(const BlockLists&) = delete;
    ~BlockLists() { clear(); }

    // Appends e to bucket b (b < kBuckets). The entry waits in b's staging line until a whole
    // cache line of them goes out at once; seal() before reading.
    void add(size_t b, const T& e) {
        ++entries_;
        if constexpr (kStage == 1) {
            if (tail_[b] == nullptr || tail_n_[b] == kBlockEntries) open_block(b);
            stream_lines(&tail_[b]->e[tail_n_[b]++], &e);
        } else {
            stage_[b].e[stage_n_[b]++] = e;
            if (stage_n_[b] == kStage) flush_line(b);
        }
    }
    // Writes every staged entry to its block, so that bucket() and bucket_entries() see all of
    // them, and passes stream_fence() (a reader on another thread then sees every line once it
    // synchronises with this one). Entries may be added after it.
    void seal() {
        for (size_t b = 0; b < kBuckets; ++b) {
            if constexpr (kStage > 1)
                for (uint32_t i = 0; i < stage_n_[b]; ++i) put(b, stage_[b].e[i]);
            stage_n_[b] = 0;
            if (tail_[b] != nullptr) tail_[b]->count = tail_n_[b];
        }
        stream_fence();
    }
    // Moves every entry of other into this one (other ends empty); both are sealed first.
    void absorb(BlockLists& other) {
        seal();
        other.seal();
        for (size_t c = 0; c < kBuckets; ++c) {
            std::vector<Block*>& from = other.buckets_[c];
            std::vector<Block*>& to = buckets_[c];
            to.insert(to.end(), from.begin(), from.end());
            std::vector<Block*>().swap(from);
            other.tail_[c] = nullptr;
            other.tail_n_[c] = 0;
            tail_[c] = to.empty() ? nullptr : to.back();
            tail_n_[c] = to.empty() ? 0 : tail_[c]->count;
        }
        // This list's current slab stays the one it carves from: the other's go in front of it
        // (with none of its own, this one carves on from other's current slab).
        if (slabs_.empty()) used_ = other.used_;
        slabs_.insert(slabs_.empty() ? slabs_.end() : slabs_.end() - 1, other.slabs_.begin(), other.slabs_.end());
        other.slabs_.clear();
        other.used_ = 0;
        entries_ += other.entries_;
        bytes_ += other.bytes_;
        other.entries_ = 0;
        other.bytes_ = 0;
    }
    // The blocks of bucket c (their entries as of the last seal()).
    const std::vector<Block*>& bucket(size_t c) const noexcept { return buckets_[c]; }
    // Entries in bucket c (as of the last seal()).
    uint64_t bucket_entries(size_t c) const noexcept {
        uint64_t k = 0;
        for (const Block* b : buckets_[c]) k += b->count;
        return k;
    }
    // Entries held, staged ones included.
    uint64_t entries() const noexcept { return entries_; }
    // Bytes held (the slabs).
    size_t memory_bytes() const noexcept { return bytes_; }
    // An upper bound of the bytes held once the blocks that new entries may open, up to `blocks`
    // of them, are taken: the current slab's free blocks first, then the next slabs, each at most
    // twice the one before (a caller that charges this before adding keeps the slabs within it).
    size_t memory_bytes_after(size_t blocks) const noexcept {
        size_t bytes = bytes_;
        size_t free = slabs_.empty() ? 0 : slabs_.back().blocks - used_;
        size_t last = slabs_.empty() ? 0 : slabs_.back().blocks;
        while (free < blocks) {
            // new_block()'s sizes.
            const size_t next = last != 0                       ? std::min(kLastSlab, 2 * last)
                                : reserved_huge_pages_allowed() ? kSlabAlign / sizeof(Block)
                                                                : kFirstSlab;
            bytes += next * sizeof(Block);
            free += next;
            last = next;
        }
        return bytes;
    }
    // Frees everything.
    void clear() noexcept {
        for (auto& b : buckets_) std::vector<Block*>().swap(b);
        for (size_t b = 0; b < kBuckets; ++b) {
            stage_n_[b] = 0;
            tail_[b] = nullptr;
            tail_n_[b] = 0;
        }
        for (const Slab& s : slabs_) huge_free(s.base, s.token);  // blocks are trivially destructible
        slabs_.clear();
        used_ = 0;
        entries_ = 0;
        bytes_ = 0;
    }

private:
    // Blocks in the first and the largest slab, and the slabs' alignment: slabs double from 64
    // blocks (512 KB, enough for small inputs) to 1,024 (8 MB), each aligned to 2 MB so that the
    // larger ones fill whole huge pages. When the reserved pool may be used the first slab is
    // one page of it (2 MB, the blocks that fit): pool pages cost one fault per 2 MB, fresh ones
    // one per 4 KB.
    static constexpr size_t kFirstSlab = 64;
    static constexpr size_t kLastSlab = 1024;
    static constexpr size_t kSlabAlign = size_t(2) << 20;
    struct Slab {
        void* base;
        size_t blocks;
        size_t token;  // for huge_free
    };

    // A bucket's entries waiting for a whole line, aligned so that the line goes out as one.
    struct alignas(64) Stage {
        T e[kStage];
    };

    // Appends e to bucket b's tail block with an ordinary store (a new block when it is full).
    void put(size_t b, const T& e) {
        if (tail_[b] == nullptr || tail_n_[b] == kBlockEntries) open_block(b);
        tail_[b]->e[tail_n_[b]++] = e;
    }
    // Starts a new tail block for bucket b (the full one's count written down).
    void open_block(size_t b) {
        if (tail_[b] != nullptr) tail_[b]->count = tail_n_[b];
        Block* k = new_block();
        buckets_[b].push_back(k);
        tail_[b] = k;
        tail_n_[b] = 0;
    }
    // Writes bucket b's full staging line: when the tail block has a whole aligned line free,
    // with streaming stores (the entries are read much later, by then out of the cache: no
    // point reading the line in first), else entry by entry.
    void flush_line(size_t b) {
        const Stage& st = stage_[b];
        stage_n_[b] = 0;
        if (tail_[b] == nullptr || tail_n_[b] == kBlockEntries) open_block(b);
        if (tail_n_[b] % kStage == 0 && tail_n_[b] + kStage <= kBlockEntries) {
            stream_lines(&tail_[b]->e[tail_n_[b]], st.e);
            tail_n_[b] += kStage;
            return;
        }
        for (uint32_t i = 0; i < kStage; ++i) put(b, st.e[i]);
    }
    // Copies the lines of one staging line or one whole-line entry from src to dst (both 64-byte
    // aligned) past the cache.
    static void stream_lines(void* dst, const void* src) noexcept {
        constexpr size_t kLines = sizeof(T) >= 64 ? sizeof(T) / 64 : 1;
#if defined(__SSE2__)
        const __m128i* s = static_cast<const __m128i*>(src);
        __m128i* d = static_cast<__m128i*>(dst);
        for (size_t k = 0; k < 4 * kLines; ++k) _mm_stream_si128(d + k, _mm_load_si128(s + k));
#else
        std::memcpy(dst, src, 64 * kLines);
#endif
    }
    // A fresh block from the current slab, or from a new one.
    Block* new_block() {
        if (slabs_.empty() || used_ == slabs_.back().blocks) {
            const bool pool_page = slabs_.empty() && reserved_huge_pages_allowed();
            const size_t blocks = pool_page        ? kSlabAlign / sizeof(Block)
                                  : slabs_.empty() ? kFirstSlab
                                                   : std::min(kLastSlab, 2 * slabs_.back().blocks);
            const size_t bytes = pool_page ? kSlabAlign : blocks * sizeof(Block);
            slabs_.reserve(slabs_.size() + 1);
            size_t token = 0;
            void* base = huge_alloc(bytes, kSlabAlign, &token);  // from the reserved pool when allowed
            slabs_.push_back(Slab{base, blocks, token});
            used_ = 0;
            bytes_ += bytes;
        }
        return new (static_cast<char*>(slabs_.back().base) + used_++ * sizeof(Block)) Block;
    }
    // Exchanges everything with other.
    void swap(BlockLists& other) noexcept {
        for (size_t c = 0; c < kBuckets; ++c) {
            buckets_[c].swap(other.buckets_[c]);
            if constexpr (kStage > 1) std::swap(stage_[c], other.stage_[c]);
            std::swap(stage_n_[c], other.stage_n_[c]);
            std::swap(tail_[c], other.tail_[c]);
            std::swap(tail_n_[c], other.tail_n_[c]);
        }
        slabs_.swap(other.slabs_);
        std::swap(used_, other.used_);
        std::swap(entries_, other.entries_);
        std::swap(bytes_, other.bytes_);
    }

    Stage stage_[kStage == 1 ? 1 : kBuckets];  // unused when entries go out one by one
    uint8_t stage_n_[kBuckets] = {};           // entries waiting in each staging line
    std::vector<Block*> buckets_[kBuckets];
    Block* tail_[kBuckets] = {};      // each bucket's block being filled
    uint32_t tail_n_[kBuckets] = {};  // and its entries (its count field is written when it is left)
    std::vector<Slab> slabs_;
    size_t used_ = 0;  // blocks handed out from slabs_.back()
    uint64_t entries_ = 0;
    size_t bytes_ = 0;
};

}  // namespace spotsigs
