// The tuplestore a materialized join call returns its rows in, with its memory taken and faulted
// in at once when the row count is known (a million result rows otherwise cost tens of thousands
// of page faults, expensive on virtual machines).
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "funcapi.h"
}

#include <cstddef>

namespace spotsigs::pg {

// Replaces the call's still empty result tuplestore with one whose rows go into a single block
// sized for `rows` rows (never more than work_mem, past which the tuplestore writes to disk),
// its pages from the reserved pool when spotsigs.join_huge_pages allows and the block is at
// least 32 MB (otherwise advised for transparent huge pages), populated in one system call.
// Small results keep the usual store. With exact false, rows is only an upper bound (rows are
// written while a join still runs): the block's pages are then left to be faulted in as rows
// reach them, so that the part the bound overestimates costs nothing but address space.
// PostgreSQL code: call it inside pg_guard, before the first row is put.
void presize_result(ReturnSetInfo* rsinfo, size_t rows, bool exact = true);

// The bytes `rows` result rows hold in memory: their size in a memory context, at most work_mem
// (the tuplestore writes the rest to a temporary file). PostgreSQL code.
size_t result_memory_bytes(ReturnSetInfo* rsinfo, size_t rows);

}  // namespace spotsigs::pg
