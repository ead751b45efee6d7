// The 'locked' mode's length buckets: the range a row locks covers every length a match can
// have, for every threshold in (0, 1], the smallest ones included.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/common/length_buckets.hpp"
#include "core/signature/multiset.hpp"

using namespace spotsigs;

namespace {

// Every length b in [1, kMaxLength] with tau*L <= b <= L/tau (the lengths a match of a row of
// length L can have) has its bucket in the range; checked at the interval's two ends and, since
// buckets are monotone, so for everything between.
void expect_covers(uint64_t length, double tau) {
    BucketRange r = length_bucket_range(length, tau);
    double lo = std::ceil(tau * double(length));
    double hi = std::floor(double(length) / tau);
    uint64_t lo_len = lo < 1.0 ? 1 : uint64_t(lo);
    uint64_t hi_len = hi > double(kMaxLength) ? kMaxLength : uint64_t(hi);
    EXPECT_LE(r.first, length_bucket(lo_len)) << "L=" << length << " tau=" << tau;
    EXPECT_GE(r.last, length_bucket(hi_len)) << "L=" << length << " tau=" << tau;
    EXPECT_EQ(r.own, length_bucket(length));
    EXPECT_LE(r.first, r.own);
    EXPECT_LE(r.own, r.last);
    EXPECT_GE(r.first, 1);
    EXPECT_LE(r.last, length_bucket(kMaxLength));
}

}  // namespace

TEST(LengthBuckets, BucketIsMonotoneAndBounded) {
    EXPECT_EQ(length_bucket(1), 1);
    EXPECT_EQ(length_bucket(15), 15);
    EXPECT_EQ(length_bucket(16), 16);
    EXPECT_EQ(length_bucket(kMaxLength), 231);
    int prev = 0;
    for (uint64_t l = 1; l < 100000; ++l) {
        int b = length_bucket(l);
        EXPECT_TRUE(b == prev || b == prev + 1) << l;
        prev = b;
    }
}

TEST(LengthBuckets, RangeAtUsualThresholds) {
    BucketRange r = length_bucket_range(5, 0.5);  // lengths 2-10, widened to 1-11
    EXPECT_EQ(r.first, 1);
    EXPECT_EQ(r.own, 5);
    EXPECT_EQ(r.last, 11);
    r = length_bucket_range(5, 1.0);  // length 5 only, widened to 4-6
    EXPECT_EQ(r.first, 4);
    EXPECT_EQ(r.last, 6);
    r = length_bucket_range(kMaxLength, 1.0);  // no length above kMaxLength
    EXPECT_EQ(r.last, 231);
}

// L/tau beyond 2^64 (tau below about 2.7e-19 for L = 5) or infinite (1e-300, the smallest
// denormal) used to be converted to an integer out of range, which left the range empty: no lock
// at all. Every length is now a possible match, bucket 1 to the last.
TEST(LengthBuckets, TinyThresholdsCoverEveryLength) {
    const double taus[] = {
        3e-19, 2e-19, 1e-300, std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(), 1e-10};
    for (double tau : taus) {
        for (uint64_t l : {uint64_t(1), uint64_t(5), uint64_t(1000), kMaxLength}) {
            BucketRange r = length_bucket_range(l, tau);
            EXPECT_EQ(r.first, 1) << "L=" << l << " tau=" << tau;
            EXPECT_EQ(r.last, 231) << "L=" << l << " tau=" << tau;
        }
    }
}

TEST(LengthBuckets, RangeCoversEveryMatchLength) {
    const double taus[] = {1.0, 0.999, 0.9, 0.8, 0.5, 0.3, 0.1, 1e-3, 1e-9, 2.7e-19, 1e-300};
    for (double tau : taus) {
        for (uint64_t l = 1; l < 5000; l = l * 3 / 2 + 1) expect_covers(l, tau);
        expect_covers(kMaxLength, tau);
        expect_covers(kMaxLength - 1, tau);
    }
}
