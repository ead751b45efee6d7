#!/usr/bin/env bash
# growth_eval.sh: the growth test of the content measure. Both dev sets (newsframes-dev, ids plus
# 10^12, and docversions-dev, ids plus 2 x 10^12) embedded in the textcorpus documents replicated
# with fresh ids and vocabulary (test/bench/scale_corpus.cpp, mode fresh, VARIANT_SHARE 0.10,
# SEED 42: the first 75,400 rows are the real corpus, the copies unrelated documents over new
# signatures or near-duplicate variants of a real one) to each size of SIZES (default
# "75400 1000000 10000000"). At each size one default call, spotsigs_join('growth_N', 'id',
# 'sig') with the built-in settings, its pairs among each set's pages scored with score-pairs
# (the goal: pairwise F1 >= 0.95 at every size on both sets), and the pairs between an embedded
# page and a corpus row counted. Also per call: elapsed and the backend's processor seconds, its
# VmHWM at the end and the largest RssAnon seen while it ran (sampled every second), and the
# call's DEBUG1 lines (statistics, passes, accounted peaks); its progress once a minute goes to
# OUT/progress_N.log.
#
#   PGHOST=... PGDATABASE=... test/eval/growth_eval.sh        (or under test/with-cluster)
#
# Tables growth_N are built once (COPY FREEZE into the table created in the same transaction, so
# with wal_level minimal nothing is written twice; about 860 bytes a row: 10M rows need about
# 9 GB) and kept for later runs. Writes OUT/results.txt (default build/growth-eval) and copies it
# to RESULTS (default test/eval/results/growth_eval.txt; RESULTS= keeps it in OUT).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
shared=$repo/../shared
[ -d "$shared" ] || shared=$repo/../../shared
: "${SIZES:=75400 1000000 10000000}" "${VARIANT_SHARE:=0.10}" "${SEED:=42}" "${OUT:=$repo/build/growth-eval}"
sets=(newsframes-dev docversions-dev)
psql_q() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }
mkdir -p "$OUT"
chmod 0777 "$OUT" 2>/dev/null || true
log() { echo "$*" | tee -a "$OUT/results.txt"; }
: > "$OUT/results.txt"

psql_q -c "CREATE EXTENSION IF NOT EXISTS spotsigs"
log "== growth test, $(date -u +%FT%TZ), $(nproc) cores, max_threads $(psql_q -c "LOAD 'spotsigs'" -c 'SHOW spotsigs.max_threads'), join_memory_limit $(psql_q -c "LOAD 'spotsigs'" -c 'SHOW spotsigs.join_memory_limit'), shared_buffers $(psql_q -c 'SHOW shared_buffers')"

# The textcorpus documents' signatures (corpus_base) and each set's (dev_0, dev_1: id already
# offset, cluster), once per database.
if [[ $(psql_q -c "SELECT to_regclass('corpus_base') IS NULL") == t ]]; then
  psql_q -c "CREATE TABLE corpus_docs (id bigint PRIMARY KEY, source text, title text, body text)" \
    -c "\\copy corpus_docs from program 'zcat \"$shared/data/textcorpus/docs.tsv.gz\"'" \
    -c "CREATE TABLE corpus_base AS SELECT id, spotsigs(title || E'\\n' || body) AS sig FROM corpus_docs" \
    -c "DROP TABLE corpus_docs"
fi
for i in 0 1; do
  if [[ $(psql_q -c "SELECT to_regclass('dev_$i') IS NULL") == t ]]; then
    psql_q -c "CREATE TABLE dev_raw (id bigint, cluster int, host text, kind text, html text)" \
      -c "\\copy dev_raw from program 'zcat \"$shared/data/${sets[$i]}/pages.tsv.gz\"'" \
      -c "CREATE TABLE dev_$i AS SELECT id + $((i + 1)) * 1000000000000 AS id, cluster, spotsigs(html) AS sig FROM dev_raw" \
      -c "DROP TABLE dev_raw"
  fi
done

# build TABLE ROWS: the first ROWS rows of the scaled corpus, then both sets' pages.
build() {
  local t=$1 rows=$2 t0
  t0=$(date +%s)
  g++ -std=c++17 -O2 -o "$OUT/scale_corpus" "$repo/test/bench/scale_corpus.cpp"
  psql_q -c "\\copy (SELECT id, sig FROM corpus_base ORDER BY id) to '$OUT/base.tsv'"
  "$OUT/scale_corpus" "$rows" "$VARIANT_SHARE" "$SEED" fresh < "$OUT/base.tsv" 2>"$OUT/scale.log" |
    psql_q -1 -c "CREATE TABLE $t (id bigint, sig spotsig)" -c "COPY $t FROM STDIN (FREEZE)"
  rm -f "$OUT/base.tsv"
  psql_q -c "INSERT INTO $t SELECT id, sig FROM dev_0 UNION ALL SELECT id, sig FROM dev_1" -c "VACUUM ANALYZE $t"
  log "built $t in $(($(date +%s) - t0)) s: $(cat "$OUT/scale.log")"
}

