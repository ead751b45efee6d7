#!/usr/bin/env bash
# The join on 10M scaled rows against 1M, side by side in one run, with the default
# spotsigs.join_memory_limit (or JOIN_LIMIT when set):
#  - the sequential read of each signature column (SELECT sum(length(sig)): the floor of a join);
#  - spotsigs_join at each tau of TAUS (default "0.9 0.5") on ROWS_SMALL (default 1,000,000) and
#    ROWS_BIG (default 10,000,000) rows: time, pairs, the passes it ran in, its accounted peak against the backend's
#    sampled resident memory (test/bench/join_memory.sh), and the growth big/small (goal at 0.9:
#    <= 12x).
#
#   PGHOST=... PGDATABASE=... test/bench/join_scale_bench.sh
#
# Runs against the cluster in the environment (the extension installable there; keep
# shared_buffers moderate: the join's own memory comes on top). When table scaled_big is missing
# it is built as join_bench.sh builds its corpus (textcorpus through test/bench/scale_corpus.cpp,
# VARIANT_SHARE 0.10, SEED 42, SCALE_MODE vocab), piped straight into COPY (10M rows are about
# 8.4 GB in the table; no intermediate file). Row r of scale_corpus's output depends only on the
# seed and r, so the first ROWS_SMALL rows of scaled_big are exactly the corpus scale_corpus
# builds for ROWS_SMALL: scaled_small is copied from them. With wal_level = minimal the COPY
# skips the WAL (the table is created in the same transaction). BUILD_ONLY=1 stops after the
# build. Writes OUT/results.txt (default build/join-scale-bench) and copies it over
# RESULTS/join_scale_results.txt (join_scale_fresh_results.txt with SCALE_MODE=fresh; RESULTS
# default test/bench/results; RESULTS= keeps it in OUT only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${ROWS_SMALL:=1000000}" "${ROWS_BIG:=10000000}" "${VARIANT_SHARE:=0.10}" "${SEED:=42}"
: "${SCALE_MODE:=vocab}" "${TAUS:=0.9 0.5}" "${OUT:=$repo/build/join-scale-bench}"
corpus=${CORPUS:-$repo/../shared/data/textcorpus}
psql_q() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }
mkdir -p "$OUT"
chmod 0777 "$OUT" 2>/dev/null || true
log() { echo "$*" | tee -a "$OUT/results.txt"; }
: > "$OUT/results.txt"

# shellcheck source=scaled_lib.sh
. "$here/scaled_lib.sh"
if [[ $(psql_q -c "SELECT to_regclass('scaled_big') IS NULL") == t ]]; then
  t0=$(date +%s)
  load_scaled scaled_big "$ROWS_BIG"
  psql_q -c "DROP TABLE IF EXISTS scaled_small" \
    -c "CREATE TABLE scaled_small AS SELECT id, sig FROM scaled_big WHERE id <= $ROWS_SMALL ORDER BY id" \
    -c "ALTER TABLE scaled_small ADD PRIMARY KEY (id)" -c "VACUUM ANALYZE scaled_small"
  log "built scaled_big ($ROWS_BIG rows) and scaled_small (its first $ROWS_SMALL) in $(( $(date +%s) - t0 )) s: $(cat "$OUT/scale.log")"
fi
[[ -n ${BUILD_ONLY:-} ]] && exit 0

settings="SELECT 1;"
[[ -n ${JOIN_LIMIT:-} ]] && settings="SET spotsigs.join_memory_limit = '$JOIN_LIMIT';"
# BIG_TIMEOUT (seconds, default none): statement_timeout of the joins on ROWS_BIG rows; a join cut
# off reports the passes it finished (their documents, pairs and accounted peaks).
big_settings=$settings
[[ -n ${BIG_TIMEOUT:-} ]] && big_settings="$settings SET statement_timeout = '${BIG_TIMEOUT}s';"
log "== join on $ROWS_BIG against $ROWS_SMALL scaled rows, $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for t in scaled_small scaled_big; do
  log "$t: $(psql_q -c "SELECT count(*) || ' rows, ' || pg_size_pretty(pg_total_relation_size('$t')) FROM $t")"
done
log "limit $(psql_q -c "LOAD 'spotsigs'" -c "$settings" -c 'SHOW spotsigs.join_memory_limit' | tail -1), work_mem $(psql_q -c 'SHOW work_mem')," \
    "shared_buffers $(psql_q -c 'SHOW shared_buffers'), max_threads $(psql_q -c "LOAD 'spotsigs'" -c 'SHOW spotsigs.max_threads')"

# Seconds of one sequential read of table $1's signature column.
seq_read() {
  local ms
  ms=$(psql_q -c '\timing on' -c "SELECT sum(length(sig)) FROM $1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
  awk "BEGIN{printf \"%.2f\", $ms / 1000}"
}
# count(*) only: the result rows are made and stored (the tuplestore spills past work_mem), but
# no checksum per row, which would cost more than the join once the pairs run into the hundreds
# of millions (join_limit_bench.sh checks that passes give the same pairs).
join_q() { echo "SELECT count(*) FROM spotsigs_join('$1', 'id', 'sig', $2)"; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }

for t in scaled_small scaled_big; do
  log "sequential read of $t.sig: $(seq_read $t) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
for tau in $TAUS; do
  s=$("$here/join_memory.sh" "$settings" "$(join_q scaled_small "$tau")" 2>&1) || true
  log "tau $tau, $ROWS_SMALL rows: $s"
  log "  load average $(cut -d' ' -f1-3 /proc/loadavg)"
  b=$(JOIN_MEMORY_PASSES=1 "$here/join_memory.sh" "$big_settings" "$(join_q scaled_big "$tau")" 2>&1) || true
  log "tau $tau, $ROWS_BIG rows: $b"
  log "  load average $(cut -d' ' -f1-3 /proc/loadavg)"
  ts=$(field elapsed_s "$s"); tb=$(field elapsed_s "$b")
  # Only joins that gave their count (not cut off by BIG_TIMEOUT, nor failed).
  if [[ -n $ts && -n $tb && -n $(field result "$s") && -n $(field result "$b") ]]; then
    log "  growth $ROWS_SMALL -> $ROWS_BIG rows at tau $tau: $(awk "BEGIN{printf \"%.1f\", $tb / $ts}")x$([[ $tau == 0.9 ]] && echo " (goal <= 12x)")"
  fi
done
for t in scaled_small scaled_big; do
  log "sequential read of $t.sig again: $(seq_read $t) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
results=${RESULTS-$repo/test/bench/results}
name=join_scale_results.txt
[[ $SCALE_MODE != vocab ]] && name=join_scale_${SCALE_MODE}_results.txt
[[ -n $results ]] && cp "$OUT/results.txt" "$results/$name"
exit 0
