// BlockLists: bucketed append-only lists in slab-carved blocks (the join's prefix entries and
// candidate pairs).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/memory/block_lists.hpp"

using spotsigs::BlockLists;

namespace {

using Lists = BlockLists<uint64_t, 4>;

// The values of bucket b in the order the blocks hold them.
std::vector<uint64_t> values_of(const Lists& l, size_t b) {
    std::vector<uint64_t> out;
    for (const Lists::Block* blk : l.bucket(b))
        for (uint32_t i = 0; i < blk->count; ++i) out.push_back(blk->e[i]);
    return out;
}

}  // namespace

TEST(BlockLists, EachBucketKeepsItsValuesInOrderAcrossBlocksAndSlabs) {
    static_assert(sizeof(Lists::Block) <= 8192, "8 KB blocks");
    EXPECT_EQ(Lists::kBlockEntries, 1016u);  // after a 64-byte header line
    Lists l;
    std::vector<uint64_t> want[4];
    // Buckets written interleaved, bucket 3 never: 300,000 values need several slabs of blocks.
    for (uint64_t i = 0; i < 300000; ++i) {
        const size_t b = i % 7 == 0 ? 0 : (i % 7 < 4 ? 1 : 2);
        l.add(b, i * 2654435761u);
        want[b].push_back(i * 2654435761u);
    }
    EXPECT_EQ(l.entries(), 300000u);
    l.seal();
    for (size_t b = 0; b < 4; ++b) {
        EXPECT_EQ(l.bucket_entries(b), want[b].size());
        EXPECT_EQ(values_of(l, b), want[b]);
    }
    EXPECT_GE(l.memory_bytes(), 300000u * sizeof(uint64_t));
    l.clear();
    EXPECT_EQ(l.entries(), 0u);
    EXPECT_EQ(l.memory_bytes(), 0u);
    EXPECT_TRUE(l.bucket(1).empty());
}

TEST(BlockLists, AbsorbedListsKeepEveryValueOnce) {
    // Two writers, as two worker threads: their lists joined, then the first written on (from
    // its own slab: b's holds more blocks, which a carving at a's count in b's slab overwrites).
    Lists a, b;
    for (uint64_t i = 0; i < 5000; ++i) a.add(i % 4, i);
    for (uint64_t i = 5000; i < 17000; ++i) b.add(i % 4, i);
    const size_t bytes = a.memory_bytes() + b.memory_bytes();
    a.absorb(b);
    EXPECT_EQ(b.entries(), 0u);
    EXPECT_EQ(b.memory_bytes(), 0u);
    for (uint64_t i = 17000; i < 20000; ++i) a.add(i % 4, i);
    EXPECT_EQ(a.entries(), 20000u);
    EXPECT_GE(a.memory_bytes(), bytes);
    a.seal();
    std::vector<int> seen(20000, 0);
    for (size_t k = 0; k < 4; ++k)
        for (uint64_t v : values_of(a, k)) {
            ASSERT_LT(v, 20000u);
            EXPECT_EQ(v % 4, k);
            ++seen[v];
        }
    for (uint64_t v = 0; v < 20000; ++v) EXPECT_EQ(seen[v], 1) << v;
}

TEST(BlockLists, StagedLinesKeepTheOrderAcrossSealsAndAbsorbs) {
    // Entries go out a line (8 values) at a time; seal() writes the partial lines entry by
    // entry, after which a bucket's tail is no longer line-aligned. Seals after 1 to 9 values,
    // absorbs of lists with partial lines, and adds after each: every bucket keeps its values in
    // the order they were added.
    std::vector<uint64_t> want[4];
    Lists a;
    uint64_t v = 0;
    for (int round = 0; round < 400; ++round) {
        const size_t b = static_cast<size_t>(round) % 3;
        const int n = 1 + round % 9 + (round % 50 == 0 ? 3000 : 0);  // some past a block's end
        for (int k = 0; k < n; ++k) {
            a.add(b, v);
            want[b].push_back(v++);
        }
        if (round % 4 == 0) a.seal();
        if (round % 37 == 0) {
            Lists other;  // a second writer's entries come after a's so far
            for (int k = 0; k < 13 + round % 8; ++k) {
                other.add(3 - b, v);
                want[3 - b].push_back(v++);
            }
            a.absorb(other);
            EXPECT_EQ(other.entries(), 0u);
        }
    }
    EXPECT_EQ(a.entries(), v);
    a.seal();
    for (size_t b = 0; b < 4; ++b) {
        EXPECT_EQ(a.bucket_entries(b), want[b].size());
        EXPECT_EQ(values_of(a, b), want[b]) << "bucket " << b;
    }
}
