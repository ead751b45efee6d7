// Page, metapage, block allocation and list-reading helpers shared by the AM phases.
//
// Code in this file is plain C-style: no C++ objects with destructors are alive when a
// PostgreSQL function may raise an ERROR, so longjmp never skips a destructor.
#include "pg/index/index.hpp"

extern "C" {
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
}

#include <cstring>

#include "core/signature/packed.hpp"

namespace spotsigs::pg::index {

void init_page(Page page, PageKind kind, uint16 level) {
    PageInit(page, BLCKSZ, sizeof(PageOpaque));
    PageOpaque* o = opaque_of(page);
    o->next = InvalidBlockNumber;
    o->kind = kind;
    o->flags = 0;
    o->level = level;
    o->page_id = kSpotsigsPageId;
}

void init_metapage(Page page, uint32 growth) {
    init_page(page, kMetaPage, 0);
    MetaData* m = meta_of(page);
    std::memset(m, 0, sizeof(MetaData));
    m->magic = kMagic;
    m->version = kVersion;
    m->growth = growth;
    m->pending_head = InvalidBlockNumber;
    m->pending_tail = InvalidBlockNumber;
    m->nparts = partitioning_for(growth).count();
    m->next_serial = 1;
    m->null_head = InvalidBlockNumber;
    m->null_tail = InvalidBlockNumber;
    for (int i = 0; i < kMaxSegments; ++i) m->seg[i].root = InvalidBlockNumber;
    ((PageHeader)page)->pd_lower = (uint16)(((char*)m + sizeof(MetaData)) - (char*)page);
}

uint32 index_growth(Relation index) {
    Options* o = (Options*)index->rd_options;
    return o ? (uint32)o->growth : 10;
}

int index_pending_limit(Relation index) {
    Options* o = (Options*)index->rd_options;
    return o ? o->pending_limit : 4096;
}

const Partitioning& partitioning_for(uint32 growth) {
    // One Partitioning per growth value, built once per backend (growth is at most 100).
    static Partitioning* cache[101] = {nullptr};
    if (growth > 100) growth = 100;
    if (cache[growth] == nullptr) cache[growth] = new Partitioning(growth);
    return *cache[growth];
}

void corrupted(Relation index, const char* what, BlockNumber blk) {
    ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                    errmsg("spotsigs index \"%s\" is corrupted", RelationGetRelationName(index)),
                    errdetail("%s (block %u).", what, blk)));
    pg_unreachable();
}

void check_meta(Relation index, const MetaData* m) {
    if (m->magic != kMagic) corrupted(index, "bad metapage magic number", kMetaBlock);
    if (m->version < kOldestVersion || m->version > kVersion)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("spotsigs index \"%s\" has version %u, this build reads versions %u to %u",
                               RelationGetRelationName(index), m->version, kOldestVersion, kVersion),
                        errhint("REINDEX the index.")));
    if (m->nsegments > (uint32)kMaxSegments || m->nparts > (uint32)kMaxPartitions)
        corrupted(index, "metapage counts out of range", kMetaBlock);
    // A directory page holds hundreds of 12-byte entries and a level is added only above a
    // level of two pages or more, so 2^32 blocks need fewer than 5 levels. A recorded height
    // past 32 is corrupt, and readers that recurse once per level must not trust it.
    for (uint32 s = 0; s < m->nsegments; ++s)
        if (m->seg[s].height > 32) corrupted(index, "segment height out of range", kMetaBlock);
}

void require_null_list(Relation index, const MetaData* m) {
    if (has_null_list(m)) return;
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("spotsigs index \"%s\" has version %u, which does not record rows whose value is NULL",
                           RelationGetRelationName(index), m->version),
                    errdetail("This scan must return every row of the table: it has no condition, or it is "
                              "ordered by <-> and read past the last row with a value."),
                    errhint("REINDEX the index.")));
}

