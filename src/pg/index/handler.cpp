// The access method handler (spotsigs_handler) and the index's reloptions.
#include "pg/index/index.hpp"

extern "C" {
#include "access/reloptions.h"
#include "commands/vacuum.h"
#include "utils/guc.h"
}

namespace spotsigs::pg::index {

namespace {

relopt_kind options_kind;
bool options_registered = false;

// Registers the reloptions once per backend (the handler always runs before amoptions).
void register_options() {
    if (options_registered) return;
    options_kind = add_reloption_kind();
    // The metapage records the growth the index was built with, and every search, insert and
    // VACUUM uses that one; a growth set later by ALTER INDEX takes effect at the next build
    // (REINDEX), as BRIN's pages_per_range does.
    add_int_reloption(options_kind, "partition_growth",
                      "Width of each length partition over the previous one, in percent", 10, 5, 100,
                      AccessExclusiveLock);
    add_int_reloption(
        options_kind, "pending_list_limit",
        "Size of the pending list of new rows, in kB, beyond which an insert merges it (0: only VACUUM does)", 4096, 0,
        MAX_KILOBYTES, ShareUpdateExclusiveLock);
    options_registered = true;
}

}  // namespace

bytea* amoptions(Datum reloptions, bool validate) {
    register_options();
    static const relopt_parse_elt tab[] = {
        {"partition_growth", RELOPT_TYPE_INT, offsetof(Options, growth)},
        {"pending_list_limit", RELOPT_TYPE_INT, offsetof(Options, pending_limit)},
    };
    return (bytea*)build_reloptions(reloptions, validate, options_kind, sizeof(Options), tab, lengthof(tab));
}

}  // namespace spotsigs::pg::index

using namespace spotsigs::pg::index;

// spotsigs_handler(internal): the IndexAmRoutine of the spotsigs access method.
SPOTSIGS_FUNCTION(spotsigs_handler) {
    register_options();
    IndexAmRoutine* am = makeNode(IndexAmRoutine);
    am->amstrategies = 5;
    am->amsupport = 0;
    am->amoptsprocnum = 0;
    am->amcanorder = false;
    am->amcanorderbyop = true;
    am->amcanbackward = false;
    am->amcanunique = false;
    am->amcanmulticol = false;
    am->amoptionalkey = true;
    am->amsearcharray = false;
    am->amsearchnulls = false;
    am->amstorage = false;
    am->amclusterable = false;
    am->ampredlocks = false;
    am->amcanparallel = false;
    am->amcaninclude = false;
    am->amusemaintenanceworkmem = false;
    am->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
    am->amkeytype = InvalidOid;

    am->ambuild = ambuild;
    am->ambuildempty = ambuildempty;
    am->aminsert = aminsert;
    am->ambulkdelete = ambulkdelete;
    am->amvacuumcleanup = amvacuumcleanup;
    am->amcanreturn = nullptr;
    am->amcostestimate = amcostestimate;
    am->amoptions = amoptions;
    am->amproperty = nullptr;
    am->ambuildphasename = ambuildphasename;
    am->amvalidate = amvalidate;
    am->amadjustmembers = nullptr;
    am->ambeginscan = ambeginscan;
    am->amrescan = amrescan;
    am->amgettuple = amgettuple;
    am->amgetbitmap = amgetbitmap;
    am->amendscan = amendscan;
    am->ammarkpos = nullptr;
    am->amrestrpos = nullptr;
    am->amestimateparallelscan = nullptr;
    am->aminitparallelscan = nullptr;
    am->amparallelrescan = nullptr;
    PG_RETURN_POINTER(am);
}
