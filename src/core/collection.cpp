// Collection: many multisets in columnar storage.
#include <string>

#include "error.hpp"
#include "join.hpp"

namespace spotsigs {

uint32_t Collection::add(int64_t id, const MultisetView& sig) {
    if (ids_.size() >= UINT32_MAX)
        throw Error(ErrorKind::ProgramLimit, "a join collection holds at most 4294967295 documents");
    // Recompute the length from the frequencies so that lengths and similarity always agree.
    uint64_t length = 0;
    for (uint32_t i = 0; i < sig.size; ++i) {
        uint32_t f = sig.freqs[i];
        if (f == 0) throw Error(ErrorKind::DataCorrupted, "spotsig frequency of zero in join input");
        if (i > 0 && sig.hashes[i] <= sig.hashes[i - 1])
            throw Error(ErrorKind::DataCorrupted, "spotsig hashes not strictly ascending in join input");
        length += f;
    }
    if (length > kMaxLength)
        throw Error(ErrorKind::ProgramLimit, "spotsig length exceeds " + std::to_string(kMaxLength));
    hashes_.insert(hashes_.end(), sig.hashes, sig.hashes + sig.size);
    for (uint32_t i = 0; i < sig.size; ++i) freqs_.push_back(sig.freqs[i]);
    offsets_.push_back(hashes_.size());
    lengths_.push_back(length);
    ids_.push_back(id);
    return static_cast<uint32_t>(ids_.size() - 1);
}

MultisetView Collection::doc(size_t i) const noexcept {
    MultisetView v;
    uint64_t begin = offsets_[i];
    v.hashes = hashes_.data() + begin;
    v.freqs.data = reinterpret_cast<const unsigned char*>(freqs_.data() + begin);
    v.freqs.width = 4;
    v.size = static_cast<uint32_t>(offsets_[i + 1] - begin);
    v.length = lengths_[i];
    return v;
}

size_t Collection::memory_bytes() const noexcept {
    return ids_.capacity() * sizeof(int64_t) + offsets_.capacity() * sizeof(uint64_t) +
           hashes_.capacity() * sizeof(uint64_t) + freqs_.capacity() * sizeof(uint32_t) +
           lengths_.capacity() * sizeof(uint64_t);
}

void Collection::reserve(size_t n, size_t total) {
    ids_.reserve(n);
    offsets_.reserve(n + 1);
    lengths_.reserve(n);
    hashes_.reserve(total);
    freqs_.reserve(total);
}

}  // namespace spotsigs
