// The trigger's candidate search: the table's spotsigs index searched directly (no SQL query),
// then the heap rows of the best matches checked for visibility under a fresh snapshot.
#pragma once

#include "core/signature/multiset.hpp"
#include "pg/trigger/trigger_config.hpp"

namespace spotsigs::pg {

// The matched earlier row: its primary key and similarity, when found.
struct TriggerMatch {
    bool found;
    int64 id;
    double similarity;
};

// The row of table rel, other than the one with primary key self, visible to a fresh snapshot
// that also sees the rows written earlier by this statement, with similarity >= the trigger's
// threshold to the non-empty spotsig q: in mode best the most similar (ties: smallest key), in
// mode first the first visible match in index order. Where row-level security applies to the
// user, only rows its policies let the user see (trigger_visibility.hpp).
TriggerMatch trigger_find_match(TriggerConfig* c, Relation rel, const MultisetView& q, int64 self);

// An integer datum of type int2, int4 or int8 as int64.
int64 integer_value(Oid type, Datum d);

}  // namespace spotsigs::pg
