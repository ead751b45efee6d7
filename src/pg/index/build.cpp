// Index build: sort postings within maintenance_work_mem, then write a segment bottom-up.
//
// C-style code: no C++ objects with destructors live across PostgreSQL calls.
#include "pg/index/index.hpp"

#include "core/index/posting_sort.hpp"

extern "C" {
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "commands/progress.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/smgr.h"
#include "utils/backend_progress.h"
#include "utils/tuplesort.h"
}

#include <cstring>

#include "pg/boundary.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg::index {

namespace {

constexpr uint32 kInlinePartMax = 200;     // larger partition lists go to the chain
constexpr uint32 kInlineRecordMax = 1500;  // inline bytes of one hash record at most
constexpr int kPartBuf = 64;               // postings of an inline list kept for re-coding
constexpr int kMaxLevels = 8;

// The page being filled on one level of the B-tree (0 = DATA).
struct LevelWriter {
    char* page;
    BlockNumber blk;
    uint64 first_hash;
    uint32 pages;
    bool open;
    uint32 nrec;      // records on the open page
    uint32 nsamples;  // DATA pages: offsets of every kSampleEvery-th record
    uint16 samples[BLCKSZ / 16];
};

// The state of one partition list of the record being built.
struct PartW {
    uint32 part;
    uint32 count;
    bool external;
    BlockNumber blk;
    uint32 off;
    uint32 inl_start;
    uint32 inl_len;
};

}  // namespace

struct SegmentWriter {
    Relation index;
    uint32 growth;
    LevelWriter lv[kMaxLevels];
    // chain stream
    char* chain;
    BlockNumber chain_blk;
    bool chain_open;
    uint32 piece_start;
    uint16 piece_n;
    Posting piece_prev;
    // record being built
    bool have_hash;
    uint64 hash;
    int nparts;
    PartW* parts;
    unsigned char* inl;
    uint32 inl_len;
    Posting buf[kPartBuf];
    int nbuf;
    unsigned char* rec;  // encoded record
    // document list
    bool docs_started;
    SegmentDesc desc;
    // the distinct hashes, when collected for a filter (segment_collect_hashes)
    bool collect;
    SegmentHashes keys;
    uint64 keys_cap;
};

// Writes level l's open page with next link nextblk and adds it to the level above when push.
static void level_flush(SegmentWriter* w, int l, BlockNumber nextblk, bool push);

// Bytes level l's open page still needs for a record of len bytes (DATA pages also keep a sample).
static uint32 level_need(const LevelWriter* L, int l, uint32 len) {
    return len + (l == 0 ? 2 * (L->nsamples + (L->nrec % kSampleEvery == 0 ? 1 : 0)) : 0);
}

// Appends len bytes (an entry starting with hash) to level l, opening pages as needed.
static void level_add(SegmentWriter* w, int l, const void* bytes, uint32 len, uint64 hash) {
    if (l >= kMaxLevels) elog(ERROR, "spotsigs index: B-tree too high");
    LevelWriter* L = &w->lv[l];
    if (L->open && content_end((Page)L->page) - ((PageHeader)L->page)->pd_lower < level_need(L, l, len)) {
        BlockNumber nb = alloc_block(w->index);
        level_flush(w, l, nb, true);
        L->blk = nb;
        L->open = true;
        init_page((Page)L->page, l == 0 ? kDataPage : kDirPage, (uint16)l);
        L->first_hash = hash;
        L->pages++;
        L->nrec = 0;
        L->nsamples = 0;
    }
    if (!L->open) {
        if (L->page == nullptr) L->page = (char*)palloc(BLCKSZ);
        L->blk = alloc_block(w->index);
        init_page((Page)L->page, l == 0 ? kDataPage : kDirPage, (uint16)l);
        L->first_hash = hash;
        L->open = true;
        L->pages++;
        L->nrec = 0;
        L->nsamples = 0;
        if (l == 0 && w->desc.first_data == InvalidBlockNumber) w->desc.first_data = L->blk;
    }
    PageHeader ph = (PageHeader)L->page;
    if (content_end((Page)L->page) - ph->pd_lower < level_need(L, l, len))
        elog(ERROR, "spotsigs index: record does not fit a page");
    if (l == 0 && L->nrec % kSampleEvery == 0) L->samples[L->nsamples++] = ph->pd_lower;
    std::memcpy(L->page + ph->pd_lower, bytes, len);
    ph->pd_lower += len;
    L->nrec++;
}

