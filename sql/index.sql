-- The spotsigs index access method: exact % and <-> scans, plans, inserts, VACUUM, checks.
\set SHOW_CONTEXT never
SET extra_float_digits = 0;

-- a small table: the paper's example (4.3.2), an empty value and a NULL
CREATE TABLE ix_small (id int, sig spotsig);
INSERT INTO ix_small VALUES
  (1, '{1:5,2:4,3:4}'), (2, '{1:8,2:4}'), (3, '{1:4,2:5,3:5}'),
  (4, '{1,2,3,4,5}'), (5, '{}'), (6, NULL), (7, '{7,8,9}');
CREATE INDEX ix_small_sig ON ix_small USING spotsigs (sig);
SELECT spotsigs_index_check('ix_small_sig');
SELECT * FROM spotsigs_index_stats('ix_small_sig');

SET enable_seqscan = off;
SET spotsigs.similarity_threshold = 0.8;
EXPLAIN (COSTS OFF) SELECT id FROM ix_small WHERE sig % '{1:5,2:4,3:4}';
SELECT id, similarity(sig, '{1:5,2:4,3:4}') FROM ix_small WHERE sig % '{1:5,2:4,3:4}' ORDER BY id;
EXPLAIN (COSTS OFF) SELECT id FROM ix_small ORDER BY sig <-> '{1:5,2:4,3:4}' LIMIT 3;
-- every row, nearest first; the empty value and disjoint rows at distance 1, the NULL last
SELECT id, round((sig <-> '{1:5,2:4,3:4}')::numeric, 4) AS dist FROM ix_small ORDER BY sig <-> '{1:5,2:4,3:4}', id;
-- the same through the index, read to its end: the index records NULL rows, and returns them
-- last at a NULL distance (the planner uses an index without a condition for ORDER BY <->)
EXPLAIN (COSTS OFF) SELECT id FROM ix_small ORDER BY sig <-> '{1:5,2:4,3:4}';
SELECT id, round((sig <-> '{1:5,2:4,3:4}')::numeric, 4) AS dist FROM ix_small ORDER BY sig <-> '{1:5,2:4,3:4}';
-- ordered by <-> NULL (a parameter): every row, all at a NULL distance
SET plan_cache_mode = force_generic_plan;
PREPARE ix_null_order(spotsig) AS SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM ix_small ORDER BY sig <-> $1) s;
PREPARE ix_null_order_similar(spotsig) AS
  SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM ix_small WHERE sig % '{1:5,2:4,3:4}' ORDER BY sig <-> $1) s;
PREPARE ix_null_order_plan(spotsig) AS SELECT id FROM ix_small ORDER BY sig <-> $1;
EXPLAIN (COSTS OFF) EXECUTE ix_null_order_plan(NULL);
EXECUTE ix_null_order(NULL);
EXECUTE ix_null_order_similar(NULL);
DEALLOCATE ix_null_order;
DEALLOCATE ix_null_order_plan;
DEALLOCATE ix_null_order_similar;
RESET plan_cache_mode;
SELECT id FROM ix_small ORDER BY sig <-> '{1:5,2:4,3:4}' LIMIT 2;
-- % of one query and <-> of another: the rows % admits that share nothing with the ORDER BY
-- query (7) come last, at distance 1
EXPLAIN (COSTS OFF) SELECT id FROM ix_small WHERE sig % spotsig_query('{1,2,7,8,9}', 0.2) ORDER BY sig <-> '{1:5,2:4,3:4}';
SELECT id, sig <-> '{1:5,2:4,3:4}' AS dist FROM ix_small
WHERE sig % spotsig_query('{1,2,7,8,9}', 0.2) ORDER BY sig <-> '{1:5,2:4,3:4}';
-- a NULL query matches nothing
SELECT count(*) FROM ix_small WHERE sig % NULL::spotsig;
-- bitmap scans
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM ix_small WHERE sig % '{1:5,2:4,3:4}';
SELECT id FROM ix_small WHERE sig % '{1:5,2:4,3:4}' ORDER BY id;
RESET enable_indexscan;
-- a scan without % or <-> is costed out, but the planner may still take the index (18 does here,
-- with every other path disabled): it returns every row, the NULL one too
SELECT count(*) FROM ix_small;
-- NULL rows inserted later, and deleted: VACUUM removes them from the index
INSERT INTO ix_small VALUES (8, NULL), (9, NULL);
SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM ix_small ORDER BY sig <-> '{7,8}') s;
SELECT id FROM ix_small ORDER BY sig <-> '{7,8}' LIMIT 1;
SELECT spotsigs_index_check('ix_small_sig');
DELETE FROM ix_small WHERE id IN (6, 9);
VACUUM ix_small;
SELECT spotsigs_index_check('ix_small_sig');
SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM ix_small ORDER BY sig <-> '{7,8}') s;
INSERT INTO ix_small VALUES (6, NULL);
DELETE FROM ix_small WHERE id = 8;
RESET enable_seqscan;
-- without enable_seqscan = off, a tiny table is scanned sequentially
EXPLAIN (COSTS OFF) SELECT id FROM ix_small WHERE sig % '{1:5,2:4,3:4}';

