// A bare `x % y` or `x <-> y` under spotsigs.similarity_threshold = 'auto' (the default): the
// planner support function of spotsig % spotsig and spotsig <-> spotsig rewrites it, when x (or
// else y) is a column of a table, into `x % spotsig_auto_query(y, 'table'::regclass,
// 'column'::name)` (<-> alike), whose value, computed when the query runs, says which measure the
// comparison uses (for <->, the distance is 1 - that similarity and the threshold plays no part):
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
// at its own threshold, exactly, with no lowered bound and no recheck, and orders <-> by the plain
// tiers: scan.cpp).
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
#include "pg/template/named.hpp"
#include "pg/template/store.hpp"
#include "pg/type/datum.hpp"
#include "pg/type/query.hpp"

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
// and spotsig_distance (the operators spotsig % spotsig and spotsig <-> spotsig). On
// SupportRequestSimplify, when one operand is a column of a table (the left one if both are),
// returns `column % spotsig_auto_query(other, table, column)` (% being spotsig %
// spotsigs_content_query; <-> alike); otherwise nothing, and the expression stays as written.
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
                 errmsg("a bare %s on the Citus shard %s arrived without its threshold",
                        f->funcresulttype == FLOAT8OID ? "<->" : "%",
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
    // spotsig_similar is %, spotsig_distance <-> (the one returning a distance).
    const bool distance = f->funcresulttype == FLOAT8OID;
    const Oid opno = OpernameGetOprid(qualified(f->funcid, distance ? "<->" : "%"), spotsig, qtype);
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
    OpExpr* op = (OpExpr*)make_opclause(opno, distance ? FLOAT8OID : BOOLOID, false, (Expr*)col, (Expr*)q, InvalidOid,
                                        InvalidOid);
    op->opfuncid = get_opcode(opno);
    op->location = f->location;
    PG_RETURN_POINTER(op);
}

// spotsig_auto_query(q, rel, sig_column) -> spotsigs_content_query: the right operand of the
// rewritten bare % and <-> (see the head of this file). STRICT: NULL for a NULL q. A call with the
// arguments of the last one under the same snapshot, user and setting (the recheck of one query's
// rows calls it for every row) returns the same value.
SPOTSIGS_FUNCTION(spotsig_auto_query) {
    MemoryContext fcxt = fcinfo->flinfo->fn_mcxt;
    ResultMemo* c = result_memo(fcinfo, "spotsig_auto_query");
    struct varlena* q = fetch_spotsig(PG_GETARG_DATUM(0));
    const Oid relid = PG_GETARG_OID(1);
    const char* column = NameStr(*PG_GETARG_NAME(2));
    // The setting's part of the memo's key: the numeric threshold, or -1 for 'auto'.
    const double setting = similarity_threshold_auto ? -1.0 : similarity_threshold;
    HeapTupleHeader kept = memo_result(c, relid, column, q, setting);
    if (kept != nullptr) PG_RETURN_DATUM(PointerGetDatum(kept));
    bool found = false;
    TimestampTz version = 0;
    TemplateRef tmpl;
    if (similarity_threshold_auto && template_visible(relid, column))
        current_template(relid, column, &found, &version, &tmpl);
    // A numeric setting: the plain similarity at it; 'auto': the content measure with the
    // statistics found, else the plain similarity at 0.2.
    const double tau = !similarity_threshold_auto ? similarity_threshold
                       : found                    ? kAutoContentThreshold
                                                  : kAutoPlainThreshold;
    HeapTuple tup = form_content_query(c->desc, q, tau, found, relid, column, version, tmpl);
    tmpl.reset();
    PG_RETURN_DATUM(PointerGetDatum(memo_keep(c, fcxt, tup, relid, column, q, setting)));
}
