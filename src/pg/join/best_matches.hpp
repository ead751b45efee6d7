// Each row's best match among the rows of smaller id, from the table's default self-join
// (join_fn.cpp): what the trigger's statistics refresh writes into every row.
#pragma once

#include "pg/pg.hpp"

namespace spotsigs::pg {

// The rows of relid that have a match among the rows of smaller id, ascending by id, each with
// its best one: the pairs are those of spotsigs_join(relid, id_column, sig_column) without a
// threshold (the content measure at its default threshold, against the column's stored template,
// else the one computed from the rows), and a row's best match is the pair's other row of highest
// similarity, ties to the smallest id: what SELECT DISTINCT ON (id2) ... ORDER BY id2,
// similarity DESC, id1 over that join gives, without sorting its pairs. out receives three arrays
// of equal length, palloc'd: the rows' ids (int8[]), their matches' ids (int8[]) and the
// similarities (float8[]). ext_schema is the extension's schema. Reads the table as the current
// user; call outside pg_entry.
void best_earlier_matches(Oid ext_schema, Oid relid, const char* id_column, const char* sig_column, Datum out[3]);

}  // namespace spotsigs::pg
