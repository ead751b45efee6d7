#!/usr/bin/env bash
# What a new connection's first index search costs (issue 44, "the first search of a new
# connection is slow"): `sig % q` at the default threshold through the spotsigs index on the
# textcorpus (75,400 rows) and on the same corpus scaled to ROWS (default 1,000,000) rows with
# scale_corpus.cpp (scaled_lib.sh), cold (the first statement of a fresh connection) and warm
# (the same statement again in that connection), side by side in one run; and on t75kp, the
# 75,400 rows with PENDING (default 2,000) more rows in the index's pending list.
#
#   test/bench/cold_search_bench.sh [path/to/textcorpus]      (default: ../shared/data/textcorpus)
#
# For each table, NQ (default 60) queries sampled from the table (rows in hashint8(id) order with
# a non-empty signature) are first run twice in one connection, so that every page they read is
# in shared_buffers (the situation of a server whose other backends have been searching). Then,
# per query, two fresh connections each run:
#   cold:      the query, then the same query again (warm);
#   catalogs:  `sig % '{}'` (an empty query: loads the library, the catalog entries, the
#              relation and index descriptors, and plans the statement, but reads no list), then
#              the query: what is left of the cold cost once the connection-level work is done.
# Latencies are psql's \timing (client round trip over the Unix socket, planning included); the
# server's CPU time (user + system) and minor page faults of the statement come from
# log_statement_stats.
# Each table is measured under four server settings: huge_pages off and on, each without and with
# shared_preload_libraries = 'spotsigs' (+preload: the postmaster loads the library once and every
# backend inherits it). huge_pages=on needs enough free reserved huge pages (HugePages_Free minus
# HugePages_Rsvd in /proc/meminfo; reserve them as root, e.g. sysctl vm.nr_hugepages=1250 for the
# 2GB shared_buffers), else its rows are skipped with a line saying why; HUGE=off skips them.
#
# The cluster lives in OUT/cluster (default OUT=build/cold-bench) and is kept between runs: the
# tables are built once (the 1M rows take several minutes), REBUILD=1 builds them again. The
# server is started from PGBIN (or the PATH's pg_ctl) for the run and stopped after it.
# Results: OUT/results.txt, copied over RESULTS/cold_search_results.txt (RESULTS default
# test/bench/results; RESULTS= keeps them in OUT only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
corpus=${1:-$repo/../shared/data/textcorpus}
corpus=$(cd "$corpus" && pwd)
: "${ROWS:=1000000}" "${NQ:=60}" "${HUGE:=both}" "${REBUILD:=0}" "${SHARED_BUFFERS:=2GB}"
: "${VARIANT_SHARE:=0.10}" "${SEED:=42}" "${SCALE_MODE:=vocab}"
: "${MODE:=both}" "${NB:=76}" "${BREPS:=3}" "${BATCH_SEED:=7}"
: "${OUT:=$repo/build/cold-bench}"
bin=${PGBIN:-$(dirname "$(command -v pg_ctl)")}
export PATH=$bin:$PATH
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cluster=$OUT/cluster
as_pg=()
if [ "$(id -u)" -eq 0 ]; then as_pg=(runuser -u postgres --); fi
export PGHOST=$cluster PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
log() { echo "$*" | tee -a "$OUT/results.txt"; }
: >"$OUT/results.txt"
psql_q() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }

