// The spotsigs index access method: on-disk layout and the functions its phases share.
//
// Block 0 is the metapage. The rest of the index is
//  * up to kMaxSegments immutable segments, each a static B-tree written from sorted postings:
//    level 0 (DATA pages, linked left to right, with a sample of record offsets for binary
//    search) holds one record per signature hash in ascending unsigned order: the hash, then per length partition
//    (ascending) the number of postings and either the postings inline or the place (block, offset) of their run in the
//    segment's CHAIN stream; DIR pages above hold (first hash, child block) per child page. A segment also keeps a
//    document list (every indexed row with its length, empty values included) in its chain.
//  * a pending list: a byte stream over linked PENDING pages of whole entries (heap TID, packed
//    spotsig) appended by aminsert; every scan must see it (each backend searches its own copy,
//    pending_cache.cpp); an insert past pending_list_limit, or VACUUM, merges it into a segment.
//  * a NULL list: linked NULL pages of the ids of rows whose value is NULL (8 bytes each), so that
//    a scan that must return every row (no condition, or ORDER BY <-> read to its end) returns
//    them too. The planner may run such scans because the AM declares amoptionalkey (needed for
//    ORDER BY <-> without a WHERE clause). Ids are appended at the tail; VACUUM removes dead ones
//    in place.
// Posting lists are coded by the core (index_search.hpp): descending length, then ascending id,
// where id = (block << 12) | offset of the heap TID. Every page change goes through GenericXLog.
// Readers pin the metapage while they read a segment or the pending list; VACUUM frees replaced
// pages only after it has held a cleanup lock on the metapage, so no reader is still inside them.
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/reloptions.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/rel.h"
}

#include "core/index/index_search.hpp"
#include "core/index/key_filter.hpp"

#include <vector>

