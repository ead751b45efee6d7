// Min-hash band keys: a keyed 64-bit mixer stands in for each random permutation.
#include "core/quality/minhash.hpp"

#include <limits>
#include <string>

#include "core/common/error.hpp"
#include "core/signature/hash.hpp"

namespace spotsigs {

namespace {

// The i-th value of the splitmix64 sequence from seed, used as a per-function key.
uint64_t splitmix(uint64_t seed, uint64_t i) noexcept {
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

std::vector<uint64_t> lsh_band_keys(const MultisetView& m, int k, int l, uint64_t seed) {
    if (k < 1 || l < 1 || static_cast<int64_t>(k) * l > kMaxMinhashes)
        throw Error(ErrorKind::InvalidParameter, "k and l must be at least 1 and k * l at most 4096",
                    "k is " + std::to_string(k) + ", l is " + std::to_string(l) + ".");
    std::vector<uint64_t> keys;
    if (m.empty()) return keys;
    const size_t funcs = static_cast<size_t>(k) * l;
    std::vector<uint64_t> fkeys(funcs);
    for (size_t f = 0; f < funcs; ++f) fkeys[f] = splitmix(seed, f);
    std::vector<uint64_t> mins(funcs, std::numeric_limits<uint64_t>::max());
    for (uint32_t i = 0; i < m.size; ++i) {
        uint32_t freq = m.freqs[i];
        for (uint32_t occ = 0; occ < freq; ++occ) {
            uint64_t element = fmix64(m.hashes[i] ^ fmix64(occ + 1));
            for (size_t f = 0; f < funcs; ++f) {
                uint64_t v = fmix64(element ^ fkeys[f]);
                if (v < mins[f]) mins[f] = v;
            }
        }
    }
    keys.reserve(l);
    for (int b = 0; b < l; ++b) {
        uint64_t key = fmix64(0x5151ULL + static_cast<uint64_t>(b));
        for (int r = 0; r < k; ++r) key = fmix64(key ^ mins[static_cast<size_t>(b) * k + r]) + r;
        keys.push_back(key);
    }
    return keys;
}

}  // namespace spotsigs