if [ ! -d "$cluster/data" ]; then
  mkdir -p "$cluster"
  [ ${#as_pg[@]} -eq 0 ] || chown postgres: "$cluster"
  "${as_pg[@]}" "$bin/initdb" -D "$cluster/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null
  REBUILD=1
fi
stop() { "${as_pg[@]}" "$bin/pg_ctl" -D "$cluster/data" -m fast stop >/dev/null 2>&1 || true; }
# start HUGE_PAGES PRELOAD: (re)starts the server with huge_pages = HUGE_PAGES (off or on) and
# shared_preload_libraries = PRELOAD ('' or spotsigs).
start() {
  stop
  "${as_pg[@]}" "$bin/pg_ctl" -D "$cluster/data" -l "$cluster/log" -w -o "-k $cluster -c listen_addresses='' \
    -c shared_buffers=$SHARED_BUFFERS -c huge_pages=$1 -c shared_preload_libraries='$2' \
    -c maintenance_work_mem=1GB -c max_wal_size=8GB -c synchronous_commit=off \
    -c max_parallel_workers_per_gather=0 -c spotsigs.max_threads=2" start >/dev/null
}
trap stop EXIT
start off ''

# The tables: t75k (the corpus itself: the scaled corpus's first 75,400 rows) and t1m (ROWS rows).
if [ "$REBUILD" = 1 ] || [[ $(psql_q -c "SELECT to_regclass('t1m_sig') IS NULL") == t ]]; then
  source "$here/scaled_lib.sh"
  psql_q -c "DROP TABLE IF EXISTS t75k, t1m"
  load_scaled t75k 75400
  load_scaled t1m "$ROWS"
  for t in t75k t1m; do
    psql_q -c "CREATE INDEX ${t}_sig ON $t USING spotsigs (sig)" -c "VACUUM ANALYZE $t"
  done
  psql_q -c "DROP TABLE IF EXISTS t75kp"
fi
# t75kp: t75k with PENDING more rows (default 2,000, from t1m) left in the index's pending list
# (autovacuum off, under the default pending_list_limit): every search reads the list.
if [[ $(psql_q -c "SELECT to_regclass('t75kp_sig') IS NULL") == t ]]; then
  psql_q -c "CREATE TABLE t75kp (id bigint PRIMARY KEY, sig spotsig) WITH (autovacuum_enabled = off)" \
    -c "INSERT INTO t75kp SELECT * FROM t75k" -c "CREATE INDEX t75kp_sig ON t75kp USING spotsigs (sig)" \
    -c "VACUUM ANALYZE t75kp" -c "INSERT INTO t75kp SELECT * FROM t1m WHERE id > 75400 AND id <= 75400 + ${PENDING:-2000}" \
    -c "ANALYZE t75kp"
fi

row='%-6s %-24s %8s %6s %6s %12s %6s %6s %8s %6s\n'
# awk rules collecting \timing's milliseconds (ms[]) and each statement's CPU ms (cpu[]) and minor
# faults (f[]) from log_statement_stats, in statement order.
stats='/s user, .* s system, .* s elapsed/ { cpu[++nc] = sprintf("%.3f", ($2 + $5) * 1000) }
  /page faults\/reclaims/ { split($2, a, "/"); f[++nf] = a[2] } /^Time:/ { ms[++nt] = $2 }'
# p50 FILE C: the p50 of column C of FILE (sorted numerically; the lower middle value for an even
# count).
p50() { awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
brow='%-5s %-24s %-14s %8s %7s %7s %6s %8s %7s %7s %6s\n'
# measure TABLE LABEL: prints one line of figures for TABLE.
measure() {
  local t=$1 label=$2 k q
  local qf=$OUT/queries_$t.txt
  psql_q -c "SELECT sig::text FROM $t WHERE length(sig) > 0 ORDER BY hashint8(id) LIMIT $NQ" >"$qf"
  # Every page the queries read into shared_buffers, twice over.
  { for k in 1 2; do sed "s/.*/SELECT count(*) FROM $t WHERE sig % '&';/" "$qf"; done; } | psql_q >/dev/null
  : >"$OUT/cold_$t.txt"
  : >"$OUT/cat_$t.txt"
  while IFS= read -r q; do
    # \timing prints "Time: x ms" (stdout) per timed statement, log_statement_stats a LOG per
    # statement (stderr) with its CPU time (user + system) and minor page faults; each kind is
    # taken in statement order. Lines of cold_T: cold ms, cpu ms, faults, then warm ms, cpu ms; of
    # cat_T: ms, cpu ms and faults of the query.
    PGOPTIONS="-c log_statement_stats=on -c client_min_messages=log" psql -X -q -v ON_ERROR_STOP=1 \
      -c '\timing on' -c "SELECT count(*) FROM $t WHERE sig % '$q'" -c "SELECT count(*) FROM $t WHERE sig % '$q'" 2>&1 |
      awk "$stats"' END { print ms[1], cpu[1], f[1], ms[2], cpu[2] }' >>"$OUT/cold_$t.txt"
    PGOPTIONS="-c log_statement_stats=on -c client_min_messages=log" psql -X -q -v ON_ERROR_STOP=1 \
      -c "SELECT count(*) FROM $t WHERE sig % '{}'" -c '\timing on' -c "SELECT count(*) FROM $t WHERE sig % '$q'" 2>&1 |
      awk "$stats"' END { print ms[1], cpu[2], f[2] }' >>"$OUT/cat_$t.txt"
  done <"$qf"
  printf "$row" "$t" "$label" "$(p50 "$OUT/cold_$t.txt" 1)" "$(p50 "$OUT/cold_$t.txt" 2)" \
    "$(p50 "$OUT/cold_$t.txt" 3)" "$(p50 "$OUT/cat_$t.txt" 1)" "$(p50 "$OUT/cat_$t.txt" 2)" \
    "$(p50 "$OUT/cat_$t.txt" 3)" "$(p50 "$OUT/cold_$t.txt" 4)" "$(p50 "$OUT/cold_$t.txt" 5)" | tee -a "$OUT/results.txt"
}

# run_batch T SF: runs OUT/batch_queries_T.txt.sql twice in a fresh connection and appends to SF
# one line: the total client ms, p50 ms per query, total server CPU ms and total minor faults of
# the first pass, then the same of the second; OUT/batchq_T.txt gets the first pass's per-query ms,
# cpu ms and faults.
run_batch() {
  local t=$1 sf=$2 qf=$OUT/batch_queries_$1.txt.sql
  { echo '\timing on'; cat "$qf" "$qf"; } |
    PGOPTIONS="-c log_statement_stats=on -c client_min_messages=log" psql -X -q -v ON_ERROR_STOP=1 2>&1 |
    awk -v n="$NB" -v per="$OUT/batchq_$t.txt" "$stats"'
      function p50(a, lo, hi,   i, j, k, x, v) {
        k = 0
        for (i = lo; i <= hi; i++) { x = a[i] + 0; for (j = ++k; j > 1 && v[j - 1] > x; j--) v[j] = v[j - 1]; v[j] = x }
        return v[int((k + 1) / 2)]
      }
      function sum(a, lo, hi,   i, s) { s = 0; for (i = lo; i <= hi; i++) s += a[i]; return s }
      END {
        printf "%.1f %.3f %.1f %d %.1f %.3f %.1f %d\n", sum(ms, 1, n), p50(ms, 1, n), sum(cpu, 1, n), sum(f, 1, n),
          sum(ms, n + 1, 2 * n), p50(ms, n + 1, 2 * n), sum(cpu, n + 1, 2 * n), sum(f, n + 1, 2 * n)
        printf "" >per; for (i = 1; i <= n; i++) print ms[i], cpu[i], f[i] >>per
      }' >>"$sf"
}
# batch TABLE H PRE: two lines of figures for a batch of NB distinct queries (rows in
# hashint8(id + BATCH_SEED) order with a non-empty signature) run one after another in a fresh
# connection (cold), then the same NB again in that connection (warm), under huge_pages = H and
# shared_preload_libraries = PRE. "restarted": the server has just been (re)started, so the index
# pages are read into shared_buffers (from the kernel's page cache, which holds them after the
# first run) by the cold pass. "buffers warm": two runs of the batch in another connection have put
# every page it reads in shared_buffers first. Each figure is the median over BREPS fresh
# connections (one restart before each for "restarted").
batch() {
  local t=$1 h=$2 pre=$3 r
  local label="huge_pages=$h${pre:+ +preload}" qf=$OUT/batch_queries_$t.txt
  psql_q -c "SELECT sig::text FROM $t WHERE length(sig) > 0 ORDER BY hashint8(id + $BATCH_SEED) LIMIT $NB" >"$qf"
  sed "s/.*/SELECT count(*) FROM $t WHERE sig % '&';/" "$qf" >"$qf.sql"
  : >"$OUT/batch_restarted_$t.txt"
  for ((r = 0; r < BREPS; r++)); do
    start "$h" "$pre"
    run_batch "$t" "$OUT/batch_restarted_$t.txt"
  done
  { cat "$qf.sql" "$qf.sql"; } | psql_q >/dev/null
  : >"$OUT/batch_warm_$t.txt"
  for ((r = 0; r < BREPS; r++)); do run_batch "$t" "$OUT/batch_warm_$t.txt"; done
  local c kind
  for kind in restarted warm; do
    local cols=()
    for c in 1 2 3 4 5 6 7 8; do cols+=("$(p50 "$OUT/batch_${kind}_$t.txt" "$c")"); done
    printf "$brow" "$t" "$label" "$kind" "${cols[@]}" | tee -a "$OUT/results.txt"
  done
}

threshold=$(psql_q -c "LOAD 'spotsigs'" -c "SHOW spotsigs.similarity_threshold")
log "cold_search_bench: sig % q at the default threshold $threshold, $NQ queries per table, shared_buffers $SHARED_BUFFERS"
log "rows: t75k $(psql_q -c 'SELECT count(*) FROM t75k'), t1m $(psql_q -c 'SELECT count(*) FROM t1m')," \
  "t75kp $(psql_q -c 'SELECT count(*) FROM t75kp') ($(psql_q -c "SELECT sum(rows) FROM spotsigs_index_stats('t75kp_sig') WHERE segment = -1") pending);" \
  "index MB: t75k $(psql_q -c "SELECT pg_relation_size('t75k_sig') >> 20"), t1m $(psql_q -c "SELECT pg_relation_size('t1m_sig') >> 20")"
free_huge=$(awk '/HugePages_Free/ { f = $2 } /HugePages_Rsvd/ { r = $2 } END { print f - r }' /proc/meminfo)
size_kb=$(numfmt --from=iec "${SHARED_BUFFERS%B}" | awk '{ print int($1 / 1024) }')
need=$(((size_kb + 2047) / 2048 + 64))
huges=(off)
if [ "$HUGE" = both ]; then
  if [ "$free_huge" -ge "$need" ]; then huges+=(on); else
    log "huge_pages=on not measured: $free_huge free unreserved huge pages, about $need needed (sysctl vm.nr_hugepages)"
  fi
fi
settings=()
for h in "${huges[@]}"; do for pre in '' spotsigs; do settings+=("$h:$pre"); done; done
if [ "$MODE" != batch ]; then
  log "p50 over the queries: ms = client round trip, cpu = the server's CPU ms for the statement (user +"
  log "system: less disturbed by other load on the machine), faults = its minor page faults"
  printf "$row" table server "cold ms" cpu faults "catalogs ms" cpu faults "warm ms" cpu | tee -a "$OUT/results.txt"
  for hp in "${settings[@]}"; do
    h=${hp%%:*} pre=${hp#*:}
    start "$h" "$pre"
    for t in t75k t75kp t1m; do measure "$t" "huge_pages=$h${pre:+ +preload}"; done
  done
fi
if [ "$MODE" != single ]; then
  log ""
  log "A batch of $NB distinct queries in a fresh connection (cold), then the same $NB again in it (warm);"
  log "median over $BREPS connections of: total = the batch's sum of client ms, p50 = ms per query, cpu = the"
  log "server's CPU ms summed over the batch, faults = minor page faults summed over the batch"
  printf "$brow" table server shared_buffers "cold tot" p50 cpu faults "warm tot" p50 cpu faults | tee -a "$OUT/results.txt"
  for hp in "${settings[@]}"; do
    for t in t75k t1m; do batch "$t" "${hp%%:*}" "${hp#*:}"; done
  done
fi
results=${RESULTS-$repo/test/bench/results}
if [[ -n $results ]]; then cp "$OUT/results.txt" "$results/cold_search_results.txt"; fi
