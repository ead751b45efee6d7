// What the trigger may tell the inserting user about other rows. The duplicate and similarity
// columns report another row's id and its similarity to the new row, so the trigger matches only
// rows the user could read with a SELECT of the same table:
//  * the user needs SELECT on the primary key and spotsig columns (or the table), else 42501;
//  * where row-level security applies to the user (RLS enabled, the user neither owner nor
//    BYPASSRLS, or FORCE ROW LEVEL SECURITY), a match must also pass the table's SELECT policies:
//    the index search itself knows nothing of policies, so each row about to become the match
//    is probed with a query run as the user under the trigger's snapshot.
//
// C-style PostgreSQL code: no C++ object with a destructor lives across a PostgreSQL call.
#pragma once

#include "pg/trigger/trigger_config.hpp"

namespace spotsigs::pg {

// ERROR 42501 unless the current user may SELECT the primary key and spotsig columns of rel,
// directly or, for a partition, through a partitioned table above it.
void check_match_privilege(const TriggerConfig* c, Relation rel);

// True when row-level security restricts which rows of the table the current user sees: not for
// a partition whose rows the user may read through a partitioned table above it. ERROR
// 0A000 when rel is a partition and row-level security of a partitioned table above it applies
// to the user (the trigger would search past those policies).
bool row_security_applies(const TriggerConfig* c, Relation rel);

// True when the row whose primary key is id (a datum of c->id_type) is visible to the current
// user through the table's row-level security policies under the active snapshot. Prepares
// and keeps c->visible_plan on first use.
bool row_visible(TriggerConfig* c, Datum id);

}  // namespace spotsigs::pg
