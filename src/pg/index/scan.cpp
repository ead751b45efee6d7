// Index scans: `sig % q` (plain and bitmap) and `ORDER BY sig <-> q` (ordered by exact distance).
//
// The search itself (core threshold_search) runs inside pg_entry over a PostingSource that reads
// page copies through pg_guard. C-style wrappers pin the metapage around each search, so VACUUM
// cannot recycle the pages being read.
#include "pg/index/index.hpp"

extern "C" {
#include "access/relscan.h"
#include "nodes/tidbitmap.h"
#include "utils/guc.h"
}

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/index/df_cache.hpp"
#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "pg/gucs.hpp"
#include "pg/type/datum.hpp"
#include "pg/type/query.hpp"

namespace spotsigs::pg::index {

namespace {

// Posting lists of the query's signatures, looked up in the index's segments.
class PageSource : public PostingSource {
public:
    // A source for query q over the segments of meta (only partitions overlapping range); the
    // signatures are looked up when the search prepares, counts or scans them.
    PageSource(Relation index, const MetaData& meta, const MultisetView& q, LengthRange range)
        : index_(index),
          meta_(meta),
          q_(q),
          parts_(partitioning_for(meta.growth)),
          subs_(q.size),
          looked_up_(q.size, false),
          total_(q.size, 0) {
        if (range.empty()) return;
        plo_ = parts_.partition_of(range.lo);
        phi_ = parts_.partition_of(range.hi);
    }

    // Looks up the signatures idx[0..n) not looked up yet, in every segment together.
    void prepare(const uint32_t* idx, size_t n) override {
        std::vector<uint32_t> todo;
        for (size_t k = 0; k < n; ++k)
            if (!looked_up_[idx[k]]) todo.push_back(idx[k]);
        if (todo.empty()) return;
        std::sort(todo.begin(), todo.end());  // ascending hashes
        for (uint32_t i : todo) looked_up_[i] = true;
        if (plo_ > phi_) return;
        std::vector<uint32_t> maybe;
        for (uint32 s = 0; s < meta_.nsegments; ++s) {
            // A segment this backend wrote has a filter: the hashes it rules out are not there.
            const KeyFilter* f = segment_filter(index_, meta_.seg[s].serial);
            if (f == nullptr) {
                lookup_segment(meta_.seg[s], todo);
                continue;
            }
            maybe.clear();
            for (uint32_t i : todo)
                if (f->may_contain(q_.hashes[i])) maybe.push_back(i);
            if (!maybe.empty()) lookup_segment(meta_.seg[s], maybe);
        }
    }

    // Postings of signature i in partitions overlapping [lo, hi].
    uint64_t count(uint32_t i, uint64_t lo, uint64_t hi) override {
        if (!looked_up_[i]) prepare(&i, 1);
        uint64_t n = 0;
        for (const Sub& s : subs_[i])
            if (overlaps(s.part, lo, hi)) n += s.count;
        return n;
    }

    // Records, for the signatures looked up, their postings over all partitions in cache.
    void remember(DfCache& cache) const {
        for (uint32_t i = 0; i < q_.size; ++i)
            if (looked_up_[i]) cache.put(q_.hashes[i], total_[i]);
    }

    // Delivers the postings of signature i in [lo, hi], list by list.
    void scan(uint32_t i, uint64_t lo, uint64_t hi, const std::function<bool(const Posting&)>& fn) override {
        if (!looked_up_[i]) prepare(&i, 1);
        for (const Sub& s : subs_[i]) {
            if (!overlaps(s.part, lo, hi)) continue;
            if (!scan_sub(s, lo, hi, fn)) return;
        }
    }

private:
    // One partition list of one signature in one segment.
    struct Sub {
        uint32 part;
        uint32 count;
        bool external;
        BlockNumber blk;
        uint32 off;
        std::string bytes;
    };

    // True when partition p holds lengths in [lo, hi].
    bool overlaps(uint32 p, uint64_t lo, uint64_t hi) const { return parts_.lower(p) <= hi && parts_.upper(p) >= lo; }

    // Copies block blk into buf, checking its kind.
    void read(BlockNumber blk, char* buf, PageKind kind) {
        pg_guard([&] { read_page_copy(index_, blk, buf, kind); });
    }

    // Pins and share-locks block blk for reading in place: a lookup touches a few cache lines of
    // a page, a copy all of them (copies of cold pages dominated the search's time).
    Buffer pin(BlockNumber blk, PageKind kind) {
        Buffer b = InvalidBuffer;
        pg_guard([&] { b = pin_page(index_, blk, kind); });
        return b;
    }

    // Releases a buffer from pin(), if any.
    void unpin(Buffer& b) {
        if (!BufferIsValid(b)) return;
        Buffer x = b;
        b = InvalidBuffer;
        pg_guard([&] { UnlockReleaseBuffer(x); });
    }

    // Looks each query hash (ascending) up in a segment and records matching lists. First the
    // DATA block of every hash (from the backend's copy of the directory, or by descending it,
    // copying directory pages), then the DATA pages in order, each pinned kAhead pages before it
    // is read and its header, special space and record samples prefetched: the lookups are bound
    // by memory latency on cold buffers, and this overlaps the misses of several pages.
    void lookup_segment(const SegmentDesc& seg, const std::vector<uint32_t>& todo) {
        if (seg.root == InvalidBlockNumber) return;
        const uint32 n = (uint32)todo.size();
        std::vector<BlockNumber> leaf(n, InvalidBlockNumber);
        if (const SegmentDirectory* dir = segment_directory(index_, seg, n)) {
            for (uint32 k = 0; k < n; ++k) leaf[k] = dir->data_block(q_.hashes[todo[k]]);
        } else {
            descend(seg, todo, leaf);
        }
        std::vector<BlockNumber> blocks;  // distinct DATA blocks, in the order of the hashes
        std::vector<uint32> first;        // the first (position in todo of a) hash of each
        for (uint32 k = 0; k < n; ++k) {
            if (leaf[k] == InvalidBlockNumber) continue;
            if (blocks.empty() || blocks.back() != leaf[k]) {
                blocks.push_back(leaf[k]);
                first.push_back(k);
            }
        }
        first.push_back(n);
        std::vector<Buffer> bufs(blocks.size(), InvalidBuffer);
        size_t locked = SIZE_MAX, ahead = 0;
        try {
            for (size_t j = 0; j < blocks.size(); ++j) {
                for (; ahead < blocks.size() && ahead <= j + kAhead; ++ahead) {
                    pg_guard([&] { bufs[ahead] = pin_unlocked(index_, blocks[ahead]); });
                    const char* pg = (const char*)BufferGetPage(bufs[ahead]);
                    __builtin_prefetch(pg);
                    __builtin_prefetch(pg + BLCKSZ - 64);
                    __builtin_prefetch(pg + BLCKSZ - 128);
                }
                pg_guard([&] { lock_pinned(index_, bufs[j], kDataPage); });
                locked = j;
                const char* dp = (const char*)BufferGetPage(bufs[j]);
                const unsigned char* dpos = (const unsigned char*)dp + kContentStart;
                for (uint32 k = first[j]; k < first[j + 1]; ++k)
                    if (leaf[k] == blocks[j]) find_in_page(dp, q_.hashes[todo[k]], todo[k], dpos);
                Buffer b = bufs[j];
                bufs[j] = InvalidBuffer;
                locked = SIZE_MAX;
                pg_guard([&] { UnlockReleaseBuffer(b); });
            }
        } catch (...) {
            for (size_t k = 0; k < bufs.size(); ++k) {
                if (!BufferIsValid(bufs[k])) continue;
                Buffer b = bufs[k];
                bool l = k == locked;
                bufs[k] = InvalidBuffer;
                pg_guard([&] {
                    if (l) UnlockReleaseBuffer(b);
                    else ReleaseBuffer(b);
                });
            }
            throw;
        }
    }

