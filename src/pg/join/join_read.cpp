// Catalog checks and the SPI cursor that copies a relation's signatures into a Collection.
#include "pg/join/join_read.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "tcop/dest.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/repeated_id.hpp"
#include "core/signature/hash.hpp"
#include "core/signature/packed.hpp"
#include "pg/boundary.hpp"
#include "pg/join/join_run.hpp"
#include "pg/join/toast_scan.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg {

namespace {

// The attribute number of a user column, or an ERROR (42703) naming the column.
AttrNumber user_column(Oid relid, const char* relname, const char* column) {
    AttrNumber att = get_attnum(relid, column);
    if (att == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column \"%s\" of relation %s does not exist", column, relname)));
    if (att < 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column \"%s\" of relation %s is a system column", column, relname),
                        errhint("Use a user column of the relation.")));
    return att;
}

// Raises 42501 unless the user may SELECT the relation or both columns; fn names the caller.
void check_select_privilege(Oid relid, const char* relname, AttrNumber a, AttrNumber b, const char* fn) {
    Oid user = GetUserId();
    if (pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK) return;
    if (pg_attribute_aclcheck(relid, a, user, ACL_SELECT) == ACLCHECK_OK &&
        pg_attribute_aclcheck(relid, b, user, ACL_SELECT) == ACLCHECK_OK)
        return;
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE), errmsg("permission denied for table %s", relname),
                    errdetail("%s needs SELECT on the table or on both of its columns.", fn)));
}

}  // namespace

JoinSource resolve_source(Oid relid, const char* id_column, const char* sig_column, Oid spotsig_type, const char* fn) {
    char* rel = get_rel_name(relid);
    if (rel == nullptr)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("relation with OID %u does not exist", relid)));
    char kind = get_rel_relkind(relid);
    if (kind != RELKIND_RELATION && kind != RELKIND_MATVIEW && kind != RELKIND_VIEW &&
        kind != RELKIND_PARTITIONED_TABLE && kind != RELKIND_FOREIGN_TABLE)
        ereport(ERROR,
                (errcode(ERRCODE_WRONG_OBJECT_TYPE), errmsg("\"%s\" is not a table, view or materialized view", rel)));
    char* nsp = get_namespace_name(get_rel_namespace(relid));
    JoinSource src;
    src.relid = relid;
    src.relname = quote_qualified_identifier(nsp, rel);

    AttrNumber id_att = user_column(relid, src.relname, id_column);
    AttrNumber sig_att = user_column(relid, src.relname, sig_column);

    Oid id_type = getBaseType(get_atttype(relid, id_att));
    if (id_type != INT2OID && id_type != INT4OID && id_type != INT8OID)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("id column \"%s\" of relation %s has type %s", id_column, src.relname,
                               format_type_be(get_atttype(relid, id_att))),
                        errdetail("The id column must be smallint, integer or bigint.")));
    if (getBaseType(get_atttype(relid, sig_att)) != spotsig_type)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("signature column \"%s\" of relation %s has type %s", sig_column, src.relname,
                               format_type_be(get_atttype(relid, sig_att))),
                        errdetail("The signature column must have type spotsig.")));

    check_select_privilege(relid, src.relname, id_att, sig_att, fn);

    // Statistics, when ANALYZE has run, let the reader allocate its arrays once.
    HeapTuple tp = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (HeapTupleIsValid(tp)) {
        src.est_rows = std::max(0.0, static_cast<double>(((Form_pg_class)GETSTRUCT(tp))->reltuples));
        ReleaseSysCache(tp);
    }
    int32 width = get_attavgwidth(relid, sig_att);
    // A stored value: 16 header bytes, then 8 bytes per hash and 0-4 per frequency.
    if (width > 16) src.est_entries = src.est_rows * (width - 16) / 9.0;

    // Every identifier is quoted; the values never become SQL text.
    const char* id_q = quote_identifier(id_column);
    const char* sig_q = quote_identifier(sig_column);
    src.query = psprintf("SELECT %s::bigint, %s FROM %s WHERE %s IS NOT NULL AND %s IS NOT NULL", id_q, sig_q,
                         src.relname, id_q, sig_q);
    return src;
}

