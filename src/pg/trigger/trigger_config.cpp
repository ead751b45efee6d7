// Resolving and caching the arguments of spotsigs_flag_duplicates() triggers.
#include "pg/trigger/trigger_config.hpp"

extern "C" {
#include "access/genam.h"
#include "access/relation.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lock.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
}

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/common/threshold.hpp"
#include "core/template/content.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg {

namespace {

HTAB* config_cache = nullptr;

// Marks the cached configurations of a table (or of all tables) as stale.
void invalidate_configs(Datum, Oid relid) {
    if (config_cache == nullptr) return;
    HASH_SEQ_STATUS seq;
    hash_seq_init(&seq, config_cache);
    while (auto* c = static_cast<TriggerConfig*>(hash_seq_search(&seq)))
        if (relid == InvalidOid || c->relid == relid) c->valid = false;
}

// Creates the backend's cache on first use and registers its invalidation callback.
void ensure_cache() {
    if (config_cache != nullptr) return;
    HASHCTL ctl;
    std::memset(&ctl, 0, sizeof ctl);
    ctl.keysize = sizeof(Oid);
    ctl.entrysize = sizeof(TriggerConfig);
    config_cache = hash_create("spotsigs trigger configurations", 16, &ctl, HASH_ELEM | HASH_BLOBS);
    CacheRegisterRelcacheCallback(invalidate_configs, (Datum)0);
}

// Frees what a stale entry holds.
void release_config(TriggerConfig* c) {
    if (c->visible_plan != nullptr) SPI_freeplan(c->visible_plan);
    c->visible_plan = nullptr;
    if (c->cxt != nullptr) MemoryContextDelete(c->cxt);
    c->cxt = nullptr;
    c->gen_expr = nullptr;
    c->dup_write.domain_extra = nullptr;
    c->sim_write.domain_extra = nullptr;
}

// Raises a configuration ERROR that names the trigger and the table.
#define CONFIG_ERROR(code, td, ...)                                                                                    \
    ereport(ERROR,                                                                                                     \
            (errcode(code), errmsg("spotsigs_flag_duplicates: trigger \"%s\" on \"%s\": %s", (td)->tg_trigger->tgname, \
                                   RelationGetRelationName((td)->tg_relation), psprintf(__VA_ARGS__))))

// The attribute number of a named user column, or an ERROR 42703 naming the role it plays.
AttrNumber user_column(TriggerData* td, const char* name, const char* role) {
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    int att = SPI_fnumber(desc, name);
    if (att == SPI_ERROR_NOATTRIBUTE || att <= 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("spotsigs_flag_duplicates: %s column \"%s\" of relation \"%s\" does not exist", role,
                               name, RelationGetRelationName(td->tg_relation))));
    return AttrNumber(att);
}

// The base type of a column (domains resolved).
Oid column_type(TriggerData* td, AttrNumber att) {
    return getBaseType(TupleDescAttr(RelationGetDescr(td->tg_relation), att - 1)->atttypid);
}

// True for the integer types an id may have.
bool is_integer_type(Oid t) {
    return t == INT2OID || t == INT4OID || t == INT8OID;
}

// How values of the column's base type become the column's stored values (ColumnWrite).
void resolve_write(TriggerData* td, AttrNumber att, ColumnWrite* w) {
    Form_pg_attribute a = TupleDescAttr(RelationGetDescr(td->tg_relation), att - 1);
    w->type = a->atttypid;
    w->typmod = a->atttypmod;
    Oid base = getBaseTypeAndTypmod(a->atttypid, &w->typmod);
    w->domain = base != a->atttypid;
    w->typmod_fn = InvalidOid;
    Oid fn = InvalidOid;
    if (w->typmod >= 0 && find_typmod_coercion_function(base, &fn) == COERCION_PATH_FUNC) w->typmod_fn = fn;
    w->domain_extra = nullptr;
}

// A column the trigger writes must be a plain column.
void check_writable(TriggerData* td, AttrNumber att, const char* role, const char* name) {
    if (TupleDescAttr(RelationGetDescr(td->tg_relation), att - 1)->attgenerated != '\0')
        ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_DEFINITION),
                        errmsg("spotsigs_flag_duplicates: %s column \"%s\" is a generated column", role, name),
                        errhint("The trigger assigns this column; it must be a plain column.")));
}

// Parses tau as float8in reads a number (22P02 for what is not one, 22003 past the range of
// double precision, in its words), then ERROR 22023 unless it is in (0, 1] (threshold.hpp's
// message): the same as the setting and every function argument.
double parse_threshold(TriggerData* td, const char* s) {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s, &end);
    const bool range = errno == ERANGE && (v == 0.0 || std::isinf(v));
    while (end != nullptr && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
    if (end == s || end == nullptr || *end != '\0')
        CONFIG_ERROR(ERRCODE_INVALID_TEXT_REPRESENTATION, td, "invalid input syntax for type double precision: \"%s\"",
                     s);
    if (range)
        CONFIG_ERROR(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, td, "\"%s\" is out of range for type double precision", s);
    if (!valid_threshold(v)) {
        char msg[kThresholdMessageSize];
        threshold_message(v, msg, sizeof msg);
        CONFIG_ERROR(ERRCODE_INVALID_PARAMETER_VALUE, td, "%s", msg);
    }
    return v;
}

