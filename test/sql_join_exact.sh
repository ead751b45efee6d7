#!/usr/bin/env bash
# Exactness of the SQL join (the SpotsigsJoin custom scan, docs/sql-join.md) on both dev sets
# (needs ../shared/data; pg_regress cannot read it). Per set, the pages' signatures in `pages`
# and its two halves (even and odd ids) in `pr` and `ps`; every query below runs with the custom
# scan (its plan must show it) and with spotsigs.enable_join = off (PostgreSQL's nested loop,
# evaluating the clause on every pair), and both must give the same rows, similarities included:
#   * the plain measure at 0.3, 0.6 and 0.9 (the bare % at a numeric setting, similarity() >= tau
#     and % spotsig_query(b, tau)): the self join, the join of the halves, and semi and anti
#     joins, self and two-table;
#   * the content measure (spotsigs_analyze, then the bare % under 'auto', and
#     spotsig_content_query): the self join and the anti join of the halves.
# Exits non-zero on any difference, or when a query is not planned as the custom scan.
# Usage: test/with-cluster test/sql_join_exact.sh
set -euo pipefail
cd "$(dirname "$0")/.."
shared=$(cd ../shared 2>/dev/null || cd ../../shared; pwd)
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
q <<'SQL'
-- sj_exact(q, setting): q's rows under spotsigs.similarity_threshold = setting with the custom
-- scan and without it: 'ok N rows' when they are the same multiset and the first plan used the
-- custom scan; otherwise what differs.
CREATE OR REPLACE FUNCTION sj_exact(q text, setting text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  custom boolean := false;
  n_on bigint;
  n_off bigint;
  diff bigint;
BEGIN
  PERFORM set_config('spotsigs.similarity_threshold', setting, true);
  PERFORM set_config('spotsigs.enable_join', 'on', true);
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line LIKE '%Custom Scan (SpotsigsJoin)%' THEN custom := true; END IF;
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE sj_on AS ' || q;
  PERFORM set_config('spotsigs.enable_join', 'off', true);
  EXECUTE 'CREATE TEMP TABLE sj_off AS ' || q;
  PERFORM set_config('spotsigs.enable_join', 'on', true);
  SELECT count(*) INTO n_on FROM sj_on;
  SELECT count(*) INTO n_off FROM sj_off;
  SELECT count(*) INTO diff FROM ((TABLE sj_on EXCEPT ALL TABLE sj_off) UNION ALL
                                  (TABLE sj_off EXCEPT ALL TABLE sj_on)) d;
  DROP TABLE sj_on, sj_off;
  IF NOT custom THEN RETURN 'NOT PLANNED AS SpotsigsJoin'; END IF;
  IF diff <> 0 OR n_on <> n_off THEN
    RETURN format('DIFFERENT: %s rows with the custom scan, %s without, %s differing', n_on, n_off, diff);
  END IF;
  RETURN format('ok %s rows', n_on);
END $$;
SQL
status=0
for set in newsframes-dev docversions-dev; do
  q <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS src, pages, pr, ps;
CREATE TABLE src (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'
CREATE TABLE pages AS SELECT id, spotsigs(html) AS sig FROM src;
CREATE TABLE pr AS SELECT id, sig FROM pages WHERE id % 2 = 0;
CREATE TABLE ps AS SELECT id, sig FROM pages WHERE id % 2 = 1;
ANALYZE pages, pr, ps;
SQL
  echo "== $set: $(q -At -c "SELECT count(*) || ' pages, ' || count(*) FILTER (WHERE length(sig) = 0) || ' empty' FROM pages")"
  plain=()
  for tau in 0.3 0.6 0.9; do
    plain+=(
      "$tau|SELECT a.id AS x, b.id AS y, similarity(a.sig, b.sig) AS s FROM pages a JOIN pages b ON a.sig % b.sig AND a.id < b.id"
      "$tau|SELECT a.id AS x, b.id AS y FROM pages a JOIN pages b ON similarity(a.sig, b.sig) >= $tau"
      "$tau|SELECT r.id AS x, s.id AS y, similarity(r.sig, s.sig) AS s FROM pr r JOIN ps s ON r.sig % s.sig"
      "$tau|SELECT r.id AS x, s.id AS y FROM ps s JOIN pr r ON s.sig % spotsig_query(r.sig, $tau)"
      "$tau|SELECT r.id AS x FROM pr r WHERE EXISTS (SELECT 1 FROM ps s WHERE r.sig % s.sig)"
      "$tau|SELECT r.id AS x FROM pr r WHERE NOT EXISTS (SELECT 1 FROM ps s WHERE r.sig % s.sig)"
      "$tau|SELECT a.id AS x FROM pages a WHERE EXISTS (SELECT 1 FROM pages b WHERE a.sig % b.sig AND a.id <> b.id)"
      "$tau|SELECT a.id AS x FROM pages a WHERE NOT EXISTS (SELECT 1 FROM pages b WHERE similarity(a.sig, b.sig) >= $tau AND a.id < b.id)"
    )
  done
  content=(
    "auto|SELECT a.id AS x, b.id AS y FROM pages a JOIN pages b ON a.sig % b.sig AND a.id < b.id"
    "auto|SELECT r.id AS x FROM pr r WHERE NOT EXISTS (SELECT 1 FROM ps s WHERE s.sig % spotsig_content_query(r.sig, 'pages', 'sig'))"
  )
  for case in "${plain[@]}" analyze "${content[@]}"; do
    if [ "$case" = analyze ]; then
      q -At -c "SELECT 'spotsigs_analyze: ' || spotsigs_analyze('pages', 'sig', 'id') || ' template signatures'"
      continue
    fi
    setting=${case%%|*}
    sql=${case#*|}
    res=$(echo "SELECT sj_exact(:'q', :'s')" | q -At -v q="$sql" -v s="$setting")
    echo "$setting  $sql: $res"
    [[ $res == ok* ]] || status=1
  done
done
q -c 'DROP TABLE src, pages, pr, ps; DROP FUNCTION sj_exact(text, text)'
[ $status -eq 0 ] && echo "sql_join_exact: every query equal to the nested loop" || echo "sql_join_exact: DIFFERENCES (above)"
exit $status
