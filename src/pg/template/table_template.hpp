// The content measure's template of a table column, computed from every row (join_fn.cpp).
#pragma once

#include "pg/pg.hpp"

#include "pg/join/join_read.hpp"

namespace spotsigs::pg {

// The template signatures of src's rows (content.hpp), as a palloc'd spotsig (every frequency 1),
// and in *rows how many rows (non-NULL id and signature) it was computed on; fn names the calling
// function in progress and errors. Call outside pg_entry.
Datum table_template(const JoinSource& src, int64* rows, const char* fn);

}  // namespace spotsigs::pg
