// Collection: many multisets in columnar storage.
#include <algorithm>
#include <string>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/memory/huge_pages.hpp"
#include "core/signature/packed.hpp"

namespace spotsigs {

namespace {
// Signatures per chunk: the first chunk is small (most joins in tests are tiny), later ones grow
// to 8M signatures (96 MB); a document larger than that gets a chunk of its own size.
constexpr size_t kFirstChunk = 4096;
constexpr size_t kMaxChunk = size_t(1) << 23;
// The per-document arrays' bytes per document (ids, where, sizes, fpos, widths, lengths).
constexpr size_t kDocBytes = 8 + 8 + 4 + 4 + 1 + 8;
}  // namespace

void Collection::new_chunk(size_t hashes, size_t freq_bytes) {
    if (chunks_.size() >= UINT32_MAX) throw Error(ErrorKind::ProgramLimit, "a join collection holds too many chunks");
    size_t cap = std::max(next_chunk_, kFirstChunk);
    next_chunk_ = std::min(kMaxChunk, 2 * cap);
    // A signature takes 8 bytes and about one frequency byte.
    cap = std::min(cap, std::max<size_t>(growth_room() / 9, 1));
    chunks_.emplace_back();
    reserve_huge(chunks_.back().hashes, std::max(hashes, cap));
    reserve_huge(chunks_.back().freqs, std::max(freq_bytes, cap));  // a byte a signature covers most documents
}

uint32_t Collection::add(int64_t id, const MultisetView& sig) {
    if (ids_.size() >= UINT32_MAX)
        throw Error(ErrorKind::ProgramLimit, "a join collection holds at most 4294967295 documents");
    // Recompute the length from the frequencies so that lengths and similarity always agree.
    uint64_t length = 0;
    uint32_t fmax = 0;
    for (uint32_t i = 0; i < sig.size; ++i) {
        uint32_t f = sig.freqs[i];
        if (f == 0) throw Error(ErrorKind::DataCorrupted, "spotsig frequency of zero in join input");
        if (i > 0 && sig.hashes[i] <= sig.hashes[i - 1])
            throw Error(ErrorKind::DataCorrupted, "spotsig hashes not strictly ascending in join input");
        length += f;
        fmax = std::max(fmax, f);
    }
    // Frequencies in the narrowest width that holds them all (none when all are 1).
    const unsigned width = freq_width_of_max(fmax);
    if (length > kMaxLength)
        throw Error(ErrorKind::ProgramLimit, "spotsig length exceeds " + std::to_string(kMaxLength));
    if (chunks_.empty() || chunks_.back().hashes.size() + sig.size > chunks_.back().hashes.capacity() ||
        chunks_.back().freqs.size() + size_t(width) * sig.size > chunks_.back().freqs.capacity())
        new_chunk(sig.size, size_t(width) * sig.size);
    Chunk& c = chunks_.back();
    uint64_t at = c.hashes.size();
    uint64_t fat = c.freqs.size();
    c.hashes.insert(c.hashes.end(), sig.hashes, sig.hashes + sig.size);
    if (width != 0) {
        c.freqs.resize(fat + size_t(width) * sig.size);
        write_freqs(sig, width, c.freqs.data() + fat);
    }
    if (ids_.size() == ids_.capacity()) {
        size_t want = std::max<size_t>(1024, 2 * ids_.capacity());
        // The per-document arrays take 33 bytes a document; they are copied when they grow.
        want = std::min(want, std::max(ids_.size() + 1024, ids_.capacity() + growth_room() / (2 * kDocBytes)));
        reserve_huge(ids_, want);
        reserve_huge(where_, want);
        reserve_huge(sizes_, want);
        reserve_huge(fpos_, want);
        reserve_huge(widths_, want);
        reserve_huge(lengths_, want);
    }
    where_.push_back(static_cast<uint64_t>(chunks_.size() - 1) << 32 | at);
    sizes_.push_back(sig.size);
    fpos_.push_back(static_cast<uint32_t>(fat));
    widths_.push_back(static_cast<unsigned char>(width));
    lengths_.push_back(length);
    ids_.push_back(id);
    return static_cast<uint32_t>(ids_.size() - 1);
}

void Collection::append(Collection&& other) {
    const size_t n = ids_.size() + other.ids_.size();
    if (n > UINT32_MAX) throw Error(ErrorKind::ProgramLimit, "a join collection holds at most 4294967295 documents");
    if (chunks_.size() + other.chunks_.size() >= UINT32_MAX)
        throw Error(ErrorKind::ProgramLimit, "a join collection holds too many chunks");
    const uint64_t base = chunks_.size();
    reserve(n, 0);
    chunks_.reserve(chunks_.size() + other.chunks_.size());
    for (Chunk& c : other.chunks_) chunks_.push_back(std::move(c));
    for (size_t i = 0; i < other.ids_.size(); ++i) {
        where_.push_back(((other.where_[i] >> 32) + base) << 32 | (other.where_[i] & 0xffffffffu));
        sizes_.push_back(other.sizes_[i]);
        fpos_.push_back(other.fpos_[i]);
        widths_.push_back(other.widths_[i]);
        lengths_.push_back(other.lengths_[i]);
        ids_.push_back(other.ids_[i]);
    }
    next_chunk_ = std::max(next_chunk_, other.next_chunk_);
    other = Collection();
}

size_t Collection::growth_for(const MultisetView& sig) const noexcept {
    uint32_t fmax = 0;
    for (uint32_t i = 0; i < sig.size; ++i) fmax = std::max(fmax, static_cast<uint32_t>(sig.freqs[i]));
    const size_t width = freq_width_of_max(fmax);
    size_t bytes = 0;
    // As add() and new_chunk() decide (a vector's push_back doubles its capacity).
    if (chunks_.empty() || chunks_.back().hashes.size() + sig.size > chunks_.back().hashes.capacity() ||
        chunks_.back().freqs.size() + width * sig.size > chunks_.back().freqs.capacity()) {
        size_t cap = std::min(std::max(next_chunk_, kFirstChunk), std::max<size_t>(growth_room() / 9, 1));
        bytes += std::max<size_t>(sig.size, cap) * sizeof(uint64_t) + std::max(width * sig.size, cap);
        if (chunks_.size() == chunks_.capacity()) bytes += std::max<size_t>(chunks_.size(), 1) * sizeof(Chunk);
    }
    if (ids_.size() == ids_.capacity()) {
        size_t want = std::max<size_t>(1024, 2 * ids_.capacity());
        want = std::min(want, std::max(ids_.size() + 1024, ids_.capacity() + growth_room() / (2 * kDocBytes)));
        bytes += (want - ids_.capacity()) * kDocBytes;
    }
    return bytes;
}

size_t Collection::memory_bytes() const noexcept {
    size_t b = ids_.capacity() * sizeof(int64_t) + where_.capacity() * sizeof(uint64_t) +
               (sizes_.capacity() + fpos_.capacity()) * sizeof(uint32_t) + widths_.capacity() +
               lengths_.capacity() * sizeof(uint64_t) + chunks_.capacity() * sizeof(Chunk);
    for (const Chunk& c : chunks_) b += c.hashes.capacity() * sizeof(uint64_t) + c.freqs.capacity();
    return b;
}

size_t Collection::growth_room() const noexcept {
    if (growth_limit_ == 0) return SIZE_MAX;
    const size_t used = memory_bytes();
    return growth_limit_ > used ? growth_limit_ - used : 0;
}

void Collection::reserve(size_t n, size_t total) {
    reserve_huge(ids_, n);
    reserve_huge(where_, n);
    reserve_huge(sizes_, n);
    reserve_huge(fpos_, n);
    reserve_huge(widths_, n);
    reserve_huge(lengths_, n);
    // Later chunks are sized for what is expected to come (at most kMaxChunk each).
    if (total > next_chunk_) next_chunk_ = std::min(kMaxChunk, total);
}

void Collection::room(Room& hashes, Room& freqs) noexcept {
    hashes = freqs = Room();
    if (chunks_.empty()) return;
    Chunk& c = chunks_.back();
    hashes.begin = reinterpret_cast<unsigned char*>(c.hashes.data() + c.hashes.size());
    hashes.end = reinterpret_cast<unsigned char*>(c.hashes.data() + c.hashes.capacity());
    freqs.begin = c.freqs.data() + c.freqs.size();
    freqs.end = c.freqs.data() + c.freqs.capacity();
}

}  // namespace spotsigs