-- a larger table: 3000 rows in near-duplicate families, enough for external lists and a
-- multi-level directory
CREATE TABLE ix_big (id int PRIMARY KEY, sig spotsig);
INSERT INTO ix_big
SELECT i, ('{' || string_agg(to_hex(((i / 7) * 31 + k) % 20000 + 1) || ':' || (1 + (k % 3)), ',') || '}')::spotsig
FROM generate_series(1, 3000) i, generate_series(0, 20 + i % 40) k
WHERE (k + i) % 11 <> 0
GROUP BY i;
CREATE INDEX ix_big_sig ON ix_big USING spotsigs (sig) WITH (partition_growth = 20);
SELECT spotsigs_index_check('ix_big_sig');
SELECT count(*) AS partitions, sum(rows) AS rows, sum(postings) AS postings FROM spotsigs_index_stats('ix_big_sig');

-- a session copies the directory of a segment it searches often (DEBUG1 says when) and finds
-- DATA pages there from then on: the comparisons below use the copy
SET jit = off;
SET enable_seqscan = off;
SET client_min_messages = debug1;
\set VERBOSITY terse
-- but never within a single search, however many signatures its query has (its descent reads
-- each directory page at most once): a new session's first search descends
SELECT count(*) FROM ix_big WHERE sig % (SELECT ('{' || string_agg(to_hex(k), ',') || '}')::spotsig FROM generate_series(1, 200) k);
-- (index scans, not the SpotsigsJoin, which 18 prefers over scans that enable_seqscan disables)
SET spotsigs.enable_join = off;
SELECT count(*) FROM ix_big q, LATERAL (SELECT b.id FROM ix_big b WHERE b.sig % q.sig) s WHERE q.id % 100 = 3;
RESET spotsigs.enable_join;
\set VERBOSITY default
RESET client_min_messages;
RESET enable_seqscan;
RESET jit;

-- results with the index equal those without it, for every 10th row as the query
CREATE FUNCTION ix_compare(tau float8) RETURNS TABLE(queries bigint, matches bigint, mismatches bigint)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('spotsigs.similarity_threshold', tau::text, true);
  PERFORM set_config('enable_seqscan', 'off', true);
  CREATE TEMP TABLE ix_a ON COMMIT DROP AS
    SELECT q.id, coalesce((SELECT array_agg(b.id ORDER BY b.id) FROM ix_big b WHERE b.sig % q.sig), '{}') AS ids
    FROM ix_big q WHERE q.id % 10 = 3;
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  CREATE TEMP TABLE ix_b ON COMMIT DROP AS
    SELECT q.id, coalesce((SELECT array_agg(b.id ORDER BY b.id) FROM ix_big b WHERE b.sig % q.sig), '{}') AS ids
    FROM ix_big q WHERE q.id % 10 = 3;
  RETURN QUERY SELECT count(*), sum(cardinality(ix_b.ids))::bigint,
    count(*) FILTER (WHERE ix_a.ids IS DISTINCT FROM ix_b.ids)
    FROM ix_a FULL JOIN ix_b USING (id);
END $$;
SELECT * FROM ix_compare(0.44);
SELECT * FROM ix_compare(0.8);
SELECT * FROM ix_compare(0.2);

-- top 10 by <-> through the index equals a full sort (distances exactly)
CREATE FUNCTION ix_top10(use_index bool) RETURNS TABLE(id int, dists float8[])
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('enable_seqscan', (NOT use_index)::text, true);
  PERFORM set_config('enable_indexscan', use_index::text, true);
  RETURN QUERY SELECT q.id, (SELECT array_agg(d) FROM (SELECT b.sig <-> q.sig AS d FROM ix_big b ORDER BY b.sig <-> q.sig LIMIT 10) s)
    FROM ix_big q WHERE q.id % 50 = 0;
