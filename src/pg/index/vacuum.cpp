// VACUUM: drop dead rows and merge the pending list by writing a new segment, then recycle the
// replaced pages once no reader can still be inside them.
//
// C-style code: no C++ objects with destructors live across PostgreSQL calls.
#include "pg/index/index.hpp"

#include "core/index/posting_sort.hpp"

extern "C" {
#include "access/genam.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
}

#include <cstring>

namespace spotsigs::pg::index {

namespace {

// A merge of the pending list alone sorts in memory up to this size even when mem_kb is smaller.
constexpr uint64 kMergeInMemoryBytes = uint64(16) << 20;

// A growable array of block numbers.
struct BlockList {
    BlockNumber* b;
    int n;
    int cap;
};

// Appends blk to l.
void push_block(BlockList* l, BlockNumber blk) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->b = l->b ? (BlockNumber*)repalloc(l->b, sizeof(BlockNumber) * l->cap)
                    : (BlockNumber*)palloc(sizeof(BlockNumber) * l->cap);
    }
    l->b[l->n++] = blk;
}

// Follows next links from blk, adding every page of the given kind to l.
void collect_chain(Relation index, BlockNumber blk, PageKind kind, char* page, BlockList* l) {
    ChainWalk walk;
    chain_walk_init(&walk, index);
    for (; blk != InvalidBlockNumber; chain_step(&walk, blk)) {
        read_page_copy(index, blk, page, kind);
        push_block(l, blk);
        blk = opaque_of((Page)page)->next;
    }
}

// Adds every page of a segment to l.
void collect_segment(Relation index, const SegmentDesc& seg, char* page, BlockList* l) {
    if (seg.root != InvalidBlockNumber) {
        BlockNumber left = seg.root;
        for (uint32 lvl = seg.height; lvl > 0; --lvl) {
            read_page_copy(index, left, page, kDirPage);
            BlockNumber child;
            std::memcpy(&child, page + kContentStart + 8, 4);
            collect_chain(index, left, kDirPage, page, l);
            left = child;
        }
    }
    collect_chain(index, seg.first_data, kDataPage, page, l);
    collect_chain(index, seg.first_chain, kChainPage, page, l);
}

// True when any row of the segment is dead, by its document list.
bool segment_has_dead(Relation index, const SegmentDesc& seg, IndexBulkDeleteCallback cb, void* cbs, char* page) {
    if (seg.doclist_blk == InvalidBlockNumber || cb == nullptr) return false;
    PartRef ref{0, (uint32)seg.ndocs, true, seg.doclist_blk, seg.doclist_off, nullptr, 0};
    ListIter it;
    list_iter_init(&it, index, &ref, page);
    Posting p;
    while (list_iter_next(&it, &p)) {
        ItemPointerData t;
        id_to_tid(p.id, &t);
        if (cb(&t, cbs)) return true;
    }
    return false;
}

// Feeds a segment's live postings and documents to the sorter; counts the dead documents, in
// total and per length partition (gone[]).
void feed_segment(Relation index, const SegmentDesc& seg, IndexBulkDeleteCallback cb, void* cbs, SegmentSorter* s,
                  char* page, char* page2, double* removed, const Partitioning& parts, uint32* gone) {
    PartRef* refs = (PartRef*)palloc(sizeof(PartRef) * kMaxPartitions);
    BlockNumber blk = seg.first_data;
    ItemPointerData t;
    ChainWalk walk;
    chain_walk_init(&walk, index);
    for (; blk != InvalidBlockNumber; chain_step(&walk, blk)) {
        read_page_copy(index, blk, page, kDataPage);
        const unsigned char* pos = (const unsigned char*)page + kContentStart;
        const unsigned char* end = (const unsigned char*)page + ((PageHeader)page)->pd_lower;
        while (pos < end) {
            uint64 hash;
            int np;
            if (!parse_record(pos, end, &hash, &np, refs)) corrupted(index, "malformed hash record", blk);
            for (int k = 0; k < np; ++k) {
                ListIter it;
                list_iter_init(&it, index, &refs[k], page2);
                Posting p;
                while (list_iter_next(&it, &p)) {
                    id_to_tid(p.id, &t);
                    if (cb && cb(&t, cbs)) continue;
                    sorter_add_posting(s, hash, refs[k].part, p);
                }
            }
        }
        blk = opaque_of((Page)page)->next;
    }
    if (seg.doclist_blk != InvalidBlockNumber) {
        PartRef ref{0, (uint32)seg.ndocs, true, seg.doclist_blk, seg.doclist_off, nullptr, 0};
        ListIter it;
        list_iter_init(&it, index, &ref, page2);
        Posting p;
        while (list_iter_next(&it, &p)) {
            id_to_tid(p.id, &t);
            if (cb && cb(&t, cbs)) {
                *removed += 1;
                gone[parts.partition_of(p.length)]++;
                continue;
            }
            sorter_add_doc(s, p.id, p.length, p.freq);
        }
    }
    pfree(refs);
}

