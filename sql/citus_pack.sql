-- The rows a distributed join's task fetches from another node (spotsigs_citus_pack, packed with
-- the signatures in binary form) come back unchanged through spotsigs_citus_unpack, which checks
-- what it reads; and spotsigs_join_candidates counts the pairs the joins verified. Both work
-- without Citus.
\i sql/include/sqlerr.sql
CREATE TABLE cp (id int, sig spotsig);
INSERT INTO cp VALUES (1, '{1,2,3,4}'), (2, '{1,2,3,5}'), (3, '{}'), (-7, '{ffffffffffffffff:3,9}'),
                      (4, NULL), (NULL, '{1}');
-- Every row with an id and a signature, exactly (a NULL on either side is left out).
SELECT u.id, u.sig, u.sig = c.sig AS same
  FROM spotsigs_citus_unpack(spotsigs_citus_pack('cp', 'id', 'sig')) u LEFT JOIN cp c ON c.id = u.id
 ORDER BY u.id;
-- An empty table packs to the format's tag alone.
CREATE TABLE cp_empty (id bigint, sig spotsig);
SELECT spotsigs_citus_pack('cp_empty', 'id', 'sig') AS packed, count(*)
  FROM spotsigs_citus_unpack(spotsigs_citus_pack('cp_empty', 'id', 'sig'));
-- A value held for the transaction (a distributed join's template, which the query that
-- broadcasts it reads back) comes back unchanged until it is let go (NULL), replaced, or the
-- transaction ends, however it ends; with none held, reading it is an error (55000), never a NULL
-- that would send the tasks no template.
CREATE TEMP TABLE big AS
SELECT ('{' || string_agg(to_hex(i * 7919), ',') || '}')::spotsig AS sig FROM generate_series(1, 20000) i;
CREATE FUNCTION held_or_none() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN spotsigs_citus_held_value()::text;
EXCEPTION WHEN object_not_in_prerequisite_state THEN
  RETURN 'none held (' || SQLERRM || ')';
END $$;
SELECT held_or_none() AS before_any;
BEGIN;
SELECT spotsigs_citus_hold_value(sig) FROM big;
SELECT length(spotsigs_citus_held_value()), spotsigs_citus_held_value() = sig AS same FROM big;
SELECT spotsigs_citus_hold_value('{ffffffffffffffff:3,9}');
SELECT held_or_none() AS replaced;
SELECT spotsigs_citus_hold_value(NULL);
SELECT held_or_none() AS let_go;
SELECT spotsigs_citus_hold_value('{1,2}');
COMMIT;
SELECT held_or_none() AS after_commit;
BEGIN;
SELECT spotsigs_citus_hold_value('{1,2}');
ROLLBACK;
SELECT held_or_none() AS after_rollback;
BEGIN;
SELECT spotsigs_citus_hold_value('{1,2}');
SELECT 1 / 0;
ROLLBACK;
SELECT held_or_none() AS after_an_error;
DROP TABLE big;
DROP FUNCTION held_or_none();
-- Malformed input: 22P03, never a crash.
\set VERBOSITY sqlstate
SELECT * FROM spotsigs_citus_unpack('not base64!');
SELECT * FROM spotsigs_citus_unpack(encode('XXXX', 'base64'));
SELECT * FROM spotsigs_citus_unpack(left(spotsigs_citus_pack('cp', 'id', 'sig'), 40));
-- A signature whose binary form lies about its count: the receive function refuses it.
SELECT * FROM spotsigs_citus_unpack(encode('SSR1'::bytea || '\x0000000000000001'::bytea || '\x00000010'::bytea
                                           || '\x00000009'::bytea || '\x000000000000000100000001'::bytea, 'base64'));
-- Bytes of a value that its binary form does not use are refused (binary COPY refuses them too).
\set VERBOSITY default
SELECT sqlerr($$SELECT * FROM spotsigs_citus_unpack(encode('SSR1'::bytea || int8send(5)
  || int4send(octet_length(spotsig_send('{1,2}')) + 1) || spotsig_send('{1,2}') || '\x00'::bytea, 'base64'))$$);
-- The same value without the stray byte is read.
SELECT * FROM spotsigs_citus_unpack(encode('SSR1'::bytea || int8send(5) || int4send(octet_length(spotsig_send('{1,2}')))
                                           || spotsig_send('{1,2}'), 'base64'));