namespace {

// How often (rows) the reader reports progress and serves interrupts (it checks the memory limit
// every row it keeps).
constexpr uint64 kReadStride = 2000;
// ... or sooner, once the rows kept since the last time hold this many bytes: a few milliseconds
// of copying and filing, however long the rows are.
constexpr size_t kReadStrideBytes = size_t(1) << 20;
// How long the reader waits for a free batch buffer before it serves interrupts again.
constexpr auto kBatchWait = std::chrono::milliseconds(10);

// A DestReceiver that hands every row of the reader's query to a ReadPipeline as the executor
// produces it: no tuple is copied into an SPI tuple table, and values stored inline are read in
// place, compressed ones are detoasted (each copy freed at once), and uncompressed out-of-line
// ones are noted and read after the rows (toast_scan.hpp). The pipeline copies the bytes; its
// filing thread does the rest. C-style: it is called from the executor, and its C++ work runs in
// pg_entry.
struct CollectReceiver {
    DestReceiver pub;  // first member: the executor sees a DestReceiver*
    ReadPipeline* out;
    DeferredToast* deferred;  // out-of-line values are noted here and read after the rows
    size_t memory_limit;
    Progress* progress;
    const char* relname;
    MemoryContext scratch;
    uint64 rows;
    RowFilter* filter;                   // null: keep every row, and raise the error past the memory limit
    bool external;                       // the value being handed over was stored out of line
    uint64 skipped_by_note;              // values skipped by their length in RowFilter::external
    size_t note_hint;                    // where in RowFilter::external the next row's note is tried first
    size_t stride_bytes;                 // bytes of the rows kept since the last stride
    Multiset* content;                   // RowFilter::remove: a row without the template
    std::vector<unsigned char>* packed;  // ... and packed again
};

// A first read past its budget: the rows kept so far (and the other side's, for an R-S join)
// are discarded, giving their charge back, and from now on rows are only tallied.
void overflow(CollectReceiver* r) {
    RowFilter* f = r->filter;
    if (f->overflowed) return;
    f->overflowed = true;
    r->out->discard();
    if (f->discard_too != nullptr) f->discard_too->discard();
}

// Makes room for one more element of v under a first read's budget: a refusal overflows the read
// (its documents go) and the charge is made again, past the budget if need be (the ids and
// lengths every pass needs).
template <class V>
void reserve_or_overflow(CollectReceiver* r, V& v) {
    ReadBudget* b = r->filter->budget;
    if (spotsigs::reserve_charged(*b, v)) return;
    overflow(r);
    spotsigs::reserve_charged(*b, v, true);
}

// Throws the memory-limit error once the rows read so far, and the notes on rows whose values
// come later, hold more than the limit; under a first read's budget, overflows the read once its
// pipeline was refused a row.
void check_read_memory(CollectReceiver* r) {
    RowFilter* f = r->filter;
    if (f != nullptr && f->budget != nullptr) {
        if (r->out->overflowed()) overflow(r);
        return;
    }
    const size_t ids =
        (f != nullptr && f->ids != nullptr ? f->ids->capacity() * sizeof(int64_t) : 0) +
        (f != nullptr && f->note_external != nullptr ? f->note_external->capacity() * sizeof(ExternalLength) : 0);
    if (r->memory_limit != 0 && r->out->memory_bytes() + r->deferred->memory_bytes() + ids > r->memory_limit) {
        if (r->filter != nullptr) {
            r->filter->overflowed = true;  // the caller reads again in passes
            // What was read goes unused: the pipeline files and lists no more of it, so that
            // what it holds stays at what was checked here.
            r->out->stop();
            return;
        }
        throw_memory_limit(("reading " + std::string(r->relname)).c_str());
    }
}

// Whether a row's value (payload of len bytes, packed.hpp layout) is to be kept, counting it in
// the filter's tally; values too short for a header are kept (the pipeline rejects them).
// stored_length: the stored row's length, for the digest (the row handed over may be without the
// template).
bool keep_row(CollectReceiver* r, int64 id, const char* data, size_t len, uint64_t stored_length) {
    RowFilter* f = r->filter;
    if (f == nullptr) return true;
    if (len < kPackedHeaderSize) {
        f->seen.add(id, 0);
        return !f->overflowed;
    }
    uint32_t distinct, length;
    std::memcpy(&length, data + 8, 4);
    f->seen.add(id, stored_length);
    std::memcpy(&distinct, data + 4, 4);
    if (f->tally != nullptr) {
        const unsigned char w = static_cast<unsigned char>(data[1]);
        f->tally->add(length, distinct, w <= 4 ? w : 4);
        if (f->ids != nullptr) {
            if (f->budget != nullptr) reserve_or_overflow(r, *f->ids);
            f->ids->push_back(id);
        }
        if (f->note_external != nullptr &&
            (r->external || (f->remove != nullptr && f->note_external->size() < f->note_inline_max))) {
            if (f->budget != nullptr) reserve_or_overflow(r, *f->note_external);
            f->note_external->push_back(ExternalLength{id, length, static_cast<uint32_t>(stored_length)});
        }
    }
    return !f->overflowed && f->holds(length);
}

// Hands one row's value (len payload bytes) to the pipeline, waiting for a free batch while
// serving interrupts; every kReadStride rows or kReadStrideBytes bytes, serves interrupts, checks
// the memory limit and reports progress.
// PostgreSQL code (an AddValueFn for DeferredToast): C++ work runs in pg_entry.
void hand_over(void* ctx, int64 id, const char* data, size_t len) {
    CollectReceiver* r = static_cast<CollectReceiver*>(ctx);
    bool keep = true;
    pg_entry([&] {
        uint64_t stored_length = 0;
        if (len >= kPackedHeaderSize) {
            uint32_t l;
            std::memcpy(&l, data + 8, 4);
            stored_length = l;
        }
        if (r->filter != nullptr && r->filter->remove != nullptr) {
            // The row without the template, packed again in an aligned buffer of the read's.
            std::vector<unsigned char>& buf = *r->packed;
            buf.resize(len + 8);
            unsigned char* at = buf.data() + (8 - (reinterpret_cast<uintptr_t>(buf.data()) + 12) % 8) % 8;
            std::memcpy(at, data, len);
            r->filter->remove->remove_into(unpack(at, len), *r->content);
            const size_t need = packed_size(r->content->view());
            buf.resize(need);
            pack(r->content->view(), buf.data());
            data = reinterpret_cast<const char*>(buf.data());
            len = need;
        }
        keep = keep_row(r, id, data, len, stored_length);
        return Datum(0);
    });
    if (!keep) {
        if (++r->rows % kReadStride == 0) CHECK_FOR_INTERRUPTS();
        return;
    }
    r->stride_bytes += len;
    bool stride = ++r->rows % kReadStride == 0 || r->stride_bytes >= kReadStrideBytes;
    if (stride) {
        r->stride_bytes = 0;
        CHECK_FOR_INTERRUPTS();
    }
    for (;;) {
        bool taken = false;
        pg_entry([&] {
            taken = r->out->add(id, reinterpret_cast<const unsigned char*>(data), len, kBatchWait);
            if (taken) check_read_memory(r);  // a few loads: every row, so a read stops at its limit
            if (taken && stride) r->progress->reading(r->out->rows());
            return Datum(0);
        });
        if (taken) break;
        CHECK_FOR_INTERRUPTS();  // the filing thread is behind: serve interrupts while waiting
    }
}

// The note of row id in f->external (sorted by id), or null. The entry after the last one found
// is tried first: a relation read again in the same order finds each note in one step.
const ExternalLength* find_note(CollectReceiver* r, const RowFilter* f, int64 id) {
    const std::vector<ExternalLength>& notes = *f->external;
    size_t at = r->note_hint;
    if (at >= notes.size() || notes[at].id != id) {
        auto it = std::lower_bound(notes.begin(), notes.end(), id,
                                   [](const ExternalLength& e, int64 key) { return e.id < key; });
        if (it == notes.end() || it->id != id) return nullptr;
        at = static_cast<size_t>(it - notes.begin());
    }
    r->note_hint = at + 1;
    return &notes[at];
}

// True when a pass's filter restricts lengths and sig lies outside them, found without reading
// the whole value (later passes skip most of the relation's rows this way): by its noted length,
// or else, stored out of line or compressed, by its header alone. A read that removes a template
// keeps or drops a row by its length without it, which only the first read's note of every row
// gives (reading the header gives the stored length); without a note the row is read whole.
bool outside_range(CollectReceiver* r, int64 id, Datum sig) {
    RowFilter* f = r->filter;
    if (f == nullptr || !f->restricts()) return false;
    struct varlena* raw = reinterpret_cast<struct varlena*>(DatumGetPointer(sig));
    const bool every_row_noted = f->remove != nullptr;
    if (!every_row_noted && !VARATT_IS_EXTERNAL(raw) && !VARATT_IS_COMPRESSED(raw)) return false;
    if (f->external != nullptr && (every_row_noted || VARATT_IS_EXTERNAL_ONDISK(raw))) {
        if (const ExternalLength* note = find_note(r, f, id)) {
            const bool outside = !f->holds(note->length);
            if (outside) {
                f->seen.add(id, note->stored);
                ++r->skipped_by_note;
                if (++r->rows % kReadStride == 0) CHECK_FOR_INTERRUPTS();
            }
            return outside;
        }
    }
    if (every_row_noted) return false;
    MemoryContext old = MemoryContextSwitchTo(r->scratch);
    struct varlena* head = PG_DETOAST_DATUM_SLICE(sig, 0, kPackedHeaderSize);
    MemoryContextSwitchTo(old);
    bool outside = false;
    if (VARSIZE_ANY_EXHDR(head) >= kPackedHeaderSize) {
        uint32_t length;
        std::memcpy(&length, VARDATA_ANY(head) + 8, 4);
        outside = !f->holds(length);
        if (outside) f->seen.add(id, length);
    }
    pfree(head);
    if (outside && ++r->rows % kReadStride == 0) CHECK_FOR_INTERRUPTS();
    return outside;
}

// Adds one row (id, sig) to the pipeline, or notes it for DeferredToast.
bool collect_slot(TupleTableSlot* slot, DestReceiver* self) {
    CollectReceiver* r = reinterpret_cast<CollectReceiver*>(self);
    bool id_null, sig_null;
    Datum id = slot_getattr(slot, 1, &id_null);
    Datum sig = slot_getattr(slot, 2, &sig_null);
    if (id_null || sig_null) return true;  // the query already excludes them
    if (outside_range(r, DatumGetInt64(id), sig)) return true;
    r->external = VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(sig));
    if (VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(sig))) {
        bool noted = false;
        pg_entry([&] {
            // Under a budget the notes grow by a charged step (refused: the read overflows, and
            // the value is read as it comes, with its row).
            if (!r->deferred->reserve_charged()) {
                overflow(r);
                return Datum(0);
            }
            noted = r->deferred->defer(DatumGetInt64(id), sig);
            return Datum(0);
        });
        if (noted) {
            if (r->deferred->size() % kReadStride == 0) {
                CHECK_FOR_INTERRUPTS();
                pg_entry([&] {
                    check_read_memory(r);
                    return Datum(0);
                });
            }
            return true;
        }
    }
    MemoryContext old = MemoryContextSwitchTo(r->scratch);
    struct varlena* v = PG_DETOAST_DATUM_PACKED(sig);
    MemoryContextSwitchTo(old);
    const bool copied = reinterpret_cast<Pointer>(v) != DatumGetPointer(sig);
    hand_over(r, DatumGetInt64(id), VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
    if (copied) pfree(v);
    return true;
}

