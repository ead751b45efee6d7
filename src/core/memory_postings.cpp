// In-memory posting lists (the index's pending list, searchable).
#include "memory_postings.hpp"

namespace spotsigs {

void MemoryPostings::add(uint64_t id, const MultisetView& sig) {
    ++documents_;
    for (uint32_t i = 0; i < sig.size; ++i) {
        std::vector<Posting>& l = lists_[sig.hashes[i]];
        if (l.empty()) bytes_ += 64;  // the map node and the vector header, roughly
        size_t before = l.capacity();
        l.push_back(Posting{id, static_cast<uint32_t>(sig.length), sig.freqs[i]});
        bytes_ += (l.capacity() - before) * sizeof(Posting);
    }
}

MemoryPostings::Source::Source(const MemoryPostings& m, const MultisetView& q) : lists_(q.size, nullptr) {
    if (m.lists_.empty()) return;
    for (uint32_t i = 0; i < q.size; ++i) {
        auto it = m.lists_.find(q.hashes[i]);
        if (it != m.lists_.end()) lists_[i] = &it->second;
    }
}

uint64_t MemoryPostings::Source::count(uint32_t i, uint64_t lo, uint64_t hi) {
    // An over-estimate is allowed: the whole list, without a pass over it.
    (void)lo;
    (void)hi;
    return lists_[i] ? lists_[i]->size() : 0;
}

void MemoryPostings::Source::scan(uint32_t i, uint64_t lo, uint64_t hi,
                                  const std::function<bool(const Posting&)>& fn) {
    if (!lists_[i]) return;
    for (const Posting& p : *lists_[i]) {
        if (p.length < lo || p.length > hi) continue;
        if (!fn(p)) return;
    }
}

}  // namespace spotsigs
