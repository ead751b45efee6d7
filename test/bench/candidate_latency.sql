-- Latency of the trigger's candidate search on the ingest benchmark's table shape, without the
-- trigger and without pending rows: 14 identical copies of the textcorpus signatures (1,055,600
-- rows), a spotsigs index, then `count(*) WHERE sig % q` at 0.8 for 200 sampled documents.
--   psql -d DB -f test/bench/candidate_latency.sql      (DB holding docs(id, body) of textcorpus)
\set ON_ERROR_STOP on
DROP TABLE IF EXISTS copies;
CREATE TABLE copies AS
  SELECT k * 1000000 + id AS id, sig FROM (SELECT id, spotsigs(body) AS sig FROM docs) b, generate_series(0, 13) k;
SET maintenance_work_mem = '2GB';
CREATE INDEX copies_sig ON copies USING spotsigs (sig);
VACUUM ANALYZE copies;
CREATE TEMP TABLE lat (ms float8, c bigint);
DO $$
DECLARE q record; t0 timestamptz; c bigint;
BEGIN
  PERFORM set_config('spotsigs.similarity_threshold', '0.8', true);
  PERFORM set_config('enable_seqscan', 'off', true);
  FOR q IN SELECT sig FROM copies WHERE id < 1000000 AND length(sig) > 0 ORDER BY hashint8(id) LIMIT 200 LOOP
    t0 := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM copies WHERE sig % $1' INTO c USING q.sig;
    INSERT INTO lat VALUES (extract(epoch FROM clock_timestamp() - t0) * 1000, c);
  END LOOP;
END $$;
SELECT count(*) AS queries,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS p50_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS p95_ms,
       round(avg(c), 1) AS mean_rows
FROM lat;
DROP TABLE copies;
