// spotsigs_index_check(regclass): a structural verifier in the spirit of amcheck, and
// spotsigs_index_stats(regclass): partitions and list lengths, for debugging.
//
// C-style code: no C++ objects with destructors live across PostgreSQL calls.
#include "pg/index/index.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/index.h"
#include "catalog/pg_am_d.h"
#include "commands/defrem.h"
#include "funcapi.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
}

#include <cstring>

#include "core/signature/packed.hpp"

namespace spotsigs::pg::index {

namespace {

// What the postings say about one row.
struct RowSum {
    uint64 id;
    uint64 sum;     // sum of its frequencies over all lists
    uint32 lists;   // number of lists it appears in
    uint32 length;  // its length as the postings record it
};

// Raises 42501 unless the user may read the table that index relid belongs to: SELECT on it, or
// owning it (an owner may have revoked his own SELECT). The checks and the statistics describe
// the table's rows (counts, lengths), so they need what reading them needs; the check comes
// before the index is locked, so that a user without the right cannot queue behind or ahead of
// others' locks. fn names the caller.
void check_index_privilege(Oid relid, const char* fn) {
    Oid table = IndexGetRelation(relid, true);
    if (!OidIsValid(table)) return;  // not an index: open_spotsigs_index says so
    Oid user = GetUserId();
    if (pg_class_aclcheck(table, user, ACL_SELECT) == ACLCHECK_OK || SPOTSIGS_REL_OWNERCHECK(table, user)) return;
    ereport(ERROR,
            (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
             errmsg("permission denied for table %s",
                    quote_qualified_identifier(get_namespace_name(get_rel_namespace(table)), get_rel_name(table))),
             errdetail("%s needs SELECT on the table of the index, or its ownership.", fn)));
}

// Opens a relation and checks that it is a spotsigs index.
Relation open_spotsigs_index(Oid relid) {
    Relation index = relation_open(relid, AccessShareLock);
    bool spotsigs_am = index->rd_rel->relam == get_index_am_oid("spotsigs", false);
    // A partitioned index has no storage of its own: each partition's index holds the rows.
    if (spotsigs_am && index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("\"%s\" is a partitioned spotsigs index", RelationGetRelationName(index)),
                        errdetail("A partitioned index holds no rows itself."),
                        errhint("Pass the index of each partition instead.")));
    if (index->rd_rel->relkind != RELKIND_INDEX || !spotsigs_am)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("\"%s\" is not a spotsigs index", RelationGetRelationName(index))));
    return index;
}

// Checks one posting list (ref, on DATA page blk): lengths inside its partition, frequencies
// positive, postings in list order, one length per row; adds each posting to rows and returns
// how many the list holds. page is a scratch page for the list's overflow pages.
uint64 check_list(Relation index, const Partitioning& parts, PartRef* ref, BlockNumber blk, char* page, HTAB* rows) {
    if (ref->part >= parts.count()) corrupted(index, "partition number out of range", blk);
    uint64 lo = parts.lower(ref->part), hi = parts.upper(ref->part);
    ListIter it;
    list_iter_init(&it, index, ref, page);
    Posting p, prev;
    bool first = true;
    uint64 n = 0;
    while (list_iter_next(&it, &p)) {
        if (p.length < lo || p.length > hi) corrupted(index, "posting length outside its partition", blk);
        if (p.freq == 0) corrupted(index, "posting with frequency 0", blk);
        if (!first && !posting_before(prev, p)) corrupted(index, "postings out of order", blk);
        prev = p;
        first = false;
        bool found;
        RowSum* r = (RowSum*)hash_search(rows, &p.id, HASH_ENTER, &found);
        if (!found) {
            r->sum = 0;
            r->lists = 0;
            r->length = p.length;
        }
        if (r->length != p.length) corrupted(index, "one row with two lengths", blk);
        r->sum += p.freq;
        r->lists++;
        n++;
    }
    return n;
}

