// Length buckets of the 'locked' mode (length_buckets.hpp).
#include "core/common/length_buckets.hpp"

#include <cmath>

#include "core/signature/multiset.hpp"

namespace spotsigs {

int length_bucket(uint64_t length) {
    if (length < 16) return int(length);
    int msb = 63 - __builtin_clzll(length);
    return 8 * (msb - 2) + int((length >> (msb - 3)) & 7);
}

BucketRange length_bucket_range(uint64_t length, double tau) {
    // Both bounds are clamped in double, where every value (and infinity) compares exactly with
    // 1 and kMaxLength, and converted only once inside [1, kMaxLength]: converting a double out
    // of an integer type's range is undefined (it gave an empty range for tau below 2e-19).
    const double max_length = double(kMaxLength);
    double lo_d = std::floor(tau * double(length)) - 1.0;
    double hi_d = std::ceil(double(length) / tau) + 1.0;
    uint64_t lo = lo_d < 1.0 ? 1 : lo_d > max_length ? kMaxLength : uint64_t(lo_d);
    uint64_t hi = hi_d > max_length ? kMaxLength : hi_d < 1.0 ? 1 : uint64_t(hi_d);
    return BucketRange{length_bucket(lo), length_bucket(length), length_bucket(hi)};
}

}  // namespace spotsigs
