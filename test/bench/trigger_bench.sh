#!/usr/bin/env bash
# Ingest benchmark of spotsigs_flag_duplicates() (not a test): rows per second of COPY into a
# table that already holds about 1M rows, with and without the trigger, in the same run.
#
#  * base: COPIES (default 14) copies of the 75,400 documents of ../shared/data/textcorpus with
#    shifted ids (k * 1,000,000 + id), so 1,055,600 rows, with
#    sig spotsig GENERATED ALWAYS AS (spotsigs(body)) STORED and a spotsigs index on sig;
#  * new rows: NEW_ROWS (default 2,000) documents of the same corpus (a fixed pseudo-random
#    sample) with ids past the base, written to a file once and COPYed (client-side \copy, one
#    transaction, a new session each time) for each variant: a warm-up pass; then ROUNDS (default
#    3) rounds of, for each body compression in COMPRESSIONS (default "pglz lz4"): no trigger;
#    trigger 'best'; trigger 'first'; trigger 'best' 'locked'; the summary gives each variant's
#    median COPY. Every variant is rolled back, the table vacuumed (index cleanup on) and a checkpoint taken before the
#    next, so all start from the same rows and the same index segments. The new rows are copies of base documents, so every one of them is
#    flagged (14 equally similar earlier rows: the ties make this a hard case for 'best').
#
# The spotsigs index appends inserted rows to a pending list (each backend keeps a searchable copy
# and reads only what was appended since its last search) and merges it into a new segment past
# pending_list_limit; every segment costs one lookup per list the search of a new row reads.
#
# NOVEL=1 uses the sampled documents with their words reversed instead (new content: few flags).
# CONTENT=1 runs spotsigs_analyze on the base table once (timed) and adds, per compression, the
# trigger without a threshold (the content measure against the stored template: the default) and
# the plain trigger at the content measure's threshold, 0.4 'best', beside the others. The new
# rows stay below the refresh growth (a quarter of the analyzed rows), so no refresh runs: this
# is the steady state of a large table.
#
# Usage (the extension must be installed; needs about 6 GB of disk and 15-25 minutes):
#   pg_virtualenv -v 15 test/bench/trigger_bench.sh [NEW_ROWS] [COPIES]
# The output is the run's record: redirect it over test/bench/results/trigger_NEW_ROWS.txt
# (trigger_NEW_ROWS_novel.txt with NOVEL=1), one file per configuration, regenerated each run.
# or against any server through the PG* environment variables. KEEP=1 keeps the database;
# REUSE=1 then reuses its base table instead of loading it again.
# The published figures (test/bench/results/trigger_*.txt): a cluster with shared_buffers 2GB and
# huge pages for its shared memory (as root: sysctl vm.nr_hugepages=2200 before the server starts;
# huge_pages = try, the default, then uses them). On a virtual machine every first touch of a
# shared buffer by a new session is a page fault, which huge pages make 512 times rarer.
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus=${SPOTSIGS_TEXTCORPUS:-$(cd .. && pwd)/shared/data/textcorpus/docs.tsv.gz}
new=${1:-2000}
copies=${2:-14}
tau=${TAU:-0.8}
echo "# test/bench/trigger_bench.sh $new $copies (NOVEL=${NOVEL:-0} CONTENT=${CONTENT:-0} ROUNDS=${ROUNDS:-3} TAU=$tau), $(date -u +%FT%TZ)"
db=spotsigs_trigger_bench
work=$(mktemp -d /tmp/spotsigs-trigger-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

q() { psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }
now() { date +%s.%N; }

if [ "${REUSE:-0}" = 1 ] && [ "$(q -At -c "SELECT to_regclass('docs_sig') IS NOT NULL" 2>/dev/null)" = t ]; then
  echo "== reusing the base table of database $db (REUSE=1)"
  q -c "DROP TRIGGER IF EXISTS dedup ON docs" -c "DELETE FROM docs WHERE id >= 900000000" -c "VACUUM (INDEX_CLEANUP ON) docs"
else
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
q -c "CREATE EXTENSION spotsigs" \
  -c "CREATE TABLE corpus (id bigint PRIMARY KEY, source text, title text, body text)"
zcat "$corpus" | q -c "\\copy corpus from stdin"

echo "== base table: $copies copies of the corpus"
t0=$(now)
q <<SQL
CREATE TABLE docs (
  id bigint PRIMARY KEY,
  body text,
  sig spotsig GENERATED ALWAYS AS (spotsigs(body)) STORED,
  duplicate_of bigint,
  similarity float8);
INSERT INTO docs (id, body)
  SELECT k * 1000000 + c.id, c.body FROM generate_series(0, $copies - 1) k, corpus c;
SQL
t1=$(now)
q -c "SET maintenance_work_mem = '1GB'" -c "CREATE INDEX docs_sig ON docs USING spotsigs (sig)" -c "VACUUM ANALYZE docs"
t2=$(now)
printf 'load %.1f s, index build + vacuum %.1f s\n' "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
fi
q -At -c "SELECT format('%s rows, heap+toast %s, index %s', count(*), pg_size_pretty(pg_table_size('docs')),
                        pg_size_pretty(pg_relation_size('docs_sig'))) FROM docs"

# The new rows, once, to a file (ids past the base).
# NOVEL=1: the same documents with their words in reverse order, so their spot signatures are
# new to the table (rows of mostly unseen content, as in a typical ingest stream).
if [ "${NOVEL:-0}" = 1 ]; then
  body="array_to_string(ARRAY(SELECT w FROM regexp_split_to_table(body, '\\s+') WITH ORDINALITY t(w, n) ORDER BY n DESC), ' ')"
else
  body="body"
