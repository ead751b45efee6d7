// spotsigs_query: a query signature together with its own threshold, the right operand of
// `sig % spotsig_query(q, tau)`. The threshold travels inside the value, so the operator is
// IMMUTABLE and a distributed planner (Citus) ships it to every shard with the query text,
// where a session setting such as spotsigs.similarity_threshold would not follow.
#pragma once

#include <memory>

#include "core/template/content.hpp"
#include "pg/pg.hpp"
#include "pg/template/named.hpp"

extern "C" {
#include "access/htup.h"
#include "access/htup_details.h"
#include "datatype/timestamp.h"
#include "utils/snapshot.h"
}

namespace spotsigs::pg {

// Splits a spotsigs_query datum (a composite (sig spotsig, threshold float8)) into its
// detoasted signature and its threshold. False when either field is NULL. Raises 22023 when the
// threshold is outside (0, 1]. Call outside pg_entry (it may raise PostgreSQL errors).
bool read_query(Datum query, struct varlena** sig, double* tau);

// Splits a spotsigs_content_query datum (content spotsig, threshold float8, template spotsig,
// template_relation regclass, template_column name, template_version timestamptz) into its
// detoasted content, its threshold and its template, prepared: the template the value carries
// (template not NULL: a value written by hand, prepared once per backend for the last two such
// templates, recognised by their bytes), else the stored one it names (the constructors' values:
// named_template, template/named.hpp). False when the content, the threshold or every template
// field is NULL. 22023 for a threshold outside (0, 1], a template both carried and named, or
// named by some of its fields only; the errors of named_template. Call outside pg_entry.
bool read_content_query(Datum query, struct varlena** content, double* tau, TemplateRef* tmpl);

// A spotsigs_content_query of row type desc (palloc'd): for found, sig's content without tmpl, the
// template of (rel, column) at version, named; else sig itself with the empty template, carried.
// The content is NULL for a NULL sig. Call outside pg_entry.
HeapTuple form_content_query(TupleDesc desc, struct varlena* sig, double tau, bool found, Oid rel, const char* column,
                             TimestampTz version, const TemplateRef& tmpl);

// What a constructor of content queries keeps across the calls of one expression: its row type,
// and its last result with what it was made of. The same arguments under the same snapshot
// (snapshot_key), user and setting make the same value: the statistics read and the privileges
// checked are the same.
struct ResultMemo {
    TupleDesc desc;  // blessed, in fn_mcxt
    bool valid;      // the fields below are set
    Oid rel;
    NameData column;
    double setting;  // the threshold setting the result was made under (the constructor's own part)
    Oid user;
    SnapKey snap;
    struct varlena* last_sig;  // detoasted copy, or null for a NULL sig
    HeapTuple last;            // the result (its t_data is the composite datum)
};

// The memo of a content-query constructor's call site (fn_extra), made on its first call with the
// blessed row type of its result; fn names the function in the error for another result type.
ResultMemo* result_memo(FunctionCallInfo fcinfo, const char* fn);

// The kept result for these arguments now, or null.
HeapTupleHeader memo_result(const ResultMemo* m, Oid rel, const char* column, const struct varlena* sig,
                            double setting);

// Keeps a copy of tup in cxt as the result for these arguments now (and frees the previous one);
// returns the copy's composite datum.
HeapTupleHeader memo_keep(ResultMemo* m, MemoryContext cxt, HeapTuple tup, Oid rel, const char* column,
                          const struct varlena* sig, double setting);

}  // namespace spotsigs::pg