// The DATA level of a segment, left to right: hashes strictly ascending, the record samples
// pointing at their records, every list well formed (check_list), and as many postings and lists
// as the segment's descriptor says. page and page2 are scratch pages, refs room for a record's
// partitions.
void check_data_level(Relation index, const Partitioning& parts, const SegmentDesc& seg, int segno, HTAB* rows,
                      char* page, char* page2, PartRef* refs) {
    uint64 npostings = 0, nkeys = 0;
    bool have_prev_hash = false;
    uint64 prev_hash = 0;
    ChainWalk walk;
    chain_walk_init(&walk, index);
    for (BlockNumber blk = seg.first_data; blk != InvalidBlockNumber; chain_step(&walk, blk)) {
        read_page_copy(index, blk, page, kDataPage);
        const unsigned char* pos = (const unsigned char*)page + kContentStart;
        const unsigned char* end = (const unsigned char*)page + ((PageHeader)page)->pd_lower;
        if (pos == end) corrupted(index, "empty DATA page", blk);
        uint32 nrec = 0;
        while (pos < end) {
            uint64 hash;
            int np;
            if (nrec % kSampleEvery == 0 &&
                (nrec / kSampleEvery >= sample_count((Page)page) ||
                 sample_at((Page)page, nrec / kSampleEvery) != (uint16)(pos - (const unsigned char*)page)))
                corrupted(index, "record sample does not point at its record", blk);
            nrec++;
            if (!parse_record(pos, end, &hash, &np, refs)) corrupted(index, "malformed hash record", blk);
            if (have_prev_hash && !(prev_hash < hash)) corrupted(index, "hash records out of order", blk);
            prev_hash = hash;
            have_prev_hash = true;
            for (int k = 0; k < np; ++k) npostings += check_list(index, parts, &refs[k], blk, page2, rows);
            nkeys += np;
        }
        if (sample_count((Page)page) != (nrec + kSampleEvery - 1) / kSampleEvery)
            corrupted(index, "record sample count does not match the records", blk);
        blk = opaque_of((Page)page)->next;
    }
    if (npostings != seg.npostings || nkeys != seg.nkeys)
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("spotsigs index \"%s\" is corrupted", RelationGetRelationName(index)),
                        errdetail("Segment %d holds %llu postings in %llu lists; its descriptor says %llu in %llu.",
                                  segno, (unsigned long long)npostings, (unsigned long long)nkeys,
                                  (unsigned long long)seg.npostings, (unsigned long long)seg.nkeys)));
}

// The directory of a segment: every level ascending, each entry's hash the first hash of its
// child, and the leftmost path leading to the first DATA page. page and page2 are scratch pages.
void check_directory(Relation index, const SegmentDesc& seg, char* page, char* page2) {
    if (seg.root == InvalidBlockNumber) return;
    BlockNumber left = seg.root;
    ChainWalk walk;
    for (uint32 lvl = seg.height; lvl > 0; --lvl) {
        BlockNumber next_left = InvalidBlockNumber;
        chain_walk_init(&walk, index);
        for (BlockNumber blk = left; blk != InvalidBlockNumber; chain_step(&walk, blk)) {
            read_page_copy(index, blk, page, kDirPage);
            if (opaque_of((Page)page)->level != lvl) corrupted(index, "directory level mismatch", blk);
            uint32 n = (((PageHeader)page)->pd_lower - kContentStart) / 12;
            if (n == 0) corrupted(index, "empty directory page", blk);
            uint64 ph = 0;
            for (uint32 e = 0; e < n; ++e) {
                uint64 h;
                BlockNumber child;
                std::memcpy(&h, page + kContentStart + 12 * e, 8);
                std::memcpy(&child, page + kContentStart + 12 * e + 8, 4);
                if (e > 0 && !(ph < h)) corrupted(index, "directory entries out of order", blk);
                ph = h;
                if (next_left == InvalidBlockNumber) next_left = child;
                read_page_copy(index, child, page2, lvl == 1 ? kDataPage : kDirPage);
                uint64 fh;
                std::memcpy(&fh, page2 + kContentStart, 8);
                if (fh != h) corrupted(index, "directory entry does not match its child's first hash", blk);
            }
            blk = opaque_of((Page)page)->next;
        }
        left = next_left;
    }
    if (left != seg.first_data) corrupted(index, "directory does not lead to the first DATA page", seg.root);
}

