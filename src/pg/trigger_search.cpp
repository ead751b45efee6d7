// The trigger's candidate search, straight through the index access method's search.
//
// It replaced an SPI query (`WHERE sig % $1 ORDER BY sig <-> $1, id LIMIT 1`) that planned,
// ran the index search, fetched and detoasted every match and recomputed its similarity for each
// inserted row. The index already computes each match's exact similarity (with similarity()'s
// expression), so only visibility and the primary key need the heap.
//
// C-style code: no C++ object with a destructor lives across a PostgreSQL call.
#include "trigger_search.hpp"

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

#include "boundary.hpp"
#include "datum.hpp"
#include "index/index.hpp"

namespace spotsigs::pg {

int64 integer_value(Oid type, Datum d) {
    switch (type) {
        case INT2OID: return DatumGetInt16(d);
        case INT4OID: return DatumGetInt32(d);
        default: return DatumGetInt64(d);
    }
}

namespace {

// Orders r by descending similarity (stable, so equal similarities keep the index's order).
void sort_by_similarity(index::Results* r) {
    pg_entry([&] {
        std::vector<size_t> perm((size_t)r->n);
        std::iota(perm.begin(), perm.end(), size_t(0));
        std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) { return r->sims[a] > r->sims[b]; });
        std::vector<uint64> ids((size_t)r->n);
        std::vector<double> sims((size_t)r->n);
        for (size_t k = 0; k < perm.size(); ++k) {
            ids[k] = r->ids[perm[k]];
            sims[k] = r->sims[perm[k]];
        }
        std::copy(ids.begin(), ids.end(), r->ids);
        std::copy(sims.begin(), sims.end(), r->sims);
        return Datum(0);
    });
}

}  // namespace

TriggerMatch trigger_find_match(const TriggerConfig* c, Relation rel, const MultisetView& q, int64 self) {
    TriggerMatch m = {false, 0, 0.0};

    // The snapshot first, then the search: every row it sees was indexed before the search began.
    // Like a volatile function's SPI query: a new command id, so the rows this statement wrote
    // before this one are visible, and under READ COMMITTED a new snapshot, so rows committed by
    // other sessions until now are too (the 'locked' mode relies on it).
    CommandCounterIncrement();
    PushActiveSnapshot(GetTransactionSnapshot());
    UpdateActiveSnapshotCommandId();
    Snapshot snap = GetActiveSnapshot();

    Relation index = index_open(c->index_oid, AccessShareLock);
    index::Results r = index::threshold_matches(index, q, c->threshold);
    index_close(index, AccessShareLock);

    if (r.n > 0) {
        if (c->best) sort_by_similarity(&r);
        IndexFetchTableData* fetch = table_index_fetch_begin(rel);
        TupleTableSlot* slot = table_slot_create(rel, nullptr);
        // Groups of equal similarity, best first; in mode first every match is its own group.
        for (int64 i = 0; i < r.n && !m.found;) {
            int64 j = i + 1;
            if (c->best)
                while (j < r.n && r.sims[j] == r.sims[i]) ++j;
            for (int64 k = i; k < j; ++k) {
                ItemPointerData tid;
                index::id_to_tid(r.ids[k], &tid);
                bool call_again = false, all_dead = false;
                if (!table_index_fetch_tuple(fetch, &tid, snap, slot, &call_again, &all_dead)) continue;
                bool isnull = false;
                Datum d = slot_getattr(slot, c->id_att, &isnull);
                if (isnull) continue;
                int64 id = integer_value(c->id_type, d);
                if (id == self) continue;  // an UPDATE's own earlier version
                if (!m.found || id < m.id) m = {true, id, r.sims[k]};
                if (!c->best) break;
            }
            i = j;
        }
        ExecDropSingleTupleTableSlot(slot);
        table_index_fetch_end(fetch);
    }
    PopActiveSnapshot();
    return m;
}

}  // namespace spotsigs::pg
