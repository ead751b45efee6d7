// Spotsig datum <-> multiset view.
#include "pg/type/datum.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "core/common/error.hpp"
#include "core/signature/packed.hpp"
#include "pg/boundary.hpp"

namespace spotsigs::pg {

Oid spotsig_type_oid(FunctionCallInfo fcinfo) {
    return spotsig_type_in(get_func_namespace(fcinfo->flinfo->fn_oid));
}

Oid spotsig_type_in(Oid nsp) {
    Oid type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("spotsig"), ObjectIdGetDatum(nsp));
    if (!OidIsValid(type))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("type spotsig not found in the schema of the spotsigs extension")));
    return type;
}

MultisetView view_of(const struct varlena* v) {
    return unpack(reinterpret_cast<const unsigned char*>(VARDATA_ANY(v)), VARSIZE_ANY_EXHDR(v));
}

Datum make_spotsig(const MultisetView& m) {
    if (m.size > kMaxDistinct)
        throw Error(ErrorKind::ProgramLimit, "spotsig value is too large",
                    std::to_string(m.size) + " distinct signatures; the limit is " + std::to_string(kMaxDistinct));
    size_t payload = packed_size(m);
    if (payload + VARHDRSZ > MaxAllocSize)
        throw Error(ErrorKind::ProgramLimit, "spotsig value is too large",
                    "it would take " + std::to_string(payload) + " bytes; the limit is 1 GB");
    struct varlena* out = nullptr;
    pg_guard([&] { out = static_cast<struct varlena*>(palloc(payload + VARHDRSZ)); });
    SET_VARSIZE(out, payload + VARHDRSZ);
    pack(m, reinterpret_cast<unsigned char*>(VARDATA(out)));
    return PointerGetDatum(out);
}

}  // namespace spotsigs::pg
