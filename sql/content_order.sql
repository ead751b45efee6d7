-- ORDER BY sig <-> spotsig_content_query(...) through the index once the backend knows its rows'
-- content lengths (docs/index.md, "The content measure"): rows of the index's segments come with
-- their exact content distance, rows written since (pending, a new segment) with the bound and the
-- executor's recheck. Every order equals the brute force on the stored template.
-- 400 rows in 100 stories of 4 copies: each row holds 10 of 20 boilerplate signatures (1 twice on
-- even rows), its story's 12 signatures and 3 of its own.
SET client_min_messages = warning;
CREATE FUNCTION corow(id int) RETURNS spotsig LANGUAGE sql IMMUTABLE AS $$
  SELECT (SELECT array_agg(x ORDER BY x) FROM (
     SELECT b AS x FROM generate_series(1, 20) b WHERE (b + id) % 2 = 0
     UNION ALL SELECT 1 WHERE id % 2 = 0
     UNION ALL SELECT 1000 + (id / 4) * 20 + k FROM generate_series(1, 12) k
     UNION ALL SELECT 100000 + id * 5 + k FROM generate_series(1, 3) k) s)::text::spotsig $$;
CREATE TABLE tco (id int PRIMARY KEY, sig spotsig);
INSERT INTO tco SELECT i, corow(i) FROM generate_series(1, 400) i;
CREATE INDEX tco_sig ON tco USING spotsigs (sig);
SELECT spotsigs_analyze('tco', 'sig') > 0 AS has_template;
SELECT template_size FROM spotsigs_stats WHERE relation = 'tco'::regclass;
SET enable_seqscan = off;
-- The whole order of every 4th row as the query, against the brute force; run three times over:
-- the backend counts the content lengths once the rows it rechecked reach a share of the index's
-- postings (1 in 2,048).
CREATE FUNCTION codiff(step int) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM tco q
  WHERE q.id % step = 0 AND
    (SELECT array_agg(ROW(d, b) ORDER BY d, b) FROM (SELECT b.id AS b, b.sig <-> spotsig_content_query(q.sig, 'tco', 'sig') AS d
       FROM tco b ORDER BY b.sig <-> spotsig_content_query(q.sig, 'tco', 'sig')) x)
    IS DISTINCT FROM
    (SELECT array_agg(ROW(1 - similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)), b.id)
            ORDER BY 1 - similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)), b.id)
     FROM tco b, spotsigs_stats s WHERE s.relation = 'tco'::regclass) $$ SET search_path = public;
-- The 5 nearest: the same distances as the brute force's.
CREATE FUNCTION codiff5(step int) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM tco q
  WHERE q.id % step = 1 AND
    (SELECT array_agg(d ORDER BY d) FROM (SELECT b.sig <-> spotsig_content_query(q.sig, 'tco', 'sig') AS d
       FROM tco b ORDER BY b.sig <-> spotsig_content_query(q.sig, 'tco', 'sig') LIMIT 5) x)
    IS DISTINCT FROM
    (SELECT array_agg(d ORDER BY d) FROM (SELECT 1 - similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)) AS d
     FROM tco b, spotsigs_stats s WHERE s.relation = 'tco'::regclass ORDER BY 1 LIMIT 5) x) $$ SET search_path = public;
