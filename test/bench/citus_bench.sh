#!/usr/bin/env bash
# Benchmark of spotsigs on Citus (issue 37): ROWS (default 1,000,000) documents of the scaled
# textcorpus (test/bench/scale_corpus.cpp, as in join_bench.sh) on one coordinator and WORKERS
# (default 3) workers on this machine, distributed by id over SHARDS (default 12) shards, next to
# a plain local copy on the coordinator. For each tau in TAUS (default "0.9 0.6") it runs
# spotsigs_join on the local copy and on the distributed table and reports: whether the pairs
# are the same; each worker's rows, fetched rows, candidates, pairs and bytes (from its log) and
# their balance (most/least over the workers); the bytes moved between nodes against the table's
# size; both times (on one machine, so no speed-up is expected: the workers share its cores).
# Before the joins it times one shard fetched by one worker from another both ways, side by
# side: as the tasks fetch it (packed, the signatures in binary form) and as JSON text.
#
#   test/bench/citus_bench.sh [path/to/textcorpus]     (default: ../shared/data/textcorpus)
#
# Needs: make install and test/citus/build-citus done (for the PostgreSQL first on PATH or in
# PGBIN), g++. Writes results.txt to OUT (default build/citus-bench). Run as root or postgres.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
corpus=${1:-}
if [[ -z $corpus ]]; then
  for d in "$repo/../shared/data/textcorpus" "$repo/../../shared/data/textcorpus"; do
    [[ -r $d/docs.tsv.gz ]] && corpus=$d && break
  done
fi
[[ -r $corpus/docs.tsv.gz ]] || { echo "textcorpus not found (pass its directory)" >&2; exit 1; }
: "${ROWS:=1000000}" "${WORKERS:=3}" "${SHARDS:=12}" "${TAUS:=0.9 0.6}" "${OUT:=$repo/build/citus-bench}"
bin=${PGBIN:-$(dirname "$(command -v pg_config)")}
[[ -f $("$bin/pg_config" --pkglibdir)/citus.so ]] || { echo "Citus is not installed: run test/citus/build-citus" >&2; exit 1; }

mkdir -p "$OUT"
g++ -std=c++17 -O2 -o "$OUT/scale_corpus" "$here/scale_corpus.cpp"
dir=$(mktemp -d /tmp/spotsigs-citus-bench.XXXXXX)
chmod 755 "$dir"
as_pg=()
if [[ $(id -u) -eq 0 ]]; then chown postgres: "$dir"; chmod 0777 "$OUT"; as_pg=(runuser -u postgres --); fi
base_port=$((20000 + RANDOM % 20000))
nodes=$((WORKERS + 1))
stop_all() {
  for ((i = 0; i < nodes; i++)); do
    "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/n$i" -m immediate stop >/dev/null 2>&1 || true
  done
  rm -rf "$dir"
}
trap stop_all EXIT
for ((i = 0; i < nodes; i++)); do
  "${as_pg[@]}" "$bin/initdb" -D "$dir/n$i" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null
  cat >> "$dir/n$i/postgresql.conf" <<CONF
port = $((base_port + i))
listen_addresses = 'localhost'
unix_socket_directories = '$dir'
shared_preload_libraries = 'citus'
citus.enable_statistics_collection = off
fsync = off
synchronous_commit = off
shared_buffers = 512MB
max_connections = 100
max_wal_size = 8GB
spotsigs.max_threads = 2
spotsigs.join_memory_limit = 8GB
max_parallel_workers_per_gather = 0
CONF
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/n$i" -l "$dir/n$i.log" -w start >/dev/null
done
q() { local n=$1; shift; "$bin/psql" -X -v ON_ERROR_STOP=1 -qAt -h "$dir" -p $((base_port + n)) -U postgres -d postgres "$@"; }
log() { echo "$*" | tee -a "$OUT/results.txt"; }
: > "$OUT/results.txt"
for ((i = 0; i < nodes; i++)); do q $i -c 'CREATE EXTENSION citus'; done
q 0 -c "SELECT citus_set_coordinator_host('localhost', $base_port)" >/dev/null
for ((i = 1; i < nodes; i++)); do q 0 -c "SELECT citus_add_node('localhost', $((base_port + i)))" >/dev/null; done
q 0 -c 'CREATE EXTENSION spotsigs'

log "== spotsigs on Citus, $(date -u +%FT%TZ), $(nproc) cores, 1 coordinator + $WORKERS workers on this machine"
log "corpus: $corpus; ROWS=$ROWS SHARDS=$SHARDS"
q 0 -c "CREATE TABLE docs (id bigint PRIMARY KEY, source text, title text, body text)"
q 0 -c "\\copy docs from program 'zcat \"$corpus/docs.tsv.gz\"'"
q 0 -c "\\copy (SELECT id, spotsigs(title || E'\\n' || body) FROM docs ORDER BY id) to '$OUT/base.tsv'"
q 0 -c "DROP TABLE docs"
"$OUT/scale_corpus" "$ROWS" 0.10 42 vocab < "$OUT/base.tsv" > "$OUT/scaled.tsv" 2> "$OUT/scale_summary.txt"
log "$(cat "$OUT/scale_summary.txt")"
q 0 -c "CREATE TABLE scaled_local (id bigint PRIMARY KEY, sig spotsig)"
q 0 -c "\\copy scaled_local from '$OUT/scaled.tsv'"
q 0 -c "SET citus.shard_count = $SHARDS; CREATE TABLE scaled (id bigint PRIMARY KEY, sig spotsig); SELECT create_distributed_table('scaled', 'id')" >/dev/null
t0=$(date +%s.%N)
q 0 -c "\\copy scaled from '$OUT/scaled.tsv'"
load_s=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
rm -f "$OUT/scaled.tsv" "$OUT/base.tsv"
q 0 -c "VACUUM ANALYZE scaled_local" -c "VACUUM ANALYZE scaled"
size=$(q 0 -c "SELECT pg_total_relation_size('scaled_local')")
log "table: $(q 0 -c "SELECT count(*) FROM scaled") rows, $((size >> 20)) MB on one node; COPY into the distributed table $load_s s"
log "rows per worker: $(q 0 -c "SELECT string_agg(n::text, ' ' ORDER BY p) FROM (SELECT nodeport p, sum(result::bigint) n FROM run_command_on_placements('scaled', 'SELECT count(*) FROM %s') GROUP BY nodeport) c")"