// Merges the pending list (and, when full, every segment) into one new segment, dropping rows
// the callback reports dead. Returns the number of rows removed. The caller holds the rewrite
// lock (a heavyweight lock on the metapage's page number), so rewrites never overlap.
double rewrite_locked(Relation index, IndexBulkDeleteCallback cb, void* cbs, bool force_full, int mem_kb) {
    char* page = (char*)palloc(BLCKSZ);
    char* page2 = (char*)palloc(BLCKSZ);
    // Snapshot of the metapage and of the pending list's end.
    MetaData snap;
    BlockNumber end_blk = InvalidBlockNumber;
    uint32 end_off = 0;
    Buffer mb = ReadBuffer(index, kMetaBlock);
    LockBuffer(mb, BUFFER_LOCK_SHARE);
    std::memcpy(&snap, meta_of(BufferGetPage(mb)), sizeof(MetaData));
    check_meta(index, &snap);
    if (snap.pending_tail != InvalidBlockNumber) {
        Buffer tb = ReadBuffer(index, snap.pending_tail);
        LockBuffer(tb, BUFFER_LOCK_SHARE);
        end_blk = snap.pending_tail;
        end_off = ((PageHeader)BufferGetPage(tb))->pd_lower;
        UnlockReleaseBuffer(tb);
    }
    LockBuffer(mb, BUFFER_LOCK_UNLOCK);

    // Which segments to rewrite: all when asked; else those where rows died (a segment without
    // dead rows has nothing to drop, so a few dead rows cost a rewrite of their segments only)
    // and, once there are kMergeSegmentsAt segments, all but the largest (size-tiered: the big
    // one is not rewritten for every small merge); else none, and only the pending list becomes
    // a new segment.
    bool full = force_full;
    bool take[kMaxSegments] = {false};
    bool any_taken = false;
    if (full) {
        for (uint32 i = 0; i < snap.nsegments; ++i) take[i] = any_taken = true;
    } else {
        for (uint32 i = 0; i < snap.nsegments; ++i)
            if (segment_has_dead(index, snap.seg[i], cb, cbs, page)) take[i] = any_taken = true;
        if (snap.nsegments >= (uint32)kMergeSegmentsAt) {
            uint32 big = 0;
            for (uint32 i = 1; i < snap.nsegments; ++i)
                if (snap.seg[i].npostings > snap.seg[big].npostings) big = i;
            for (uint32 i = 0; i < snap.nsegments; ++i)
                if (i != big) take[i] = any_taken = true;
        }
        // Every segment taken: that is a full rewrite (the counts are recomputed exactly).
        full = any_taken;
        for (uint32 i = 0; i < snap.nsegments; ++i) full = full && take[i];
    }
    bool pending_nonempty = snap.pending_count > 0;
    if (!any_taken && !pending_nonempty) {
        ReleaseBuffer(mb);
        return 0;
    }

    uint32 growth = snap.growth;
    const Partitioning& parts = partitioning_for(growth);
    // Pending entries up to the snapshot's end.
    int64 npend = 0;
    uint32 ppages = 0;
    PendingEntry* pend =
        read_pending(index, snap.pending_head, snap.pending_head_off, end_blk, end_off, &npend, &ppages);
    // The pending list alone (the usual merge, during inserts) is sorted in memory when its
    // postings fit in the larger of mem_kb and kMergeInMemoryBytes: the list is bounded by
    // pending_list_limit and already held in memory here; segments being rewritten go through
    // tuplesort, which spills to disk past mem_kb.
    SegmentSorter* s = nullptr;
    if (!any_taken) {
        uint64 np = 0;
        for (int64 k = 0; k < npend; ++k) np += pend[k].sig.size;
        uint64 bytes = np * sizeof(PostingRecord) + (uint64)npend * sizeof(DocRecord);
        if (bytes <= Max((uint64)mem_kb * 1024, kMergeInMemoryBytes)) s = sorter_begin_in_memory(np, (uint64)npend);
    }
    if (s == nullptr) s = sorter_begin(mem_kb);
    double removed = 0;
    uint32* gone = (uint32*)palloc0(sizeof(uint32) * kMaxPartitions);  // dead rows per partition
    BlockList old = {nullptr, 0, 0};
    for (uint32 i = 0; i < snap.nsegments; ++i)
        if (take[i]) {
            feed_segment(index, snap.seg[i], cb, cbs, s, page, page2, &removed, parts, gone);
            collect_segment(index, snap.seg[i], page, &old);
        }
    uint32 pend_removed_pages = 0;
    for (int64 k = 0; k < npend; ++k) {
        ItemPointerData t;
        id_to_tid(pend[k].id, &t);
        if (cb && cb(&t, cbs)) {
            removed += 1;
            gone[parts.partition_of(pend[k].sig.length)]++;
            continue;
        }
        sorter_add(s, pend[k].id, pend[k].sig, parts.partition_of(pend[k].sig.length));
    }
    // Pending pages before the snapshot's end page are consumed entirely.
    ChainWalk walk;
    chain_walk_init(&walk, index);
    for (BlockNumber b = snap.pending_head; b != InvalidBlockNumber && b != end_blk; chain_step(&walk, b)) {
        read_page_copy(index, b, page, kPendingPage);
        push_block(&old, b);
        pend_removed_pages++;
        b = opaque_of((Page)page)->next;
    }
    uint32* part_docs = (uint32*)palloc0(sizeof(uint32) * kMaxPartitions);
    SegmentDesc seg;
    SegmentHashes keys = {nullptr, 0, false};
    sorter_finish(s, index, growth, &seg, part_docs, false, &keys);

    // Switch the metapage to the new structure.
    LockBuffer(mb, BUFFER_LOCK_EXCLUSIVE);
    GenericXLogState* st = GenericXLogStart(index);
    MetaData* m = meta_of(GenericXLogRegisterBuffer(st, mb, 0));
    if (full) {
        m->nsegments = 0;
        for (int i = 0; i < kMaxSegments; ++i) m->seg[i].root = InvalidBlockNumber;
        for (int i = 0; i < kMaxPartitions; ++i) {
            uint32 since = m->part_docs[i] - snap.part_docs[i];  // inserted after the snapshot
            m->part_docs[i] = part_docs[i] + since;
        }
        m->total_docs = seg.ndocs + (m->total_docs - snap.total_docs);
    } else {
        // Rows moved, and the dead ones went away.
        m->total_docs -= (uint64)removed;
        for (int i = 0; i < kMaxPartitions; ++i)
            m->part_docs[i] -= gone[i] < m->part_docs[i] ? gone[i] : m->part_docs[i];
        uint32 n = 0;
        for (uint32 i = 0; i < m->nsegments; ++i)
            if (!take[i]) m->seg[n++] = m->seg[i];
        for (uint32 i = n; i < (uint32)kMaxSegments; ++i) m->seg[i].root = InvalidBlockNumber;
        m->nsegments = n;
    }
    if (seg.ndocs > 0) {
        seg.serial = m->next_serial++;
        m->seg[m->nsegments++] = seg;
    }
    if (end_blk != InvalidBlockNumber) {
        m->pending_head = end_blk;
        m->pending_head_off = end_off;
        m->pending_count -= (uint64)npend;
        m->pending_pages -= pend_removed_pages;
        m->pending_gen++;
    }
    GenericXLogFinish(st);
    LockBuffer(mb, BUFFER_LOCK_UNLOCK);
    // The new segment is published under its serial: this backend's searches may use its filter.
    if (seg.ndocs > 0) segment_filter_remember(index, seg.serial, &keys);
    if (keys.hashes != nullptr) pfree(keys.hashes);
    // Wait until no reader that saw the old structure still holds the metapage pin.
    LockBufferForCleanup(mb);
    UnlockReleaseBuffer(mb);
    if (old.n > 0) free_blocks(index, old.b, old.n);
    return removed;
}

