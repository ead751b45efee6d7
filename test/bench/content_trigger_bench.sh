#!/usr/bin/env bash
# content_trigger_bench.sh: ingest rows/s of the trigger without a threshold (content measure,
# the stored template) beside the README's plain trigger ('0.8', 'best'), in the same run, on
# newsframes-dev, docversions-dev and the first SLICE (default 20,000) ids of textcorpus.
# Per set: the signatures extracted once (not timed); a table with a spotsigs index holds the
# first half of the rows in a seeded shuffled order, analyzed (spotsigs_analyze, VACUUM
# ANALYZE); then, ROUNDS (default 2) times, for each trigger in turn (plain, content): the second
# half in one INSERT ... SELECT in that order through the trigger, timed, rolled back, the table
# vacuumed. A warm-up insert (content, rolled back) comes first. Figures: rows/s of each variant
# over all its rounds, and content/plain, elapsed and per second of the backend's processor time
# (the steadier figure on a shared machine); the plain trigger at the content measure's 0.4 too
# (processor time), which tells the lower threshold's share of the difference from the rest.
# SETS (default all three) picks the sets. ONE_ROW=1: the second half as one INSERT ... VALUES per
# row (in the same transaction), timed from the first to the last: a trigger's per-statement costs
# are paid per row there.
# BACKGROUND=1 adds the content trigger with spotsigs.trigger_refresh = background: its insert is
# committed (the worker it launches waits for the commit), timed to the commit, then to the end of
# the refresh workers (the flags final); the table is then put back (the rows deleted, the half
# analyzed again, vacuumed).
# Usage: test/with-cluster test/bench/content_trigger_bench.sh > test/bench/results/content_trigger.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=$(cd ../shared 2>/dev/null || cd ../../shared; pwd)
SLICE=${SLICE:-20000} ROUNDS=${ROUNDS:-2}
q() { PGOPTIONS="-c client_min_messages=warning ${QOPTS:-}" psql -X -q -v ON_ERROR_STOP=1 "$@"; }
plain="'sig', 'dup', 'sim', '0.8', 'best'"
plain04="'sig', 'dup', 'sim', '0.4', 'best'"
content="'sig', 'dup', 'sim'"
ONE_ROW=${ONE_ROW:-0}
. test/bench/refresh_wait.sh
rows=$(mktemp /tmp/content_trigger_bench.XXXXXX)
trap 'rm -f "$rows"' EXIT
echo "# test/bench/content_trigger_bench.sh (SLICE=$SLICE ROUNDS=$ROUNDS SETS=${SETS:-all} ONE_ROW=$ONE_ROW), $(date -u +%FT%TZ), $(nproc) cores"
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
# timed_insert ARGS: the second half through a trigger made with ARGS, rolled back; prints
# "milliseconds flagged backend-processor-seconds" (user + system time of the session's backend).
timed_insert() {
  q -c "CREATE TRIGGER flag BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates($1)"
  q -v rows="$rows" -At <<'SQL' | awk -v hz="$(getconf CLK_TCK)" '/^Time:/ { ms = $2 } /^cpu0 / { c0 = $2 } /^cpu1 / { c1 = $2 }
                                                  /^[0-9]+$/ { n = $1 } END { printf "%s %s %.2f\n", ms, n, (c1 - c0) / hz }'
SELECT pg_backend_pid() AS pid \gset
\setenv PID :pid
BEGIN;
\! awk '{ print "cpu0", $14 + $15 }' /proc/$PID/stat
\i :rows
\! awk '{ print "cpu1", $14 + $15 }' /proc/$PID/stat
SELECT count(dup) FROM pages;
ROLLBACK;
SQL
  q -c 'DROP TRIGGER flag ON pages' -c 'VACUUM pages'
}
# timed_insert_bg: the second half through the content trigger with background refreshes,
# committed; prints "milliseconds-to-commit milliseconds-to-final-flags flagged
# backend-processor-seconds", then puts the table back.
timed_insert_bg() {
  q -c "CREATE TRIGGER flag BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates($content)"
  local out t1 t2 n
  # $rows times the INSERT (\timing); the COMMIT is timed too, and the two are added.
  out=$(QOPTS="-c spotsigs.trigger_refresh=background" q -v rows="$rows" -At <<'SQL' | awk -v hz="$(getconf CLK_TCK)" '/^Time:/ { ms += $2 } /^cpu0 / { c0 = $2 } /^cpu1 / { c1 = $2 } END { printf "%.3f %.2f\n", ms, (c1 - c0) / hz }'
SELECT pg_backend_pid() AS pid \gset
\setenv PID :pid
BEGIN;
\! awk '{ print "cpu0", $14 + $15 }' /proc/$PID/stat
\i :rows
\timing on
COMMIT;
\timing off
\! awk '{ print "cpu1", $14 + $15 }' /proc/$PID/stat
SQL
)
  t1=$(date +%s%N)
  # The worker registered before the commit; wait until none is left.
  refresh_settle
  t2=$settled_ns
  n=$(q -At -c 'SELECT count(dup) FROM pages')
  read -r ms cpu <<<"$out"
  echo "$ms $(echo "$ms + ($t2 - $t1) / 1000000" | bc) $n $cpu"
  q -c 'DROP TRIGGER flag ON pages' -c 'DELETE FROM pages WHERE ord > (SELECT count(*) / 2 FROM shuffled)' \
    -c "SELECT spotsigs_analyze('pages', 'sig')" -c 'UPDATE pages SET dup = NULL, sim = NULL WHERE dup IS NOT NULL' -c 'VACUUM pages' >/dev/null
}
for set in ${SETS:-newsframes-dev docversions-dev textcorpus}; do
  if [ "$set" = textcorpus ]; then
    q -c 'DROP TABLE IF EXISTS src, shuffled, pages' \
      -c 'CREATE TABLE src (id bigint PRIMARY KEY, source text, title text, body text)' \
      -c "\\copy src from program 'zcat $shared/data/textcorpus/docs.tsv.gz'" \
      -c "CREATE TABLE shuffled AS SELECT id, row_number() OVER (ORDER BY md5(id::text || ':ingest')) AS ord, spotsigs(body) AS sig
          FROM (SELECT * FROM src ORDER BY id LIMIT $SLICE) s"
  else
    q -c 'DROP TABLE IF EXISTS src, shuffled, pages' \
      -c 'CREATE TABLE src (id bigint PRIMARY KEY, cluster int, host text, kind text, html text)' \
      -c "\\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'" \
      -c "CREATE TABLE shuffled AS SELECT id, row_number() OVER (ORDER BY md5(id::text || ':ingest')) AS ord, spotsigs(html) AS sig FROM src"
  fi
  q <<'SQL'