// The document list of a segment: every row once, in list order, as many as the descriptor says,
// each with the length and distinct count its postings (in rows) add up to; then every row with
// postings must have been listed. page is a scratch page.
void check_document_list(Relation index, const SegmentDesc& seg, char* page, HTAB* rows) {
    uint64 ndocs = 0;
    if (seg.doclist_blk != InvalidBlockNumber) {
        PartRef ref{0, (uint32)seg.ndocs, true, seg.doclist_blk, seg.doclist_off, nullptr, 0};
        ListIter it;
        list_iter_init(&it, index, &ref, page);
        Posting p, prev;
        bool first = true;
        while (list_iter_next(&it, &p)) {
            if (!first && !posting_before(prev, p)) corrupted(index, "document list out of order", seg.doclist_blk);
            prev = p;
            first = false;
            ndocs++;
            bool found;
            RowSum* r = (RowSum*)hash_search(rows, &p.id, HASH_FIND, &found);
            if (p.length == 0) {
                if (found) corrupted(index, "empty row with postings", seg.doclist_blk);
                continue;
            }
            if (!found) corrupted(index, "row without postings", seg.doclist_blk);
            if (r->sum != p.length || r->lists != p.freq || r->length != p.length)
                corrupted(index, "row's postings do not add up to its length", seg.doclist_blk);
            r->lists = UINT32_MAX;  // seen in the document list
        }
    }
    if (ndocs != seg.ndocs) corrupted(index, "document count differs from the segment descriptor", seg.doclist_blk);
    HASH_SEQ_STATUS hs;
    hash_seq_init(&hs, rows);
    RowSum* r;
    while ((r = (RowSum*)hash_seq_search(&hs)) != nullptr)
        if (r->lists != UINT32_MAX)
            corrupted(index, "row with postings missing from the document list", seg.first_data);
}

// Checks one segment: its DATA level, its directory and its document list, in that order (the
// document list is checked against the postings the DATA level put into rows, which must be
// empty on entry). Raises XX002 on the first fault it finds.
void check_segment(Relation index, const MetaData& m, const SegmentDesc& seg, int segno, HTAB* rows) {
    char* page = (char*)palloc(BLCKSZ);
    char* page2 = (char*)palloc(BLCKSZ);
    PartRef* refs = (PartRef*)palloc(sizeof(PartRef) * kMaxPartitions);
    check_data_level(index, partitioning_for(m.growth), seg, segno, rows, page, page2, refs);
    check_directory(index, seg, page, page2);
    check_document_list(index, seg, page2, rows);
    pfree(page);
    pfree(page2);
    pfree(refs);
}

// A fresh id -> RowSum table.
HTAB* new_rows_table() {
    HASHCTL ctl;
    std::memset(&ctl, 0, sizeof(ctl));
    ctl.keysize = sizeof(uint64);
    ctl.entrysize = sizeof(RowSum);
    ctl.hcxt = CurrentMemoryContext;
    return hash_create("spotsigs check rows", 1024, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

}  // namespace

}  // namespace spotsigs::pg::index

using namespace spotsigs;
using namespace spotsigs::pg::index;

