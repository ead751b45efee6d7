#!/usr/bin/env bash
# Benchmark of spotsigs on Citus (issues 37, 46): ROWS (default 1,000,000) documents of the
# scaled textcorpus (test/bench/scaled_lib.sh, as join_bench.sh builds them: VARIANT_SHARE, SEED,
# SCALE_MODE) on one coordinator and WORKERS (default 3) workers on this machine, distributed by
# id over SHARDS (default 12) shards, next to a plain local copy on the coordinator. For each
# entry of TAUS (default "0.9 0.5 default"; "default" is the default call, the content measure,
# after spotsigs_analyze of both tables) it runs spotsigs_join on the local copy and on the
# distributed table; by the plain measure (a tau) twice on the distributed table in the same run,
# with the pair split and with the length split (spotsigs.citus_split = pairs, then length: the
# superuser setting for tests and benchmarks; the default call has the pair split only). For each
# distributed call it reports: its time and its ratio to one node's, with the load average before
# and after; which split ran (the coordinator's log); whether the pairs are one node's; each
# worker's rows, fetched rows and bytes, candidates, pairs and returned bytes (from its log) and
# their balance (most/least over the workers); the bytes moved between nodes against the table's
# size (on one machine, so no speed-up is expected: the workers share its cores). Then a line per
# tau with one node's time, both splits' times and ratios, and the length split's time over the
# pair split's. SPLITS (default "pairs length") sets the order of the two, e.g. "length pairs" to
# see what the order (a warmer cache, a changing load) does to the comparison. Each join is timed
# as the statement that stores its pairs in a temporary table (CREATE TEMP TABLE AS: what a caller
# who keeps the pairs pays); their count and digest, which say whether they are one node's, are
# computed afterwards, untimed (sorting and hashing a million pairs takes seconds on either side).
# RS_TAUS (default none; e.g. "0.8 default") adds the R-S join of a new batch against the archive:
# the rows with id % 10 = 0 (the batch) against the others (the archive), both distributed
# (colocated) beside their local copies, spotsigs_join_rs at each entry ("default": no threshold,
# the archive's stored template, after spotsigs_analyze of both archives); TAUS="" skips the
# self-joins.
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
: "${ROWS:=1000000}" "${WORKERS:=3}" "${SHARDS:=12}" "${TAUS=0.9 0.5 default}" "${RS_TAUS:=}" "${VARIANT_SHARE:=0.10}" "${SEED:=42}" "${SCALE_MODE:=vocab}" "${SPLITS:=pairs length}" "${OUT:=$repo/build/citus-bench}"
bin=${PGBIN:-$(dirname "$(command -v pg_config)")}
[[ -f $("$bin/pg_config" --pkglibdir)/citus.so ]] || { echo "Citus is not installed: run test/citus/build-citus" >&2; exit 1; }

mkdir -p "$OUT"
g++ -std=c++17 -O2 -o "$OUT/scale_corpus" "$here/scale_corpus.cpp"
# KEEP=DIR builds the cluster in DIR (new or empty) on ports 5600 and up and leaves it running
# afterwards, for profiling and further calls (psql -h DIR -p 5600 -U postgres).
if [[ -n ${KEEP:-} ]]; then
  dir=$KEEP
  mkdir -p "$dir"
else
  dir=$(mktemp -d /tmp/spotsigs-citus-bench.XXXXXX)