namespace spotsigs::pg::index {

constexpr uint32 kMagic = 0x53504958;  // "SPIX"
constexpr uint32 kVersion = 5;         // 4: segments carry a serial number; 5: NULL rows are indexed
// The oldest format this build reads: a format 4 index answers every scan that needs no row
// whose value is NULL, and refuses (0A000, REINDEX) those that do (require_null_list).
constexpr uint32 kOldestVersion = 4;
// DATA pages keep the offset of every kSampleEvery-th record (uint16s between pd_upper and the
// special space), so a lookup binary-searches them and parses at most kSampleEvery records.
constexpr uint32 kSampleEvery = 16;
constexpr BlockNumber kMetaBlock = 0;
constexpr int kMaxSegments = 16;
constexpr int kMaxPartitions = 512;
constexpr int kMergeSegmentsAt = 8;  // VACUUM rewrites everything into one segment beyond this
constexpr uint16 kSpotsigsPageId = 0xFF93;

// Strategy numbers of the operator class.
constexpr StrategyNumber kStrategySimilar = 1;          // %
constexpr StrategyNumber kStrategyDistance = 2;         // <-> (ORDER BY)
constexpr StrategyNumber kStrategySimilarQuery = 3;     // % spotsigs_query (own threshold)
constexpr StrategyNumber kStrategyContentQuery = 4;     // % spotsigs_content_query (content measure, rechecked)
constexpr StrategyNumber kStrategyContentDistance = 5;  // <-> spotsigs_content_query (ORDER BY, rechecked)

// Page kinds, stored in the special space.
enum PageKind : uint16 { kMetaPage = 1, kDataPage = 2, kDirPage = 3, kChainPage = 4, kPendingPage = 5, kNullPage = 6 };
constexpr uint16 kFlagDeleted = 1;

// The special space of every index page.
struct PageOpaque {
    BlockNumber next;  // right sibling / next page of a stream, or InvalidBlockNumber
    uint16 kind;
    uint16 flags;
    uint16 level;    // 0 for DATA, height for DIR pages
    uint16 page_id;  // kSpotsigsPageId, for tools that identify page types
};

// Where a segment is and what it holds.
struct SegmentDesc {
    BlockNumber root;         // InvalidBlockNumber when the segment has no postings
    uint32 height;            // levels above the DATA level
    BlockNumber first_data;   // leftmost DATA page
    BlockNumber first_chain;  // first page of the chain stream (InvalidBlockNumber if none)
    BlockNumber doclist_blk;  // chain position of the document list (InvalidBlockNumber if none)
    uint32 doclist_off;
    uint32 npages;  // pages the segment occupies
    uint64 ndocs;
    uint64 npostings;
    uint64 nkeys;    // distinct (hash, partition) lists
    double sum_df2;  // sum over lists of count^2 (expected list length for costing)
    uint64 serial;   // unique within the index's storage, never reused (MetaData::next_serial)
};

// The metapage contents.
struct MetaData {
    uint32 magic;
    uint32 version;
    uint32 growth;  // partition growth in percent (reloption partition_growth)
    uint32 nsegments;
    BlockNumber pending_head;  // first pending page, InvalidBlockNumber before the first insert
    uint32 pending_head_off;   // byte offset of the first live pending entry in pending_head
    BlockNumber pending_tail;
    uint32 pending_pages;
    uint64 pending_count;  // entries in the pending list
    uint64 total_docs;     // rows in segments and pending list
    uint32 nparts;
    uint32 pending_gen;  // bumped whenever VACUUM moves pending_head (backend caches check it)
    uint64 next_serial;  // serial of the next segment written (starts at 1)
    SegmentDesc seg[kMaxSegments];
    uint32 part_docs[kMaxPartitions];  // rows per length partition (segments and pending)
    // Format 5 on: the NULL list (rows whose value is NULL; not in total_docs). A format 4
    // metapage ends before these fields: read them only when has_null_list().
    BlockNumber null_head;  // first NULL page, InvalidBlockNumber before the first NULL row
    BlockNumber null_tail;
    uint64 null_count;  // ids in the NULL list
};
// True when the index records its NULL rows (format 5 on).
inline bool has_null_list(const MetaData* m) {
    return m->version >= 5;
}

// Reloptions of a spotsigs index.
struct Options {
    int32 vl_len_;
    int growth;         // partition_growth
    int pending_limit;  // pending_list_limit, in kB (0 = merge only in VACUUM)
};

// First content byte of a page and the usable end.
constexpr uint32 kContentStart = MAXALIGN(SizeOfPageHeaderData);
inline uint32 content_end(Page p) {
    return ((PageHeader)p)->pd_special;
}

// Page helpers.
inline PageOpaque* opaque_of(Page p) {
    return (PageOpaque*)PageGetSpecialPointer(p);
}
inline MetaData* meta_of(Page p) {
    return (MetaData*)PageGetContents(p);
}

// Initializes an empty page of a kind.
void init_page(Page page, PageKind kind, uint16 level);
// Fills page with a fresh metapage for partition growth growth.
void init_metapage(Page page, uint32 growth);
// The partition growth of an index (from its reloptions).
uint32 index_growth(Relation index);
// The pending list size (kB) beyond which an insert merges it (0 = never).
int index_pending_limit(Relation index);
// Merges the pending list into a segment unless another merge or VACUUM is running (then false).
bool merge_pending_if_free(Relation index);
// The partitioning for a growth percent (cached per backend).
const Partitioning& partitioning_for(uint32 growth);
// Reads the metapage into *out (share lock, pin released); ERROR if it is not a spotsigs metapage.
void read_meta(Relation index, MetaData* out);
// Checks a metapage copy's magic and version; ERROR otherwise.
void check_meta(Relation index, const MetaData* m);
// ERROR (index corrupted) unless blk is a block of the index other than the metapage.
void check_block(Relation index, BlockNumber blk);
// A walk along the next links of a page chain. A chain visits each of its pages once, so a walk
// that has taken more steps than the index has blocks besides the metapage has met a cycle.
struct ChainWalk {
    Relation index;
    BlockNumber steps;
};
inline void chain_walk_init(ChainWalk* w, Relation index) {
    w->index = index;
    w->steps = 0;
}
// Counts a step onto block blk and serves interrupts; ERROR (index corrupted) on a cycle.
void chain_step(ChainWalk* w, BlockNumber blk);
// Copies block blk into dst (BLCKSZ bytes) under a share lock; ERROR on a page of the wrong kind
// or a block outside the index. Serves interrupts first, so every page walk can be canceled.
void read_page_copy(Relation index, BlockNumber blk, char* dst, PageKind expect);
// Pins and share-locks block blk, checked like read_page_copy, for reading in place (segment
// pages never change once written); release with UnlockReleaseBuffer.
Buffer pin_page(Relation index, BlockNumber blk, PageKind expect);
// The two halves of pin_page: a pin (the page's address is known from then on, so it can be
// prefetched), then the share lock and the check (on failure the buffer is released).
Buffer pin_unlocked(Relation index, BlockNumber blk);
void lock_pinned(Relation index, Buffer buf, PageKind expect);
// A new or recycled block, returned pinned and exclusively locked.
Buffer new_buffer(Relation index);
// Reserves a block for a page that write_page() fills later.
BlockNumber alloc_block(Relation index);
// Writes a whole page image to block blk as a WAL-logged full image.
void write_page(Relation index, BlockNumber blk, Page image);
// Marks blocks deleted (WAL-logged) and records them in the free space map.
void free_blocks(Relation index, const BlockNumber* blks, int n);
// ERROR with ERRCODE_INDEX_CORRUPTED naming the index.
[[noreturn]] void corrupted(Relation index, const char* what, BlockNumber blk);

// Packs a heap TID into a posting id and back: (block << 12) | offset. Offsets never exceed
// MaxOffsetNumber (2048 with 8 kB pages), so 12 bits hold them and ids stay short as varints.
constexpr unsigned kOffsetBits = 12;
static_assert(MaxOffsetNumber < (1u << kOffsetBits), "offsets must fit kOffsetBits");
inline uint64 tid_to_id(ItemPointer t) {
    return (uint64(ItemPointerGetBlockNumberNoCheck(t)) << kOffsetBits) | ItemPointerGetOffsetNumberNoCheck(t);
}
inline void id_to_tid(uint64 id, ItemPointer t) {
    ItemPointerSet(t, BlockNumber(id >> kOffsetBits), OffsetNumber(id & ((1u << kOffsetBits) - 1)));
}

// One partition list of a hash record: count and either inline bytes or a chain position.
struct PartRef {
    uint32 part;
    uint32 count;
    bool external;
    BlockNumber blk;
    uint32 off;
    const unsigned char* bytes;
    uint32 nbytes;
};

// The record samples of a DATA page: count and pointer (uint16 offsets, possibly unaligned).
inline uint32 sample_count(Page p) {
    return (((PageHeader)p)->pd_special - ((PageHeader)p)->pd_upper) / 2;
}
inline uint16 sample_at(Page p, uint32 j) {
    uint16 v;
    memcpy(&v, (char*)p + ((PageHeader)p)->pd_upper + 2 * j, 2);
    return v;
}

// Parses one hash record at *pos; false if malformed. parts must hold kMaxPartitions entries.
bool parse_record(const unsigned char*& pos, const unsigned char* end, uint64* hash, int* nparts, PartRef* parts);

// Iterates one posting list (inline or in a chain), reading chain pages as needed.
struct ListIter {
    Relation index;
    const unsigned char* pos;
    const unsigned char* end;
    uint32 remaining;   // postings still to deliver
    uint32 piece_left;  // postings left in the current piece
    bool external;
    bool have_prev;
    Posting prev;
    BlockNumber cur_blk;
    char* page;      // chain page copy (palloc'd BLCKSZ)
    ChainWalk walk;  // the chain pages read
};
// Starts iterating a list.
void list_iter_init(ListIter* it, Relation index, const PartRef* ref, char* pagebuf);
// Next posting; false at the end. ERROR on corruption.
bool list_iter_next(ListIter* it, Posting* out);

// A pending entry read from the pending list.
struct PendingEntry {
    uint64 id;
    MultisetView sig;
};
// Pending entry header in the stream: TID id (8 bytes) and payload size (4 bytes).
constexpr uint32 kPendingHeader = 12;
// Reads every pending entry from (blk, off) to the end of the list (values palloc'd, 8-aligned).
// Sets *n; stops at end_blk/end_off when end_blk is valid. ERROR on corruption. When stop_blk is
// not null, *stop_blk/*stop_off receive the position just after the last entry read (where a
// later call may resume: the list only grows at its end until VACUUM moves its head).
PendingEntry* read_pending(Relation index, BlockNumber blk, uint32 off, BlockNumber end_blk, uint32 end_off, int64* n,
                           uint32* npages, BlockNumber* stop_blk = nullptr, uint32* stop_off = nullptr);

// The ids of the NULL list (m: a metapage copy of the index, format 5 on), palloc'd, in *n.
uint64* read_null_ids(Relation index, const MetaData* m, int64* n);
// ERROR 0A000 with a REINDEX hint unless the index records its NULL rows: for scans that must
// return every row of the table.
void require_null_list(Relation index, const MetaData* m);
// Ids per NULL page.
constexpr uint32 kNullsPerPage = (BLCKSZ - kContentStart - MAXALIGN(sizeof(PageOpaque))) / 8;

// ---- searches (scan.cpp) ----
// Ids (packed heap TIDs) with their similarity, in palloc'd arrays.
struct Results {
    uint64* ids;
    double* sims;
    int64 n;
};
// Every indexed id with similarity >= tau to q, in segments and the pending list, exactly (the
// similarity computed as similarity() computes it); dead and invisible rows included, in no order.
// With nexact, the segments' search may stop early (core threshold_search's unverified): then
// entries [0, *nexact) are exact matches and the rest candidates whose similarity is at most their
// sims value, for the caller to compute from the rows (they include every other match). With
// measure kContentBound, the same for the content bound (core content_bound) in place of the
// similarity.
Results threshold_matches(Relation index, const MultisetView& q, double tau, int64* nexact = nullptr,
                          SearchMeasure measure = SearchMeasure::kPlain);
// Every indexed id whose content similarity to qc (a row's content: no signature of the template)
// may reach tau, i.e. a superset of them, for the caller to verify: the ids whose content bound
// reaches tau (core/index/index_search.hpp proves that it keeps every content match), each once,
// with an upper bound of its content similarity in sims. Dead and invisible rows included.
Results content_candidates(Relation index, const MultisetView& qc, double tau);
// The number of rows the metapage counts (segments and pending list): every row ever indexed,
// dead or invisible ones included, less those VACUUM removed.
uint64 indexed_rows(Relation index);

// ---- the backend's cache of pending lists (pending_cache.cpp) ----
// Every pending entry of index (as of meta, or later) with similarity >= tau to q (with measure
// kContentBound: content bound >= tau), from the backend's searchable copy of the pending list,
// after reading the entries appended since the last call: *out (palloc'd) and *nout. Returns
// false when the list is too large to cache, and in the backend's first two searches of the index
// (the copy starts at its third); the caller then compares q with every entry itself. Call
// outside pg_entry: it reads pages.
bool pending_cache_search(Relation index, const MetaData* meta, const MultisetView& q, double tau, Match** out,
                          int64* nout, SearchMeasure measure = SearchMeasure::kPlain);

// ---- the backend's filters of segments it wrote (segment_filters.cpp) ----
// The distinct hashes a segment writer saw, up to a cap (palloc'd; complete is false past it).
struct SegmentHashes {
    uint64* hashes;
    uint64 n;
    bool complete;
};
// Remembers a filter of the hashes of segment serial of index, which this backend has just
// written and published (call after the metapage names it): searches of this backend then skip
// the lookups of hashes the segment cannot hold. Does nothing for an incomplete or large set.
void segment_filter_remember(Relation index, uint64 serial, const SegmentHashes* keys);
// The filter of segment serial of index, or null when this backend has none (no PostgreSQL call:
// usable inside pg_entry).
const KeyFilter* segment_filter(Relation index, uint64 serial);

// ---- the backend's copies of segment directories (segment_dirs.cpp) ----
// The lowest directory level of a segment: the first hash and the block of every DATA page.
struct SegmentDirectory {
    std::vector<uint64> first;       // ascending
    std::vector<BlockNumber> block;  // block[k] holds the hashes in [first[k], first[k + 1])
    // The DATA block that may hold hash h (InvalidBlockNumber when h is below the first).
    BlockNumber data_block(uint64 h) const;
    // Heap bytes held.
    size_t bytes() const noexcept { return first.capacity() * sizeof(uint64) + block.capacity() * sizeof(BlockNumber); }
    // Exchanges contents with o.
    void swap(SegmentDirectory& o) noexcept {
        first.swap(o.first);
        block.swap(o.block);
    }
};
// The backend's copy of seg's directory, or null while the caller should descend the segment
// itself: lookups (the hashes the caller is about to look up there) count towards copying it.
// Call inside pg_entry: its page reads go through pg_guard.
const SegmentDirectory* segment_directory(Relation index, const SegmentDesc& seg, uint64 lookups);

// ---- segment writing (build and vacuum) ----
struct SegmentWriter;
// Starts writing a segment into index.
SegmentWriter* segment_begin(Relation index, uint32 growth);
// Makes the writer collect the segment's distinct hashes for segment_finish (up to
// kFilterMaxKeys; past that it stops and reports them incomplete).
void segment_collect_hashes(SegmentWriter* w);
// Adds one posting; calls come sorted by (hash, partition, length desc, id).
void segment_add(SegmentWriter* w, uint64 hash, uint32 part, const Posting& p);
// Adds one document (after all postings), sorted by (length desc, id); freq = distinct count.
void segment_add_doc(SegmentWriter* w, uint64 id, uint32 length, uint32 distinct);
// Flushes everything and describes the segment (serial 0: the caller assigns it when it
// publishes the segment). With keys, hands over the distinct hashes collected (see
// segment_collect_hashes).
void segment_finish(SegmentWriter* w, SegmentDesc* out, SegmentHashes* keys = nullptr);
// Segments of at most this many distinct hashes get a backend filter (16 bits each: 2 MB).
constexpr uint64 kFilterMaxKeys = uint64(1) << 20;

// Sorts postings and documents within maintenance_work_mem and writes them as a segment.
struct SegmentSorter;
// Starts a sorter with work_mem_kb of memory.
SegmentSorter* sorter_begin(int work_mem_kb);
// Starts a sorter that holds at most max_postings postings and max_docs rows as flat arrays in
// memory (about 32 and 16 bytes each) and sorts them there: for merges of the pending list, whose
// size the caller knows beforehand.
SegmentSorter* sorter_begin_in_memory(uint64 max_postings, uint64 max_docs);
// Adds one row's signature to the sorter; part is its length partition.
void sorter_add(SegmentSorter* s, uint64 id, const MultisetView& sig, uint32 part);
// Sorts and writes a segment; updates part_docs counts. Reports progress when report is true.
// With keys, also collects the segment's distinct hashes (up to kFilterMaxKeys) into *keys.
void sorter_finish(SegmentSorter* s, Relation index, uint32 growth, SegmentDesc* out, uint32* part_docs, bool report,
                   SegmentHashes* keys = nullptr);
// Adds one posting of a row already split into postings (VACUUM re-sorting a segment).
void sorter_add_posting(SegmentSorter* s, uint64 hash, uint32 part, const Posting& p);
// Adds one row's document record (length and distinct count).
void sorter_add_doc(SegmentSorter* s, uint64 id, uint32 length, uint32 distinct);
// Number of rows added so far.
uint64 sorter_rows(const SegmentSorter* s);

// ---- AM callbacks ----
IndexBuildResult* ambuild(Relation heap, Relation index, struct IndexInfo* info);
void ambuildempty(Relation index);
bool aminsert(Relation index, Datum* values, bool* isnull, ItemPointer heap_tid, Relation heap,
              IndexUniqueCheck check_unique, bool index_unchanged, struct IndexInfo* info);
IndexBulkDeleteResult* ambulkdelete(IndexVacuumInfo* info, IndexBulkDeleteResult* stats,
                                    IndexBulkDeleteCallback callback, void* callback_state);
// VACUUM's part for the NULL list: removes the ids the callback reports dead, in place; returns
// how many.
double vacuum_null_list(Relation index, IndexBulkDeleteCallback cb, void* cbs);
IndexBulkDeleteResult* amvacuumcleanup(IndexVacuumInfo* info, IndexBulkDeleteResult* stats);
void amcostestimate(struct PlannerInfo* root, struct IndexPath* path, double loop_count, Cost* startup, Cost* total,
                    Selectivity* selectivity, double* correlation, double* pages);
bytea* amoptions(Datum reloptions, bool validate);
char* ambuildphasename(int64 phase);
bool amvalidate(Oid opclassoid);
IndexScanDesc ambeginscan(Relation index, int nkeys, int norderbys);
void amrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys);
bool amgettuple(IndexScanDesc scan, ScanDirection dir);
int64 amgetbitmap(IndexScanDesc scan, TIDBitmap* tbm);
void amendscan(IndexScanDesc scan);

// Build subphases reported in pg_stat_progress_create_index.
constexpr int64 kPhaseScan = 2;
constexpr int64 kPhaseSort = 3;
constexpr int64 kPhaseWrite = 4;

}  // namespace spotsigs::pg::index