// spotsigs_index_check(regclass) RETURNS text: verifies the index structure; ERROR XX002 if corrupt.
SPOTSIGS_FUNCTION(spotsigs_index_check) {
    Oid relid = PG_GETARG_OID(0);
    check_index_privilege(relid, "spotsigs_index_check");
    Relation index = open_spotsigs_index(relid);
    Buffer mb = ReadBuffer(index, kMetaBlock);  // pinned: VACUUM cannot recycle pages under us
    LockBuffer(mb, BUFFER_LOCK_SHARE);
    MetaData m;
    std::memcpy(&m, meta_of(BufferGetPage(mb)), sizeof(MetaData));
    LockBuffer(mb, BUFFER_LOCK_UNLOCK);
    check_meta(index, &m);
    if (m.nparts != partitioning_for(m.growth).count())
        corrupted(index, "partition count does not match the growth", kMetaBlock);
    // Segment serials identify segments to the backends' filters: each in [1, next_serial), no two equal.
    for (uint32 s = 0; s < m.nsegments; ++s) {
        if (m.seg[s].serial == 0 || m.seg[s].serial >= m.next_serial)
            corrupted(index, "segment serial outside the range the metapage handed out", kMetaBlock);
        for (uint32 t = 0; t < s; ++t)
            if (m.seg[t].serial == m.seg[s].serial) corrupted(index, "two segments with the same serial", kMetaBlock);
    }
    uint64 docs = 0, postings = 0;
    HTAB* seen = new_rows_table();
    for (uint32 s = 0; s < m.nsegments; ++s) {
        HTAB* rows = new_rows_table();
        check_segment(index, m, m.seg[s], (int)s, rows);
        hash_destroy(rows);
        docs += m.seg[s].ndocs;
        postings += m.seg[s].npostings;
    }
    // Rows must not appear in two segments.
    for (uint32 s = 0; s < m.nsegments; ++s) {
        const SegmentDesc& seg = m.seg[s];
        if (seg.doclist_blk == InvalidBlockNumber) continue;
        char* page = (char*)palloc(BLCKSZ);
        PartRef ref{0, (uint32)seg.ndocs, true, seg.doclist_blk, seg.doclist_off, nullptr, 0};
        ListIter it;
        list_iter_init(&it, index, &ref, page);
        Posting p;
        while (list_iter_next(&it, &p)) {
            bool found;
            hash_search(seen, &p.id, HASH_ENTER, &found);
            if (found) corrupted(index, "row indexed twice", seg.doclist_blk);
        }
        pfree(page);
    }
    int64 npend;
    uint32 ppages;
    PendingEntry* pend =
        read_pending(index, m.pending_head, m.pending_head_off, InvalidBlockNumber, 0, &npend, &ppages);
    for (int64 k = 0; k < npend; ++k) {
        bool ok = true;
        const unsigned char* base = (const unsigned char*)pend[k].sig.hashes - kPackedHeaderSize;
        size_t len = kPackedHeaderSize + (size_t)pend[k].sig.size * (8 + pend[k].sig.freqs.width);
        try {
            unpack_checked(base, len);
        } catch (...) {
            ok = false;
        }
        if (!ok) corrupted(index, "invalid spotsig in the pending list", m.pending_head);
        bool found;
        hash_search(seen, &pend[k].id, HASH_ENTER, &found);
        if (found) corrupted(index, "row indexed twice", m.pending_head);
    }
    // The NULL list: ids of live-looking TIDs, each once, in no other list. Inserts may have
    // appended to it since the metapage was read, and VACUUM removed ids from it: its length is
    // checked against the metapage under the metapage's lock, which both take.
    int64 nnull = 0;
    if (has_null_list(&m)) {
        LockBuffer(mb, BUFFER_LOCK_SHARE);
        MetaData now;
        std::memcpy(&now, meta_of(BufferGetPage(mb)), sizeof(MetaData));
        uint64* nulls = read_null_ids(index, &now, &nnull);
        LockBuffer(mb, BUFFER_LOCK_UNLOCK);
        if ((uint64)nnull != now.null_count)
            corrupted(index, "NULL list length differs from the metapage", now.null_head);
        if ((now.null_head == InvalidBlockNumber) != (now.null_tail == InvalidBlockNumber))
            corrupted(index, "NULL list has a head without a tail or a tail without a head", kMetaBlock);
        for (int64 k = 0; k < nnull; ++k) {
            if ((nulls[k] & ((1u << kOffsetBits) - 1)) == 0)
                corrupted(index, "NULL list id of offset 0", now.null_head);
            bool found;
            hash_search(seen, &nulls[k], HASH_ENTER, &found);
            if (found) corrupted(index, "row indexed twice", now.null_head);
        }
    }
    ReleaseBuffer(mb);
    // The pending list may have grown since the metapage was read, never shrunk.
    if ((uint64)npend < m.pending_count)
        corrupted(index, "pending list shorter than the metapage says", m.pending_head);
    if (docs + m.pending_count != m.total_docs) corrupted(index, "row total differs from the metapage", kMetaBlock);
    relation_close(index, AccessShareLock);
    const char* nulls_text = nnull > 0 ? psprintf(", %lld NULL", (long long)nnull) : "";
    PG_RETURN_TEXT_P(cstring_to_text(psprintf("ok: %u segments, %llu rows, %llu postings, %lld pending%s", m.nsegments,
                                              (unsigned long long)docs, (unsigned long long)postings, (long long)npend,
                                              nulls_text)));
}