fi
chmod 755 "$dir"
as_pg=()
if [[ $(id -u) -eq 0 ]]; then chown postgres: "$dir"; chmod 0777 "$OUT"; as_pg=(runuser -u postgres --); fi
base_port=$((20000 + RANDOM % 20000))
[[ -z ${KEEP:-} ]] || base_port=5600
nodes=$((WORKERS + 1))
stop_all() {
  for ((i = 0; i < nodes; i++)); do
    "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/n$i" -m immediate stop >/dev/null 2>&1 || true
  done
  rm -rf "$dir"
}
[[ -n ${KEEP:-} ]] || trap stop_all EXIT
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
log "corpus: $corpus; ROWS=$ROWS SHARDS=$SHARDS SCALE_MODE=$SCALE_MODE TAUS='$TAUS' SPLITS='$SPLITS' RS_TAUS='$RS_TAUS'"
psql_q() { q 0 "$@"; }
source "$here/scaled_lib.sh"
t0=$(date +%s.%N)
load_scaled scaled_local "$ROWS"
log "$(cat "$OUT/scale.log")"
log "built the scaled rows on one node in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s"
q 0 -c "SET citus.shard_count = $SHARDS; CREATE TABLE scaled (id bigint PRIMARY KEY, sig spotsig); SELECT create_distributed_table('scaled', 'id')" >/dev/null
t0=$(date +%s.%N)
q 0 -c "INSERT INTO scaled SELECT id, sig FROM scaled_local"
load_s=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
q 0 -c "VACUUM ANALYZE scaled_local" -c "VACUUM ANALYZE scaled"
size=$(q 0 -c "SELECT pg_total_relation_size('scaled_local')")
log "table: $(q 0 -c "SELECT count(*) FROM scaled") rows, $((size >> 20)) MB on one node; INSERT INTO the distributed table (from the local copy) $load_s s"
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
# A join's seconds: the statement that stores its pairs in a temporary table (what a caller who
# keeps them pays), timed alone; then, untimed in the same session, the pairs' count and digest
# ($sum) in val. Options before the call (e.g. a SET) come as further arguments.
timed_pairs() {
  local n=$1 call=$2
  shift 2
  timed_on "$n" "$@" -c '\timing on' -c "CREATE TEMP TABLE bench_pairs AS SELECT * FROM $call" -c '\timing off' \
    -c "$sum FROM bench_pairs"
}

sum="SELECT count(*) || ' ' || md5(coalesce(string_agg(id1 || ',' || id2 || ',' || similarity, ';' ORDER BY id1, id2), ''))"
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
declare -A times ratios same loads
# One distributed call with spotsigs.citus_split = $1 (auto, pairs, length) and the threshold
# argument $2, beside one node's $one and $one_s: its time, ratio, load averages, whether its
# pairs are one node's, which split ran (the coordinator's log), and each worker's task.
distributed() {
  local split=$1 args=$2 la1 la2 ran
  # Each task's counts are the last lines with its pid in each worker's log.
  for ((i = 0; i < nodes; i++)); do wc -l < "$dir/n$i.log" > "$dir/mark$i"; done
  la1=$(loadavg)
  timed_pairs 0 "spotsigs_join('scaled', 'id', 'sig'$args)" -c "SET spotsigs.citus_split = $split"; dist_s=$s; dist=$val
  la2=$(loadavg)
  times[$split]=$dist_s
  ratios[$split]=$(awk "BEGIN{printf \"%.2f\", $dist_s/$one_s}")
  same[$split]=$([[ $one == "$dist" ]] && echo same || echo DIFFERENT)
  loads[$split]="$la1 -> $la2"
  local coord_log
  coord_log=$(tail -n +$(($(cat "$dir/mark0") + 1)) "$dir/n0.log")
  ran=$(grep -q 'spotsigs_citus_join: length ranges' <<<"$coord_log" && echo "length split" || echo "pair split")
  log "distributed, spotsigs.citus_split = $split ($ran ran): $dist_s s (load average before: $la1; after: $la2), ${ratios[$split]}x one node; pairs: one node ${one%% *}, distributed ${dist%% *}, ${same[$split]}"
  # The coordinator's own share: exporting the rows, running the tasks, reading their pairs.
  log "coordinator: $(grep -o 'spotsigs_citus_[a-z]*: .*' <<<"$coord_log" | paste -sd ';' | sed 's/;/; /g')"
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
    function r(k) { return lo[k] > 0 ? sprintf("%.2fx", hi[k] / lo[k]) : "-" }
    { upd("own", $1); upd("handled", $1 + $2); upd("candidates", $4); upd("pairs", $5) }
    END { printf "own rows %s, rows handled (own + fetched) %s, candidates %s, pairs %s",
          r("own"), r("handled"), r("candidates"), r("pairs") }' "$dir/tasks")"
  log "moved between nodes: $((moved >> 20)) MB (rows fetched + pairs returned), $(awk "BEGIN{printf \"%.2f\", $moved/$size}")x the table's size on one node"
}

