// The content trigger's statistics refresh: when the table holds spotsigs.trigger_refresh_growth
// times the rows its stored statistics were computed on, the insert that finds it so runs
// spotsigs_analyze and then recomputes every flag of the table with the new template
// (spotsigs_flag_batch) before flagging its own row, or has a background worker do it once its
// transaction ends (trigger_refresh_worker.hpp). A table that starts empty so gains its template
// as rows arrive, at a constant number of analyses and re-flags per row amortized (the growth of
// a growing array).
//
// C-style PostgreSQL code: no C++ object with a destructor, so errors may longjmp through it.
#pragma once

#include "pg/trigger/trigger_config.hpp"

namespace spotsigs::pg {

// The rows a table needs before its first refresh (the sample size of the template's
// definition: with fewer rows no signature can fill a sample).
constexpr uint64 kRefreshMinRows = 16;

// The values of spotsigs.trigger_refresh.
enum RefreshMode { kRefreshOff = 0, kRefreshOn = 1, kRefreshBackground = 2 };

// Refreshes c's table when due: c a content trigger in mode 'best', firing for an INSERT in a
// READ COMMITTED transaction; spotsigs.trigger_refresh on; the current user owns the table and
// may SELECT and UPDATE it; no row-level security enabled on it or on a partitioned table above
// it; no security-restricted operation; the table's SHARE UPDATE EXCLUSIVE lock free or held by
// this transaction; and the rows with a signature that a new snapshot shows number at least the
// stored statistics' rows times spotsigs.trigger_refresh_growth (at least kRefreshMinRows). c's
// template is then the new one.
// Raises PostgreSQL errors (those of spotsigs_analyze and the re-flag's UPDATE).
void maybe_refresh(TriggerConfig* c, Relation rel);

// The refresh of a background worker: c describes the table (rel, opened with its SHARE UPDATE
// EXCLUSIVE lock), the current user is the role that launched it. Makes the same checks of the
// role as maybe_refresh, then refreshes if the rows a new snapshot shows reach the target of
// `growth` (the launching session's setting). True when it refreshed.
bool refresh_in_background_worker(TriggerConfig* c, Relation rel, double growth);

// The background worker's second pass, in a transaction begun after its refresh committed: rows
// inserted while the refresh ran were flagged on arrival with the template before it. When a new
// snapshot shows more rows than the stored statistics were computed on, re-flags every row with
// the stored template (no analysis). True when it re-flagged.
bool reflag_arrivals_in_background_worker(TriggerConfig* c, Relation rel);

// True while this backend re-flags relid: the UPDATEs of spotsigs_flag_batch must not be
// re-judged by a BEFORE UPDATE firing of the trigger itself.
bool reflagging(Oid relid);

// Registers spotsigs.trigger_refresh (from _PG_init).
void register_trigger_gucs();

}  // namespace spotsigs::pg