    // Sets leaf[k] to the DATA block that may hold the query hash todo[k] (InvalidBlockNumber
    // when the hash is below the segment's first).
    void descend(const SegmentDesc& seg, const std::vector<uint32_t>& todo, std::vector<BlockNumber>& leaf) {
        uint32 height = seg.height;
        std::vector<std::vector<char>> cache(height + 1, std::vector<char>(BLCKSZ));
        std::vector<BlockNumber> cached(height + 1, InvalidBlockNumber);
        for (uint32 k = 0; k < todo.size(); ++k) {
            uint64 h = q_.hashes[todo[k]];
            BlockNumber blk = seg.root;
            bool found_path = true;
            for (uint32 lvl = height; lvl > 0; --lvl) {
                char* pg = cache[lvl].data();
                if (cached[lvl] != blk) {
                    read(blk, pg, kDirPage);
                    cached[lvl] = blk;
                    if (opaque_of((Page)pg)->level != lvl)
                        pg_guard([&] { corrupted(index_, "directory level mismatch", blk); });
                }
                uint32 lower = ((PageHeader)pg)->pd_lower;
                uint32 n = (lower - kContentStart) / 12;
                // last entry with first hash <= h
                uint32 lo = 0, hi = n;
                while (lo < hi) {
                    uint32 mid = (lo + hi) / 2;
                    uint64 fh;
                    std::memcpy(&fh, pg + kContentStart + 12 * mid, 8);
                    if (fh <= h) lo = mid + 1;
                    else hi = mid;
                }
                if (lo == 0) {
                    found_path = false;
                    break;
                }
                std::memcpy(&blk, pg + kContentStart + 12 * (lo - 1) + 8, 4);
            }
            if (found_path) leaf[k] = blk;
        }
    }

    // Looks up hash h (query signature i) in the DATA page dp, resuming at the cursor dpos (hashes
    // come ascending), and records its lists in partitions [plo_, phi_].
    void find_in_page(const char* dp, uint64 h, uint32 i, const unsigned char*& dpos) {
        // Jump to the last sampled record with hash <= h, unless the cursor is already past it.
        uint32 ns = sample_count((Page)dp), lo = 0, hi = ns;
        uint32 lower = ((PageHeader)dp)->pd_lower;
        while (lo < hi) {
            uint32 mid = (lo + hi) / 2;
            uint16 off = sample_at((Page)dp, mid);
            uint64 sh;
            if (off < kContentStart || (uint32)off + 8 > lower)
                throw Error(ErrorKind::DataCorrupted, "corrupt spotsigs index", "bad record sample");
            std::memcpy(&sh, dp + off, 8);
            if (sh <= h) lo = mid + 1;
            else hi = mid;
        }
        if (lo > 0) {
            const unsigned char* sp = (const unsigned char*)dp + sample_at((Page)dp, lo - 1);
            if (sp > dpos) dpos = sp;
        }
        const unsigned char* end = (const unsigned char*)dp + lower;
        while (dpos < end) {
            const unsigned char* start = dpos;
            uint64 rh;
            int np;
            if (!parse_record(dpos, end, &rh, &np, refs_.data()))
                throw Error(ErrorKind::DataCorrupted, "corrupt spotsigs index", "malformed hash record");
            if (rh < h) continue;
            if (rh > h) {
                dpos = start;  // a later, larger query hash may match it
                break;
            }
            for (int k = 0; k < np; ++k) {
                const PartRef& r = refs_[k];
                total_[i] += r.count;
                if (r.part < plo_ || r.part > phi_) continue;
                Sub s{r.part, r.count, r.external, r.blk, r.off, std::string()};
                if (!r.external) s.bytes.assign((const char*)r.bytes, r.nbytes);
                subs_[i].push_back(std::move(s));
            }
            break;
        }
    }

    // Delivers one list's postings in [lo, hi]; false when fn asked to stop.
    bool scan_sub(const Sub& s, uint64_t lo, uint64_t hi, const std::function<bool(const Posting&)>& fn) {
        Posting p, prev;
        if (!s.external) {
            const unsigned char* pos = (const unsigned char*)s.bytes.data();
            const unsigned char* end = pos + s.bytes.size();
            for (uint32 k = 0; k < s.count; ++k) {
                decode_posting(pos, end, p, k ? &prev : nullptr);
                prev = p;
                if (p.length > hi) continue;
                if (p.length < lo) return true;  // descending lengths: nothing further qualifies
                if (!fn(p)) return false;
            }
            return true;
        }
        Buffer cbuf = InvalidBuffer;
        try {
            BlockNumber blk = s.blk;
            uint32 off = s.off;
            uint32 left = s.count;
            while (left > 0) {
                cbuf = pin(blk, kChainPage);
                const char* pg = (const char*)BufferGetPage(cbuf);
                uint32 lower = ((PageHeader)pg)->pd_lower;
                if (off < kContentStart || off + 2 > lower)
                    throw Error(ErrorKind::DataCorrupted, "corrupt spotsigs index", "posting run outside its page");
                uint16 n;
                std::memcpy(&n, pg + off, 2);
                if (n == 0 || n > left)
                    throw Error(ErrorKind::DataCorrupted, "corrupt spotsigs index", "bad posting run size");
                const unsigned char* pos = (const unsigned char*)pg + off + 2;
                const unsigned char* end = (const unsigned char*)pg + lower;
                for (uint32 k = 0; k < n; ++k) {
                    decode_posting(pos, end, p, k ? &prev : nullptr);
                    prev = p;
                    if (p.length > hi) continue;
                    if (p.length < lo || !fn(p)) {  // descending lengths: nothing further qualifies
                        bool more = p.length < lo;
                        unpin(cbuf);
                        return more;
                    }
                }
                left -= n;
                blk = opaque_of((Page)pg)->next;
                off = kContentStart;
                unpin(cbuf);
            }
        } catch (...) {
            unpin(cbuf);
            throw;
        }
        return true;
    }

    static constexpr size_t kAhead = 6;  // DATA pages pinned and prefetched ahead of the one read

