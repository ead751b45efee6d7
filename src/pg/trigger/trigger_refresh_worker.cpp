// The content trigger's statistics refresh in a background worker (trigger_refresh_worker.hpp).
#include "pg/trigger/trigger_refresh_worker.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

#include <cstring>

#include "pg/compat.hpp"
#include "pg/trigger/trigger_reanalyze.hpp"

namespace spotsigs::pg {

namespace {

// What a worker needs to know, carried in bgw_extra: where to connect and as whom, whose
// transaction to wait for, and the trigger's columns (attribute numbers of the table).
struct RefreshRequest {
    Oid database;
    Oid role;
    Oid relid;
    Oid ext_schema;
    TransactionId xid;
    double growth;
    AttrNumber sig_att;
    AttrNumber id_att;
    AttrNumber dup_att;
    AttrNumber sim_att;
};
static_assert(sizeof(RefreshRequest) <= BGW_EXTRALEN, "the request fits in bgw_extra");

// The workers this session launched and has not yet seen exit, by table.
constexpr int kMaxLaunched = 16;
struct Launched {
    Oid relid;
    BackgroundWorkerHandle* handle;  // in TopMemoryContext
};
Launched launched[kMaxLaunched];
int nlaunched = 0;

// One refresh of a table's column at a time in the whole cluster, not only per session (a load
// of one row per connection would otherwise launch a worker with every due insert until the
// first refresh commits, and fill every worker slot): the worker holds this lock, taken without
// waiting, from its start to its exit, and a session launches none while another holds it. An
// advisory lock tag of a space of its own (field 4, which pg_advisory_lock keeps to 1 and 2),
// shown in pg_locks as an advisory lock with objsubid 21331.
constexpr uint16 kRefreshLockSpace = 0x5353;
LOCKTAG refresh_lock_tag(Oid database, Oid relid, AttrNumber sig_att) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, database, relid, static_cast<uint32>(sig_att), kRefreshLockSpace);
    return tag;
}

// Forgets launched[i].
void forget(int i) {
    pfree(launched[i].handle);
    launched[i] = launched[--nlaunched];
}

// True when launched[i]'s worker has not exited.
bool running(int i) {
    pid_t pid = 0;
    const BgwHandleStatus s = GetBackgroundWorkerPid(launched[i].handle, &pid);
    return s == BGWH_STARTED || s == BGWH_NOT_YET_STARTED;
}

#if PG_VERSION_NUM < 160000
// True when role may log in: before PostgreSQL 16 a background worker connects only as such a
// role.
bool role_can_login(Oid role) {
    HeapTuple tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
    if (!HeapTupleIsValid(tup)) return false;
    const bool ok = ((Form_pg_authid)GETSTRUCT(tup))->rolcanlogin;
    ReleaseSysCache(tup);
    return ok;
}
#endif

// True when att is a live column of rel.
bool live_column(Relation rel, AttrNumber att) {
    return att >= 1 && att <= RelationGetDescr(rel)->natts &&
           !TupleDescAttr(RelationGetDescr(rel), att - 1)->attisdropped;
}

// One of the worker's transactions: opens the table with its SHARE UPDATE EXCLUSIVE lock (waiting
// for a refresh, VACUUM or ANALYZE that holds it), checks that the request still describes it,
// then refreshes when due (`second` false) or re-flags the rows that arrived during the refresh
// (`second` true). A table dropped meanwhile, or whose columns were dropped, is left alone. True
// when it wrote.
bool refresh_table(const RefreshRequest& r, bool second) {
    Relation rel = try_relation_open(r.relid, ShareUpdateExclusiveLock);
    if (rel == nullptr) return false;
    if (!live_column(rel, r.sig_att) || !live_column(rel, r.id_att) || !live_column(rel, r.dup_att) ||
        (r.sim_att != 0 && !live_column(rel, r.sim_att))) {
        relation_close(rel, ShareUpdateExclusiveLock);
        return false;
    }
    // The template is read into a child of the transaction's context, freed at its end.
    TriggerConfig c;
    std::memset(&c, 0, sizeof c);
    c.relid = r.relid;
    c.sig_att = r.sig_att;
    c.id_att = r.id_att;
    c.dup_att = r.dup_att;
    c.sim_att = r.sim_att;
    c.ext_schema = r.ext_schema;
    c.content = true;
    c.best = true;
    c.cxt = CurrentMemoryContext;
    c.tmpl_lxid = InvalidLocalTransactionId;
    const bool wrote =
        second ? reflag_arrivals_in_background_worker(&c, rel) : refresh_in_background_worker(&c, rel, r.growth);
    ereport(DEBUG1, (errmsg("spotsigs refresh of \"%s\": %s", RelationGetRelationName(rel),
                            second ? (wrote ? "re-flagged the rows that arrived meanwhile" : "no row arrived meanwhile")
                                   : (wrote ? "analyzed and re-flagged" : "not due"))));
    relation_close(rel, NoLock);
    return wrote;
}

// Runs refresh_table(r, second) in a transaction of its own. True when it wrote. The second pass
// first waits for every transaction then writing the table (as CREATE INDEX CONCURRENTLY does):
// a statement that began before the refresh committed flags its rows with the template before,
// and the pass's snapshot, taken after the wait, sees them all; every statement that begins later
// reads the new template.
bool in_transaction(const RefreshRequest& r, bool second) {
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    if (second) {
        LOCKTAG tag;
        SET_LOCKTAG_RELATION(tag, MyDatabaseId, r.relid);
        WaitForLockers(tag, ShareLock, false);
    }
    PushActiveSnapshot(GetTransactionSnapshot());
    const bool wrote = refresh_table(r, second);
    PopActiveSnapshot();
    CommitTransactionCommand();
    return wrote;
}

}  // namespace

