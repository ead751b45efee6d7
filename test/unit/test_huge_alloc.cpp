// huge_alloc: blocks from the reserved huge pages when allowed and available, from aligned malloc
// otherwise, and joins whose large blocks come from either agree with the reference.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/join/join.hpp"
#include "core/memory/huge_alloc.hpp"

using namespace spotsigs;

namespace {

// Pages of the reserved pool that are free and not promised to a mapping (0 when unknown).
long free_reserved_pages() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    long value = 0, free = 0, reserved = 0;
    while (in >> key >> value) {
        if (key == "HugePages_Free:") free = value;
        if (key == "HugePages_Rsvd:") reserved = value;
        std::getline(in, key);
    }
    return free - reserved;
}

// Restores the default (not allowed) when a test ends.
struct AllowPool {
    explicit AllowPool(bool on) { use_reserved_huge_pages(on); }
    ~AllowPool() { use_reserved_huge_pages(false); }
};

// Writes a pattern over the block and checks it back.
void expect_usable(void* p, size_t bytes, size_t align) {
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
    auto* b = static_cast<unsigned char*>(p);
    for (size_t i = 0; i < bytes; i += 4093) b[i] = static_cast<unsigned char>(i * 7);
    b[bytes - 1] = 0xAB;
    for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(b[i], static_cast<unsigned char>(i * 7));
    EXPECT_EQ(b[bytes - 1], 0xAB);
}

}  // namespace

TEST(HugeAlloc, NotAllowedMeansMalloc) {
    AllowPool pool(false);
    const uint64_t before = reserved_huge_bytes();
    size_t token = 0;
    void* p = huge_alloc(size_t(8) << 20, size_t(2) << 20, &token);
    expect_usable(p, size_t(8) << 20, size_t(2) << 20);
    EXPECT_EQ(reserved_huge_bytes(), before);
    huge_free(p, token);
}

TEST(HugeAlloc, SmallBlocksNeverComeFromThePool) {
    AllowPool pool(true);
    const uint64_t before = reserved_huge_bytes();
    size_t token = 0;
    void* p = huge_alloc(512 << 10, 4096, &token);
    expect_usable(p, 512 << 10, 4096);
    EXPECT_EQ(reserved_huge_bytes(), before);
    huge_free(p, token);
}

// With pages free in the pool, a large block comes from it and goes back when freed; without,
// it falls back to malloc. Either way the block is usable.
TEST(HugeAlloc, LargeBlocksComeFromThePoolWhenItHasRoom) {
    AllowPool pool(true);
    const long free_before = free_reserved_pages();
    const uint64_t before = reserved_huge_bytes();
    const size_t bytes = (size_t(6) << 20) + 100;  // rounds up to 8 MB of huge pages
    size_t token = 0;
    void* p = huge_alloc(bytes, size_t(2) << 20, &token);
    expect_usable(p, bytes, size_t(2) << 20);
    if (free_before >= 4) {
        EXPECT_EQ(reserved_huge_bytes(), before + (size_t(8) << 20));
        EXPECT_EQ(free_reserved_pages(), free_before - 4);
    } else {
        EXPECT_EQ(reserved_huge_bytes(), before);  // no pool here: malloc
    }
    huge_free(p, token);
    EXPECT_EQ(reserved_huge_bytes(), before);
    if (free_before >= 4) {
        EXPECT_EQ(free_reserved_pages(), free_before);
    }
}

