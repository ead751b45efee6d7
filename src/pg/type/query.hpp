// spotsigs_query: a query signature together with its own threshold, the right operand of
// `sig % spotsig_query(q, tau)`. The threshold travels inside the value, so the operator is
// IMMUTABLE and a distributed planner (Citus) ships it to every shard with the query text,
// where a session setting such as spotsigs.similarity_threshold would not follow.
#pragma once

#include "pg/pg.hpp"

namespace spotsigs::pg {

// Splits a spotsigs_query datum (a composite (sig spotsig, threshold float8)) into its
// detoasted signature and its threshold. False when either field is NULL. Raises 22023 when the
// threshold is outside (0, 1]. Call outside pg_entry (it may raise PostgreSQL errors).
bool read_query(Datum query, struct varlena** sig, double* tau);

// Splits a spotsigs_content_query datum (content spotsig, threshold float8, template spotsig)
// into its detoasted content, threshold and template. False when a field is NULL; 22023 for a
// threshold outside (0, 1]. Call outside pg_entry.
bool read_content_query(Datum query, struct varlena** content, double* tau, struct varlena** tmpl);

}  // namespace spotsigs::pg
