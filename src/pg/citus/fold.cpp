// % on Citus tables: one node's answer or an error, never another answer.
//
// Citus plans a query on a distributed (or reference) table by deparsing the query tree it is
// given into one query per shard, which the workers plan and run with their own settings and
// their own (empty) statistics store. A bare `x % y` (or `spotsig_auto_query(y, rel, column)`, or
// `spotsig_content_query(y, rel, column)` with constant rel and column) would there be decided by
// the worker's spotsigs.similarity_threshold and by a template lookup that finds nothing.
//
// The planner hook below runs before Citus's (the hook installed last runs first) and, when the
// query names a Citus table, replaces each such comparison by one whose right operand is the
// value the coordinator's session would compute, with its threshold and template as constants:
//
//   x % y  ->  x % ROW(spotsig_remove(y, t), tau, t, NULL, NULL, NULL)::spotsigs_content_query
//          or  x % spotsig_query(y, tau)   (the plain measure: no template)
//   x <-> y  ->  x <-> ROW(...)::spotsigs_content_query   (the empty template: the plain distance)
//
// (The value carries its template rather than naming it: a worker's store has no statistics.)
//
// where (tau, t) are what spotsig_auto_query would give on this node (auto_query.cpp): the
// numeric setting and the empty template; under 'auto', 0.4 and the column's stored template
// when the user may read it in spotsigs_stats, else 0.2 and the empty template. (The column is
// the left operand when it is a column of a table in the query, through the subqueries and views
// the planner pulls up, else the right one, as the support function picks it; neither: the plain
// measure at the setting, as on one node.) The operator is
// IMMUTABLE and spotsig_remove(y, t) is y's content against t (content_of's multiset), so every
// node computes the same answer. Without a template, % of spotsig_query(y, tau) is the plain
// similarity at tau, as spotsig_auto_query's value with the empty template is (auto_query.cpp);
// the constructors keep their type: the ROW, (y, tau, t) with the empty template.
//
// The constants are taken when the query is planned. A changed setting makes every plan of the
// session be made again (citus_fold_setting_changed, from the setting's assign hook: prepared
// statements and cached plans included); a new spotsigs_analyze invalidates the plans that name
// the table; a GRANT or REVOKE on it changes its relcache entry, which invalidates them too, and
// a plan is made again for another user (the template is the one the user may read).
//
// A bare % that reaches a shard (the library was loaded only while the coordinator planned the
// query, too late for this hook, or the coordinator runs another version) is refused by the
// support function on the worker (citus_shard), rather than answered with the worker's setting.
#include "pg/citus/fold.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
}

#include <cstring>

#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/type/auto_query.hpp"
#include "pg/type/datum.hpp"

extern "C" Datum spotsig_similar(PG_FUNCTION_ARGS);
extern "C" Datum spotsig_distance(PG_FUNCTION_ARGS);
extern "C" Datum spotsig_auto_query(PG_FUNCTION_ARGS);
extern "C" Datum spotsig_content_query(PG_FUNCTION_ARGS);

