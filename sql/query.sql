-- spotsig_query(q, tau): % with the threshold inside the operand, served by the index, equal to
-- % under the same spotsigs.similarity_threshold whatever the session's setting.
\set SHOW_CONTEXT never
SET extra_float_digits = 0;

-- 2000 rows in families of 7 that share most signatures (from spotsig_from_terms), an empty value
-- and a NULL
CREATE TABLE qy (id int PRIMARY KEY, sig spotsig);
INSERT INTO qy
SELECT i, spotsig_from_terms(array_agg('w' || (i / 7 * 29 + k)), array_agg(1 + k % 3))
FROM generate_series(1, 2000) i CROSS JOIN LATERAL generate_series(0, 20 + i % 40) k
WHERE (k * 7 + i) % 13 <> 0
GROUP BY i;
INSERT INTO qy VALUES (5001, '{}'), (5002, NULL);
CREATE INDEX qy_sig ON qy USING spotsigs (sig);

SELECT spotsig_query('{1:2,3}', 0.5);
SELECT (spotsig_query('{1:2,3}', 0.5)).threshold;

-- the session setting is irrelevant to the explicit form: 0.95 here, thresholds 0.3 to 0.9 below
SET spotsigs.similarity_threshold = 0.95;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM qy WHERE sig % spotsig_query('{1:2,3}', 0.5);
RESET enable_bitmapscan;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM qy WHERE sig % spotsig_query('{1:2,3}', 0.5);
RESET enable_indexscan;

-- index answers (plain and bitmap) equal the brute-force similarity() >= tau, for every 50th row
CREATE TEMP TABLE qy_check (tau float8, via text, q int, id int);
DO $$
DECLARE t float8;
BEGIN
  FOREACH t IN ARRAY ARRAY[0.3, 0.5, 0.9] LOOP
    SET LOCAL enable_seqscan = off;
    SET LOCAL enable_bitmapscan = off;
    INSERT INTO qy_check SELECT t, 'index', q.id, b.id FROM qy q, qy b
      WHERE q.id % 50 = 0 AND b.sig % spotsig_query(q.sig, t);
    SET LOCAL enable_indexscan = off;
    SET LOCAL enable_bitmapscan = on;
    INSERT INTO qy_check SELECT t, 'bitmap', q.id, b.id FROM qy q, qy b
      WHERE q.id % 50 = 0 AND b.sig % spotsig_query(q.sig, t);
    SET LOCAL enable_seqscan = on;
    SET LOCAL enable_indexscan = off;
    SET LOCAL enable_bitmapscan = off;
    INSERT INTO qy_check SELECT t, 'brute', q.id, b.id FROM qy q, qy b
      WHERE q.id % 50 = 0 AND similarity(b.sig, q.sig) >= t;
    RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan;
  END LOOP;
END $$;
SELECT tau, via, count(*) FROM qy_check GROUP BY 1, 2 ORDER BY 1, 2;
SELECT tau, count(*) AS differences FROM (
  (SELECT tau, q, id FROM qy_check WHERE via = 'index' EXCEPT SELECT tau, q, id FROM qy_check WHERE via = 'brute')
  UNION ALL
  (SELECT tau, q, id FROM qy_check WHERE via = 'brute' EXCEPT SELECT tau, q, id FROM qy_check WHERE via = 'index')
  UNION ALL
  (SELECT tau, q, id FROM qy_check WHERE via = 'bitmap' EXCEPT SELECT tau, q, id FROM qy_check WHERE via = 'brute')
  UNION ALL
  (SELECT tau, q, id FROM qy_check WHERE via = 'brute' EXCEPT SELECT tau, q, id FROM qy_check WHERE via = 'bitmap')
) d GROUP BY tau ORDER BY tau;
-- the same as % under the setting
SET spotsigs.similarity_threshold = 0.5;
SELECT (SELECT count(*) FROM qy q, qy b WHERE q.id % 50 = 0 AND b.sig % q.sig) =
       (SELECT count(*) FROM qy_check WHERE tau = 0.5 AND via = 'index') AS same_as_guc;
RESET spotsigs.similarity_threshold;

-- two keys, one of each form: both thresholds apply
SELECT count(*) FROM qy b, qy q WHERE q.id = 700
  AND b.sig % spotsig_query(q.sig, 0.3) AND b.sig % spotsig_query(q.sig, 0.6);
SELECT count(*) FROM qy b, qy q WHERE q.id = 700 AND similarity(b.sig, q.sig) >= 0.6;

-- NULL fields match nothing; the operator is NULL on them
SELECT count(*) FROM qy WHERE sig % ROW(NULL, 0.5)::spotsigs_query;
SELECT count(*) FROM qy WHERE sig % ROW('{1}', NULL)::spotsigs_query;
SELECT '{1}'::spotsig % ROW(NULL, 0.5)::spotsigs_query IS NULL AS is_null;
RESET enable_seqscan;
SELECT '{1:2,3}'::spotsig % spotsig_query('{1:2,3,4}', 0.75), '{1:2,3}'::spotsig % spotsig_query('{1:2,3,4}', 0.76);

-- bad thresholds: 22023, from the constructor and from a hand-made row, with or without the index
\set VERBOSITY sqlstate
SELECT spotsig_query('{1}', 0);
SELECT spotsig_query('{1}', 1.5);
SELECT spotsig_query('{1}', 'NaN');
SELECT '{1}'::spotsig % ROW('{1}', 2)::spotsigs_query;
SET enable_seqscan = off;
SELECT count(*) FROM qy WHERE sig % ROW('{1}', -1)::spotsigs_query;
RESET enable_seqscan;
\set VERBOSITY default
DROP TABLE qy;
