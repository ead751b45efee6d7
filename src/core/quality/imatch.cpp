// I-Match: the signature hasher run over the ascending list of distinct hashes.
#include "core/quality/imatch.hpp"

#include <string_view>

#include "core/signature/hash.hpp"

namespace spotsigs {

std::optional<uint64_t> imatch_fingerprint(const MultisetView& m) noexcept {
    if (m.empty()) return std::nullopt;
    SigHasher h;
    for (uint32_t i = 0; i < m.size; ++i) {
        unsigned char bytes[8];
        for (int b = 0; b < 8; ++b) bytes[b] = static_cast<unsigned char>(m.hashes[i] >> (8 * b));
        h.add(std::string_view(reinterpret_cast<const char*>(bytes), 8));
    }
    return h.finish();
}

}  // namespace spotsigs