// Runs query (read only) with its rows sent to dest as the executor makes them.
void run_into(const char* query, DestReceiver* dest) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    SPIExecuteOptions opts;
    memset(&opts, 0, sizeof opts);
    opts.read_only = true;
    opts.dest = dest;
    int rc = SPI_execute_extended(query, &opts);
    if (rc < 0) elog(ERROR, "SPI_execute_extended failed: %s", SPI_result_code_string(rc));
    SPI_finish();
}

// Receiver start-up and shut-down: nothing to do.
void collect_startup(DestReceiver*, int, TupleDesc) {}
void collect_shutdown(DestReceiver*) {}
void collect_destroy(DestReceiver*) {}

}  // namespace

bool limit_read(ReadPipeline& out, DeferredToast& deferred, size_t memory_limit, ReadBudget* budget,
                bool defer_listing) {
    out.limit_growth(memory_limit, defer_listing);
    if (budget == nullptr) return true;
    out.charge_to(budget);
    deferred.charge_to(budget);
    return !out.overflowed();
}

bool filed_within_budget(ReadPipeline& out) {
    while (!out.wait_filed(kBatchWait)) check_interrupts();
    return !out.overflowed();
}

namespace {
// Reads src's rows into out; with a filter, as read_source_filtered describes.
void read_rows(const JoinSource& src, ReadPipeline& out, size_t memory_limit, Progress& progress, RowFilter* filter);
}  // namespace