    Relation index_;
    const MetaData& meta_;
    const MultisetView& q_;
    const Partitioning& parts_;
    std::vector<std::vector<Sub>> subs_;
    std::vector<bool> looked_up_;  // signature i has been looked up in every segment
    std::vector<uint64_t> total_;  // its postings over all partitions and segments
    std::vector<PartRef> refs_ = std::vector<PartRef>(kMaxPartitions);
    uint32 plo_ = 1, phi_ = 0;
};

// Searches of an index that look every query signature up (exact counts, and the cache of
// frequent signatures fills up) before the cache's estimates order the searches instead.
constexpr uint64_t kDfWarmup = 16;

// The backend's caches of frequent signatures, for the indexes it searched last (least recently
// used first). Counts only order searches, so a cache outliving a REINDEX or VACUUM costs time only.
struct DfCacheSlot {
    Oid index;
    std::unique_ptr<DfCache> cache;
};
constexpr size_t kDfCaches = 4;
std::vector<DfCacheSlot> df_caches;

// The cache of index (created empty on first use, evicting the least recently used).
DfCache& df_cache_for(Oid index) {
    for (size_t k = 0; k < df_caches.size(); ++k)
        if (df_caches[k].index == index) {
            std::rotate(df_caches.begin() + k, df_caches.begin() + k + 1, df_caches.end());
            return *df_caches.back().cache;
        }
    if (df_caches.size() == kDfCaches) df_caches.erase(df_caches.begin());
    df_caches.push_back(DfCacheSlot{index, std::make_unique<DfCache>(17, 16)});
    return *df_caches.back().cache;
}

}  // namespace

// Threshold search over segments and pending entries: every id with similarity >= tau.
// C-style wrapper: pins the metapage for the duration and runs the C++ search in pg_entry. The
// pending entries come from the backend's cached copy (pending_cache.cpp), or, when the list is
// too large to cache, are read and compared one by one.
Results threshold_matches(Relation index, const MultisetView& q, double tau, int64* nexact, SearchMeasure measure) {
    Results res{nullptr, nullptr, 0};
    Buffer mb = ReadBuffer(index, kMetaBlock);
    LockBuffer(mb, BUFFER_LOCK_SHARE);
    MetaData* meta = (MetaData*)palloc(sizeof(MetaData));
    std::memcpy(meta, meta_of(BufferGetPage(mb)), sizeof(MetaData));
    LockBuffer(mb, BUFFER_LOCK_UNLOCK);
    check_meta(index, meta);
    Match* cached = nullptr;
    int64 ncached = 0, npend = 0;
    PendingEntry* pend = nullptr;
    if (!pending_cache_search(index, meta, q, tau, &cached, &ncached, measure)) {
        uint32 ppages;
        pend = read_pending(index, meta->pending_head, meta->pending_head_off, InvalidBlockNumber, 0, &npend, &ppages);
    }
    pg_entry([&] {
        std::vector<Match> found;
        std::vector<Unverified> rest;
        if (!q.empty()) {
            PageSource src(
                index, *meta, q,
                measure == SearchMeasure::kPlain ? length_range(q.length, tau) : content_length_range(q.length, tau));
            DfCache& cache = df_cache_for(RelationGetRelid(index));
            std::vector<uint64_t> est;
            if (cache.searches >= kDfWarmup) {
                est.resize(q.size);
                for (uint32_t i = 0; i < q.size; ++i) est[i] = cache.get(q.hashes[i]);
            }
            found = threshold_search(q, tau, src, est.empty() ? nullptr : est.data(),
                                     nexact != nullptr ? &rest : nullptr, measure);
            src.remember(cache);
            cache.searches++;
        }
        found.insert(found.end(), cached, cached + ncached);
        for (int64 k = 0; k < npend && !q.empty(); ++k) {
            double s = measure == SearchMeasure::kPlain ? similarity(q, pend[k].sig)
                                                        : content_bound(overlap(q, pend[k].sig), q.length);
            if (s >= tau) found.push_back(Match{pend[k].id, s});
        }
        if (nexact != nullptr) *nexact = (int64)found.size();
        for (const Unverified& u : rest) found.push_back(Match{u.id, u.bound});
        pg_guard([&] {
            size_t n = found.size() ? found.size() : 1;
            res.ids = (uint64*)palloc(sizeof(uint64) * n);
            res.sims = (double*)palloc(sizeof(double) * n);
        });
        for (size_t k = 0; k < found.size(); ++k) {
            res.ids[k] = found[k].id;
            res.sims[k] = found[k].similarity;
        }
        res.n = (int64)found.size();
        return Datum(0);
    });
    ReleaseBuffer(mb);
    return res;
}

namespace {

// Every indexed id (document lists of all segments, the pending list, then the NULL list): a
// scan without a condition returns every row of the table. ERROR for an index without a NULL list.
Results all_ids(Relation index) {
    Results res{nullptr, nullptr, 0};
    Buffer mb = ReadBuffer(index, kMetaBlock);
    LockBuffer(mb, BUFFER_LOCK_SHARE);
    MetaData* meta = (MetaData*)palloc(sizeof(MetaData));
    std::memcpy(meta, meta_of(BufferGetPage(mb)), sizeof(MetaData));
    LockBuffer(mb, BUFFER_LOCK_UNLOCK);
    check_meta(index, meta);
    require_null_list(index, meta);
    int64 cap = 1024, n = 0;
    res.ids = (uint64*)palloc(sizeof(uint64) * cap);
    char* page = (char*)palloc(BLCKSZ);
    for (uint32 s = 0; s < meta->nsegments; ++s) {
        const SegmentDesc& seg = meta->seg[s];
        if (seg.doclist_blk == InvalidBlockNumber) continue;
        PartRef ref{0, (uint32)seg.ndocs, true, seg.doclist_blk, seg.doclist_off, nullptr, 0};
        ListIter it;
        list_iter_init(&it, index, &ref, page);
        Posting p;
        while (list_iter_next(&it, &p)) {
            if (n == cap) {
                cap *= 2;
                res.ids = (uint64*)repalloc(res.ids, sizeof(uint64) * cap);
            }
            res.ids[n++] = p.id;
        }
    }
    int64 npend;
    uint32 ppages;
    PendingEntry* pend =
        read_pending(index, meta->pending_head, meta->pending_head_off, InvalidBlockNumber, 0, &npend, &ppages);
    for (int64 k = 0; k < npend; ++k) {
        if (n == cap) {
            cap *= 2;
            res.ids = (uint64*)repalloc(res.ids, sizeof(uint64) * cap);
        }
        res.ids[n++] = pend[k].id;
    }
    int64 nnull;
    uint64* nulls = read_null_ids(index, meta, &nnull);
    if (n + nnull > cap) res.ids = (uint64*)repalloc_huge(res.ids, sizeof(uint64) * (n + nnull));
    std::memcpy(res.ids + n, nulls, sizeof(uint64) * nnull);
    n += nnull;
    ReleaseBuffer(mb);
    res.n = n;
    res.sims = (double*)palloc(sizeof(double) * (n ? n : 1));
    for (int64 k = 0; k < n; ++k) res.sims[k] = 0.0;
    return res;
}

// ---- content lengths of segment rows, for exact content distances without the heap ----
//
// An ordered content scan only knows a row's content bound fl(o / |qc|) from the postings, since
// its content length |bc| = |b| - (the frequencies of b's template signatures) depends on the
// template; every row whose bound lies below the k-th distance is fetched and rechecked. A backend
// that runs such scans of an index against one template repeatedly derives |bc| for every row of
// the index's segments from the segments themselves (a row's template part is the sum of its
// frequencies in the template signatures' lists), once, and then gives those rows their exact
// distance. Exactness: a segment is written once and never changed (a rewrite makes a new one with
// a new serial), and VACUUM removes a row's entries from every segment before its heap slot can be
// reused; so while a segment is in the metapage each of its ids names the row whose value it
// indexed (a slot reused after a scan began holds a row the scan's snapshot does not see). Rows in
// segments written since, and pending rows, keep the bound and the executor's recheck.
struct ContentLengths {
    Oid index = InvalidOid;
    SPOTSIGS_STORAGE_T storage{};   // a REINDEX or TRUNCATE starts serials again in new storage
    TemplateRef tmpl;               // held, so its address identifies it while this lives
    std::vector<uint64_t> serials;  // the segments covered
    // A row: its id, content length and its segment's position in serials, in one slot (a probe
    // is one cache miss).
    struct Slot {
        uint64_t id;
        uint32_t clen;
        uint32_t seg;
    };
    std::vector<Slot> slots;  // open addressing; id kEmpty marks a free slot
    static constexpr uint64_t kEmpty = UINT64_MAX;