namespace spotsigs::pg {

namespace {

planner_hook_type prev_planner = nullptr;

// Whether this session planned a query with a folded threshold: only then does a change of the
// setting reset the session's plans.
bool folded_any = false;

// What a call of the function fn is to the fold: nothing, a bare %, or one of the two query
// constructors.
enum class Kind { None, Similar, Distance, AutoQuery, ContentQuery };

// Looks at pg_proc before asking fmgr for the address, so that no other library gets loaded: a C
// function whose symbol is one of ours, in a library whose address of it is ours.
Kind kind_of(Oid fn) {
    if (fn < FirstNormalObjectId) return Kind::None;
    HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
    if (!HeapTupleIsValid(tup)) return Kind::None;
    Form_pg_proc p = (Form_pg_proc)GETSTRUCT(tup);
    Kind k = Kind::None;
    if (p->prolang == ClanguageId) {
        bool isnull = false;
        Datum src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
        if (!isnull) {
            char* s = TextDatumGetCString(src);
            if (std::strcmp(s, "spotsig_similar") == 0) k = Kind::Similar;
            if (std::strcmp(s, "spotsig_distance") == 0) k = Kind::Distance;
            if (std::strcmp(s, "spotsig_auto_query") == 0) k = Kind::AutoQuery;
            if (std::strcmp(s, "spotsig_content_query") == 0) k = Kind::ContentQuery;
            pfree(s);
        }
    }
    ReleaseSysCache(tup);
    if (k == Kind::None) return k;
    FmgrInfo f;
    fmgr_info(fn, &f);
    const PGFunction want = k == Kind::Similar     ? spotsig_similar
                            : k == Kind::Distance  ? spotsig_distance
                            : k == Kind::AutoQuery ? spotsig_auto_query
                                                   : spotsig_content_query;
    return f.fn_addr == want ? k : Kind::None;
}

// The function and arguments of an OpExpr or FuncExpr; false for other nodes.
bool call_of(Node* node, Oid* fn, List** args) {
    if (IsA(node, OpExpr)) {
        OpExpr* op = (OpExpr*)node;
        *fn = OidIsValid(op->opfuncid) ? op->opfuncid : get_opcode(op->opno);
        *args = op->args;
        return true;
    }
    if (IsA(node, FuncExpr)) {
        *fn = ((FuncExpr*)node)->funcid;
        *args = ((FuncExpr*)node)->args;
        return true;
    }
    return false;
}

bool foldable(Kind k, List* args) {
    if (k == Kind::Similar || k == Kind::Distance) return list_length(args) == 2;
    if (k == Kind::AutoQuery || k == Kind::ContentQuery) {
        if (list_length(args) != 3) return false;
        Node* rel = (Node*)lsecond(args);
        Node* col = (Node*)lthird(args);
        return IsA(rel, Const) && IsA(col, Const) && !((Const*)rel)->constisnull && !((Const*)col)->constisnull;
    }
    return false;
}

// The walkers' and mutators' callback types: without parameters on PostgreSQL 15, (Node*, void*)
// from 16 on, where the macros cast to them again (a cast from any other type draws
// -Wcast-function-type). The cast goes through void (*)(), the type GCC exempts from that check.
#if PG_VERSION_NUM >= 160000
using WalkerFn = tree_walker_callback;
using MutatorFn = tree_mutator_callback;
#else
using WalkerFn = bool (*)();
using MutatorFn = Node* (*)();
#endif
template <class C>
WalkerFn as_walker(bool (*fn)(Node*, C*)) {
    return reinterpret_cast<WalkerFn>(reinterpret_cast<void (*)()>(fn));
}
template <class C>
MutatorFn as_mutator(Node* (*fn)(Node*, C*)) {
    return reinterpret_cast<MutatorFn>(reinterpret_cast<void (*)()>(fn));
}

// The first pass: whether the query holds a call to fold, and the relations it names.
struct Scan {
    bool found = false;
    List* relids = NIL;
};

bool scan_walker(Node* node, Scan* s) {
    if (node == nullptr) return false;
    if (IsA(node, Query)) {
        Query* q = (Query*)node;
        ListCell* lc;
        foreach (lc, q->rtable) {
            RangeTblEntry* rte = (RangeTblEntry*)lfirst(lc);
            if (rte->rtekind == RTE_RELATION) s->relids = lappend_oid(s->relids, rte->relid);
        }
        return query_tree_walker(q, as_walker(scan_walker), s, 0);
    }
    Oid fn;
    List* args;
    if (!s->found && call_of(node, &fn, &args) && foldable(kind_of(fn), args)) s->found = true;
    return expression_tree_walker(node, as_walker(scan_walker), s);
}

// Whether one of relids is a Citus table (any kind: each is planned into shard queries).
bool names_citus_table(List* relids) {
    if (relids == NIL || !OidIsValid(get_extension_oid("citus", true))) return false;
    const int n = list_length(relids);
    Datum* elems = (Datum*)palloc(sizeof(Datum) * n);
    int i = 0;
    ListCell* lc;
    foreach (lc, relids) elems[i++] = ObjectIdGetDatum(lfirst_oid(lc));
    ArrayType* arr = construct_array(elems, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsigs: SPI_connect failed");
    Oid types[1] = {OIDARRAYOID};
    Datum values[1] = {PointerGetDatum(arr)};
    int rc = SPI_execute_with_args(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition "
        "WHERE logicalrelid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.regclass[]))",
        1, types, values, nullptr, true, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "spotsigs: reading pg_dist_partition failed: %s", SPI_result_code_string(rc));
    bool isnull = false;
    bool yes =
        SPI_processed > 0 && DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    SPI_finish();
    return yes && !isnull;
}

// The second pass: the query with each call folded. queries: the enclosing queries, innermost
// first (what a Var's varlevelsup counts).
struct Fold {
    List* queries = NIL;
};

// Whether the planner pulls the subquery s of rte up into its parent (so that a Var of the parent
// that names one of s's plain columns becomes that column): the main conditions of PostgreSQL's
// is_simple_subquery.
bool pulled_up(RangeTblEntry* rte) {
    Query* s = rte->subquery;
    return s != nullptr && !rte->security_barrier && s->commandType == CMD_SELECT && s->setOperations == nullptr &&
           !s->hasAggs && !s->hasWindowFuncs && !s->hasTargetSRFs && s->groupClause == NIL && s->groupingSets == NIL &&
           s->havingQual == nullptr && s->sortClause == NIL && s->distinctClause == NIL && s->limitOffset == nullptr &&
           s->limitCount == nullptr && !s->hasForUpdate && s->cteList == NIL && s->jointree != nullptr &&
           s->jointree->fromlist != NIL;
}

// The table column that attribute att of range table entry varno of q is, once the planner has
// pulled up the subqueries it pulls up (views included), as the support function then sees it.
bool rte_column(Query* q, int varno, AttrNumber att, Oid* relid, AttrNumber* attno, int depth) {
    if (att <= 0 || varno < 1 || varno > (int)list_length(q->rtable) || depth > 64) return false;
    RangeTblEntry* rte = rt_fetch(varno, q->rtable);
    if (rte->rtekind == RTE_SUBQUERY && pulled_up(rte)) {
        TargetEntry* te = get_tle_by_resno(rte->subquery->targetList, att);
        if (te == nullptr || te->resjunk || !IsA(te->expr, Var) || ((Var*)te->expr)->varlevelsup != 0) return false;
        return rte_column(rte->subquery, ((Var*)te->expr)->varno, ((Var*)te->expr)->varattno, relid, attno, depth + 1);
    }
    if (rte->rtekind != RTE_RELATION) return false;
    if (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE &&
        rte->relkind != RELKIND_MATVIEW)
        return false;
    *relid = rte->relid;
    *attno = att;
    return true;
}

// The relation and attribute of node when it is a column of a table of the query level it refers
// to (as the support function's table_column decides it after planning).
bool query_column(Fold* f, Node* node, Oid* relid, AttrNumber* attno) {
    if (node == nullptr || !IsA(node, Var)) return false;
    Var* v = (Var*)node;
    if ((int)v->varlevelsup >= list_length(f->queries)) return false;
    Query* q = (Query*)list_nth(f->queries, (int)v->varlevelsup);
    return rte_column(q, v->varno, v->varattno, relid, attno, 0);
}

List* qualified(Oid schema, const char* name) {
    return list_make2(makeString(get_namespace_name(schema)), makeString(pstrdup(name)));
}

// The template of (relid, column) the current user may read in spotsigs_stats (schema: the
// extension's), as a detoasted copy in the current memory context; nullptr when there is none.
// The same lookup as spotsig_auto_query's and spotsig_content_query's.
struct varlena* visible_template(Oid schema, Oid relid, const char* column) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsigs: SPI_connect failed");
    char* q = psprintf(
        "SELECT template FROM %s.spotsigs_stats "
        "WHERE relation OPERATOR(pg_catalog.=) $1 AND sig_column OPERATOR(pg_catalog.=) $2",
        quote_identifier(get_namespace_name(schema)));
    NameData col;
    namestrcpy(&col, column);
    Oid types[2] = {REGCLASSOID, NAMEOID};
    Datum args[2] = {ObjectIdGetDatum(relid), NameGetDatum(&col)};
    int rc = SPI_execute_with_args(q, 2, types, args, nullptr, true, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "spotsigs: reading spotsigs_stats failed: %s", SPI_result_code_string(rc));
    struct varlena* out = nullptr;
    if (SPI_processed > 0) {
        bool isnull = false;
        Datum t = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (!isnull) {
            struct varlena* v = fetch_spotsig(t);
            out = (struct varlena*)SPI_palloc(VARSIZE_ANY(v));
            std::memcpy(out, v, VARSIZE_ANY(v));
        }
    }
    SPI_finish();
    return out;
}

// ROW(spotsig_remove(y, t), tau, t, NULL, NULL, NULL)::spotsigs_content_query, or ROW(y, tau, t, ...) for the empty
// template (tmpl nullptr); schema and spotsig: the extension's schema and type.
Node* content_query_value(Oid schema, Oid spotsig, Node* y, double tau, struct varlena* tmpl) {
    const Oid qtype = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("spotsigs_content_query"),
                                      ObjectIdGetDatum(schema));
    if (!OidIsValid(qtype)) elog(ERROR, "spotsigs: type spotsigs_content_query not found");
    if (tmpl == nullptr) tmpl = (struct varlena*)DatumGetPointer(pg_entry([] { return make_spotsig(MultisetView()); }));
    Const* t = makeConst(spotsig, -1, InvalidOid, -1, PointerGetDatum(tmpl), false, false);
    Node* content = y;
    MultisetView m;
    pg_entry([&] {
        m = view_of(tmpl);
        return Datum(0);
    });
    if (m.size > 0) {
        Oid argtypes[2] = {spotsig, spotsig};
        const Oid remove = LookupFuncName(qualified(schema, "spotsig_remove"), 2, argtypes, false);
        content = (Node*)makeFuncExpr(remove, spotsig, list_make2(y, t), InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
    }
    RowExpr* row = makeNode(RowExpr);
    // The template is carried, not named: a worker has no statistics to look a name up in.
    row->args = list_make3(
        content, makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(tau), false, FLOAT8PASSBYVAL),
        copyObjectImpl(t));
    row->args = lappend(row->args, makeNullConst(REGCLASSOID, -1, InvalidOid));
    row->args = lappend(row->args, makeNullConst(NAMEOID, -1, C_COLLATION_OID));
    row->args = lappend(row->args, makeNullConst(TIMESTAMPTZOID, -1, InvalidOid));
    row->row_typeid = qtype;
    row->row_format = COERCE_EXPLICIT_CAST;
    row->colnames = NIL;
    row->location = -1;
    return (Node*)row;
}

// The (tau, template) of spotsig_auto_query(y, relid, column) on this node now.
double auto_value(Oid schema, Oid relid, const char* column, struct varlena** tmpl) {
    *tmpl = nullptr;
    if (!similarity_threshold_auto) return similarity_threshold;
    if (OidIsValid(relid)) *tmpl = visible_template(schema, relid, column);
    return *tmpl != nullptr ? kAutoContentThreshold : kAutoPlainThreshold;
}

Node* fold_mutator(Node* node, Fold* f);

// A folded call: `x % y`, or one of the constructors.
Node* fold_call(Fold* f, Node* node, Kind k, Oid fn, List* args) {
    const Oid schema = get_func_namespace(fn);
    if (k == Kind::Similar || k == Kind::Distance) {
        Node* col = (Node*)linitial(args);
        Node* other = (Node*)lsecond(args);
        Oid relid = InvalidOid;
        AttrNumber attno = InvalidAttrNumber;
        if (!query_column(f, col, &relid, &attno) && query_column(f, other, &relid, &attno)) std::swap(col, other);
        const Oid spotsig = exprType(col);
        char* column = OidIsValid(relid) ? get_attname(relid, attno, false) : nullptr;
        struct varlena* tmpl = nullptr;
        const double tau = auto_value(schema, relid, column, &tmpl);
        // The plain measure as spotsig_query(y, tau): the same answers as the ROW with the empty
        // template, and a form the SQL join's planner recognises on the workers.
        Node* q;
        if (k == Kind::Distance) {
            // A bare <-> is 1 - the similarity a bare % compares; with the empty template (no
            // statistics, or a number set) the content distance is the plain distance.
            q = content_query_value(schema, spotsig, other, tau, tmpl);
            const Oid opno = OpernameGetOprid(qualified(schema, "<->"), spotsig, exprType(q));
            if (!OidIsValid(opno)) elog(ERROR, "spotsigs: operator <-> for the folded query not found");
            OpExpr* op = (OpExpr*)make_opclause(opno, FLOAT8OID, false, (Expr*)col, (Expr*)q, InvalidOid, InvalidOid);
            op->opfuncid = get_opcode(opno);
            op->location = exprLocation(node);
            return (Node*)op;
        }
        if (tmpl == nullptr) {
            Oid argtypes[2] = {spotsig, FLOAT8OID};
            const Oid ctor = LookupFuncName(qualified(schema, "spotsig_query"), 2, argtypes, false);
            Const* t =
                makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(tau), false, FLOAT8PASSBYVAL);
            q = (Node*)makeFuncExpr(ctor, get_func_rettype(ctor), list_make2(other, t), InvalidOid, InvalidOid,
                                    COERCE_EXPLICIT_CALL);
        } else {
            q = content_query_value(schema, spotsig, other, tau, tmpl);
        }
        const Oid qtype = exprType(q);
        const Oid opno = OpernameGetOprid(qualified(schema, "%"), spotsig, qtype);
        if (!OidIsValid(opno)) elog(ERROR, "spotsigs: operator %% for the folded query not found");
        OpExpr* op = (OpExpr*)make_opclause(opno, BOOLOID, false, (Expr*)col, (Expr*)q, InvalidOid, InvalidOid);
        op->opfuncid = get_opcode(opno);
        op->location = exprLocation(node);
        return (Node*)op;
    }
    Node* y = (Node*)linitial(args);
    const Oid relid = DatumGetObjectId(((Const*)lsecond(args))->constvalue);
    const char* column = NameStr(*DatumGetName(((Const*)lthird(args))->constvalue));
    struct varlena* tmpl = nullptr;
    double tau;
    if (k == Kind::AutoQuery) {
        tau = auto_value(schema, relid, column, &tmpl);
    } else {
        tau = kAutoContentThreshold;
        tmpl = visible_template(schema, relid, column);
    }
    // spotsig_auto_query is STRICT: NULL for a NULL y, as the ROW's NULL content makes % NULL.
    return content_query_value(schema, exprType(y), y, tau, tmpl);
}

