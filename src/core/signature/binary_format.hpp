// The binary (send/receive) form of a spotsig: a big-endian int32 count n, then n times a
// big-endian int64 hash and int32 frequency. A hash travels as the int64 with the same 64 bits
// (what spotsig_hashes returns), so a client may list the hashes in signed order as well as in
// the unsigned order spotsig_send writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/signature/multiset.hpp"

namespace spotsigs {

// The binary form of m (what spotsig_send writes: hashes in ascending unsigned order).
std::string to_binary(const MultisetView& m);

// Parses one binary value from the start of data[0, size): hashes in any order, a hash given
// twice with its frequencies summed (as in the text form), frequencies from 1 to 2147483647.
// Sets *consumed to the bytes the value occupies (4 + 12 n); bytes after it are the caller's.
// Throws Error(InvalidBinary) for a malformed value and Error(ProgramLimit) for one whose length
// or a summed frequency exceeds 2147483647.
Multiset parse_binary(const unsigned char* data, size_t size, size_t* consumed);

}  // namespace spotsigs
