#!/usr/bin/env bash
# The default call (the content measure) against the plain join at 0.4, side by side in one run:
#  - on textcorpus (table corpus_base, the 75,400 documents' signatures, as scaled_lib.sh makes it);
#  - for each mode of MODES (default "vocab fresh"): on ROWS (default 1,000,000) scaled rows
#    (scaled_lib.sh, VARIANT_SHARE 0.10, SEED 42) with newsframes-dev embedded (its pages' ids
#    plus 10^12), and the F1 of the default call's pairs among the embedded pages.
# Each join's pairs go to a temporary table (the same cost for both calls); the statistics' time
# is the join's DEBUG1 line. Prints per table: plain and default elapsed and processor seconds
# (the backend's), statistics s, the ratios default / plain (the goal is <= 1.5), and the
# embedded set's P, R, F1. REPEAT (default 1) measures each table that many times. STORED=1 then
# also times spotsigs_analyze of the table and the default call again with the stored template
# (what a call on an analyzed table pays), with its ratio to the same plain join, and removes the
# stored template afterwards.
#
#   PGHOST=... PGDATABASE=... test/bench/content_cost_bench.sh
#
# Writes OUT/results.txt (default build/content-cost-bench) and copies it over
# RESULTS/content_cost_results.txt (RESULTS default test/bench/results; RESULTS= keeps it in OUT).
# ROWS=0 measures textcorpus only. Tables content_<mode> are kept for later runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${ROWS:=1000000}" "${MODES:=vocab fresh}" "${VARIANT_SHARE:=0.10}" "${SEED:=42}" "${OUT:=$repo/build/content-cost-bench}"
shared=$repo/../shared
[ -d "$shared" ] || shared=$repo/../../shared # a worktree under wt/
corpus=${CORPUS:-$shared/data/textcorpus}
dev=${DEV:-$shared/data/newsframes-dev}
score=${SCORE:-$shared/tools/score-pairs}
psql_q() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }
mkdir -p "$OUT"
chmod 0777 "$OUT" 2>/dev/null || true
log() { echo "$*" | tee -a "$OUT/results.txt"; }
: > "$OUT/results.txt"
# shellcheck source=scaled_lib.sh
. "$here/scaled_lib.sh"

log "== the default call against the plain join at 0.4, $(date -u +%FT%TZ), $(nproc) cores, max_threads $(psql_q -c "LOAD 'spotsigs'" -c 'SHOW spotsigs.max_threads'), limit $(psql_q -c "LOAD 'spotsigs'" -c 'SHOW spotsigs.join_memory_limit')"

# The newsframes-dev pages' signatures (ids as in the set), once per database.
if [[ $(psql_q -c "SELECT to_regclass('dev_pages') IS NULL") == t ]]; then
  psql_q -c "CREATE EXTENSION IF NOT EXISTS spotsigs" \
    -c "CREATE TABLE dev_raw (id bigint, cluster int, host text, kind text, html text)" \
    -c "\\copy dev_raw from program 'zcat \"$dev/pages.tsv.gz\"'" \
    -c "CREATE TABLE dev_pages AS SELECT id, cluster, spotsigs(html) AS sig FROM dev_raw" -c "DROP TABLE dev_raw"
fi

# run TABLE THRESHOLD: "seconds processor_seconds statistics_seconds pairs" of one join into a
# temporary table (THRESHOLD NULL: the default call); the pairs stay in table pairs_out. The
# processor seconds are the backend's (every thread's, from /proc/PID/stat), which other jobs on
# the machine move less than the elapsed time.
run() {
  local out
  out=$(psql -X -v ON_ERROR_STOP=1 -qAt 2>&1 <<EOF
SET client_min_messages = debug1;
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
\! awk '{print "cpu0", \$14 + \$15}' /proc/\$BPID/stat
\timing on
DROP TABLE IF EXISTS pairs_out;
CREATE UNLOGGED TABLE pairs_out AS SELECT * FROM spotsigs_join('$1', 'id', 'sig', $2);
\timing off
\! awk '{print "cpu1", \$14 + \$15}' /proc/\$BPID/stat
EOF
)
  local ms stats pairs c0 c1 tck
  tck=$(getconf CLK_TCK)
  ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tail -1)
  c0=$(sed -n 's/^cpu0 //p' <<<"$out")
  c1=$(sed -n 's/^cpu1 //p' <<<"$out")
  stats=$(sed -n 's/.*template signatures found in \([0-9.]*\) s.*/\1/p' <<<"$out" | head -1)
  pairs=$(sed -n 's/.*matched in [0-9.]* s, \([0-9]*\) pairs.*/\1/p' <<<"$out" | head -1)
  echo "$(awk "BEGIN{printf \"%.2f %.2f\", $ms / 1000, ($c1 - $c0) / $tck}") ${stats:--} ${pairs:--}"
}

