// The SQL similarity join: an inner join whose condition holds `a.sig % b.sig` is planned as a
// CustomScan ("SpotsigsJoin") whose two child plans scan the sides, and run by the core's R-S
// matcher instead of a nested loop probing once per outer row.
//
//  * join_path.cpp: the set_join_pathlist_hook that recognises the clause and adds the path, and
//    the path's conversion into a plan;
//  * join_cost.cpp: the path's cost;
//  * join_scan.cpp: the scan's execution (read both children, match, emit the joined rows).
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
}

namespace spotsigs::pg::planner {

// spotsigs.enable_join: whether the planner may choose the custom join.
extern bool enable_join;

// Registers spotsigs.enable_join, the planner hook and the scan's methods (from _PG_init).
void register_join_planner();

// The CustomScan's methods (join_scan.cpp); its custom_private is the list built by
// make_private: whether it is a self join over one child (whose rows are both sides), the
// 1-based positions of the signature column in the outer and the inner side's output, and the
// join type (inner, semi or anti; the other join clauses of a semi or anti join are its
// custom_exprs, those of an inner join its qual), and the clause's threshold (a float8 Const;
// 0: spotsigs.similarity_threshold when the join runs; -1: the content measure), and the side
// (0 outer, 1 inner) whose column the content measure's query expression reads, -1 without one;
// that expression is then the last of custom_exprs.
extern CustomScanMethods scan_methods;
List* make_private(bool self, int outer_sig, int inner_sig, JoinType jointype, Node* tau, int content_side);

// Sets the startup and total cost and the rows of path, the join of outer and inner (their
// cheapest unparameterized paths; inner nullptr: a self join whose one scan, outer, gives both
// sides' rows) whose % clause the matcher evaluates and whose other clauses
// (RestrictInfos, `others`) are applied to each pair it finds. The model is described in
// join_cost.cpp.
void cost_join_path(PlannerInfo* root, CustomPath* path, Path* outer, Path* inner, List* others, JoinType jointype,
                    JoinPathExtraData* extra);

}  // namespace spotsigs::pg::planner