# set_args TAU LOCAL DISTRIBUTED WHAT: the threshold argument of a call at TAU in args (none for
# "default": the content measure then reads the template each side stores, so both tables are
# analyzed first and the times logged after WHAT).
set_args() {
  if [[ $1 == default ]]; then
    args=""
    timed "SELECT spotsigs_analyze('$2', 'sig', 'id') IS NOT NULL"; a1=$s
    timed "SELECT spotsigs_analyze('$3', 'sig', 'id') IS NOT NULL"; a2=$s
    log "$4; spotsigs_analyze: one node $a1 s, distributed $a2 s"
  else
    args=", $1"
  fi
}

for tau in $TAUS; do
  log ""
  set_args "$tau" scaled_local scaled "-- the default call (content measure)"
  if [[ $tau != default ]]; then log "-- tau $tau"; fi
  times=() ratios=() same=() loads=()
  la0=$(loadavg)
  timed_pairs 0 "spotsigs_join('scaled_local', 'id', 'sig'$args)"; one_s=$s; one=$val
  log "one node: $one_s s (load average before: $la0), ${one%% *} pairs"
  # The plain measure: the old pair split and the length split one after the other, forced by
  # spotsigs.citus_split (superuser, for tests and benchmarks); the default call has the pair
  # split only.
  if [[ $tau == default ]]; then splits="auto"; else splits=$SPLITS; fi
  for split in $splits; do
    distributed "$split" "$args"
  done
  if [[ $tau != default && -n ${times[pairs]:-} && -n ${times[length]:-} ]]; then
    log "tau $tau: one node $one_s s; pair split ${times[pairs]} s (${ratios[pairs]}x, pairs ${same[pairs]}); length split ${times[length]} s (${ratios[length]}x, pairs ${same[length]}); length/pair $(awk "BEGIN{printf \"%.2f\", ${times[length]}/${times[pairs]}}"); load average ${loads[pairs]} / ${loads[length]}"
  fi
done

if [[ -n $RS_TAUS ]]; then
  log ""
  q 0 -c "CREATE TABLE batch_local AS SELECT id, sig FROM scaled_local WHERE id % 10 = 0" \
    -c "CREATE TABLE archive_local AS SELECT id, sig FROM scaled_local WHERE id % 10 <> 0" \
    -c "SET citus.shard_count = $SHARDS" \
    -c "CREATE TABLE archive (id bigint PRIMARY KEY, sig spotsig)" -c "SELECT create_distributed_table('archive', 'id')" \
    -c "CREATE TABLE batch (id bigint PRIMARY KEY, sig spotsig)" -c "SELECT create_distributed_table('batch', 'id', colocate_with => 'archive')" \
    -c "INSERT INTO archive SELECT * FROM archive_local" -c "INSERT INTO batch SELECT * FROM batch_local" \
    -c "VACUUM ANALYZE batch_local" -c "VACUUM ANALYZE archive_local" -c "VACUUM ANALYZE archive" -c "VACUUM ANALYZE batch" >/dev/null
  log "-- R-S: batch $(q 0 -c 'SELECT count(*) FROM batch') rows against archive $(q 0 -c 'SELECT count(*) FROM archive') rows"
  for tau in $RS_TAUS; do
    set_args "$tau" archive_local archive "R-S, no threshold (the archive's stored template), the archive analyzed"
    la0=$(loadavg)
    timed_pairs 0 "spotsigs_join_rs('batch_local', 'id', 'sig', 'archive_local', 'id', 'sig'$args) j(id1, id2, similarity)"; one_s=$s; one=$val
    la1=$(loadavg)
    timed_pairs 0 "spotsigs_join_rs('batch', 'id', 'sig', 'archive', 'id', 'sig'$args) j(id1, id2, similarity)"; dist_s=$s; dist=$val
    log "R-S at ${tau}: one node $one_s s, distributed $dist_s s ($(awk "BEGIN{printf \"%.2f\", $dist_s/$one_s}")x); pairs: one node ${one%% *}, distributed ${dist%% *}, $([[ $one == "$dist" ]] && echo same || echo DIFFERENT); load average $la0 / $la1 / $(loadavg)"
  done
fi
