// spotsigs_analyze() and the lookups of the stored template statistics.
//
// The store (spotsigs_template_store) belongs to the extension's owner and grants nothing to
// PUBLIC: writing it is spotsigs_analyze's alone, which checks that its caller owns the table (as
// ANALYZE does) and only then writes, as the store's owner, with a fully qualified statement. So
// the function needs no SECURITY DEFINER (it would run all of it, the reading of the user's table
// included, with the extension owner's rights, and would lose the caller's identity the owner
// check needs); the user switch covers the one statement that writes. Readers see the store
// through the view spotsigs_stats, which shows only the tables they may read.
//
// C-style PostgreSQL code around one pg_entry (the computation, join_fn.cpp's table_template).
#include "pg/template/store.hpp"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

#include <cstring>

#include "core/template/stored.hpp"
#include "pg/boundary.hpp"

#include "pg/join/join_read.hpp"
#include "pg/template/named.hpp"
#include "pg/template/table_template.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg {

namespace {

// The store's qualified name in the extension's schema.
char* store_name(Oid ext_schema) {
    return quote_qualified_identifier(get_namespace_name(ext_schema), "spotsigs_template_store");
}

// The owner of the store: the role the writes and lookups run as.
Oid store_owner(Oid ext_schema) {
    Oid store = get_relname_relid("spotsigs_template_store", ext_schema);
    if (!OidIsValid(store))
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("spotsigs: the table spotsigs_template_store is missing"),
                 errhint("ALTER EXTENSION spotsigs UPDATE creates it.")));
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(store));
    if (!HeapTupleIsValid(tup)) elog(ERROR, "cache lookup failed for relation %u", store);
    Oid owner = ((Form_pg_class)GETSTRUCT(tup))->relowner;
    ReleaseSysCache(tup);
    return owner;
}

// The caller's user and security context, saved while a statement on the store runs as its owner.
struct SavedUser {
    Oid user;
    int sec;
};

// Connects to SPI and becomes the store's owner (restricted, as a SECURITY DEFINER function would
// run); fn names the caller in the error. Undone by restore_user (or by the transaction's abort).
SavedUser become_store_owner(Oid ext_schema, const char* fn) {
    Oid owner = store_owner(ext_schema);
    SavedUser saved;
    GetUserIdAndSecContext(&saved.user, &saved.sec);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "%s: SPI_connect failed", fn);
    SetUserIdAndSecContext(owner, saved.sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    return saved;
}

void restore_user(const SavedUser& saved) {
    SetUserIdAndSecContext(saved.user, saved.sec);
}

// The single-column integer primary key of relid, by name; ERROR 55000 when there is none.
const char* primary_key_name(Oid relid) {
    Relation rel = relation_open(relid, AccessShareLock);
    Oid pk = SPOTSIGS_PRIMARY_KEY_INDEX(rel);
    const char* name = nullptr;
    if (OidIsValid(pk)) {
        Relation idx = relation_open(pk, AccessShareLock);
        if (idx->rd_index->indnkeyatts == 1 && idx->rd_index->indkey.values[0] > 0)
            name = pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), idx->rd_index->indkey.values[0] - 1)->attname));
        relation_close(idx, AccessShareLock);
    }
    relation_close(rel, AccessShareLock);
    if (name == nullptr)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("spotsigs_analyze: table %s has no single-column primary key",
                               quote_identifier(get_rel_name(relid))),
                        errhint("Pass the id column: spotsigs_analyze(rel, sig_column, id_column).")));
    return name;
}

}  // namespace

void stored_template(Oid ext_schema, Oid relid, const char* sig_column, MemoryContext cxt, StoredTemplate* out) {
    out->found = false;
    out->hashes = nullptr;
    out->n = 0;
    // An installation whose catalog predates the store (the library updated, ALTER EXTENSION not
    // yet run) has no statistics: the callers then behave as without any.
    if (!OidIsValid(get_relname_relid("spotsigs_template_store", ext_schema))) return;
    const SavedUser saved = become_store_owner(ext_schema, "spotsigs");
    char* q = psprintf(
        "SELECT template, rows_analyzed, analyzed_at FROM %s "
        "WHERE relation OPERATOR(pg_catalog.=) $1 AND sig_column OPERATOR(pg_catalog.=) $2",
        store_name(ext_schema));
    Oid types[2] = {REGCLASSOID, NAMEOID};
    NameData col;
    namestrcpy(&col, sig_column);
    Datum args[2] = {ObjectIdGetDatum(relid), NameGetDatum(&col)};
    int rc = SPI_execute_with_args(q, 2, types, args, nullptr, true, 1);
    restore_user(saved);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "spotsigs: reading the stored template failed: %s", SPI_result_code_string(rc));
    if (SPI_processed > 0) {
        bool isnull = false;
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        Datum t = SPI_getbinval(tup, desc, 1, &isnull);
        if (!isnull) {
            struct varlena* v = fetch_spotsig(t);
            uint32 size = 0;
            const uint64* h = nullptr;
            pg_entry([&] {
                MultisetView m = view_of(v);
                size = m.size;
                h = m.hashes;
                return Datum(0);
            });
            out->hashes = (uint64*)MemoryContextAlloc(cxt, sizeof(uint64) * (size > 0 ? size : 1));
            if (size > 0) std::memcpy(out->hashes, h, sizeof(uint64) * size);
            out->n = size;
            out->rows = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
            out->at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 3, &isnull));
            out->found = true;
        }
    }
    SPI_finish();
}

