// Spotsig datum <-> multiset view.
#include "pg/type/datum.hpp"

#include "core/common/error.hpp"
#include "core/signature/packed.hpp"
#include "pg/boundary.hpp"

namespace spotsigs::pg {

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
