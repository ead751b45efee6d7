// KeyFilter: never a false negative, few false positives.
#include <gtest/gtest.h>

#include <random>
#include <unordered_set>

#include "core/index/key_filter.hpp"

using spotsigs::KeyFilter;

TEST(KeyFilter, EveryAddedKeyIsReportedPresent) {
    for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(100), size_t(50000)}) {
        std::mt19937_64 rng(n + 7);
        KeyFilter f(n);
        std::vector<uint64_t> keys;
        for (size_t k = 0; k < n; ++k) keys.push_back(rng());
        // Adversarial keys too: small integers and values differing only in high or low bits.
        for (uint64_t k = 0; k < 64 && n > 0; ++k) keys.push_back(k), keys.push_back(uint64_t(1) << k);
        for (uint64_t k : keys) f.add(k);
        for (uint64_t k : keys) ASSERT_TRUE(f.may_contain(k)) << "n=" << n << " key=" << k;
    }
}

TEST(KeyFilter, AbsentKeysAreMostlyReportedAbsent) {
    const size_t n = 100000;
    std::mt19937_64 rng(42);
    KeyFilter f(n);
    std::unordered_set<uint64_t> in;
    for (size_t k = 0; k < n; ++k) {
        uint64_t x = rng();
        in.insert(x);
        f.add(x);
    }
    size_t tested = 0, positives = 0;
    while (tested < 200000) {
        uint64_t x = rng();
        if (in.count(x)) continue;
        ++tested;
        positives += f.may_contain(x);
    }
    // 16 bits per key and three probes in one word: about 1-2%; 4% would mean a broken layout.
    EXPECT_LT(double(positives) / double(tested), 0.04);
    EXPECT_GT(positives, 0u);  // a filter that answers "absent" for everything is caught above
    EXPECT_GE(f.bytes() * 8, n * 16);
}

TEST(KeyFilter, EmptyFilterReportsEverythingAbsent) {
    KeyFilter f(0);
    for (uint64_t k = 0; k < 1000; ++k) EXPECT_FALSE(f.may_contain(k * 0x9e3779b97f4a7c15ULL));
}