uint64* read_null_ids(Relation index, const MetaData* m, int64* n) {
    int64 cap = 64, cnt = 0;
    uint64* ids = (uint64*)palloc(sizeof(uint64) * cap);
    char* page = (char*)palloc(BLCKSZ);
    ChainWalk walk;
    chain_walk_init(&walk, index);
    for (BlockNumber blk = m->null_head; blk != InvalidBlockNumber; chain_step(&walk, blk)) {
        read_page_copy(index, blk, page, kNullPage);
        uint32 lower = ((PageHeader)page)->pd_lower;
        if ((lower - kContentStart) % 8 != 0) corrupted(index, "NULL page of a partial id", blk);
        for (uint32 pos = kContentStart; pos < lower; pos += 8) {
            if (cnt == cap) {
                cap *= 2;
                ids = (uint64*)repalloc(ids, sizeof(uint64) * cap);
            }
            std::memcpy(&ids[cnt++], page + pos, 8);
        }
        blk = opaque_of((Page)page)->next;
    }
    pfree(page);
    *n = cnt;
    return ids;
}

void read_meta(Relation index, MetaData* out) {
    Buffer buf = ReadBuffer(index, kMetaBlock);
    LockBuffer(buf, BUFFER_LOCK_SHARE);
    std::memcpy(out, meta_of(BufferGetPage(buf)), sizeof(MetaData));
    UnlockReleaseBuffer(buf);
    check_meta(index, out);
}

// ERROR unless p (block blk) is a live page of kind expect with sane content bounds. buf, when
// valid, is released first.
static void check_page(Relation index, Page p, BlockNumber blk, PageKind expect, Buffer buf) {
    const char* bad = nullptr;
    if (PageIsNew(p) || PageGetSpecialSize(p) != MAXALIGN(sizeof(PageOpaque))) {
        bad = "unexpected empty or foreign page";
    } else {
        PageOpaque* o = opaque_of(p);
        uint16 lower = ((PageHeader)p)->pd_lower;
        if (o->kind != expect || (o->flags & kFlagDeleted)) bad = "page of an unexpected kind";
        else if (lower < kContentStart || lower > ((PageHeader)p)->pd_upper ||
                 ((PageHeader)p)->pd_upper > content_end(p))
            bad = "page content bounds out of range";
    }
    if (bad == nullptr) return;
    if (BufferIsValid(buf)) UnlockReleaseBuffer(buf);
    corrupted(index, bad, blk);
}

// The block count of the index this backend saw last, by relfilenode. An index's storage never
// shrinks under one relfilenode (this access method never truncates; REINDEX and TRUNCATE give a
// new one), so a block below the count seen exists; only a block at or past it needs a fresh
// count (one lseek). A reused relfilenode can only make the count too high, which lets a bad
// link through to ReadBuffer's own error, never rejects a good one.
static SPOTSIGS_STORAGE_T seen_node;
static BlockNumber seen_nblocks = 0;

// The index's block count, fresh unless blk is already known to lie below it.
static BlockNumber nblocks_covering(Relation index, BlockNumber blk) {
    if (!SPOTSIGS_STORAGE_EQUAL(seen_node, SPOTSIGS_STORAGE_OF(index)) || blk >= seen_nblocks) {
        seen_nblocks = RelationGetNumberOfBlocks(index);
        seen_node = SPOTSIGS_STORAGE_OF(index);
    }
    return seen_nblocks;
}

void check_block(Relation index, BlockNumber blk) {
    if (blk == InvalidBlockNumber || blk == kMetaBlock || blk >= nblocks_covering(index, blk))
        corrupted(index, "link to a block outside the index", blk);
}

void chain_step(ChainWalk* w, BlockNumber blk) {
    CHECK_FOR_INTERRUPTS();
    // A chain of distinct pages has at most nblocks - 1 of them (the metapage is in none), and
    // a walk steps at most once per page (callers step on each link they follow, some also on
    // the final InvalidBlockNumber), so more steps than that mean a page came round again.
    w->steps++;
    if (w->steps >= nblocks_covering(w->index, w->steps)) corrupted(w->index, "page chain runs in a cycle", blk);
}