std::unique_ptr<ReadPipeline> open_pipeline(const JoinSource& src, double list_tau, size_t memory_limit,
                                            bool background) {
    double est_bytes = src.est_rows * 32 + src.est_entries * 12;
    bool presize = src.est_rows > 0 && est_bytes < static_cast<double>(memory_limit) / 2;
    return std::make_unique<ReadPipeline>(list_tau, presize ? static_cast<size_t>(src.est_rows) : 0,
                                          presize ? static_cast<size_t>(src.est_entries) : 0, background);
}

void read_source(const JoinSource& src, ReadPipeline& out, size_t memory_limit, Progress& progress) {
    read_rows(src, out, memory_limit, progress, nullptr);
}

void read_source_filtered(const JoinSource& src, ReadPipeline& out, size_t memory_limit, Progress& progress,
                          RowFilter& filter) {
    read_rows(src, out, memory_limit, progress, &filter);
}

namespace {

void read_rows(const JoinSource& src, ReadPipeline& out, size_t memory_limit, Progress& progress, RowFilter* filter) {
    // No C++ object with a destructor lives in the frames the executor runs in (recv is palloc'd);
    // the pipeline and the notes it points to live here, above pg_guard, which turns an error
    // into a C++ exception that unwinds them.
    CollectReceiver* recv = nullptr;
    DeferredToast deferred;
    Multiset content;
    std::vector<unsigned char> packed;
    pg_guard([&] {
        recv = static_cast<CollectReceiver*>(palloc0(sizeof(CollectReceiver)));
        recv->pub.receiveSlot = collect_slot;
        recv->pub.rStartup = collect_startup;
        recv->pub.rShutdown = collect_shutdown;
        recv->pub.rDestroy = collect_destroy;
        recv->pub.mydest = DestNone;
        recv->out = &out;
        recv->deferred = &deferred;
        recv->memory_limit = memory_limit;
        recv->progress = &progress;
        recv->relname = src.relname;
        recv->filter = filter;
        // A first read (which tallies every row) may not fit; a pass's was planned to.
        if (!limit_read(out, deferred, memory_limit, filter != nullptr ? filter->budget : nullptr,
                        filter == nullptr || filter->tally != nullptr))
            overflow(recv);  // no room for its buffers: rows are only tallied
        recv->content = &content;
        recv->packed = &packed;
        recv->scratch = AllocSetContextCreate(CurrentMemoryContext, "spotsigs_join read", ALLOCSET_DEFAULT_SIZES);
        run_into(src.query, &recv->pub);
    });
    const size_t noted = deferred.size();
    recv->external = true;  // every value handed over from here on was stored out of line
    const size_t scanned = deferred.fetch(hand_over, recv);
    pg_guard([&] {
        if (noted > 0)
            elog(DEBUG1,
                 "reading %s: %zu out-of-line values read after the rows, %zu of them by one scan of their "
                 "toast relation (holding at most %llu kB of incomplete values)",
                 src.relname, noted, scanned, static_cast<unsigned long long>(deferred.peak_open_bytes() >> 10));
        if (recv->skipped_by_note > 0)
            elog(DEBUG1, "reading %s: %llu values outside the pass skipped by their noted length", src.relname,
                 static_cast<unsigned long long>(recv->skipped_by_note));
    });
    // The last rows since the last stride's look (a relation of fewer rows gets no other).
    check_read_memory(recv);
    if (filter != nullptr && filter->expected != nullptr && !(filter->seen == *filter->expected))
        throw_rows_changed(src.relname);
    out.close();
    // Whether the budget took the last rows too.
    if (filter != nullptr && filter->budget != nullptr && !filter->overflowed && !filed_within_budget(out))
        overflow(recv);
    pg_guard([&] {
        MemoryContextDelete(recv->scratch);
        pfree(recv);
    });
}

}  // namespace