// spotsigs_index_stats(regclass): per segment and partition, rows, lists and postings; segment
// -1 is the pending list.
SPOTSIGS_FUNCTION(spotsigs_index_stats) {
    Oid relid = PG_GETARG_OID(0);
    check_index_privilege(relid, "spotsigs_index_stats");
    Relation index = open_spotsigs_index(relid);
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    Buffer mb = ReadBuffer(index, kMetaBlock);
    LockBuffer(mb, BUFFER_LOCK_SHARE);
    MetaData m;
    std::memcpy(&m, meta_of(BufferGetPage(mb)), sizeof(MetaData));
    LockBuffer(mb, BUFFER_LOCK_UNLOCK);
    check_meta(index, &m);
    const Partitioning& parts = partitioning_for(m.growth);
    int np = (int)parts.count();
    int64* rows = (int64*)palloc(sizeof(int64) * np);
    int64* lists = (int64*)palloc(sizeof(int64) * np);
    int64* posts = (int64*)palloc(sizeof(int64) * np);
    char* page = (char*)palloc(BLCKSZ);
    PartRef* refs = (PartRef*)palloc(sizeof(PartRef) * kMaxPartitions);
    // Emits the non-empty partitions of one segment.
    auto emit = [&](int segno) {
        for (int p = 0; p < np; ++p) {
            if (rows[p] == 0 && lists[p] == 0) continue;
            Datum v[7] = {Int32GetDatum(segno),
                          Int32GetDatum(p),
                          Int64GetDatum((int64)parts.lower((uint32)p)),
                          Int64GetDatum((int64)parts.upper((uint32)p)),
                          Int64GetDatum(rows[p]),
                          Int64GetDatum(lists[p]),
                          Int64GetDatum(posts[p])};
            bool nulls[7] = {false, false, false, false, false, false, false};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
        }
    };
    for (uint32 s = 0; s < m.nsegments; ++s) {
        std::memset(rows, 0, sizeof(int64) * np);
        std::memset(lists, 0, sizeof(int64) * np);
        std::memset(posts, 0, sizeof(int64) * np);
        ChainWalk walk;
        chain_walk_init(&walk, index);
        for (BlockNumber blk = m.seg[s].first_data; blk != InvalidBlockNumber; chain_step(&walk, blk)) {
            read_page_copy(index, blk, page, kDataPage);
            const unsigned char* pos = (const unsigned char*)page + kContentStart;
            const unsigned char* end = (const unsigned char*)page + ((PageHeader)page)->pd_lower;
            while (pos < end) {
                uint64 hash;
                int n;
                if (!parse_record(pos, end, &hash, &n, refs)) corrupted(index, "malformed hash record", blk);
                for (int k = 0; k < n; ++k) {
                    if (refs[k].part >= (uint32)np) corrupted(index, "partition number out of range", blk);
                    lists[refs[k].part]++;
                    posts[refs[k].part] += refs[k].count;
                }
            }
            blk = opaque_of((Page)page)->next;
        }
        const SegmentDesc& seg = m.seg[s];
        if (seg.doclist_blk != InvalidBlockNumber) {
            char* page2 = (char*)palloc(BLCKSZ);
            PartRef ref{0, (uint32)seg.ndocs, true, seg.doclist_blk, seg.doclist_off, nullptr, 0};
            ListIter it;
            list_iter_init(&it, index, &ref, page2);
            Posting p;
            while (list_iter_next(&it, &p)) rows[parts.partition_of(p.length)]++;
            pfree(page2);
        }
        emit((int)s);
    }
    std::memset(rows, 0, sizeof(int64) * np);
    std::memset(lists, 0, sizeof(int64) * np);
    std::memset(posts, 0, sizeof(int64) * np);
    int64 npend;
    uint32 ppages;
    PendingEntry* pend =
        read_pending(index, m.pending_head, m.pending_head_off, InvalidBlockNumber, 0, &npend, &ppages);
    for (int64 k = 0; k < npend; ++k) {
        uint32 p = parts.partition_of(pend[k].sig.length);
        rows[p]++;
        posts[p] += pend[k].sig.size;
    }
    emit(-1);
    ReleaseBuffer(mb);
    relation_close(index, AccessShareLock);
    return (Datum)0;
}
