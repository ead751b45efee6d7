// The template statistics the database keeps (spotsigs_analyze() and the table
// spotsigs_template_store, src/sql/35_template.sql): a table column's template signatures, read by
// every path of the content measure that has a table behind it (the trigger, the joins).
//
// C-style PostgreSQL code: no C++ object with a destructor, so errors may longjmp through it.
#pragma once

#include "pg/pg.hpp"

#include "core/signature/multiset.hpp"

extern "C" {
#include "datatype/timestamp.h"
}

namespace spotsigs::pg {

// A stored template: its signature hashes (ascending, palloc'd), when and on how many rows it was
// computed.
struct StoredTemplate {
    bool found;      // false: no statistics for the column (the other fields are unset)
    uint64* hashes;  // ascending
    size_t n;        // number of hashes
    int64 rows;      // rows analyzed
    TimestampTz at;  // analyzed at (clock_timestamp() of the analyze; a new analyze, a new value)
};

// Reads the stored template of (relid, sig_column) into *out, its hashes allocated in cxt.
// ext_schema is the extension's schema (the namespace of the calling function). The store is read
// as its owner: the caller needs no privilege on it (the caller reads the table itself, which
// needs its own privileges). Without the store (a catalog older than the library), not found.
// Raises PostgreSQL errors; call outside pg_entry.
void stored_template(Oid ext_schema, Oid relid, const char* sig_column, MemoryContext cxt, StoredTemplate* out);

// q without the template signatures t[0..n) (ascending), in palloc'd arrays; q itself when n is 0.
MultisetView without_template(const MultisetView& q, const uint64* t, size_t n);

}  // namespace spotsigs::pg
