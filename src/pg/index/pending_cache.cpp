// The backend's searchable copies of index pending lists.
//
// Every scan must see the rows in the pending list, which VACUUM merges only now and then. Reading
// and comparing every pending row in every search made a COPY with the trigger quadratic in the
// rows COPYed since the last VACUUM. Instead each backend keeps, per index, the pending entries it
// has read as in-memory posting lists, and a search first reads only the entries appended since
// its previous one: the list grows only at its end until VACUUM moves its head, which bumps
// MetaData::pending_gen (and a new relfilenode after REINDEX or TRUNCATE changes the key).
//
// A backend's first kCompareSearches searches of an index do not build the copy: they compare the
// query with every pending entry, as a search does when the list is too large to cache. Indexing
// the entries as posting lists costs a few times more than comparing one query with them, so the
// copy starts once the comparisons would have cost about as much as the copy, and a connection
// that searches once or twice (a short-lived client) never pays for it.
//
// C-style code around the page reads; C++ work (the posting lists) runs inside pg_entry.
#include "pg/index/index.hpp"

#include <cstring>

#include "core/index/memory_postings.hpp"
#include "pg/boundary.hpp"

namespace spotsigs::pg::index {

namespace {

// Per-index cache memory beyond which the backend stops caching that pending list (searches then
// compare with every pending entry); VACUUM empties the list and caching resumes.
constexpr size_t kCacheLimitBytes = size_t(64) << 20;
constexpr int kSlots = 4;  // indexes cached at once per backend (least recently used goes)
// Searches of an index that compare with every pending entry before the backend copies the list
// (indexing the pending rows took about three times as long as comparing one query with them, on
// 2,000 textcorpus rows).
constexpr uint32 kCompareSearches = 2;

// One cached pending list.
struct Slot {
    bool used;
    SPOTSIGS_STORAGE_T node;  // the index's storage: changes with REINDEX and TRUNCATE
    uint32 gen;               // pending_gen the copy belongs to
    BlockNumber head_blk;     // and the head it started from
    uint32 head_off;
    BlockNumber read_blk;  // where the next read resumes
    uint32 read_off;
    bool oversize;    // too large to cache for this generation
    uint32 searches;  // searches of the index since the slot went to it (up to kCompareSearches)
    uint64 last_use;
    MemoryPostings* mem;  // heap (new/delete), owned by the slot
};

Slot slots[kSlots];
uint64 use_clock = 0;

// Frees a slot's posting lists.
void drop_lists(Slot* s) {
    if (s->mem == nullptr) return;
    MemoryPostings* m = s->mem;
    s->mem = nullptr;
    pg_entry([&] {
        delete m;
        return Datum(0);
    });
}

// The slot of an index, or a free or least recently used one reset for it.
Slot* slot_for(Relation index) {
    Slot* victim = &slots[0];
    for (Slot& s : slots) {
        if (s.used && std::memcmp(&s.node, &SPOTSIGS_STORAGE_OF(index), sizeof(SPOTSIGS_STORAGE_T)) == 0) return &s;
        if (!s.used || (victim->used && s.last_use < victim->last_use)) victim = &s;
    }
    drop_lists(victim);
    victim->used = false;
    return victim;
}

// Points slot s at the head of index's current pending list, nothing of it copied yet.
void start_list(Slot* s, Relation index, const MetaData* meta) {
    s->used = true;
    s->node = SPOTSIGS_STORAGE_OF(index);
    s->gen = meta->pending_gen;
    s->head_blk = s->read_blk = meta->pending_head;
    s->head_off = s->read_off = meta->pending_head_off;
    s->oversize = false;
}

}  // namespace

bool pending_cache_search(Relation index, const MetaData* meta, const MultisetView& q, double tau, Match** out,
                          int64* nout, SearchMeasure measure) {
    *out = nullptr;
    *nout = 0;
    if (meta->pending_head == InvalidBlockNumber) return true;  // never had a pending row
    Slot* s = slot_for(index);
    s->last_use = ++use_clock;
    if (!s->used) {
        // This backend's first search of the index (or the first since the slot went to another
        // index): the copy starts from the head after kCompareSearches searches.
        start_list(s, index, meta);
        s->searches = 0;
    }
    if (s->searches < kCompareSearches) {
        s->searches++;  // the caller compares with every entry
        return false;
    }
    if (s->gen != meta->pending_gen || s->head_blk != meta->pending_head || s->head_off != meta->pending_head_off) {
        // A new list (or the first use): start over from its head. A list of the same index
        // (after a merge) reuses the memory of the previous one.
        if (s->used && s->mem != nullptr) {
            s->mem->clear();  // noexcept
        } else {
            drop_lists(s);
        }
        start_list(s, index, meta);
    }
    if (s->oversize) return false;
    if (s->read_blk == s->head_blk && s->read_off == s->head_off)
        ereport(DEBUG1,
                errmsg_internal("spotsigs: copying the pending list of index \"%s\"", RelationGetRelationName(index)));

    // Entries appended since the last read (palloc'd in the caller's context).
    int64 n = 0;
    uint32 npages = 0;
    BlockNumber stop_blk;
    uint32 stop_off;
    PendingEntry* pend =
        read_pending(index, s->read_blk, s->read_off, InvalidBlockNumber, 0, &n, &npages, &stop_blk, &stop_off);
    bool ok = true;
    pg_entry([&] {
        try {
            if (s->mem == nullptr) s->mem = new MemoryPostings();
            for (int64 k = 0; k < n; ++k) s->mem->add(pend[k].id, pend[k].sig);
        } catch (...) {
            // A half-added batch must not stay: forget the list (the next search starts over).
            delete s->mem;
            s->mem = nullptr;
            s->used = false;
            throw;
        }
        s->read_blk = stop_blk;
        s->read_off = stop_off;
        if (s->mem->bytes() > kCacheLimitBytes) {
            delete s->mem;
            s->mem = nullptr;
            s->oversize = true;
            ok = false;
            return Datum(0);
        }
        if (q.empty()) return Datum(0);
        MemoryPostings::Source src(*s->mem, q);
        std::vector<Match> m = threshold_search(q, tau, src, nullptr, nullptr, measure);
        if (m.empty()) return Datum(0);
        pg_guard([&] { *out = (Match*)palloc(sizeof(Match) * m.size()); });
        std::memcpy((void*)*out, m.data(), sizeof(Match) * m.size());
        *nout = (int64)m.size();
        return Datum(0);
    });
    return ok;
}

}  // namespace spotsigs::pg::index