bool background_refresh_pending(Oid relid) {
    for (int i = 0; i < nlaunched; ++i) {
        if (launched[i].relid != relid) continue;
        if (running(i)) return true;
        forget(i);
        return false;
    }
    return false;
}

bool launch_background_refresh(const TriggerConfig* c, double growth) {
    const Oid role = GetUserId();
#if PG_VERSION_NUM < 160000
    if (!role_can_login(role)) return false;
#endif
    // Room for the handle: forget the workers that have exited; with every entry running, the
    // session launches no more (each running one refreshes when its table is due).
    for (int i = nlaunched - 1; i >= 0; --i)
        if (!running(i)) forget(i);
    if (nlaunched == kMaxLaunched) return false;
    // A worker of any session refreshing this table already: it reads the store again after the
    // inserting transactions it waits for, so this launch would find nothing due. (Taken and
    // given back at once; a worker that starts meanwhile settles the race by the same lock.)
    LOCKTAG tag = refresh_lock_tag(MyDatabaseId, c->relid, c->sig_att);
    if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL) return true;
    LockRelease(&tag, ExclusiveLock, false);

    RefreshRequest r;
    std::memset(&r, 0, sizeof r);
    r.database = MyDatabaseId;
    r.role = role;
    r.relid = c->relid;
    r.ext_schema = c->ext_schema;
    r.xid = GetTopTransactionId();
    r.growth = growth;
    r.sig_att = c->sig_att;
    r.id_att = c->id_att;
    r.dup_att = c->dup_att;
    r.sim_att = c->sim_att;

    BackgroundWorker w;
    std::memset(&w, 0, sizeof w);
    w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    w.bgw_start_time = BgWorkerStart_RecoveryFinished;
    w.bgw_restart_time = BGW_NEVER_RESTART;
    strlcpy(w.bgw_library_name, "spotsigs", BGW_MAXLEN);
    strlcpy(w.bgw_function_name, "spotsigs_refresh_worker_main", BGW_MAXLEN);
    snprintf(w.bgw_name, BGW_MAXLEN, "spotsigs refresh of table %u", c->relid);
    strlcpy(w.bgw_type, "spotsigs refresh", BGW_MAXLEN);
    std::memcpy(w.bgw_extra, &r, sizeof r);
    w.bgw_notify_pid = 0;

    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    BackgroundWorkerHandle* handle = nullptr;
    const bool ok = RegisterDynamicBackgroundWorker(&w, &handle);
    MemoryContextSwitchTo(old);
    if (!ok) return false;
    launched[nlaunched].relid = c->relid;
    launched[nlaunched].handle = handle;
    ++nlaunched;
    return true;
}

}  // namespace spotsigs::pg

// Connects as the launching role, waits for the launching transaction, then refreshes in a
// transaction of its own (and a second for the rows that arrived meanwhile). SIGTERM (pg_terminate_backend, shutdown)
// and SIGINT (pg_cancel_backend) are served at the analysis's and the re-flag's interrupt checks: the transaction rolls
// back and the worker exits; the table keeps its flags and statistics, and the next due insert launches another.
void spotsigs_refresh_worker_main(Datum) {
    using namespace spotsigs::pg;
    RefreshRequest r;
    std::memcpy(&r, MyBgworkerEntry->bgw_extra, sizeof r);
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
#if PG_VERSION_NUM >= 160000
    BackgroundWorkerInitializeConnectionByOid(r.database, r.role, BGWORKER_BYPASS_ROLELOGINCHECK);
#else
    BackgroundWorkerInitializeConnectionByOid(r.database, r.role, 0);
#endif
    pgstat_report_appname("spotsigs refresh");
    // The refresh reads and writes under READ COMMITTED whatever the role's or database's default:
    // under a transaction snapshot its re-flag could meet rows a concurrent refresh updated.
    DefaultXactIsoLevel = XACT_READ_COMMITTED;

    // The launching transaction's rows become visible when it ends; its lock on its own xid is
    // released then (committed or aborted alike).
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    LOCKTAG tag = refresh_lock_tag(r.database, r.relid, r.sig_att);
    if (LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL) {
        // Another worker refreshes this table (launched by another session): it covers this
        // launch's rows (it waits for every transaction writing the table before its last pass).
        CommitTransactionCommand();
        proc_exit(0);
    }
    pgstat_report_activity(STATE_RUNNING, "spotsigs refresh: waiting for the inserting transaction");
    if (TransactionIdIsValid(r.xid)) XactLockTableWait(r.xid, nullptr, nullptr, XLTW_None);
    CommitTransactionCommand();

    StartTransactionCommand();
    const char* relname = get_rel_name(r.relid);
    const char* name = MemoryContextStrdup(TopMemoryContext, relname ? relname : "(dropped)");
    CommitTransactionCommand();
    pgstat_report_activity(STATE_RUNNING, psprintf("spotsigs refresh: analyzing and re-flagging %s", name));
    // Rows inserted while the refresh ran were flagged with the template before it (their
    // statements read it before the refresh committed): a second transaction, begun after the
    // commit, re-flags every row once more with the new template if any row arrived.
    if (in_transaction(r, false)) {
        pgstat_report_activity(STATE_RUNNING,
                               psprintf("spotsigs refresh: re-flagging the rows that arrived in %s", name));
        (void)in_transaction(r, true);
    }
    pgstat_report_activity(STATE_IDLE, nullptr);
    proc_exit(0);
}
