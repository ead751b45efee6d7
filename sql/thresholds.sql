-- The threshold rule, one check with one message at every entry point: a number in (0, 1];
-- the value is printed with every digit it has, so one ulp above 1 does not read as 1.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql
CREATE TABLE th_docs (id int PRIMARY KEY, sig spotsig, dup bigint, sim double precision);
INSERT INTO th_docs VALUES (1, '{1,2,3,4}'), (2, '{1,2,3,5}'), (3, '{7,8,9}');

CREATE TABLE th_values (v double precision);
INSERT INTO th_values VALUES ('NaN'), (-1), (0), ('-0'), (1.0000000000000002), (1.5), ('Infinity'),
                             ('-Infinity'), (1);

-- The trigger's threshold argument, checked when the trigger first fires.
CREATE TABLE th_trig (id int PRIMARY KEY, sig spotsig, dup bigint, sim double precision);
CREATE INDEX ON th_trig USING spotsigs (sig);
CREATE FUNCTION th_trigger(v double precision) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE format('CREATE OR REPLACE TRIGGER th_probe BEFORE INSERT ON th_trig FOR EACH ROW
                  EXECUTE FUNCTION spotsigs_flag_duplicates(%L, %L, %L, %L)', 'sig', 'dup', 'sim', v);
  RETURN sqlerr($$INSERT INTO th_trig VALUES (1, '{1,2}') ON CONFLICT DO NOTHING$$);
END $f$;

-- Every entry point with a threshold (function arguments, spotsigs_query's field, the setting,
-- the trigger's argument), on every value: the invalid ones fail alike.
SELECT v,
       sqlerr(format($$SELECT spotsigs_threshold(%L)$$, v)) AS spotsigs_threshold,
       sqlerr(format($$SELECT * FROM spotsigs_join('th_docs', 'id', 'sig', %L)$$, v)) AS join,
       sqlerr(format($$SELECT * FROM spotsigs_join_rs('th_docs', 'id', 'sig', 'th_docs', 'id', 'sig', %L)$$, v)) AS join_rs,
       sqlerr(format($$SELECT * FROM spotsigs_clusters('th_docs', 'id', 'sig', %L)$$, v)) AS clusters,
       sqlerr(format($$SELECT * FROM spotsigs_lsh_pairs('th_docs', 'id', 'sig', %L)$$, v)) AS lsh_pairs,
       sqlerr(format($$SELECT spotsig_query('{1}', %L)$$, v)) AS spotsig_query,
       sqlerr(format($$SELECT spotsigs_flag_batch('th_docs', 'id', 'sig', 'dup', 'sim', %L, 1)$$, v)) AS flag_batch,
       sqlerr(format($$SELECT count(*) FROM th_docs WHERE sig %% ROW('{1}', %L)::spotsigs_query$$, v)) AS query_operator,
       sqlerr(format($$SET spotsigs.similarity_threshold = %L$$, v)) AS setting,
       th_trigger(v) AS trigger
FROM th_values \gx
RESET spotsigs.similarity_threshold;
DROP FUNCTION th_trigger(double precision);
DROP TABLE th_trig;

-- The setting as a number, as a string, a non-number: it stores the shortest exact spelling.
SELECT sqlerr($$SET spotsigs.similarity_threshold = 1.0000000000000002$$);
SELECT sqlerr($$SET spotsigs.similarity_threshold = 1e400$$);
SELECT sqlerr($$SET spotsigs.similarity_threshold = 'high'$$);
SELECT sqlerr($$SET spotsigs.similarity_threshold = ''$$);
SET spotsigs.similarity_threshold = ' 0.50 ';
SHOW spotsigs.similarity_threshold;
SET spotsigs.similarity_threshold = 0.99999999999999989;
SHOW spotsigs.similarity_threshold;
SELECT spotsigs_threshold(NULL) = 0.99999999999999989 AS exact;
SET spotsigs.similarity_threshold = 1;
SHOW spotsigs.similarity_threshold;
RESET spotsigs.similarity_threshold;
SHOW spotsigs.similarity_threshold;

-- NULL takes spotsigs.similarity_threshold, in the joins and in spotsigs_lsh_pairs alike.
SET spotsigs.similarity_threshold = 0.6;
SELECT spotsigs_threshold(NULL);
SELECT * FROM spotsigs_join('th_docs', 'id', 'sig', NULL) ORDER BY 1, 2;
SELECT * FROM spotsigs_lsh_pairs('th_docs', 'id', 'sig', NULL, 2, 16) ORDER BY 1, 2;
SET spotsigs.similarity_threshold = 0.61;
SELECT * FROM spotsigs_lsh_pairs('th_docs', 'id', 'sig', NULL, 2, 16) ORDER BY 1, 2;
RESET spotsigs.similarity_threshold;
SELECT sqlerr($$SET spotsigs.similarity_threshold = 0$$);

-- spotsigs_lsh_pairs checks k and l (as spotsig_lsh_keys does) also on a table without rows,
-- and refuses NULL for everything but the threshold.
CREATE TABLE th_empty (id int, sig spotsig);
SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs('th_empty', 'id', 'sig', 0.5, 0, 4)$$);
SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs('th_empty', 'id', 'sig', 0.5, 64, 65)$$);
SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs('th_empty', 'id', 'sig', 0.5, NULL, 4)$$);
SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs(NULL, 'id', 'sig', 0.5)$$);
SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs('th_empty', 'id', 'sig', 0.5, 6, 32, NULL)$$);

DROP TABLE th_docs, th_values, th_empty;
