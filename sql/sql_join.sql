-- The SQL join on a.sig % b.sig, planned as the SpotsigsJoin custom scan (src/pg/planner/).
\set SHOW_CONTEXT never

-- 400 documents in 37 groups: a group's documents share 12 signatures and differ in 1-5 others.
CREATE TABLE sj (id int PRIMARY KEY, grp int, sig spotsig);
INSERT INTO sj SELECT i, i % 37, spotsig_from_terms(t, array_fill(1, ARRAY[cardinality(t)]))
FROM generate_series(1, 400) i,
LATERAL (SELECT ARRAY(SELECT 'g' || (i % 37) || ':' || k FROM generate_series(1, 12) k) ||
   ARRAY(SELECT 'x' || ((i * 7 + k * 13) % 50) FROM generate_series(1, 1 + i % 5) k) AS t) s;
-- a row without a signature and one with an empty signature pair with nothing
INSERT INTO sj VALUES (401, 0, NULL), (402, 0, spotsig_from_terms(ARRAY[]::text[], ARRAY[]::int[]));
-- A second table: 300 documents of groups 20 to 49, a third of them with a doubled signature.
CREATE TABLE sj2 (id int PRIMARY KEY, sig spotsig);
INSERT INTO sj2 SELECT i, spotsig_from_terms(t, array_fill(1 + (i % 3 = 0)::int, ARRAY[cardinality(t)]))
FROM generate_series(1, 300) i,
LATERAL (SELECT ARRAY(SELECT 'g' || (20 + i % 30) || ':' || k FROM generate_series(1, 12) k) ||
   ARRAY(SELECT 'x' || ((i * 11 + k * 5) % 50) FROM generate_series(1, 1 + i % 4) k) AS t) s;
-- A tie: rows 1 and 2 have similarity exactly 11/15; 300 rows of their own signatures besides.
CREATE TABLE sjt (id int PRIMARY KEY, sig spotsig);
INSERT INTO sjt VALUES
  (1, spotsig_from_terms(ARRAY['b','c','d','e','f'], ARRAY[1,3,4,2,3])),
  (2, spotsig_from_terms(ARRAY['b','c','d','f'], ARRAY[2,3,4,4]));
INSERT INTO sjt SELECT i, spotsig_from_terms(ARRAY['u' || i, 'v' || i], ARRAY[1, 2]) FROM generate_series(3, 302) i;
ANALYZE sj, sj2, sjt;

-- The plans of the supported shapes.
SET spotsigs.similarity_threshold = 0.7;
-- self join with a.id < b.id: one scan, the core's self-join, the rest as the scan's filter
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a, sj b WHERE b.sig % a.sig AND a.id <> b.id;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sj a JOIN sj b ON a.sig % b.sig;
-- equal filters on both sides: still one scan, with the filter
EXPLAIN (COSTS OFF, VERBOSE) SELECT a.id, b.grp, similarity(a.sig, b.sig)
FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id WHERE a.grp < 20 AND b.grp < 20;
-- different filters on the two sides of one table, and two tables: the R-S matcher over two scans
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj b ON a.sig % b.sig WHERE a.grp < 20 AND b.grp >= 10;
EXPLAIN (COSTS OFF) SELECT r.id, s.id FROM sj r JOIN sj2 s ON r.sig % s.sig;
-- a threshold of the clause's own, whatever the setting
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj b ON a.sig % spotsig_query(b.sig, 0.6) AND a.id < b.id;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj2 b ON similarity(a.sig, b.sig) >= 0.9;
-- semi and anti joins: the other clauses checked on each pair (Join Filter)
EXPLAIN (COSTS OFF) SELECT a.id FROM sj a WHERE EXISTS (SELECT 1 FROM sj2 b WHERE a.sig % b.sig);
EXPLAIN (COSTS OFF) SELECT a.id FROM sj a WHERE EXISTS (SELECT 1 FROM sj b WHERE a.sig % b.sig AND a.id <> b.id);
EXPLAIN (COSTS OFF) SELECT b.id FROM sj2 b WHERE NOT EXISTS (SELECT 1 FROM sj a WHERE a.sig % b.sig AND a.grp > 25);

-- A session that has not used the library yet plans the same: % loads it, and its planner hook,
-- while the join is planned (its selectivity function, or under 'auto' the support function that
-- rewrites a bare %), similarity() while the query is simplified (its support function). Each \c
-- is a new backend.
\c
EXPLAIN (COSTS OFF) SELECT r.id, s.id FROM sj r JOIN sj2 s ON r.sig % s.sig;
\c
EXPLAIN (COSTS OFF) SELECT r.id, s.id FROM sj r JOIN sj2 s ON r.sig % spotsig_query(s.sig, 0.7);
\c
EXPLAIN (COSTS OFF) SELECT r.id, s.id FROM sj r JOIN sj2 s ON similarity(r.sig, s.sig) >= 0.7;
\c
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj b ON similarity(a.sig, b.sig) >= 0.7 AND a.id < b.id;
\c
EXPLAIN (COSTS OFF) SELECT a.id FROM sj a WHERE EXISTS (SELECT 1 FROM sj2 b WHERE similarity(a.sig, b.sig) >= 0.7);
\c
EXPLAIN (COSTS OFF) SELECT b.id FROM sj2 b WHERE NOT EXISTS (SELECT 1 FROM sj a WHERE similarity(b.sig, a.sig) >= 0.7);
\c
EXPLAIN (COSTS OFF) SELECT a.id FROM sj a WHERE EXISTS (SELECT 1 FROM sj2 b WHERE a.sig % spotsig_query(b.sig, 0.7));
SET spotsigs.similarity_threshold = 0.7;

