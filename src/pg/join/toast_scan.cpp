// Out-of-line signatures read by one sequential scan of their toast relation (see toast_scan.hpp).
#include "pg/join/toast_scan.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/toast_internals.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
}

#include <algorithm>
#include <cstring>

#include "core/signature/hash.hpp"
#include "pg/boundary.hpp"

namespace spotsigs::pg {

namespace {

// The scan is chosen when the noted values are at least this share of the toast relation's size.
constexpr double kMinShare = 0.5;
// Values being put together at once may hold at most this many bytes (chunks of interleaved
// values wait in memory); values that would pass it are detoasted afterwards.
constexpr uint64 kOpenBytesCap = uint64(256) << 20;
// Interrupts are served every this many toast tuples.
constexpr uint64 kScanStride = 4096;

}  // namespace

bool DeferredToast::defer(int64 id, Datum raw) {
    struct varlena* v = reinterpret_cast<struct varlena*>(DatumGetPointer(raw));
    if (!VARATT_IS_EXTERNAL_ONDISK(v)) return false;
    varatt_external ptr;
    VARATT_EXTERNAL_GET_POINTER(ptr, v);
    // Compressed (VARATT_EXTERNAL_IS_COMPRESSED, spelled out without its sign mismatch).
    if (VARATT_EXTERNAL_GET_EXTSIZE(ptr) < static_cast<uint32>(ptr.va_rawsize - VARHDRSZ)) return false;
    if (toastrel_ == InvalidOid) toastrel_ = ptr.va_toastrelid;
    if (ptr.va_toastrelid != toastrel_) return false;
    values_.push_back(Value{id, ptr, 0, State::Open, nullptr});
    bytes_ += VARATT_EXTERNAL_GET_EXTSIZE(ptr);
    return true;
}

int64 DeferredToast::find(Oid valueid) const noexcept {
    const uint64 mask = slots_.size() - 1;
    for (uint64 s = fmix64(valueid) & mask;; s = (s + 1) & mask) {
        const int64 at = slots_[s];
        if (at < 0 || values_[static_cast<size_t>(at)].ptr.va_valueid == valueid) return at;
    }
}

size_t DeferredToast::fetch(AddValueFn add, void* ctx) {
    if (values_.empty()) return 0;
    BlockNumber blocks = 0;
    pg_guard([&] {
        Relation rel = table_open(toastrel_, AccessShareLock);
        blocks = RelationGetNumberOfBlocks(rel);
        table_close(rel, AccessShareLock);
    });
    size_t scanned = 0;
    if (static_cast<double>(bytes_) >= kMinShare * static_cast<double>(blocks) * BLCKSZ) scanned = scan(add, ctx);
    // The rest the usual way: a toast pointer rebuilt from the noted one, detoasted.
    for (Value& v : values_) {
        if (v.state == State::Done) continue;
        pg_guard([&] {
            alignas(8) char pointer[TOAST_POINTER_SIZE];
            SET_VARTAG_EXTERNAL(pointer, VARTAG_ONDISK);
            std::memcpy(VARDATA_EXTERNAL(pointer), &v.ptr, sizeof v.ptr);
            struct varlena* d = detoast_external_attr(reinterpret_cast<struct varlena*>(pointer));
            add(ctx, v.id, VARDATA_ANY(d), VARSIZE_ANY_EXHDR(d));
            pfree(d);
        });
        v.state = State::Done;
    }
    // The notes were charged as they grew (the reader grows them before each defer()).
    if (budget_ != nullptr) budget_->release(values_.capacity() * sizeof(Value) + slots_.size() * sizeof(int64));
    std::vector<Value>().swap(values_);
    std::vector<int64>().swap(slots_);
    return scanned;
}

size_t DeferredToast::scan(AddValueFn add, void* ctx) {
    size_t cap = 16;
    while (cap < 2 * values_.size()) cap *= 2;
    // Without room for the table, every value is detoasted on its own.
    if (budget_ != nullptr && !budget_->charge(cap * sizeof(int64))) return 0;
    slots_.assign(cap, -1);
    for (size_t k = 0; k < values_.size(); ++k) {
        const uint64 mask = cap - 1;
        uint64 s = fmix64(values_[k].ptr.va_valueid) & mask;
        while (slots_[s] >= 0) s = (s + 1) & mask;
        slots_[s] = static_cast<int64>(k);
    }
    size_t done = 0;
    pg_guard([&] {
        Relation rel = table_open(toastrel_, AccessShareLock);
        TupleDesc desc = RelationGetDescr(rel);
        // The visibility rule the usual detoasting reads chunks with.
#if PG_VERSION_NUM < 180000
        SnapshotData toast_snapshot;
        init_toast_snapshot(&toast_snapshot);
        Snapshot snapshot = &toast_snapshot;
#else
        Snapshot snapshot = get_toast_snapshot();  // 18: the static one, no longer filled in by the caller
#endif
        TableScanDesc sd = table_beginscan(rel, snapshot, 0, nullptr);
        MemoryContext chunks =
            AllocSetContextCreate(CurrentMemoryContext, "spotsigs toast values", ALLOCSET_DEFAULT_SIZES);
        uint64 open_bytes = 0, seen = 0;
        HeapTuple tuple;
        while ((tuple = heap_getnext(sd, ForwardScanDirection)) != nullptr) {
            if (++seen % kScanStride == 0) CHECK_FOR_INTERRUPTS();
            bool null1, null2, null3;
            const Oid valueid = DatumGetObjectId(fastgetattr(tuple, 1, desc, &null1));
            const int64 at = null1 ? -1 : find(valueid);
            if (at < 0) continue;
            Value& v = values_[static_cast<size_t>(at)];
            if (v.state != State::Open) continue;
            const int32 seq = DatumGetInt32(fastgetattr(tuple, 2, desc, &null2));
            const Pointer chunk = DatumGetPointer(fastgetattr(tuple, 3, desc, &null3));
            const int32 size = static_cast<int32>(VARATT_EXTERNAL_GET_EXTSIZE(v.ptr));
            const int32 chunks_total = (size - 1) / TOAST_MAX_CHUNK_SIZE + 1;
            // A chunk not as the usual detoasting expects it (or seen twice): that value is left
            // to the usual detoasting, which reports what is wrong, if anything is.
            bool ok = !null2 && !null3 && seq >= 0 && seq < chunks_total && !VARATT_IS_EXTERNAL(chunk) &&
                      !VARATT_IS_COMPRESSED(chunk);
            const int32 expected =
                seq < chunks_total - 1 ? TOAST_MAX_CHUNK_SIZE : size - (chunks_total - 1) * TOAST_MAX_CHUNK_SIZE;
            ok = ok && static_cast<int32>(VARSIZE_ANY_EXHDR(chunk)) == expected;
            // The value's bytes, then a bit per chunk received (chunks need not come in order: a
            // value's small last chunk often fills a gap on an earlier page).
            const uint64 room = uint64(size) + (chunks_total + 7) / 8;
            if (ok && v.buf == nullptr) {
                ok = open_bytes + room <= kOpenBytesCap && (budget_ == nullptr || budget_->charge(room));
                if (ok) {
                    v.buf = static_cast<char*>(MemoryContextAllocZero(chunks, room));
                    open_bytes += room;
                    peak_open_ = std::max(peak_open_, open_bytes);
                }
            }
            unsigned char* got = ok ? reinterpret_cast<unsigned char*>(v.buf) + size : nullptr;
            ok = ok && (got[seq / 8] & (1u << (seq % 8))) == 0;
            if (!ok) {
                if (v.buf != nullptr) {
                    pfree(v.buf);
                    if (budget_ != nullptr) budget_->release(room);
                    open_bytes -= room;
                    v.buf = nullptr;
                }
                v.state = State::Detoast;
                continue;
            }
            got[seq / 8] |= static_cast<unsigned char>(1u << (seq % 8));
            std::memcpy(v.buf + seq * TOAST_MAX_CHUNK_SIZE, VARDATA_ANY(chunk), expected);
            if (++v.received < static_cast<uint32>(chunks_total)) continue;
            add(ctx, v.id, v.buf, size);
            pfree(v.buf);
            if (budget_ != nullptr) budget_->release(room);
            open_bytes -= room;
            v.buf = nullptr;
            v.state = State::Done;
            ++done;
        }
        table_endscan(sd);
        table_close(rel, AccessShareLock);
        MemoryContextDelete(chunks);  // values whose last chunk never came
        if (budget_ != nullptr) budget_->release(open_bytes);
    });
    for (Value& v : values_) v.buf = nullptr;
    return done;
}

}  // namespace spotsigs::pg