Node* fold_mutator(Node* node, Fold* f) {
    if (node == nullptr) return nullptr;
    if (IsA(node, Query)) {
        f->queries = lcons(node, f->queries);
        Query* q = query_tree_mutator((Query*)node, as_mutator(fold_mutator), f, 0);
        // Vars below refer to the levels by position, which the copy keeps.
        f->queries = list_delete_first(f->queries);
        return (Node*)q;
    }
    Node* copy = expression_tree_mutator(node, as_mutator(fold_mutator), f);
    Oid fn;
    List* args;
    if (call_of(copy, &fn, &args)) {
        const Kind k = kind_of(fn);
        if (foldable(k, args)) return fold_call(f, copy, k, fn, args);
    }
    return copy;
}

PlannedStmt* fold_planner(Query* parse, const char* query_string, int cursor_options, ParamListInfo bound_params) {
    Scan s;
    scan_walker((Node*)parse, &s);
    const bool fold = s.found && names_citus_table(s.relids);
    if (fold) {
        Fold f;
        parse = (Query*)fold_mutator((Node*)parse, &f);
        folded_any = true;
    }
    PlannedStmt* plan = prev_planner != nullptr ? prev_planner(parse, query_string, cursor_options, bound_params)
                                                : standard_planner(parse, query_string, cursor_options, bound_params);
    // The template folded in is the one the current user may read: a cached plan is made again
    // for another user.
    if (fold) plan->dependsOnRole = true;
    return plan;
}

}  // namespace

void register_citus_fold() {
    prev_planner = planner_hook;
    planner_hook = fold_planner;
}

void citus_fold_setting_changed() {
    if (folded_any) ResetPlanCache();
}

bool citus_shard(Oid relid) {
    if (!OidIsValid(get_extension_oid("citus", true))) return false;
    Oid argtypes[1] = {REGCLASSOID};
    const Oid fn =
        LookupFuncName(list_make2(makeString(pstrdup("pg_catalog")), makeString(pstrdup("relation_is_a_known_shard"))),
                       1, argtypes, true);
    if (!OidIsValid(fn)) return false;
    return DatumGetBool(OidFunctionCall1(fn, ObjectIdGetDatum(relid)));
}

}  // namespace spotsigs::pg
