// The content trigger's statistics refresh in a background worker (spotsigs.trigger_refresh =
// background): the inserting session registers a dynamic background worker and goes on; the
// worker waits for that session's transaction to end, so that it sees its rows, then takes the
// table's SHARE UPDATE EXCLUSIVE lock and refreshes as the in-statement refresh does
// (trigger_reanalyze.hpp), as the role that launched it, in a transaction of its own.
//
// C-style PostgreSQL code: no C++ object with a destructor, so errors may longjmp through it.
#pragma once

#include "pg/trigger/trigger_config.hpp"

namespace spotsigs::pg {

// True while a worker this session launched for relid has not exited (not yet started, waiting
// or refreshing): a second launch would only queue behind it.
bool background_refresh_pending(Oid relid);

// Registers a worker to refresh c's table once the current transaction ends, growing by `growth`
// (the session's spotsigs.trigger_refresh_growth). True without registering one when a worker of
// any session is refreshing the table already (it will see this transaction's rows, or re-flag
// them in its last pass). False when none could be registered: every
// worker slot (max_worker_processes) taken, or, before PostgreSQL 16, a current role without
// LOGIN (a background worker connects as a role that may log in).
bool launch_background_refresh(const TriggerConfig* c, double growth);

}  // namespace spotsigs::pg

extern "C" {
// The worker's entry point (bgw_function_name), in the extension's library.
PGDLLEXPORT void spotsigs_refresh_worker_main(Datum arg);
}
