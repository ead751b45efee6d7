#!/usr/bin/env bash
# content_query_eval.sh: % with the content query on the dev sets: every page as the query, the
# rows returned (itself left out) as its pairs, scored with score-pairs; the table analyzed first,
# searched through its spotsigs index; the same for a bare `p.sig % q.sig` with no setting
# (spotsigs.similarity_threshold 'auto', rewritten to the content measure). Also each query's time
# through the index, p50 and p95: % spotsig_content_query and the bare % beside the plain
# % spotsig_query(q, 0.4), and ORDER BY <-> LIMIT 10 by content (spotsig_content_query, and a
# bare <-> under 'auto') beside the plain one (a bare <-> under the setting 0.4); one run,
# alternating, in the backend (clock_timestamp around each statement).
# Usage: test/with-cluster test/eval/content_query_eval.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=$(cd ../shared 2>/dev/null || cd ../../shared; pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
for set in newsframes-dev docversions-dev; do
  q <<SQL
DROP TABLE IF EXISTS pages;
CREATE TABLE src (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'
CREATE TABLE pages AS SELECT id, spotsigs(html) AS sig FROM src;
DROP TABLE src;
ALTER TABLE pages ADD PRIMARY KEY (id);
CREATE INDEX pages_sig ON pages USING spotsigs (sig);
VACUUM ANALYZE pages;
SELECT spotsigs_analyze('pages', 'sig');
SQL
  q -At -F ' ' -c 'SET enable_seqscan = off' -c "SELECT q.id, p.id FROM pages q, pages p
      WHERE p.sig % spotsig_content_query(q.sig, 'pages', 'sig') AND p.id <> q.id" > "$tmp/pairs"
  echo "$set: % spotsig_content_query(q, 'pages', 'sig'), every page as the query:"
  "$shared/tools/score-pairs" "$shared/data/$set/pages.tsv.gz" "$tmp/pairs" | grep pairwise
  q -At -F ' ' -c 'SET enable_seqscan = off' -c "SELECT q.id, p.id FROM pages q, pages p
      WHERE p.sig % q.sig AND p.id <> q.id" > "$tmp/pairs"
  echo "$set: bare p.sig % q.sig with no setting ('auto'), every page as the query:"
  "$shared/tools/score-pairs" "$shared/data/$set/pages.tsv.gz" "$tmp/pairs" | grep pairwise
  q -At <<'SQL'
SET enable_seqscan = off;
CREATE TEMP TABLE t (kind text, ms float8);
DO $$
DECLARE r record; t0 timestamptz; n bigint;
BEGIN
  FOR r IN SELECT id, sig FROM pages ORDER BY id LOOP
    t0 := clock_timestamp();
    SELECT count(*) INTO n FROM pages p WHERE p.sig % spotsig_content_query(r.sig, 'pages', 'sig');
    INSERT INTO t VALUES ('content', extract(epoch FROM clock_timestamp() - t0) * 1000);
    t0 := clock_timestamp();
    SELECT count(*) INTO n FROM pages p WHERE p.sig % r.sig;
    INSERT INTO t VALUES ('bare % (auto)', extract(epoch FROM clock_timestamp() - t0) * 1000);
    t0 := clock_timestamp();
    SELECT count(*) INTO n FROM pages p WHERE p.sig % spotsig_query(r.sig, 0.4);
    INSERT INTO t VALUES ('plain 0.4', extract(epoch FROM clock_timestamp() - t0) * 1000);
    IF to_regprocedure('spotsig_content_distance(spotsig, spotsigs_content_query)') IS NOT NULL THEN
      t0 := clock_timestamp();
      EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM pages p ORDER BY p.sig <-> spotsig_content_query($1, ''pages'', ''sig'') LIMIT 10) x'
        INTO n USING r.sig;
      INSERT INTO t VALUES ('<-> content LIMIT 10', extract(epoch FROM clock_timestamp() - t0) * 1000);
      t0 := clock_timestamp();
      SELECT count(*) INTO n FROM (SELECT 1 FROM pages p ORDER BY p.sig <-> r.sig LIMIT 10) x;
      INSERT INTO t VALUES ('<-> bare (auto) LIMIT 10', extract(epoch FROM clock_timestamp() - t0) * 1000);
      -- A numeric setting makes the bare <-> the plain distance.
      PERFORM set_config('spotsigs.similarity_threshold', '0.4', true);
      t0 := clock_timestamp();
      SELECT count(*) INTO n FROM (SELECT 1 FROM pages p ORDER BY p.sig <-> r.sig LIMIT 10) x;
      INSERT INTO t VALUES ('<-> plain LIMIT 10', extract(epoch FROM clock_timestamp() - t0) * 1000);
      PERFORM set_config('spotsigs.similarity_threshold', 'auto', true);
    END IF;
  END LOOP;
END $$;
SELECT kind || ': p50 ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3) || ' ms, p95 '
       || round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 3) || ' ms' FROM t GROUP BY kind ORDER BY kind;
SQL
done
