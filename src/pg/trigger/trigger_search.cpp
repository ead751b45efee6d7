// The trigger's candidate search, straight through the index access method's search.
//
// Why not an SPI query (`WHERE sig % $1 ORDER BY sig <-> $1, id LIMIT 1`): it would plan, run
// the index search, fetch and detoast every match and recompute its similarity for each inserted
// row. The index already computes the exact similarity (with similarity()'s expression) of the
// matches it completes; the heap only gives visibility, the primary key, and the similarity of the
// candidates the index left unverified.
//
// C-style code: no C++ object with a destructor lives across a PostgreSQL call.
#include "pg/trigger/trigger_search.hpp"

extern "C" {
#include "access/relation.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "utils/snapmgr.h"
}

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/template/content.hpp"
#include "core/template/stored.hpp"
#include "pg/boundary.hpp"
#include "pg/index/index.hpp"
#include "pg/trigger/trigger_visibility.hpp"
#include "pg/type/datum.hpp"

namespace spotsigs::pg {

int64 integer_value(Oid type, Datum d) {
    switch (type) {
        case INT2OID: return DatumGetInt16(d);
        case INT4OID: return DatumGetInt32(d);
        default: return DatumGetInt64(d);
    }
}

namespace {

// Orders the entries of r by descending similarity (exact, or the bound of a candidate), equal
// values by ascending index id, which is the heap position: in a table filled in key order the
// oldest row comes first, so a tie is usually settled by the first row fetched (below).
// exact[k] tells which entries are exact matches.
void sort_by_similarity(index::Results* r, int64 nexact, bool* exact) {
    pg_entry([&] {
        std::vector<size_t> perm((size_t)r->n);
        std::iota(perm.begin(), perm.end(), size_t(0));
        std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
            return r->sims[a] != r->sims[b] ? r->sims[a] > r->sims[b] : r->ids[a] < r->ids[b];
        });
        std::vector<uint64> ids((size_t)r->n);
        std::vector<double> sims((size_t)r->n);
        for (size_t k = 0; k < perm.size(); ++k) {
            ids[k] = r->ids[perm[k]];
            sims[k] = r->sims[perm[k]];
            exact[k] = (int64)perm[k] < nexact;
        }
        std::copy(ids.begin(), ids.end(), r->ids);
        std::copy(sims.begin(), sims.end(), r->sims);
        return Datum(0);
    });
}

// The similarity of q to the spotsig column of the row in slot, or -1 when it is NULL: with a
// template (the content measure), q is the new row's content and the similarity the content
// similarity, similarity(spotsig_remove(new, t), spotsig_remove(row, t)).
double row_similarity(const TriggerConfig* c, TupleTableSlot* slot, const MultisetView& q) {
    bool isnull = false;
    Datum d = slot_getattr(slot, c->sig_att, &isnull);
    if (isnull) return -1.0;
    struct varlena* v = fetch_spotsig(d);
    double s = 0.0;
    pg_entry([&] {
        s = c->tmpl_set != nullptr ? content_similarity(q, view_of(v), *static_cast<const SignatureSet*>(c->tmpl_set))
                                   : similarity(q, view_of(v));
        return Datum(0);
    });
    if ((Pointer)v != DatumGetPointer(d)) pfree(v);
    return s;
}

}  // namespace

TriggerMatch trigger_find_match(TriggerConfig* c, Relation rel, const MultisetView& q, int64 self) {
    TriggerMatch m = {false, 0, 0.0};
    // Where row-level security hides rows from the user, a match must pass its policies too.
    const bool filtered = row_security_applies(c, rel);

    // The snapshot first, then the search: every row it sees was indexed before the search began.
    // Like a volatile function's SPI query: a new command id, so the rows this statement wrote
    // before this one are visible, and under READ COMMITTED a new snapshot, so rows committed by
    // other sessions until now are too (the 'locked' mode relies on it).
    CommandCounterIncrement();
    PushActiveSnapshot(GetTransactionSnapshot());
    UpdateActiveSnapshotCommandId();
    Snapshot snap = GetActiveSnapshot();

    // The index may leave candidates unverified (fewer of them than the lists it would read to
    // complete their overlaps): their similarity is computed from the row, fetched anyway.
    // With a template, the index (which holds whole rows) is searched for the rows whose content
    // bound (core/index/index_search.hpp) reaches the threshold, as every row whose content
    // similarity to q (the new row's content) does (index::content_candidates); every row it
    // returns is then verified on its content similarity, computed from the row. The value the
    // search gives a candidate, its content bound fl(o / |q|) (or a bound of that), is never below
    // its content similarity (core/index/index_search.hpp), so it orders and prunes the candidates
    // in mode best as a plain candidate's bound does.
    const bool verify_all = c->ntmpl > 0;
    Relation index = index_open(c->index_oid, AccessShareLock);
    int64 nexact = 0;
    index::Results r = verify_all ? index::content_candidates(index, q, c->threshold)
                                  : index::threshold_matches(index, q, c->threshold, &nexact);
    index_close(index, AccessShareLock);

    if (r.n > 0) {
        bool* exact = (bool*)palloc(sizeof(bool) * r.n);
        sort_by_similarity(&r, nexact, exact);
        IndexFetchTableData* fetch = table_index_fetch_begin(rel);
        TupleTableSlot* slot = table_slot_create(rel, nullptr);
        // Best first (candidates by their bound): in mode best, once a match is found, only
        // entries that can equal its similarity (a tie with a smaller key) remain to be seen.
        for (int64 k = 0; k < r.n; ++k) {
            if (m.found && (!c->best || r.sims[k] < m.similarity)) break;
            ItemPointerData tid;
            index::id_to_tid(r.ids[k], &tid);
            bool call_again = false, all_dead = false;
            if (!table_index_fetch_tuple(fetch, &tid, snap, slot, &call_again, &all_dead)) continue;
            bool isnull = false;
            Datum d = slot_getattr(slot, c->id_att, &isnull);
            if (isnull) continue;
            int64 id = integer_value(c->id_type, d);
            if (id == self) continue;  // an UPDATE's own earlier version
            // In mode best, an entry whose value (exact, or a bound of the exact one) does not
            // exceed the match's similarity can only tie with it, which takes a smaller key: a
            // larger key needs no similarity (nor the detoasting of its signature).
            if (m.found && r.sims[k] <= m.similarity && id >= m.id) continue;
            double s = exact[k] && !verify_all ? r.sims[k] : row_similarity(c, slot, q);
            if (s < c->threshold) continue;
            if (m.found && (s < m.similarity || (s == m.similarity && id >= m.id))) continue;
            if (filtered && !row_visible(c, d)) continue;
            m = {true, id, s};
        }
        ExecDropSingleTupleTableSlot(slot);
        table_index_fetch_end(fetch);
        pfree(exact);
    }
    PopActiveSnapshot();
    return m;
}

}  // namespace spotsigs::pg