void read_page_copy(Relation index, BlockNumber blk, char* dst, PageKind expect) {
    CHECK_FOR_INTERRUPTS();
    check_block(index, blk);
    Buffer buf = ReadBuffer(index, blk);
    LockBuffer(buf, BUFFER_LOCK_SHARE);
    std::memcpy(dst, BufferGetPage(buf), BLCKSZ);
    UnlockReleaseBuffer(buf);
    check_page(index, (Page)dst, blk, expect, InvalidBuffer);
}

Buffer pin_unlocked(Relation index, BlockNumber blk) {
    CHECK_FOR_INTERRUPTS();
    check_block(index, blk);
    return ReadBuffer(index, blk);
}

void lock_pinned(Relation index, Buffer buf, PageKind expect) {
    LockBuffer(buf, BUFFER_LOCK_SHARE);
    check_page(index, BufferGetPage(buf), BufferGetBlockNumber(buf), expect, buf);
}

Buffer pin_page(Relation index, BlockNumber blk, PageKind expect) {
    Buffer buf = pin_unlocked(index, blk);
    lock_pinned(index, buf, expect);
    return buf;
}

Buffer new_buffer(Relation index) {
    // Recycled pages first: the FSM only lists pages VACUUM marked deleted.
    for (;;) {
        BlockNumber blk = GetFreeIndexPage(index);
        if (blk == InvalidBlockNumber) break;
        Buffer buf = ReadBuffer(index, blk);
        if (ConditionalLockBuffer(buf)) {
            Page p = BufferGetPage(buf);
            if (PageIsNew(p) ||
                (PageGetSpecialSize(p) == MAXALIGN(sizeof(PageOpaque)) && (opaque_of(p)->flags & kFlagDeleted)))
                return buf;
            LockBuffer(buf, BUFFER_LOCK_UNLOCK);
        }
        ReleaseBuffer(buf);
    }
    bool local = RELATION_IS_LOCAL(index);
    if (!local) LockRelationForExtension(index, ExclusiveLock);
    Buffer buf = ReadBuffer(index, P_NEW);
    LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
    if (!local) UnlockRelationForExtension(index, ExclusiveLock);
    return buf;
}

BlockNumber alloc_block(Relation index) {
    Buffer buf = new_buffer(index);
    BlockNumber blk = BufferGetBlockNumber(buf);
    UnlockReleaseBuffer(buf);
    return blk;
}

void write_page(Relation index, BlockNumber blk, Page image) {
    Buffer buf = ReadBuffer(index, blk);
    LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
    GenericXLogState* st = GenericXLogStart(index);
    Page page = GenericXLogRegisterBuffer(st, buf, GENERIC_XLOG_FULL_IMAGE);
    std::memcpy(page, image, BLCKSZ);
    GenericXLogFinish(st);
    UnlockReleaseBuffer(buf);
}

void free_blocks(Relation index, const BlockNumber* blks, int n) {
    for (int i = 0; i < n; i += MAX_GENERIC_XLOG_PAGES) {
        int m = n - i < MAX_GENERIC_XLOG_PAGES ? n - i : MAX_GENERIC_XLOG_PAGES;
        Buffer bufs[MAX_GENERIC_XLOG_PAGES];
        GenericXLogState* st = GenericXLogStart(index);
        for (int k = 0; k < m; ++k) {
            bufs[k] = ReadBuffer(index, blks[i + k]);
            LockBuffer(bufs[k], BUFFER_LOCK_EXCLUSIVE);
            Page p = GenericXLogRegisterBuffer(st, bufs[k], 0);
            init_page(p, kDataPage, 0);
            opaque_of(p)->flags = kFlagDeleted;
        }
        GenericXLogFinish(st);
        for (int k = 0; k < m; ++k) {
            UnlockReleaseBuffer(bufs[k]);
            RecordFreeIndexPage(index, blks[i + k]);
        }
    }
}