// The single-column integer primary key; ERROR 55000 when the table has none.
AttrNumber primary_key_column(TriggerData* td, Oid* type) {
    Relation rel = td->tg_relation;
    Oid pk = SPOTSIGS_PRIMARY_KEY_INDEX(rel);
    AttrNumber att = InvalidAttrNumber;
    if (OidIsValid(pk)) {
        Relation idx = index_open(pk, AccessShareLock);
        if (idx->rd_index->indnkeyatts == 1) att = idx->rd_index->indkey.values[0];
        index_close(idx, AccessShareLock);
    }
    if (att <= 0 || !is_integer_type(column_type(td, att)))
        CONFIG_ERROR(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, td,
                     "the table needs a single-column primary key of type smallint, integer or bigint "
                     "(its value is what the duplicate column receives)");
    *type = column_type(td, att);
    return att;
}

// A valid, non-partial index of access method "spotsigs" whose first key is the spotsig column
// (the one with the smallest OID, so every backend picks the same), or InvalidOid.
Oid spotsigs_index_on(Relation rel, AttrNumber sig_att) {
    List* indexes = RelationGetIndexList(rel);  // sorted by OID
    ListCell* lc;
    Oid found = InvalidOid;
    foreach (lc, indexes) {
        Relation idx = index_open(lfirst_oid(lc), AccessShareLock);
        char* am = get_am_name(idx->rd_rel->relam);
        if (am != nullptr && std::strcmp(am, "spotsigs") == 0 && idx->rd_index->indisvalid &&
            idx->rd_index->indnkeyatts >= 1 && idx->rd_index->indkey.values[0] == sig_att &&
            RelationGetIndexPredicate(idx) == NIL)
            found = RelationGetRelid(idx);
        index_close(idx, AccessShareLock);
        if (OidIsValid(found)) break;
    }
    list_free(indexes);
    return found;
}

