// The threshold rule's message (threshold.hpp).
#include "core/common/threshold.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/common/error.hpp"

namespace spotsigs {

void threshold_message(double tau, char* out, size_t size) noexcept {
    char num[40] = "NaN";
    if (std::isinf(tau)) {
        std::snprintf(num, sizeof num, "%s", tau > 0 ? "Infinity" : "-Infinity");
    } else if (!std::isnan(tau)) {
        // Without a precision, to_chars writes the shortest form that round-trips exactly.
        auto r = std::to_chars(num, num + sizeof num - 1, tau);
        *r.ptr = '\0';
    }
    std::snprintf(out, size, "threshold must be greater than 0 and at most 1, not %s", num);
}

void check_threshold(double tau) {
    if (valid_threshold(tau)) return;
    char msg[kThresholdMessageSize];
    threshold_message(tau, msg, sizeof msg);
    throw Error(ErrorKind::InvalidParameter, msg);
}

}  // namespace spotsigs