END $$;
SELECT count(*) AS queries, count(*) FILTER (WHERE a.dists IS DISTINCT FROM b.dists) AS mismatches
FROM ix_top10(true) a JOIN ix_top10(false) b USING (id);
SET enable_seqscan = off;
-- the plan with its subplan's output spelled as PostgreSQL 17 and later print it (15 prints
-- "InitPlan 1 (returns $0)" and "$0")
CREATE FUNCTION ix_explain(q text) RETURNS TABLE("QUERY PLAN" text)
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    "QUERY PLAN" := replace(replace(l, 'InitPlan 1 (returns $0)', 'InitPlan 1'), '$0', '(InitPlan 1).col1');
    RETURN NEXT;
  END LOOP;
END $$;
SELECT * FROM ix_explain('SELECT id FROM ix_big ORDER BY sig <-> (SELECT sig FROM ix_big WHERE id = 7) LIMIT 10');
RESET enable_seqscan;

-- inserts go to the pending list; scans see them; VACUUM merges them and drops deleted rows
INSERT INTO ix_big SELECT id + 10000, sig FROM ix_big WHERE id % 3 = 0 AND id < 1500;
SELECT * FROM ix_compare(0.8);
-- more rows: this backend's copy of the pending list reads only the new entries
INSERT INTO ix_big SELECT id + 10000, sig FROM ix_big WHERE id % 3 = 0 AND id >= 1500;
SELECT spotsigs_index_check('ix_big_sig');
SELECT * FROM ix_compare(0.8);
-- a new session's first two searches compare the query with every pending row; the copy of the
-- list starts at its third search (DEBUG1 says when); all answer as a sequential scan does
\c
SET enable_seqscan = off;
SET client_min_messages = debug1;
SELECT count(*) FROM ix_big WHERE sig % (SELECT sig FROM ix_big WHERE id = 10042);
SELECT count(*) FROM ix_big WHERE sig % (SELECT sig FROM ix_big WHERE id = 10042);
SELECT count(*) FROM ix_big WHERE sig % (SELECT sig FROM ix_big WHERE id = 10042);
RESET client_min_messages;
SET enable_seqscan = on;
SET enable_bitmapscan = off;
SET enable_indexscan = off;
SELECT count(*) FROM ix_big WHERE sig % (SELECT sig FROM ix_big WHERE id = 10042);
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexscan;
-- VACUUM of an insert-only table merges the pending list into a second segment
VACUUM ix_big;
SELECT spotsigs_index_check('ix_big_sig');
SELECT segment, sum(rows) AS rows FROM spotsigs_index_stats('ix_big_sig') GROUP BY segment ORDER BY segment;
SELECT * FROM ix_compare(0.44);
-- rows deleted in the second segment only: VACUUM rewrites that segment alone
DELETE FROM ix_big WHERE id > 10000 AND id % 7 = 0;
VACUUM ix_big;
SELECT spotsigs_index_check('ix_big_sig');
SELECT segment, sum(rows) AS rows FROM spotsigs_index_stats('ix_big_sig') GROUP BY segment ORDER BY segment;
SELECT * FROM ix_compare(0.44);
-- deleting rows in both segments makes VACUUM rewrite everything into one segment without them
DELETE FROM ix_big WHERE id % 5 = 0;
VACUUM ix_big;
SELECT spotsigs_index_check('ix_big_sig');
SELECT segment, sum(rows) AS rows FROM spotsigs_index_stats('ix_big_sig') GROUP BY segment ORDER BY segment;
SELECT * FROM ix_compare(0.44);
-- deleted pages are reused, so the index does not grow on a second round
SELECT pg_relation_size('ix_big_sig') AS size_before \gset
INSERT INTO ix_big SELECT id + 20000, sig FROM ix_big WHERE id % 5 = 1 AND id < 10000;
DELETE FROM ix_big WHERE id > 20000;
VACUUM ix_big;
INSERT INTO ix_big SELECT id + 20000, sig FROM ix_big WHERE id % 5 = 1 AND id < 10000;
DELETE FROM ix_big WHERE id > 20000;
VACUUM ix_big;
SELECT pg_relation_size('ix_big_sig') <= :size_before * 1.3 AS no_runaway_growth;
SELECT spotsigs_index_check('ix_big_sig');

