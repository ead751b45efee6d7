// The threshold rule: which values pass, and the message that prints a rejected one exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/common/error.hpp"
#include "core/common/threshold.hpp"

using namespace spotsigs;

namespace {

std::string message(double tau) {
    char buf[kThresholdMessageSize];
    threshold_message(tau, buf, sizeof buf);
    return buf;
}

const std::string kRule = "threshold must be greater than 0 and at most 1, not ";

}  // namespace

TEST(Threshold, AcceptsExactlyTheHalfOpenUnitInterval) {
    const double denormal = std::numeric_limits<double>::denorm_min();
    EXPECT_TRUE(valid_threshold(1.0));
    EXPECT_TRUE(valid_threshold(0.5));
    EXPECT_TRUE(valid_threshold(denormal));
    EXPECT_FALSE(valid_threshold(0.0));
    EXPECT_FALSE(valid_threshold(-0.0));
    EXPECT_FALSE(valid_threshold(std::nextafter(1.0, 2.0)));
    EXPECT_FALSE(valid_threshold(-denormal));
    EXPECT_FALSE(valid_threshold(std::nan("")));
    EXPECT_FALSE(valid_threshold(std::numeric_limits<double>::infinity()));
}

TEST(Threshold, MessagePrintsTheShortestExactValue) {
    EXPECT_EQ(message(std::nextafter(1.0, 2.0)), kRule + "1.0000000000000002");
    EXPECT_EQ(message(0.0), kRule + "0");
    EXPECT_EQ(message(-1.0), kRule + "-1");
    EXPECT_EQ(message(std::nan("")), kRule + "NaN");
    EXPECT_EQ(message(-std::numeric_limits<double>::infinity()), kRule + "-Infinity");
    EXPECT_EQ(message(-std::numeric_limits<double>::denorm_min()), kRule + "-5e-324");
    // The longest printed value (17 digits, a sign and a three-digit exponent) fits the buffer
    // size the header promises suffices.
    std::string longest = message(-2.2250738585072014e-308);
    EXPECT_EQ(longest, kRule + "-2.2250738585072014e-308");
    EXPECT_LT(longest.size(), kThresholdMessageSize);
}

TEST(Threshold, CheckThrowsTheInvalidParameterError) {
    EXPECT_NO_THROW(check_threshold(1.0));
    try {
        check_threshold(1.5);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidParameter);
        EXPECT_EQ(std::string(e.what()), kRule + "1.5");
    }
}
