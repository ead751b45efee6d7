-- Quality toolkit: shingles, document frequencies and IDF filtering, I-Match, LSH keys, cosine.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql

-- word 2-shingles are the words joined by ':' and hashed like signatures
SELECT shingles('The cat sat; the cat ran.', 2)
     = spotsig_from_terms(ARRAY['the:cat', 'cat:sat', 'sat:the', 'cat:ran'], ARRAY[2, 1, 1, 1]) AS same;
SELECT length(shingles('<p>Obama <b>spoke</b></p><script>var x;</script> obama', 1)) AS words_outside_script;
SELECT shingles('two words', 3) AS too_short, shingles('', 1) AS empty;
SELECT sqlerr($$SELECT shingles('x', 0)$$);
SELECT sqlerr($$SELECT shingles('x', 101)$$);

-- document frequencies: 3 documents, NULL rows are skipped
CREATE TABLE qdocs (id int, sig spotsig);
INSERT INTO qdocs VALUES (1, shingles('a b c', 1)), (2, shingles('a b d b', 1)), (3, shingles('a e', 1)),
                         (4, NULL);
CREATE TABLE qstats AS SELECT count(sig) AS n, spotsig_df_agg(sig) AS df FROM qdocs;
SELECT n, df = spotsig_from_terms(ARRAY['a', 'b', 'c', 'd', 'e'], ARRAY[3, 2, 1, 1, 1]) AS df_ok FROM qstats;
SELECT spotsig_df_agg(sig) AS none FROM qdocs WHERE false;

-- idf = log(n/df)/log(n) with n = 3: a 0, b 0.369, c/d/e 1 (unseen signatures count as df 1)
SELECT round(spotsig_idf(3, 3)::numeric, 4) AS a, round(spotsig_idf(2, 3)::numeric, 4) AS b,
       round(spotsig_idf(1, 3)::numeric, 4) AS c, round(spotsig_idf(0, 3)::numeric, 4) AS unseen;
SELECT d.id, spotsig_filter(d.sig, s.df, s.n, 0.2, 0.85) = shingles('b', 1) AS only_b,
       length(spotsig_filter(d.sig, s.df, s.n, 0.2, 0.85)) AS kept,
       length(spotsig_filter(d.sig, s.df, s.n, 0.9, 1.0)) AS rare
FROM qdocs d, qstats s ORDER BY d.id;
SELECT sqlerr($$SELECT spotsig_filter('{1}', '{1}', 1, 0, 1)$$);
SELECT sqlerr($$SELECT spotsig_idf(1, 1)$$);

-- I-Match: one fingerprint of the distinct signatures; frequencies and order do not matter
SELECT imatch(shingles('x y', 1)) = imatch(shingles('y x x', 1)) AS same_set,
       imatch(shingles('x y', 1)) = imatch(shingles('x y z', 1)) AS different_set,
       imatch('{}') IS NULL AS empty_is_null;

-- LSH band keys: l keys, identical values share all, empty values have none
SELECT cardinality(spotsig_lsh_keys(shingles('a b c', 1), 6, 32)) AS l,
       spotsig_lsh_keys(shingles('a b c', 1), 3, 4) = spotsig_lsh_keys(shingles('c b a', 1), 3, 4) AS identical,
       spotsig_lsh_keys(shingles('a b c', 1), 3, 4, 1) = spotsig_lsh_keys(shingles('a b c', 1), 3, 4, 2) AS seeds_equal,
       spotsig_lsh_keys('{}', 6, 32) AS empty;
SELECT sqlerr($$SELECT spotsig_lsh_keys('{1}', 0, 4)$$);
SELECT sqlerr($$SELECT spotsig_lsh_keys('{1}', 64, 65)$$);

-- LSH-S pairs: candidates verified exactly; equal values always meet
INSERT INTO qdocs VALUES (5, shingles('a b c', 1)), (6, shingles('c a b', 1));
SELECT * FROM spotsigs_lsh_pairs('qdocs', 'id', 'sig', 0.9, 6, 32) ORDER BY 1, 2;

-- cosine of frequency vectors: (1,2,0).(0,1,1) / (sqrt 5 * sqrt 2) = 2 / sqrt 10
SELECT round(cosine_similarity(spotsig_from_terms(ARRAY['x', 'y'], ARRAY[1, 2]),
                               spotsig_from_terms(ARRAY['y', 'z'], ARRAY[1, 1]))::numeric, 6) AS cos,
       cosine_similarity('{1,2,3,4}', '{1}') AS set_half,
       cosine_similarity('{1:3}', '{1:3}') AS same,
       cosine_similarity('{}', '{1}') AS empty;

DROP TABLE qdocs, qstats;