static void level_flush(SegmentWriter* w, int l, BlockNumber nextblk, bool push) {
    LevelWriter* L = &w->lv[l];
    opaque_of((Page)L->page)->next = nextblk;
    if (l == 0) {
        // The samples go at the end of the content area, between pd_upper and the special space.
        PageHeader ph = (PageHeader)L->page;
        uint16 at = (uint16)(ph->pd_special - 2 * L->nsamples);
        std::memcpy(L->page + at, L->samples, 2 * L->nsamples);
        ph->pd_upper = at;
    }
    write_page(w->index, L->blk, (Page)L->page);
    w->desc.npages++;
    L->open = false;
    if (push) {
        unsigned char e[12];
        std::memcpy(e, &L->first_hash, 8);
        std::memcpy(e + 8, &L->blk, 4);
        level_add(w, l + 1, e, 12, L->first_hash);
    }
}

// Opens the chain stream's first page if needed.
static void chain_ensure(SegmentWriter* w) {
    if (w->chain_open) return;
    if (w->chain == nullptr) w->chain = (char*)palloc(BLCKSZ);
    w->chain_blk = alloc_block(w->index);
    init_page((Page)w->chain, kChainPage, 0);
    w->chain_open = true;
    if (w->desc.first_chain == InvalidBlockNumber) w->desc.first_chain = w->chain_blk;
}

// Writes the current chain page and continues on a new one.
static void chain_next_page(SegmentWriter* w) {
    BlockNumber nb = alloc_block(w->index);
    opaque_of((Page)w->chain)->next = nb;
    write_page(w->index, w->chain_blk, (Page)w->chain);
    w->desc.npages++;
    w->chain_blk = nb;
    init_page((Page)w->chain, kChainPage, 0);
}

// Starts a posting run piece at the chain's current position.
static void chain_piece_start(SegmentWriter* w) {
    PageHeader ph = (PageHeader)w->chain;
    w->piece_start = ph->pd_lower;
    ph->pd_lower += 2;
    w->piece_n = 0;
}

// Stores the current piece's posting count in its header.
static void chain_piece_close(SegmentWriter* w) {
    std::memcpy(w->chain + w->piece_start, &w->piece_n, 2);
}

// Starts a list in the chain and returns where it begins.
static void chain_begin_list(SegmentWriter* w, BlockNumber* blk, uint32* off) {
    chain_ensure(w);
    PageHeader ph = (PageHeader)w->chain;
    if (content_end((Page)w->chain) - ph->pd_lower < 2 + kMaxPostingBytes) chain_next_page(w);
    *blk = w->chain_blk;
    *off = ((PageHeader)w->chain)->pd_lower;
    chain_piece_start(w);
}

// Appends a posting to the list being written in the chain.
static void chain_add(SegmentWriter* w, const Posting& p) {
    PageHeader ph = (PageHeader)w->chain;
    if (content_end((Page)w->chain) - ph->pd_lower < kMaxPostingBytes) {
        chain_piece_close(w);
        chain_next_page(w);
        chain_piece_start(w);
        ph = (PageHeader)w->chain;
    }
    ph->pd_lower += encode_posting((unsigned char*)w->chain + ph->pd_lower, p, w->piece_n ? &w->piece_prev : nullptr);
    w->piece_n++;
    w->piece_prev = p;
}

