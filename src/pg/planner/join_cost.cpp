// The cost of a SpotsigsJoin path.
//
// The model, in PostgreSQL's cost units:
//   startup = cost(outer) + cost(inner)                   both sides read in full
//           + (rows(outer) + rows(inner)) * kPerRow       each row kept and its signature filed
//                                                         into the matcher's index, then probed
//           + pairs * kPerPair                            each pair found verified
// (a self join reads its one scan once: one cost and one rows term, and half the pairs to
// verify, since it finds each unordered pair once and the pairs of a row with itself free)
//   total   = startup + pairs * (cpu_tuple_cost + the other clauses' cost per pair)
//           + rows * the target list's cost per row
// with pairs the matcher's result before the other clauses (the join's estimated rows over the
// selectivity of those clauses), and
//   kPerRow  = cpu_tuple_cost + kRowOperators * cpu_operator_cost,
// kRowOperators standing for the work on one row's signatures (copying, listing its prefix,
// probing the lists of the other side): about a hundred signatures a row, a few operations each.
// All of it is spent before the first row comes out, so it is startup cost.
//
// What it competes with: the nested loop, which pays per outer row either a scan of the inner
// side with % evaluated per pair (quadratic: the matcher wins from a few dozen rows a side up),
// or one spotsigs index probe (amcostestimate, pg/index/cost.cpp), a few hundred to a few
// thousand units on a large table. The matcher pays its per-row term for every row of both
// sides, so a handful of outer rows against an indexed table keeps the nested loop, and a join
// of two large sides takes the matcher.
#include "pg/planner/join_planner.hpp"

extern "C" {
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
}

#include <algorithm>

namespace spotsigs::pg::planner {

namespace {

// Operations a row's signatures cost the matcher (see above).
constexpr double kRowOperators = 200.0;
// Operations verifying one found pair costs: one similarity() evaluation, which PostgreSQL
// charges one cpu_operator_cost (the function's procost), as it does the nested loop's join
// filter for every pair it tries.
constexpr double kPairOperators = 1.0;

}  // namespace

void cost_join_path(PlannerInfo* root, CustomPath* path, Path* outer, Path* inner, List* others, JoinType jointype,
                    JoinPathExtraData* extra) {
    RelOptInfo* joinrel = path->path.parent;
    const double rows = joinrel->rows;
    // The pairs the matcher gives: the join's rows before the other clauses filter them.
    Selectivity sel = others != NIL ? clauselist_selectivity(root, others, 0, JOIN_INNER, extra->sjinfo) : 1.0;
    sel = std::max(sel, 1e-10);
    const double inner_rows = inner != nullptr ? inner->rows : outer->rows;
    // (A semi or anti join's rows are outer rows: its pairs are taken as that many again.)
    const double pairs =
        clamp_row_est(jointype == JOIN_INNER ? std::min(rows / sel, outer->rows * inner_rows) : rows + outer->rows);
    const double verified = inner != nullptr ? pairs : pairs / 2;

    QualCost quals;
    cost_qual_eval(&quals, others, root);

    const double per_row = cpu_tuple_cost + kRowOperators * cpu_operator_cost;
    Cost startup = outer->total_cost + (inner != nullptr ? inner->total_cost : 0) +
                   (outer->rows + (inner != nullptr ? inner->rows : 0)) * per_row +
                   verified * kPairOperators * cpu_operator_cost + quals.startup;
    Cost run = pairs * (cpu_tuple_cost + quals.per_tuple) + rows * path->path.pathtarget->cost.per_tuple;
    path->path.rows = rows;
    path->path.startup_cost = startup + path->path.pathtarget->cost.startup;
    path->path.total_cost = path->path.startup_cost + run;
}

}  // namespace spotsigs::pg::planner
