// The byte layout of a stored spotsig (the varlena payload after its 4-byte length word).
//
//   offset 0  uint8   format version (1)
//   offset 1  uint8   frequency width: 0 (all ones, no array), 1, 2 or 4 bytes
//   offset 2  uint16  reserved, zero
//   offset 4  uint32  number of distinct signatures n
//   offset 8  uint32  length |d| (sum of frequencies)
//   offset 12 uint64  hashes[n], strictly ascending
//             uintW   freqs[n] (absent when the width is 0)
//
// With the 4-byte varlena header in front, the hashes start 16 bytes into the datum, so they are
// 8-byte aligned in any MAXALIGNed copy. Numbers are in host byte order (binary send/recv
// converts to network order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/signature/multiset.hpp"

namespace spotsigs {

constexpr unsigned kPackedVersion = 1;
constexpr size_t kPackedHeaderSize = 12;
// The most distinct signatures one value may hold (keeps a value well under 1 GB).
constexpr uint32_t kMaxDistinct = 64u * 1024u * 1024u;

// The smallest frequency width (0, 1, 2 or 4) that represents frequencies up to fmax.
inline unsigned freq_width_of_max(uint32_t fmax) noexcept {
    return fmax <= 1 ? 0 : fmax <= 0xff ? 1 : fmax <= 0xffff ? 2 : 4;
}

// The smallest frequency width (0, 1, 2 or 4) that represents every frequency of m.
unsigned freq_width_for(const MultisetView& m) noexcept;

// Writes m's frequencies at width w (as freq_width_for gives, or wider) to out: m.size * w bytes.
void write_freqs(const MultisetView& m, unsigned w, unsigned char* out) noexcept;

// Bytes needed to pack m (without the varlena header).
size_t packed_size(const MultisetView& m) noexcept;

// Writes m into out, which must hold packed_size(m) bytes.
void pack(const MultisetView& m, unsigned char* out) noexcept;

// The header of a packed payload of len bytes, of which only the first kPackedHeaderSize at head
// are read: checked as unpack() checks it (version, width, the size the count implies). For a
// value's length or count without its hashes (a toasted value then fetches only its start).
// Throws Error(DataCorrupted).
struct PackedHeader {
    unsigned width = 0;
    uint32_t n = 0;
    uint32_t length = 0;
};
PackedHeader unpack_header(const unsigned char* head, size_t len);

// Returns a view into a packed payload of len bytes after checking its header and size (O(1)).
// Throws Error(DataCorrupted) if they do not fit. data + kPackedHeaderSize must be 8-byte aligned
// (it is in a MAXALIGNed datum, whose varlena header takes 4 bytes).
MultisetView unpack(const unsigned char* data, size_t len);

// unpack() plus a full check: hashes strictly ascending, frequencies >= 1, length = their sum.
// For values from untrusted bytes (binary receive) and for the index checker.
MultisetView unpack_checked(const unsigned char* data, size_t len);

}  // namespace spotsigs
