// The backend's flat copies of the directories of segments it searches often.
//
// Every lookup of a hash in a segment descends the segment's directory: a buffer lookup, a pin
// and a page copy per directory level, before the DATA page that may hold the hash. A COPY with
// the trigger searches the same large segment for every row, about twenty hashes each, so after
// kBuildAfter lookups in a segment the backend copies the lowest directory level (the first hash
// and block of every DATA page, in order) into one array and finds DATA blocks there. Only the
// lookups of earlier calls count: a call's own hashes come sorted and its descent reads each
// directory page at most once (it keeps the last page of every level), so within one call the
// copy, which reads every page of the level, can never save page reads. A single query in a new
// connection, however many signatures it has, therefore descends, and rarely used segments keep
// descending.
//
// Exactness: as for the segment filters, a segment is immutable once written and known by its
// serial within the index's storage (its relfilenode); VACUUM writes a changed segment under a new
// serial, and the caller only asks for segments the metapage it copied names. The array is
// the directory's lowest level as written: each entry of an upper level holds the first hash
// of its child, so "the last entry whose first hash is <= h" picks the same DATA block as the
// descent does.
#include "pg/index/index.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "pg/boundary.hpp"

namespace spotsigs::pg::index {

namespace {

constexpr uint32 kBuildAfter = 64;                   // lookups in a segment before it is copied
constexpr int kDirSlots = 8;                         // segments remembered (least recently used goes)
constexpr size_t kDirBytesLimit = size_t(32) << 20;  // all copies together

// One remembered segment: its lookups so far and, once built, its lowest directory level.
struct DirSlot {
    bool used = false;
    SPOTSIGS_STORAGE_T node;
    uint64 serial = 0;
    uint64 lookups = 0;
    uint64 last_use = 0;
    bool built = false;
    bool failed = false;  // no memory for the copy, or over the limit: descend
    SegmentDirectory dir;
};

DirSlot dir_slots[kDirSlots];
uint64 dir_clock = 0;

// Bytes held by every built copy.
size_t dir_bytes() {
    size_t n = 0;
    for (const DirSlot& s : dir_slots) n += s.dir.bytes();
    return n;
}

// Forgets slot s (no exception: freeing only).
void dir_forget(DirSlot& s) {
    s.used = false;
    s.built = false;
    s.failed = false;
    s.lookups = 0;
    SegmentDirectory().swap(s.dir);
}

// Appends the entries of the level-1 pages under directory page blk (level lvl) to out, checking
// levels and order. Reads through pg_guard: call inside pg_entry.
void collect_level1(Relation index, BlockNumber blk, uint32 lvl, std::vector<std::vector<char>>& bufs,
                    SegmentDirectory& out) {
    char* pg = bufs[lvl].data();
    pg_guard([&] { read_page_copy(index, blk, pg, kDirPage); });
    if (opaque_of((Page)pg)->level != lvl) pg_guard([&] { corrupted(index, "directory level mismatch", blk); });
    uint32 lower = ((PageHeader)pg)->pd_lower;
    uint32 n = (lower - kContentStart) / 12;
    for (uint32 k = 0; k < n; ++k) {
        uint64 h;
        BlockNumber child;
        std::memcpy(&h, pg + kContentStart + 12 * k, 8);
        std::memcpy(&child, pg + kContentStart + 12 * k + 8, 4);
        if (lvl > 1) {
            collect_level1(index, child, lvl - 1, bufs, out);
            continue;
        }
        if (!out.first.empty() && h <= out.first.back())
            pg_guard([&] { corrupted(index, "directory entries out of order", blk); });
        out.first.push_back(h);
        out.block.push_back(child);
    }
}

}  // namespace

BlockNumber SegmentDirectory::data_block(uint64 h) const {
    auto it = std::upper_bound(first.begin(), first.end(), h);
    if (it == first.begin()) return InvalidBlockNumber;  // below the segment's first hash
    return block[(size_t)(it - first.begin()) - 1];
}

const SegmentDirectory* segment_directory(Relation index, const SegmentDesc& seg, uint64 lookups) {
    if (seg.root == InvalidBlockNumber || seg.height == 0) return nullptr;
    DirSlot* slot = nullptr;
    DirSlot* victim = &dir_slots[0];
    for (DirSlot& s : dir_slots) {
        if (s.used && s.serial == seg.serial &&
            std::memcmp(&s.node, &SPOTSIGS_STORAGE_OF(index), sizeof(SPOTSIGS_STORAGE_T)) == 0) {
            slot = &s;
            break;
        }
        if (!s.used || (victim->used && s.last_use < victim->last_use)) victim = &s;
    }
    if (slot == nullptr) {
        dir_forget(*victim);
        slot = victim;
        slot->used = true;
        slot->node = SPOTSIGS_STORAGE_OF(index);
        slot->serial = seg.serial;
    }
    slot->last_use = ++dir_clock;
    if (slot->built) return &slot->dir;
    uint64 earlier = slot->lookups;
    slot->lookups += lookups;
    if (slot->failed || earlier < kBuildAfter) return nullptr;

    SegmentDirectory d;
    try {
        // The level has one entry per DATA page, fewer than the segment's pages: reserving that
        // many avoids regrowing (and copying) the arrays, and reserved room that is never
        // written costs no memory.
        d.first.reserve(seg.npages);
        d.block.reserve(seg.npages);
        std::vector<std::vector<char>> bufs(seg.height + 1, std::vector<char>(BLCKSZ));
        collect_level1(index, seg.root, seg.height, bufs, d);
        // Room within the limit: the least recently used copies go first.
        while (dir_bytes() + d.bytes() > kDirBytesLimit) {
            DirSlot* lru = nullptr;
            for (DirSlot& s : dir_slots)
                if (&s != slot && s.built && (lru == nullptr || s.last_use < lru->last_use)) lru = &s;
            if (lru == nullptr) break;
            dir_forget(*lru);
        }
        if (dir_bytes() + d.bytes() > kDirBytesLimit) {
            slot->failed = true;  // larger than the limit on its own
            return nullptr;
        }
    } catch (const std::bad_alloc&) {
        slot->failed = true;  // descending is always correct
        return nullptr;
    }
    slot->dir.swap(d);
    slot->built = true;
    pg_guard([&] {
        ereport(DEBUG1,
                errmsg_internal("spotsigs: copied the directory of segment %llu of index \"%s\"",
                                (unsigned long long)seg.serial, RelationGetRelationName(index)),
                errdetail_internal("%zu DATA pages", slot->dir.first.size()));
    });
    return &slot->dir;
}

}  // namespace spotsigs::pg::index
