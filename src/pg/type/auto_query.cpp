// A bare `x % y` under spotsigs.similarity_threshold = 'auto' (the default): the planner support
// function of spotsig % spotsig rewrites it, when x (or else y) is a column of a table, into
// `x % spotsig_auto_query(y, 'table'::regclass, 'column'::name)`, whose value, computed when the
// query runs, says which measure the comparison uses:
//
//  * a numeric setting: the plain similarity at that threshold, everywhere, as before 'auto';
//  * 'auto' and statistics stored for the column (spotsigs_analyze) that the user may read in
//    spotsigs_stats: the content similarity at 0.4 against that template (spotsig_content_query's
//    value);
//  * 'auto' without them: the plain similarity at 0.2, the default before 'auto', so that an
//    installation answers as it did until its tables are analyzed.
//
// The plain cases are a spotsigs_content_query with an empty template: with no template signature
// content_of copies the query and content_similarity computes o / (|q| + |b| - o) on the same
// integers as similarity() (both are 0 when either side is empty), so the answer is the plain
// operator's bit for bit (sql/auto_threshold.sql compares them; the index searches such a query
// at its own threshold, exactly, with no lowered bound and no recheck: scan.cpp).
//
// The value is computed at execution, not planned: a prepared statement or cached plan follows
// later SETs and analyzes. An operand that is not a plain column of a table (an expression, a
// subquery's output that is not pulled up) is left alone: the plain measure at
// spotsigs.similarity_threshold (0.2 under 'auto').
#include "pg/type/auto_query.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "nodes/supportnodes.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
}

#include <cstring>

#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/citus/fold.hpp"
#include "pg/gucs.hpp"
#include "pg/template/store.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace {

// The relation and attribute of node when it is a column of a table (a Var of a base relation of
// this query level or an enclosing one), else false.
bool table_column(PlannerInfo* root, Node* node, Oid* relid, AttrNumber* attno) {
    if (root == nullptr || node == nullptr || !IsA(node, Var)) return false;
    Var* v = (Var*)node;
    if (v->varattno <= 0) return false;
    for (Index k = 0; k < v->varlevelsup; ++k) {
        root = root->parent_root;
        if (root == nullptr) return false;
    }
    if (v->varno < 1 || v->varno > (int)list_length(root->parse->rtable)) return false;
    RangeTblEntry* rte = rt_fetch(v->varno, root->parse->rtable);
    if (rte->rtekind != RTE_RELATION) return false;
    if (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE &&
        rte->relkind != RELKIND_MATVIEW)
        return false;
    *relid = rte->relid;
    *attno = v->varattno;
    return true;
}

// The name of the extension's schema, which holds spotsig_similar, spotsig_auto_query and the
// operators: the namespace of function fn.
List* qualified(Oid fn, const char* name) {
    return list_make2(makeString(get_namespace_name(get_func_namespace(fn))), makeString(pstrdup(name)));
}

// What spotsig_auto_query keeps across the calls of one expression (a nested loop calls it once
// per outer row): the composite's descriptor and the last lookup of the stored template.
struct AutoQueryCache {
    TupleDesc desc;
    bool looked_up;
    Oid relid;
    NameData column;
    bool found;
    struct varlena* tmpl;  // the stored template, detoasted, in fn_mcxt (found only)
    const uint64* hashes;  // its hashes, ascending
    size_t n;
    Datum empty;  // the empty spotsig, in fn_mcxt
};

