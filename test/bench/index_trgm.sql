-- spotsigs vs pg_trgm on the same text: docs(id, body) with its signatures in base(id, sig).
-- Builds a spotsigs index on base and pg_trgm's GIN index on docs.body, then times % at 0.8
-- (each extension's own similarity) for :ntrgm sample documents through each index.
\set ON_ERROR_STOP on
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DROP INDEX IF EXISTS base_sig;
DROP INDEX IF EXISTS docs_trgm;
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX base_sig ON base USING spotsigs (sig);
SELECT extract(epoch FROM clock_timestamp() - :'t0') AS spotsigs_build_s \gset
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX docs_trgm ON docs USING gin (body gin_trgm_ops);
SELECT extract(epoch FROM clock_timestamp() - :'t0') AS trgm_build_s \gset
ANALYZE base;
ANALYZE docs;
CREATE TABLE IF NOT EXISTS figures_text (what text, value text, seq serial);
DELETE FROM figures_text WHERE what LIKE 'text %';
INSERT INTO figures_text VALUES
  ('text rows', (SELECT count(*) FROM docs)::text),
  ('text spotsigs build (s)', round(:spotsigs_build_s::numeric, 1)::text),
  ('text pg_trgm GIN build (s)', round(:trgm_build_s::numeric, 1)::text),
  ('text spotsigs index (MB)', round(pg_relation_size('base_sig') / 1048576.0, 1)::text),
  ('text pg_trgm GIN index (MB)', round(pg_relation_size('docs_trgm') / 1048576.0, 1)::text);

DROP TABLE IF EXISTS trgm_q;
CREATE TABLE trgm_q AS SELECT row_number() OVER () AS n, id FROM (SELECT id FROM docs ORDER BY hashint8(id) LIMIT :ntrgm) s;

-- Per query, spotsigs (sig % q at 0.8 through its index) and then pg_trgm (body % q at 0.8
-- through its GIN index) one after the other, so both see the same machine conditions.
DROP TABLE IF EXISTS trgm_lat;
CREATE TABLE trgm_lat (kind text, n int, ms float8, nrows bigint);
DO $$
DECLARE q record; t0 timestamptz; c bigint; qsig spotsig; qbody text;
BEGIN
  PERFORM set_config('spotsigs.similarity_threshold', '0.8', true);
  PERFORM set_config('pg_trgm.similarity_threshold', '0.8', true);
  PERFORM set_config('enable_seqscan', 'off', true);
  FOR q IN SELECT n, id FROM trgm_q ORDER BY n LOOP
    SELECT sig INTO qsig FROM base WHERE id = q.id;
    SELECT body INTO qbody FROM docs WHERE id = q.id;
    t0 := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM base WHERE sig % $1' INTO c USING qsig;
    INSERT INTO trgm_lat VALUES ('spotsigs', q.n, extract(epoch FROM clock_timestamp() - t0) * 1000, c);
    t0 := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM docs WHERE body % $1' INTO c USING qbody;
    INSERT INTO trgm_lat VALUES ('trgm', q.n, extract(epoch FROM clock_timestamp() - t0) * 1000, c);
  END LOOP;
END $$;
INSERT INTO figures_text
SELECT 'text ' || kind || ' % 0.8 ' || stat, value FROM (
  SELECT kind, 'p50 (ms)' AS stat, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3)::text AS value FROM trgm_lat GROUP BY kind
  UNION ALL SELECT kind, 'p95 (ms)', round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 3)::text FROM trgm_lat GROUP BY kind
  UNION ALL SELECT kind, 'max (ms)', round(max(ms)::numeric, 3)::text FROM trgm_lat GROUP BY kind
  UNION ALL SELECT kind, 'rows found', sum(nrows)::text FROM trgm_lat GROUP BY kind) s
ORDER BY kind, stat;
INSERT INTO figures_text
SELECT 'text pg_trgm/spotsigs p50 ratio', round((SELECT value::numeric FROM figures_text WHERE what = 'text trgm % 0.8 p50 (ms)')
                                             / (SELECT value::numeric FROM figures_text WHERE what = 'text spotsigs % 0.8 p50 (ms)'), 1)::text;

SELECT what, value FROM figures_text ORDER BY seq;
