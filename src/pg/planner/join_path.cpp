// The planner side of the SQL similarity join: recognising `a.sig % b.sig` among an inner join's
// clauses, adding the custom path, and turning the chosen path into a CustomScan plan.
//
// What the path covers: an inner join of two base relations (any relation kind PostgreSQL scans:
// tables, partitioned tables, views pulled up into their tables) whose restriction list holds a
// clause `x % y` with x a plain column of one side and y a plain column of the other, the
// operator being the extension's % of two spotsigs (recognised by the C function it calls, so
// whatever schema the extension is in). Each side is planned by PostgreSQL as it would be on its
// own (its cheapest unparameterized path): filters pushed down to a side and row security stay
// in that side's plan. The other clauses of the join are applied to every pair the matcher
// finds, as the scan's qual. Both sides are read in full and matched as an R-S join, which is
// exact whatever the two sides are (a self join too: a row is paired with itself, and each pair
// of rows is found in both orders, exactly as the SQL join's semantics ask).
//
// Left alone: outer, semi and anti joins, a % under OR or NOT or inside an expression, a side
// that needs parameters from elsewhere (LATERAL), and queries with row marks (FOR UPDATE, or the
// rows of UPDATE/DELETE ... FROM), whose EvalPlanQual rechecks this scan does not implement.
#include "pg/planner/join_planner.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

// The C function behind the % operator of two spotsigs (similarity_fn.cpp).
Datum spotsig_similar(PG_FUNCTION_ARGS);
}

namespace spotsigs::pg::planner {

bool enable_join = true;

namespace {

set_join_pathlist_hook_type prev_join_pathlist_hook = nullptr;

CustomPathMethods path_methods;

// Whether opno is the extension's % of two spotsigs: its function is spotsig_similar of this
// library.
bool is_similar_operator(Oid opno) {
    Oid fn = get_opcode(opno);
    if (!OidIsValid(fn)) return false;
    FmgrInfo finfo;
    fmgr_info(fn, &finfo);
    return finfo.fn_addr == spotsig_similar;
}

// The plain column (a Var of this query level) that node is, else nullptr.
Var* plain_column(Node* node) {
    if (node == nullptr || !IsA(node, Var)) return nullptr;
    Var* v = (Var*)node;
    if (v->varlevelsup != 0 || v->varattno == InvalidAttrNumber) return nullptr;
    return v;
}

// The clause of restrictlist the matcher evaluates: `x % y` with x a column of outer and y one of
// inner (or the other way round), returned in *outer_var and *inner_var. nullptr if none.
RestrictInfo* find_similarity_clause(List* restrictlist, RelOptInfo* outer, RelOptInfo* inner, Var** outer_var,
                                     Var** inner_var) {
    ListCell* lc;
    foreach (lc, restrictlist) {
        RestrictInfo* ri = lfirst_node(RestrictInfo, lc);
        if (ri->pseudoconstant || !IsA(ri->clause, OpExpr)) continue;
        OpExpr* op = (OpExpr*)ri->clause;
        if (list_length(op->args) != 2) continue;
        Var* l = plain_column((Node*)linitial(op->args));
        Var* r = plain_column((Node*)lsecond(op->args));
        if (l == nullptr || r == nullptr) continue;
        if (l->varno == (int)outer->relid && r->varno == (int)inner->relid) {
            *outer_var = l;
            *inner_var = r;
        } else if (l->varno == (int)inner->relid && r->varno == (int)outer->relid) {
            *outer_var = r;
            *inner_var = l;
        } else {
            continue;
        }
        if (!is_similar_operator(op->opno)) continue;
        return ri;
    }
    return nullptr;
}

// Whether rel is a plain base relation whose cheapest total path needs no outside parameters.
bool usable_side(RelOptInfo* rel) {
    return rel->reloptkind == RELOPT_BASEREL && rel->cheapest_total_path != nullptr &&
           PATH_REQ_OUTER(rel->cheapest_total_path) == nullptr && bms_is_empty(rel->lateral_relids);
}

void spotsigs_join_pathlist(PlannerInfo* root, RelOptInfo* joinrel, RelOptInfo* outerrel, RelOptInfo* innerrel,
                            JoinType jointype, JoinPathExtraData* extra) {
    if (prev_join_pathlist_hook != nullptr) prev_join_pathlist_hook(root, joinrel, outerrel, innerrel, jointype, extra);
    if (!enable_join || jointype != JOIN_INNER || root->rowMarks != NIL) return;
    if (!usable_side(outerrel) || !usable_side(innerrel) || !bms_is_empty(joinrel->lateral_relids)) return;
    Var* outer_var = nullptr;
    Var* inner_var = nullptr;
    RestrictInfo* sim = find_similarity_clause(extra->restrictlist, outerrel, innerrel, &outer_var, &inner_var);
    if (sim == nullptr) return;

    List* others = NIL;
    ListCell* lc;
    foreach (lc, extra->restrictlist)
        if (lfirst(lc) != sim) others = lappend(others, lfirst(lc));

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
    cp->custom_paths = list_make2(outerrel->cheapest_total_path, innerrel->cheapest_total_path);
    // The clauses applied to the pairs, and the two signature columns (found in the children's
    // output when the plan is made).
    cp->custom_private = list_make3(others, outer_var, inner_var);
    cp->methods = &path_methods;
    cost_join_path(root, cp, outerrel->cheapest_total_path, innerrel->cheapest_total_path, others, extra);
    add_path(joinrel, &cp->path);
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
    Plan* outer = (Plan*)linitial(custom_plans);
    Plan* inner = (Plan*)lsecond(custom_plans);

    CustomScan* cs = makeNode(CustomScan);
    cs->scan.plan.targetlist = tlist;
    // Every other clause, pseudoconstant ones included (applied per pair: correct, if not the
    // cheapest place for a clause that does not depend on the rows).
    List* quals = NIL;
    ListCell* lc;
    foreach (lc, others) quals = lappend(quals, lfirst_node(RestrictInfo, lc)->clause);
    cs->scan.plan.qual = quals;
    cs->scan.scanrelid = 0;
    cs->flags = best_path->flags;
    cs->custom_plans = custom_plans;
    List* scan_tlist = NIL;
    AttrNumber resno = 1;
    Plan* children[2] = {outer, inner};
    for (Plan* child : children) {
        foreach (lc, child->targetlist) {
            TargetEntry* te = lfirst_node(TargetEntry, lc);
            scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)copyObjectImpl(te->expr), resno++, nullptr, false));
        }
    }
    cs->custom_scan_tlist = scan_tlist;
    cs->custom_private = make_private(output_position(outer, outer_var), output_position(inner, inner_var));
    cs->methods = &scan_methods;
    return &cs->scan.plan;
}

}  // namespace

void register_join_planner() {
    DefineCustomBoolVariable("spotsigs.enable_join", "Lets the planner run joins on a % b with the spotsigs matcher.",
                             "An inner join whose condition holds a % b of two spotsig columns is then planned as "
                             "a SpotsigsJoin custom scan when that is estimated cheaper.",
                             &enable_join, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    path_methods.CustomName = "SpotsigsJoin";
    path_methods.PlanCustomPath = plan_join_path;
    RegisterCustomScanMethods(&scan_methods);
    prev_join_pathlist_hook = set_join_pathlist_hook;
    set_join_pathlist_hook = spotsigs_join_pathlist;
}

}  // namespace spotsigs::pg::planner
