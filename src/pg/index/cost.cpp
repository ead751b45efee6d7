// amcostestimate: pages and postings a search would touch, from the metapage statistics.
//
// A threshold query reads, for each of its distinct signatures, the lists of the partitions its
// length range can reach: about distinct(q) * E[list length] * (share of rows in those
// partitions) postings, plus one root-to-leaf descent per signature and segment, plus the whole
// pending list. An ordered scan pays the first tier (0.9) before its first row and up to a full
// pass over the index in total.
#include "pg/index/index.hpp"

extern "C" {
#include "access/relation.h"
#include "nodes/pathnodes.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
}

#include <cmath>

#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/type/datum.hpp"
#include "pg/type/query.hpp"

extern "C" Datum spotsig_auto_query(PG_FUNCTION_ARGS);

namespace spotsigs::pg::index {

namespace {

// Whether fn is the C function spotsig_auto_query (whatever the extension's schema).
bool is_auto_query(Oid fn) {
    FmgrInfo finfo;
    fmgr_info(fn, &finfo);
    return finfo.fn_addr == spotsig_auto_query;
}

// Length and distinct count of the query if it is a constant, else the index averages; *tau
// gets the threshold of a constant spotsigs_query, else spotsigs.similarity_threshold.
void query_shape(IndexPath* path, double avg_len, double avg_distinct, double* qlen, double* qdistinct, double* tau) {
    *qlen = avg_len;
    *qdistinct = avg_distinct;
    *tau = similarity_threshold;
    List* lists[2] = {nullptr, path->indexorderbys};
    ListCell* lc;
    foreach (lc, path->indexclauses) {
        IndexClause* ic = (IndexClause*)lfirst(lc);
        lists[0] = lappend(lists[0], ic->rinfo->clause);
    }
    for (List* l : lists) {
        foreach (lc, l) {
            Node* clause = (Node*)lfirst(lc);
            if (!IsA(clause, OpExpr)) continue;
            Node* arg = (Node*)lsecond(((OpExpr*)clause)->args);
            // A bare % rewritten under 'auto' (auto_query.cpp): the shape of its query operand, at
            // spotsigs.similarity_threshold (the statistics are looked up only when it runs).
            if (IsA(arg, FuncExpr) && list_length(((FuncExpr*)arg)->args) == 3 &&
                IsA(linitial(((FuncExpr*)arg)->args), Const) && is_auto_query(((FuncExpr*)arg)->funcid))
                arg = (Node*)linitial(((FuncExpr*)arg)->args);
            if (!IsA(arg, Const) || ((Const*)arg)->constisnull) continue;
            struct varlena* v;
            if (type_is_rowtype(((Const*)arg)->consttype)) {
                // A spotsigs_query: its signature and threshold (NULL fields: no shape).
                if (!read_query(((Const*)arg)->constvalue, &v, tau)) continue;
            } else {
                v = fetch_spotsig(((Const*)arg)->constvalue);
            }
            MultisetView m;
            bool ok = true;
            try {
                m = view_of(v);
            } catch (...) {
                ok = false;
            }
            if (!ok) continue;
            *qlen = (double)m.length;
            *qdistinct = (double)m.size;
            return;
        }
    }
}

// Share of rows whose length partition a query of length qlen at tau can reach.
double reachable_share(const MetaData& m, double qlen, double tau) {
    if (m.total_docs == 0) return 0.0;
    uint64 ql = (uint64)(qlen < 1 ? 1 : qlen);
    LengthRange r = length_range(ql, tau);
    if (r.empty()) return 0.0;
    const Partitioning& parts = partitioning_for(m.growth);
    uint32 lo = parts.partition_of(r.lo), hi = parts.partition_of(r.hi);
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
    double qlen, qdistinct, qtau;
    query_shape(path, avg_len, avg_distinct, &qlen, &qdistinct, &qtau);

    // Each query signature descends each segment to one DATA page; repeated pages are cached
    // (index_pages_fetched), and the hot upper levels and the pending list are charged as
    // sequential reads, like btree's descent.
    double idx_pages = path->indexinfo->pages > 1 ? (double)path->indexinfo->pages : 1.0;
    double nseg = m.nsegments > 0 ? (double)m.nsegments : 0.0;
    // Cost of one threshold search at tau; *npages gets the pages it reads.
    auto search_cost = [&](double tau, double* npages) {
        double share = reachable_share(m, qlen, tau);
        double read = qdistinct * e_list * share;
        double descents = qdistinct * nseg;
        double leaf = descents > 0 ? index_pages_fetched(descents, (BlockNumber)idx_pages, idx_pages, root) : 0;
        double pg = 1 + m.pending_pages + leaf + read * 6.0 / BLCKSZ;
        if (pg > idx_pages) pg = idx_pages;
        *npages = pg;
        return pg * seq_page_cost + read * cpu_operator_cost * 2 + descents * height * cpu_operator_cost * 10 +
               (double)m.pending_count * qdistinct * cpu_operator_cost;
    };
    double npages;
    if (path->indexorderbys == NIL) {
        double c = search_cost(qtau, &npages);
        costs.indexStartupCost = c;
        costs.indexTotalCost = c + costs.numIndexTuples * cpu_index_tuple_cost;
    } else {
        double first = search_cost(0.9, &npages);
        double full = search_cost(1e-12, &npages) * 2 + docs * cpu_index_tuple_cost;
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
