// Converting between spotsig datums (varlena) and core multiset views.
#pragma once

#include "pg/pg.hpp"

#include "core/signature/multiset.hpp"

namespace spotsigs::pg {

// The OID of the spotsig type in the schema of the function being called: the extension's schema,
// since every SQL function of the extension lives there. Outside pg_entry (ERROR 42704 if absent).
Oid spotsig_type_oid(FunctionCallInfo fcinfo);
// The spotsig type of the extension whose schema is nsp (42704 when there is none).
Oid spotsig_type_in(Oid nsp);

// Detoasts a spotsig datum; call outside pg_entry (it may raise PostgreSQL errors).
inline struct varlena* fetch_spotsig(Datum d) {
    return PG_DETOAST_DATUM(d);
}

// A view of a detoasted spotsig (header checks only); throws Error(DataCorrupted).
MultisetView view_of(const struct varlena* v);

// Builds a palloc'd spotsig datum from a multiset (PostgreSQL errors become PgError).
Datum make_spotsig(const MultisetView& m);

}  // namespace spotsigs::pg
