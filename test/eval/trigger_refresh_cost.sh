#!/usr/bin/env bash
# trigger_refresh_cost.sh: what the content trigger's statistics refresh costs, beside the plain trigger:
# the rows of a dev set INSERTed one statement each (autocommit, one session, seeded random order)
# into an empty table with the plain trigger at '0.8', the trigger without a threshold with
# spotsigs.trigger_refresh on, background (then the time until the last refresh worker ended:
# the flags final), and off. Prints total time, rows/s, statement latency p50/p99/max,
# and the statements above 20x the median (the rows whose insert refreshed: 17, 33, 65, ...).
# Usage: test/with-cluster test/eval/trigger_refresh_cost.sh [SET] [SEED]   (SET: newsframes-dev)
set -euo pipefail
cd "$(dirname "$0")/../.."
set=${1:-newsframes-dev}; seed=${2:-1}
shared=$(cd ../shared 2>/dev/null || cd ../../shared; pwd)
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
. test/bench/refresh_wait.sh
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
q <<SQL
DROP TABLE IF EXISTS src;
CREATE TABLE src (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'
ALTER TABLE src ADD COLUMN sig spotsig, ADD COLUMN ord int;
UPDATE src SET sig = spotsigs(html);
UPDATE src s SET ord = o.n FROM (SELECT id, row_number() OVER (ORDER BY md5(id::text || ':$seed')) n FROM src) o WHERE o.id = s.id;
SQL
n=$(q -At -c 'SELECT count(*) FROM src')
f=$(mktemp)
for k in $(seq 1 $n); do echo "INSERT INTO pages (id, sig) SELECT id, sig FROM src WHERE ord = $k;"; done > $f
for mode in plain on background off; do
  args="'sig', 'dup', 'sim'"; [ $mode = plain ] && args="$args, '0.8'"
  q -c "DROP TABLE IF EXISTS pages" -c "DELETE FROM spotsigs_template_store" -c "CREATE TABLE pages (id int PRIMARY KEY, sig spotsig, dup int, sim float8)" -c "CREATE INDEX ON pages USING spotsigs (sig)" -c "CREATE TRIGGER flag BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates($args)" 2>/dev/null
  set_="SET spotsigs.trigger_refresh = on;"; [ $mode = off ] || [ $mode = background ] && set_="SET spotsigs.trigger_refresh = $mode;"
  { echo "$set_"; echo '\timing on'; cat $f; } | psql -X -q -v ON_ERROR_STOP=1 2>&1 | grep '^Time' | awk '{print $2}' > $f.t
  t0=$(date +%s%N)
  refresh_settle
  [ $mode = background ] && echo "$set background: the last refresh worker ended $(((settled_ns - t0) / 1000000)) ms after the last statement"
  python3 - "$f.t" "$set" "$mode" "$(cat /proc/loadavg | cut -d' ' -f1-3)" <<'PY'
import sys
t=[float(x) for x in open(sys.argv[1])]
s=sorted(t)
tot=sum(t)/1000
big=[(i+1, round(x)) for i,x in enumerate(t) if x > 20*s[len(s)//2]]
print(f"{sys.argv[2]} {sys.argv[3]:5s} statements {len(t)} total {tot:.2f} s rows/s {len(t)/tot:.0f} p50 {s[len(s)//2]:.2f} ms p99 {s[int(len(s)*0.99)]:.2f} ms max {s[-1]:.0f} ms  slow (row: ms) {big[:12]}  load {sys.argv[4]}")
PY
done
rm -f $f $f.t
