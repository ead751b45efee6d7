// spotsigs_query: a query signature together with its own threshold, the right operand of
// `sig % spotsig_query(q, tau)`. The threshold travels inside the value, so the operator is
// IMMUTABLE and a distributed planner (Citus) ships it to every shard with the query text,
// where a session setting such as spotsigs.similarity_threshold would not follow.
#pragma once

#include <memory>

#include "core/template/content.hpp"
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

// The template value tmpl (a detoasted spotsig) prepared as a set, from the backend's cache of
// the two templates prepared last (recognised by their bytes): a template read from the
// statistics is the same large value in every statement, and preparing it costs more than a
// search. The set stays valid while the caller holds it. Call outside pg_entry.
std::shared_ptr<const SignatureSet> template_set(const struct varlena* tmpl);

// The template tmpl of the spotsigs_content_query value query, prepared: the set the constructor
// registered with the value when it made it (no comparison of bytes), else template_set(tmpl).
std::shared_ptr<const SignatureSet> content_query_set(Datum query, const struct varlena* tmpl);

}  // namespace spotsigs::pg
