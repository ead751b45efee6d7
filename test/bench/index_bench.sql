-- The spotsigs index benchmark on bench(id, sig) (see index_gen.sql) and docs(id, body):
-- build time, index size against the column, % at tau 0.8 and top-10 <-> latency (p50/p95) over
-- :nq queries through the index, the same queries by sequential scan (:nseq of them), and % on
-- the text through pg_trgm's GIN index (on docs, :ntrgm queries). Prints one table of figures_index.
-- Run with -v rebuild=0 to keep an existing index and only measure the queries.
\set ON_ERROR_STOP on
\if :{?rebuild}
\else
\set rebuild 1
\endif
\if :rebuild
\timing on
DROP INDEX IF EXISTS bench_sig;
VACUUM ANALYZE bench;
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX bench_sig ON bench USING spotsigs (sig);
SELECT extract(epoch FROM clock_timestamp() - :'t0') AS build_s \gset
\timing off
SELECT spotsigs_index_check('bench_sig');
ANALYZE bench;

DROP TABLE IF EXISTS figures_index;
CREATE TABLE figures_index (what text, value text, seq serial);
INSERT INTO figures_index VALUES
  ('rows', (SELECT count(*) FROM bench)::text),
  ('build time (s)', round(:build_s::numeric, 1)::text),
  ('signature column (MB)', round(((SELECT sum(pg_column_size(sig)) FROM bench) / 1048576.0)::numeric, 1)::text),
  ('index (MB)', round((pg_relation_size('bench_sig') / 1048576.0)::numeric, 1)::text);
INSERT INTO figures_index VALUES ('index / column', round((SELECT pg_relation_size('bench_sig')::numeric / sum(pg_column_size(sig)) FROM bench), 3)::text);
\else
DELETE FROM figures_index WHERE what NOT IN ('rows', 'build time (s)', 'signature column (MB)', 'index (MB)', 'index / column');
\endif

-- the queries: a deterministic sample of rows
DROP TABLE IF EXISTS bench_q;
CREATE TABLE bench_q AS SELECT row_number() OVER () AS n, id, sig FROM (SELECT id, sig FROM bench ORDER BY hashint8(id) LIMIT :nq) s;

-- lat(kind, n): per-query latencies in ms of the first n queries ('sim' = % at 0.8, 'top' = top 10)
CREATE OR REPLACE FUNCTION pg_temp.lat(kind text, n int) RETURNS TABLE(ms float8, nrows bigint) LANGUAGE plpgsql AS $$
DECLARE q record; t0 timestamptz; c bigint;
BEGIN
  PERFORM set_config('spotsigs.similarity_threshold', '0.8', true);
  FOR q IN SELECT sig FROM bench_q WHERE bench_q.n <= lat.n ORDER BY bench_q.n LOOP
    t0 := clock_timestamp();
    -- EXECUTE plans every query afresh, so enable_* settings take effect (planning time included)
    IF kind = 'sim' THEN
      EXECUTE 'SELECT count(*) FROM bench WHERE sig % $1' INTO c USING q.sig;
    ELSE
      EXECUTE 'SELECT count(*) FROM (SELECT id FROM bench ORDER BY sig <-> $1 LIMIT 10) s' INTO c USING q.sig;
    END IF;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    nrows := c;
    RETURN NEXT;
  END LOOP;
END $$;

-- pct(kind, n, label): records p50 and p95 of lat()
CREATE OR REPLACE FUNCTION pg_temp.record(kind text, n int, label text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO figures_index
  SELECT label || ' p50 (ms)', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3)::text FROM pg_temp.lat(kind, n)
  UNION ALL SELECT label || ' p95 (ms)', round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 3)::text FROM pg_temp.lat(kind, n);
$$;

-- warm the cache, then measure through the index
SELECT count(*) FROM pg_temp.lat('sim', :nq);
SELECT pg_temp.record('sim', :nq, 'index % tau=0.8');
INSERT INTO figures_index SELECT 'index % tau=0.8 mean matches', round(avg(nrows), 2)::text FROM pg_temp.lat('sim', :nq);
SELECT pg_temp.record('top', :nq, 'index top-10');
-- the same queries by sequential scan (the first :nseq)
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT pg_temp.record('sim', :nseq, 'seqscan % tau=0.8');
SELECT pg_temp.record('top', :nseq, 'seqscan top-10');
RESET enable_indexscan;
RESET enable_bitmapscan;
-- the index on the same first :nseq queries, for a like-for-like ratio
SELECT pg_temp.record('sim', :nseq, 'index % tau=0.8 (seq subset)');
SELECT pg_temp.record('top', :nseq, 'index top-10 (seq subset)');
INSERT INTO figures_index
SELECT 'seqscan/index p50 ratio %', round((SELECT value::numeric FROM figures_index WHERE what = 'seqscan % tau=0.8 p50 (ms)')
                                       / (SELECT value::numeric FROM figures_index WHERE what = 'index % tau=0.8 (seq subset) p50 (ms)'), 1)::text
UNION ALL
SELECT 'seqscan/index p50 ratio top-10', round((SELECT value::numeric FROM figures_index WHERE what = 'seqscan top-10 p50 (ms)')
                                       / (SELECT value::numeric FROM figures_index WHERE what = 'index top-10 (seq subset) p50 (ms)'), 1)::text;
SELECT what, value FROM figures_index ORDER BY seq;