fi
q -c "\\copy (SELECT 900000000 + id, $body FROM corpus ORDER BY md5(id::text) LIMIT $new) TO '$work/new.tsv'"
echo "new rows: $(wc -l < "$work/new.tsv") ($(du -h "$work/new.tsv" | cut -f1))"

results="$work/results"
: > "$results"
# run LABEL TRIGGER_ARGS: COPY the new rows in one transaction, record rows/s, roll back, vacuum.
run() {
  local label=$1 args=$2
  q -c "DROP TRIGGER IF EXISTS dedup ON docs"
  if [ -n "$args" ]; then
    q -c "CREATE TRIGGER dedup BEFORE INSERT OR UPDATE OF body ON docs FOR EACH ROW
          EXECUTE FUNCTION spotsigs_flag_duplicates($args)"
  fi
  local out
  out=$(q -At <<SQL
BEGIN;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
\copy docs (id, body) from '$work/new.tsv'
SELECT extract(epoch FROM clock_timestamp()) - :t0 AS secs \gset
SELECT format('%s|%s|%s', :secs, count(*), count(duplicate_of)) FROM docs WHERE id >= 900000000;
ROLLBACK;
SQL
)
  # INDEX_CLEANUP ON: otherwise VACUUM may skip the index for so few dead rows and merely merge
  # the pending list, dead rows included, into a new segment that later runs would search too.
  q -c "VACUUM (INDEX_CLEANUP ON) docs"
  # A checkpoint after each variant, so that no variant pays for writing out the dirty pages of
  # the ones before it (needs superuser or pg_checkpoint; skipped without).
  q -c "CHECKPOINT" 2>/dev/null || true
  local secs rows flagged
  IFS='|' read -r secs rows flagged <<< "$out"
  printf '%-40s %8s rows %9.2f s %9.0f rows/s %8s flagged\n' "$label" "$rows" "$secs" \
    "$(echo "$rows / $secs" | bc -l)" "$flagged"
  echo "$label|$secs|$rows|$flagged" >> "$results"
}

if [ "${CONTENT:-0}" = 1 ]; then
  t0=$(now)
  q -c "SELECT spotsigs_analyze('docs', 'sig')" > /dev/null
  t1=$(now)
  printf 'spotsigs_analyze %.1f s: %s\n' "$(echo "$t1 - $t0" | bc)" "$(q -At -c "SELECT format('%s rows analyzed, %s template signatures', rows_analyzed, template_size) FROM spotsigs_stats WHERE relation = 'docs'::regclass")"
fi
echo "== COPY of the new rows into the $(q -At -c 'SELECT count(*) FROM docs')-row table"
echo "server: shared_buffers $(q -At -c 'SHOW shared_buffers'), huge_pages $(q -At -c 'SHOW huge_pages')$(
  [ -r /proc/meminfo ] && awk '/^HugePages_(Total|Free):/ {printf ", %s %s", $1, $2}' /proc/meminfo)"
# The first run with the trigger reads the index pages the new rows need into shared buffers (from
# the OS cache); it would penalize whichever mode came first, so one pass goes before the rest.
run "warm-up: trigger best (not compared)" "'sig', 'duplicate_of', 'similarity', '$tau', 'best'"
# Each variant once per TOAST compression of the body (the new rows only: SET COMPRESSION does
# not rewrite stored rows). PostgreSQL's default pglz costs about as much per row as the COPY
# without the trigger; lz4 is the usual choice for tables that take a stream of documents.
# The whole list of variants runs ROUNDS times (default 3), one round after the other, so that the
# machine's drift over the run touches every variant alike; the summary gives each variant's
# median and its range.
rounds=${ROUNDS:-3}
for ((round = 1; round <= rounds; round++)); do
  echo "-- round $round of $rounds"
  for c in ${COMPRESSIONS:-pglz lz4}; do
    q -c "ALTER TABLE docs ALTER COLUMN body SET COMPRESSION $c"
    run "no trigger, $c" ""
    run "trigger best (tau $tau), $c" "'sig', 'duplicate_of', 'similarity', '$tau', 'best'"
    run "trigger first (tau $tau), $c" "'sig', 'duplicate_of', 'similarity', '$tau', 'first'"
    run "trigger best locked (tau $tau), $c" "'sig', 'duplicate_of', 'similarity', '$tau', 'best', 'locked'"
    if [ "${CONTENT:-0}" = 1 ]; then
      run "trigger best (tau 0.4), $c" "'sig', 'duplicate_of', 'similarity', '0.4', 'best'"
      run "trigger content (no threshold), $c" "'sig', 'duplicate_of', 'similarity'"
    fi
  done
done
q -c "ALTER TABLE docs ALTER COLUMN body SET COMPRESSION default"
echo "== summary: rows/s of the median COPY of $rounds (the slowest and fastest in brackets)"
awk -F'|' '
  { if (!($1 in n)) order[++k] = $1; n[$1]++; t[$1, n[$1]] = $2; rows[$1] = $3; fl[$1] = $4 }
  END {
    for (i = 1; i <= k; i++) {
      l = order[i]; m = n[l]
      for (a = 1; a <= m; a++) v[a] = t[l, a]
      for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (v[b] < v[a]) { x = v[a]; v[a] = v[b]; v[b] = x }
      med = (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
      printf "%-40s %8s rows %7.2f s %8.0f rows/s (%.0f-%.0f) %8s flagged\n", l, rows[l], med, rows[l] / med,
             rows[l] / v[m], rows[l] / v[1], fl[l]
    }
  }' "$results"
[ "${KEEP:-0}" = 1 ] || psql -X -q -d postgres -c "DROP DATABASE $db"