# Seconds of one statement (server-side, psql's \timing) and its last output line.
timed_on() {
  local n=$1 out
  shift
  out=$(q "$n" -c '\timing on' "$@")
  ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tail -1)
  s=$(awk "BEGIN{printf \"%.2f\", $ms/1000}")
  val=$(grep -v '^Time:' <<<"$out" | tail -1 || true)
}
timed() { timed_on 0 -c "$1"; }

# One shard of worker 2 fetched by worker 1 into a temporary table, both ways.
shard=$(q 0 -c "SELECT shard_name('scaled', shardid, false) FROM citus_shards WHERE table_name = 'scaled'::regclass AND nodeport = $((base_port + 2)) ORDER BY shardid LIMIT 1")
fetch_into() {  # $1: the remote command (a literal), $2: how to read its result w.result
  timed_on 1 -c "SET citus.enable_ddl_propagation = off" -c "CREATE TEMP TABLE f (id bigint, sig spotsig)" \
    -c "WITH w AS (SELECT result FROM master_run_on_worker(ARRAY['localhost'], ARRAY[$((base_port + 2))], ARRAY[$1], false)),
             ins AS (INSERT INTO f SELECT x.* FROM w, $2 RETURNING 1)
        SELECT (SELECT count(*) FROM ins) || ' rows, ' || (SELECT octet_length(result) FROM w) || ' bytes'"
}
fetch_into "format('SELECT spotsigs_citus_pack(%L, %L, %L)', '$shard', 'id', 'sig')" "spotsigs_citus_unpack(w.result) x"
packed_s=$s packed=$val
fetch_into "format('SELECT coalesce(json_agg(json_build_array(id, sig::text)), ''[]'') FROM %s WHERE sig IS NOT NULL', '$shard')" \
  "LATERAL (SELECT (e ->> 0)::bigint, (e ->> 1)::spotsig FROM json_array_elements(w.result::json) e) x"
json_s=$s json=$val
log "one shard ($shard) fetched by worker 1 from worker 2: packed binary $packed in $packed_s s; JSON text $json in $json_s s ($(awk "BEGIN{printf \"%.1f\", $json_s/$packed_s}")x the time)"

sum="SELECT count(*) || ' ' || md5(coalesce(string_agg(id1 || ',' || id2 || ',' || similarity, ';' ORDER BY id1, id2), ''))"
for tau in $TAUS; do
  log ""
  log "-- tau $tau"
  timed "$sum FROM spotsigs_join('scaled_local', 'id', 'sig', $tau)"; one_s=$s; one=$val
  # The distributed call; each task's counts are the last lines with its pid in each worker's log.
  for ((i = 1; i < nodes; i++)); do wc -l < "$dir/n$i.log" > "$dir/mark$i"; done
  timed "$sum FROM spotsigs_join('scaled', 'id', 'sig', $tau)"; dist_s=$s; dist=$val
  log "one node: $one_s s; distributed: $dist_s s; pairs: one node ${one%% *}, distributed ${dist%% *}, $([[ $one == "$dist" ]] && echo same || echo DIFFERENT)"
  moved=0
  : > "$dir/tasks"
  for ((i = 1; i < nodes; i++)); do
    line=$(tail -n +$(($(cat "$dir/mark$i") + 1)) "$dir/n$i.log" | grep -o 'spotsigs_citus_task: .*' | tail -1)
    log "worker $i: ${line#spotsigs_citus_task: }"
    # local rows, fetched rows, fetched bytes, candidates, pairs, returned bytes
    sed -n 's/^spotsigs_citus_task: \([0-9]*\) local rows .*, \([0-9]*\) rows (\([0-9]*\) bytes) fetched .*, \([0-9]*\) candidates, \([0-9]*\) pairs (\([0-9]*\) bytes returned).*/\1 \2 \3 \4 \5 \6/p' <<<"$line" >> "$dir/tasks"
  done
  moved=$(awk '{m += $3 + $6} END {print m}' "$dir/tasks")
  log "per worker, most/least: $(awk '
    function upd(k, v) { if (!(k in lo) || v < lo[k]) lo[k] = v; if (v > hi[k]) hi[k] = v }
    { upd("own rows", $1); upd("rows handled (own + fetched)", $1 + $2); upd("candidates", $4); upd("pairs", $5) }
    END { printf "own rows %.2fx, rows handled (own + fetched) %.2fx, candidates %.2fx, pairs %.2fx",
          hi["own rows"] / lo["own rows"], hi["rows handled (own + fetched)"] / lo["rows handled (own + fetched)"],
          hi["candidates"] / lo["candidates"], hi["pairs"] / lo["pairs"] }' "$dir/tasks")"
  log "moved between nodes: $((moved >> 20)) MB (rows fetched + pairs returned), $(awk "BEGIN{printf \"%.2f\", $moved/$size}")x the table's size on one node"
done