    size_t slot(uint64_t id) const {
        uint64_t h = id * 0x9E3779B97F4A7C15ull;
        return (size_t)(h >> 20) & (slots.size() - 1);
    }
    // The slot of id, or of the free slot where it would go.
    size_t probe(uint64_t id) const {
        size_t s = slot(id);
        while (slots[s].id != kEmpty && slots[s].id != id) s = (s + 1) & (slots.size() - 1);
        return s;
    }
    // Starts loading the slot where id's probe begins.
    void prefetch(uint64_t id) const { __builtin_prefetch(&slots[slot(id)]); }
};

// Bytes of one slot of ContentLengths; the table has two slots per row at least.
constexpr size_t kLengthSlotBytes = sizeof(ContentLengths::Slot);
// The most memory a backend's table may take (tables of up to 4,194,304 rows: 2^23 slots).
constexpr size_t kLengthsMaxBytes = 128u << 20;

// The backend's table (of the index and template searched by content last) and the rows its
// ordered content scans have had rechecked since it last changed index or template: a table is
// built once those rechecks reach a share of the postings in the index's segments (which bound
// the postings the count reads), so that a backend pays for the count only after its rechecks
// have cost a part of what the count costs, and a backend that orders by content a few times
// never pays for it (a recheck reads a row from the heap, often from TOAST, and looks every
// signature of it up in the template; the count decodes and files one posting).
std::shared_ptr<const ContentLengths> backend_lengths;
struct RecheckCount {
    Oid index = InvalidOid;
    const PreparedTemplate* tmpl = nullptr;  // compared, never followed
    uint64_t rows = 0;
};
RecheckCount recheck_count;
// The share: a table is built after rechecks of (postings in segments) / kPostingsPerRecheck rows.
constexpr uint64_t kPostingsPerRecheck = 2048;

// The table being built, a slice per ordered content scan, so that no one query pays for the
// whole count: held here, not by a local, since PostgreSQL's errors skip C++ frames. The build
// covers the segments of its own copy of the metapage; it goes on only while every one of them
// is still in the metapage (a segment is never changed while it is there, so its pages read in
// different scans agree), and starts again otherwise. The rows keep the recheck until it is done.
std::shared_ptr<ContentLengths> building;
MetaData building_meta;      // the segments the build covers
uint32 building_seg = 0;     // the next segment whose document list the build reads
size_t building_sig = 0;     // the next template signature whose lists the build subtracts
bool building_torn = false;  // a step was left by an error: the table is partly filed
uint32 building_scans = 0;   // the scans that have given the build a step since it (re)started
ListIter building_iter;      // the document list being read, when building_in_list
bool building_in_list = false;
char* building_page = nullptr;  // building_iter's page copy (TopMemoryContext, kept for reuse)
// The time one scan gives the build at most (it does at least one step: kCountDocs rows of a
// segment's document list or a batch of kCountBatch template signatures, and stops at the first
// step past the time). The scans that fall due while the count goes on still recheck the rows it
// has not counted, so a slice too thin costs more in rechecks over its many scans than it spares
// each one; this one stays within the cost of an ordinary recheck-heavy scan.
constexpr int64_t kCountSliceMicros = 20000;
constexpr size_t kCountBatch = 256;
// The rows of a document list one step files (a step of the count reads at most this many).
constexpr uint32 kCountDocs = 4096;

}  // namespace

// spotsigs.content_count_step (tests only): when positive, the units of the count one scan does,
// in place of the time budget: each row filed from a segment's document list is one unit, each
// template signature whose lists are subtracted another; so a test can make the count span a known
// number of scans.
int content_count_step = 0;

void register_index_gucs() {
    DefineCustomIntVariable(
        "spotsigs.content_count_step",
        "For tests: the units of the count of content lengths one ordered content scan does.",
        "4096 rows of a segment's document list are one unit, a template signature's lists another; "
        "0 (the default) gives each scan a time budget instead.",
        &content_count_step, 0, 0, INT_MAX, PGC_SUSET, GUC_NOT_IN_SAMPLE, nullptr, nullptr, nullptr);
}

namespace {

int64_t now_micros() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Whether every segment of the build's metapage copy is still in meta.
bool building_current(const MetaData* meta) {
    for (uint32 s = 0; s < building_meta.nsegments; ++s) {
        bool found = false;
        for (uint32 t = 0; !found && t < meta->nsegments; ++t)
            found = meta->seg[t].serial == building_meta.seg[s].serial;
        if (!found) return false;
    }
    return true;
}

// Goes on with the table of index for tmpl in building, for up to kCountSliceMicros (or
// content_count_step units when that is set), starting it
// over the segments of meta (a copy taken under the pinned metapage) when there is none for this
// index and template or its segments are no longer all in meta. Returns true when the table is
// complete; leaves building null (and returns false) when the rows would take more than
// kLengthsMaxBytes. Call outside pg_entry, with the metapage pinned.
bool build_lengths_step(Relation index, const MetaData* meta, const TemplateRef& tmpl) {
    const int64_t deadline = now_micros() + kCountSliceMicros;
    // The units this step may do (content_count_step), or none counted (the time budget).
    const int64_t units = content_count_step > 0 ? content_count_step : INT64_MAX;
    int64_t done_units = 0;
    auto more = [&] { return content_count_step > 0 ? done_units < units : now_micros() < deadline; };
    if (building && building->index == RelationGetRelid(index) &&
        SPOTSIGS_STORAGE_EQUAL(building->storage, SPOTSIGS_STORAGE_OF(index)) && building->tmpl.get() == tmpl.get() &&
        (building_torn || !building_current(meta))) {
        ereport(DEBUG1, (errmsg("spotsigs: the count of content lengths of index \"%s\" starts again: %s",
                                RelationGetRelationName(index),
                                building_torn ? "a step was interrupted" : "segments it covers were rewritten")));
        building.reset();
    }
    if (building &&
        !(building->index == RelationGetRelid(index) &&
          SPOTSIGS_STORAGE_EQUAL(building->storage, SPOTSIGS_STORAGE_OF(index)) && building->tmpl.get() == tmpl.get()))
        building.reset();
    if (building_torn) building.reset();
    if (!building) {
        uint64 rows = 0;
        for (uint32 s = 0; s < meta->nsegments; ++s) rows += meta->seg[s].ndocs;
        size_t nslots = 1024;
        while (nslots < 2 * rows) nslots *= 2;
        if (nslots * kLengthSlotBytes > kLengthsMaxBytes) return false;
        pg_entry([&] {
            building = std::make_shared<ContentLengths>();
            building->slots.assign(nslots, ContentLengths::Slot{ContentLengths::kEmpty, 0, 0});
            building->serials.reserve(meta->nsegments);
            return Datum(0);
        });
        std::memcpy(&building_meta, meta, sizeof(MetaData));
        building_seg = 0;
        building_sig = 0;
        building_scans = 0;
        building_in_list = false;
        building->index = RelationGetRelid(index);
        building->storage = SPOTSIGS_STORAGE_OF(index);
        building->tmpl = tmpl;
    }
    ContentLengths* cl = building.get();
    const MetaData& bm = building_meta;
    building_torn = true;
    ++building_scans;
    // Every row of every segment (its document list), with its whole length.
    if (building_seg < bm.nsegments) {
        if (building_page == nullptr) building_page = (char*)MemoryContextAlloc(TopMemoryContext, BLCKSZ);
        do {
            const uint32 s = building_seg;
            const SegmentDesc& sd = bm.seg[s];
            bool list_done = true;
            if (!building_in_list) {
                cl->serials.push_back(sd.serial);  // reserved: no allocation
                if (sd.doclist_blk != InvalidBlockNumber) {
                    PartRef ref{0, (uint32)sd.ndocs, true, sd.doclist_blk, sd.doclist_off, nullptr, 0};
                    list_iter_init(&building_iter, index, &ref, building_page);
                    building_in_list = true;
                }
            } else {
                // Left by an earlier scan: its page copy and position still hold (the segment is
                // unchanged while it is in the metapage); only the relation is this scan's.
                building_iter.index = index;
                building_iter.walk.index = index;
            }
            if (building_in_list) {
                uint32 chunk = kCountDocs;
                if (content_count_step > 0)
                    chunk = (uint32)std::max<int64_t>(1, std::min<int64_t>(kCountDocs, units - done_units));
                Posting p;
                list_done = false;
                uint32 filed = 0;
                for (; filed < chunk; ++filed) {
                    if (!list_iter_next(&building_iter, &p)) {
                        list_done = true;
                        break;
                    }
                    size_t slot = cl->probe(p.id);
                    if (cl->slots[slot].id == p.id) corrupted(index, "row indexed twice", sd.doclist_blk);
                    cl->slots[slot] = ContentLengths::Slot{p.id, p.length, s};
                }
                done_units += content_count_step > 0 ? filed : 1;
            }
            if (list_done) {
                building_in_list = false;
                ++building_seg;
            }
            CHECK_FOR_INTERRUPTS();
        } while (building_seg < bm.nsegments && more());
        if (building_seg < bm.nsegments) {
            building_torn = false;
            return false;
        }
    }
    // Less each row's frequencies in the template signatures' lists, a batch of signatures at a
    // time (the source copies the inline lists it finds).
    const std::vector<uint64_t>& th = tmpl->hashes;
    pg_entry([&] {
        std::vector<uint32_t> ones(kCountBatch, 1), idx(kCountBatch);
        while (building_sig < th.size() && (done_units == 0 || more())) {
            const size_t from = building_sig;
            size_t batch = kCountBatch;
            if (content_count_step > 0)
                batch = (size_t)std::max<int64_t>(1, std::min<int64_t>(kCountBatch, units - done_units));
            const uint32_t n = (uint32_t)std::min(batch, th.size() - from);
            MultisetView v;
            v.hashes = th.data() + from;
            v.freqs.data = reinterpret_cast<const unsigned char*>(ones.data());
            v.freqs.width = 4;
            v.size = n;
            v.length = n;
            PageSource src(index, bm, v, LengthRange{0, kMaxLength});
            for (uint32_t i = 0; i < n; ++i) idx[i] = i;
            src.prepare(idx.data(), n);
            for (uint32_t i = 0; i < n; ++i)
                src.scan(i, 0, kMaxLength, [&](const Posting& p) {
                    ContentLengths::Slot& sl = cl->slots[cl->probe(p.id)];
                    if (sl.id != p.id || sl.clen < p.freq)
                        pg_guard([&] { corrupted(index, "posting of a row missing from its document list", 0); });
                    sl.clen -= p.freq;
                    return true;
                });
            building_sig = from + n;
            done_units += n;
            pg_guard([&] { CHECK_FOR_INTERRUPTS(); });
        }
        return Datum(0);
    });
    building_torn = false;
    if (building_sig < th.size()) return false;
    uint64 rows = 0;
    for (uint32 s = 0; s < bm.nsegments; ++s) rows += bm.seg[s].ndocs;
    ereport(DEBUG1, (errmsg_plural("spotsigs: content lengths of %llu rows of index \"%s\" counted for a template of "
                                   "%zu signatures in %u scan",
                                   "spotsigs: content lengths of %llu rows of index \"%s\" counted for a template of "
                                   "%zu signatures in %u scans",
                                   building_scans, (unsigned long long)rows, RelationGetRelationName(index), th.size(),
                                   building_scans)));
    return true;
}

// What an ordered content scan keeps of the content measure: the template of its ORDER BY
// query, the table (null when it has none) and which of the table's segments are still in the
// metapage as the scan starts (the rows of the others keep their bound). Allocated with new and
// freed with the scan's memory context (alloc_scan_lengths), so no C++ local owns it.
struct ScanLengths {
    TemplateRef tmpl;
    std::shared_ptr<const ContentLengths> cl;
    std::vector<bool> current;
};

// Frees a scan's ScanLengths with the scan's memory context.
void free_scan_lengths(void* arg) {
    delete static_cast<ScanLengths*>(arg);
}

// An empty ScanLengths freed when cxt is reset or deleted.
ScanLengths* alloc_scan_lengths(MemoryContext cxt) {
    MemoryContextCallback* cb = (MemoryContextCallback*)MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
    ScanLengths* sl = nullptr;
    pg_entry([&] {
        sl = new ScanLengths();
        return Datum(0);
    });
    cb->func = free_scan_lengths;
    cb->arg = sl;
    MemoryContextRegisterResetCallback(cxt, cb);
    return sl;
}

// Sets sl's table for an ordered content scan of index against sl->tmpl, building it when the
// backend's rechecks say so; leaves it null when there is none.
void scan_lengths(Relation index, ScanLengths* sl) {
    const Oid relid = RelationGetRelid(index);
    const PreparedTemplate* tp = sl->tmpl.get();
    if (recheck_count.index != relid || recheck_count.tmpl != tp) {
        recheck_count.index = relid;
        recheck_count.tmpl = tp;
        recheck_count.rows = 0;
    }
    MetaData meta;
    read_meta(index, &meta);
    const ContentLengths* cur = backend_lengths.get();
    bool usable = cur != nullptr && cur->index == relid &&
                  SPOTSIGS_STORAGE_EQUAL(cur->storage, SPOTSIGS_STORAGE_OF(index)) && cur->tmpl.get() == tp;
    // A table that misses segments written since (merges, VACUUM's rewrites) is counted again when
    // the rechecks of their rows reach the share again (rows the table knows are never rechecked).
    bool complete = usable;
    for (uint32 s = 0; complete && s < meta.nsegments; ++s)
        complete = std::find(cur->serials.begin(), cur->serials.end(), meta.seg[s].serial) != cur->serials.end();
    uint64 postings = 0;
    for (uint32 s = 0; s < meta.nsegments; ++s) postings += meta.seg[s].npostings;
    const bool due = meta.nsegments > 0 && recheck_count.rows * kPostingsPerRecheck >= postings;
    if (!usable || (!complete && due)) {
        if (!usable) backend_lengths.reset();
        if (!due) {
            if (!usable) return;
        } else {
            // Under the pinned metapage, so that VACUUM recycles none of the pages read.
            Buffer mb = ReadBuffer(index, kMetaBlock);
            LockBuffer(mb, BUFFER_LOCK_SHARE);
            std::memcpy(&meta, meta_of(BufferGetPage(mb)), sizeof(MetaData));
            LockBuffer(mb, BUFFER_LOCK_UNLOCK);
            check_meta(index, &meta);
            const bool done = build_lengths_step(index, &meta, sl->tmpl);
            ReleaseBuffer(mb);
            if (done) {
                recheck_count.rows = 0;
                backend_lengths = std::move(building);
                building.reset();
            }
            // An unfinished build leaves a usable older table in use for the segments it knows.
            if (!backend_lengths) return;
        }
    }
    pg_entry([&] {
        sl->cl = backend_lengths;
        sl->current.assign(sl->cl->serials.size(), false);
        for (size_t k = 0; k < sl->cl->serials.size(); ++k)
            for (uint32 s = 0; s < meta.nsegments; ++s)
                if (meta.seg[s].serial == sl->cl->serials[k]) sl->current[k] = true;
        return Datum(0);
    });
}

// The exact content similarity of row id whose content bound is bound, when the table knows the
// row: the operator's expression on the overlap o and the content length. The bound is
// fl(o / qlen) with integers o <= qlen < 2^32, so bound * qlen lies within 2^-20 of o and
// rounds to it.
bool exact_content_similarity(const ScanLengths* sl, uint64 id, double bound, uint64_t qlen, double* out) {
    if (sl == nullptr || !sl->cl) return false;
    const ContentLengths& cl = *sl->cl;
    const ContentLengths::Slot& s = cl.slots[cl.probe(id)];
    if (s.id != id || !sl->current[s.seg]) return false;
    const uint64_t o = (uint64_t)std::llround(bound * (double)qlen);
    const uint64_t bc = s.clen;
    if (o == 0 || o > bc || o > qlen) return false;
    *out = static_cast<double>(o) / static_cast<double>(qlen + bc - o);
    return true;
}

// Sorts ids ascending (for intersection and membership tests).
void sort_ids(uint64* ids, int64 n) {
    std::sort(ids, ids + n);
}

// True when id is in the sorted array.
bool contains(const uint64* ids, int64 n, uint64 id) {
    return std::binary_search(ids, ids + n, id);
}

// Per-scan state.
struct ScanState {
    MemoryContext cxt;  // reset at every rescan
    bool done;          // results of the current batch computed
    bool empty;         // a NULL key: nothing matches
    bool null_order;    // a NULL ORDER BY argument: every distance is NULL, rows in any order
    bool batch_null;    // the current batch is the NULL list's: its distances are NULL
    // filter from % keys (sorted ids), or null when there is none
    bool have_filter;
    uint64* filter;
    int64 nfilter;
    bool recheck;  // a content-measure key: the rows found are candidates the executor rechecks
    // ordered scan
    bool ordered;
    MultisetView oq;
    // `<-> spotsigs_content_query`: the tiers are of the content bound, and the values returned are
    // lower bounds of the distance that the executor recomputes (xs_recheckorderby)
    bool order_content;
    // with order_content: the template, and the backend's content lengths when it has them
    ScanLengths* lengths;
    bool* batch_exact;  // per row of the batch: its value is its exact content similarity
    int tier;           // next tier to compute; order_tier_count() = the zero tier, + 1 the NULL rows
    uint64* positives;  // ids with similarity > 0 (sorted), known once the last tier ran
    int64 npositives;
    // current batch
    Results batch;
    int64 pos;
    bool exhausted;
    // the zero tier (rows sharing nothing with the query), streamed from the document lists
    bool zero_started;
    bool zero_finished;
    Buffer zero_pin;  // metapage pin held while streaming: VACUUM cannot recycle pages
    MetaData* zero_meta;
    uint32 zero_seg;
    bool zero_iter_open;
    ListIter zero_it;
    char* zero_page;
    PendingEntry* zero_pend;
    int64 zero_npend;
    int64 zero_pend_pos;
    int64 zero_filter_pos;  // with % keys, the zero tier's position in filter
};

// Releases the metapage pin of a streaming zero tier, if any.
void release_zero(ScanState* st) {
    if (st->zero_started && st->zero_pin != InvalidBuffer) ReleaseBuffer(st->zero_pin);
    st->zero_pin = InvalidBuffer;
}

// Fills r with up to 1024 more ids of the zero tier (similarity 0: rows the positive tiers did not
// return), in document-list order. Sets zero_finished at the end.
void next_zero_chunk(IndexScanDesc scan, ScanState* st, Results* r) {
    Relation index = scan->indexRelation;
    const int64 cap = 1024;
    if (!st->zero_started) {
        st->zero_started = true;
        st->zero_pin = ReadBuffer(index, kMetaBlock);
        LockBuffer(st->zero_pin, BUFFER_LOCK_SHARE);
        st->zero_meta = (MetaData*)palloc(sizeof(MetaData));
        std::memcpy(st->zero_meta, meta_of(BufferGetPage(st->zero_pin)), sizeof(MetaData));
        LockBuffer(st->zero_pin, BUFFER_LOCK_UNLOCK);
        check_meta(index, st->zero_meta);
        uint32 ppages;
        st->zero_pend = read_pending(index, st->zero_meta->pending_head, st->zero_meta->pending_head_off,
                                     InvalidBlockNumber, 0, &st->zero_npend, &ppages);
        st->zero_page = (char*)palloc(BLCKSZ);
    }
    r->ids = (uint64*)palloc(sizeof(uint64) * cap);
    r->sims = (double*)palloc0(sizeof(double) * cap);
    r->n = 0;
    while (r->n < cap && !st->zero_finished) {
        uint64 id;
        if (st->have_filter) {
            // With % keys, the rows they admit (which may share nothing with the ORDER BY query).
            if (st->zero_filter_pos >= st->nfilter) {
                st->zero_finished = true;
                break;
            }
            id = st->filter[st->zero_filter_pos++];
        } else if (st->zero_seg < st->zero_meta->nsegments) {
            if (!st->zero_iter_open) {
                const SegmentDesc& seg = st->zero_meta->seg[st->zero_seg];
                if (seg.doclist_blk == InvalidBlockNumber) {
                    st->zero_seg++;
                    continue;
                }
                PartRef ref{0, (uint32)seg.ndocs, true, seg.doclist_blk, seg.doclist_off, nullptr, 0};
                list_iter_init(&st->zero_it, index, &ref, st->zero_page);
                st->zero_iter_open = true;
            }
            Posting p;
            if (!list_iter_next(&st->zero_it, &p)) {
                st->zero_iter_open = false;
                st->zero_seg++;
                continue;
            }
            id = p.id;
        } else if (st->zero_pend_pos < st->zero_npend) {
            id = st->zero_pend[st->zero_pend_pos++].id;
        } else {
            st->zero_finished = true;
            break;
        }
        if (contains(st->positives, st->npositives, id)) continue;
        r->ids[r->n++] = id;
    }
    if (st->zero_finished) release_zero(st);
}

// The query of a scan key, detoasted into the scan context; false for NULL.
bool key_query(ScanKey key, MultisetView* out) {
    if (key->sk_flags & SK_ISNULL) return false;
    struct varlena* v = fetch_spotsig(key->sk_argument);
    pg_entry([&] {
        *out = view_of(v);
        return Datum(0);
    });
    return true;
}

// The search of a `% spotsigs_content_query` or `<-> spotsigs_content_query` key: the query's
// content without its template (in the scan context) and its threshold, for content_candidates;
// the rows found are only candidates, which the executor rechecks with the operator. *no_template
// is set when the template is empty: then the content similarity is the plain similarity. False
// for a NULL field.
bool content_key_search(ScanKey key, MultisetView* out, double* tau, bool* no_template, TemplateRef* keep = nullptr) {
    if (key->sk_flags & SK_ISNULL) return false;
    struct varlena* qc;
    double threshold;
    TemplateRef tmpl;
    if (!read_content_query(key->sk_argument, &qc, &threshold, &tmpl)) return false;
    MultisetView q;
    pg_entry([&] {
        q = view_of(qc);
        return Datum(0);
    });
    uint64* hashes = (uint64*)palloc(sizeof(uint64) * (q.size > 0 ? q.size : 1));
    uint32* freqs = (uint32*)palloc(sizeof(uint32) * (q.size > 0 ? q.size : 1));
    pg_entry([&] {
        uint64_t length = 0;
        out->size = tmpl->content_of(q, hashes, freqs, &length);
        out->length = length;
        *tau = threshold;
        *no_template = tmpl->hashes.empty();
        if (keep != nullptr) *keep = tmpl;
        tmpl.reset();
        return Datum(0);
    });
    out->hashes = hashes;
    out->freqs.data = reinterpret_cast<const unsigned char*>(freqs);
    out->freqs.width = 4;
    return true;
}

// The query and threshold of a search key: `% spotsig` uses spotsigs.similarity_threshold,
// `% spotsigs_query` its own threshold. False for a NULL query (no row matches it).
bool key_search(ScanKey key, MultisetView* out, double* tau) {
    if (key->sk_strategy != kStrategySimilarQuery) {
        *tau = similarity_threshold;
        return key_query(key, out);
    }
    if (key->sk_flags & SK_ISNULL) return false;
    struct varlena* v;
    if (!read_query(key->sk_argument, &v, tau)) return false;
    pg_entry([&] {
        *out = view_of(v);
        return Datum(0);
    });
    return true;
}

// Intersects the % keys' results into st->filter.
void compute_filter(IndexScanDesc scan, ScanState* st) {
    for (int k = 0; k < scan->numberOfKeys; ++k) {
        MultisetView q;
        double tau;
        const bool content_key = scan->keyData[k].sk_strategy == kStrategyContentQuery;
        bool no_template = false;
        if (!(content_key ? content_key_search(&scan->keyData[k], &q, &tau, &no_template)
                          : key_search(&scan->keyData[k], &q, &tau))) {
            st->empty = true;
            return;
        }
        // Without a template the content similarity is the plain one (content_similarity of
        // core/template/stored.hpp with no template signature): the plain search is exact, and
        // its rows need no recheck.
        const bool content = content_key && !no_template;
        if (content) st->recheck = true;
        Results r =
            content ? content_candidates(scan->indexRelation, q, tau) : threshold_matches(scan->indexRelation, q, tau);
        sort_ids(r.ids, r.n);
        if (!st->have_filter) {
            st->filter = r.ids;
            st->nfilter = r.n;
            st->have_filter = true;
        } else {
            int64 m = 0;
            for (int64 i = 0; i < st->nfilter; ++i)
                if (contains(r.ids, r.n, st->filter[i])) st->filter[m++] = st->filter[i];
            st->nfilter = m;
        }
    }
}

// Orders a batch by descending similarity, then ascending id.
void sort_batch(Results* r, bool* exact = nullptr) {
    pg_entry([&] {
        struct Row {
            double sim;
            uint64 id;
            bool exact;
        };
        std::vector<Row> v((size_t)r->n);
        for (int64 i = 0; i < r->n; ++i) v[(size_t)i] = {r->sims[i], r->ids[i], exact != nullptr && exact[i]};
        std::sort(v.begin(), v.end(),
                  [](const Row& a, const Row& b) { return a.sim != b.sim ? a.sim > b.sim : a.id < b.id; });
        for (int64 i = 0; i < r->n; ++i) {
            r->sims[i] = v[(size_t)i].sim;
            r->ids[i] = v[(size_t)i].id;
            if (exact != nullptr) exact[i] = v[(size_t)i].exact;
        }
        return Datum(0);
    });
}

// Computes the next batch of an ordered scan; false when every tier is done. The tiers: the
// positive ones, the zero tier (similarity 0), then the rows whose value is NULL, at a NULL
// distance, which ORDER BY ... ASC puts last, as a sort would.
bool next_batch(IndexScanDesc scan, ScanState* st) {
    const int ntiers = (int)order_tier_count();
    st->pos = 0;
    if (st->tier < ntiers) {
        double lo = order_tier((size_t)st->tier);
        double hi = st->tier == 0 ? 2.0 : order_tier((size_t)st->tier - 1);
        Results all = threshold_matches(scan->indexRelation, st->oq, lo, nullptr,
                                        st->order_content ? SearchMeasure::kContentBound : SearchMeasure::kPlain);
        if (st->tier == ntiers - 1) {
            // Every id with similarity > 0: what the zero tier must leave out.
            st->positives = (uint64*)palloc(sizeof(uint64) * (all.n ? all.n : 1));
            std::memcpy(st->positives, all.ids, sizeof(uint64) * all.n);
            st->npositives = all.n;
            sort_ids(st->positives, st->npositives);
        }
        // A row's value: its similarity (plain), else its exact content similarity when the
        // backend's content lengths know the row, else its content bound. The value is a function
        // of the row for the whole scan (the table and its current segments are fixed when the
        // scan starts), at most the bound, and this tier's search finds every row whose bound,
        // hence every row whose value, is at least lo: so the rows with a value in [lo, hi) are
        // returned now, those above in an earlier tier, those below in a later one (the last
        // positive tier returns every row left, all with a positive value).
        bool* exact =
            st->lengths != nullptr && st->lengths->cl ? (bool*)palloc(sizeof(bool) * (all.n ? all.n : 1)) : nullptr;
        const bool last = st->tier == ntiers - 1;
        int64 m = 0;
        constexpr int64 kAheadRows = 16;  // slots prefetched ahead of the one probed
        for (int64 i = 0; exact != nullptr && i < std::min<int64>(kAheadRows, all.n); ++i)
            st->lengths->cl->prefetch(all.ids[i]);
        for (int64 i = 0; i < all.n; ++i) {
            if (exact != nullptr && i + kAheadRows < all.n) st->lengths->cl->prefetch(all.ids[i + kAheadRows]);
            double v = all.sims[i];
            bool ex = exact != nullptr && exact_content_similarity(st->lengths, all.ids[i], v, st->oq.length, &v);
            if (v >= hi || (!last && v < lo)) continue;
            if (st->have_filter && !contains(st->filter, st->nfilter, all.ids[i])) continue;
            all.ids[m] = all.ids[i];
            all.sims[m] = v;
            if (exact != nullptr) exact[m] = ex;
            m++;
        }
        all.n = m;
        sort_batch(&all, exact);
        st->batch_exact = exact;
        st->tier++;
        st->batch = all;
        return true;
    }
    if (st->tier == ntiers) {
        // The zero tier, streamed in chunks so that LIMIT stops it early.
        Results r;
        next_zero_chunk(scan, st, &r);
        st->batch = r;
        st->batch_exact = nullptr;
        if (r.n > 0 || !st->zero_finished) return true;
        st->tier++;
    }
    if (st->tier == ntiers + 1) {
        st->tier++;
        // With % keys no NULL row qualifies.
        if (st->have_filter) return false;
        MetaData meta;
        read_meta(scan->indexRelation, &meta);
        require_null_list(scan->indexRelation, &meta);
        Results r;
        r.ids = read_null_ids(scan->indexRelation, &meta, &r.n);
        r.sims = nullptr;
        st->batch = r;
        st->batch_null = true;
        return r.n > 0;
    }
    return false;
}

}  // namespace

IndexScanDesc ambeginscan(Relation index, int nkeys, int norderbys) {
    IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
    ScanState* st = (ScanState*)palloc0(sizeof(ScanState));
    st->cxt = AllocSetContextCreate(CurrentMemoryContext, "spotsigs scan", ALLOCSET_DEFAULT_SIZES);
    scan->opaque = st;
    if (norderbys > 0) {
        scan->xs_orderbyvals = (Datum*)palloc0(sizeof(Datum) * norderbys);
        scan->xs_orderbynulls = (bool*)palloc(sizeof(bool) * norderbys);
        for (int i = 0; i < norderbys; ++i) scan->xs_orderbynulls[i] = true;
    }
    return scan;
}

void amrescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys) {
    ScanState* st = (ScanState*)scan->opaque;
    release_zero(st);
    MemoryContextReset(st->cxt);
    MemoryContext cxt = st->cxt;
    std::memset((void*)st, 0, sizeof(ScanState));
    st->cxt = cxt;
    if (keys && scan->numberOfKeys > 0) std::memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
    if (orderbys && scan->numberOfOrderBys > 0)
        std::memmove(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));
    (void)nkeys;
    (void)norderbys;
}