// rewrite_locked() under the rewrite lock, waiting for it.
double rewrite(Relation index, IndexBulkDeleteCallback cb, void* cbs, bool force_full) {
    LockPage(index, kMetaBlock, ExclusiveLock);
    double removed = rewrite_locked(index, cb, cbs, force_full, maintenance_work_mem);
    UnlockPage(index, kMetaBlock, ExclusiveLock);
    return removed;
}

// Fills the statistics VACUUM reports for the index.
void fill_stats(Relation index, IndexBulkDeleteResult* stats) {
    MetaData m;
    read_meta(index, &m);
    stats->num_pages = RelationGetNumberOfBlocks(index);
    stats->num_index_tuples = (double)(m.total_docs + (has_null_list(&m) ? m.null_count : 0));
    stats->estimated_count = false;
}

}  // namespace

double vacuum_null_list(Relation index, IndexBulkDeleteCallback cb, void* cbs) {
    MetaData m;
    read_meta(index, &m);
    if (!has_null_list(&m) || cb == nullptr) return 0;
    double removed = 0;
    char* page = (char*)palloc(BLCKSZ);
    ChainWalk walk;
    chain_walk_init(&walk, index);
    // Page by page, each compacted under the metapage lock and its own (the order inserts take
    // them), so null_count always equals the ids in the list. Pages stay in the chain even when
    // empty: readers may be walking it, and only appends at the tail ever add to it. Readers copy
    // a page under its share lock, so they see it before or after, never halfway.
    for (BlockNumber blk = m.null_head; blk != InvalidBlockNumber; chain_step(&walk, blk)) {
        read_page_copy(index, blk, page, kNullPage);
        BlockNumber next = opaque_of((Page)page)->next;
        bool any_dead = false;
        for (uint32 pos = kContentStart; pos + 8 <= ((PageHeader)page)->pd_lower && !any_dead; pos += 8) {
            uint64 id;
            std::memcpy(&id, page + pos, 8);
            ItemPointerData t;
            id_to_tid(id, &t);
            any_dead = cb(&t, cbs);
        }
        if (any_dead) {
            Buffer mb = ReadBuffer(index, kMetaBlock);
            LockBuffer(mb, BUFFER_LOCK_EXCLUSIVE);
            Buffer b = ReadBuffer(index, blk);
            LockBuffer(b, BUFFER_LOCK_EXCLUSIVE);
            GenericXLogState* st = GenericXLogStart(index);
            MetaData* mm = meta_of(GenericXLogRegisterBuffer(st, mb, 0));
            Page p = GenericXLogRegisterBuffer(st, b, 0);
            uint32 lower = ((PageHeader)p)->pd_lower, out = kContentStart;
            for (uint32 pos = kContentStart; pos + 8 <= lower; pos += 8) {
                uint64 id;
                std::memcpy(&id, (char*)p + pos, 8);
                ItemPointerData t;
                id_to_tid(id, &t);
                if (cb(&t, cbs)) {
                    removed += 1;
                    mm->null_count--;
                    continue;
                }
                if (out != pos) std::memmove((char*)p + out, (char*)p + pos, 8);
                out += 8;
            }
            ((PageHeader)p)->pd_lower = (uint16)out;
            GenericXLogFinish(st);
            UnlockReleaseBuffer(b);
            UnlockReleaseBuffer(mb);
        }
        blk = next;
    }
    pfree(page);
    return removed;
}

