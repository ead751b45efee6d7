// The backend's filters of index segments it wrote itself.
//
// A long COPY into an indexed table merges the pending list into a new small segment every few
// thousand rows, and every search then looks each hash it reads up in every segment: a descent
// and a page pin per hash and segment, although a small segment holds few of them (none at all
// for a row of new content). The backend that merges has every hash of the new segment in hand,
// so it keeps a Bloom filter of them (core KeyFilter), and its searches skip the hashes the
// filter rules out. No other backend has one; they look every hash up.
//
// Exactness: a segment is immutable once written, and is known by its serial, which the
// metapage hands out in increasing order and never twice within the index's storage (a REINDEX
// or TRUNCATE gives new storage, hence the storage identity in the key). The filter is remembered
// only after the metapage names the segment, and holds every hash with a record in it, so a
// hash it rules out has no posting there. VACUUM rewrites a segment under a new serial.
#include "pg/index/index.hpp"

#include <cstring>

namespace spotsigs::pg::index {

namespace {

constexpr int kFilterSlots = 16;  // filters kept (the least recently used goes): at most 32 MB

// One remembered filter.
struct FilterSlot {
    SPOTSIGS_STORAGE_T node;
    uint64 serial;
    KeyFilter* filter;  // heap (new/delete); null when the slot is free
    uint64 last_use;
};

FilterSlot filter_slots[kFilterSlots];
uint64 filter_clock = 0;

}  // namespace

void segment_filter_remember(Relation index, uint64 serial, const SegmentHashes* keys) {
    if (keys == nullptr || !keys->complete || keys->n > kFilterMaxKeys) return;
    KeyFilter* f = nullptr;
    try {
        f = new KeyFilter(keys->n);
        for (uint64 k = 0; k < keys->n; ++k) f->add(keys->hashes[k]);
    } catch (...) {
        // No memory for it (nothing else throws here, and nothing may reach PostgreSQL):
        // searches look every hash up, which is always correct.
        delete f;
        return;
    }
    FilterSlot* victim = &filter_slots[0];
    for (FilterSlot& s : filter_slots) {
        if (s.filter == nullptr) {
            victim = &s;
            break;
        }
        if (s.last_use < victim->last_use) victim = &s;
    }
    delete victim->filter;
    victim->node = SPOTSIGS_STORAGE_OF(index);
    victim->serial = serial;
    victim->filter = f;
    victim->last_use = ++filter_clock;
}

const KeyFilter* segment_filter(Relation index, uint64 serial) {
    for (FilterSlot& s : filter_slots)
        if (s.filter != nullptr && s.serial == serial &&
            std::memcmp(&s.node, &SPOTSIGS_STORAGE_OF(index), sizeof(SPOTSIGS_STORAGE_T)) == 0) {
            s.last_use = ++filter_clock;
            return s.filter;
        }
    return nullptr;
}

}  // namespace spotsigs::pg::index