-- Shapes it leaves alone.
-- an outer join
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a LEFT JOIN sj2 b ON a.sig % b.sig;
-- % under OR
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj2 b ON a.sig % b.sig OR a.id = b.id;
-- a threshold that is not a constant
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj2 b ON similarity(a.sig, b.sig) >= a.grp / 40.0;
-- FOR UPDATE (row marks)
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj2 b ON a.sig % b.sig FOR UPDATE;
-- a handful of outer rows: the nested loop stays
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj2 b ON a.sig % b.sig WHERE a.id <= 3;
-- a handful of outer rows against a spotsigs index: the nested loop of index probes stays, many
-- outer rows take the matcher
CREATE TABLE sjix (id int PRIMARY KEY, sig spotsig);
INSERT INTO sjix SELECT i, spotsig_from_terms(t, array_fill(1, ARRAY[cardinality(t)]))
FROM generate_series(1, 10000) i,
LATERAL (SELECT ARRAY(SELECT 'g' || (i % 997) || ':' || k FROM generate_series(1, 20) k) ||
   ARRAY(SELECT 'x' || ((i * 7 + k * 13) % 5000) FROM generate_series(1, 1 + i % 5) k) AS t) s;
CREATE INDEX sjix_sig ON sjix USING spotsigs (sig);
ANALYZE sjix;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjix a JOIN sjix b ON a.sig % b.sig WHERE a.id <= 3;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjix a JOIN sjix b ON a.sig % b.sig WHERE a.id <= 5000;
-- A bare % is rewritten into a.sig % spotsig_auto_query(b.sig, ...), which only an index on
-- a.sig serves as written; the index on b.sig is probed with the commuted b.sig %
-- spotsig_auto_query(a.sig, ...) (the same condition: both measures are symmetric), the clause
-- as written staying as the probe's filter. The few rows on either side, inner, semi, anti and
-- left joins, two tables.
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjix a JOIN sjix b ON a.sig % b.sig WHERE b.id <= 3;
EXPLAIN (COSTS OFF) SELECT a.id FROM sjix a WHERE a.id <= 3 AND EXISTS (SELECT 1 FROM sjix b WHERE a.sig % b.sig AND a.id <> b.id);
EXPLAIN (COSTS OFF) SELECT a.id FROM sjix a WHERE a.id <= 3 AND NOT EXISTS (SELECT 1 FROM sjix b WHERE a.sig % b.sig AND a.id > b.id);
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjix a LEFT JOIN sjix b ON a.sig % b.sig AND a.id <> b.id WHERE a.id <= 3;
CREATE TABLE sjix3 AS SELECT id, sig FROM sjix WHERE id % 1000 = 1;
ANALYZE sjix3;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjix3 a JOIN sjix b ON a.sig % b.sig;
-- sj_probe(q): q's rows with the plans above and with neither index scans nor the custom scan
-- (a nested loop evaluating the clause as written on every pair): how many, whether the first
-- probed sjix_sig (an index or bitmap scan), and whether both give the same rows.
CREATE FUNCTION sj_probe(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  how text := 'no probe';
  n bigint;
  diff bigint;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line LIKE '%Index Scan%sjix_sig%' THEN how := 'probes sjix_sig'; END IF;
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE sj_p AS ' || q;
  PERFORM set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
          set_config('spotsigs.enable_join', 'off', true);
  EXECUTE 'CREATE TEMP TABLE sj_np AS ' || q;
  PERFORM set_config('enable_indexscan', 'on', true), set_config('enable_bitmapscan', 'on', true),
          set_config('spotsigs.enable_join', 'on', true);
  SELECT count(*) INTO n FROM sj_p;
  SELECT count(*) INTO diff FROM ((TABLE sj_p EXCEPT ALL TABLE sj_np) UNION ALL (TABLE sj_np EXCEPT ALL TABLE sj_p)) d;
  DROP TABLE sj_p, sj_np;
  RETURN format('%s rows, %s, %s', n, how, CASE WHEN diff = 0 THEN 'equal' ELSE 'DIFFERENT' END);
END $$;
CREATE VIEW sj_probe_queries AS SELECT q FROM unnest(ARRAY[
  'SELECT a.id AS x, b.id AS y FROM sjix a JOIN sjix b ON a.sig % b.sig WHERE a.id <= 3',
  'SELECT a.id AS x, b.id AS y FROM sjix a JOIN sjix b ON a.sig % b.sig WHERE b.id <= 3',
  'SELECT a.id AS x FROM sjix a WHERE a.id <= 3 AND EXISTS (SELECT 1 FROM sjix b WHERE a.sig % b.sig AND a.id <> b.id)',
  'SELECT a.id AS x FROM sjix a WHERE a.id <= 3 AND NOT EXISTS (SELECT 1 FROM sjix b WHERE a.sig % b.sig AND a.id > b.id)',
  'SELECT a.id AS x, b.id AS y FROM sjix a LEFT JOIN sjix b ON a.sig % b.sig AND a.id <> b.id WHERE a.id <= 3',
  'SELECT a.id AS x, b.id AS y FROM sjix3 a JOIN sjix b ON a.sig % b.sig']) q;
SELECT q, sj_probe(q) FROM sj_probe_queries;
-- under 'auto' on the analyzed column: the content measure, the same plans and rows
SELECT spotsigs_analyze('sjix', 'sig') IS NOT NULL AS analyzed;
RESET spotsigs.similarity_threshold;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjix a JOIN sjix b ON a.sig % b.sig WHERE a.id <= 3;
SELECT q, sj_probe(q) FROM sj_probe_queries;
SET spotsigs.similarity_threshold = 0.7;
DROP VIEW sj_probe_queries;
DROP FUNCTION sj_probe(text);
DROP TABLE sjix, sjix3;
-- the setting
SET spotsigs.enable_join = off;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id;
RESET spotsigs.enable_join;

-- sj_compare(q, tau): q's rows at threshold tau with the custom scan and without it: how many,
-- whether the first plan used the custom scan (and which way), and whether both give the same
-- rows (as multisets).
CREATE FUNCTION sj_compare(q text, tau float8) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  how text := 'nested loop';
  n_on bigint;
  n_off bigint;
  diff bigint;
BEGIN
  PERFORM set_config('spotsigs.similarity_threshold', tau::text, true);
  PERFORM set_config('spotsigs.enable_join', 'on', true);
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line LIKE '%Method:%' THEN how := trim(line); END IF;
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
  RETURN format('%s rows, %s, %s', n_on, how,
                CASE WHEN n_on = n_off AND diff = 0 THEN 'equal' ELSE 'DIFFERENT: ' || n_off || ' rows without' END);
END $$;

SELECT q, tau, sj_compare(q, tau)
FROM unnest(ARRAY[
  'SELECT a.id AS x, b.id AS y FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sj a JOIN sj b ON b.sig % a.sig AND a.id <> b.id',
  'SELECT a.id AS x, b.id AS y FROM sj a JOIN sj b ON a.sig % b.sig',
  'SELECT a.id AS x, b.grp AS y, similarity(a.sig, b.sig) AS s FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id WHERE a.grp < 20 AND b.grp < 20',
  'SELECT a.id AS x, b.id AS y FROM sj a JOIN sj b ON a.sig % b.sig WHERE a.grp < 20 AND b.grp >= 10',
  'SELECT r.id AS x, s.id AS y, r.sig AS rs, s.sig AS ss FROM sj r JOIN sj2 s ON r.sig % s.sig',
  'SELECT r.id AS x, s.id AS y FROM sj2 s JOIN sj r ON s.sig % r.sig AND r.id + s.id < 400',
  -- semi and anti joins (the anti join's rows include those without a signature, 401 and 402)
  'SELECT a.id AS x FROM sj a WHERE EXISTS (SELECT 1 FROM sj2 b WHERE a.sig % b.sig)',
  'SELECT a.id AS x FROM sj a WHERE NOT EXISTS (SELECT 1 FROM sj2 b WHERE a.sig % b.sig)',
  'SELECT a.id AS x, a.grp AS y FROM sj a WHERE EXISTS (SELECT 1 FROM sj b WHERE a.sig % b.sig AND a.id <> b.id)',
  'SELECT a.id AS x, a.sig AS y FROM sj a WHERE NOT EXISTS (SELECT 1 FROM sj b WHERE a.sig % b.sig AND a.id < b.id)',
  'SELECT b.id AS x FROM sj2 b WHERE NOT EXISTS (SELECT 1 FROM sj a WHERE a.sig % b.sig AND a.grp > 25)',
  -- the clause's own threshold (the setting tau is then not used)
  'SELECT a.id AS x, b.id AS y FROM sj a JOIN sj b ON a.sig % spotsig_query(b.sig, 0.6) AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sj a JOIN sj2 b ON similarity(a.sig, b.sig) >= 0.75',
  'SELECT b.id AS x FROM sj2 b WHERE NOT EXISTS (SELECT 1 FROM sj a WHERE similarity(b.sig, a.sig) >= 0.6)']) q,
  unnest(ARRAY[0.5, 0.7, 0.8, 1.0]::float8[]) tau
ORDER BY q, tau;

-- The tie: at exactly 11/15 the pair is found (>=), just above it not.
SELECT tau, sj_compare('SELECT a.id AS x, b.id AS y FROM sjt a JOIN sjt b ON a.sig % b.sig AND a.id < b.id', tau)
FROM unnest(ARRAY[11.0::float8 / 15, 0.7334]) tau;
SELECT set_config('spotsigs.similarity_threshold', (11.0::float8 / 15)::text, false) IS NOT NULL AS set;
SELECT a.id, b.id, similarity(a.sig, b.sig) = 11.0::float8 / 15 AS at_threshold
FROM sjt a JOIN sjt b ON a.sig % b.sig AND a.id < b.id;
SELECT sj_compare('SELECT a.id AS x, b.id AS y FROM sjt a JOIN sjt b ON similarity(a.sig, b.sig) >= 11.0::float8 / 15 AND a.id < b.id', 0.5),
       sj_compare('SELECT a.id AS x, b.id AS y FROM sjt a JOIN sjt b ON a.sig % spotsig_query(b.sig, 11.0::float8 / 15) AND a.id < b.id', 0.5);

-- The self join with a.id < b.id gives spotsigs_join's pairs (the function's similarity is the
-- matcher's, within rounding of similarity()).
SELECT tau, (SELECT count(*) FROM spotsigs_join('sj', 'id', 'sig', tau)) AS pairs,
  (SELECT count(*) FROM (
     (SELECT id1, id2 FROM spotsigs_join('sj', 'id', 'sig', tau)
      EXCEPT ALL
      SELECT a.id, b.id FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id)
     UNION ALL
     (SELECT a.id, b.id FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id
      EXCEPT ALL
      SELECT id1, id2 FROM spotsigs_join('sj', 'id', 'sig', tau))) d) AS differing,
  (SELECT max(abs(j.similarity - similarity(a.sig, b.sig))) < 1e-12
   FROM spotsigs_join('sj', 'id', 'sig', tau) j JOIN sj a ON a.id = j.id1 JOIN sj b ON b.id = j.id2) AS same_similarity
FROM unnest(ARRAY[0.5, 0.7, 0.8]::float8[]) tau,
     LATERAL set_config('spotsigs.similarity_threshold', tau::text, false) s;

-- EXPLAIN ANALYZE shows the rows kept and the pairs found (timings left out here; row counts
-- printed as PostgreSQL 15 prints them, since 18 adds two decimals).
CREATE FUNCTION sj_analyze(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    RETURN NEXT regexp_replace(line, 'rows=(\d+)\.00 ', 'rows=\1 ', 'g');
  END LOOP;
END $$;
SET spotsigs.similarity_threshold = 0.8;
SELECT sj_analyze('SELECT count(*) FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id');
SELECT sj_analyze('SELECT count(*) FROM sj r JOIN sj2 s ON r.sig % s.sig');

-- Rescans: in a correlated subquery each outer row reads and matches its own rows again.
SELECT g, (SELECT count(*) FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id WHERE a.grp = g AND b.grp = g) AS pairs
FROM generate_series(1, 3) g ORDER BY g;
SET spotsigs.enable_join = off;
SELECT g, (SELECT count(*) FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id WHERE a.grp = g AND b.grp = g) AS pairs
FROM generate_series(1, 3) g ORDER BY g;
RESET spotsigs.enable_join;

-- Row security stays the sides' own: a user sees the pairs of the rows the policy shows.
CREATE ROLE spotsigs_sj_user;
GRANT SELECT ON sj TO spotsigs_sj_user;
ALTER TABLE sj ENABLE ROW LEVEL SECURITY;
CREATE POLICY sj_low ON sj FOR SELECT USING (grp < 10);
SET ROLE spotsigs_sj_user;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id;
SELECT sj_compare('SELECT a.id AS x, b.id AS y FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id', 0.8);
SELECT count(*), max(a.grp) FROM sj a JOIN sj b ON a.sig % b.sig AND a.id < b.id;
RESET ROLE;
DROP POLICY sj_low ON sj;
ALTER TABLE sj DISABLE ROW LEVEL SECURITY;
-- Both sides' privileges and row security: without SELECT on one side, PostgreSQL's error
-- (42501); with a policy on each table, the pairs of the rows both policies show.
SET ROLE spotsigs_sj_user;
SELECT count(*) FROM sj r JOIN sj2 s ON r.sig % s.sig;
SELECT count(*) FROM sj r WHERE NOT EXISTS (SELECT 1 FROM sj2 s WHERE r.sig % s.sig);
RESET ROLE;
GRANT SELECT ON sj2 TO spotsigs_sj_user;
ALTER TABLE sj ENABLE ROW LEVEL SECURITY;
ALTER TABLE sj2 ENABLE ROW LEVEL SECURITY;
CREATE POLICY sj_mid ON sj FOR SELECT USING (grp <> 25 AND grp <> 30);
CREATE POLICY sj2_odd ON sj2 FOR SELECT USING (id % 4 <> 1);
SET ROLE spotsigs_sj_user;
EXPLAIN (COSTS OFF) SELECT r.id, s.id FROM sj r JOIN sj2 s ON r.sig % s.sig;
SELECT q, sj_compare(q, 0.7)
FROM unnest(ARRAY[
  'SELECT r.id AS x, s.id AS y FROM sj r JOIN sj2 s ON r.sig % s.sig',
  'SELECT r.id AS x FROM sj r WHERE EXISTS (SELECT 1 FROM sj2 s WHERE r.sig % s.sig)',
  'SELECT s.id AS x FROM sj2 s WHERE NOT EXISTS (SELECT 1 FROM sj r WHERE similarity(r.sig, s.sig) >= 0.7)']) q;
SET spotsigs.similarity_threshold = 0.7;
SELECT count(*), bool_and(r.grp NOT IN (25, 30)) AS sj_policy, bool_and(s.id % 4 <> 1) AS sj2_policy FROM sj r JOIN sj2 s ON r.sig % s.sig;
RESET ROLE;
-- the owner, whom the policies do not apply to, gets more
SELECT count(*), bool_and(r.grp NOT IN (25, 30)) AS sj_policy, bool_and(s.id % 4 <> 1) AS sj2_policy FROM sj r JOIN sj2 s ON r.sig % s.sig;
DROP POLICY sj_mid ON sj;
DROP POLICY sj2_odd ON sj2;
ALTER TABLE sj DISABLE ROW LEVEL SECURITY;
ALTER TABLE sj2 DISABLE ROW LEVEL SECURITY;
REVOKE SELECT ON sj, sj2 FROM spotsigs_sj_user;
DROP ROLE spotsigs_sj_user;
SET spotsigs.similarity_threshold = 0.8;

-- Signatures stored out of line (read after the rows, by one scan of the toast relation) and
-- inline ones in one table: 60 groups of 4 long documents (300 signatures, 280 of their group's)
-- and 100 short ones.
CREATE TABLE sjlong (id int PRIMARY KEY, sig spotsig);
INSERT INTO sjlong SELECT i, spotsig_from_terms(
    ARRAY(SELECT 'l' || (i % 60) || ':' || k FROM generate_series(1, 280) k) ||
    ARRAY(SELECT 'o' || i || ':' || k FROM generate_series(1, 20) k), array_fill(1, ARRAY[300]))
FROM generate_series(1, 240) i;
INSERT INTO sjlong SELECT i, spotsig_from_terms(ARRAY['s' || (i % 30), 't' || (i % 7), 'u' || i], ARRAY[1, 1, 1])
FROM generate_series(241, 340) i;
CREATE TABLE sjlong2 AS SELECT id + 1000 AS id, sig FROM sjlong WHERE id % 3 <> 0;
ANALYZE sjlong, sjlong2;
SELECT count(*) FILTER (WHERE pg_column_size(sig) < 100) AS inline, count(*) FILTER (WHERE pg_column_size(sig) > 2000) AS long,
       (SELECT pg_relation_size(reltoastrelid) > 0 FROM pg_class WHERE oid = 'sjlong'::regclass) AS toasted
FROM sjlong;
SELECT q, sj_compare(q, 0.5)
FROM unnest(ARRAY[
  'SELECT a.id AS x, b.id AS y FROM sjlong a JOIN sjlong b ON a.sig % b.sig AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y, a.sig AS s FROM sjlong a JOIN sjlong b ON a.sig % b.sig AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sjlong a JOIN sjlong2 b ON a.sig % b.sig',
  'SELECT a.id AS x, b.id AS y, b.sig AS s FROM sjlong a JOIN sjlong2 b ON a.sig % b.sig AND a.id + 1000 <> b.id']) q;

-- Past spotsigs.join_memory_limit the join runs in passes over signature lengths, its rows read
-- once more into tuplestores and each pass reading the rows of its lengths from there, with the
-- rows of the join run at once: inner (self and R-S), semi and anti joins.
CREATE TABLE sjlen AS
  SELECT i AS id, i % 7 AS grp,
         ('{' || (SELECT string_agg(to_hex(i / 5 + j), ',') FROM generate_series(0, 2 + i % 40) j) || '}')::spotsig AS sig
  FROM generate_series(1, 30000) i;
INSERT INTO sjlen VALUES (30001, 1, NULL), (30002, 1, '{}');
ANALYZE sjlen;
-- sj_passes(q, lim): q's rows under the limit lim and without it: how many, whether EXPLAIN
-- ANALYZE shows more than one pass under lim (how many depends on the memory the first ones
-- took), and whether both give the same rows.
CREATE FUNCTION sj_passes(q text, lim text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  passes text := 'one pass';
  n bigint;
  diff bigint;
BEGIN
  PERFORM set_config('spotsigs.join_memory_limit', lim, true);
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line LIKE '%Passes:%' AND substring(line, 'Passes: (\d+)')::int > 1 THEN passes := 'in passes'; END IF;
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE sj_lim AS ' || q;
  PERFORM set_config('spotsigs.join_memory_limit', '4GB', true);
  EXECUTE 'CREATE TEMP TABLE sj_all AS ' || q;
  SELECT count(*) INTO n FROM sj_all;
  SELECT count(*) INTO diff FROM ((TABLE sj_lim EXCEPT ALL TABLE sj_all) UNION ALL
                                  (TABLE sj_all EXCEPT ALL TABLE sj_lim)) d;
  DROP TABLE sj_lim, sj_all;
  RETURN format('%s rows, %s, %s', n, passes, CASE WHEN diff = 0 THEN 'equal' ELSE 'DIFFERENT' END);
END $$;
SET spotsigs.similarity_threshold = 0.9;
SELECT q, sj_passes(q, '16MB')
FROM unnest(ARRAY[
  'SELECT a.id AS x, b.id AS y FROM sjlen a JOIN sjlen b ON a.sig % b.sig AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sjlen a JOIN sjlen b ON a.sig % b.sig',
  'SELECT a.id AS x, b.id AS y, a.sig AS s FROM sjlen a JOIN sjlen b ON a.sig % b.sig WHERE a.grp < 4 AND b.grp >= 2',
  'SELECT a.id AS x FROM sjlen a WHERE NOT EXISTS (SELECT 1 FROM sjlen b WHERE a.sig % b.sig AND a.id < b.id)',
  'SELECT a.id AS x FROM sjlen a WHERE EXISTS (SELECT 1 FROM sjlen b WHERE a.sig % b.sig AND a.id < b.id AND b.grp < 3) AND a.grp > 1']) q;
-- at 0.5 a pass reads the partners of its lengths up to twice as long
SELECT sj_passes('SELECT a.id AS x, b.id AS y FROM sjlen a JOIN sjlen b ON a.sig % spotsig_query(b.sig, 0.5) AND a.id < b.id', '16MB');
-- the self join in passes gives spotsigs_join's pairs
SET spotsigs.join_memory_limit = '16MB';
SELECT count(*) FROM (
  (SELECT id1, id2 FROM spotsigs_join('sjlen', 'id', 'sig', 0.9)
   EXCEPT ALL SELECT a.id, b.id FROM sjlen a JOIN sjlen b ON a.sig % b.sig AND a.id < b.id)
  UNION ALL
  (SELECT a.id, b.id FROM sjlen a JOIN sjlen b ON a.sig % b.sig AND a.id < b.id
   EXCEPT ALL SELECT id1, id2 FROM spotsigs_join('sjlen', 'id', 'sig', 0.9))) d;
-- in a correlated subquery, each outer row's join runs its passes again
SELECT g, (SELECT count(*) FROM sjlen a JOIN sjlen b ON a.sig % b.sig AND a.id < b.id AND a.grp + b.grp >= g) AS pairs
FROM generate_series(0, 6, 6) g;
RESET spotsigs.join_memory_limit;
-- the content measure in passes, by the lengths of the rows' contents (a template of every
-- seventh value)
CREATE FUNCTION sjlq(sig spotsig) RETURNS spotsigs_content_query LANGUAGE sql STABLE SET search_path = public AS $$
SELECT ROW(spotsig_remove(sig, t), 0.9, t, NULL, NULL, NULL)::spotsigs_content_query
FROM (SELECT ('{' || (SELECT string_agg(to_hex(7 * k), ',') FROM generate_series(0, 900) k) || '}')::spotsig AS t) s $$;
SELECT q, sj_passes(q, '16MB')
FROM unnest(ARRAY[
  'SELECT a.id AS x, b.id AS y FROM sjlen a JOIN sjlen b ON a.sig % sjlq(b.sig) AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sjlen a JOIN sjlen b ON b.sig % sjlq(a.sig) WHERE a.grp < 4 AND b.grp >= 2',
  'SELECT a.id AS x FROM sjlen a WHERE NOT EXISTS (SELECT 1 FROM sjlen b WHERE a.sig % sjlq(b.sig) AND a.id < b.id)']) q;
-- Under a limit that not even the smallest pass fits, the error (53200) names a limit every pass
-- fits, in the words of the join functions; under that limit the join gives the rows of one pass.
SET spotsigs.join_memory_limit = '4MB';
SELECT count(*) FROM sjlen a JOIN sjlen b ON a.sig % b.sig AND a.id < b.id;
SELECT count(*) FROM spotsigs_join('sjlen', 'id', 'sig', 0.9);
RESET spotsigs.join_memory_limit;
-- sj_small(q, lim): q under lim: its SQLSTATE, and whether under the limit its error names q
-- (or under lim, when q runs there) gives the rows it gives without a limit.
CREATE FUNCTION sj_small(q text, lim text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  state text;
  msg text;
  detail text;
  named text;
  diff bigint;
BEGIN
  PERFORM set_config('spotsigs.join_memory_limit', lim, true);
  BEGIN
    EXECUTE 'CREATE TEMP TABLE sj_lim AS ' || q;
    state := 'no error under ' || lim;
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
  END;
  IF msg IS NOT NULL THEN
    named := substring(detail, 'Set spotsigs.join_memory_limit to (\d+MB) or more');
    IF named IS NULL THEN RETURN state || ': ' || msg || ' ' || detail; END IF;
    PERFORM set_config('spotsigs.join_memory_limit', named, true);
    EXECUTE 'CREATE TEMP TABLE sj_lim AS ' || q;
    state := state || '; under the limit it names';
  END IF;
  PERFORM set_config('spotsigs.join_memory_limit', '4GB', true);
  EXECUTE 'CREATE TEMP TABLE sj_all AS ' || q;
  SELECT count(*) INTO diff FROM ((TABLE sj_lim EXCEPT ALL TABLE sj_all) UNION ALL
                                  (TABLE sj_all EXCEPT ALL TABLE sj_lim)) d;
  DROP TABLE sj_lim, sj_all;
  RETURN format('%s: %s', state, CASE WHEN diff = 0 THEN 'equal' ELSE 'DIFFERENT' END);
END $$;
SELECT q, lim, sj_small(q, lim)
FROM unnest(ARRAY[
  'SELECT a.id AS x, b.id AS y FROM sjlen a JOIN sjlen b ON a.sig % b.sig AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sjlen a JOIN sjlen b ON a.sig % b.sig WHERE a.grp < 4 AND b.grp >= 2',
  'SELECT a.id AS x FROM sjlen a WHERE EXISTS (SELECT 1 FROM sjlen b WHERE a.sig % b.sig AND a.id < b.id AND b.grp < 3) AND a.grp > 1',
  'SELECT a.id AS x FROM sjlen a WHERE NOT EXISTS (SELECT 1 FROM sjlen b WHERE a.sig % b.sig AND a.id < b.id)',
  'SELECT a.id AS x, b.id AS y FROM sjlen a JOIN sjlen b ON a.sig % sjlq(b.sig) AND a.id < b.id']) q,
  unnest(ARRAY['4MB']) lim
ORDER BY q, lim;
DROP FUNCTION sjlq(spotsig), sj_small(text, text);
SET spotsigs.similarity_threshold = 0.8;
DROP TABLE sjlen;

-- The content measure: a.sig % q, q a spotsigs_content_query made from b.sig (the stored
-- template's spotsig_content_query, or any function of b.sig and constants), is matched on the
-- rows without q's template. 40 stories in 1-4 copies on 3 sites, each page with its site's
-- template (as in template_stats.sql).
CREATE FUNCTION sjw(a int, b int) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'w' || substr(md5(a::text || ':' || b::text), 1, 6) $$;
CREATE FUNCTION sjstory(s int, variant int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || sjw(s, i) || ' is a ' ||
       CASE WHEN (i + variant) % (2 + s % 5) = 0 THEN sjw(s * 1000 + variant, i) ELSE sjw(s + 100000, i) END ||
       ' that the ' || sjw(s + 200000, i), ' . ' ORDER BY i) FROM generate_series(1, 30) i $$;
CREATE FUNCTION sjsite(k int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || sjw(-k, i) || ' is a ' || sjw(-k - 10, i) || ' that the ' || sjw(-k - 20, i), ' . ' ORDER BY i)
FROM generate_series(1, 25) i $$;
CREATE TABLE sjc (id int PRIMARY KEY, sig spotsig);
INSERT INTO sjc SELECT row_number() OVER (ORDER BY s, v), spotsigs(sjsite((s + v) % 3) || ' . ' || sjstory(s, v))
FROM generate_series(1, 40) s, generate_series(1, 1 + s % 4) v;
INSERT INTO sjc VALUES (101, NULL), (102, '{}');
CREATE TABLE sjc2 AS SELECT id + 1000 AS id, sig FROM sjc WHERE id % 2 = 0;
SELECT spotsigs_analyze('sjc', 'sig') > 0 AS has_template;
ANALYZE sjc, sjc2;
-- in a new session: the content query, and a bare % under 'auto' on the analyzed column
\c
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjc a JOIN sjc b ON a.sig % spotsig_content_query(b.sig, 'sjc', 'sig') AND a.id < b.id;
\c
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjc a JOIN sjc b ON a.sig % b.sig AND a.id < b.id;
SET spotsigs.similarity_threshold = 0.8;
-- a content query of the sites' templates at 0.5 (a function of b.sig and constants)
CREATE FUNCTION sjq(sig spotsig) RETURNS spotsigs_content_query LANGUAGE sql STABLE SET search_path = public AS $$
SELECT ROW(spotsig_remove(sig, t), 0.5, t, NULL, NULL, NULL)::spotsigs_content_query
FROM (SELECT spotsigs(sjsite(0) || ' . ' || sjsite(1) || ' . ' || sjsite(2)) AS t) s $$;
-- one whose template is the row's own signature, and one whose content is not the row's: refused
CREATE FUNCTION sjq_own(sig spotsig) RETURNS spotsigs_content_query LANGUAGE sql STABLE SET search_path = public AS
$$ SELECT ROW(spotsig_remove(sig, sig), 0.5, sig, NULL, NULL, NULL)::spotsigs_content_query $$;
CREATE FUNCTION sjq_other(sig spotsig) RETURNS spotsigs_content_query LANGUAGE sql STABLE SET search_path = public AS
$$ SELECT ROW('{1,2}'::spotsig, 0.5, '{}'::spotsig, NULL, NULL, NULL)::spotsigs_content_query $$;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sjc a JOIN sjc b ON a.sig % spotsig_content_query(b.sig, 'sjc', 'sig') AND a.id < b.id;
EXPLAIN (COSTS OFF) SELECT a.id FROM sjc2 a WHERE NOT EXISTS (SELECT 1 FROM sjc b WHERE b.sig % sjq(a.sig) AND a.id <> b.id + 1000);
SELECT sj_analyze('SELECT count(*) FROM sjc a JOIN sjc b ON a.sig % sjq(b.sig) AND a.id < b.id');
SELECT q, sj_compare(q, 0.8)
FROM unnest(ARRAY[
  'SELECT a.id AS x, b.id AS y FROM sjc a JOIN sjc b ON a.sig % spotsig_content_query(b.sig, ''sjc'', ''sig'') AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sjc a JOIN sjc b ON a.sig % spotsig_content_query(b.sig, ''sjc2'', ''sig'') AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sjc a JOIN sjc b ON a.sig % sjq(b.sig) AND a.id < b.id',
  'SELECT a.id AS x, b.id AS y FROM sjc a JOIN sjc b ON b.sig % sjq(a.sig)',
  'SELECT a.id AS x, b.id AS y FROM sjc a JOIN sjc2 b ON a.sig % sjq(b.sig)',
  'SELECT a.id AS x, b.id AS y FROM sjc2 b JOIN sjc a ON b.sig % sjq(a.sig) AND a.id + 1000 <> b.id',
  'SELECT a.id AS x FROM sjc a WHERE EXISTS (SELECT 1 FROM sjc b WHERE a.sig % sjq(b.sig) AND a.id <> b.id)',
  'SELECT a.id AS x FROM sjc2 a WHERE NOT EXISTS (SELECT 1 FROM sjc b WHERE b.sig % sjq(a.sig) AND a.id <> b.id + 1000)',
  'SELECT a.id AS x FROM sjc a WHERE NOT EXISTS (SELECT 1 FROM sjc2 b WHERE a.sig % spotsig_content_query(b.sig, ''sjc'', ''sig''))']) q;
SELECT a.id, b.id FROM sjc a JOIN sjc b ON a.sig % sjq_own(b.sig) AND a.id < b.id;
SELECT a.id, b.id FROM sjc a JOIN sjc b ON a.sig % sjq_other(b.sig) AND a.id < b.id;
SET spotsigs.enable_join = off;
SELECT count(*) FROM sjc a JOIN sjc b ON a.sig % sjq_own(b.sig) AND a.id < b.id;
RESET spotsigs.enable_join;
DROP FUNCTION sjq(spotsig), sjq_own(spotsig), sjq_other(spotsig), sjw(int, int), sjstory(int, int), sjsite(int);
DROP TABLE sjc, sjc2;
DROP FUNCTION sj_passes(text, text), sj_analyze(text);

-- A join whose smallest pass does not fit the limit: the rows and signatures kept count against
-- spotsigs.join_memory_limit (53200).
CREATE TABLE sjbig (id int, sig spotsig);
INSERT INTO sjbig SELECT i, spotsig_from_terms(ARRAY(SELECT 'w' || i || ':' || k FROM generate_series(1, 200) k),
                                              array_fill(1, ARRAY[200]))
FROM generate_series(1, 1000) i;
ANALYZE sjbig;
SET spotsigs.join_memory_limit = '1MB';
SELECT count(*) FROM sjbig a JOIN sjbig b ON a.sig % b.sig AND a.id < b.id;
SELECT count(*) FROM spotsigs_join('sjbig', 'id', 'sig', 0.8);
-- the limit the SQL join's error names (it counts the rows the scan keeps beside the documents)
SET spotsigs.join_memory_limit = '43MB';
SELECT count(*) FROM sjbig a JOIN sjbig b ON a.sig % b.sig AND a.id < b.id;
RESET spotsigs.join_memory_limit;
-- A join of a few rows under a limit below its read pipelines' buffers: the SQL join fails as
-- the function does, naming the same limit, under which both run.
CREATE TABLE sjtiny AS SELECT id, sig FROM sj WHERE id <= 60;
ANALYZE sjtiny;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sjtiny a JOIN sjtiny b ON a.sig % spotsig_query(b.sig, 0.5) AND a.id < b.id;
SET spotsigs.join_memory_limit = '1MB';
SELECT count(*) FROM spotsigs_join('sjtiny', 'id', 'sig', 0.5);
SELECT count(*) FROM sjtiny a JOIN sjtiny b ON a.sig % spotsig_query(b.sig, 0.5) AND a.id < b.id;
SET spotsigs.join_memory_limit = '9MB';
SELECT count(*) FROM spotsigs_join('sjtiny', 'id', 'sig', 0.5);
SELECT count(*) FROM sjtiny a JOIN sjtiny b ON a.sig % spotsig_query(b.sig, 0.5) AND a.id < b.id;
RESET spotsigs.join_memory_limit;
DROP TABLE sjtiny;
SELECT count(*) FROM sjbig a JOIN sjbig b ON a.sig % b.sig AND a.id < b.id;

-- One statement holds every join's inputs open until the executor ends: three R-S joins (two
-- inputs each) and a function call beside them.
SET spotsigs.similarity_threshold = 0.7;
SELECT (SELECT count(*) FROM sj r JOIN sj2 s ON r.sig % s.sig) AS at_07,
       (SELECT count(*) FROM sj r JOIN sj2 s ON r.sig % spotsig_query(s.sig, 0.6)) AS at_06,
       (SELECT count(*) FROM sj r JOIN sj2 s ON r.sig % spotsig_query(s.sig, 0.8)) AS at_08,
       (SELECT count(*) FROM spotsigs_join('sj', 'id', 'sig', 0.7)) AS self_07;
SET spotsigs.enable_join = off;
SELECT (SELECT count(*) FROM sj r JOIN sj2 s ON r.sig % s.sig) AS at_07,
       (SELECT count(*) FROM sj r JOIN sj2 s ON r.sig % spotsig_query(s.sig, 0.6)) AS at_06,
       (SELECT count(*) FROM sj r JOIN sj2 s ON r.sig % spotsig_query(s.sig, 0.8)) AS at_08;
RESET spotsigs.enable_join;

RESET spotsigs.similarity_threshold;
DROP FUNCTION sj_compare(text, float8);
DROP TABLE sj, sj2, sjt, sjbig, sjlong, sjlong2;
