// The planner side of the SQL similarity join: recognising `a.sig % b.sig` among an inner, semi
// or anti join's clauses, adding the custom path, and turning the chosen path into a CustomScan plan.
//
// What the path covers: an inner join of two base relations (any relation kind PostgreSQL scans:
// tables, partitioned tables, views pulled up into their tables) whose restriction list holds a
// clause `x % y`, `x % spotsig_query(y, tau)` or `similarity(x, y) >= tau` (tau a constant), or
// the content measure's `x % q` with q a function call of type spotsigs_content_query whose first
// argument is y and whose others read nothing of the query's rows (`spotsig_content_query(y, rel,
// column)`, or a function a planner rewrite puts there), x being a plain column of one side and y
// a plain column of the other, the operators and functions being the extension's (recognised by
// the C functions they call, so whatever schema the extension is in). Each side is planned by
// PostgreSQL as it would be on its own (its cheapest unparameterized path): filters pushed down
// to a side and row security stay in that side's plan. The other clauses of the join are applied
// to every pair the matcher finds, as the scan's qual. Both sides are read in full and matched as
// an R-S join, which is exact whatever the two sides are (a self join too: a row is paired with
// itself, and each pair of rows is found in both orders, exactly as the SQL join's semantics ask).
//
// A self join also gets a second path, which reads the relation once and runs the core's
// self-join: when both sides are the same table (not its inheritance children, no TABLESAMPLE,
// checked as the same user) with equal filters that have no volatile function, both scans return
// the same rows under the query's snapshot, so one scan of them, its rows paired with each other
// in both orders and each with itself, gives the R-S join's pairs. That scan is a sequential scan
// of the table whose output has the columns either side needs.
//
// Semi and anti joins (EXISTS and NOT EXISTS) are served too, with the other clauses checked on
// each pair found (join_scan.cpp).
//
// Left alone: outer joins, a % under OR or NOT or inside an expression, a side
// that needs parameters from elsewhere (LATERAL), and queries with row marks (FOR UPDATE, or the
// rows of UPDATE/DELETE ... FROM), whose EvalPlanQual rechecks this scan does not implement.
#include "pg/planner/join_planner.hpp"

extern "C" {
#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

// The C functions behind the clauses the matcher evaluates (similarity_fn.cpp, query_fn.cpp).
Datum spotsig_similar(PG_FUNCTION_ARGS);
Datum spotsig_similar_query(PG_FUNCTION_ARGS);
Datum spotsig_query(PG_FUNCTION_ARGS);
Datum spotsig_similarity(PG_FUNCTION_ARGS);
Datum spotsig_content_similar(PG_FUNCTION_ARGS);
Datum spotsig_auto_query(PG_FUNCTION_ARGS);
}

#include "pg/type/auto_query.hpp"