// Encodes and stores the record being built, if any.
static void record_finish(SegmentWriter* w) {
    if (!w->have_hash) return;
    PartW* cur = &w->parts[w->nparts - 1];
    if (cur->external) chain_piece_close(w);
    unsigned char* r = w->rec;
    uint32 n = 0;
    std::memcpy(r, &w->hash, 8);
    n += 8;
    n += put_varint(r + n, (uint64)w->nparts);
    uint32 prevpart = 0;
    for (int i = 0; i < w->nparts; ++i) {
        PartW* p = &w->parts[i];
        n += put_varint(r + n, i == 0 ? p->part : p->part - prevpart);
        prevpart = p->part;
        n += put_varint(r + n, p->count);
        if (p->external) {
            n += put_varint(r + n, ((uint64)p->blk << 1) | 1);
            n += put_varint(r + n, p->off);
        } else {
            n += put_varint(r + n, (uint64)p->inl_len << 1);
            std::memcpy(r + n, w->inl + p->inl_start, p->inl_len);
            n += p->inl_len;
        }
        w->desc.nkeys++;
        w->desc.sum_df2 += (double)p->count * (double)p->count;
    }
    level_add(w, 0, r, n, w->hash);
    w->have_hash = false;
    if (w->collect && w->keys.complete) {
        if (w->keys.n == kFilterMaxKeys) {
            w->keys.complete = false;  // too many for a filter: stop collecting
        } else {
            if (w->keys.n == w->keys_cap) {
                w->keys_cap = w->keys_cap ? 2 * w->keys_cap : 4096;
                w->keys.hashes = w->keys.hashes ? (uint64*)repalloc_huge(w->keys.hashes, sizeof(uint64) * w->keys_cap)
                                                : (uint64*)palloc(sizeof(uint64) * w->keys_cap);
            }
            w->keys.hashes[w->keys.n++] = w->hash;
        }
    }
}

SegmentWriter* segment_begin(Relation index, uint32 growth) {
    SegmentWriter* w = (SegmentWriter*)palloc0(sizeof(SegmentWriter));
    w->index = index;
    w->growth = growth;
    w->parts = (PartW*)palloc(sizeof(PartW) * kMaxPartitions);
    w->inl = (unsigned char*)palloc(kInlineRecordMax + kMaxPostingBytes + 16);
    w->rec = (unsigned char*)palloc(BLCKSZ * 2);
    w->desc.root = InvalidBlockNumber;
    w->desc.first_data = InvalidBlockNumber;
    w->desc.doclist_blk = InvalidBlockNumber;
    w->desc.first_chain = InvalidBlockNumber;
    return w;
}

void segment_collect_hashes(SegmentWriter* w) {
    w->collect = true;
    w->keys.complete = true;
}

void segment_add(SegmentWriter* w, uint64 hash, uint32 part, const Posting& p) {
    if (!w->have_hash || w->hash != hash) {
        record_finish(w);
        w->have_hash = true;
        w->hash = hash;
        w->nparts = 0;
        w->inl_len = 0;
    }
    if (w->nparts == 0 || w->parts[w->nparts - 1].part != part) {
        if (w->nparts > 0 && w->parts[w->nparts - 1].external) chain_piece_close(w);
        if (w->nparts >= kMaxPartitions) elog(ERROR, "spotsigs index: too many partitions");
        PartW* np = &w->parts[w->nparts++];
        np->part = part;
        np->count = 0;
        np->external = false;
        np->blk = InvalidBlockNumber;
        np->off = 0;
        np->inl_start = w->inl_len;
        np->inl_len = 0;
        w->nbuf = 0;
    }
    PartW* cur = &w->parts[w->nparts - 1];
    w->desc.npostings++;
    if (!cur->external) {
        unsigned char tmp[kMaxPostingBytes];
        uint32 n = (uint32)encode_posting(tmp, p, w->nbuf ? &w->buf[w->nbuf - 1] : nullptr);
        if (cur->inl_len + n <= kInlinePartMax && w->inl_len + n <= kInlineRecordMax && w->nbuf < kPartBuf) {
            std::memcpy(w->inl + w->inl_len, tmp, n);
            w->inl_len += n;
            cur->inl_len += n;
            w->buf[w->nbuf++] = p;
            cur->count++;
            return;
        }
        // Too long to stay inline: move what the list has so far to the chain.
        chain_begin_list(w, &cur->blk, &cur->off);
        for (int k = 0; k < w->nbuf; ++k) chain_add(w, w->buf[k]);
        w->inl_len -= cur->inl_len;
        cur->inl_len = 0;
        cur->external = true;
    }
    chain_add(w, p);
    cur->count++;
}