SELECT codiff(4) AS pass1, codiff(4) AS pass2, codiff5(4) AS limit5;
-- The lengths are counted: the DEBUG1 message of a new backend's build after enough rechecks.
\c
SET enable_seqscan = off;
SET jit = off;
SET client_min_messages = debug1;
SELECT codiff(40) AS warm;
SELECT codiff(40) AS counted;
SET client_min_messages = warning;
SELECT codiff(4) AS with_lengths, codiff5(4) AS limit5_with_lengths;
-- Rows in the pending list (the bound and a recheck) beside segment rows (exact).
INSERT INTO tco SELECT i, corow(i) FROM generate_series(401, 440) i;
SELECT codiff(4) AS with_pending, codiff5(4) AS limit5_with_pending;
-- VACUUM rewrites the segment that lost rows: its rows fall back to the bound until counted again.
DELETE FROM tco WHERE id % 9 = 0;
VACUUM tco;
SELECT codiff(4) AS after_vacuum, codiff(4) AS after_vacuum_again, codiff5(4) AS limit5_after_vacuum;
-- A slot freed by VACUUM and reused by a new row with other signatures.
INSERT INTO tco SELECT i + 1000, corow(i * 7) FROM generate_series(1, 40) i;
SELECT codiff(4) AS reused_slots;
-- With a % key of another query.
SELECT count(*) AS filtered_order_differences
FROM tco q, tco r
WHERE q.id % 20 = 0 AND r.id % 30 = 0
  AND (SELECT array_agg(ROW(d, b) ORDER BY d, b) FROM (SELECT b.id AS b, b.sig <-> spotsig_content_query(r.sig, 'tco', 'sig') AS d
         FROM tco b WHERE b.sig % spotsig_content_query(q.sig, 'tco', 'sig')
         ORDER BY b.sig <-> spotsig_content_query(r.sig, 'tco', 'sig')) x)
      IS DISTINCT FROM
      (SELECT array_agg(ROW(1 - t.sim, t.id) ORDER BY 1 - t.sim, t.id) FROM (
         SELECT b.id, similarity(spotsig_remove(b.sig, s.template), spotsig_remove(r.sig, s.template)) AS sim,
                similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)) AS fsim
         FROM tco b, spotsigs_stats s WHERE s.relation = 'tco'::regclass) t WHERE t.fsim >= 0.4);
-- REINDEX (new storage, serials from 1 again) and a new analyze (another template version).
REINDEX INDEX tco_sig;
SELECT codiff(4) AS after_reindex, codiff(4) AS after_reindex_again;
UPDATE tco SET sig = corow(id + 1) WHERE id % 5 = 0;
SELECT spotsigs_analyze('tco', 'sig') > 0 AS has_template;
SELECT codiff(4) AS new_template, codiff(4) AS new_template_again, codiff5(4) AS limit5_new_template;
-- The count a few units per scan (spotsigs.content_count_step, a setting for tests: a row of a
-- segment's document list is one unit, each template signature another). At 100 units per scan,
-- one segment of 432 rows and a template of 80 signatures (512 units) take 6 scans, the document
-- list resumed across five, from the second (the first one's rechecks make the count due), the
-- DEBUG1 line saying how many; every order meanwhile equals the brute force (the rows keep the
-- bound and the recheck until the count is done). codiff(200) is 2 ordered scans.
REINDEX INDEX tco_sig;
SELECT template_size AS template_signatures FROM spotsigs_stats WHERE relation = 'tco'::regclass;
\c
SET enable_seqscan = off;
SET jit = off;
SET spotsigs.content_count_step = 100;
SET client_min_messages = debug1;
SELECT codiff(200) AS scans_1_2;
SELECT codiff(200) AS scans_3_4;
SELECT codiff(200) AS scans_5_6;
SELECT codiff(200) AS scans_7_8;
SET client_min_messages = warning;
SELECT codiff(4) AS after_count, codiff5(4) AS limit5_after_count;
-- The index changed mid-count: pending rows leave the segments it covers in place, so the count
-- goes on; VACUUM's rewrite of a segment that lost rows makes it start again over the new segments.
\c
SET enable_seqscan = off;
SET jit = off;
SET spotsigs.content_count_step = 100;
SET client_min_messages = debug1;
SELECT codiff(200) AS scans_1_2;
SET client_min_messages = warning;
INSERT INTO tco SELECT i, corow(i) FROM generate_series(2001, 2039) i;
SET client_min_messages = debug1;
SELECT codiff(200) AS with_pending_scans_3_4;
SET client_min_messages = warning;
DELETE FROM tco WHERE id % 7 = 0;
VACUUM tco;
SET client_min_messages = debug1;
SELECT codiff(200) AS after_vacuum_scans_5_6;
SELECT codiff(200) AS after_vacuum_scans_7_8;
SELECT codiff(200) AS after_vacuum_scans_9_10;
SET client_min_messages = warning;
SELECT codiff(4) AS after_restarted_count, codiff5(4) AS limit5_after_restarted_count;
RESET spotsigs.content_count_step;
RESET enable_seqscan;
DROP TABLE tco;
DROP FUNCTION codiff(int), codiff5(int), corow(int);
