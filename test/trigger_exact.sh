#!/usr/bin/env bash
# Exactness of spotsigs_flag_duplicates() on the NewsFrames dev pages (not part of pg_regress: it
# needs ../shared/data). All 1,353 pages are inserted in a shuffled order in ONE statement into a
# table whose spotsig column is GENERATED ALWAYS AS (spotsigs(body)) STORED, with the trigger in
# mode 'best' at tau 0.8. An independent reference is then computed with plain SQL: for every row,
# the rows inserted before it (smaller insertion number), their similarity(), the highest one at
# or above 0.8, ties to the smallest id. The trigger's duplicate_of and similarity must equal it
# for every row. Mode 'first' is checked too: flagged exactly when the reference flags, with an
# earlier row at or above tau. Mode best under row-level security too: the same rows are inserted
# by a role that sees only the even ids (a SELECT policy), and the reference takes the best of the
# earlier even rows only. Exits non-zero on any difference.
#
# PENDING_LIST_LIMIT (kB, default 4096, the index's default) sets the index's pending_list_limit:
# a small one (64) makes the statement merge the pending list into segments as it goes, so that
# the searches also run through those segments (and the session's filters of them).
#
# Usage (against the server of the PG* environment; the extension must be installed):
#   pg_virtualenv -v 15 test/trigger_exact.sh            (or any database server: PGHOST=... test/trigger_exact.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
pages=${SPOTSIGS_NEWSFRAMES:-$(cd .. && pwd)/shared/data/newsframes-dev/pages.tsv.gz}
db=spotsigs_trigger_exact
limit=${PENDING_LIST_LIMIT:-4096}
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"

psql -X -q -v ON_ERROR_STOP=1 -d "$db" \
  -c "CREATE EXTENSION spotsigs" \
  -c "CREATE TABLE pages (id int PRIMARY KEY, cluster int NOT NULL, host text, kind text, html text)"
zcat "$pages" | psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "\\copy pages from stdin"

psql -X -q -v ON_ERROR_STOP=1 -v limit="$limit" -d "$db" <<'SQL'

