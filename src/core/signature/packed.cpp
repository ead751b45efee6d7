// Packing multisets into the stored byte layout and validating stored bytes.
#include "core/signature/packed.hpp"

#include <cstring>

#include "core/common/error.hpp"

namespace spotsigs {

unsigned freq_width_for(const MultisetView& m) noexcept {
    uint32_t mx = 0;
    for (uint32_t i = 0; i < m.size; ++i) mx = m.freqs[i] > mx ? m.freqs[i] : mx;
    return freq_width_of_max(mx);
}

void write_freqs(const MultisetView& m, unsigned w, unsigned char* out) noexcept {
    for (uint32_t i = 0; i < m.size; ++i) {
        uint32_t v = m.freqs[i];
        if (w == 1) {
            out[i] = static_cast<unsigned char>(v);
        } else if (w == 2) {
            uint16_t s = static_cast<uint16_t>(v);
            std::memcpy(out + 2 * i, &s, 2);
        } else if (w == 4) {
            std::memcpy(out + 4 * i, &v, 4);
        }
    }
}

size_t packed_size(const MultisetView& m) noexcept {
    return kPackedHeaderSize + size_t(m.size) * (8 + freq_width_for(m));
}

void pack(const MultisetView& m, unsigned char* out) noexcept {
    unsigned w = freq_width_for(m);
    out[0] = static_cast<unsigned char>(kPackedVersion);
    out[1] = static_cast<unsigned char>(w);
    out[2] = out[3] = 0;
    uint32_t n = m.size, len = static_cast<uint32_t>(m.length);
    std::memcpy(out + 4, &n, 4);
    std::memcpy(out + 8, &len, 4);
    std::memcpy(out + kPackedHeaderSize, m.hashes, size_t(n) * 8);
    write_freqs(m, w, out + kPackedHeaderSize + size_t(n) * 8);
}

PackedHeader unpack_header(const unsigned char* head, size_t len) {
    auto bad = [](const char* why) { return Error(ErrorKind::DataCorrupted, "corrupt spotsig value", why); };
    if (len < kPackedHeaderSize) throw bad("value is shorter than its header");
    if (head[0] != kPackedVersion) throw bad("unknown format version");
    PackedHeader h;
    h.width = head[1];
    if (h.width != 0 && h.width != 1 && h.width != 2 && h.width != 4) throw bad("invalid frequency width");
    std::memcpy(&h.n, head + 4, 4);
    std::memcpy(&h.length, head + 8, 4);
    if (h.n > kMaxDistinct || len != kPackedHeaderSize + size_t(h.n) * (8 + h.width))
        throw bad("size does not match the number of signatures");
    return h;
}

MultisetView unpack(const unsigned char* data, size_t len) {
    const PackedHeader h = unpack_header(data, len);
    const uint32_t n = h.n, length = h.length;
    const unsigned w = h.width;
    MultisetView v;
    v.hashes = reinterpret_cast<const uint64_t*>(data + kPackedHeaderSize);
    v.freqs.data = data + kPackedHeaderSize + size_t(n) * 8;
    v.freqs.width = w;
    v.size = n;
    v.length = length;
    return v;
}

MultisetView unpack_checked(const unsigned char* data, size_t len) {
    auto bad = [](const char* why) { return Error(ErrorKind::DataCorrupted, "corrupt spotsig value", why); };
    MultisetView v = unpack(data, len);
    uint32_t n = v.size;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t f = v.freqs[i];
        if (f == 0) throw bad("zero frequency");
        sum += f;
        if (i > 0 && !(v.hashes[i - 1] < v.hashes[i])) throw bad("hashes out of order");
    }
    if (sum != v.length) throw bad("length does not equal the sum of frequencies");
    return v;
}

}  // namespace spotsigs