// The template of (relid, column) the current user may read in spotsigs_stats (found false when
// there is none); schema is the extension's. Raises PostgreSQL errors.
void visible_template(Oid schema, Oid relid, const NameData* column, MemoryContext cxt, AutoQueryCache* c) {
    c->found = false;
    c->tmpl = nullptr;
    c->hashes = nullptr;
    c->n = 0;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "spotsig_auto_query: SPI_connect failed");
    char* q = psprintf(
        "SELECT template FROM %s.spotsigs_stats "
        "WHERE relation OPERATOR(pg_catalog.=) $1 AND sig_column OPERATOR(pg_catalog.=) $2",
        quote_identifier(get_namespace_name(schema)));
    Oid types[2] = {REGCLASSOID, NAMEOID};
    Datum args[2] = {ObjectIdGetDatum(relid), NameGetDatum(column)};
    int rc = SPI_execute_with_args(q, 2, types, args, nullptr, true, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "spotsig_auto_query: reading spotsigs_stats failed");
    if (SPI_processed > 0) {
        bool isnull = false;
        Datum t = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (!isnull) {
            struct varlena* v = fetch_spotsig(t);
            c->tmpl = (struct varlena*)MemoryContextAlloc(cxt, VARSIZE_ANY(v));
            std::memcpy(c->tmpl, v, VARSIZE_ANY(v));
            MultisetView m;
            pg_entry([&] {
                m = view_of(c->tmpl);
                return Datum(0);
            });
            c->hashes = m.hashes;
            c->n = m.size;
            c->found = true;
        }
    }
    SPI_finish();
}

}  // namespace

namespace spotsigs::pg {

bool auto_query_never_content(FuncExpr* q) {
    if (list_length(q->args) != 3) return false;
    Node* rel = (Node*)lsecond(q->args);
    Node* col = (Node*)lthird(q->args);
    if (!IsA(rel, Const) || !IsA(col, Const) || ((Const*)rel)->constisnull || ((Const*)col)->constisnull) return false;
    StoredTemplate t;
    stored_template(get_func_namespace(q->funcid), DatumGetObjectId(((Const*)rel)->constvalue),
                    NameStr(*DatumGetName(((Const*)col)->constvalue)), CurrentMemoryContext, &t);
    return !t.found;
}

}  // namespace spotsigs::pg

// spotsig_similar_support(internal) -> internal: the planner support function of spotsig_similar
// (the operator spotsig % spotsig). On SupportRequestSimplify, when one operand is a column of a
// table (the left one if both are), returns `column % spotsig_auto_query(other, table, column)`
// (% being spotsig % spotsigs_content_query); otherwise nothing, and the clause stays as written.
// The rewrite depends on no setting and no statistics, so a plan stays valid when they change.
SPOTSIGS_FUNCTION(spotsig_similar_support) {
    Node* raw = (Node*)PG_GETARG_POINTER(0);
    if (!IsA(raw, SupportRequestSimplify)) PG_RETURN_POINTER(nullptr);
    SupportRequestSimplify* req = (SupportRequestSimplify*)raw;
    FuncExpr* f = req->fcall;
    if (req->root == nullptr || list_length(f->args) != 2) PG_RETURN_POINTER(nullptr);
    Node* col = (Node*)linitial(f->args);
    Node* other = (Node*)lsecond(f->args);
    Oid relid = InvalidOid;
    AttrNumber attno = InvalidAttrNumber;
    if (!table_column(req->root, col, &relid, &attno)) {
        std::swap(col, other);
        if (!table_column(req->root, col, &relid, &attno)) PG_RETURN_POINTER(nullptr);
    }
    // On a Citus shard the coordinator's planner hook has already given every % on the table its
    // threshold and template (citus/fold.cpp); a bare one here would be decided by this node's
    // setting and statistics, not the session's that sent it.
    if (citus_shard(relid))
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("a bare %% on the Citus shard %s arrived without its threshold",
                        quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid))),
                 errdetail("The node that plans a query on a distributed table decides the threshold and "
                           "template of its %%; this query reached the shard without them."),
                 errhint("Load spotsigs on the coordinator before the query is planned (add it to "
                         "shared_preload_libraries or session_preload_libraries there), or write "
                         "sig %% spotsig_query(q, threshold).")));
    const Oid spotsig = exprType(col);
    Oid argtypes[3] = {spotsig, REGCLASSOID, NAMEOID};
    const Oid fn = LookupFuncName(qualified(f->funcid, "spotsig_auto_query"), 3, argtypes, true);
    if (!OidIsValid(fn)) PG_RETURN_POINTER(nullptr);  // a catalog without it: the plain operator
    const Oid qtype = get_func_rettype(fn);
    const Oid opno = OpernameGetOprid(qualified(f->funcid, "%"), spotsig, qtype);
    if (!OidIsValid(opno)) PG_RETURN_POINTER(nullptr);
    char* attname = get_attname(relid, attno, true);
    if (attname == nullptr) PG_RETURN_POINTER(nullptr);
    Name name = (Name)palloc0(NAMEDATALEN);
    namestrcpy(name, attname);
    Const* rel_const = makeConst(REGCLASSOID, -1, InvalidOid, sizeof(Oid), ObjectIdGetDatum(relid), false, true);
    Const* col_const = makeConst(NAMEOID, -1, C_COLLATION_OID, NAMEDATALEN, NameGetDatum(name), false, false);
    FuncExpr* q =
        makeFuncExpr(fn, qtype, list_make3(other, rel_const, col_const), InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
    q->location = f->location;
    OpExpr* op = (OpExpr*)make_opclause(opno, BOOLOID, false, (Expr*)col, (Expr*)q, InvalidOid, InvalidOid);
    op->opfuncid = get_opcode(opno);
    op->location = f->location;
    PG_RETURN_POINTER(op);
}

