// The threshold and template of % on Citus tables, decided on the node that plans the query
// (fold.cpp). Citus sends the workers the query's text but not the session's settings nor the
// coordinator's statistics; a bare `x % y` (and a content query constructor naming a table) is
// therefore rewritten, before Citus plans it, into an operand that carries its threshold and
// template as constants, and a bare % that reaches a shard anyway is refused there.
#pragma once

#include "pg/pg.hpp"

namespace spotsigs::pg {

// Installs the planner hook that folds the threshold into queries on Citus tables (from _PG_init).
void register_citus_fold();

// spotsigs.similarity_threshold changed: plans that folded the old value are made again
// (a prepared statement's generic plan included). Called by the setting's assign hook; touches
// no catalog.
void citus_fold_setting_changed();

// Whether relid is a shard of a Citus table (false without Citus in this database). PostgreSQL
// code; raises PostgreSQL errors.
bool citus_shard(Oid relid);

}  // namespace spotsigs::pg
