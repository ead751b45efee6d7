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

// One binary value at the start of data, read once for what it packs into (packed.hpp) when it
// is in the form spotsig_send writes (hashes strictly ascending, the length within the limit):
// then canonical, with the packed size, frequency width, count and length, and consumed as
// parse_binary sets it. Otherwise canonical is false and parse_binary reads the value (sorting,
// summing or rejecting it). Throws what parse_binary throws for a malformed count or size and
// for an invalid frequency among the ascending hashes.
struct BinaryPlan {
    bool canonical = false;
    uint32_t n = 0;
    uint32_t length = 0;
    unsigned width = 0;
    size_t packed_size = 0;
    size_t consumed = 0;
};
BinaryPlan plan_binary(const unsigned char* data, size_t size);

// Writes the canonical value at data, as plan_binary planned it, in the packed layout to out
// (plan.packed_size bytes): the bytes pack() writes for parse_binary's multiset, with no
// multiset built on the way.
void pack_binary(const unsigned char* data, const BinaryPlan& plan, unsigned char* out) noexcept;

}  // namespace spotsigs