void segment_add_doc(SegmentWriter* w, uint64 id, uint32 length, uint32 distinct) {
    if (!w->docs_started) {
        record_finish(w);
        chain_begin_list(w, &w->desc.doclist_blk, &w->desc.doclist_off);
        w->docs_started = true;
    }
    Posting p;
    p.id = id;
    p.length = length;
    p.freq = distinct;
    chain_add(w, p);
    w->desc.ndocs++;
}

void segment_finish(SegmentWriter* w, SegmentDesc* out, SegmentHashes* keys) {
    record_finish(w);
    if (w->docs_started) chain_piece_close(w);
    if (w->chain_open) {
        opaque_of((Page)w->chain)->next = InvalidBlockNumber;
        write_page(w->index, w->chain_blk, (Page)w->chain);
        w->desc.npages++;
        w->chain_open = false;
    }
    if (w->lv[0].open) {
        for (int l = 0; l < kMaxLevels; ++l) {
            LevelWriter* L = &w->lv[l];
            bool above = l + 1 < kMaxLevels && w->lv[l + 1].pages > 0;
            if (L->pages == 1 && !above) {
                level_flush(w, l, InvalidBlockNumber, false);
                w->desc.root = L->blk;
                w->desc.height = (uint32)l;
                break;
            }
            level_flush(w, l, InvalidBlockNumber, true);
        }
    }
    *out = w->desc;
    if (keys != nullptr) {
        *keys = w->keys;
        if (!w->collect) keys->complete = false;
    }
}

// ---- sorting ----

struct SegmentSorter {
    TupleDesc pdesc;
    TupleDesc ddesc;
    Tuplesortstate* postings;
    Tuplesortstate* docs;
    TupleTableSlot* pslot;
    TupleTableSlot* dslot;
    uint64 rows;
    uint64 npostings;
    // In memory (sorter_begin_in_memory): flat arrays of announced size instead of tuplesorts.
    bool in_memory;
    PostingRecord* precs;
    uint64 cap_postings;
    DocRecord* drecs;
    uint64 cap_docs;
};

// A tuple descriptor of n int8 columns.
static TupleDesc int8_desc(int n) {
    TupleDesc d = CreateTemplateTupleDesc(n);
    for (int i = 1; i <= n; ++i) TupleDescInitEntry(d, (AttrNumber)i, nullptr, INT8OID, -1, 0);
    return d;
}

// A tuplesort over the first nkeys int8 columns of desc.
static Tuplesortstate* int8_sort(TupleDesc desc, int nkeys, int mem_kb) {
    AttrNumber att[3] = {1, 2, 3};
    Oid ops[3] = {Int8LessOperator, Int8LessOperator, Int8LessOperator};
    Oid coll[3] = {InvalidOid, InvalidOid, InvalidOid};
    bool nf[3] = {false, false, false};
    return tuplesort_begin_heap(desc, nkeys, att, ops, coll, nf, mem_kb, nullptr, TUPLESORT_NONE);
}

SegmentSorter* sorter_begin(int work_mem_kb) {
    SegmentSorter* s = (SegmentSorter*)palloc0(sizeof(SegmentSorter));
    s->pdesc = int8_desc(4);
    s->ddesc = int8_desc(3);
    int pm = work_mem_kb * 3 / 4, dm = work_mem_kb - pm;
    if (pm < 64) pm = 64;
    if (dm < 64) dm = 64;
    s->postings = int8_sort(s->pdesc, 3, pm);
    s->docs = int8_sort(s->ddesc, 2, dm);
    s->pslot = MakeSingleTupleTableSlot(s->pdesc, &TTSOpsMinimalTuple);
    s->dslot = MakeSingleTupleTableSlot(s->ddesc, &TTSOpsMinimalTuple);
    return s;
}

SegmentSorter* sorter_begin_in_memory(uint64 max_postings, uint64 max_docs) {
    SegmentSorter* s = (SegmentSorter*)palloc0(sizeof(SegmentSorter));
    s->in_memory = true;
    s->cap_postings = max_postings;
    s->cap_docs = max_docs;
    s->precs = (PostingRecord*)palloc_extended(sizeof(PostingRecord) * (max_postings + 1), MCXT_ALLOC_HUGE);
    s->drecs = (DocRecord*)palloc_extended(sizeof(DocRecord) * (max_docs + 1), MCXT_ALLOC_HUGE);
    return s;
}

