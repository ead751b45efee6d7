// amcostestimate: pages and postings a search would touch, from the metapage statistics.
//
// A threshold query reads, for each of its distinct signatures, the lists of the partitions its
// length range can reach: about distinct(q) * E[list length] * (share of rows in those
// partitions) postings, plus one root-to-leaf descent per signature and segment, plus the whole
// pending list. An ordered scan pays the first tier (0.9) before its first row and up to a full
// pass over the index in total.
//
// A content search (strategies 4 and 5 with a template) reads the lists of the query's content
// in every partition of rows at least tau |content| long (no upper bound: a row's template part
// may be of any length), and every row it finds is a candidate that the executor fetches and
// rechecks with the operator; an ordered content scan descends its tiers on the content bound. The
// same operators with an empty template (no statistics, a numeric setting) are the plain search.
#include "pg/index/index.hpp"

extern "C" {
#include "access/relation.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
}

#include <cmath>

#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/template/named.hpp"
#include "pg/type/auto_query.hpp"
#include "pg/type/datum.hpp"
#include "pg/type/query.hpp"

extern "C" Datum spotsig_auto_query(PG_FUNCTION_ARGS);
extern "C" Datum spotsig_content_query(PG_FUNCTION_ARGS);

namespace spotsigs::pg::index {

namespace {

// The C function of fn.
PGFunction function_of(Oid fn) {
    FmgrInfo finfo;
    fmgr_info(fn, &finfo);
    return finfo.fn_addr;
}

// The query of a search as the cost estimate sees it.
struct QueryShape {
    double len;       // |q| (of its content for a content search)
    double distinct;  // distinct signatures
    double tau;
    bool content;  // a content search: candidates rechecked, no upper length bound
};

// The template a constructor call spotsig_auto_query/spotsig_content_query(q, rel, column) would
// take now (rel and column constants, the statistics visible to the user), else null.
TemplateRef planned_template(FuncExpr* f) {
    if (list_length(f->args) != 3) return nullptr;
    Node* rel = (Node*)lsecond(f->args);
    Node* col = (Node*)lthird(f->args);
    if (!IsA(rel, Const) || !IsA(col, Const) || ((Const*)rel)->constisnull || ((Const*)col)->constisnull)
        return nullptr;
    const Oid relid = DatumGetObjectId(((Const*)rel)->constvalue);
    const char* column = NameStr(*DatumGetName(((Const*)col)->constvalue));
    if (!template_visible(relid, column)) return nullptr;
    bool found = false;
    TimestampTz version = 0;
    TemplateRef t;
    current_template(relid, column, &found, &version, &t);
    return found ? t : nullptr;
}

// Sets *shape from the spotsig value d (without the template t when given).
void shape_of_value(Datum d, const TemplateRef& t, QueryShape* shape) {
    struct varlena* v = fetch_spotsig(d);
    bool ok = true;
    try {
        MultisetView m = view_of(v);
        if (t != nullptr && !t->hashes.empty()) {
            std::vector<uint64_t> h(m.size);
            std::vector<uint32_t> f(m.size);
            uint64_t len = 0;
            shape->distinct = (double)t->content_of(m, h.data(), f.data(), &len);
            shape->len = (double)len;
        } else {
            shape->len = (double)m.length;
            shape->distinct = (double)m.size;
        }
    } catch (...) {
        ok = false;  // a malformed constant: the averages stay
    }
    (void)ok;
}

// shape_of_value of the spotsig constant arg, when it is one.
void shape_of_const(Node* arg, const TemplateRef& t, QueryShape* shape) {
    if (IsA(arg, Const) && !((Const*)arg)->constisnull) shape_of_value(((Const*)arg)->constvalue, t, shape);
}

// The shape of the first % or <-> of the path (the index averages for what is not a constant):
// the plain operators at spotsigs.similarity_threshold or the spotsigs_query's own threshold; the
// content operators by their operand: a constructor call by the statistics it would read now
// (spotsigs_analyze invalidates the plans of the table it analyzes), a constant by its fields,
// anything else as a content search at 0.4.
QueryShape query_shape(IndexPath* path, double avg_len, double avg_distinct) {
    QueryShape shape{avg_len, avg_distinct, similarity_threshold, false};
    List* lists[2] = {nullptr, path->indexorderbys};
    ListCell* lc;
    foreach (lc, path->indexclauses) {
        IndexClause* ic = (IndexClause*)lfirst(lc);
        lists[0] = lappend(lists[0], ic->rinfo->clause);
    }
    const Oid opfamily = path->indexinfo->opfamily[0];
    for (List* l : lists) {
        foreach (lc, l) {
            Node* clause = (Node*)lfirst(lc);
            if (!IsA(clause, OpExpr)) continue;
            OpExpr* op = (OpExpr*)clause;
            Node* arg = (Node*)lsecond(op->args);
            // The content operators: % of strategy 4, and the <-> whose right operand is a row
            // (ORDER BY operators are not search members, which get_op_opfamily_strategy reads).
            const bool content_op = l == lists[0]
                                        ? get_op_opfamily_strategy(op->opno, opfamily) == kStrategyContentQuery
                                        : type_is_rowtype(exprType(arg));
            if (content_op) {
                TemplateRef t;
                if (IsA(arg, FuncExpr) && function_of(((FuncExpr*)arg)->funcid) == spotsig_auto_query) {
                    FuncExpr* f = (FuncExpr*)arg;
                    if (similarity_threshold_auto) t = planned_template(f);
                    shape.content = t != nullptr;
                    shape.tau = !similarity_threshold_auto ? similarity_threshold
                                : shape.content            ? kAutoContentThreshold
                                                           : kAutoPlainThreshold;
                    arg = (Node*)linitial(f->args);
                } else if (IsA(arg, FuncExpr) && function_of(((FuncExpr*)arg)->funcid) == spotsig_content_query) {
                    FuncExpr* f = (FuncExpr*)arg;
                    t = planned_template(f);
                    shape.content = t != nullptr;
                    shape.tau = kContentThreshold;
                    arg = (Node*)linitial(f->args);
                } else if (IsA(arg, Const) && !((Const*)arg)->constisnull) {
                    // A value: content unless its template field is the empty one.
                    HeapTupleHeader th = DatumGetHeapTupleHeader(((Const*)arg)->constvalue);
                    bool n[3] = {false, false, false};
                    Datum c = GetAttributeByNum(th, 1, &n[0]);
                    Datum tau = GetAttributeByNum(th, 2, &n[1]);
                    Datum tm = GetAttributeByNum(th, 3, &n[2]);
                    shape.content = true;  // a template named (or none: no row matches)
                    if (!n[2]) {
                        struct varlena* tv = fetch_spotsig(tm);
                        try {
                            shape.content = view_of(tv).size > 0;
                        } catch (...) {
                        }
                    }
                    if (!n[1]) shape.tau = DatumGetFloat8(tau);
                    if (!n[0]) shape_of_value(c, nullptr, &shape);
                    return shape;
                } else {
                    shape.content = true;
                    shape.tau = kContentThreshold;
                    return shape;
                }
                shape_of_const(arg, t, &shape);
                return shape;
            }
            if (!IsA(arg, Const) || ((Const*)arg)->constisnull) continue;
            if (type_is_rowtype(((Const*)arg)->consttype)) {
                // A spotsigs_query: its signature and threshold (NULL fields: no shape).
                struct varlena* v;
                double tau = 0;
                if (!read_query(((Const*)arg)->constvalue, &v, &tau)) continue;
                shape.tau = tau;
                shape_of_value(PointerGetDatum(v), nullptr, &shape);
            } else {
                shape_of_const(arg, nullptr, &shape);
            }
            return shape;
        }
    }
    return shape;
}

// Share of rows whose length partition a query of length qlen at tau can reach.
// A content search reaches every partition of rows at least tau |q| long.
double reachable_share(const MetaData& m, double qlen, double tau, bool content) {
    if (m.total_docs == 0) return 0.0;
    uint64 ql = (uint64)(qlen < 1 ? 1 : qlen);
    LengthRange r = length_range(ql, tau);
    if (r.empty()) return 0.0;
    const Partitioning& parts = partitioning_for(m.growth);
    uint32 lo = parts.partition_of(r.lo), hi = content ? (uint32)kMaxPartitions - 1 : parts.partition_of(r.hi);
    double n = 0;
    for (uint32 p = lo; p <= hi && p < (uint32)kMaxPartitions; ++p) n += m.part_docs[p];
    double share = n / (double)m.total_docs;
    return share > 1.0 ? 1.0 : share;
}

}  // namespace

void amcostestimate(PlannerInfo* root, IndexPath* path, double loop_count, Cost* startup, Cost* total,
                    Selectivity* selectivity, double* correlation, double* pages) {
    if (path->indexclauses == NIL && path->indexorderbys == NIL) {
        // A scan without % or <-> would return every row in no useful order: never worth it.
        *startup = *total = 1.0e10;
        *selectivity = 1.0;
        *correlation = 0;
        *pages = path->indexinfo->pages;
#if PG_VERSION_NUM >= 180000
        // 18 no longer adds a huge cost to a disabled plan node: it counts disabled nodes, and
        // the fewest wins. With enable_seqscan off the sequential scan counts one, so this path
        // counts two to lose to it whatever its cost.
        path->path.disabled_nodes = 2;
#endif
        return;
    }
    GenericCosts costs;
    memset(&costs, 0, sizeof(costs));
    genericcostestimate(root, path, loop_count, &costs);

    Relation index = index_open(path->indexinfo->indexoid, NoLock);
    MetaData m;
    read_meta(index, &m);
    index_close(index, NoLock);

    double docs = (double)m.total_docs, postings = 0, sum_df2 = 0, height = 0;
    for (uint32 s = 0; s < m.nsegments; ++s) {
        postings += (double)m.seg[s].npostings;
        sum_df2 += m.seg[s].sum_df2;
        height += m.seg[s].height + 1;
    }
    double seg_docs = docs - (double)m.pending_count;
    double avg_distinct = seg_docs > 0 ? postings / seg_docs : 50;
    double avg_len = avg_distinct;                          // frequencies are mostly 1
    double e_list = postings > 0 ? sum_df2 / postings : 1;  // expected length of a query's list
    const QueryShape shape = query_shape(path, avg_len, avg_distinct);
    const double qlen = shape.len, qdistinct = shape.distinct, qtau = shape.tau;

    // Each query signature descends each segment to one DATA page; repeated pages are cached
    // (index_pages_fetched), and the hot upper levels and the pending list are charged as
    // sequential reads, like btree's descent.
    double idx_pages = path->indexinfo->pages > 1 ? (double)path->indexinfo->pages : 1.0;
    double nseg = m.nsegments > 0 ? (double)m.nsegments : 0.0;
    // Cost of one threshold search at tau; *npages gets the pages it reads.
    auto search_cost = [&](double tau, double* npages) {
        double share = reachable_share(m, qlen, tau, shape.content);
        double read = qdistinct * e_list * share;
        double descents = qdistinct * nseg;
        double leaf = descents > 0 ? index_pages_fetched(descents, (BlockNumber)idx_pages, idx_pages, root) : 0;
        double pg = 1 + m.pending_pages + leaf + read * 6.0 / BLCKSZ;
        if (pg > idx_pages) pg = idx_pages;
        *npages = pg;
        return pg * seq_page_cost + read * cpu_operator_cost * 2 + descents * height * cpu_operator_cost * 10 +
               (double)m.pending_count * qdistinct * cpu_operator_cost;
    };
    // A content search returns candidates (the estimated matches: a candidate shares at least
    // tau |content| of the content's signatures, which near duplicates do and little else), each
    // fetched and rechecked with the operator: about one hash probe per distinct signature of the
    // row.
    const double recheck = shape.content ? cpu_operator_cost * (1 + avg_distinct) : 0;
    double npages;
    if (path->indexorderbys == NIL) {
        double c = search_cost(qtau, &npages);
        costs.indexStartupCost = c;
        costs.indexTotalCost = c + costs.numIndexTuples * (cpu_index_tuple_cost + recheck);
    } else {
        double first = search_cost(0.9, &npages);
        double full = search_cost(1e-12, &npages) * 2 + docs * cpu_index_tuple_cost;
        // The first tier's candidates (near duplicates: the share contsel gives a match) are
        // rechecked before the first row; at most every row in all.
        first += std::max(1.0, docs * 0.001) * recheck;
        full += docs * recheck;
        costs.indexStartupCost = first;
        costs.indexTotalCost = first + full;
    }
    costs.numIndexPages = npages;
    *startup = costs.indexStartupCost;
    *total = costs.indexTotalCost;
    *selectivity = costs.indexSelectivity;
    *correlation = 0;
    *pages = costs.numIndexPages;
}

}  // namespace spotsigs::pg::index
