#!/usr/bin/env bash
# trigger_eval.sh: the ingest trigger's quality on the dev sets, rows inserted one at a time in a
# seeded random order into an empty table (one INSERT ... SELECT ... ORDER BY, so row by row),
# groups formed by the closure of duplicate_of and scored pairwise with score-pairs.
# Scenarios: plain08 (the trigger at '0.8', the README's example before the content default),
# content_empty (no threshold argument and no stored template: every row), content_half (no
# threshold: the first half of the order through the trigger, then spotsigs_analyze, then the
# second half), content_half_batch (the same, then every flag recomputed with
# spotsigs_flag_batch(..., NULL, 0), rows taken in id order), content_known (no threshold, with the template of all the rows stored before the
# first row arrives: the rows loaded, analyzed and deleted; the ceiling of a stored template).
# Usage: test/with-cluster test/eval/trigger_eval.sh [SEED]   (needs ../shared next to the repo)
# SETS (default both dev sets) and SCENARIOS (default all) select; HALF sets the rows loaded before
# the analysis in the half scenarios (default half the set, rounded down).
set -euo pipefail
cd "$(dirname "$0")/../.."
seed=${1:-1}
shared=$(cd ../shared 2>/dev/null || cd ../../shared; pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
# With spotsigs.trigger_refresh = background (e.g. PGOPTIONS='-c spotsigs.trigger_refresh=background'),
# a refresh runs after the inserting statement commits: wait until no refresh worker is left.
. test/bench/refresh_wait.sh
settle() { refresh_settle; }
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
for set in ${SETS:-newsframes-dev docversions-dev}; do
  q <<SQL
DROP TABLE IF EXISTS src;
CREATE TABLE src (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'
ALTER TABLE src ADD COLUMN sig spotsig, ADD COLUMN ord int;
UPDATE src SET sig = spotsigs(html);
UPDATE src s SET ord = o.n FROM (SELECT id, row_number() OVER (ORDER BY md5(id::text || ':$seed')) n FROM src) o
WHERE o.id = s.id;
SQL
  n=$(q -At -c 'SELECT count(*) FROM src')
  half=${HALF:-$((n / 2))}
  for scenario in ${SCENARIOS:-plain08 content_empty content_half content_half_batch content_known}; do
    args="'sig', 'dup', 'sim'"
    [ "$scenario" = plain08 ] && args="$args, '0.8'"
    q <<SQL
DROP TABLE IF EXISTS pages;
CREATE TABLE pages (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON pages USING spotsigs (sig);
CREATE TRIGGER flag BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates($args);
SQL
    if [ "$scenario" = content_known ]; then
      q -c "ALTER TABLE pages DISABLE TRIGGER flag" -c "INSERT INTO pages (id, sig) SELECT id, sig FROM src" \
        -c "SELECT spotsigs_analyze('pages', 'sig')" -c "TRUNCATE pages" -c "ALTER TABLE pages ENABLE TRIGGER flag" >/dev/null
    fi
    t0=$(date +%s.%N)
    if [ "$scenario" = content_half ] || [ "$scenario" = content_half_batch ]; then
      q -c "INSERT INTO pages (id, sig) SELECT id, sig FROM src WHERE ord <= $half ORDER BY ord"
      settle
      q -At -c "SELECT 'template signatures: ' || spotsigs_analyze('pages', 'sig')" >&2
      q -c "INSERT INTO pages (id, sig) SELECT id, sig FROM src WHERE ord > $half ORDER BY ord"
      settle
      # Every flag recomputed with the stored template (as if inserted in id order).
      [ "$scenario" = content_half_batch ] &&
        q -At -c "SELECT 'flag_batch: ' || spotsigs_flag_batch('pages', 'id', 'sig', 'dup', 'sim', NULL, 0)" >&2
    else
      q -c "INSERT INTO pages (id, sig) SELECT id, sig FROM src ORDER BY ord"
      settle
    fi
    t1=$(date +%s.%N)
    q -At -F ' ' -c 'SELECT id, dup FROM pages WHERE dup IS NOT NULL' > "$tmp/edges"
    python3 - "$tmp/edges" > "$tmp/pairs" <<'PY'
import sys, itertools, collections
parent = {}
def find(x):
    while parent.setdefault(x, x) != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x
for line in open(sys.argv[1]):
    a, b = line.split()
    ra, rb = find(a), find(b)
    if ra != rb: parent[ra] = rb
groups = collections.defaultdict(list)
for x in list(parent): groups[find(x)].append(x)
for g in groups.values():
    for a, b in itertools.combinations(sorted(g, key=int), 2): print(a, b)
PY
    flagged=$(wc -l < "$tmp/edges")
    res=$("$shared/tools/score-pairs" "$shared/data/$set/pages.tsv.gz" "$tmp/pairs" | grep -i -m1 'pairwise' || true)
    printf '%s seed %s %-14s flagged %4d  %s  (%.1f s)\n' "$set" "$seed" "$scenario" "$flagged" "$res" \
      "$(echo "$t1 - $t0" | bc)"
  done
done