-- ord records the order in which the rows arrive (the identity default is evaluated per row, in
-- the order the INSERT processes them, before the BEFORE trigger fires).
CREATE FUNCTION make_articles(name text, mode text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I (
      id int PRIMARY KEY,
      ord int GENERATED ALWAYS AS IDENTITY,
      body text,
      sig spotsig GENERATED ALWAYS AS (spotsigs(body)) STORED,
      duplicate_of int,
      similarity float8)', name);
  EXECUTE format('CREATE INDEX ON %I USING spotsigs (sig) WITH (pending_list_limit = %s)', name,
                 current_setting('trigger_exact.pending_list_limit'));
  EXECUTE format('CREATE TRIGGER dedup BEFORE INSERT OR UPDATE OF body ON %I FOR EACH ROW
      EXECUTE FUNCTION spotsigs_flag_duplicates(''sig'', ''duplicate_of'', ''similarity'', ''0.8'', %L)', name, mode);
END $$;
SET trigger_exact.pending_list_limit = :limit;
SELECT make_articles('articles_best', 'best'), make_articles('articles_first', 'first');
SELECT make_articles('articles_rls', 'best');
ALTER TABLE articles_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY even_ids ON articles_rls FOR SELECT USING (id % 2 = 0);
CREATE POLICY any_insert ON articles_rls FOR INSERT WITH CHECK (true);
DROP ROLE IF EXISTS spotsigs_exact_writer;
CREATE ROLE spotsigs_exact_writer;
GRANT SELECT, INSERT ON articles_rls TO spotsigs_exact_writer;
GRANT SELECT ON pages TO spotsigs_exact_writer;

\timing on
-- One statement each, the same shuffled order (a fixed pseudo-random permutation).
INSERT INTO articles_best (id, body) SELECT id, html FROM pages ORDER BY md5('shuffle' || id);
INSERT INTO articles_first (id, body) SELECT id, html FROM pages ORDER BY md5('shuffle' || id);
SET ROLE spotsigs_exact_writer;
INSERT INTO articles_rls (id, body) SELECT id, html FROM pages ORDER BY md5('shuffle' || id);
RESET ROLE;
\timing off

-- The reference, from similarity() over the earlier rows only (those for which `visible` holds).
CREATE FUNCTION make_reference(name text, articles text, visible text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I AS
      SELECT a.id, best.id AS duplicate_of, best.sim AS similarity
      FROM %I a
      LEFT JOIN LATERAL (
        SELECT b.id, similarity(a.sig, b.sig) AS sim
        FROM %I b
        WHERE b.ord < a.ord AND (%s) AND similarity(a.sig, b.sig) >= 0.8
        ORDER BY similarity(a.sig, b.sig) DESC, b.id
        LIMIT 1) best ON true', name, articles, articles, visible);
END $$;
SELECT make_reference('reference', 'articles_best', 'true');

SELECT count(*) AS rows,
       count(*) FILTER (WHERE duplicate_of IS NOT NULL) AS flagged_by_reference,
       (SELECT count(*) FROM articles_best WHERE duplicate_of IS NOT NULL) AS flagged_best,
       (SELECT count(*) FROM articles_first WHERE duplicate_of IS NOT NULL) AS flagged_first,
       count(*) FILTER (WHERE duplicate_of IS NOT NULL AND (
           SELECT count(*) FROM articles_best a, articles_best b
           WHERE a.id = r.id AND b.ord < a.ord AND similarity(a.sig, b.sig) = r.similarity) > 1)
         AS rows_with_tied_best
FROM reference r;

-- Under the policy: the best of the earlier rows with even ids.
SELECT make_reference('reference_rls', 'articles_rls', 'b.id % 2 = 0');
SELECT count(duplicate_of) AS flagged_by_reference_rls,
       (SELECT count(duplicate_of) FROM articles_rls) AS flagged_rls,
       (SELECT count(*) FROM articles_rls WHERE duplicate_of % 2 = 1) AS matched_hidden_rows
FROM reference_rls;

CREATE TABLE differences AS
SELECT 'best' AS mode, r.id, r.duplicate_of AS ref_dup, r.similarity AS ref_sim,
       a.duplicate_of AS got_dup, a.similarity AS got_sim
FROM reference r JOIN articles_best a USING (id)
WHERE a.duplicate_of IS DISTINCT FROM r.duplicate_of OR a.similarity IS DISTINCT FROM r.similarity
UNION ALL
SELECT 'first', r.id, r.duplicate_of, r.similarity, f.duplicate_of, f.similarity
FROM reference r JOIN articles_first f USING (id)
WHERE (f.duplicate_of IS NULL) <> (r.duplicate_of IS NULL)
   OR (f.duplicate_of IS NOT NULL AND NOT EXISTS (
         SELECT 1 FROM articles_first f0 JOIN articles_first e ON e.id = f.duplicate_of
         WHERE f0.id = f.id AND e.ord < f0.ord
           AND similarity(e.sig, f0.sig) >= 0.8 AND similarity(e.sig, f0.sig) = f.similarity));
INSERT INTO differences
SELECT 'rls', r.id, r.duplicate_of, r.similarity, a.duplicate_of, a.similarity
FROM reference_rls r JOIN articles_rls a USING (id)
WHERE a.duplicate_of IS DISTINCT FROM r.duplicate_of OR a.similarity IS DISTINCT FROM r.similarity;
SELECT * FROM differences ORDER BY mode, id LIMIT 20;
SQL

n=$(psql -X -At -d "$db" -c "SELECT count(*) FROM differences")
if [ "$n" != 0 ]; then
  echo "FAIL: $n rows differ from the reference"
  exit 1
fi
echo "OK: every row equals the reference (mode best, also under row-level security), and mode first flags the same rows"
psql -X -q -At -d "$db" -c "SELECT format('index %s: pending_list_limit %s kB, %s segments after the insert',
    c.relname, $limit, (SELECT count(DISTINCT segment) FROM spotsigs_index_stats(c.oid) WHERE segment >= 0))
  FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'spotsigs' ORDER BY 1"
psql -X -q -d postgres -c "DROP DATABASE $db"
psql -X -q -d postgres -c "DROP ROLE spotsigs_exact_writer"
