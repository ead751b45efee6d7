// repeated_id: the smallest id that occurs twice, whatever order the ids were read in.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "core/join/repeated_id.hpp"

using namespace spotsigs;

namespace {

// A collection holding one small document per id, in the given order.
Collection collection_of(const std::vector<int64_t>& ids) {
    Collection c;
    Multiset m = Multiset::from_pairs({{42, 1}});
    for (int64_t id : ids) c.add(id, m.view());
    return c;
}

// The repeated id of a collection of these ids; the overload over the ids alone (every row a
// join read, kept or not) must give the same.
std::optional<int64_t> repeat_in(const std::vector<int64_t>& ids) {
    std::optional<int64_t> of_docs = repeated_id(collection_of(ids));
    EXPECT_EQ(repeated_id(ids), of_docs);
    return of_docs;
}

// 1..n in ascending order.
std::vector<int64_t> ascending(int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), int64_t(1));
    return v;
}

// v read from position k on, then from the start (a rotated sequential scan).
std::vector<int64_t> rotated(std::vector<int64_t> v, size_t k) {
    std::rotate(v.begin(), v.begin() + static_cast<long>(k), v.end());
    return v;
}

}  // namespace

TEST(RepeatedId, NoneInEmptyOrSingle) {
    EXPECT_EQ(repeat_in({}), std::nullopt);
    EXPECT_EQ(repeat_in({7}), std::nullopt);
}

TEST(RepeatedId, Ascending) {
    EXPECT_EQ(repeat_in(ascending(1000)), std::nullopt);
    std::vector<int64_t> v = ascending(1000);
    v.insert(v.begin() + 500, 500);  // ..., 499, 500, 500, 501, ...
    EXPECT_EQ(repeat_in(v), 500);
    EXPECT_EQ(repeat_in({-5, -5}), -5);
}

// Two ascending runs (a rotated scan, B then A): a repeat inside either run or across the two.
TEST(RepeatedId, RotatedRuns) {
    EXPECT_EQ(repeat_in(rotated(ascending(1000), 700)), std::nullopt);
    EXPECT_EQ(repeat_in(rotated(ascending(1000), 1)), std::nullopt);
    EXPECT_EQ(repeat_in(rotated(ascending(1000), 999)), std::nullopt);
    std::vector<int64_t> across = rotated(ascending(1000), 700);  // 701..1000, 1..700
    across.insert(across.end(), 850);                             // ..., 699, 700, 850: still two runs, 850 in both
    EXPECT_EQ(repeat_in(across), 850);
    std::vector<int64_t> inside = rotated(ascending(1000), 700);
    inside.insert(inside.begin() + 10, 710);  // 701, ..., 710, 710, ...: repeat in the first run
    EXPECT_EQ(repeat_in(inside), 710);
    std::vector<int64_t> first = rotated(ascending(1000), 700);
    first.insert(first.begin() + 300, 1000);  // 701..1000, 1000, 1..700: repeat at the first run's end
    EXPECT_EQ(repeat_in(first), 1000);
    std::vector<int64_t> both = {5, 6, 9, 1, 2, 5, 6};  // 5 and 6 in both runs: the smaller reported
    EXPECT_EQ(repeat_in(both), 5);
}

// Any other order: sorted first; the smallest repeated id is reported.
TEST(RepeatedId, ShuffledOrDescending) {
    std::vector<int64_t> v = ascending(5000);
    std::mt19937_64 rng(11);
    std::shuffle(v.begin(), v.end(), rng);
    EXPECT_EQ(repeat_in(v), std::nullopt);
    v.push_back(4321);
    v.push_back(77);
    v.push_back(77);
    std::shuffle(v.begin(), v.end(), rng);
    EXPECT_EQ(repeat_in(v), 77);
    std::vector<int64_t> down = {9, 8, 7, 3, 3, 1};
    EXPECT_EQ(repeat_in(down), 3);
}

// Agrees with a set-based reference on many random inputs of the three shapes.
TEST(RepeatedId, AgreesWithReference) {
    std::mt19937_64 rng(5);
    for (int round = 0; round < 300; ++round) {
        const int64_t n = 1 + static_cast<int64_t>(rng() % 200);
        std::vector<int64_t> v;
        for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<int64_t>(rng() % 400) - 200);
        const int shape = round % 3;
        if (shape != 2) std::sort(v.begin(), v.end());
        if (shape == 1) v = rotated(v, static_cast<size_t>(rng() % v.size()));
        std::vector<int64_t> s = v;
        std::sort(s.begin(), s.end());
        std::optional<int64_t> want;
        auto dup = std::adjacent_find(s.begin(), s.end());
        if (dup != s.end()) want = *dup;
        EXPECT_EQ(repeat_in(v), want) << "round " << round;
    }
}

// Ids far apart (no bitmap): sorted first; the extremes of int64 do not overflow the span.
TEST(RepeatedId, SparseAndExtremeIds) {
    std::vector<int64_t> v;
    std::mt19937_64 rng(9);
    for (int i = 0; i < 2000; ++i) v.push_back(static_cast<int64_t>(rng()));
    v.push_back(INT64_MIN);
    v.push_back(INT64_MAX);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    std::shuffle(v.begin(), v.end(), rng);
    EXPECT_EQ(repeat_in(v), std::nullopt);
    v.push_back(INT64_MAX);
    std::shuffle(v.begin(), v.end(), rng);
    EXPECT_EQ(repeat_in(v), INT64_MAX);
    v.push_back(INT64_MIN);
    EXPECT_EQ(repeat_in(v), INT64_MIN);
    EXPECT_EQ(repeat_in({INT64_MAX, INT64_MIN, INT64_MAX}), INT64_MAX);
    EXPECT_EQ(repeat_in({3, INT64_MIN, 2, INT64_MIN}), INT64_MIN);
}

// Serial ids in a heap's order (runs of about 40 with rows moved ahead), with and without repeats.
TEST(RepeatedId, NearlyAscendingSerialIds) {
    std::vector<int64_t> v = ascending(100000);
    std::mt19937_64 rng(13);
    for (size_t i = 0; i + 1 < v.size(); i += 40) std::swap(v[i], v[std::min(v.size() - 1, i + 1 + rng() % 120)]);
    EXPECT_EQ(repeat_in(v), std::nullopt);
    v.push_back(99999);
    v.push_back(12);
    EXPECT_EQ(repeat_in(v), 12);
}