# measure TABLE: the default call, its figures, and the sets' scores.
measure() {
  local t=$1 out tck
  tck=$(getconf CLK_TCK)
  log "$t: $(psql_q -c "SELECT count(*) || ' rows, ' || pg_size_pretty(pg_total_relation_size('$t')) FROM $t"), load average $(cut -d' ' -f1-3 /proc/loadavg), $(df -h --output=avail "$OUT" | tail -1 | tr -d ' ') free"
  rm -f "$OUT/stop"
  # The call's progress (pg_stat_activity) once a minute, for a call that does not finish.
  (while [[ ! -e $OUT/stop ]]; do
    echo "$(date -u +%T) load average $(cut -d' ' -f1-3 /proc/loadavg): $(psql_q -c "SELECT left(query, 100) FROM pg_stat_activity WHERE query LIKE 'spotsigs_join: %'")"
    sleep 60
  done) > "$OUT/progress_$t.log" 2>&1 &
  out=$(psql -X -v ON_ERROR_STOP=1 -qAt 2>&1 <<EOF
SET client_min_messages = debug1;
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
\setenv OUTDIR $OUT
\! bash -c 'm=0; while [ ! -e "\$OUTDIR/stop" ] && [ -e /proc/\$BPID ]; do a=\$(awk "/^RssAnon:/{print \\\$2}" /proc/\$BPID/status); [ "\${a:-0}" -gt \$m ] && m=\$a; echo \$m > "\$OUTDIR/anon_max"; sleep 1; done' >/dev/null 2>&1 &
\! awk '{print "cpu0", \$14 + \$15}' /proc/\$BPID/stat
\timing on
DROP TABLE IF EXISTS pairs_out;
CREATE UNLOGGED TABLE pairs_out AS SELECT * FROM spotsigs_join('$t', 'id', 'sig');
\timing off
\! awk '{print "cpu1", \$14 + \$15}' /proc/\$BPID/stat
\! touch "\$OUTDIR/stop"; grep -E '^(VmHWM|RssAnon|RssShmem):' /proc/\$BPID/status | tr -s ' \t' ' ' | tr '\n' ' '; echo
EOF
) || { touch "$OUT/stop"; echo "$out"; return 1; }
  sleep 2
  echo "$out" > "$OUT/call_$t.log"
  local ms c0 c1
  ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tail -1)
  c0=$(sed -n 's/^cpu0 //p' <<<"$out")
  c1=$(sed -n 's/^cpu1 //p' <<<"$out")
  log "  default call: $(awk "BEGIN{printf \"%.1f\", $ms / 1000}") s elapsed, processor $(awk "BEGIN{printf \"%.1f\", ($c1 - $c0) / $tck}") s, $(psql_q -c 'SELECT count(*) FROM pairs_out') pairs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  log "  backend memory at the end: $(grep '^VmHWM' <<<"$out"); largest RssAnon sampled during the call: $(cat "$OUT/anon_max") kB"
  grep -E 'DEBUG: +(spotsigs_join|reading)' <<<"$out" | sed 's/^DEBUG: */  DEBUG1: /' | tee -a "$OUT/results.txt"
  local i lo hi
  for i in 0 1; do
    lo=$(((i + 1) * 1000000000000)) hi=$(((i + 2) * 1000000000000))
    psql_q -c "\\copy (SELECT id1 - $lo, id2 - $lo, similarity FROM pairs_out WHERE id1 >= $lo AND id1 < $hi AND id2 >= $lo AND id2 < $hi) to '$OUT/pairs_$i.txt' with (delimiter ' ')"
    log "  ${sets[$i]} embedded: $("$shared/tools/score-pairs" "$shared/data/${sets[$i]}/pages.tsv.gz" "$OUT/pairs_$i.txt" | grep -E 'pairwise' | tr -s ' ')"
  done
  log "  pairs of an embedded page and a corpus row: $(psql_q -c "SELECT count(*) FROM pairs_out WHERE (id1 >= 1000000000000) <> (id2 >= 1000000000000)"), of a newsframes-dev and a docversions-dev page: $(psql_q -c "SELECT count(*) FROM pairs_out WHERE id1 >= 1000000000000 AND id1 < 2000000000000 AND id2 >= 2000000000000")"
  psql_q -c "DROP TABLE pairs_out"
}

for rows in $SIZES; do
  t=growth_$rows
  [[ $(psql_q -c "SELECT to_regclass('$t') IS NULL") == t ]] && build "$t" "$rows"
  measure "$t"
done
results=${RESULTS-$here/results/growth_eval.txt}
[[ -n $results ]] && cp "$OUT/results.txt" "$results"
exit 0