// spotsig_auto_query(q, rel, sig_column) -> spotsigs_content_query: the right operand of the
// rewritten bare % (see the head of this file). STRICT: NULL for a NULL q.
SPOTSIGS_FUNCTION(spotsig_auto_query) {
    MemoryContext fcxt = fcinfo->flinfo->fn_mcxt;
    AutoQueryCache* c = (AutoQueryCache*)fcinfo->flinfo->fn_extra;
    if (c == nullptr) {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("spotsig_auto_query must return the composite type spotsigs_content_query")));
        MemoryContext old = MemoryContextSwitchTo(fcxt);
        c = (AutoQueryCache*)palloc0(sizeof(AutoQueryCache));
        c->desc = BlessTupleDesc(CreateTupleDescCopy(desc));
        c->empty = pg_entry([&] { return make_spotsig(MultisetView()); });
        MemoryContextSwitchTo(old);
        fcinfo->flinfo->fn_extra = c;
    }
    Datum q = PG_GETARG_DATUM(0);
    const Oid relid = PG_GETARG_OID(1);
    const Name column = PG_GETARG_NAME(2);
    Datum values[3];
    bool nulls[3] = {false, false, false};
    if (!similarity_threshold_auto) {
        values[0] = q;
        values[1] = Float8GetDatum(similarity_threshold);
        values[2] = c->empty;
    } else {
        if (!c->looked_up || c->relid != relid || std::strcmp(NameStr(c->column), NameStr(*column)) != 0) {
            c->looked_up = false;
            if (c->tmpl != nullptr) pfree(c->tmpl);
            c->tmpl = nullptr;
            visible_template(get_func_namespace(fcinfo->flinfo->fn_oid), relid, column, fcxt, c);
            c->relid = relid;
            namestrcpy(&c->column, NameStr(*column));
            c->looked_up = true;
        }
        if (!c->found) {
            values[0] = q;
            values[1] = Float8GetDatum(kAutoPlainThreshold);
            values[2] = c->empty;
        } else {
            struct varlena* v = fetch_spotsig(q);
            MultisetView qv;
            pg_entry([&] {
                qv = view_of(v);
                return Datum(0);
            });
            const MultisetView content = without_template(qv, c->hashes, c->n);
            values[0] = pg_entry([&] { return make_spotsig(content); });
            values[1] = Float8GetDatum(kAutoContentThreshold);
            values[2] = PointerGetDatum(c->tmpl);
        }
    }
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(c->desc, values, nulls)));
}
