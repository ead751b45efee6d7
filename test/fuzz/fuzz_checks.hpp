// Property checks shared by the libFuzzer targets: a failed one aborts the run with a report.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "core/signature/multiset.hpp"

namespace spotsigs::fuzz {

// Stops the run with a crash report when a property does not hold.
inline void require(bool ok) {
    if (!ok) std::abort();
}

// The multiset invariants: hashes strictly ascending, frequencies >= 1 summing to the length,
// which is within kMaxLength.
inline void require_valid(const Multiset& m) {
    uint64_t sum = 0;
    for (size_t i = 0; i < m.hashes.size(); ++i) {
        require(i == 0 || m.hashes[i - 1] < m.hashes[i]);
        require(m.freqs[i] >= 1);
        sum += m.freqs[i];
    }
    require(sum == m.length && sum <= kMaxLength);
}

}  // namespace spotsigs::fuzz