uint64 sorter_rows(const SegmentSorter* s) {
    return s->rows;
}

void sorter_add_posting(SegmentSorter* s, uint64 hash, uint32 part, const Posting& p) {
    if (s->in_memory) {
        if (s->npostings == s->cap_postings) elog(ERROR, "spotsigs index: more postings than the sorter was sized for");
        s->precs[s->npostings++] = PostingRecord{hash, p.id, part, p.length, p.freq};
        return;
    }
    const uint64 sign = 0x8000000000000000ULL;
    ExecClearTuple(s->pslot);
    s->pslot->tts_values[0] = Int64GetDatum((int64)(hash ^ sign));
    s->pslot->tts_values[1] = Int64GetDatum(((int64)part << 32) | (int64)(0x7fffffff - p.length));
    s->pslot->tts_values[2] = Int64GetDatum((int64)p.id);
    s->pslot->tts_values[3] = Int64GetDatum((int64)p.freq);
    for (int k = 0; k < 4; ++k) s->pslot->tts_isnull[k] = false;
    ExecStoreVirtualTuple(s->pslot);
    tuplesort_puttupleslot(s->postings, s->pslot);
    s->npostings++;
}

void sorter_add_doc(SegmentSorter* s, uint64 id, uint32 length, uint32 distinct) {
    if (s->in_memory) {
        if (s->rows == s->cap_docs) elog(ERROR, "spotsigs index: more documents than the sorter was sized for");
        s->drecs[s->rows++] = DocRecord{id, length, distinct};
        return;
    }
    ExecClearTuple(s->dslot);
    s->dslot->tts_values[0] = Int64GetDatum(-(int64)length);
    s->dslot->tts_values[1] = Int64GetDatum((int64)id);
    s->dslot->tts_values[2] = Int64GetDatum((int64)distinct);
    for (int k = 0; k < 3; ++k) s->dslot->tts_isnull[k] = false;
    ExecStoreVirtualTuple(s->dslot);
    tuplesort_puttupleslot(s->docs, s->dslot);
    s->rows++;
}

void sorter_add(SegmentSorter* s, uint64 id, const MultisetView& sig, uint32 part) {
    for (uint32 i = 0; i < sig.size; ++i) {
        Posting p;
        p.id = id;
        p.length = (uint32)sig.length;
        p.freq = sig.freqs[i];
        sorter_add_posting(s, sig.hashes[i], part, p);
    }
    sorter_add_doc(s, id, (uint32)sig.length, sig.size);
}

// sorter_finish() of an in-memory sorter: sorts the arrays and writes the segment.
static void sorter_finish_in_memory(SegmentSorter* s, Relation index, uint32 growth, SegmentDesc* out,
                                    uint32* part_docs, SegmentHashes* keys) {
    sort_posting_records(s->precs, s->npostings);
    sort_doc_records(s->drecs, s->rows);
    const Partitioning& parts = partitioning_for(growth);
    SegmentWriter* w = segment_begin(index, growth);
    if (keys != nullptr) segment_collect_hashes(w);
    for (uint64 k = 0; k < s->npostings; ++k) {
        const PostingRecord& r = s->precs[k];
        Posting p;
        p.id = r.id;
        p.length = r.length;
        p.freq = r.freq;
        segment_add(w, r.hash, r.part, p);
        if ((k & 0xffff) == 0xffff) CHECK_FOR_INTERRUPTS();
    }
    for (uint64 k = 0; k < s->rows; ++k) {
        const DocRecord& d = s->drecs[k];
        segment_add_doc(w, d.id, d.length, d.distinct);
        part_docs[parts.partition_of(d.length)]++;
    }
    segment_finish(w, out, keys);
    pfree(s->precs);
    pfree(s->drecs);
    s->precs = nullptr;
    s->drecs = nullptr;
}

