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
# index probes) is timed once at the first tau, and with PASS_LIMIT (default 32MB; empty: not
# run) both joins run in passes under that spotsigs.join_memory_limit (their DEBUG1 pass counts
# shown). Then, on SCALED_ROWS (default 1,000,000; 0: not
# run) rows of the textcorpus scaled as join_scale_bench.sh scales it (scaled_lib.sh; the next
# BATCH_ROWS, default 10,000, rows of the same scaling are the batch), once each:
#   the SQL self join and spotsigs_join at each tau;
#   SELECT count(*) FROM batch r WHERE NOT EXISTS (SELECT 1 FROM scaled s WHERE s.sig % r.sig)
#   (the SQL anti join: the batch's rows with no near duplicate in the archive) beside the same
#   count from spotsigs_join_rs('batch', ..., 'scaled', ...), at each tau.
# spotsigs.max_threads is 2. Results go to
# OUT/sql_join_results.txt (default build/sql-join-bench) and, when the run completes, to
# test/bench/results/sql_join_results.txt (RESULTS= keeps them in OUT only). Not run by CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
corpus=${1:-$repo/../shared/data/textcorpus}
corpus=$(cd "$corpus" && pwd)
: "${TAUS:=0.8 0.5}" "${REPEAT:=2}" "${NESTLOOP:=1}" "${OUT:=$repo/build/sql-join-bench}"
: "${SCALED_ROWS:=1000000}" "${BATCH_ROWS:=10000}" "${PASS_LIMIT=32MB}"
export TAUS REPEAT NESTLOOP OUT SCALED_ROWS BATCH_ROWS PASS_LIMIT

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
  if [[ -n $PASS_LIMIT ]]; then
    lim="SET spotsigs.join_memory_limit = '$PASS_LIMIT';"
    best "$lim SET spotsigs.similarity_threshold = $tau; $sql_join"; sql_s=$s; sql_pairs=$val
    best "$lim SELECT count(*) FROM spotsigs_join('base', 'id', 'sig', $tau)"; fn_s=$s; fn_pairs=$val
    sql_passes=$(psql_q -c "$lim SET client_min_messages = debug1; SET spotsigs.similarity_threshold = $tau; $sql_join" 2>&1 | sed -n 's/.*SpotsigsJoin: \([0-9]*\) passes.*/\1/p')
    fn_passes=$(psql_q -c "$lim SET client_min_messages = debug1; SELECT count(*) FROM spotsigs_join('base', 'id', 'sig', $tau)" 2>&1 | sed -n 's/.*spotsigs_join: \([0-9]*\) passes.*/\1/p')
    log "      under $PASS_LIMIT: sql $sql_pairs pairs in $sql_s s (${sql_passes:-1} passes), function $fn_pairs in $fn_s s (${fn_passes:-1} passes): $(ratio "$sql_s" "$fn_s")x"
    if [[ $sql_pairs != "$fn_pairs" ]]; then log "      PAIRS DIFFER"; fi
  fi
  first=0
done

if ((SCALED_ROWS > 0)); then
  VARIANT_SHARE=0.10 SEED=42 SCALE_MODE=vocab
  # shellcheck source=scaled_lib.sh
  . "$here/scaled_lib.sh"
  # The base documents' signatures are base's (the same extraction): load_scaled reuses them.
  psql_q -c "CREATE TABLE corpus_base AS SELECT id, sig FROM base"
  t0=$(date +%s)
  load_scaled scaled $((SCALED_ROWS + BATCH_ROWS))
  psql_q -c "CREATE TABLE batch AS SELECT id, sig FROM scaled WHERE id > $SCALED_ROWS" \
    -c "DELETE FROM scaled WHERE id > $SCALED_ROWS" -c "ALTER TABLE batch ADD PRIMARY KEY (id)" \
    -c "VACUUM ANALYZE scaled" -c "VACUUM ANALYZE batch"
  log ""
  log "scaled: $(psql_q -c "SELECT count(*) || ' rows, ' || pg_size_pretty(pg_total_relation_size('scaled')) FROM scaled"), batch: $(psql_q -c "SELECT count(*) FROM batch") rows, built in $(($(date +%s) - t0)) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  psql_q -c "SELECT sum(length(sig)) FROM scaled" >/dev/null   # warm the cache
  scaled_join="SELECT count(*) FROM scaled a JOIN scaled b ON a.sig % b.sig AND a.id < b.id"
  anti_sql="SELECT count(*) FROM batch r WHERE NOT EXISTS (SELECT 1 FROM scaled s WHERE s.sig % r.sig)"
  log "$(printf '%-5s %-10s %10s %10s %10s %10s %8s' tau join sql_rows fn_rows sql_s fn_s sql/fn)"
  for tau in $TAUS; do
    timed "SET spotsigs.similarity_threshold = $tau; $scaled_join"; sql_s=$(ratio "$ms" 1000); sql_n=$val
    timed "SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', $tau)"; fn_s=$(ratio "$ms" 1000); fn_n=$val
    log "$(printf '%-5s %-10s %10s %10s %10s %10s %7sx' "$tau" self "$sql_n" "$fn_n" "$sql_s" "$fn_s" "$(ratio "$sql_s" "$fn_s")")"
    if [[ $sql_n != "$fn_n" ]]; then log "      ROWS DIFFER"; fi
    timed "SET spotsigs.similarity_threshold = $tau; $anti_sql"; sql_s=$(ratio "$ms" 1000); sql_n=$val
    timed "SELECT count(*) FROM batch r WHERE NOT EXISTS (SELECT 1 FROM spotsigs_join_rs('batch', 'id', 'sig', 'scaled', 'id', 'sig', $tau) j WHERE j.r_id = r.id)"
    fn_s=$(ratio "$ms" 1000); fn_n=$val
    log "$(printf '%-5s %-10s %10s %10s %10s %10s %7sx' "$tau" anti "$sql_n" "$fn_n" "$sql_s" "$fn_s" "$(ratio "$sql_s" "$fn_s")")"
    if [[ $sql_n != "$fn_n" ]]; then log "      ROWS DIFFER"; fi
    log "      plans: $(psql_q -c "SET spotsigs.similarity_threshold = $tau" -c "EXPLAIN (COSTS OFF) $scaled_join" | grep -E 'Custom Scan|Method|Nested Loop' | sed 's/^ *//' | paste -sd';') | $(psql_q -c "SET spotsigs.similarity_threshold = $tau" -c "EXPLAIN (COSTS OFF) $anti_sql" | grep -E 'Custom Scan|Method|Nested Loop|Anti' | sed 's/^ *//' | paste -sd';')"
  done
fi
log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
