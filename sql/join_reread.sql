-- Joins that read their relation more than once (passes, clusters in passes) refuse a relation
-- whose rows change from one read to the next, instead of matching rows they never tallied.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql

-- Groups of 4 rows sharing 10 to 39 signatures, each row with one of its own: too many for one
-- read under 24MB, so the joins run in passes.
CREATE TABLE cl_t AS SELECT i AS id, ('{' || array_to_string(ARRAY(SELECT to_hex((i / 4) * 100 + k)
  FROM generate_series(1, 10 + ((i / 4) % 30)) k), ',') || ',' || to_hex(100000000 + i) || '}')::spotsig AS sig
FROM generate_series(1, 39998) i;
CREATE SEQUENCE cl_seq;
CREATE VIEW cl_v AS SELECT nextval('cl_seq') AS id, sig FROM cl_t;   -- new ids on every read
SET spotsigs.join_memory_limit = '24MB';
-- Each read of the view numbers its rows anew (this crashed the server: a pass's pairs named
-- ids that the first read had not seen).
SELECT sqlerr($$SELECT count(*) FROM spotsigs_clusters('cl_v', 'id', 'sig', 0.5)$$);
SELECT sqlerr($$SELECT count(*) FROM spotsigs_join('cl_v', 'id', 'sig', 0.5)$$);
SELECT sqlerr($$SELECT count(*) FROM spotsigs_join_rs('cl_v', 'id', 'sig', 'cl_t', 'id', 'sig', 0.5)$$);
SELECT sqlerr($$SELECT count(*) FROM spotsigs_join_rs('cl_t', 'id', 'sig', 'cl_v', 'id', 'sig', 0.5)$$);
-- 40,000 rows: before, no crash but every row its own cluster.
INSERT INTO cl_t VALUES (39999, '{1}'), (40000, '{2}');
SELECT sqlerr($$SELECT count(*) FROM spotsigs_clusters('cl_v', 'id', 'sig', 0.5)$$);
-- The table itself, read in passes under the same limit, gives what one read gives.
CREATE TEMP TABLE cl_passes AS SELECT * FROM spotsigs_clusters('cl_t', 'id', 'sig', 0.5);
RESET spotsigs.join_memory_limit;
CREATE TEMP TABLE cl_once AS SELECT * FROM spotsigs_clusters('cl_t', 'id', 'sig', 0.5);
SELECT count(*) AS rows, count(DISTINCT cluster) AS clusters FROM cl_passes;
SELECT count(*) AS differences FROM (
  (SELECT * FROM cl_passes EXCEPT SELECT * FROM cl_once) UNION ALL
  (SELECT * FROM cl_once EXCEPT SELECT * FROM cl_passes)) d;
-- The same view read once (no passes) is answered: one read has nothing to disagree with.
SELECT count(*) AS rows, count(DISTINCT cluster) AS clusters FROM spotsigs_clusters('cl_v', 'id', 'sig', 0.5);

-- A volatile row security policy forced on the table's owner: each read sees other rows.
CREATE ROLE cl_owner;
GRANT CREATE ON SCHEMA public TO cl_owner;
GRANT SELECT ON cl_t TO cl_owner;
SET ROLE cl_owner;
CREATE TABLE cl_rls AS SELECT * FROM cl_t;
ALTER TABLE cl_rls ENABLE ROW LEVEL SECURITY;
ALTER TABLE cl_rls FORCE ROW LEVEL SECURITY;
CREATE POLICY cl_half ON cl_rls USING (random() < 0.97);
SET spotsigs.join_memory_limit = '24MB';
SELECT sqlerr($$SELECT count(*) FROM spotsigs_clusters('cl_rls', 'id', 'sig', 0.5)$$);
SELECT sqlerr($$SELECT count(*) FROM spotsigs_join('cl_rls', 'id', 'sig', 0.5)$$);
RESET spotsigs.join_memory_limit;
DROP TABLE cl_rls;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM cl_owner;
REVOKE SELECT ON cl_t FROM cl_owner;
DROP ROLE cl_owner;
DROP VIEW cl_v;
DROP SEQUENCE cl_seq;
DROP TABLE cl_t;
