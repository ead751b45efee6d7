// In-memory posting lists (the index's pending list, searchable).
#include "core/index/memory_postings.hpp"

#include <algorithm>

#include "core/common/error.hpp"
#include "core/memory/huge_pages.hpp"

namespace spotsigs {

namespace {
constexpr unsigned kInitialLog2 = 10;  // 1,024 slots (16 kB) for a new list
}

MemoryPostings::MemoryPostings() : table_(new_table(size_t(1) << kInitialLog2)), shift_(64 - kInitialLog2) {}

std::vector<MemoryPostings::Slot> MemoryPostings::new_table(size_t n) {
    std::vector<Slot> t;
    reserve_huge(t, n);
    t.assign(n, Slot{0, 0, 0});
    return t;
}

size_t MemoryPostings::find(uint64_t hash) const noexcept {
    // Linear probing from a multiplicative hash of the (already well mixed) signature hash.
    const size_t mask = table_.size() - 1;
    size_t k = size_t((hash * 0x9e3779b97f4a7c15ULL) >> shift_);
    while (table_[k].count != 0 && table_[k].hash != hash) k = (k + 1) & mask;
    return k;
}

void MemoryPostings::grow() {
    std::vector<Slot> old = new_table(table_.size() * 2);
    old.swap(table_);
    --shift_;
    for (const Slot& s : old)
        if (s.count != 0) table_[find(s.hash)] = s;
}

void MemoryPostings::add(uint64_t id, const MultisetView& sig) {
    ++documents_;
    if (npostings_ + uint64_t(sig.size) >= kNone)
        throw Error(ErrorKind::OutOfMemory, "too many pending index entries to keep in memory");
    for (uint32_t i = 0; i < sig.size; ++i) {
        if ((lists_ + 1) * 10 > table_.size() * 7) grow();
        const uint32_t k = npostings_++;
        if ((k & kMask) == 0 && (k >> kChunkBits) == chunks_.size()) chunks_.push_back(std::make_unique<Chunk>());
        posting(k) = Posting{id, static_cast<uint32_t>(sig.length), sig.freqs[i]};
        Slot& s = table_[find(sig.hashes[i])];
        if (s.count == 0) {
            next(k) = k;  // a ring of one
            s = Slot{sig.hashes[i], k, 1};
            ++lists_;
        } else {
            next(k) = next(s.tail);  // the new last posting closes the ring at the first
            next(s.tail) = k;
            s.tail = k;
            ++s.count;
        }
    }
}

void MemoryPostings::clear() noexcept {
    std::fill(table_.begin(), table_.end(), Slot{0, 0, 0});
    lists_ = 0;
    npostings_ = 0;
    documents_ = 0;
}

size_t MemoryPostings::bytes() const noexcept {
    return table_.size() * sizeof(Slot) + chunks_.size() * sizeof(Chunk);
}

MemoryPostings::Source::Source(const MemoryPostings& m, const MultisetView& q) : m_(m), slot_(q.size, kNone) {
    if (m.lists_ == 0) return;
    for (uint32_t i = 0; i < q.size; ++i) {
        size_t k = m.find(q.hashes[i]);
        if (m.table_[k].count != 0) slot_[i] = static_cast<uint32_t>(k);
    }
}

uint64_t MemoryPostings::Source::count(uint32_t i, uint64_t lo, uint64_t hi) {
    // An over-estimate is allowed: the whole list, without a pass over it.
    (void)lo;
    (void)hi;
    return slot_[i] == kNone ? 0 : m_.table_[slot_[i]].count;
}

void MemoryPostings::Source::scan(uint32_t i, uint64_t lo, uint64_t hi, const std::function<bool(const Posting&)>& fn) {
    if (slot_[i] == kNone) return;
    const Slot& s = m_.table_[slot_[i]];
    uint32_t k = m_.chunk_of(s.tail).next[s.tail & kMask];  // the first posting
    for (uint32_t left = s.count; left > 0; --left) {
        const Chunk& c = m_.chunk_of(k);
        const Posting& p = c.postings[k & kMask];
        if (p.length >= lo && p.length <= hi && !fn(p)) return;
        k = c.next[k & kMask];
    }
}

}  // namespace spotsigs