-- The columns pass the joins' checks: the signature column must be a spotsig (a bytea column of
-- sent values is not one), the id an integer column (numeric 1.5 and 2 would both become 2) and a
-- user column (not ctid).
CREATE TABLE cp_bad (id int, n numeric, b bytea, sig spotsig);
INSERT INTO cp_bad VALUES (1, 1.5, spotsig_send('{1,2}'), '{1,2}'), (2, 2, spotsig_send('{1,3}'), '{1,3}');
SELECT sqlerr($$SELECT spotsigs_citus_pack('cp_bad', 'id', 'b')$$);
SELECT sqlerr($$SELECT spotsigs_citus_pack('cp_bad', 'n', 'sig')$$);
SELECT sqlerr($$SELECT spotsigs_citus_pack('cp_bad', 'ctid', 'sig')$$);
SELECT sqlerr($$SELECT spotsigs_citus_pack('cp_bad', 'nosuch', 'sig')$$);
SELECT count(*) FROM spotsigs_citus_unpack(spotsigs_citus_pack('cp_bad', 'id', 'sig'));
DROP TABLE cp_bad;
\set VERBOSITY sqlstate
-- The caller's privileges apply to the read.
CREATE ROLE cp_nobody;
SET ROLE cp_nobody;
SELECT spotsigs_citus_pack('cp', 'id', 'sig');
RESET ROLE;
\set VERBOSITY default
-- A task's pairs, packed by spotsigs_citus_pairs_agg (ids as varints, the similarity's 64 bits) and read
-- back by spotsigs_citus_pairs as they were given, or with the smaller id first when ordered.
CREATE TEMP TABLE cp_pairs (a bigint, b bigint, s float8);
INSERT INTO cp_pairs VALUES (9, 2, 0.1), (-5, 7, 1), (3, 3, 1e-300), (9223372036854775807, -9223372036854775808, 0.7);
SELECT spotsigs_citus_pairs_agg(a, b, s) AS packed FROM cp_pairs WHERE a = 9;
SELECT p.* FROM (SELECT spotsigs_citus_pairs_agg(a, b, s) AS t FROM cp_pairs) x, spotsigs_citus_pairs(x.t, false) p;
SELECT p.* FROM (SELECT spotsigs_citus_pairs_agg(a, b, s) AS t FROM cp_pairs) x, spotsigs_citus_pairs(x.t, true) p;
SELECT count(*) FROM (SELECT spotsigs_citus_pairs_agg(a, b, s) AS t FROM cp_pairs x
                      WHERE false) x, spotsigs_citus_pairs(x.t, false);
SELECT (SELECT count(*) FROM (SELECT p.* FROM (SELECT spotsigs_citus_pairs_agg(a, b, s) AS t FROM cp_pairs) x,
                                               spotsigs_citus_pairs(x.t, false) p
                              EXCEPT ALL SELECT * FROM cp_pairs) d) AS differences;
-- Malformed input: 22P03; a NULL pair: 22004.
\set VERBOSITY sqlstate
SELECT * FROM spotsigs_citus_pairs('not base64!', false);
SELECT * FROM spotsigs_citus_pairs(encode('SSR1', 'base64'), false);
SELECT * FROM spotsigs_citus_pairs(encode('SSP1'::bytea || int8send(1) || int8send(2), 'base64'), false);
SELECT * FROM spotsigs_citus_pairs(encode('SSP1'::bytea || '\x0204'::bytea || float8send(0.5) || '\x80'::bytea, 'base64'), false);
-- A pair written by hand: ids 1 and 2 (zigzag varints 2 and 4), then the similarity's 64 bits.
SELECT * FROM spotsigs_citus_pairs(encode('SSP1'::bytea || '\x0204'::bytea || float8send(0.5), 'base64'), false);
SELECT spotsigs_citus_pairs_agg(a, NULL, s) FROM cp_pairs;
\set VERBOSITY default
DROP TABLE cp_pairs;
-- The candidates verified by this session's joins grow by at least each join's pairs.
CREATE TEMP TABLE cp_before AS SELECT spotsigs_join_candidates() AS n;
SELECT count(*) AS pairs FROM spotsigs_join('cp', 'id', 'sig', 0.5);
SELECT spotsigs_join_candidates() - n >= 1 AS counted FROM cp_before;
-- The length pieces of a distributed join's export ascend from 0 (checked before Citus is used).
\set VERBOSITY sqlstate
SELECT spotsigs_citus_export_pieces('{cp}', 'x', 'id', 'sig', '{1,5}');
SELECT spotsigs_citus_export_pieces('{cp}', 'x', 'id', 'sig', '{0,5,5}');
SELECT spotsigs_citus_export_pieces('{cp}', 'x', 'id', 'sig', '{}');
\set VERBOSITY default
DROP ROLE cp_nobody;
DROP TABLE cp, cp_empty, cp_before;