// A self-join whose collection chunks and block lists may come from the pool finds exactly the
// pairs of the same join with the pool not allowed.
TEST(HugeAlloc, JoinsAgreeWithAndWithoutThePool) {
    std::mt19937_64 rng(3);
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> docs;
    for (size_t i = 0; i < 30000; ++i) {
        std::vector<std::pair<uint64_t, uint64_t>> d;
        const size_t base = i % 1000;  // 30 near copies of each of 1,000 documents
        for (size_t k = 0; k < 40; ++k) d.emplace_back((base * 64 + k) * 0x9E3779B97F4A7C15ull, 1);
        d.emplace_back(rng(), 1 + rng() % 3);
        docs.push_back(d);
    }
    const long free_before = free_reserved_pages();
    uint64_t held = 0;
    auto run = [&](bool on) {
        AllowPool pool(on);
        Collection c;
        for (size_t i = 0; i < docs.size(); ++i) {
            Multiset m = Multiset::from_pairs(docs[i]);
            c.add(static_cast<int64_t>(i), m.view());
        }
        if (on) held = reserved_huge_bytes();
        JoinOptions opt;
        opt.tau = 0.9;
        opt.threads = 2;
        JoinPairs r = self_join(c, opt);
        std::vector<std::tuple<uint32_t, uint32_t, double>> t;
        for (const JoinPair& p : r) t.emplace_back(p.a, p.b, p.similarity);
        return t;
    };
    const auto with = run(true), without = run(false);
    EXPECT_EQ(with, without);
    EXPECT_GT(without.size(), 200000u);
    // Where the pool has room, the collection's larger chunks came from it.
    if (free_before >= 64) EXPECT_GT(held, 0u);
    else EXPECT_EQ(held, 0u);
    EXPECT_EQ(reserved_huge_bytes(), 0u);  // all given back
}

namespace {

// A fresh private anonymous mapping of `bytes` bytes (never written), or null.
unsigned char* fresh_mapping(size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
}

// Every byte of [p, p + bytes) reads as zero (sampled once per 4 KB and at the end).
bool reads_zero(const unsigned char* p, size_t bytes) {
    for (size_t i = 0; i < bytes; i += 4096)
        if (p[i] != 0) return false;
    return p[bytes - 1] == 0;
}

}  // namespace

// Not allowed: the mapping keeps its own pages and stays usable.
TEST(HugeAlloc, MoveToPoolNotAllowedKeepsTheRange) {
    AllowPool pool(false);
    const size_t bytes = size_t(10) << 20;
    unsigned char* m = fresh_mapping(bytes);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(move_to_reserved_pool(m + 4096, bytes - 4096), PoolMove::Kept);
    EXPECT_TRUE(reads_zero(m, bytes));
    expect_usable(m, bytes, 4096);
    munmap(m, bytes);
}

// A range without a whole 2 MB page inside is never moved.
TEST(HugeAlloc, MoveToPoolNeedsAWholeHugePage) {
    AllowPool pool(true);
    const size_t bytes = size_t(6) << 20;
    unsigned char* m = fresh_mapping(bytes);
    ASSERT_NE(m, nullptr);
    // Align to 2 MB inside the mapping, then offer 2 MB starting one page past that boundary.
    unsigned char* at = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(m) + (size_t(2) << 20) - 1) &
                                                         ~((uintptr_t(2) << 20) - 1));
    const long free_before = free_reserved_pages();
    EXPECT_EQ(move_to_reserved_pool(at + 4096, size_t(2) << 20), PoolMove::Kept);
    EXPECT_EQ(free_reserved_pages(), free_before);
    expect_usable(m, bytes, 4096);
    munmap(m, bytes);
}

// Allowed, with room in the pool: the whole 2 MB pages inside the range come from the pool, read
// as zeros, keep what is written, and go back to the pool when the whole mapping is unmapped;
// the bytes around them are the mapping's own. Without room nothing changes.
TEST(HugeAlloc, MoveToPoolReplacesTheWholeHugePagesInside) {
    AllowPool pool(true);
    const size_t bytes = (size_t(10) << 20) + 12345;
    unsigned char* m = fresh_mapping(bytes);
    ASSERT_NE(m, nullptr);
    const long free_before = free_reserved_pages();
    const uintptr_t lo = reinterpret_cast<uintptr_t>(m) + 4096;
    const uintptr_t begin = (lo + (size_t(2) << 20) - 1) & ~((uintptr_t(2) << 20) - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(m) + bytes) & ~((uintptr_t(2) << 20) - 1);
    const long inside = static_cast<long>((end - begin) >> 21);
    ASSERT_GE(inside, 4);
    const PoolMove moved = move_to_reserved_pool(m + 4096, bytes - 4096);
    if (free_before >= inside) {
        EXPECT_EQ(moved, PoolMove::Moved);
        EXPECT_EQ(free_reserved_pages(), free_before - inside);
    } else {
        EXPECT_EQ(moved, PoolMove::Kept);  // no pool here
    }
    EXPECT_TRUE(reads_zero(m, bytes));
    expect_usable(m, bytes, 4096);
    munmap(m, bytes);
    EXPECT_EQ(free_reserved_pages(), free_before);
}
