// Writing and parsing the binary form of a spotsig.
#include "core/signature/binary_format.hpp"

#include <cstring>
#include <utility>
#include <vector>

#include "core/common/error.hpp"
#include "core/signature/packed.hpp"

namespace spotsigs {

namespace {

// Appends the big-endian bytes of the low `bytes` bytes of v.
void put(std::string& out, uint64_t v, int bytes) {
    for (int s = 8 * (bytes - 1); s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}

// The big-endian unsigned value of `bytes` bytes at p.
uint64_t get(const unsigned char* p, int bytes) {
    uint64_t v = 0;
    for (int k = 0; k < bytes; ++k) v = (v << 8) | p[k];
    return v;
}

// The big-endian value of type T (uint64_t or uint32_t) at p: get(p, sizeof(T)) as one load (the
// binary form's hashes and frequencies, read once per signature of every received value).
template <class T>
T get_be(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if constexpr (sizeof v == 8) v = __builtin_bswap64(v);
    else v = __builtin_bswap32(v);
#endif
    return v;
}

[[noreturn]] void malformed(const std::string& what) {
    throw Error(ErrorKind::InvalidBinary, what);
}

}  // namespace

std::string to_binary(const MultisetView& m) {
    std::string out;
    out.reserve(4 + size_t(m.size) * 12);
    put(out, m.size, 4);
    for (uint32_t i = 0; i < m.size; ++i) {
        put(out, m.hashes[i], 8);
        put(out, m.freqs[i], 4);
    }
    return out;
}

Multiset parse_binary(const unsigned char* data, size_t size, size_t* consumed) {
    if (size < 4) malformed("external spotsig value is too short");
    const auto n = static_cast<int32_t>(static_cast<uint32_t>(get(data, 4)));
    if (n < 0 || static_cast<uint32_t>(n) > kMaxDistinct || static_cast<size_t>(n) > (size - 4) / 12)
        malformed("invalid number of signatures in external spotsig value: " + std::to_string(n));
    *consumed = 4 + size_t(n) * 12;
    // What spotsig_send writes (hashes strictly ascending, so distinct) is the multiset itself:
    // taken as it comes, with no sort. Anything else, or a length past the limit, is parsed by
    // the general path below, which gives the same multiset and the same errors.
    {
        Multiset m;
        m.hashes.resize(static_cast<size_t>(n));
        m.freqs.resize(static_cast<size_t>(n));
        const unsigned char* p = data + 4;
        uint64_t total = 0;
        int32_t i = 0;
        for (; i < n; ++i, p += 12) {
            const uint64_t hash = get_be<uint64_t>(p);
            const auto f = static_cast<int32_t>(get_be<uint32_t>(p + 8));
            if (f < 1) malformed("invalid frequency " + std::to_string(f) + " in external spotsig value");
            if ((i > 0 && hash <= m.hashes[i - 1]) || (total += static_cast<uint64_t>(f)) > kMaxLength) break;
            m.hashes[i] = hash;
            m.freqs[i] = static_cast<uint32_t>(f);
        }
        if (i == n) {
            m.length = total;
            return m;
        }
    }
    std::vector<std::pair<uint64_t, uint64_t>> pairs(static_cast<size_t>(n));
    const unsigned char* p = data + 4;
    for (auto& [hash, freq] : pairs) {
        hash = get_be<uint64_t>(p);
        const auto f = static_cast<int32_t>(get_be<uint32_t>(p + 8));
        if (f < 1) malformed("invalid frequency " + std::to_string(f) + " in external spotsig value");
        freq = static_cast<uint64_t>(f);
        p += 12;
    }
    return Multiset::from_pairs(std::move(pairs));
}

BinaryPlan plan_binary(const unsigned char* data, size_t size) {
    if (size < 4) malformed("external spotsig value is too short");
    const auto n = static_cast<int32_t>(static_cast<uint32_t>(get(data, 4)));
    if (n < 0 || static_cast<uint32_t>(n) > kMaxDistinct || static_cast<size_t>(n) > (size - 4) / 12)
        malformed("invalid number of signatures in external spotsig value: " + std::to_string(n));
    BinaryPlan plan;
    plan.consumed = 4 + size_t(n) * 12;
    const unsigned char* p = data + 4;
    uint64_t total = 0, prev = 0;
    uint32_t fmax = 0;
    for (int32_t i = 0; i < n; ++i, p += 12) {
        const uint64_t hash = get_be<uint64_t>(p);
        const auto f = static_cast<int32_t>(get_be<uint32_t>(p + 8));
        if (f < 1) malformed("invalid frequency " + std::to_string(f) + " in external spotsig value");
        if ((i > 0 && hash <= prev) || (total += static_cast<uint64_t>(f)) > kMaxLength) return plan;
        prev = hash;
        fmax = static_cast<uint32_t>(f) > fmax ? static_cast<uint32_t>(f) : fmax;
    }
    plan.canonical = true;
    plan.n = static_cast<uint32_t>(n);
    plan.length = static_cast<uint32_t>(total);
    plan.width = freq_width_of_max(fmax);
    plan.packed_size = kPackedHeaderSize + size_t(plan.n) * (8 + plan.width);
    return plan;
}

void pack_binary(const unsigned char* data, const BinaryPlan& plan, unsigned char* out) noexcept {
    out[0] = static_cast<unsigned char>(kPackedVersion);
    out[1] = static_cast<unsigned char>(plan.width);
    out[2] = out[3] = 0;
    std::memcpy(out + 4, &plan.n, 4);
    std::memcpy(out + 8, &plan.length, 4);
    unsigned char* hashes = out + kPackedHeaderSize;
    unsigned char* freqs = hashes + size_t(plan.n) * 8;
    const unsigned char* p = data + 4;
    for (uint32_t i = 0; i < plan.n; ++i, p += 12) {
        const uint64_t hash = get_be<uint64_t>(p);
        const uint32_t f = get_be<uint32_t>(p + 8);
        std::memcpy(hashes + size_t(i) * 8, &hash, 8);
        if (plan.width == 1) {
            freqs[i] = static_cast<unsigned char>(f);
        } else if (plan.width == 2) {
            const auto v = static_cast<uint16_t>(f);
            std::memcpy(freqs + size_t(i) * 2, &v, 2);
        } else if (plan.width == 4) {
            std::memcpy(freqs + size_t(i) * 4, &f, 4);
        }
    }
}

}  // namespace spotsigs