void sorter_finish(SegmentSorter* s, Relation index, uint32 growth, SegmentDesc* out, uint32* part_docs, bool report,
                   SegmentHashes* keys) {
    if (s->in_memory) {
        sorter_finish_in_memory(s, index, growth, out, part_docs, keys);
        return;
    }
    const uint64 sign = 0x8000000000000000ULL;
    if (report) {
        pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, kPhaseSort);
        pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, (int64)s->npostings);
    }
    tuplesort_performsort(s->postings);
    tuplesort_performsort(s->docs);
    TuplesortInstrumentation ins;
    tuplesort_get_stats(s->postings, &ins);
    if (report && ins.spaceType == SORT_SPACE_TYPE_DISK)
        ereport(
            NOTICE,
            (errmsg("spotsigs index build: %llu postings did not fit in maintenance_work_mem (%d kB), sorted on disk",
                    (unsigned long long)s->npostings, maintenance_work_mem),
             errhint("Raise maintenance_work_mem to build faster.")));
    if (report) pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, kPhaseWrite);
    const Partitioning& parts = partitioning_for(growth);
    SegmentWriter* w = segment_begin(index, growth);
    if (keys != nullptr) segment_collect_hashes(w);
    uint64 done = 0;
    while (tuplesort_gettupleslot(s->postings, true, false, s->pslot, nullptr)) {
        slot_getallattrs(s->pslot);
        uint64 hash = (uint64)DatumGetInt64(s->pslot->tts_values[0]) ^ sign;
        int64 k2 = DatumGetInt64(s->pslot->tts_values[1]);
        Posting p;
        p.length = (uint32)(0x7fffffff - (k2 & 0xffffffff));
        p.id = (uint64)DatumGetInt64(s->pslot->tts_values[2]);
        p.freq = (uint32)DatumGetInt64(s->pslot->tts_values[3]);
        segment_add(w, hash, (uint32)(k2 >> 32), p);
        if ((++done & 0xffff) == 0) {
            CHECK_FOR_INTERRUPTS();
            if (report) pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, (int64)done);
        }
    }
    while (tuplesort_gettupleslot(s->docs, true, false, s->dslot, nullptr)) {
        slot_getallattrs(s->dslot);
        uint32 len = (uint32)(-DatumGetInt64(s->dslot->tts_values[0]));
        segment_add_doc(w, (uint64)DatumGetInt64(s->dslot->tts_values[1]), len,
                        (uint32)DatumGetInt64(s->dslot->tts_values[2]));
        part_docs[parts.partition_of(len)]++;
    }
    segment_finish(w, out, keys);
    if (report) pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, (int64)done);
    tuplesort_end(s->postings);
    tuplesort_end(s->docs);
    ExecDropSingleTupleTableSlot(s->pslot);
    ExecDropSingleTupleTableSlot(s->dslot);
}

// ---- ambuild ----

namespace {

// State of the heap scan that feeds the sorter.
struct BuildState {
    SegmentSorter* sorter;
    const Partitioning* parts;
    MemoryContext tmp;
    uint64* nulls;  // ids of the rows whose value is NULL (the NULL list)
    int64 nnulls;
    int64 nulls_cap;
};

// Records one heap row: detoast, check its header, add its postings.
void build_callback(Relation index, ItemPointer tid, Datum* values, bool* isnull, bool, void* state) {
    BuildState* bs = (BuildState*)state;
    if (isnull[0]) {
        if (bs->nnulls == bs->nulls_cap) {
            bs->nulls_cap *= 2;
            bs->nulls = (uint64*)repalloc_huge(bs->nulls, sizeof(uint64) * bs->nulls_cap);
        }
        bs->nulls[bs->nnulls++] = tid_to_id(tid);
        return;
    }
    MemoryContext old = MemoryContextSwitchTo(bs->tmp);
    struct varlena* v = fetch_spotsig(values[0]);
    MultisetView m;
    pg_entry([&] {
        m = view_of(v);
        return Datum(0);
    });
    sorter_add(bs->sorter, tid_to_id(tid), m, bs->parts->partition_of(m.length));
    MemoryContextSwitchTo(old);
    MemoryContextReset(bs->tmp);
}

// Writes ids as a new NULL list; sets *head and *tail (InvalidBlockNumber when there are none).
void write_null_list(Relation index, const uint64* ids, int64 n, BlockNumber* head, BlockNumber* tail) {
    *head = *tail = InvalidBlockNumber;
    if (n == 0) return;
    int64 npages = (n + kNullsPerPage - 1) / kNullsPerPage;
    BlockNumber* blks = (BlockNumber*)palloc(sizeof(BlockNumber) * npages);
    for (int64 i = 0; i < npages; ++i) blks[i] = alloc_block(index);
    char* img = (char*)palloc(BLCKSZ);
    for (int64 i = 0; i < npages; ++i) {
        init_page((Page)img, kNullPage, 0);
        int64 k = Min((int64)kNullsPerPage, n - i * (int64)kNullsPerPage);
        std::memcpy(img + kContentStart, ids + i * (int64)kNullsPerPage, 8 * k);
        ((PageHeader)img)->pd_lower = (uint16)(kContentStart + 8 * k);
        opaque_of((Page)img)->next = i + 1 < npages ? blks[i + 1] : InvalidBlockNumber;
        write_page(index, blks[i], (Page)img);
    }
    *head = blks[0];
    *tail = blks[npages - 1];
    pfree(img);
    pfree(blks);
}

}  // namespace

