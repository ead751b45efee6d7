// Append-only lists of small trivially copyable values in a fixed number of buckets, each bucket a
// list of 8 KB blocks carved from shared slabs on transparent huge pages: appending touches one
// block per bucket, lists of several writers join by moving blocks, and their memory is faulted
// in one 2 MB page at a time (on 4 KB pages a first touch of 100 MB costs 25,000 page faults,
// expensive on virtual machines) and never copied as vectors are when they grow.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "huge_alloc.hpp"
#include "huge_pages.hpp"

namespace spotsigs {

template <class T, size_t Buckets>
class BlockLists {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "blocks are copied and freed as raw memory");

public:
    static constexpr size_t kBuckets = Buckets;
    static constexpr uint32_t kBlockEntries = static_cast<uint32_t>((8192 - 8) / sizeof(T));  // 8 KB blocks
    struct Block {
        uint32_t count = 0;
        T e[kBlockEntries];
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

    // Appends e to bucket b (b < kBuckets).
    void add(size_t b, const T& e) {
        std::vector<Block*>& list = buckets_[b];
        if (list.empty() || list.back()->count == kBlockEntries) list.push_back(new_block());
        Block& k = *list.back();
        k.e[k.count++] = e;
        ++entries_;
    }
    // Moves every entry of other into this one (other ends empty).
    void absorb(BlockLists& other) {
        for (size_t c = 0; c < kBuckets; ++c) {
            std::vector<Block*>& from = other.buckets_[c];
            std::vector<Block*>& to = buckets_[c];
            to.insert(to.end(), from.begin(), from.end());
            std::vector<Block*>().swap(from);
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
    // The blocks of bucket c.
    const std::vector<Block*>& bucket(size_t c) const noexcept { return buckets_[c]; }
    // Entries in bucket c.
    uint64_t bucket_entries(size_t c) const noexcept {
        uint64_t k = 0;
        for (const Block* b : buckets_[c]) k += b->count;
        return k;
    }
    // Entries held.
    uint64_t entries() const noexcept { return entries_; }
    // Bytes held (the slabs).
    size_t memory_bytes() const noexcept { return bytes_; }
    // Frees everything.
    void clear() noexcept {
        for (auto& b : buckets_) std::vector<Block*>().swap(b);
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
        for (size_t c = 0; c < kBuckets; ++c) buckets_[c].swap(other.buckets_[c]);
        slabs_.swap(other.slabs_);
        std::swap(used_, other.used_);
        std::swap(entries_, other.entries_);
        std::swap(bytes_, other.bytes_);
    }

    std::vector<Block*> buckets_[kBuckets];
    std::vector<Slab> slabs_;
    size_t used_ = 0;  // blocks handed out from slabs_.back()
    uint64_t entries_ = 0;
    size_t bytes_ = 0;
};

}  // namespace spotsigs