MultisetView without_template(const MultisetView& q, const uint64* t, size_t n) {
    if (n == 0) return q;
    uint64* hashes = (uint64*)palloc(sizeof(uint64) * (q.size > 0 ? q.size : 1));
    uint32* freqs = (uint32*)palloc(sizeof(uint32) * (q.size > 0 ? q.size : 1));
    MultisetView out;
    pg_entry([&] {
        uint64_t length = 0;
        out.size = content_of(q, t, n, hashes, freqs, &length);
        out.length = length;
        return Datum(0);
    });
    out.hashes = hashes;
    out.freqs.data = reinterpret_cast<const unsigned char*>(freqs);
    out.freqs.width = 4;
    return out;
}

}  // namespace spotsigs::pg

using namespace spotsigs::pg;

// spotsigs_analyze(rel regclass, sig_column name, id_column name DEFAULT NULL) -> integer: computes
// the content measure's template of the rows of rel (content.hpp's definition, over every row,
// ordered by fmix64 of id_column: the single-column integer primary key when NULL), stores it in
// spotsigs_template_store for (rel, sig_column), and returns the number of template signatures.
SPOTSIGS_FUNCTION(spotsigs_analyze) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("the relation and column arguments must not be NULL")));
    Oid relid = PG_GETARG_OID(0);
    const char* sig_column = NameStr(*PG_GETARG_NAME(1));
    Oid ext_schema = get_func_namespace(fcinfo->flinfo->fn_oid);
    HeapTuple ctup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(ctup))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("relation with OID %u does not exist", relid)));
    char relkind = ((Form_pg_class)GETSTRUCT(ctup))->relkind;
    ReleaseSysCache(ctup);
    // Like ANALYZE: only the table's owner (or a member of the owning role, or a superuser).
    if (!SPOTSIGS_REL_OWNERCHECK(relid, GetUserId()))
        aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(relkind), get_rel_name(relid));
    const char* id_column = PG_ARGISNULL(2) ? primary_key_name(relid) : NameStr(*PG_GETARG_NAME(2));
    Oid spotsig = spotsig_type_oid(fcinfo);
    JoinSource src = resolve_source(relid, id_column, sig_column, spotsig, "spotsigs_analyze");
    int64 rows = 0;
    Datum tmpl = table_template(src, &rows, "spotsigs_analyze");
    int32 size = 0;
    {
        struct varlena* v = fetch_spotsig(tmpl);
        pg_entry([&] {
            size = static_cast<int32>(view_of(v).size);
            return Datum(0);
        });
    }

    // Written as the store's owner, with a statement that names every object by schema.
    const SavedUser saved = become_store_owner(ext_schema, "spotsigs_analyze");
    const char* store = store_name(ext_schema);
    char* q = psprintf(
        "INSERT INTO %s AS s (relation, sig_column, id_column, rows_analyzed, template, analyzed_at) "
        "VALUES ($1, $2, $3, $4, $5, pg_catalog.clock_timestamp()) "
        "ON CONFLICT (relation, sig_column) DO UPDATE SET id_column = excluded.id_column, "
        "rows_analyzed = excluded.rows_analyzed, template = excluded.template, analyzed_at = excluded.analyzed_at",
        store);
    Oid types[5] = {REGCLASSOID, NAMEOID, NAMEOID, INT8OID, spotsig};
    NameData sig_name, id_name;
    namestrcpy(&sig_name, sig_column);
    namestrcpy(&id_name, id_column);
    Datum args[5] = {ObjectIdGetDatum(relid), NameGetDatum(&sig_name), NameGetDatum(&id_name), Int64GetDatum(rows),
                     tmpl};
    int rc = SPI_execute_with_args(q, 5, types, args, nullptr, false, 0);
    if (rc != SPI_OK_INSERT)
        elog(ERROR, "spotsigs_analyze: storing the template failed: %s", SPI_result_code_string(rc));
    // The statistics of dropped tables go too (their OIDs could be reused by a new table).
    q = psprintf(
        "DELETE FROM %s s WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c "
        "WHERE c.oid OPERATOR(pg_catalog.=) s.relation)",
        store);
    rc = SPI_execute(q, false, 0);
    if (rc != SPI_OK_DELETE) elog(ERROR, "spotsigs_analyze: cleaning the store failed: %s", SPI_result_code_string(rc));
    restore_user(saved);
    SPI_finish();
    note_store_written();
    // Plans that name the table are made again: the SQL join on a bare % is planned only while
    // the column has no statistics (auto_query.hpp).
    CacheInvalidateRelcacheByRelid(relid);
    PG_RETURN_INT32(size);
}
