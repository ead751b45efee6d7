// Argument helpers for text arrays.
#include "pg/args.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
}

namespace spotsigs::pg {

TextArray read_text_array(Datum array, const char* what) {
    ArrayType* arr = DatumGetArrayTypeP(array);
    Datum* elems;
    bool* nulls;
    int n;
    deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
    TextArray out;
    out.count = n;
    out.data = static_cast<char**>(palloc(sizeof(char*) * (n > 0 ? n : 1)));
    out.lengths = static_cast<int*>(palloc(sizeof(int) * (n > 0 ? n : 1)));
    for (int i = 0; i < n; ++i) {
        if (nulls[i])
            ereport(ERROR,
                    (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not contain NULL elements", what)));
        text* t = DatumGetTextPP(elems[i]);
        out.data[i] = VARDATA_ANY(t);
        out.lengths[i] = VARSIZE_ANY_EXHDR(t);
    }
    return out;
}

std::vector<std::string> to_strings(const TextArray& a) {
    std::vector<std::string> out;
    out.reserve(a.count);
    for (int i = 0; i < a.count; ++i) out.emplace_back(a.data[i], a.lengths[i]);
    return out;
}

}  // namespace spotsigs::pg
