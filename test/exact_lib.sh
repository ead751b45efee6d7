# Shell functions shared by the exactness scripts (join_exact.sh, content_exact.sh); sourced.

psql_q() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }

# diff_count(query_a, query_b): rows in exactly one of the two results.
diff_count() {
  psql_q -c "SELECT count(*) FROM (($1 EXCEPT $2) UNION ALL ($2 EXCEPT $1)) d"
}

# load_pages(dir): the table pages of dir/pages.tsv.gz with a column sig = spotsigs(html).
load_pages() {
  psql_q <<SQL
CREATE EXTENSION IF NOT EXISTS spotsigs;
DROP TABLE IF EXISTS pages;
CREATE TABLE pages (id int PRIMARY KEY, cluster int NOT NULL, host text, kind text, html text);
\copy pages from program 'zcat "$1/pages.tsv.gz"'
ALTER TABLE pages ADD COLUMN sig spotsig;
UPDATE pages SET sig = spotsigs(html);
SQL
}

# cluster_diff(edges, clusters): rows (id, smallest id of its component) that differ between
# the connected components of the pairs (id1, id2) of the query edges over the rows of pages
# with a signature, found by label propagation, and the (id, cluster) rows of the query clusters.
cluster_diff() {
  psql_q <<SQL
DROP TABLE IF EXISTS labels;
CREATE TABLE labels AS SELECT id::bigint AS id, id::bigint AS l FROM pages WHERE sig IS NOT NULL;
DO \$\$
DECLARE changed bigint;
BEGIN
  LOOP
    UPDATE labels x SET l = m.l
    FROM (SELECT e.a AS id, min(y.l) AS l
          FROM (SELECT id1 AS a, id2 AS b FROM ($1) t UNION ALL SELECT id2, id1 FROM ($1) t) e
          JOIN labels y ON y.id = e.b GROUP BY e.a) m
    WHERE x.id = m.id AND m.l < x.l;
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
  END LOOP;
END \$\$;
SELECT count(*) FROM ((TABLE labels EXCEPT $2) UNION ALL ($2 EXCEPT TABLE labels)) d;
SQL
}
