// The in-memory segment sorts order exactly as the index's tuplesort keys do.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "core/index/posting_sort.hpp"

using namespace spotsigs;

// The keys of the tuplesort path: (hash ^ sign as a signed integer, part << 32 | (2^31-1 - length),
// id) ascending, which is the order segments are written in.
static std::tuple<int64_t, int64_t, int64_t> tuplesort_key(const PostingRecord& p) {
    const uint64_t sign = 0x8000000000000000ULL;
    return {static_cast<int64_t>(p.hash ^ sign),
            (static_cast<int64_t>(p.part) << 32) | static_cast<int64_t>(0x7fffffff - p.length),
            static_cast<int64_t>(p.id)};
}

TEST(PostingSort, PostingsInTheTuplesortOrder) {
    std::mt19937_64 rng(3);
    std::vector<PostingRecord> v;
    // Few distinct hashes (with the top bit set and clear), partitions and lengths, so that every
    // key level decides some comparisons; (hash, id) pairs unique as in a segment.
    const uint64_t hashes[] = {0, 1, 0x7fffffffffffffffULL, 0x8000000000000000ULL, 0xffffffffffffffffULL, 12345};
    for (uint64_t h : hashes)
        for (uint64_t id = 0; id < 300; ++id) {
            if (rng() % 3 == 0) continue;
            uint32_t len = 1 + static_cast<uint32_t>(rng() % 40);
            v.push_back(
                PostingRecord{h, (id * 2654435761ULL) % 100000, len / 8, len, 1 + static_cast<uint32_t>(rng() % 3)});
        }
    std::shuffle(v.begin(), v.end(), rng);
    std::vector<PostingRecord> ref = v;
    std::sort(ref.begin(), ref.end(),
              [](const PostingRecord& a, const PostingRecord& b) { return tuplesort_key(a) < tuplesort_key(b); });
    sort_posting_records(v.data(), v.size());
    ASSERT_EQ(v.size(), ref.size());
    for (size_t k = 0; k < v.size(); ++k) {
        EXPECT_EQ(v[k].hash, ref[k].hash) << k;
        EXPECT_EQ(v[k].id, ref[k].id) << k;
        EXPECT_EQ(v[k].length, ref[k].length) << k;
        EXPECT_EQ(v[k].part, ref[k].part) << k;
        EXPECT_EQ(v[k].freq, ref[k].freq) << k;
    }
}

TEST(PostingSort, DocumentsByLengthDescendingThenId) {
    std::vector<DocRecord> v = {{5, 3, 2}, {2, 7, 7}, {9, 0, 0}, {1, 3, 3}, {4, 7, 1}, {3, 0, 0}};
    sort_doc_records(v.data(), v.size());
    std::vector<uint64_t> ids;
    for (const DocRecord& d : v) ids.push_back(d.id);
    EXPECT_EQ(ids, (std::vector<uint64_t>{2, 4, 1, 5, 3, 9}));
    sort_doc_records(nullptr, 0);  // empty input
}