// Computes the results of a non-ordered scan, or prepares an ordered one.
static void prepare(IndexScanDesc scan, ScanState* st) {
    MemoryContext old = MemoryContextSwitchTo(st->cxt);
    compute_filter(scan, st);
    if (scan->numberOfOrderBys > 0) {
        st->ordered = true;
        ScanKey ok = &scan->orderByData[0];
        bool have_query;
        if (ok->sk_strategy == kStrategyContentDistance) {
            double tau;
            bool no_template = false;
            st->lengths = alloc_scan_lengths(st->cxt);
            have_query = content_key_search(ok, &st->oq, &tau, &no_template, &st->lengths->tmpl);
            // Without a template the content distance is the plain one (as for % above): the
            // plain tiers are exact, and their values need no recheck.
            st->order_content = have_query && !no_template;
            if (st->order_content && !st->empty) scan_lengths(scan->indexRelation, st->lengths);
        } else {
            have_query = key_query(ok, &st->oq);
        }
        if (!have_query && !st->empty) {
            // A NULL ORDER BY argument (or a content query with a NULL field) gives every row a
            // NULL distance: return them all (those the % keys select), unordered.
            st->null_order = true;
            st->batch = st->have_filter ? Results{st->filter, nullptr, st->nfilter} : all_ids(scan->indexRelation);
        }
    } else if (!st->have_filter && !st->empty) {
        st->batch = all_ids(scan->indexRelation);  // no keys: every indexed row
    } else if (!st->empty) {
        st->batch.ids = st->filter;
        st->batch.n = st->nfilter;
        st->batch.sims = nullptr;
    }
    st->done = true;
    MemoryContextSwitchTo(old);
}