IndexBuildResult* ambuild(Relation heap, Relation index, IndexInfo* info) {
    if (RelationGetNumberOfBlocks(index) != 0)
        elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
    uint32 growth = index_growth(index);
    // The metapage is block 0.
    Buffer mbuf = new_buffer(index);
    if (BufferGetBlockNumber(mbuf) != kMetaBlock) elog(ERROR, "spotsigs index: metapage is not block 0");
    GenericXLogState* st = GenericXLogStart(index);
    init_metapage(GenericXLogRegisterBuffer(st, mbuf, GENERIC_XLOG_FULL_IMAGE), growth);
    GenericXLogFinish(st);
    UnlockReleaseBuffer(mbuf);

    BuildState bs;
    bs.sorter = sorter_begin(maintenance_work_mem);
    bs.parts = &partitioning_for(growth);
    bs.tmp = AllocSetContextCreate(CurrentMemoryContext, "spotsigs build row", ALLOCSET_DEFAULT_SIZES);
    bs.nulls_cap = 64;
    bs.nnulls = 0;
    bs.nulls = (uint64*)palloc(sizeof(uint64) * bs.nulls_cap);
    pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, kPhaseScan);
    double reltuples = table_index_build_scan(heap, index, info, true, true, build_callback, &bs, nullptr);

    MetaData meta;
    read_meta(index, &meta);
    SegmentDesc seg;
    sorter_finish(bs.sorter, index, growth, &seg, meta.part_docs, true);
    uint64 rows = sorter_rows(bs.sorter);
    if (seg.ndocs > 0) {
        seg.serial = meta.next_serial++;
        meta.seg[0] = seg;
        meta.nsegments = 1;
    }
    meta.total_docs = rows;
    write_null_list(index, bs.nulls, bs.nnulls, &meta.null_head, &meta.null_tail);
    meta.null_count = (uint64)bs.nnulls;
    mbuf = ReadBuffer(index, kMetaBlock);
    LockBuffer(mbuf, BUFFER_LOCK_EXCLUSIVE);
    st = GenericXLogStart(index);
    Page mp = GenericXLogRegisterBuffer(st, mbuf, 0);
    std::memcpy(meta_of(mp), &meta, sizeof(MetaData));
    GenericXLogFinish(st);
    UnlockReleaseBuffer(mbuf);
    MemoryContextDelete(bs.tmp);

    IndexBuildResult* r = (IndexBuildResult*)palloc(sizeof(IndexBuildResult));
    r->heap_tuples = reltuples;
    r->index_tuples = (double)(rows + (uint64)bs.nnulls);
    return r;
}

void ambuildempty(Relation index) {
    Page page = (Page)palloc(BLCKSZ);
    init_metapage(page, index_growth(index));
    PageSetChecksumInplace(page, kMetaBlock);
    smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, kMetaBlock, (char*)page, true);
    log_newpage(SPOTSIGS_SMGR_STORAGE(RelationGetSmgr(index)), INIT_FORKNUM, kMetaBlock, page, true);
    smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}

char* ambuildphasename(int64 phase) {
    switch (phase) {
        case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE: return (char*)"initializing";
        case kPhaseScan: return (char*)"scanning table";
        case kPhaseSort: return (char*)"sorting postings";
        case kPhaseWrite: return (char*)"writing segment";
        default: return nullptr;
    }
}

}  // namespace spotsigs::pg::index
