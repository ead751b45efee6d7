// Length partition boundaries from tau.
#include "core/join/partition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/join/join_bounds.hpp"

namespace spotsigs::join_detail {

namespace {

constexpr uint64_t kTop = std::numeric_limits<uint64_t>::max();

// 2^64 as a double: every double below it converts to uint64_t without overflow.
constexpr double kTwoTo64 = 18446744073709551616.0;

}  // namespace

uint64_t next_partition_bound(uint64_t p, double tau) noexcept {
    // fails(y) := fl(p / y) < tau. It is monotone in y: y <= y' gives fl(y) <= fl(y') (Lemma 0 of
    // join_bounds.hpp for the conversion), so p / fl(y) >= p / fl(y') and, rounding again,
    // fl(p / y) >= fl(p / y'). So on (p, kTop] fails is false up to some point and true after it,
    // and the answer is the first true point, found below by a bracketed search.
    auto fails = [&](uint64_t y) { return !ratio_reaches(p, y, tau); };
    // No y > p fails (tau at or below p / 2^64, or p itself at the top): the partition is open.
    if (p >= kTop - 1 || !fails(kTop)) return kTop;
    // Invariant: every y in (p, lo] passes (lo = p: vacuously), and hi fails; answer in (lo, hi].
    uint64_t lo = p, hi = kTop;
    // A guess near p / tau. The double may be far above 2^64 (tau down to the denormals) or
    // infinite; both are clamped before the conversion, which is defined only below 2^64.
    double est = std::floor(static_cast<double>(p) / tau) + 1.0;
    uint64_t g = !(est < kTwoTo64) ? kTop - 1 : static_cast<uint64_t>(est);
    g = std::clamp(g, p + 1, kTop - 1);
    // Gallop away from the guess with doubling steps until the answer is bracketed: each probe
    // either narrows the bracket to the guess side or doubles the step, so this takes at most 64
    // probes; the guess is usually within a unit or two, and then it takes one or two.
    if (fails(g)) {
        hi = g;
        for (uint64_t step = 1; hi - lo > 1; step *= 2) {
            uint64_t c = hi - lo - 1 > step ? hi - step : lo + 1;
            if (fails(c)) {
                hi = c;
            } else {
                lo = c;
                break;
            }
        }
    } else {
        lo = g;
        for (uint64_t step = 1; hi - lo > 1; step *= 2) {
            uint64_t c = hi - lo - 1 > step ? lo + step : hi - 1;
            if (fails(c)) {
                hi = c;
                break;
            }
            lo = c;
        }
    }
    // Bisect (lo, hi]: at most 64 more probes, as the bracket halves each time.
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (fails(mid)) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return hi;
}

TauPartitions::TauPartitions(double tau, uint64_t max_length, size_t max_parts) {
    uint64_t p = 1;
    bounds_.push_back(p);
    // Each boundary is above the last, so this ends after at most max_parts boundaries or once
    // the open end kTop (no length fails against p) is reached.
    while (p <= max_length && p < kTop && bounds_.size() < max_parts) {
        p = next_partition_bound(p, tau);
        bounds_.push_back(p);
    }
}

size_t TauPartitions::partition_of(uint64_t len) const noexcept {
    // The last boundary <= len.
    auto it = std::upper_bound(bounds_.begin(), bounds_.end(), len);
    return it == bounds_.begin() ? 0 : static_cast<size_t>(it - bounds_.begin()) - 1;
}

uint64_t TauPartitions::lower(size_t k) const noexcept {
    return k < bounds_.size() ? bounds_[k] : std::numeric_limits<uint64_t>::max();
}

}  // namespace spotsigs::join_detail