# measure TABLE [EMBEDDED]: both calls, their ratio, and with EMBEDDED the dev set's scores.
measure() {
  local t=$1 p d
  log "$t: $(psql_q -c "SELECT count(*) || ' rows, ' || pg_size_pretty(pg_total_relation_size('$t')) FROM $t"), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  p=$(run "$t" 0.4)
  read -r ps pc _ pp <<<"$p"
  log "  plain join at 0.4: $ps s (processor $pc s), $pp pairs"
  d=$(run "$t" NULL)
  read -r ds dc st dp <<<"$d"
  log "  default call: $ds s (processor $dc s; statistics $st s), $dp pairs; ratio $(awk "BEGIN{printf \"%.2f\", $ds / $ps}")x elapsed, $(awk "BEGIN{printf \"%.2f\", $dc / ($pc > 0 ? $pc : 0.01)}")x processor (goal <= 1.5x); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  [[ -n ${2:-} ]] && score_embedded "default call"
  if [[ ${STORED:-0} == 1 ]]; then
    local a0 a1
    a0=$(date +%s%N)
    psql_q -c "SELECT spotsigs_analyze('$t', 'sig', 'id')" >/dev/null
    a1=$(date +%s%N)
    d=$(run "$t" NULL)
    read -r ds dc _ dp <<<"$d"
    log "  spotsigs_analyze $(awk "BEGIN{printf \"%.2f\", ($a1 - $a0) / 1e9}") s; then the default call with the stored template: $ds s (processor $dc s), $dp pairs; ratio $(awk "BEGIN{printf \"%.2f\", $ds / $ps}")x elapsed, $(awk "BEGIN{printf \"%.2f\", $dc / ($pc > 0 ? $pc : 0.01)}")x processor (goal <= 1.5x); load average $(cut -d' ' -f1-3 /proc/loadavg)"
    [[ -n ${2:-} ]] && score_embedded "default call, stored template"
    psql_q -c "DELETE FROM spotsigs_template_store WHERE relation = '$t'::regclass" >/dev/null
  fi
  return 0
}

# score_embedded LABEL: the newsframes-dev pages' pairs in pairs_out, scored.
score_embedded() {
  psql_q -c "\\copy (SELECT id1 - 1000000000000, id2 - 1000000000000, similarity FROM pairs_out WHERE id1 >= 1000000000000 AND id2 >= 1000000000000) to '$OUT/dev_pairs.txt' with (delimiter ' ')"
  log "  newsframes-dev embedded, $1: $("$score" "$dev/pages.tsv.gz" "$OUT/dev_pairs.txt" | tr '\n' ' ')"
}

load_base
for _ in $(seq "${REPEAT:-1}"); do measure corpus_base; done
if [[ $ROWS -gt 0 ]]; then
  for mode in $MODES; do
    t=content_$mode
    if [[ $(psql_q -c "SELECT to_regclass('$t') IS NULL") == t ]]; then
      SCALE_MODE=$mode load_scaled "$t" "$ROWS"
      psql_q -c "INSERT INTO $t SELECT id + 1000000000000, sig FROM dev_pages" -c "VACUUM ANALYZE $t"
      log "built $t: $(cat "$OUT/scale.log")"
    fi
    for _ in $(seq "${REPEAT:-1}"); do measure "$t" embedded; done
  done
fi
psql_q -c "DROP TABLE IF EXISTS pairs_out"
results=${RESULTS-$repo/test/bench/results}
[[ -n $results ]] && cp "$OUT/results.txt" "$results/content_cost_results.txt"
exit 0
