// The tuplestore a materialized join call returns its rows in, with its memory taken and faulted
// in at once when the row count is known (a million result rows otherwise cost tens of thousands
// of page faults, expensive on virtual machines).
#pragma once

#include "pg.hpp"

extern "C" {
#include "funcapi.h"
}

#include <cstddef>

namespace spotsigs::pg {

// Replaces the call's still empty result tuplestore with one whose rows go into a single block
// sized for `rows` rows (never more than work_mem, past which the tuplestore writes to disk),
// advised for huge pages and populated in one system call. Small results keep the usual store.
// PostgreSQL code: call it inside pg_guard, before the first row is put.
void presize_result(ReturnSetInfo* rsinfo, size_t rows);

}  // namespace spotsigs::pg
