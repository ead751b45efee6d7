// Unit tests of the length partitions from tau (paper section 4.2, conditions (A) and (B)).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/join/partition.hpp"

using spotsigs::join_detail::next_partition_bound;
using spotsigs::join_detail::TauPartitions;

namespace {

// The exact length filter the partitions must respect: fl(x / y) >= tau for x <= y.
bool length_ok(uint64_t x, uint64_t y, double tau) {
    return static_cast<double>(x) / static_cast<double>(y) >= tau;
}

const double kTaus[] = {0.05, 0.1, 1.0 / 3.0, 0.44, 0.5, 0.6, 0.7, 11.0 / 15.0, 0.8, 0.9, 0.95, 0.99, 1.0};

}  // namespace

TEST(TauPartitions, BoundsAreMinimal) {
    for (double tau : kTaus) {
        TauPartitions parts(tau, 100000);
        ASSERT_EQ(parts.lower(0), 1u);
        for (size_t k = 0; k + 1 < parts.count(); ++k) {
            uint64_t p = parts.lower(k), q = parts.lower(k + 1);
            ASSERT_LT(p, q);
            // q fails against p, and every length between them passes.
            EXPECT_FALSE(length_ok(p, q, tau)) << tau << " " << p << " " << q;
            if (q - 1 > p) {
                EXPECT_TRUE(length_ok(p, q - 1, tau)) << tau << " " << p;
            }
        }
        EXPECT_GT(parts.lower(parts.count() - 1), 100000u);
    }
}

TEST(TauPartitions, ConditionsAandB) {
    const uint64_t kMax = 1500;
    for (double tau : kTaus) {
        TauPartitions parts(tau, kMax);
        for (uint64_t x = 1; x <= kMax; ++x) {
            size_t kx = parts.partition_of(x);
            ASSERT_LE(parts.lower(kx), x);
            ASSERT_GT(parts.lower(kx + 1), x);
            for (uint64_t y = x; y <= kMax; ++y) {
                size_t ky = parts.partition_of(y);
                // (A) similar lengths are in the same or the next partition.
                if (length_ok(x, y, tau)) {
                    ASSERT_LE(ky, kx + 1) << "tau " << tau << " x " << x << " y " << y;
                }
                // (B) lengths in one partition are always similar enough.
                if (ky == kx) {
                    ASSERT_TRUE(length_ok(x, y, tau)) << "tau " << tau << " x " << x << " y " << y;
                }
            }
        }
    }
}

TEST(TauPartitions, PaperCounts) {
    // At tau = 1 every length is its own partition; the count includes the open last one.
    TauPartitions one(1.0, 999);
    EXPECT_EQ(one.count(), 1000u);  // bounds 1..1000
    EXPECT_EQ(one.partition_of(37), 36u);
    EXPECT_EQ(next_partition_bound(10, 0.9), 12u);  // 10/11 >= 0.9 > 10/12
}

TEST(TauPartitions, CappedCountKeepsAnOpenLastPartition) {
    TauPartitions parts(1.0, 2000000000ULL, 1000);
    EXPECT_EQ(parts.count(), 1000u);
    EXPECT_EQ(parts.partition_of(2000000000ULL), 999u);
    EXPECT_EQ(parts.lower(1000), UINT64_MAX);
    EXPECT_EQ(parts.lower(1001), UINT64_MAX);
}

TEST(TauPartitions, AnyThresholdGivesTheMinimalBoundOrTheOpenEnd) {
    // Thresholds down to the denormals, where p / tau is far beyond 2^64 (or infinite), and one
    // ulp either side of a ratio p / y: the bound is the first y > p that fails against p, or
    // UINT64_MAX when no y up to UINT64_MAX fails.
    std::vector<double> taus = {
        std::numeric_limits<double>::denorm_min(), 1e-300, 1e-30, 5e-20, 1e-20, 5.4e-20, 6e-20, 1e-19, 1e-10, 1.0};
    for (double r : {10.0 / 11.0, 0.9, 1.0 / 3.0, 1e-19, 3.0 / 1e19}) {
        taus.push_back(std::nextafter(r, 0.0));
        taus.push_back(std::nextafter(r, 1.0));
    }
    const uint64_t kTop = std::numeric_limits<uint64_t>::max();
    for (double tau : taus)
        for (uint64_t p :
             {uint64_t(1), uint64_t(2), uint64_t(10), uint64_t(1) << 40, uint64_t(1) << 60, kTop - 2, kTop - 1, kTop}) {
            uint64_t y = next_partition_bound(p, tau);
            ASSERT_GT(y, p == kTop ? p - 1 : p) << tau << " " << p;
            if (y == kTop && length_ok(p, kTop, tau)) continue;  // open end: nothing fails
            EXPECT_FALSE(length_ok(p, y, tau)) << tau << " " << p;
            if (y - 1 > p) {
                EXPECT_TRUE(length_ok(p, y - 1, tau)) << tau << " " << p;
            }
        }
    // Saturation: at tau = 1e-20 nothing up to 2^64 - 1 fails against 1; the next boundary is the
    // open end, and the partitions end there.
    EXPECT_EQ(next_partition_bound(1, 1e-20), kTop);
    TauPartitions tiny(1e-20, 1000);
    EXPECT_EQ(tiny.count(), 2u);
    EXPECT_EQ(tiny.partition_of(999), 0u);
    TauPartitions denormal(std::numeric_limits<double>::denorm_min(), kTop);
    EXPECT_EQ(denormal.count(), 2u);
}
