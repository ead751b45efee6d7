// The content measure in the trigger: the column's stored template (spotsigs_analyze), looked up
// once per statement, and a new row's content.
#pragma once

#include "core/signature/multiset.hpp"
#include "pg/trigger/trigger_config.hpp"

namespace spotsigs::pg {

// Brings c's template up to date with the store: at most one lookup per statement (a statement
// sees the statistics as they were when its first row was written, unless a refresh is due in it:
// trigger_reanalyze.hpp reads them again), and the template itself read again only when it
// changed (another analyze_at). Content-measure triggers only.
void refresh_trigger_template(TriggerConfig* c, Relation rel);

// q without c's template signatures, in palloc'd arrays (q itself when there is no template).
MultisetView trigger_content(const TriggerConfig* c, const MultisetView& q);

}  // namespace spotsigs::pg
