-- The spotsig type: text form, canonical values, errors, binary I/O, equality and hashing.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql

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
SELECT sqlerr($$SELECT 'x'::spotsig$$);
SELECT sqlerr($$SELECT '{'::spotsig$$);
SELECT sqlerr($$SELECT '{1,}'::spotsig$$);
SELECT sqlerr($$SELECT '{1:0}'::spotsig$$);
SELECT sqlerr($$SELECT '{1:}'::spotsig$$);
SELECT sqlerr($$SELECT '{1:-2}'::spotsig$$);
SELECT sqlerr($$SELECT '{12345678901234567}'::spotsig$$);
SELECT sqlerr($$SELECT '{1} x'::spotsig$$);
SELECT sqlerr($$SELECT '{1 2}'::spotsig$$);
-- frequencies may carry leading zeros
SELECT '{1:007}'::spotsig AS padded, '{2:000000000000000000002147483647}'::spotsig AS padded_largest;
-- a frequency, a summed frequency or a length beyond 2^31-1 is a program limit (54000)
SELECT sqlerr($$SELECT '{1:2147483648}'::spotsig$$);
SELECT sqlerr($$SELECT '{1:99999999999999999999999999999999999999999999999999}'::spotsig$$);
SELECT sqlerr($$SELECT '{1:2147483647,1:1}'::spotsig$$);
SELECT sqlerr($$SELECT '{1:2147483647,2:1}'::spotsig$$);

-- binary send format: count, then (int64 hash, int32 freq) in network byte order
SELECT spotsig_send('{ff:2,1}'::spotsig);
-- binary round trip through COPY
CREATE TABLE bin_src (id int, s spotsig);
INSERT INTO bin_src VALUES (1, '{}'), (2, '{1,2:7,8000000000000000:300}'), (3, NULL);
COPY bin_src TO '/tmp/spotsigs_regress_bin.copy' WITH (FORMAT binary);
CREATE TABLE bin_dst (LIKE bin_src);
COPY bin_dst FROM '/tmp/spotsigs_regress_bin.copy' WITH (FORMAT binary);
SELECT a.id, a.s IS NOT DISTINCT FROM b.s AS same FROM bin_src a JOIN bin_dst b USING (id) ORDER BY 1;
-- bin_in(hex): the bytes given in hex, received as a binary spotsig (a bytea column copied out in
-- binary format carries them as its field), as text or the error
CREATE TEMP TABLE bin_raw (b bytea);
CREATE TEMP TABLE bin_sig (s spotsig);
CREATE FUNCTION bin_in(hex text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE r text;
BEGIN
  TRUNCATE bin_raw, bin_sig;
  INSERT INTO bin_raw VALUES (decode(hex, 'hex'));
  EXECUTE $$COPY bin_raw TO '/tmp/spotsigs_regress_raw.copy' WITH (FORMAT binary)$$;
  EXECUTE $$COPY bin_sig FROM '/tmp/spotsigs_regress_raw.copy' WITH (FORMAT binary)$$;
  SELECT s::text INTO r FROM bin_sig;
  RETURN r;
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $f$;
SELECT bin_in(encode(spotsig_send('{ff:2,1}'::spotsig), 'hex')) AS sent;
-- hashes in the signed order spotsig_hashes returns them (-1 before 1), and a hash given twice
SELECT bin_in('00000002' || 'ffffffffffffffff00000003' || '000000000000000100000001') AS signed_order;
SELECT bin_in('00000003' || '000000000000000900000001' || '000000000000000200000001' || '000000000000000900000004') AS summed;
-- the hashes spotsig_hashes exports, sent back in its order, give the same value
SELECT bin_in('0000000' || count(*) || string_agg(lpad(to_hex(h), 16, '0') || lpad(to_hex(f), 8, '0'), '' ORDER BY h))::spotsig
       = '{ffffffffffffffff:3,1,8000000000000000:2}'::spotsig AS from_spotsig_hashes
FROM spotsig_hashes('{ffffffffffffffff:3,1,8000000000000000:2}'::spotsig) AS x(h, f);
-- malformed binary values: 22P03; beyond the limits: 54000
SELECT bin_in('00000001' || '000000000000000a' || 'fffffffd') AS negative_frequency;
SELECT bin_in('00000001' || '000000000000000a' || '00000000') AS zero_frequency;
SELECT bin_in('ffffffff') AS negative_count;
SELECT bin_in('00000002' || '000000000000000a00000001') AS count_past_the_data;
SELECT bin_in('000000') AS too_short;
SELECT bin_in('00000002' || '000000000000000a7fffffff' || '000000000000000b00000001') AS too_long;

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
SELECT sqlerr($$SET spotsigs.similarity_threshold = 0$$);
SELECT sqlerr($$SET spotsigs.similarity_threshold = 1.5$$);
RESET spotsigs.similarity_threshold;

-- exported hashes: signed bigint view of the unsigned hashes
SELECT * FROM spotsig_hashes('{ffffffffffffffff:3,1}'::spotsig);

-- ordering: by length first; consistent with equality
SELECT s FROM (VALUES ('{5:3}'::spotsig), ('{1,2}'), ('{}'), ('{2,1}'), ('{9}')) v(s) ORDER BY s;
SELECT '{1,2}'::spotsig < '{5:3}' AS lt, '{1,2}'::spotsig <= '{2,1}' AS le, '{9}'::spotsig > '{1}' AS gt;
SELECT DISTINCT s FROM (VALUES ('{1,2}'::spotsig), ('{2,1}'), ('{1}')) v(s) ORDER BY s;