namespace spotsigs::pg::planner {

bool enable_join = true;

namespace {

set_join_pathlist_hook_type prev_join_pathlist_hook = nullptr;

CustomPathMethods path_methods;

// The C function behind function fn (nullptr for one that is not C).
PGFunction function_address(Oid fn) {
    if (!OidIsValid(fn)) return nullptr;
    FmgrInfo finfo;
    fmgr_info(fn, &finfo);
    return finfo.fn_addr;
}

// A threshold given as a constant: its value when it is a non-NULL float8 in (0, 1], else 0
// (the clause is then left to PostgreSQL, which raises the error of a bad threshold itself).
double constant_threshold(Node* node) {
    if (node == nullptr || !IsA(node, Const)) return 0;
    Const* c = (Const*)node;
    if (c->constisnull || c->consttype != FLOAT8OID) return 0;
    const double tau = DatumGetFloat8(c->constvalue);
    return tau > 0 && tau <= 1 ? tau : 0;
}

// The plain column (a Var of this query level) that node is, else nullptr.
Var* plain_column(Node* node) {
    if (node == nullptr || !IsA(node, Var)) return nullptr;
    Var* v = (Var*)node;
    if (v->varlevelsup != 0 || v->varattno == InvalidAttrNumber) return nullptr;
    return v;
}

// The content query of `l % q` (the content measure) when q is a function call whose first
// argument is a plain column r, its other arguments holding no column of the query's rows, no
// volatile function and no subquery (so that the template and threshold it gives come from the
// same arguments on every row; the scan checks that they do); else nullptr.
Var* content_query_column(Node* q) {
    if (!IsA(q, FuncExpr) || list_length(((FuncExpr*)q)->args) < 1) return nullptr;
    FuncExpr* f = (FuncExpr*)q;
    Var* r = plain_column((Node*)linitial(f->args));
    if (r == nullptr) return nullptr;
    List* rest = list_copy_tail(f->args, 1);
    if (contain_var_clause((Node*)rest) || contain_volatile_functions(q) || contain_subplans(q)) return nullptr;
    return r;
}

// The two columns a similarity clause compares, in *l and *r, and its threshold in *tau (0: the
// session's spotsigs.similarity_threshold, read when the join runs; -1: the content measure, whose
// query expression, a function of r, goes to *content): `l % r`,
// `l % spotsig_query(r, tau)`, `similarity(l, r) >= tau` with tau a constant, or `l % q` with q
// a content query (content_query_column). False for any other clause.
bool similarity_clause(Expr* clause, Var** l, Var** r, double* tau, Expr** content) {
    *content = nullptr;
    if (!IsA(clause, OpExpr)) return false;
    OpExpr* op = (OpExpr*)clause;
    if (list_length(op->args) != 2) return false;
    Node* a = (Node*)linitial(op->args);
    Node* b = (Node*)lsecond(op->args);
    const Oid opfn = get_opcode(op->opno);
    if (opfn == F_FLOAT8GE) {
        if (!IsA(a, FuncExpr) || list_length(((FuncExpr*)a)->args) != 2) return false;
        FuncExpr* f = (FuncExpr*)a;
        *tau = constant_threshold(b);
        *l = plain_column((Node*)linitial(f->args));
        *r = plain_column((Node*)lsecond(f->args));
        return *tau > 0 && *l != nullptr && *r != nullptr && function_address(f->funcid) == spotsig_similarity;
    }
    *l = plain_column(a);
    if (*l == nullptr) return false;
    const PGFunction fn = function_address(opfn);
    if (fn == spotsig_similar) {
        *tau = 0;
        *r = plain_column(b);
        return *r != nullptr;
    }
    if (fn == spotsig_content_similar && IsA(b, FuncExpr) &&
        function_address(((FuncExpr*)b)->funcid) == spotsig_auto_query && list_length(((FuncExpr*)b)->args) == 3) {
        // `l % spotsig_auto_query(r, rel, column)`: a bare `l % r` as the planner's support
        // rewrote it (auto_query.cpp). Without statistics stored for the column its value is the
        // plain query at the session's threshold, which the join computes (a later
        // spotsigs_analyze invalidates this plan); with them it is a content query like any other
        // (below).
        FuncExpr* q = (FuncExpr*)b;
        if (auto_query_never_content(q)) {
            *tau = 0;
            *r = plain_column((Node*)linitial(q->args));
            return *r != nullptr;
        }
    }
    if (fn == spotsig_similar_query) {
        if (!IsA(b, FuncExpr) || list_length(((FuncExpr*)b)->args) != 2) return false;
        FuncExpr* q = (FuncExpr*)b;
        *tau = constant_threshold((Node*)lsecond(q->args));
        *r = plain_column((Node*)linitial(q->args));
        return *tau > 0 && *r != nullptr && function_address(q->funcid) == spotsig_query;
    }
    if (fn == spotsig_content_similar) {
        *tau = -1;
        *r = content_query_column(b);
        *content = (Expr*)b;
        return *r != nullptr;
    }
    return false;
}

// The clause of restrictlist the matcher evaluates (similarity_clause) comparing a column of
// outer with one of inner, which go to *outer_var and *inner_var, its threshold to *tau.
// nullptr if none.
RestrictInfo* find_similarity_clause(List* restrictlist, RelOptInfo* outer, RelOptInfo* inner, Var** outer_var,
                                     Var** inner_var, double* tau, Expr** content, int* content_side) {
    ListCell* lc;
    foreach (lc, restrictlist) {
        RestrictInfo* ri = lfirst_node(RestrictInfo, lc);
        if (ri->pseudoconstant) continue;
        // Cheap look first: two distinct relations' Vars in the clause.
        if (!bms_is_member(outer->relid, ri->clause_relids) || !bms_is_member(inner->relid, ri->clause_relids))
            continue;
        Var* l = nullptr;
        Var* r = nullptr;
        if (!similarity_clause(ri->clause, &l, &r, tau, content)) continue;
        if (l->varno == (int)outer->relid && r->varno == (int)inner->relid) {
            *outer_var = l;
            *inner_var = r;
            *content_side = 1;
        } else if (l->varno == (int)inner->relid && r->varno == (int)outer->relid) {
            *outer_var = r;
            *inner_var = l;
            *content_side = 0;
        } else {
            continue;
        }
        return ri;
    }
    return nullptr;
}

// Whether rel is a plain base relation whose cheapest total path needs no outside parameters.
bool usable_side(RelOptInfo* rel) {
    return rel->reloptkind == RELOPT_BASEREL && rel->cheapest_total_path != nullptr &&
           PATH_REQ_OUTER(rel->cheapest_total_path) == nullptr && bms_is_empty(rel->lateral_relids);
}

// The clauses of rel's filters, with the Vars of rel renumbered to varno.
List* filter_clauses(RelOptInfo* rel, Index varno) {
    List* out = NIL;
    ListCell* lc;
    foreach (lc, rel->baserestrictinfo) out = lappend(out, copyObjectImpl(lfirst_node(RestrictInfo, lc)->clause));
    if (rel->relid != varno) ChangeVarNodes((Node*)out, rel->relid, varno, 0);
    return out;
}

// The user whose rights rte's relation is read with (InvalidOid: the current user's). 16 moved it
// from the range table entry into the query's permission infos.
Oid check_as_user(PlannerInfo* root, RangeTblEntry* rte) {
#if PG_VERSION_NUM < 160000
    (void)root;
    return rte->checkAsUser;
#else
    if (rte->perminfoindex == 0) return InvalidOid;
    return getRTEPermissionInfo(root->parse->rteperminfos, rte)->checkAsUser;
#endif
}

// Whether outer and inner return the same rows (see the head of this file).
bool same_rows(PlannerInfo* root, RelOptInfo* outer, RelOptInfo* inner) {
    RangeTblEntry* o = planner_rt_fetch(outer->relid, root);
    RangeTblEntry* i = planner_rt_fetch(inner->relid, root);
    if (o->rtekind != RTE_RELATION || i->rtekind != RTE_RELATION || o->relid != i->relid) return false;
    if (o->inh || i->inh || o->tablesample != nullptr || i->tablesample != nullptr) return false;
    if (o->relkind != RELKIND_RELATION && o->relkind != RELKIND_MATVIEW) return false;
    if (check_as_user(root, o) != check_as_user(root, i)) return false;
    List* oq = filter_clauses(outer, outer->relid);
    if (contain_volatile_functions((Node*)oq)) return false;
    return equal(oq, filter_clauses(inner, outer->relid));
}

// The output of the self join's single scan: every column outer or inner needs, as columns of
// outer; nullptr when a side needs something other than plain columns.
PathTarget* self_scan_target(PlannerInfo* root, RelOptInfo* outer, RelOptInfo* inner) {
    PathTarget* t = create_empty_pathtarget();
    RelOptInfo* rels[2] = {outer, inner};
    for (RelOptInfo* rel : rels) {
        ListCell* lc;
        foreach (lc, rel->reltarget->exprs) {
            Var* v = plain_column((Node*)lfirst(lc));
            if (v == nullptr) return nullptr;
            Var* c = (Var*)copyObjectImpl(v);
            ChangeVarNodes((Node*)c, rel->relid, outer->relid, 0);
            if (!list_member(t->exprs, c)) add_column_to_pathtarget(t, (Expr*)c, 0);
        }
    }
    return set_pathtarget_cost_width(root, t);
}

// The threshold tau (0: the session's) as a node for custom_private.
Node* threshold_const(double tau) {
    return (Node*)makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(tau), false, FLOAT8PASSBYVAL);
}

// A SpotsigsJoin path over the child paths `children` (two: R-S; one: the self join's scan).
CustomPath* make_join_path(RelOptInfo* joinrel, List* children, List* others, Var* outer_var, Var* inner_var,
                           JoinType jointype, double tau, Expr* content, int content_side) {
    CustomPath* cp = makeNode(CustomPath);
    cp->path.pathtype = T_CustomScan;
    cp->path.parent = joinrel;
    cp->path.pathtarget = joinrel->reltarget;
    cp->path.param_info = nullptr;
    // Never under a Gather: each copy would join all the rows again.
    cp->path.parallel_aware = false;
    cp->path.parallel_safe = false;
    cp->path.parallel_workers = 0;
    cp->path.pathkeys = NIL;
    cp->flags = CUSTOMPATH_SUPPORT_PROJECTION;
    cp->custom_paths = children;
    // The clauses applied to the pairs, the two signature columns (found in the children's
    // output when the plan is made) and the join type.
    // (and the content measure's query expression, or NULL, and the side whose column it reads).
    cp->custom_private =
        list_make5(others, outer_var, inner_var, makeInteger(static_cast<int>(jointype)), threshold_const(tau));
    cp->custom_private = lappend(cp->custom_private, content);
    cp->custom_private = lappend(cp->custom_private, makeInteger(content_side));
    cp->methods = &path_methods;
    return cp;
}

// The commuted index probe. A bare `x % y` is rewritten (auto_query.cpp) into `x % q(y)`, q(y) =
// spotsig_auto_query(y, rel, column), and the operator of a spotsig and a spotsigs_content_query
// has no commutator: PostgreSQL can probe an index on x's column with q(y) but not one on y's.
// Yet `y % q(x)` with the same rel and column is the same condition: both measures q can stand
// for are symmetric (the plain similarity, and the similarity of the two signatures without one
// template, the same for both). So when the outer side holds x and the inner side has a spotsigs
// index on y's column, this adds a nested loop whose inner side probes that index with `y %
// q(x)` per outer row, the rewritten clause staying as the probe's filter (so the rows are those
// of the clause as written whatever the index returns). The planner keeps it where it is cheaper,
// as it would the probe of an index on x. An inner, left, semi or anti join; any other content
// query (a function of the user's) is not known to be symmetric and is left as it is.
void add_commuted_index_probe(PlannerInfo* root, RelOptInfo* joinrel, RelOptInfo* outerrel, RelOptInfo* innerrel,
                              JoinType jointype, JoinPathExtraData* extra) {
    if (jointype != JOIN_INNER && jointype != JOIN_LEFT && jointype != JOIN_SEMI && jointype != JOIN_ANTI) return;
    if (innerrel->reloptkind != RELOPT_BASEREL || innerrel->indexlist == NIL) return;
    Path* outer = outerrel->cheapest_total_path;
    if (outer == nullptr || PATH_REQ_OUTER(outer) != nullptr) return;
    ListCell* lc;
    foreach (lc, extra->restrictlist) {
        RestrictInfo* ri = lfirst_node(RestrictInfo, lc);
        if (ri->pseudoconstant || !IsA(ri->clause, OpExpr)) continue;
        OpExpr* op = (OpExpr*)ri->clause;
        if (list_length(op->args) != 2 || function_address(get_opcode(op->opno)) != spotsig_content_similar) continue;
        Var* x = plain_column((Node*)linitial(op->args));
        Node* b = (Node*)lsecond(op->args);
        if (x == nullptr || !bms_is_member(x->varno, outerrel->relids) || !IsA(b, FuncExpr)) continue;
        FuncExpr* q = (FuncExpr*)b;
        if (list_length(q->args) != 3 || function_address(q->funcid) != spotsig_auto_query) continue;
        Var* y = plain_column((Node*)linitial(q->args));
        if (y == nullptr || y->varno != (int)innerrel->relid || y->varattno <= 0) continue;
        if (!IsA(lsecond(q->args), Const) || !IsA(lthird(q->args), Const)) continue;
        // y % q(x), q with the same rel and column.
        FuncExpr* qx = (FuncExpr*)copyObjectImpl(q);
        linitial(qx->args) = copyObjectImpl(x);
        OpExpr* commuted = (OpExpr*)copyObjectImpl(op);
        commuted->args = list_make2(copyObjectImpl(y), qx);
#if PG_VERSION_NUM < 160000
        RestrictInfo* probe = make_restrictinfo(root, (Expr*)commuted, ri->is_pushed_down, false, false,
                                                ri->security_level, ri->required_relids, ri->outer_relids, nullptr);
#else
        RestrictInfo* probe = make_restrictinfo(root, (Expr*)commuted, ri->is_pushed_down, false, false, false,
                                                ri->security_level, ri->required_relids, nullptr, ri->outer_relids);
#endif
        Relids required_outer = bms_make_singleton(x->varno);
        ListCell* li;
        foreach (li, innerrel->indexlist) {
            IndexOptInfo* index = (IndexOptInfo*)lfirst(li);
            if (index->indpred != NIL && !index->predOK) continue;
            if (!index->amhasgettuple && !index->amhasgetbitmap) continue;
            for (int k = 0; k < index->nkeycolumns; ++k) {
                if (index->indexkeys[k] != y->varattno || !op_in_opfamily(op->opno, index->opfamily[k])) continue;
                IndexClause* ic = makeNode(IndexClause);
                ic->rinfo = probe;
                ic->indexquals = list_make1(probe);
                ic->lossy = false;
                ic->indexcol = k;
                ic->indexcols = NIL;
                IndexPath* ip = create_index_path(root, index, list_make1(ic), NIL, NIL, NIL, ForwardScanDirection,
                                                  false, required_outer, outer->rows, false);
                Path* inner = &ip->path;
                if (!index->amhasgettuple)
                    inner = &create_bitmap_heap_path(root, innerrel, inner, required_outer, outer->rows, 0)->path;
                JoinCostWorkspace workspace;
                initial_cost_nestloop(root, &workspace, jointype, outer, inner, extra);
                add_path(joinrel, (Path*)create_nestloop_path(root, joinrel, jointype, &workspace, extra, outer, inner,
                                                              extra->restrictlist, NIL, nullptr));
                break;
            }
        }
    }
}

void spotsigs_join_pathlist(PlannerInfo* root, RelOptInfo* joinrel, RelOptInfo* outerrel, RelOptInfo* innerrel,
                            JoinType jointype, JoinPathExtraData* extra) {
    if (prev_join_pathlist_hook != nullptr) prev_join_pathlist_hook(root, joinrel, outerrel, innerrel, jointype, extra);
    add_commuted_index_probe(root, joinrel, outerrel, innerrel, jointype, extra);
    if (!enable_join || root->rowMarks != NIL) return;
    if (jointype != JOIN_INNER && jointype != JOIN_SEMI && jointype != JOIN_ANTI) return;
    if (!usable_side(outerrel) || !usable_side(innerrel) || !bms_is_empty(joinrel->lateral_relids)) return;
    Var* outer_var = nullptr;
    Var* inner_var = nullptr;
    double tau = 0;
    Expr* content = nullptr;
    int content_side = 1;
    RestrictInfo* sim = find_similarity_clause(extra->restrictlist, outerrel, innerrel, &outer_var, &inner_var, &tau,
                                               &content, &content_side);
    if (sim == nullptr) return;

    List* others = NIL;
    ListCell* lc;
    foreach (lc, extra->restrictlist) {
        RestrictInfo* ri = lfirst_node(RestrictInfo, lc);
        // Every clause of an inner or semi join is a condition on the pairs (as in PostgreSQL's
        // own joins); an anti join's pushed-down clauses would filter its output instead, which
        // this scan does not do.
        if (jointype == JOIN_ANTI && RINFO_IS_PUSHED_DOWN(ri, joinrel->relids)) return;
        if (ri != sim) others = lappend(others, ri);
    }

    Path* outer = outerrel->cheapest_total_path;
    Path* inner = innerrel->cheapest_total_path;
    CustomPath* cp = make_join_path(joinrel, list_make2(outer, inner), others, outer_var, inner_var, jointype, tau,
                                    content, content_side);
    cost_join_path(root, cp, outer, inner, others, jointype, extra);
    add_path(joinrel, &cp->path);

    if (outer_var->varattno != inner_var->varattno || !same_rows(root, outerrel, innerrel)) return;
    PathTarget* target = self_scan_target(root, outerrel, innerrel);
    if (target == nullptr) return;
    Path* scan = create_seqscan_path(root, outerrel, nullptr, 0);
    scan->pathtarget = target;
    CustomPath* self =
        make_join_path(joinrel, list_make1(scan), others, outer_var, inner_var, jointype, tau, content, content_side);
    cost_join_path(root, self, scan, nullptr, others, jointype, extra);
    add_path(joinrel, &self->path);
}

// The 1-based position of column v in the output of child, whose target list is made of the
// columns its relation gives the join.
int output_position(Plan* child, Var* v) {
    ListCell* lc;
    foreach (lc, child->targetlist) {
        TargetEntry* te = lfirst_node(TargetEntry, lc);
        Var* c = plain_column((Node*)te->expr);
        if (c != nullptr && c->varno == v->varno && c->varattno == v->varattno) return te->resno;
    }
    elog(ERROR, "spotsigs join: the signature column is missing from the output of a side");
    return 0;
}

// The plan of a chosen path: the children's outputs side by side are the scan tuple
// (custom_scan_tlist), which the join's target list and qual refer to.
Plan* plan_join_path(PlannerInfo*, RelOptInfo*, CustomPath* best_path, List* tlist, List*, List* custom_plans) {
    List* others = (List*)linitial(best_path->custom_private);
    Var* outer_var = (Var*)lsecond(best_path->custom_private);
    Var* inner_var = (Var*)lthird(best_path->custom_private);
    const JoinType jointype = static_cast<JoinType>(intVal(lfourth(best_path->custom_private)));
    // The self join's one scan gives both sides' rows: its output is the outer side's and, with
    // its Vars renumbered, the inner side's.
    const bool self = list_length(custom_plans) == 1;
    Plan* outer = (Plan*)linitial(custom_plans);
    Plan* inner = self ? outer : (Plan*)lsecond(custom_plans);
    Var* inner_col = inner_var;
    if (self) {
        inner_col = (Var*)copyObjectImpl(inner_var);
        inner_col->varno = outer_var->varno;
    }

    CustomScan* cs = makeNode(CustomScan);
    cs->scan.plan.targetlist = tlist;
    // Every other clause, pseudoconstant ones included (applied per pair: correct, if not the
    // cheapest place for a clause that does not depend on the rows).
    List* quals = NIL;
    ListCell* lc;
    foreach (lc, others) quals = lappend(quals, lfirst_node(RestrictInfo, lc)->clause);
    // A semi or anti join checks them on each pair before it decides on the outer row (its
    // output has no inner columns to check them on).
    if (jointype == JOIN_INNER) cs->scan.plan.qual = quals;
    else cs->custom_exprs = quals;
    // The content measure's query expression comes last in custom_exprs, evaluated on the scan
    // tuple of a row of its side (join_scan.cpp).
    Expr* content = (Expr*)list_nth(best_path->custom_private, 5);
    if (content != nullptr) cs->custom_exprs = lappend(cs->custom_exprs, copyObjectImpl(content));
    cs->scan.scanrelid = 0;
    cs->flags = best_path->flags;
    cs->custom_plans = custom_plans;
    List* scan_tlist = NIL;
    AttrNumber resno = 1;
    Plan* children[2] = {outer, inner};
    for (int k = 0; k < 2; ++k) {
        foreach (lc, children[k]->targetlist) {
            TargetEntry* te = lfirst_node(TargetEntry, lc);
            Expr* e = (Expr*)copyObjectImpl(te->expr);
            if (self && k == 1) ChangeVarNodes((Node*)e, outer_var->varno, inner_var->varno, 0);
            scan_tlist = lappend(scan_tlist, makeTargetEntry(e, resno++, nullptr, false));
        }
    }
    cs->custom_scan_tlist = scan_tlist;
    cs->custom_private = make_private(self, output_position(outer, outer_var), output_position(inner, inner_col),
                                      jointype, (Node*)list_nth(best_path->custom_private, 4),
                                      content != nullptr ? intVal(list_nth(best_path->custom_private, 6)) : -1);
    cs->methods = &scan_methods;
    return &cs->scan.plan;
}

}  // namespace

