// aminsert: append (TID, spotsig) to the pending list, WAL-logged, serialized by the metapage lock.
//
// C-style code: no C++ objects with destructors live across PostgreSQL calls.
#include "pg/index/index.hpp"

#include <cstring>

#include "pg/boundary.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg::index {

// Initializes page as an empty pending page.
static void init_pending(Page page) {
    init_page(page, kPendingPage, 0);
}

// Appends bytes [src, src+len) to the pending list under the already locked metapage.
static void pending_append(Relation index, Buffer mbuf, const char* src, uint32 len, uint64 length, bool has_sig) {
    Page mpage = BufferGetPage(mbuf);
    MetaData* m = meta_of(mpage);
    const uint32 cap = BLCKSZ - kContentStart - MAXALIGN(sizeof(PageOpaque));
    Buffer tbuf;
    GenericXLogState* st;
    if (m->pending_tail == InvalidBlockNumber) {
        // The first pending page.
        tbuf = new_buffer(index);
        st = GenericXLogStart(index);
        MetaData* mm = meta_of(GenericXLogRegisterBuffer(st, mbuf, 0));
        init_pending(GenericXLogRegisterBuffer(st, tbuf, GENERIC_XLOG_FULL_IMAGE));
        mm->pending_head = mm->pending_tail = BufferGetBlockNumber(tbuf);
        mm->pending_head_off = kContentStart;
        mm->pending_pages = 1;
        GenericXLogFinish(st);
    } else {
        tbuf = ReadBuffer(index, m->pending_tail);
        LockBuffer(tbuf, BUFFER_LOCK_EXCLUSIVE);
    }
    Page tpage = BufferGetPage(tbuf);
    if (PageIsNew(tpage) || opaque_of(tpage)->kind != kPendingPage || opaque_of(tpage)->next != InvalidBlockNumber)
        corrupted(index, "pending list tail is not a last pending page", BufferGetBlockNumber(tbuf));
    uint32 avail = content_end(tpage) - ((PageHeader)tpage)->pd_lower;
    uint32 first = len < avail ? len : avail;
    uint32 rest = len - first;
    // Pages after the tail are written first, unreachable until the final record links them.
    BlockNumber first_new = InvalidBlockNumber;
    uint32 newpages = 0;
    if (rest > 0) {
        newpages = (rest + cap - 1) / cap;
        BlockNumber* blks = (BlockNumber*)palloc(sizeof(BlockNumber) * newpages);
        for (uint32 i = 0; i < newpages; ++i) blks[i] = alloc_block(index);
        char* img = (char*)palloc(BLCKSZ);
        const char* p = src + first;
        for (uint32 i = 0; i < newpages; ++i) {
            init_pending((Page)img);
            uint32 k = rest < cap ? rest : cap;
            std::memcpy(img + kContentStart, p, k);
            ((PageHeader)img)->pd_lower = (uint16)(kContentStart + k);
            opaque_of((Page)img)->next = i + 1 < newpages ? blks[i + 1] : InvalidBlockNumber;
            write_page(index, blks[i], (Page)img);
            p += k;
            rest -= k;
        }
        first_new = blks[0];
        BlockNumber last = blks[newpages - 1];
        pfree(img);
        pfree(blks);
        st = GenericXLogStart(index);
        MetaData* mm = meta_of(GenericXLogRegisterBuffer(st, mbuf, 0));
        Page tp = GenericXLogRegisterBuffer(st, tbuf, 0);
        std::memcpy((char*)tp + ((PageHeader)tp)->pd_lower, src, first);
        ((PageHeader)tp)->pd_lower += first;
        opaque_of(tp)->next = first_new;
        mm->pending_tail = last;
        mm->pending_pages += newpages;
        mm->pending_count++;
        mm->total_docs++;
        if (has_sig) mm->part_docs[partitioning_for(mm->growth).partition_of(length)]++;
        GenericXLogFinish(st);
    } else {
        st = GenericXLogStart(index);
        MetaData* mm = meta_of(GenericXLogRegisterBuffer(st, mbuf, 0));
        Page tp = GenericXLogRegisterBuffer(st, tbuf, 0);
        std::memcpy((char*)tp + ((PageHeader)tp)->pd_lower, src, first);
        ((PageHeader)tp)->pd_lower += first;
        mm->pending_count++;
        mm->total_docs++;
        if (has_sig) mm->part_docs[partitioning_for(mm->growth).partition_of(length)]++;
        GenericXLogFinish(st);
    }
    UnlockReleaseBuffer(tbuf);
}

