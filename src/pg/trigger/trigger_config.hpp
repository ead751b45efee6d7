// Configuration of one spotsigs_flag_duplicates() trigger: its arguments resolved against the
// table's catalog and the spotsigs index it searches, cached per trigger for the backend's life.
//
// The trigger is written in C-style PostgreSQL code: no C++ object with a destructor is alive
// across a PostgreSQL call, so a PostgreSQL error may longjmp through these frames.
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "commands/trigger.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "nodes/primnodes.h"
#include "utils/rel.h"
}

namespace spotsigs::pg {

// How a value the trigger computes becomes the stored value of a column it writes: as an INSERT
// of the value would store it, typmod applied and domain constraints checked.
struct ColumnWrite {
    Oid type;            // the column's declared type: a domain, or the base type itself
    bool domain;         // type is a domain: its constraints are checked
    int32 typmod;        // the base type's typmod (the column's or the domain's), -1 for none
    Oid typmod_fn;       // the length-coercion cast applying typmod (numeric(3,2)), or InvalidOid
    void* domain_extra;  // domain_check's cache (in cxt), for a domain
};

// Everything a firing needs to know, derived once from the trigger and its table.
struct TriggerConfig {
    Oid tgoid;           // hash key: the trigger's OID
    Oid relid;           // the table it fires on
    bool valid;          // false once the table's relcache entry was invalidated
    AttrNumber sig_att;  // spotsig column
    bool sig_generated;  // the column is GENERATED ALWAYS AS (...) STORED
    Expr* gen_expr;      // its generation expression (in cxt), or NULL
    AttrNumber dup_att;  // receives the matched row's id
    Oid dup_type;        // int2, int4 or int8
    AttrNumber sim_att;  // receives the similarity, 0 for none
    Oid sim_type;        // float4, float8 or numeric
    AttrNumber id_att;   // the single-column integer primary key
    Oid id_type;
    Oid spotsig_type;         // the extension's spotsig type
    double threshold;         // tau in (0, 1]
    char threshold_text[40];  // tau, printed exactly, for the GUC
    bool best;                // 'best' (else 'first')
    bool locked;              // take the length-bucket locks (trigger_locks.hpp)
    ColumnWrite dup_write;    // how the duplicate column stores a value
    ColumnWrite sim_write;    // how the similarity column does
    Oid index_oid;            // the valid, non-partial spotsigs index on the spotsig column
    SPIPlanPtr visible_plan;  // the row-security probe (trigger_visibility.hpp), once prepared
    // The content measure (no threshold argument): rows are compared without the column's stored
    // template (spotsigs_analyze), looked up once per statement (trigger_template.cpp).
    bool content;
    Oid ext_schema;                // the extension's schema (where the store is)
    bool tmpl_found;               // statistics are stored for the column
    uint64* tmpl;                  // their template signatures, ascending (in tmpl_cxt)
    size_t ntmpl;                  // how many
    const void* tmpl_set;          // the same as a SignatureSet (core/template/content.hpp), built once
                                   // per template; deleted by tmpl_cxt's reset callback; NULL when empty
    TimestampTz tmpl_at;           // when they were computed
    int64 tmpl_rows;               // on how many rows (0 without statistics)
    uint64 refresh_check;          // the index's entry count at which rows are next counted
    LocalTransactionId tmpl_lxid;  // the statement they were looked up for: transaction and start
    TimestampTz tmpl_stmt;
    MemoryContext tmpl_cxt;  // child of cxt, replaced when the template changes
    MemoryContext cxt;       // owns gen_expr and the domain_check caches
};

// Checks that the call comes from a BEFORE ROW INSERT/UPDATE trigger; ERROR naming the problem.
void check_trigger_context(FunctionCallInfo fcinfo);

// The cached configuration of the firing trigger, built (and checked) on first use or after an
// invalidation of its table (and so after an index on it was created or dropped).
TriggerConfig* trigger_config(FunctionCallInfo fcinfo, TriggerData* td);

}  // namespace spotsigs::pg