bool amgettuple(IndexScanDesc scan, ScanDirection dir) {
    ScanState* st = (ScanState*)scan->opaque;
    if (dir != ForwardScanDirection) elog(ERROR, "spotsigs index does not support backward scans");
    if (!st->done) prepare(scan, st);
    if (st->empty) return false;
    if (!st->ordered || st->null_order) {
        if (st->pos >= st->batch.n) return false;
        id_to_tid(st->batch.ids[st->pos++], &scan->xs_heaptid);
        scan->xs_recheck = st->recheck;
        if (st->null_order) {
            scan->xs_recheckorderby = false;
            scan->xs_orderbyvals[0] = (Datum)0;
            scan->xs_orderbynulls[0] = true;
        }
        return true;
    }
    while (st->pos >= st->batch.n) {
        MemoryContext old = MemoryContextSwitchTo(st->cxt);
        bool more = next_batch(scan, st);
        MemoryContextSwitchTo(old);
        if (!more) return false;
        CHECK_FOR_INTERRUPTS();
    }
    int64 i = st->pos++;
    id_to_tid(st->batch.ids[i], &scan->xs_heaptid);
    scan->xs_recheck = st->recheck;
    // A content distance is 1 - fl(o / (|q| + |bc| - o)) >= 1 - content_bound(o, |q|) (the claim at
    // core content_bound; fl(1 - x) does not grow with x): the value returned for a row the
    // backend's content lengths do not know is a lower bound that the executor replaces by the
    // operator's own value, holding each row back until no later row can come before it; a row
    // they know has its exact distance (the operator's expression on the same integers) and is
    // not rechecked. The tiers return the rows in ascending order of these values, each at most
    // the distance of every row returned after it.
    const bool exact = st->batch_exact != nullptr && st->batch_exact[i];
    scan->xs_recheckorderby = st->order_content && !exact;
    if (st->order_content && !exact && !st->batch_null) recheck_count.rows++;
    scan->xs_orderbyvals[0] = st->batch_null ? (Datum)0 : Float8GetDatum(1.0 - st->batch.sims[i]);
    scan->xs_orderbynulls[0] = st->batch_null;
    return true;
}

