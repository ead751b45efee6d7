// The trigger's own statistics upkeep for the content measure: when the table has grown to twice
// the rows its stored statistics were computed on, the inserting statement runs spotsigs_analyze
// and then recomputes every flag of the table with the new template (spotsigs_flag_batch), so a
// table that starts empty gains its template as rows arrive, at an amortized constant number of
// analyses and re-flags per row (as a dynamic array doubles).
//
// C-style PostgreSQL code: no C++ object with a destructor, so errors may longjmp through it.
#pragma once

#include "pg/trigger/trigger_config.hpp"

namespace spotsigs::pg {

// The fewest rows the table must hold before its first automatic analysis (the sample size of
// the definition: with fewer, no signature can have a full sample).
constexpr uint64 kReanalyzeMinRows = 16;

// Runs the re-analysis and re-flag described above when they are due for c's table (a content
// trigger, an INSERT): the spotsigs index counts at least kReanalyzeMinRows rows, and, when there
// are statistics, has gained at least as many rows as they were computed on (and at least
// kReanalyzeMinRows) since this backend first saw them; spotsigs.trigger_reanalyze is on, the current user owns the table, no security-
// restricted operation is running, and the table's SHARE UPDATE EXCLUSIVE lock is free (else a
// concurrent session is analyzing it: this row keeps the stored template). c's template is then
// the new one. Raises PostgreSQL errors (those of spotsigs_analyze and spotsigs_flag_batch).
void maybe_reanalyze(TriggerConfig* c, Relation rel);

// True while this backend re-flags relid: the UPDATEs of spotsigs_flag_batch must not be
// re-judged by a BEFORE UPDATE firing of the trigger itself.
bool reflagging(Oid relid);

// Registers spotsigs.trigger_reanalyze (from _PG_init).
void register_trigger_gucs();

}  // namespace spotsigs::pg
