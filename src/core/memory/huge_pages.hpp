// Large arrays on transparent huge pages: a big structure's first touch then costs one page fault
// per 2 MB instead of one per 4 KB (page faults dominated the join's preparation on virtual
// machines, where each one is expensive).
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace spotsigs {

// Asks the kernel to back the whole 2 MB pages inside [p, p + bytes) with huge pages (a hint:
// ignored where transparent huge pages are off; call it before the memory is first written).
inline void advise_huge_pages(const void* p, size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
    constexpr uintptr_t kHuge = uintptr_t(2) << 20;
    if (bytes < 2 * kHuge) return;
    uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
    uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

// What populate_pages() did.
enum class Populate { Done, Interrupted, Unsupported };

// Faults in the pages of [p, p + bytes) as a write would, without changing any page already
// there (so another thread may be writing into them at the same time). Interrupted when a signal
// arrived first (the caller's thread takes PostgreSQL's signals); Unsupported where the kernel
// lacks MADV_POPULATE_WRITE (Linux < 5.14) or refuses the range.
inline Populate populate_pages(void* p, size_t bytes) noexcept {
#ifdef MADV_POPULATE_WRITE
    constexpr uintptr_t kPage = 4096;
    // Whole pages only past the start (the page holding p is in the same mapping; the one
    // holding the end may not be).
    uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
    uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
    if (end <= begin || madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0)
        return Populate::Done;
    return errno == EINTR ? Populate::Interrupted : Populate::Unsupported;
#else
    (void)p;
    (void)bytes;
    return Populate::Unsupported;
#endif
}

// Reserves room for n elements in an empty or small vector and advises huge pages for it, so the
// following resize/assign/push_back touch huge pages.
template <class Vec>
void reserve_huge(Vec& v, size_t n) {
    if (n <= v.capacity()) return;
    v.reserve(n);
    advise_huge_pages(v.data(), v.capacity() * sizeof(typename Vec::value_type));
}

}  // namespace spotsigs
