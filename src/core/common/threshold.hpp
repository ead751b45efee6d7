// The similarity threshold tau that every search, join and trigger takes: the one rule and its
// one message, so that all entry points accept the same values and say the same thing.
#pragma once

#include <cstddef>

namespace spotsigs {

// True when tau is in (0, 1]; false for NaN, which fails both comparisons.
inline bool valid_threshold(double tau) {
    return tau > 0.0 && tau <= 1.0;
}

// Writes "threshold must be greater than 0 and at most 1, not <tau>" into out (truncated to
// size, always terminated; kThresholdMessageSize always suffices), tau written with the shortest
// digits that read back as the same double (as PostgreSQL prints a float8), so that a value one
// ulp above 1 does not print as 1. No allocation, no exception: C-style callers use it too.
constexpr size_t kThresholdMessageSize = 96;
void threshold_message(double tau, char* out, size_t size) noexcept;

// Throws Error(InvalidParameter) with threshold_message(tau) unless valid_threshold(tau).
void check_threshold(double tau);

}  // namespace spotsigs
