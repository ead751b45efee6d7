-- The spotsig type: text form, canonical values, errors, binary I/O, equality and hashing.
\set SHOW_CONTEXT never
-- err(q): runs q and shows its SQLSTATE and message instead of failing the test.
CREATE OR REPLACE FUNCTION err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' / ' || nullif(detail, ''), '');
END $$;

-- canonical text: 16 hex digits, ascending, ':freq' only when not 1, duplicates summed
SELECT '{}'::spotsig AS empty;
SELECT '{ff:2, 1, 0A}'::spotsig;
SELECT ' { 1 : 3 , 1 } '::spotsig AS summed;
SELECT '{ffffffffffffffff:2147483647}'::spotsig AS largest;
SELECT length('{ff:2,1}'::spotsig), spotsig_distinct('{ff:2,1}'::spotsig);

-- the text form round-trips exactly
SELECT s::text::spotsig = s AS roundtrip, s::text
FROM (VALUES ('{}'::spotsig), ('{1,2:7,8000000000000000:300}'), ('{ffffffffffffffff:70000}')) v(s);

-- malformed literals: 22P02 with the position
SELECT err($$SELECT 'x'::spotsig$$);
SELECT err($$SELECT '{'::spotsig$$);
SELECT err($$SELECT '{1,}'::spotsig$$);
SELECT err($$SELECT '{1:0}'::spotsig$$);
SELECT err($$SELECT '{1:}'::spotsig$$);
SELECT err($$SELECT '{1:-2}'::spotsig$$);
SELECT err($$SELECT '{12345678901234567}'::spotsig$$);
SELECT err($$SELECT '{1:2147483648}'::spotsig$$);
SELECT err($$SELECT '{1} x'::spotsig$$);
SELECT err($$SELECT '{1 2}'::spotsig$$);
-- a length beyond 2^31-1 is a program limit, reported as a syntax problem of the literal
SELECT err($$SELECT '{1:2147483647,2:1}'::spotsig$$);

-- binary send format: count, then (int64 hash, int32 freq) in network byte order
SELECT spotsig_send('{ff:2,1}'::spotsig);
-- binary round trip through COPY
CREATE TABLE bin_src (id int, s spotsig);
INSERT INTO bin_src VALUES (1, '{}'), (2, '{1,2:7,8000000000000000:300}'), (3, NULL);
COPY bin_src TO '/tmp/spotsigs_regress_bin.copy' WITH (FORMAT binary);
CREATE TABLE bin_dst (LIKE bin_src);
COPY bin_dst FROM '/tmp/spotsigs_regress_bin.copy' WITH (FORMAT binary);
SELECT a.id, a.s IS NOT DISTINCT FROM b.s AS same FROM bin_src a JOIN bin_dst b USING (id) ORDER BY 1;

-- equality and hashing: exact duplicates group
SELECT '{1,2:2}'::spotsig = '{2:2,1}'::spotsig AS eq, '{1,2:2}'::spotsig <> '{1,2}'::spotsig AS ne;
SELECT s, count(*) FROM (VALUES ('{1,2}'::spotsig), ('{2,1}'), ('{1}'), ('{2,1:1}')) v(s)
GROUP BY s ORDER BY 2 DESC, 1::text;
SELECT count(DISTINCT s) AS distinct_values FROM (VALUES ('{1,2}'::spotsig), ('{2,1}'), ('{1}')) v(s);

-- similarity: the paper's section 4.3.2 example (hashes stand for s1, s2, s3)
WITH d(name, s) AS (VALUES ('d1', '{1:5,2:4,3:4}'::spotsig), ('d2', '{1:8,2:4}'), ('d3', '{1:4,2:5,3:5}'))
SELECT a.name, b.name, similarity(a.s, b.s), a.s <-> b.s AS distance
FROM d a JOIN d b ON a.name < b.name ORDER BY 1, 2;
SELECT similarity('{1:5,2:4,3:4}'::spotsig, '{1:4,2:5,3:5}') = 0.8 AS exact_0_8;
-- set similarity ignores frequencies
SELECT set_similarity('{1:5,2:4,3:4}'::spotsig, '{1:8,2:4}');
-- empty values are similar to nothing, not even to themselves
SELECT similarity('{}'::spotsig, '{}'), similarity('{}'::spotsig, '{1}'), '{}'::spotsig <-> '{}';

-- the % operator follows spotsigs.similarity_threshold
SHOW spotsigs.similarity_threshold;
SET spotsigs.similarity_threshold = 0.8;
SELECT '{1:5,2:4,3:4}'::spotsig % '{1:4,2:5,3:5}' AS at_0_8, '{1:5,2:4,3:4}'::spotsig % '{1:8,2:4}' AS d1_d2;
SET spotsigs.similarity_threshold = 0.81;
SELECT '{1:5,2:4,3:4}'::spotsig % '{1:4,2:5,3:5}' AS at_0_81;
SELECT err($$SET spotsigs.similarity_threshold = 0$$);
SELECT err($$SET spotsigs.similarity_threshold = 1.5$$);
RESET spotsigs.similarity_threshold;

-- exported hashes: signed bigint view of the unsigned hashes
SELECT * FROM spotsig_hashes('{ffffffffffffffff:3,1}'::spotsig);

-- ordering: by length first; consistent with equality
SELECT s FROM (VALUES ('{5:3}'::spotsig), ('{1,2}'), ('{}'), ('{2,1}'), ('{9}')) v(s) ORDER BY s;
SELECT '{1,2}'::spotsig < '{5:3}' AS lt, '{1,2}'::spotsig <= '{2,1}' AS le, '{9}'::spotsig > '{1}' AS gt;
SELECT DISTINCT s FROM (VALUES ('{1,2}'::spotsig), ('{2,1}'), ('{1}')) v(s) ORDER BY s;