// Reads a varint without throwing; false when it runs past end.
static bool get_varint_nothrow(const unsigned char*& pos, const unsigned char* end, uint64* v) {
    uint64 x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (pos >= end) return false;
        unsigned char b = *pos++;
        x |= (uint64)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

bool parse_record(const unsigned char*& pos, const unsigned char* end, uint64* hash, int* nparts, PartRef* parts) {
    if (end - pos < 8) return false;
    std::memcpy(hash, pos, 8);
    pos += 8;
    uint64 n;
    if (!get_varint_nothrow(pos, end, &n) || n == 0 || n > (uint64)kMaxPartitions) return false;
    uint64 part = 0;
    for (uint64 i = 0; i < n; ++i) {
        uint64 dp, count, tag;
        if (!get_varint_nothrow(pos, end, &dp) || !get_varint_nothrow(pos, end, &count) ||
            !get_varint_nothrow(pos, end, &tag))
            return false;
        part = i == 0 ? dp : part + dp;
        if ((i > 0 && dp == 0) || part >= (uint64)kMaxPartitions || count == 0 || count > 0xffffffffULL) return false;
        PartRef& r = parts[i];
        r.part = (uint32)part;
        r.count = (uint32)count;
        r.external = (tag & 1) != 0;
        if (r.external) {
            uint64 off;
            if (!get_varint_nothrow(pos, end, &off) || (tag >> 1) >= MaxBlockNumber || off >= BLCKSZ) return false;
            r.blk = (BlockNumber)(tag >> 1);
            r.off = (uint32)off;
            r.bytes = nullptr;
            r.nbytes = 0;
        } else {
            uint64 nb = tag >> 1;
            if (nb > (uint64)(end - pos)) return false;
            r.blk = InvalidBlockNumber;
            r.off = 0;
            r.bytes = pos;
            r.nbytes = (uint32)nb;
            pos += nb;
        }
    }
    *nparts = (int)n;
    return true;
}

// Positions it at the piece starting at offset off of the chain page it->page (block blk).
static void list_iter_piece(ListIter* it, BlockNumber blk, uint32 off) {
    Page p = (Page)it->page;
    uint32 lower = ((PageHeader)p)->pd_lower;
    if (off < kContentStart || off + 2 > lower) corrupted(it->index, "posting run outside its chain page", blk);
    uint16 n;
    std::memcpy(&n, it->page + off, 2);
    if (n == 0) corrupted(it->index, "empty posting run", blk);
    it->pos = (const unsigned char*)it->page + off + 2;
    it->end = (const unsigned char*)it->page + lower;
    it->piece_left = n;
    it->have_prev = false;
    it->cur_blk = blk;
}

void list_iter_init(ListIter* it, Relation index, const PartRef* ref, char* pagebuf) {
    it->index = index;
    it->remaining = ref->count;
    it->external = ref->external;
    it->have_prev = false;
    it->page = pagebuf;
    chain_walk_init(&it->walk, index);
    if (ref->external) {
        read_page_copy(index, ref->blk, it->page, kChainPage);
        list_iter_piece(it, ref->blk, ref->off);
    } else {
        it->pos = ref->bytes;
        it->end = ref->bytes + ref->nbytes;
        it->piece_left = ref->count;
        it->cur_blk = InvalidBlockNumber;
    }
}

bool list_iter_next(ListIter* it, Posting* out) {
    if (it->remaining == 0) {
        if (!it->external && it->pos != it->end)
            corrupted(it->index, "trailing bytes after an inline list", it->cur_blk);
        return false;
    }
    if (it->piece_left == 0) {
        if (!it->external) corrupted(it->index, "inline list shorter than its count", it->cur_blk);
        BlockNumber next = opaque_of((Page)it->page)->next;
        chain_step(&it->walk, next);
        read_page_copy(it->index, next, it->page, kChainPage);
        list_iter_piece(it, next, kContentStart);
    }
    if (!decode_posting_nothrow(it->pos, it->end, *out, it->have_prev ? &it->prev : nullptr))
        corrupted(it->index, "malformed posting", it->cur_blk);
    it->prev = *out;
    it->have_prev = true;
    it->piece_left--;
    it->remaining--;
    return true;
}

PendingEntry* read_pending(Relation index, BlockNumber blk, uint32 off, BlockNumber end_blk, uint32 end_off, int64* n,
                           uint32* npages, BlockNumber* stop_blk, uint32* stop_off) {
    int64 cap = 16, cnt = 0;
    PendingEntry* out = (PendingEntry*)palloc(sizeof(PendingEntry) * cap);
    char* page = (char*)palloc(BLCKSZ);
    uint32 pages = 0;
    if (stop_blk != nullptr) {
        *stop_blk = blk;
        *stop_off = off;
    }
    if (blk == InvalidBlockNumber) {
        *n = 0;
        *npages = 0;
        return out;
    }
    read_page_copy(index, blk, page, kPendingPage);
    pages++;
    uint32 pos = off;
    ChainWalk walk;
    chain_walk_init(&walk, index);
    // Copies want bytes of the stream into dst, moving to the next page when one is used up.
    auto take = [&](char* dst, uint32 want) {
        while (want > 0) {
            uint32 lower = ((PageHeader)page)->pd_lower;
            if (pos >= lower) {
                BlockNumber next = opaque_of((Page)page)->next;
                if (next == InvalidBlockNumber) corrupted(index, "pending entry cut short", blk);
                chain_step(&walk, next);
                read_page_copy(index, next, page, kPendingPage);
                blk = next;
                pos = kContentStart;
                pages++;
                continue;
            }
            uint32 k = lower - pos < want ? lower - pos : want;
            std::memcpy(dst, page + pos, k);
            dst += k;
            want -= k;
            pos += k;
        }
    };
    for (;;) {
        if (end_blk != InvalidBlockNumber && blk == end_blk && pos >= end_off) break;
        uint32 lower = ((PageHeader)page)->pd_lower;
        if (pos >= lower) {
            if (end_blk != InvalidBlockNumber && blk == end_blk) break;
            BlockNumber next = opaque_of((Page)page)->next;
            if (next == InvalidBlockNumber) break;
            chain_step(&walk, next);
            read_page_copy(index, next, page, kPendingPage);
            blk = next;
            pos = kContentStart;
            pages++;
            continue;
        }
        char hdr[kPendingHeader];
        take(hdr, kPendingHeader);
        uint64 id;
        uint32 nbytes;
        std::memcpy(&id, hdr, 8);
        std::memcpy(&nbytes, hdr + 8, 4);
        if (nbytes < 12 || nbytes > MaxAllocSize - 16) corrupted(index, "pending entry size out of range", blk);
        // Place the payload so that its hashes (12 bytes in) are 8-byte aligned.
        char* buf = (char*)palloc(nbytes + 16);
        char* data = buf + 4;
        take(data, nbytes);
        MultisetView v;
        bool ok = true;
        try {
            v = unpack((const unsigned char*)data, nbytes);
        } catch (...) {
            ok = false;
        }
        if (!ok) corrupted(index, "malformed pending entry", blk);
        if (cnt == cap) {
            cap *= 2;
            out = (PendingEntry*)repalloc(out, sizeof(PendingEntry) * cap);
        }
        out[cnt].id = id;
        out[cnt].sig = v;
        cnt++;
        if (stop_blk != nullptr) {
            *stop_blk = blk;
            *stop_off = pos;
        }
    }
    pfree(page);
    *n = cnt;
    *npages = pages;
    return out;
}

}  // namespace spotsigs::pg::index