namespace {

// A DestReceiver that hands every row of the reader's query to a RowVisit (visit_source).
struct VisitReceiver {
    DestReceiver pub;  // first member: the executor sees a DestReceiver*
    const RowVisit* visit;
    RowsDigest* seen;
    Progress* progress;
    MemoryContext scratch;
    uint64 rows;
};

bool visit_slot(TupleTableSlot* slot, DestReceiver* self) {
    VisitReceiver* r = reinterpret_cast<VisitReceiver*>(self);
    bool id_null, sig_null;
    Datum id = slot_getattr(slot, 1, &id_null);
    Datum sig = slot_getattr(slot, 2, &sig_null);
    if (id_null || sig_null) return true;  // the query already excludes them
    MemoryContext old = MemoryContextSwitchTo(r->scratch);
    struct varlena* v = fetch_spotsig(sig);
    MemoryContextSwitchTo(old);
    const bool stride = ++r->rows % kReadStride == 0;
    pg_entry([&] {
        const MultisetView row = view_of(v);
        r->seen->add(DatumGetInt64(id), row.length);
        (*r->visit)(DatumGetInt64(id), row);
        if (stride) r->progress->reading(r->rows);
        return Datum(0);
    });
    MemoryContextReset(r->scratch);
    if (stride) CHECK_FOR_INTERRUPTS();
    return true;
}

}  // namespace