int64 amgetbitmap(IndexScanDesc scan, TIDBitmap* tbm) {
    ScanState* st = (ScanState*)scan->opaque;
    if (!st->done) prepare(scan, st);
    if (st->empty || st->ordered) return 0;
    for (int64 i = 0; i < st->batch.n; ++i) {
        ItemPointerData t;
        id_to_tid(st->batch.ids[i], &t);
        tbm_add_tuples(tbm, &t, 1, st->recheck);
    }
    return st->batch.n;
}

void amendscan(IndexScanDesc scan) {
    ScanState* st = (ScanState*)scan->opaque;
    release_zero(st);
    MemoryContextDelete(st->cxt);
    pfree(st);
}

Results content_candidates(Relation index, const MultisetView& qc, double tau) {
    // The rows whose content bound reaches tau (every content match among them: the claim at
    // core content_bound). The search may leave candidates unverified: their value is a larger
    // bound, and the caller verifies every row anyway.
    int64 nexact = 0;
    return threshold_matches(index, qc, tau, &nexact, SearchMeasure::kContentBound);
}

uint64 indexed_rows(Relation index) {
    MetaData meta;
    read_meta(index, &meta);
    uint64 n = 0;
    for (int p = 0; p < kMaxPartitions; ++p) n += meta.part_docs[p];
    return n;
}

}  // namespace spotsigs::pg::index
