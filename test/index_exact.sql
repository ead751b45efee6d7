-- Exactness of the spotsigs index on a table pages(id, sig) with an index on sig: for every 10th
-- row as the query, % with the index equals % without it at tau 0.44 and 0.8, and the top 10 by
-- <-> through the index equal a full sort. Prints one row per check with the number of mismatches.
\set ON_ERROR_STOP on
CREATE TEMP TABLE queries AS
  SELECT id, sig FROM (SELECT id, sig, row_number() OVER (ORDER BY id) AS rn FROM pages) s WHERE rn % 10 = 0;

CREATE FUNCTION pg_temp.matches(tau float8, use_index bool) RETURNS TABLE(qid int, ids int[])
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('spotsigs.similarity_threshold', tau::text, true);
  PERFORM set_config('enable_seqscan', (NOT use_index)::text, true);
  PERFORM set_config('enable_indexscan', use_index::text, true);
  PERFORM set_config('enable_bitmapscan', use_index::text, true);
  RETURN QUERY SELECT q.id, coalesce((SELECT array_agg(p.id ORDER BY p.id) FROM pages p WHERE p.sig % q.sig), '{}') FROM queries q;
END $$;

CREATE FUNCTION pg_temp.top10(use_index bool) RETURNS TABLE(qid int, ids int[], dists float8[])
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('enable_seqscan', (NOT use_index)::text, true);
  PERFORM set_config('enable_indexscan', use_index::text, true);
  PERFORM set_config('enable_bitmapscan', use_index::text, true);
  RETURN QUERY SELECT q.id, array_agg(t.id ORDER BY t.d, t.id), array_agg(t.d ORDER BY t.d, t.id)
    FROM queries q CROSS JOIN LATERAL (SELECT p.id, p.sig <-> q.sig AS d FROM pages p ORDER BY p.sig <-> q.sig LIMIT 10) t
    GROUP BY q.id;
END $$;

BEGIN;
SELECT 'queries' AS check, count(*) FROM queries;
-- the plans used
SET LOCAL enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT q.id, (SELECT array_agg(p.id ORDER BY p.id) FROM pages p WHERE p.sig % q.sig) FROM queries q;
EXPLAIN (COSTS OFF) SELECT p.id FROM pages p ORDER BY p.sig <-> (SELECT sig FROM queries LIMIT 1) LIMIT 10;
COMMIT;

BEGIN; CREATE TEMP TABLE i44 AS SELECT * FROM pg_temp.matches(0.44, true); COMMIT;
BEGIN; CREATE TEMP TABLE s44 AS SELECT * FROM pg_temp.matches(0.44, false); COMMIT;
BEGIN; CREATE TEMP TABLE i80 AS SELECT * FROM pg_temp.matches(0.8, true); COMMIT;
BEGIN; CREATE TEMP TABLE s80 AS SELECT * FROM pg_temp.matches(0.8, false); COMMIT;
BEGIN; CREATE TEMP TABLE itop AS SELECT * FROM pg_temp.top10(true); COMMIT;
BEGIN; CREATE TEMP TABLE stop AS SELECT * FROM pg_temp.top10(false); COMMIT;

SELECT 'tau 0.44 mismatches' AS check, count(*) FROM i44 FULL JOIN s44 USING (qid) WHERE i44.ids IS DISTINCT FROM s44.ids
UNION ALL SELECT 'tau 0.44 matches', sum(cardinality(ids)) FROM s44
UNION ALL SELECT 'tau 0.8 mismatches', count(*) FROM i80 FULL JOIN s80 USING (qid) WHERE i80.ids IS DISTINCT FROM s80.ids
UNION ALL SELECT 'tau 0.8 matches', sum(cardinality(ids)) FROM s80
UNION ALL SELECT 'top10 distance mismatches', count(*) FROM itop FULL JOIN stop USING (qid) WHERE itop.dists IS DISTINCT FROM stop.dists
UNION ALL SELECT 'top10 id mismatches (ties at the 10th distance excepted)', count(*)
  FROM itop JOIN stop USING (qid)
  WHERE array(SELECT x FROM unnest(itop.ids, itop.dists) u(x, d) WHERE d < itop.dists[10] ORDER BY x)
        IS DISTINCT FROM array(SELECT x FROM unnest(stop.ids, stop.dists) u(x, d) WHERE d < stop.dists[10] ORDER BY x);
