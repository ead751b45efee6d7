// A result tuplestore presized for a known number of rows (see result_store.hpp).
#include "pg/join/result_store.hpp"

extern "C" {
#include "access/htup_details.h"
#include "utils/tuplestore.h"
}

#include <algorithm>

#include "core/memory/huge_alloc.hpp"
#include "core/memory/huge_pages.hpp"

namespace spotsigs::pg {

namespace {

// Below this many bytes of rows the usual store's page faults cost too little to matter.
constexpr size_t kMinPresize = size_t(4) << 20;
// glibc gives every malloc of at least this many bytes a mapping of its own (32 MB, its largest
// dynamic mmap threshold on 64-bit systems); only such a block may get pages of the pool.
constexpr size_t kOwnMapping = size_t(32) << 20;
// The context's header and its first block's header lie in the block's first bytes, already
// written; pages from this offset on are untouched when the context is new.
constexpr size_t kHeaderRoom = 4096;

// Bytes one row of the result's descriptor takes in a memory context, chunk header included;
// 0 when a column is passed by reference (its size then depends on the values).
size_t row_space(TupleDesc desc) {
    Datum values[8] = {0};
    bool nulls[8] = {false};
    if (desc->natts > 8) return 0;
    for (int i = 0; i < desc->natts; ++i)
        if (!TupleDescAttr(desc, i)->attbyval) return 0;
    MinimalTuple sample = SPOTSIGS_FORM_MINIMAL_TUPLE(desc, values, nulls);
    size_t space = GetMemoryChunkSpace(sample);
    pfree(sample);
    return space;
}

}  // namespace

size_t result_memory_bytes(ReturnSetInfo* rsinfo, size_t rows) {
    const size_t bytes = rows * row_space(rsinfo->setDesc);
    return std::min(bytes, size_t(work_mem) * 1024);
}

void presize_result(ReturnSetInfo* rsinfo, size_t rows, bool exact) {
    size_t space = row_space(rsinfo->setDesc);
    if (space == 0) return;
    size_t bytes = rows * space;
    size_t in_memory = size_t(work_mem) * 1024;  // the tuplestore spills to disk past this
    if (bytes > in_memory) bytes = in_memory;
    if (bytes < kMinPresize) return;
    bytes = MAXALIGN(bytes + bytes / 64 + (size_t(64) << 10));  // the store's own header and slack
    // The first block of an AllocSet context is malloc'd together with the context header, so
    // [cxt, cxt + bytes) is that one block; the advice below only faults pages in, it never
    // changes their contents.
    MemoryContext cxt = AllocSetContextCreate(rsinfo->econtext->ecxt_per_query_memory, "spotsigs result", bytes,
                                              ALLOCSET_DEFAULT_INITSIZE, bytes);
    // The block's pages past its header: from the reserved pool when spotsigs.join_huge_pages
    // allows (glibc maps a block this large on its own, so the range is one fresh mapping).
    char* rows_start = reinterpret_cast<char*>(cxt) + kHeaderRoom;
    PoolMove moved = bytes >= kOwnMapping ? move_to_reserved_pool(rows_start, bytes - kHeaderRoom) : PoolMove::Kept;
    if (moved == PoolMove::Lost) {
        MemoryContextDelete(cxt);
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory"),
                        errdetail("Could not map the result rows' memory.")));
    }
    if (moved == PoolMove::Kept) advise_huge_pages(cxt, bytes);
    if (exact) populate_pages(cxt, bytes);
    MemoryContext old = MemoryContextSwitchTo(cxt);
    Tuplestorestate* store =
        tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0, false, work_mem);
    MemoryContextSwitchTo(old);
    if (rsinfo->setResult != nullptr) tuplestore_end(rsinfo->setResult);
    rsinfo->setResult = store;
}

}  // namespace spotsigs::pg
