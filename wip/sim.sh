#!/usr/bin/env bash
# simulation of the growth policy: analyze + flag_batch at n_before = points
set -euo pipefail
seed=${1:-1}; G=${2:-2}; M=${3:-16}
shared=/work/shared
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
tmp=$(mktemp -d)
for set in newsframes-dev docversions-dev; do
  q <<SQL
DROP TABLE IF EXISTS src;
CREATE TABLE src (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'
ALTER TABLE src ADD COLUMN sig spotsig, ADD COLUMN ord int;
UPDATE src SET sig = spotsigs(html);
UPDATE src s SET ord = o.n FROM (SELECT id, row_number() OVER (ORDER BY md5(id::text || ':$seed')) n FROM src) o WHERE o.id = s.id;
SQL
  n=$(q -At -c 'SELECT count(*) FROM src'); half=$((n/2))
  for scenario in empty half; do
    q <<SQL
DROP TABLE IF EXISTS pages;
CREATE TABLE pages (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON pages USING spotsigs (sig);
CREATE TRIGGER flag BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig','dup','sim');
SQL
    done_=0; analyzed=0
    step() { # insert up to $1
      q -c "INSERT INTO pages (id, sig) SELECT id, sig FROM src WHERE ord > $done_ AND ord <= $1 ORDER BY ord"; done_=$1; }
    reanalyze() { q -At -c "SELECT spotsigs_analyze('pages','sig')" -c "SELECT spotsigs_flag_batch('pages','id','sig','dup','sim',NULL,-9223372036854775808)" >/dev/null; analyzed=$done_; }
    limit=$n; [ $scenario = half ] && limit=$half
    while :; do
      p=$(python3 -c "import math;print(max($M, math.ceil($G*$analyzed)))")
      [ $p -ge $limit ] && break
      step $p; reanalyze
    done
    step $limit
    if [ $scenario = half ]; then
      q -At -c "SELECT spotsigs_analyze('pages','sig')" >/dev/null; analyzed=$half
      while :; do
        p=$(python3 -c "import math;print(max($M, math.ceil($G*$analyzed)))")
        [ $p -ge $n ] && break
        step $p; reanalyze
      done
      step $n
    fi
    q -At -F ' ' -c 'SELECT id, dup FROM pages WHERE dup IS NOT NULL' > "$tmp/edges"
    python3 - "$tmp/edges" > "$tmp/pairs" <<'PY'
import sys, itertools, collections
parent = {}
def find(x):
    while parent.setdefault(x, x) != x:
        parent[x] = parent[parent[x]]; x = parent[x]
    return x
for line in open(sys.argv[1]):
    a, b = line.split(); ra, rb = find(a), find(b)
    if ra != rb: parent[ra] = rb
groups = collections.defaultdict(list)
for x in list(parent): groups[find(x)].append(x)
for g in groups.values():
    for a, b in itertools.combinations(sorted(g, key=int), 2): print(a, b)
PY
    res=$("$shared/tools/score-pairs" "$shared/data/$set/pages.tsv.gz" "$tmp/pairs" | grep -i -m1 'pairwise' || true)
    echo "$set seed $seed G $G M $M $scenario last_analyzed $analyzed $res"
  done
done
