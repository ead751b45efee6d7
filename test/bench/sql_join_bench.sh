#!/usr/bin/env bash
# Benchmark of the SQL similarity join (SpotsigsJoin custom scan, src/pg/planner/) against
# spotsigs_join on the textcorpus documents, in one run:
#
#   test/bench/sql_join_bench.sh [path/to/textcorpus]   (default: ../shared/data/textcorpus)
#
# In a throwaway cluster (test/with-cluster, with the PostgreSQL of PGBIN, where `make install`
# put the extension) it loads the 75,400 documents, extracts their signatures into base(id, sig)
# with a spotsigs index on sig (the nested loop's probes use it), and for each tau in TAUS
# (default 0.8 0.5) times, best of REPEAT runs (default 2),
#   SELECT count(*) FROM base a JOIN base b ON a.sig % b.sig AND a.id < b.id     (SpotsigsJoin)
#   SELECT count(*) FROM spotsigs_join('base', 'id', 'sig', tau)
# and prints both pair counts (they must be equal), the times and the ratio SQL / function, and the
# SQL join's time with jit = off (PostgreSQL compiles the plan's expressions when its estimated
# cost passes jit_above_cost, which this join's does: a fixed cost the function does not pay); with
# NESTLOOP=1 (default) the SQL join with spotsigs.enable_join = off (PostgreSQL's nested loop of
# index probes) is timed once at the first tau. spotsigs.max_threads is 2. Results go to
# OUT/sql_join_results.txt (default build/sql-join-bench) and, when the run completes, to
# test/bench/results/sql_join_results.txt (RESULTS= keeps them in OUT only). Not run by CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
corpus=${1:-$repo/../shared/data/textcorpus}
corpus=$(cd "$corpus" && pwd)
: "${TAUS:=0.8 0.5}" "${REPEAT:=2}" "${NESTLOOP:=1}" "${OUT:=$repo/build/sql-join-bench}"
export TAUS REPEAT NESTLOOP OUT

if [[ -z ${SQL_JOIN_BENCH_INSIDE:-} ]]; then
  mkdir -p "$OUT"
  chmod 0777 "$OUT" 2>/dev/null || true
  env SQL_JOIN_BENCH_INSIDE=1 \
    WITH_CLUSTER_OPTS="-c shared_buffers=1GB -c max_wal_size=4GB -c synchronous_commit=off -c work_mem=256MB \
      -c maintenance_work_mem=1GB -c max_parallel_workers_per_gather=0 -c spotsigs.max_threads=2" \
    "$repo/test/with-cluster" bash -c '"$0" "$1" < /dev/null' "$here/sql_join_bench.sh" "$corpus"
  results=${RESULTS-$repo/test/bench/results}
  if [[ -n $results ]]; then cp "$OUT/sql_join_results.txt" "$results/sql_join_results.txt"; fi
  exit 0
fi

log() { echo "$*" | tee -a "$OUT/sql_join_results.txt"; }
: > "$OUT/sql_join_results.txt"
. "$here/timing_lib.sh"

log "== SQL join benchmark, $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
log "corpus: $corpus; TAUS=$TAUS REPEAT=$REPEAT; spotsigs.max_threads=$(psql_q -c 'SHOW spotsigs.max_threads')"
psql_q -c "CREATE EXTENSION spotsigs"
psql_q -c "CREATE TABLE docs (id bigint PRIMARY KEY, source text, title text, body text)"
psql_q -c "\\copy docs from program 'zcat \"$corpus/docs.tsv.gz\"'"
timed "CREATE TABLE base AS SELECT id, spotsigs(title || E'\\n' || body) AS sig FROM docs; SELECT count(*) FROM base"
log "extracted $val documents in $(ratio "$ms" 1000) s"
psql_q -c "DROP TABLE docs" -c "ALTER TABLE base ADD PRIMARY KEY (id)"
timed "CREATE INDEX base_sig ON base USING spotsigs (sig)"
log "spotsigs index built in $(ratio "$ms" 1000) s"
psql_q -c "VACUUM ANALYZE base"
psql_q -c "SELECT sum(length(sig)) FROM base" >/dev/null   # warm the cache

sql_join="SELECT count(*) FROM base a JOIN base b ON a.sig % b.sig AND a.id < b.id"
first=1
log ""
log "$(printf '%-5s %10s %10s %10s %10s %8s %12s %8s' tau sql_pairs fn_pairs sql_s fn_s sql/fn sql_nojit_s ratio)"
for tau in $TAUS; do
  plan=$(psql_q -c "SET spotsigs.similarity_threshold = $tau" -c "EXPLAIN (COSTS OFF) $sql_join" | grep -E 'Custom Scan|Method|Nested Loop' | sed 's/^ *//' | paste -sd';')
  best "SET spotsigs.similarity_threshold = $tau; $sql_join"; sql_s=$s; sql_pairs=$val
  best "SELECT count(*) FROM spotsigs_join('base', 'id', 'sig', $tau)"; fn_s=$s; fn_pairs=$val
  best "SET jit = off; SET spotsigs.similarity_threshold = $tau; $sql_join"; nojit_s=$s
  log "$(printf '%-5s %10s %10s %10s %10s %7sx %12s %7sx' "$tau" "$sql_pairs" "$fn_pairs" "$sql_s" "$fn_s" "$(ratio "$sql_s" "$fn_s")" "$nojit_s" "$(ratio "$nojit_s" "$fn_s")")"
  log "      plan: $plan"
  if [[ $sql_pairs != "$fn_pairs" ]]; then log "      PAIRS DIFFER"; fi
  if [[ $first == 1 && $NESTLOOP == 1 ]]; then
    timed "SET spotsigs.similarity_threshold = $tau; SET spotsigs.enable_join = off; $sql_join"
    log "      with spotsigs.enable_join = off: $val pairs in $(ratio "$ms" 1000) s ($(ratio "$ms" "$(awk "BEGIN{print $fn_s*1000}")")x the function; plan: $(psql_q -c "SET spotsigs.similarity_threshold = $tau" -c "SET spotsigs.enable_join = off" -c "EXPLAIN (COSTS OFF) $sql_join" | grep -E 'Nested|Index|Seq' | sed 's/^ *//' | paste -sd';'))"
  fi
  first=0
done
log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
