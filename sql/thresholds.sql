-- The threshold rule, one check with one message at every entry point: a number in (0, 1];
-- the value is printed with every digit it has, so one ulp above 1 does not read as 1.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql
CREATE TABLE th_docs (id int PRIMARY KEY, sig spotsig, dup bigint, sim double precision);
INSERT INTO th_docs VALUES (1, '{1,2,3,4}'), (2, '{1,2,3,5}'), (3, '{7,8,9}');

CREATE TABLE th_values (v double precision);
INSERT INTO th_values VALUES ('NaN'), (-1), (0), ('-0'), (1.0000000000000002), (1.5), ('Infinity'),
                             ('-Infinity'), (1);

-- Every function with a threshold argument, on every value: the invalid ones fail alike.
SELECT v,
       sqlerr(format($$SELECT spotsigs_threshold(%L)$$, v)) AS spotsigs_threshold,
       sqlerr(format($$SELECT * FROM spotsigs_join('th_docs', 'id', 'sig', %L)$$, v)) AS join,
       sqlerr(format($$SELECT * FROM spotsigs_join_rs('th_docs', 'id', 'sig', 'th_docs', 'id', 'sig', %L)$$, v)) AS join_rs,
       sqlerr(format($$SELECT * FROM spotsigs_clusters('th_docs', 'id', 'sig', %L)$$, v)) AS clusters,
       sqlerr(format($$SELECT * FROM spotsigs_lsh_pairs('th_docs', 'id', 'sig', %L)$$, v)) AS lsh_pairs,
       sqlerr(format($$SELECT spotsig_query('{1}', %L)$$, v)) AS spotsig_query,
       sqlerr(format($$SELECT spotsigs_flag_batch('th_docs', 'id', 'sig', 'dup', 'sim', %L, 1)$$, v)) AS flag_batch
FROM th_values \gx

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