CREATE TABLE pages (id bigint PRIMARY KEY, ord bigint, sig spotsig, dup bigint, sim float8);
CREATE INDEX ON pages USING spotsigs (sig);
INSERT INTO pages (id, ord, sig) SELECT id, ord, sig FROM shuffled WHERE ord <= (SELECT count(*) / 2 FROM shuffled) ORDER BY ord;
SELECT spotsigs_analyze('pages', 'sig') AS template_size \gset
VACUUM ANALYZE pages;
SQL
  # The timed statements: one INSERT ... SELECT, or (ONE_ROW) one INSERT per row.
  if [ "$ONE_ROW" = 1 ]; then
    { echo "SELECT clock_timestamp() AS t0 \\gset"
      q -At -c "SELECT format('INSERT INTO pages (id, ord, sig) VALUES (%s, %s, %L);', id, ord, sig::text)
                FROM shuffled WHERE ord > (SELECT count(*) / 2 FROM shuffled) ORDER BY ord"
      echo "SELECT round(1000 * extract(epoch FROM clock_timestamp() - :'t0'), 3) AS ms \\gset"
      echo '\echo Time: :ms ms'; } > "$rows"
  else
    printf '%s\n' '\timing on' \
      'INSERT INTO pages (id, ord, sig) SELECT id, ord, sig FROM shuffled WHERE ord > (SELECT count(*) / 2 FROM shuffled) ORDER BY ord;' \
      '\timing off' > "$rows"
  fi
  read -r base new <<<"$(q -At -F ' ' -c 'SELECT count(*), (SELECT count(*) FROM shuffled) - count(*) FROM pages')"
  timed_insert "$content" >/dev/null
  pt=0 ct=0 pc=0 cc=0 p4c=0 bt=0 bf=0 bc=0
  for r in $(seq "$ROUNDS"); do
    read -r ms pf pcpu <<<"$(timed_insert "$plain")"
    read -r ms2 cf ccpu <<<"$(timed_insert "$content")"
    read -r ms4 p4f p4cpu <<<"$(timed_insert "$plain04")"
    bg=""
    if [ "${BACKGROUND:-0}" = 1 ]; then
      read -r bms bfin bflag bcpu <<<"$(timed_insert_bg)"
      bg="; content, background refresh: $bms ms to the commit, $bfin ms to the final flags, backend processor $bcpu s, $bflag flagged"
      bt=$(echo "$bt + $bms" | bc) bf=$(echo "$bf + $bfin" | bc) bc=$(echo "$bc + $bcpu" | bc)
    fi
    echo "$set round $r: plain ($plain) $ms ms, backend processor $pcpu s, $pf flagged; content ($content) $ms2 ms, backend processor $ccpu s, $cf flagged; plain ($plain04) $ms4 ms, backend processor $p4cpu s, $p4f flagged$bg"
    pt=$(echo "$pt + $ms" | bc) ct=$(echo "$ct + $ms2" | bc) pc=$(echo "$pc + $pcpu" | bc) cc=$(echo "$cc + $ccpu" | bc) p4c=$(echo "$p4c + $p4cpu" | bc)
  done
  if [ "${BACKGROUND:-0}" = 1 ]; then
    echo "$set, background refresh: content/plain to the commit $(echo "scale=2; $pt / $bt" | bc)x elapsed, $(echo "scale=2; $pc / $bc" | bc)x per backend processor second; to the final flags $(echo "scale=2; $pt / $bf" | bc)x elapsed"
  fi
  echo "$set: $base rows analyzed, $new inserted per run: plain $(echo "$new * $ROUNDS * 1000 / $pt" | bc) rows/s, content $(echo "$new * $ROUNDS * 1000 / $ct" | bc) rows/s, content/plain $(echo "scale=2; $pt / $ct" | bc)x (goal >= 0.8x); per second of the backend's processor time: plain $(echo "$new * $ROUNDS / $pc" | bc) rows, content $(echo "$new * $ROUNDS / $cc" | bc) rows, content/plain $(echo "scale=2; $pc / $cc" | bc)x (plain at 0.4: $(echo "$new * $ROUNDS / $p4c" | bc) rows); load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