// Resolves every argument of the trigger into c (ERRORs name the problem) and finds its index.
void build_config(FunctionCallInfo fcinfo, TriggerData* td, TriggerConfig* c) {
    Trigger* tg = td->tg_trigger;
    Relation rel = td->tg_relation;
    if (tg->tgnargs < 3 || tg->tgnargs > 6)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("spotsigs_flag_duplicates: trigger \"%s\" has %d arguments; it takes 3 to 6", tg->tgname,
                               tg->tgnargs),
                        errhint("Arguments: spotsig column, duplicate column, similarity column (or ''), "
                                "threshold (none, '' or 'content': the content measure), mode ('best' or 'first'), "
                                "concurrency ('locked' or 'unlocked').")));
    char** args = tg->tgargs;
    c->spotsig_type = spotsig_type_oid(fcinfo);

    c->sig_att = user_column(td, args[0], "spotsig");
    if (column_type(td, c->sig_att) != c->spotsig_type)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("spotsigs_flag_duplicates: spotsig column \"%s\" has type %s, not spotsig", args[0],
                               format_type_be(TupleDescAttr(RelationGetDescr(rel), c->sig_att - 1)->atttypid))));
    c->sig_generated = TupleDescAttr(RelationGetDescr(rel), c->sig_att - 1)->attgenerated == ATTRIBUTE_GENERATED_STORED;

    c->dup_att = user_column(td, args[1], "duplicate");
    c->dup_type = column_type(td, c->dup_att);
    if (!is_integer_type(c->dup_type))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("spotsigs_flag_duplicates: duplicate column \"%s\" has type %s; it must be "
                               "smallint, integer or bigint",
                               args[1], format_type_be(c->dup_type))));
    check_writable(td, c->dup_att, "duplicate", args[1]);
    resolve_write(td, c->dup_att, &c->dup_write);

    c->sim_att = 0;
    if (args[2][0] != '\0') {
        c->sim_att = user_column(td, args[2], "similarity");
        c->sim_type = column_type(td, c->sim_att);
        if (c->sim_type != FLOAT8OID && c->sim_type != FLOAT4OID && c->sim_type != NUMERICOID)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("spotsigs_flag_duplicates: similarity column \"%s\" has type %s; it must be "
                                   "double precision, real or numeric",
                                   args[2], format_type_be(c->sim_type))));
        check_writable(td, c->sim_att, "similarity", args[2]);
        resolve_write(td, c->sim_att, &c->sim_write);
    }

    // No threshold (three arguments, or '' or 'content' as the fourth): the content measure at its
    // default threshold, against the column's stored template.
    c->content = tg->tgnargs < 4 || args[3][0] == '\0' || std::strcmp(args[3], "content") == 0;
    c->ext_schema = get_func_namespace(fcinfo->flinfo->fn_oid);
    c->tmpl_found = false;
    c->tmpl = nullptr;
    c->ntmpl = 0;
    c->tmpl_set = nullptr;
    c->tmpl_lxid = InvalidLocalTransactionId;
    c->tmpl_cxt = nullptr;
    c->tmpl_rows = 0;
    c->refresh_check = 0;
    c->threshold = c->content ? spotsigs::kContentThreshold : parse_threshold(td, args[3]);
    std::snprintf(c->threshold_text, sizeof c->threshold_text, "%.17g", c->threshold);

    c->best = true;
    if (tg->tgnargs >= 5) {
        if (std::strcmp(args[4], "first") == 0) c->best = false;
        else if (std::strcmp(args[4], "best") != 0)
            CONFIG_ERROR(ERRCODE_INVALID_PARAMETER_VALUE, td, "mode \"%s\" is not 'best' or 'first'", args[4]);
    }
    c->locked = false;
    if (tg->tgnargs >= 6) {
        if (std::strcmp(args[5], "locked") == 0) c->locked = true;
        else if (std::strcmp(args[5], "unlocked") != 0)
            CONFIG_ERROR(ERRCODE_INVALID_PARAMETER_VALUE, td, "concurrency \"%s\" is not 'locked' or 'unlocked'",
                         args[5]);
    }

    c->id_att = primary_key_column(td, &c->id_type);
    if (c->dup_att == c->sig_att || c->dup_att == c->id_att || c->sim_att == c->sig_att || c->sim_att == c->id_att ||
        c->sim_att == c->dup_att)
        CONFIG_ERROR(ERRCODE_INVALID_PARAMETER_VALUE, td,
                     "the spotsig, duplicate, similarity and primary key columns must all be different");

    c->index_oid = spotsigs_index_on(rel, c->sig_att);
    if (!OidIsValid(c->index_oid))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("spotsigs_flag_duplicates: relation \"%s\" has no spotsigs index on column \"%s\"",
                               RelationGetRelationName(rel), args[0]),
                        errdetail("Without it every inserted row would scan the whole table."),
                        errhint("CREATE INDEX ON %s USING spotsigs (%s);",
                                quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
                                                           RelationGetRelationName(rel)),
                                quote_identifier(args[0]))));

    c->cxt = AllocSetContextCreate(CacheMemoryContext, "spotsigs trigger", ALLOCSET_SMALL_SIZES);
    if (c->sig_generated) {
        Node* expr = build_column_default(rel, c->sig_att);
        if (expr == nullptr) elog(ERROR, "spotsigs_flag_duplicates: no generation expression for \"%s\"", args[0]);
        MemoryContext old = MemoryContextSwitchTo(c->cxt);
        c->gen_expr = static_cast<Expr*>(copyObjectImpl(expr));
        MemoryContextSwitchTo(old);
    }
}

}  // namespace

void check_trigger_context(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("spotsigs_flag_duplicates: not called by the trigger manager")));
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    const char* name = td->tg_trigger->tgname;
    if (!TRIGGER_FIRED_FOR_ROW(td->tg_event))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("spotsigs_flag_duplicates: trigger \"%s\" must be FOR EACH ROW", name)));
    if (!TRIGGER_FIRED_BEFORE(td->tg_event))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("spotsigs_flag_duplicates: trigger \"%s\" must be a BEFORE trigger", name),
                        errhint("It sets columns of the new row, which only a BEFORE ROW trigger can do.")));
    if (!TRIGGER_FIRED_BY_INSERT(td->tg_event) && !TRIGGER_FIRED_BY_UPDATE(td->tg_event))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("spotsigs_flag_duplicates: trigger \"%s\" must fire on INSERT or UPDATE", name)));
}

TriggerConfig* trigger_config(FunctionCallInfo fcinfo, TriggerData* td) {
    ensure_cache();
    Oid key = td->tg_trigger->tgoid;
    bool found = false;
    auto* c = static_cast<TriggerConfig*>(hash_search(config_cache, &key, HASH_ENTER, &found));
    if (found && c->valid && c->relid == RelationGetRelid(td->tg_relation)) return c;
    if (found) release_config(c);
    std::memset(reinterpret_cast<char*>(c) + sizeof(Oid), 0, sizeof(TriggerConfig) - sizeof(Oid));
    c->relid = RelationGetRelid(td->tg_relation);
    PG_TRY();
    { build_config(fcinfo, td, c); }
    PG_CATCH();
    {
        release_config(c);
        hash_search(config_cache, &key, HASH_REMOVE, nullptr);
        PG_RE_THROW();
    }
    PG_END_TRY();
    c->valid = true;
    return c;
}

}  // namespace spotsigs::pg