void register_join_planner() {
    DefineCustomBoolVariable("spotsigs.enable_join", "Lets the planner run joins on a % b with the spotsigs matcher.",
                             "An inner, semi or anti join whose condition holds a % b of two spotsig columns (or "
                             "a % spotsig_query(b, t), similarity(a, b) >= t, a % a content query of b) is then "
                             "planned as a SpotsigsJoin custom scan when that is estimated cheaper.",
                             &enable_join, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    path_methods.CustomName = "SpotsigsJoin";
    path_methods.PlanCustomPath = plan_join_path;
    RegisterCustomScanMethods(&scan_methods);
    prev_join_pathlist_hook = set_join_pathlist_hook;
    set_join_pathlist_hook = spotsigs_join_pathlist;
}

}  // namespace spotsigs::pg::planner

// spotsig_joinsel(root, operator, args, jointype, sjinfo) -> float8: the join selectivity of
// spotsig % spotsig, contjoinsel's. Being in this library is its point: the planner calls it
// while it sizes a join on %, before it makes the join's paths, so the library (and with it the
// hook above) is loaded in time in a session that has not used it yet.
SPOTSIGS_FUNCTION(spotsig_joinsel) {
    return contjoinsel(fcinfo);
}

// spotsig_similarity_support(internal) -> internal: the planner support function of
// similarity(spotsig, spotsig). It answers no request (NULL: the call stays as written, costed
// and estimated as before); being in this library is its point: the planner calls it while it
// simplifies the query's expressions, before any join is planned, so `similarity(a.sig, b.sig) >=
// tau` loads the library, and with it the hook above, in a session that has not used it yet (a
// float8 >= has no selectivity function of ours to do it, as spotsig_joinsel does for %).
SPOTSIGS_FUNCTION(spotsig_similarity_support) {
    PG_RETURN_POINTER(nullptr);
}