// Appends a NULL row's id to the NULL list (format 5 on; a format 4 index records none, and the
// scans that would need them refuse it). Locks: the metapage, then the tail page, as VACUUM does.
static void null_append(Relation index, ItemPointer heap_tid) {
    uint64 id = tid_to_id(heap_tid);
    Buffer mbuf = ReadBuffer(index, kMetaBlock);
    LockBuffer(mbuf, BUFFER_LOCK_EXCLUSIVE);
    MetaData* m = meta_of(BufferGetPage(mbuf));
    check_meta(index, m);
    if (!has_null_list(m)) {
        UnlockReleaseBuffer(mbuf);
        return;
    }
    Buffer tbuf = InvalidBuffer;
    if (m->null_tail != InvalidBlockNumber) {
        check_block(index, m->null_tail);
        tbuf = ReadBuffer(index, m->null_tail);
        LockBuffer(tbuf, BUFFER_LOCK_EXCLUSIVE);
        Page tp = BufferGetPage(tbuf);
        if (PageIsNew(tp) || opaque_of(tp)->kind != kNullPage || opaque_of(tp)->next != InvalidBlockNumber)
            corrupted(index, "NULL list tail is not a last NULL page", m->null_tail);
    }
    GenericXLogState* st;
    if (tbuf != InvalidBuffer &&
        (uint32)((PageHeader)BufferGetPage(tbuf))->pd_lower + 8 <= content_end(BufferGetPage(tbuf))) {
        st = GenericXLogStart(index);
        MetaData* mm = meta_of(GenericXLogRegisterBuffer(st, mbuf, 0));
        Page tp = GenericXLogRegisterBuffer(st, tbuf, 0);
        std::memcpy((char*)tp + ((PageHeader)tp)->pd_lower, &id, 8);
        ((PageHeader)tp)->pd_lower += 8;
        mm->null_count++;
        GenericXLogFinish(st);
    } else {
        // A new last page, linked from the old tail (or the first one, from the metapage).
        Buffer nbuf = new_buffer(index);
        st = GenericXLogStart(index);
        MetaData* mm = meta_of(GenericXLogRegisterBuffer(st, mbuf, 0));
        Page np = GenericXLogRegisterBuffer(st, nbuf, GENERIC_XLOG_FULL_IMAGE);
        init_page(np, kNullPage, 0);
        std::memcpy((char*)np + kContentStart, &id, 8);
        ((PageHeader)np)->pd_lower = kContentStart + 8;
        BlockNumber nblk = BufferGetBlockNumber(nbuf);
        if (tbuf != InvalidBuffer) opaque_of(GenericXLogRegisterBuffer(st, tbuf, 0))->next = nblk;
        else mm->null_head = nblk;
        mm->null_tail = nblk;
        mm->null_count++;
        GenericXLogFinish(st);
        UnlockReleaseBuffer(nbuf);
    }
    if (tbuf != InvalidBuffer) UnlockReleaseBuffer(tbuf);
    UnlockReleaseBuffer(mbuf);
}

bool aminsert(Relation index, Datum* values, bool* isnull, ItemPointer heap_tid, Relation, IndexUniqueCheck, bool,
              IndexInfo*) {
    if (isnull[0]) {
        null_append(index, heap_tid);
        return false;
    }
    MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "spotsigs insert", ALLOCSET_SMALL_SIZES);
    MemoryContext old = MemoryContextSwitchTo(tmp);
    struct varlena* v = fetch_spotsig(values[0]);
    MultisetView m;
    pg_entry([&] {
        m = view_of(v);
        return Datum(0);
    });
    uint32 payload = VARSIZE_ANY_EXHDR(v);
    uint32 len = kPendingHeader + payload;
    char* entry = (char*)palloc(len);
    uint64 id = tid_to_id(heap_tid);
    std::memcpy(entry, &id, 8);
    std::memcpy(entry + 8, &payload, 4);
    std::memcpy(entry + kPendingHeader, VARDATA_ANY(v), payload);

    Buffer mbuf = ReadBuffer(index, kMetaBlock);
    LockBuffer(mbuf, BUFFER_LOCK_EXCLUSIVE);
    check_meta(index, meta_of(BufferGetPage(mbuf)));
    pending_append(index, mbuf, entry, len, m.length, true);
    uint64 pending_kb = (uint64)meta_of(BufferGetPage(mbuf))->pending_pages * (BLCKSZ / 1024);
    UnlockReleaseBuffer(mbuf);
    // Past the size limit, this insert merges the pending list (unless a merge is under way).
    int limit = index_pending_limit(index);
    if (limit > 0 && pending_kb > (uint64)limit) merge_pending_if_free(index);

    MemoryContextSwitchTo(old);
    MemoryContextDelete(tmp);
    return false;
}

}  // namespace spotsigs::pg::index