bool merge_pending_if_free(Relation index) {
    if (!ConditionalLockPage(index, kMetaBlock, ExclusiveLock)) return false;
    rewrite_locked(index, nullptr, nullptr, false, work_mem);
    UnlockPage(index, kMetaBlock, ExclusiveLock);
    return true;
}

IndexBulkDeleteResult* ambulkdelete(IndexVacuumInfo* info, IndexBulkDeleteResult* stats,
                                    IndexBulkDeleteCallback callback, void* callback_state) {
    if (stats == nullptr) stats = (IndexBulkDeleteResult*)palloc0(sizeof(IndexBulkDeleteResult));
    stats->tuples_removed += rewrite(info->index, callback, callback_state, false);
    stats->tuples_removed += vacuum_null_list(info->index, callback, callback_state);
    fill_stats(info->index, stats);
    return stats;
}

IndexBulkDeleteResult* amvacuumcleanup(IndexVacuumInfo* info, IndexBulkDeleteResult* stats) {
    if (info->analyze_only) return stats;
    if (stats == nullptr) {
        // No bulk delete in this VACUUM (e.g. an insert-only table): merge the pending list.
        stats = (IndexBulkDeleteResult*)palloc0(sizeof(IndexBulkDeleteResult));
        rewrite(info->index, nullptr, nullptr, false);
    }
    IndexFreeSpaceMapVacuum(info->index);
    fill_stats(info->index, stats);
    return stats;
}

}  // namespace spotsigs::pg::index