void visit_source(const JoinSource& src, Progress& progress, const RowVisit& visit, RowsDigest& seen) {
    pg_guard([&] {
        VisitReceiver* recv = static_cast<VisitReceiver*>(palloc0(sizeof(VisitReceiver)));
        recv->pub.receiveSlot = visit_slot;
        recv->pub.rStartup = collect_startup;
        recv->pub.rShutdown = collect_shutdown;
        recv->pub.rDestroy = collect_destroy;
        recv->pub.mydest = DestNone;
        recv->visit = &visit;
        recv->seen = &seen;
        recv->progress = &progress;
        recv->scratch = AllocSetContextCreate(CurrentMemoryContext, "spotsigs statistics read", ALLOCSET_DEFAULT_SIZES);
        run_into(src.query, &recv->pub);
        MemoryContextDelete(recv->scratch);
        pfree(recv);
    });
}

bool wait_filed(ReadPipeline& pipe, const CancelToken* cancel) {
    while (!pipe.wait_filed(kBatchWait))
        if (cancel != nullptr && cancel->stopped()) return false;
    return true;
}

void RowsDigest::add(int64_t id, uint64_t length) noexcept {
    ++rows;
    sum += fmix64(fmix64(static_cast<uint64_t>(id)) + length);
}

void throw_rows_changed(const char* relname) {
    pg_guard([&] {
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("the rows of %s changed between two reads of one join", relname),
                        errdetail("A join past spotsigs.join_memory_limit runs in passes, which read the relation "
                                  "again each and need the rows of the first read every time."),
                        errhint("Join a table, or a view without volatile functions such as nextval() and without "
                                "volatile row security policies; or raise spotsigs.join_memory_limit so that the "
                                "join reads it once.")));
    });
    throw Error(ErrorKind::Internal, "unreachable");
}

void throw_repeated_id(const char* relname, int64_t id) {
    throw Error(ErrorKind::InvalidParameter, "id column of relation " + std::string(relname) + " is not unique",
                "The id " + std::to_string(id) + " occurs more than once.");
}

void check_unique_ids(const Collection& docs, const char* relname) {
    std::optional<int64_t> dup = repeated_id(docs);
    if (dup) throw_repeated_id(relname, *dup);
}

void check_read_ids(const Collection& docs, const RowFilter* filter, const char* relname) {
    std::optional<int64_t> dup =
        filter != nullptr && filter->ids != nullptr ? repeated_id(*filter->ids) : repeated_id(docs);
    if (dup) throw_repeated_id(relname, *dup);
}

}  // namespace spotsigs::pg