-- a small pending_list_limit makes inserts merge the pending list themselves; once 8 segments
-- exist, a merge folds all but the largest together; the searches below run in the session
-- that merged, so they use its filters of the segments it wrote (and must still be exact)
CREATE TABLE ix_lim (id int, sig spotsig);
INSERT INTO ix_lim SELECT id, sig FROM ix_big WHERE id < 500;
CREATE INDEX ix_lim_sig ON ix_lim USING spotsigs (sig) WITH (pending_list_limit = 16);
INSERT INTO ix_lim SELECT id, sig FROM ix_big WHERE id >= 500;
SELECT spotsigs_index_check('ix_lim_sig') ~ '^ok' AS ok;
SELECT count(DISTINCT segment) FILTER (WHERE segment >= 0) BETWEEN 2 AND 8 AS merged_by_inserts,
       sum(rows) FILTER (WHERE segment = -1) < 200 AS pending_bounded,
       sum(rows) = (SELECT count(*) FROM ix_lim) AS all_rows
FROM spotsigs_index_stats('ix_lim_sig');
SET enable_seqscan = off;
SET spotsigs.similarity_threshold = 0.44;
SELECT count(*) AS mismatches FROM ix_lim q
WHERE q.id % 10 = 3
  AND (SELECT array_agg(b.id ORDER BY b.id) FROM ix_lim b WHERE b.sig % q.sig)
      IS DISTINCT FROM (SELECT array_agg(b.id ORDER BY b.id) FROM ix_lim b WHERE similarity(b.sig, q.sig) >= 0.44);
RESET enable_seqscan;
DROP TABLE ix_lim;

-- REINDEX, unlogged tables
REINDEX INDEX ix_big_sig;
SELECT spotsigs_index_check('ix_big_sig');
SELECT * FROM ix_compare(0.8);
-- a partition_growth set later applies from the next build: until then the index keeps (and is
-- checked against) the growth in its metapage, then REINDEX rebuilds it with the new one
SELECT count(*) AS partitions FROM spotsigs_index_stats('ix_big_sig');
ALTER INDEX ix_big_sig SET (partition_growth = 50);
SELECT spotsigs_index_check('ix_big_sig');
SELECT count(*) AS partitions FROM spotsigs_index_stats('ix_big_sig');
SELECT * FROM ix_compare(0.8);
REINDEX INDEX ix_big_sig;
SELECT spotsigs_index_check('ix_big_sig');
SELECT count(*) AS partitions FROM spotsigs_index_stats('ix_big_sig');
SELECT * FROM ix_compare(0.8);
ALTER INDEX ix_big_sig RESET (partition_growth);
SELECT spotsigs_index_check('ix_big_sig');
CREATE UNLOGGED TABLE ix_unlogged AS SELECT * FROM ix_big;
CREATE INDEX ON ix_unlogged USING spotsigs (sig);
INSERT INTO ix_unlogged VALUES (-1, '{1,2,3}');
SELECT spotsigs_index_check('ix_unlogged_sig_idx');
SET enable_seqscan = off;
SET spotsigs.similarity_threshold = 0.5;
SELECT id FROM ix_unlogged WHERE sig % '{1,2,3}';
RESET enable_seqscan;

-- the operator class validates; bad reloptions and wrong relations are refused
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'spotsig_ops';
CREATE INDEX ON ix_small USING spotsigs (sig) WITH (partition_growth = 1);
SELECT spotsigs_index_check('ix_big_pkey');
-- a partitioned index holds no rows: the check and the statistics name the right problem
CREATE TABLE ix_parted (id int, sig spotsig) PARTITION BY RANGE (id);
CREATE TABLE ix_parted_1 PARTITION OF ix_parted FOR VALUES FROM (0) TO (100);
CREATE INDEX ix_parted_sig ON ix_parted USING spotsigs (sig);
SELECT spotsigs_index_check('ix_parted_sig');
\set VERBOSITY sqlstate
SELECT * FROM spotsigs_index_stats('ix_parted_sig');
\set VERBOSITY default
SELECT spotsigs_index_check('ix_parted_1_sig_idx');
DROP TABLE ix_parted;
CREATE INDEX ON ix_small USING spotsigs (sig, sig);

DROP TABLE ix_small, ix_big, ix_unlogged;
DROP FUNCTION ix_compare(float8), ix_top10(bool);
