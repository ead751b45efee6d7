// The joins of Citus-distributed tables, run on the nodes holding their shards (the SQL half is
// src/sql/70_citus.sql). Citus is found at run time only: without it, citus_distributed() is
// false after one catalog lookup, and spotsigs neither links against nor needs Citus.
#pragma once

#include "pg/pg.hpp"

namespace spotsigs::pg {

// Whether relid is a hash-distributed Citus table (false when Citus is not installed).
// PostgreSQL code: call outside pg_entry.
bool citus_distributed(FunctionCallInfo fcinfo, Oid relid);

// Appends to the call's materialized result (InitMaterializedSRF done) the pairs (batch id,
// archive id, similarity) of spotsigs_join_rs of a batch against a distributed archive, args being
// the ten arguments of spotsigs_citus_join_rs_tasks (the batch's three, the archive's, threshold,
// threads, method, template); swap puts each pair's ids the other way round. Cancellable. Call
// outside pg_entry.
void citus_rs_pairs(FunctionCallInfo fcinfo, Oid* types, Datum* args, const char* nulls, bool swap);

// Appends to the call's materialized result the pairs (id1 < id2, similarity) of spotsigs_join
// on the distributed table args[0], args being the seven arguments of spotsigs_citus_join_tasks:
// its tasks run on the nodes holding the shards, and their packed pairs are decoded here.
// Cancellable. Call outside pg_entry.
void citus_self_pairs(FunctionCallInfo fcinfo, Oid* types, Datum* args, const char* nulls);

// spotsigs_clusters over the distributed relation relname (qualified and quoted): the ids of
// its rows with an id and a signature, each with the smallest id of its connected component in
// the graph of the pairs citus_self_pairs gives for args, appended to the call's result.
// args: the seven arguments of spotsigs_citus_join_tasks. Raises 22023 for a repeated id. Call outside pg_entry.
void citus_clusters(FunctionCallInfo fcinfo, const char* relname, const char* id_column, const char* sig_column,
                    Oid* types, Datum* args, const char* nulls);

}  // namespace spotsigs::pg
