#!/usr/bin/env bash
# Exactness of the content measure's trigger and % search on both dev sets (needs ../shared/data;
# not part of pg_regress). Per set: the pages in a shuffled order; the first half inserted and
# analyzed (spotsigs_analyze), the second half inserted in ONE statement through the trigger
# without a threshold. Reference in plain SQL on the stored template t: every row's content
# c = spotsig_remove(sig, t); for each row of the second half, the earlier row (smaller insertion
# number) of highest similarity(c, c') >= 0.4, ties to the smallest id; but a row the trigger's
# statistics refresh re-flagged (when the table grew by a quarter, docs/ingest.md) has the best match of
# smaller id among the rows that refresh saw. duplicate and similarity must equal it for every row. Then % spotsig_content_query(q, ...) through the index for every
# 5th page must return exactly the rows with similarity(c_q, c) >= 0.4, and ORDER BY <-> by
# content the brute force's distances (below). Exits non-zero on any
# difference. PENDING_LIST_LIMIT (kB, default 4096) as in trigger_exact.sh: 64 makes the
# statement merge its pending list into segments as it goes. The arguments name the sets
# (default both; test/run-all runs each set once, newsframes-dev with the default limit and
# docversions-dev with 64, so that both ways of searching are checked at half the cost).
# Usage: test/with-cluster test/content_trigger_exact.sh [newsframes-dev] [docversions-dev]
set -euo pipefail
cd "$(dirname "$0")/.."
shared=$(cd ../shared 2>/dev/null || cd ../../shared; pwd)
limit=${PENDING_LIST_LIMIT:-4096}
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
source test/exact_lib.sh
now() { date +%s.%N; }
since() { printf '%.1f s' "$(echo "$(now) - $1" | bc)"; }
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
status=0
[ $# -gt 0 ] || set -- newsframes-dev docversions-dev
for set in "$@"; do
  q <<SQL
DROP TABLE IF EXISTS src, pages, ref, truth, newrows, archive, archive_t, archive_c, batch;
CREATE TABLE src (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'
CREATE TABLE pages (id int PRIMARY KEY, ord int, sig spotsig, dup int, sim float8);
CREATE INDEX pages_sig ON pages USING spotsigs (sig) WITH (pending_list_limit = $limit);
CREATE TEMP TABLE shuffled AS
SELECT id, row_number() OVER (ORDER BY md5(id::text || ':content')) AS ord, spotsigs(html) AS sig FROM src;
INSERT INTO pages (id, ord, sig) SELECT id, ord, sig FROM shuffled WHERE ord <= (SELECT count(*) / 2 FROM shuffled);
SELECT spotsigs_analyze('pages', 'sig') IS NOT NULL;
CREATE TRIGGER flag BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
INSERT INTO pages (id, ord, sig) SELECT id, ord, sig FROM shuffled WHERE ord > (SELECT count(*) / 2 FROM shuffled) ORDER BY ord;
CREATE TABLE ref AS
SELECT p.id, p.ord, spotsig_remove(p.sig, s.template) AS c FROM pages p, spotsigs_stats s
WHERE s.relation = 'pages'::regclass AND s.sig_column = 'sig';
SQL
  res=$(q -At -F ' ' <<'SQL'
WITH seen AS (
  -- the rows the last statistics saw: the first half, or the rows before the refresh that
  -- stored them (docs/ingest.md); that refresh flagged each by its best match of smaller id
  SELECT rows_analyzed AS n FROM spotsigs_stats WHERE relation = 'pages'::regclass AND sig_column = 'sig'),
best AS (
  SELECT n.id, b.id AS dup, b.s FROM ref n LEFT JOIN LATERAL (
    SELECT o.id, similarity(n.c, o.c) AS s FROM ref o
    WHERE CASE WHEN n.ord <= (SELECT n FROM seen) THEN o.ord <= (SELECT n FROM seen) AND o.id < n.id
               ELSE o.ord < n.ord END
      AND similarity(n.c, o.c) >= 0.4 ORDER BY 2 DESC, o.id LIMIT 1) b ON true
  WHERE n.ord > (SELECT count(*) / 2 FROM ref))
SELECT count(*) FILTER (WHERE p.dup IS NOT NULL),
       count(*) FILTER (WHERE p.dup IS DISTINCT FROM best.dup OR p.sim IS DISTINCT FROM best.s)
FROM best JOIN pages p USING (id);
SQL
)
  read -r flagged diffs <<<"$res"
  echo "$set: trigger without a threshold, pending_list_limit $limit: $flagged rows flagged, $diffs differences from the reference"
  [ "$diffs" = 0 ] || status=1
  res=$(q -At -F ' ' <<'SQL'
SET enable_seqscan = off;
SELECT count(*), count(*) FILTER (WHERE got IS DISTINCT FROM want), sum(coalesce(cardinality(got), 0))
FROM (SELECT q.id,
             (SELECT array_agg(p.id ORDER BY p.id) FROM pages p
               WHERE p.sig % spotsig_content_query(q.sig, 'pages', 'sig')) AS got,
             (SELECT array_agg(o.id ORDER BY o.id) FROM ref o, ref rq
               WHERE rq.id = q.id AND similarity(rq.c, o.c) >= 0.4) AS want
      FROM pages q WHERE q.id % 5 = 0) x;
SQL
)
  read -r queries qdiffs rows <<<"$res"
  echo "$set: % spotsig_content_query, $queries queries through the index, $rows rows: $qdiffs differences"
  [ "$qdiffs" = 0 ] || status=1
  # ORDER BY <-> spotsig_content_query through the index's ordered scan: for every 5th page the 10
  # nearest have the distances of the brute force's sort and the same rows above the 10th
  # distance; for every 25th page the whole order holds every row at its brute-force distance.
  res=$(q -At -F ' ' <<'SQL'
SET enable_seqscan = off;
CREATE TEMP TABLE dist AS
SELECT rq.id AS q, o.id AS b, 1 - similarity(rq.c, o.c) AS d FROM ref rq, ref o WHERE rq.id % 5 = 0;
SELECT count(*), count(*) FILTER (WHERE got_d IS DISTINCT FROM want_d OR got_above IS DISTINCT FROM want_above)
FROM (SELECT q.id,
             (SELECT array_agg(d ORDER BY d) FROM (SELECT p.sig <-> spotsig_content_query(q.sig, 'pages', 'sig') AS d
                FROM pages p ORDER BY p.sig <-> spotsig_content_query(q.sig, 'pages', 'sig') LIMIT 10) x) AS got_d,
             (SELECT array_agg(d ORDER BY d) FROM (SELECT d FROM dist WHERE dist.q = q.id ORDER BY d LIMIT 10) x) AS want_d,
             (SELECT array_agg(b ORDER BY b) FROM (SELECT p.id AS b, p.sig <-> spotsig_content_query(q.sig, 'pages', 'sig') AS d
                FROM pages p ORDER BY p.sig <-> spotsig_content_query(q.sig, 'pages', 'sig') LIMIT 10) x
               WHERE d < (SELECT max(d) FROM (SELECT d FROM dist WHERE dist.q = q.id ORDER BY d LIMIT 10) t)) AS got_above,
             (SELECT array_agg(b ORDER BY b) FROM (SELECT b, d FROM dist WHERE dist.q = q.id ORDER BY d LIMIT 10) x
               WHERE d < (SELECT max(d) FROM (SELECT d FROM dist WHERE dist.q = q.id ORDER BY d LIMIT 10) t)) AS want_above
      FROM pages q WHERE q.id % 5 = 0) x;
SELECT count(*) FILTER (WHERE
         (SELECT array_agg(ROW(d, b) ORDER BY d, b) FROM (SELECT p.id AS b, p.sig <-> spotsig_content_query(q.sig, 'pages', 'sig') AS d
            FROM pages p ORDER BY p.sig <-> spotsig_content_query(q.sig, 'pages', 'sig')) x)
         IS DISTINCT FROM (SELECT array_agg(ROW(d, b) ORDER BY d, b) FROM dist WHERE dist.q = q.id))
FROM pages q WHERE q.id % 25 = 0;
SQL
)
  read -r oqueries odiffs fdiffs <<<"$(echo $res)"
  echo "$set: ORDER BY <-> spotsig_content_query LIMIT 10, $oqueries queries through the index: $odiffs differences; whole order, every 25th page: $fdiffs differences"
  [ "$odiffs" = 0 ] && [ "$fdiffs" = 0 ] || status=1
  # The other paths that use the stored template by default, against the brute force on it. The
  # stored template is the first half's while the table holds both halves, so a path that
  # computed a template from the rows it reads instead would use another one (printed: they differ).
  # truth: every pair of rows of pages with content similarity >= 0.4 on the stored template.
  t0=$(now)
  q <<'SQL'
DROP TABLE IF EXISTS truth, newrows, archive, archive_t, archive_c, batch;
CREATE TABLE truth AS SELECT a.id::bigint AS id1, b.id::bigint AS id2, similarity(a.c, b.c) AS similarity
FROM ref a JOIN ref b ON a.id < b.id WHERE similarity(a.c, b.c) >= 0.4;
CREATE TABLE newrows AS SELECT id, sig FROM pages WHERE ord > (SELECT count(*) / 2 FROM pages);
CREATE TABLE archive AS SELECT id, sig FROM pages WHERE ord <= (SELECT count(*) / 2 FROM pages);
CREATE TABLE archive_t AS SELECT spotsigs_template('archive', 'id', 'sig') AS t;
CREATE TABLE archive_c AS SELECT a.id, a.ord, spotsig_remove(a.sig, t.t) AS c FROM (SELECT p.id, p.ord, p.sig FROM pages p) a, archive_t t;
SQL
  # spotsigs_join and spotsigs_clusters with no threshold: pairs and similarities equal the truth's,
  # clusters its connected components.
  tdiff=$(q -At -c "SELECT spotsigs_template('pages', 'id', 'sig') IS DISTINCT FROM s.template FROM spotsigs_stats s
                    WHERE s.relation = 'pages'::regclass AND s.sig_column = 'sig'")
  c_truth=$(since "$t0") t0=$(now)
  d_join=$(diff_count "TABLE truth" "SELECT * FROM spotsigs_join('pages', 'id', 'sig')")
  d_clusters=$(cluster_diff "SELECT id1, id2 FROM truth" "SELECT * FROM spotsigs_clusters('pages', 'id', 'sig')")
  c_joins=$(since "$t0") t0=$(now)
  # spotsigs_join_rs with no threshold: the second half against the whole table (its stored
  # template), and against the first half copied to a table with no statistics (the template
  # computed from that table's rows, spotsigs_template).
  d_rs=$(diff_count "SELECT n.id::bigint, o.id::bigint, similarity(n.c, o.c) FROM ref n, ref o
                     WHERE n.ord > (SELECT count(*) / 2 FROM ref) AND similarity(n.c, o.c) >= 0.4" \
                    "SELECT * FROM spotsigs_join_rs('newrows', 'id', 'sig', 'pages', 'id', 'sig')")
  d_rs_none=$(diff_count "SELECT n.id::bigint, o.id::bigint, similarity(n.c, o.c) FROM archive_c n, archive_c o, archive
                          WHERE n.ord > (SELECT count(*) / 2 FROM ref) AND o.id = archive.id AND similarity(n.c, o.c) >= 0.4" \
                         "SELECT * FROM spotsigs_join_rs('newrows', 'id', 'sig', 'archive', 'id', 'sig')")
  c_rs=$(since "$t0") t0=$(now)
  # spotsigs_flag_batch with a NULL threshold: ids are the insertion order; the first half
  # analyzed, the second half flagged in one call: as the trigger's reference, on the table's
  # own stored template.
  d_batch=$(psql_q <<'SQL'
CREATE TABLE batch (id bigint PRIMARY KEY, sig spotsig, dup bigint, sim float8);
INSERT INTO batch (id, sig) SELECT ord, sig FROM pages WHERE ord <= (SELECT count(*) / 2 FROM pages);
SELECT spotsigs_analyze('batch', 'sig') IS NULL;
INSERT INTO batch (id, sig) SELECT ord, sig FROM pages WHERE ord > (SELECT count(*) / 2 FROM pages);
SELECT spotsigs_flag_batch('batch', 'id', 'sig', 'dup', 'sim', NULL, (SELECT count(*) / 2 + 1 FROM pages)) IS NULL;
WITH c AS (SELECT b.id, spotsig_remove(b.sig, s.template) AS c FROM batch b, spotsigs_stats s
           WHERE s.relation = 'batch'::regclass AND s.sig_column = 'sig'),
     best AS (SELECT n.id, m.id AS dup, m.s FROM c n LEFT JOIN LATERAL (
                SELECT o.id, similarity(n.c, o.c) AS s FROM c o
                WHERE o.id < n.id AND similarity(n.c, o.c) >= 0.4 ORDER BY 2 DESC, o.id LIMIT 1) m ON true
              WHERE n.id > (SELECT count(*) / 2 FROM pages))
SELECT count(*) FILTER (WHERE b.dup IS DISTINCT FROM best.dup OR b.sim IS DISTINCT FROM best.s)
FROM best JOIN batch b USING (id);
SQL
)
  d_batch=$(tail -1 <<<"$d_batch")
  c_batch=$(since "$t0") t0=$(now)
  # The bare % under spotsigs.similarity_threshold = auto (the default) on the analyzed column,
  # every 5th page's signature as the query, through the index and through a sequential scan:
  # exactly the rows whose content similarity reaches 0.4.
  bare() {
    q -At -c "$1" -c "SELECT count(*) FILTER (WHERE got IS DISTINCT FROM want)
      FROM (SELECT q.id,
                   (SELECT array_agg(p.id ORDER BY p.id) FROM pages p WHERE p.sig % q.sig) AS got,
                   (SELECT array_agg(o.id ORDER BY o.id) FROM ref o, ref rq
                     WHERE rq.id = q.id AND similarity(rq.c, o.c) >= 0.4) AS want
            FROM pages q WHERE q.id % 5 = 0) x"
  }
  d_bare_index=$(bare 'SET enable_seqscan = off')
  d_bare_seq=$(bare 'SET enable_indexscan = off; SET enable_bitmapscan = off')
  c_bare=$(since "$t0") t0=$(now)
  # The SQL join on a bare %, planned as the join's custom scan: the truth's pairs. (Without the
  # custom scan each row's bare % is the search checked above.)
  sqljoin="SELECT a.id::bigint, b.id::bigint FROM pages a JOIN pages b ON a.sig % b.sig AND a.id < b.id"
  plan=$(q -At -c "EXPLAIN (COSTS OFF) $sqljoin" | grep -c 'SpotsigsJoin' || true)
  d_sql=$(diff_count "SELECT id1, id2 FROM truth" "$sqljoin")
  c_sql=$(since "$t0")
  echo "$set: stored template (differs from one computed now: $tdiff), $(q -At -c 'SELECT count(*) FROM truth') pairs ($c_truth):"
  echo "  spotsigs_join $d_join differences, spotsigs_clusters $d_clusters ($c_joins); spotsigs_join_rs (stored) $d_rs,"
  echo "  spotsigs_join_rs (none stored, computed from the archive) $d_rs_none ($c_rs); spotsigs_flag_batch NULL $d_batch ($c_batch);"
  echo "  bare % under auto: index $d_bare_index, sequential scan $d_bare_seq ($c_bare); SQL join a.sig % b.sig (SpotsigsJoin in plan: $plan) $d_sql differences ($c_sql)"
  for d in "$d_join" "$d_clusters" "$d_rs" "$d_rs_none" "$d_batch" "$d_bare_index" "$d_bare_seq" "$d_sql"; do
    [ "$d" = 0 ] || status=1
  done
  [ "$plan" -ge 1 ] || { echo "$set: the SQL join was not planned as SpotsigsJoin"; status=1; }
done
exit $status
