// Large blocks from the system's reserved huge pages (hugetlb: vm.nr_hugepages) when allowed.
//
// Transparent huge pages, like any fresh anonymous memory, are handed back to the host of a
// virtual machine soon after they are freed, and each first touch then costs the host's page
// fault as well, on every call (test/bench/first_touch.c measures it). Pages of the reserved pool
// stay with the guest when freed, so after their first use a block from the pool costs only the
// zeroing, however long after the previous block was freed. Blocks of at least 2 MB are taken from
// the pool when use_reserved_huge_pages(true) was called and the pool has room; otherwise, and for
// smaller blocks, they come from aligned malloc.
//
// A private hugetlb mapping reserves its pages when it is made (no MAP_NORESERVE), so a pool
// that runs out fails the mmap, which falls back, rather than a later page fault.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "core/memory/huge_pages.hpp"

namespace spotsigs {

namespace huge_alloc_detail {
inline std::atomic<bool>& allowed() {
    static std::atomic<bool> a{false};
    return a;
}
inline std::atomic<uint64_t>& pool_bytes() {
    static std::atomic<uint64_t> b{0};
    return b;
}
constexpr size_t kHuge = size_t(2) << 20;
// A block from the pool carries this tag in its size word (blocks from malloc do not).
constexpr size_t kFromPool = size_t(1) << 63;
}  // namespace huge_alloc_detail

// Allows or forbids blocks from the reserved pool (the PostgreSQL layer sets it from
// spotsigs.join_huge_pages before each join; off by default).
inline void use_reserved_huge_pages(bool on) noexcept {
    huge_alloc_detail::allowed().store(on);
}

// Whether blocks may come from the reserved pool (use_reserved_huge_pages).
inline bool reserved_huge_pages_allowed() noexcept {
    return huge_alloc_detail::allowed().load(std::memory_order_relaxed);
}

// Bytes currently held from the pool by this process (for tests).
inline uint64_t reserved_huge_bytes() noexcept {
    return huge_alloc_detail::pool_bytes().load();
}

// A block of `bytes` bytes aligned to `align` (a power of two, at most 2 MB), advised for
// transparent huge pages when it does not come from the pool. *token must be passed back to
// huge_free. Throws std::bad_alloc when no memory is left.
inline void* huge_alloc(size_t bytes, size_t align, size_t* token) {
    using namespace huge_alloc_detail;
#ifdef MAP_HUGETLB
    if (bytes >= kHuge && allowed().load(std::memory_order_relaxed)) {
        const size_t len = (bytes + kHuge - 1) & ~(kHuge - 1);
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (p != MAP_FAILED) {
            pool_bytes().fetch_add(len);
            *token = len | kFromPool;
            return p;
        }
    }
#endif
    void* p = nullptr;
    if (posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, bytes) != 0) throw std::bad_alloc();
    advise_huge_pages(p, bytes);
    *token = bytes;
    return p;
}

// Frees a block from huge_alloc (p may be null).
inline void huge_free(void* p, size_t token) noexcept {
    using namespace huge_alloc_detail;
    if (p == nullptr) return;
    if (token & kFromPool) {
        const size_t len = token & ~kFromPool;
        munmap(p, len);
        pool_bytes().fetch_sub(len);
        return;
    }
    std::free(p);
}

// What move_to_reserved_pool() did.
enum class PoolMove { Moved, Kept, Lost };

// Puts pages of the reserved pool under the whole 2 MB pages inside [p, p + bytes), for memory
// that someone else allocated and will free (a malloc'd block of a PostgreSQL memory context).
// The range must lie in one private anonymous mapping that nobody has written yet: its new pages
// read as zeros, as the old ones would have. Moved: those pages now come from the pool and are
// unmapped with the rest of the mapping (munmap accepts a range spanning both kinds as long as
// each huge page mapping is covered whole). Kept: not allowed, too small, or the pool had no room,
// and nothing changed. Lost: the range could be neither moved nor mapped again (the kernel ran out
// of mappings); it is unmapped, and the caller must not touch it but may still free the block.
inline PoolMove move_to_reserved_pool(void* p, size_t bytes) noexcept {
    using namespace huge_alloc_detail;
#ifdef MAP_HUGETLB
    if (!allowed().load(std::memory_order_relaxed)) return PoolMove::Kept;
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
    if (end <= begin) return PoolMove::Kept;
    void* at = reinterpret_cast<void*>(begin);
    const size_t len = end - begin;
    // A private hugetlb mapping takes its pages from the pool when it is made, so a pool without
    // room fails here. On that failure a kernel may have unmapped the range already: mapping
    // fresh anonymous pages there again restores what was (untouched pages read as zeros).
    if (mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_HUGETLB, -1, 0) !=
        MAP_FAILED)
        return PoolMove::Moved;
    if (mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
        return PoolMove::Kept;
    munmap(at, len);
    return PoolMove::Lost;
#else
    (void)p;
    (void)bytes;
    return PoolMove::Kept;
#endif
}

// A std allocator over huge_alloc. Each block starts with a 64-byte header holding huge_alloc's
// token, so a block from the pool takes one more 2 MB page when the vector's bytes are an exact
// multiple of 2 MB. A vector that grows takes a new block each time and frees the old one, as
// with std::allocator; pages of the pool are cheap to take again, unlike fresh ones.
template <class T>
struct HugeAllocator {
    using value_type = T;
    HugeAllocator() noexcept = default;
    template <class U>
    HugeAllocator(const HugeAllocator<U>&) noexcept {}
    T* allocate(size_t n) {
        // The token (pool or malloc) precedes the block in a 64-byte header.
        constexpr size_t kHeader = 64;
        size_t token = 0;
        char* base = static_cast<char*>(huge_alloc(n * sizeof(T) + kHeader, 64, &token));
        *reinterpret_cast<size_t*>(base) = token;
        return reinterpret_cast<T*>(base + kHeader);
    }
    void deallocate(T* p, size_t) noexcept {
        char* base = reinterpret_cast<char*>(p) - 64;
        huge_free(base, *reinterpret_cast<size_t*>(base));
    }
    template <class U>
    bool operator==(const HugeAllocator<U>&) const noexcept {
        return true;
    }
    template <class U>
    bool operator!=(const HugeAllocator<U>&) const noexcept {
        return false;
    }
};

// A vector whose blocks of 2 MB or more come from the reserved pool when allowed: for the
// join's large per-call arrays, whose first touch otherwise costs a fresh page fault per 4 KB.
template <class T>
using HugeVector = std::vector<T, HugeAllocator<T>>;

// HugeAllocator for a buffer that is written before it is read: a vector's resize() leaves new
// elements default-initialized (for bytes: unwritten) instead of zeroing them, so a buffer sized
// for the largest input touches only the pages its input fills. A fresh mapping's untouched pages
// cost nothing; zeroing a 2 MB buffer for a table of a few rows cost more than reading them.
template <class T>
struct UninitHugeAllocator : HugeAllocator<T> {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = UninitHugeAllocator<U>;
    };
    UninitHugeAllocator() noexcept = default;
    template <class U>
    UninitHugeAllocator(const UninitHugeAllocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

// A byte buffer over UninitHugeAllocator.
using HugeBytes = std::vector<unsigned char, UninitHugeAllocator<unsigned char>>;

}  // namespace spotsigs
