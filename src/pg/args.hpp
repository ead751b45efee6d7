// Reading SQL arguments (text, text[]) into plain C++ values, outside any pg_entry.
#pragma once

#include "pg/pg.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace spotsigs::pg {

// A text[] argument copied into C-owned storage: palloc'd pointers and lengths.
struct TextArray {
    int count = 0;
    char** data = nullptr;
    int* lengths = nullptr;
};

// Deconstructs a text[]; a NULL element is an ERROR (22004) naming what; call outside pg_entry.
TextArray read_text_array(Datum array, const char* what);

// Copies a TextArray into std::strings (inside pg_entry).
std::vector<std::string> to_strings(const TextArray& a);

// A detoasted text argument as a byte view (valid for the call).
inline std::string_view text_view(Datum d) {
    text* t = DatumGetTextPP(d);
    return std::string_view(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

}  // namespace spotsigs::pg
