// The shared library's magic block and _PG_init, which registers every GUC.
#include "pg/pg.hpp"

#include "pg/citus/fold.hpp"
#include "pg/gucs.hpp"
#include "pg/planner/join_planner.hpp"
#include "pg/trigger/trigger_reanalyze.hpp"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);
}

// Called once when the library is loaded into a backend.
void _PG_init(void) {
    // Before register_similarity_gucs(): it reserves the "spotsigs" prefix, which drops
    // postgresql.conf settings of parameters not defined yet.
    spotsigs::pg::register_join_gucs();
    spotsigs::pg::planner::register_join_planner();
    spotsigs::pg::register_trigger_gucs();
    spotsigs::pg::index::register_index_gucs();
    spotsigs::pg::register_similarity_gucs();
    spotsigs::pg::register_citus_fold();
}
