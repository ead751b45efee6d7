// Length partition boundaries from tau.
#include "partition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "join_bounds.hpp"

namespace spotsigs::join_detail {

uint64_t next_partition_bound(uint64_t p, double tau) noexcept {
    // Estimate p / tau, then walk to the exact first y with fl(p / y) < tau (monotone in y).
    double est = std::floor(static_cast<double>(p) / tau) + 1.0;
    uint64_t y = est <= static_cast<double>(p) + 1.0 ? p + 1 : static_cast<uint64_t>(est);
    while (y > p + 1 && !ratio_reaches(p, y - 1, tau)) --y;
    while (ratio_reaches(p, y, tau)) ++y;
    return y;
}

TauPartitions::TauPartitions(double tau, uint64_t max_length, size_t max_parts) {
    uint64_t p = 1;
    bounds_.push_back(p);
    while (p <= max_length && bounds_.size() < max_parts) {
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
