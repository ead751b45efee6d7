-- Template statistics the database keeps (spotsigs_analyze, spotsigs_stats) and the content
-- measure's default in the trigger: every flag equals a brute force over all pairs of
-- similarity(spotsig_remove(a, t), spotsig_remove(b, t)) >= 0.4, t the stored template.
\i sql/include/sqlerr.sql

-- 40 stories in 1-4 copies on 3 sites. A copy differs from the story in every k-th sentence
-- (k from 2 to 6 by story, so content similarities spread around 0.4); each page carries its
-- site's 25-sentence template, and the copies of a story are on different sites (so a pair's
-- plain similarity can be below 0.4 where its content similarity is above).
CREATE FUNCTION tw(a int, b int) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'w' || substr(md5(a::text || ':' || b::text), 1, 6) $$;
CREATE FUNCTION tstory(s int, variant int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || tw(s, i) || ' is a ' ||
       CASE WHEN (i + variant) % (2 + s % 5) = 0 THEN tw(s * 1000 + variant, i) ELSE tw(s + 100000, i) END ||
       ' that the ' || tw(s + 200000, i), ' . ' ORDER BY i) FROM generate_series(1, 30) i $$;
CREATE FUNCTION tsite(k int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || tw(-k, i) || ' is a ' || tw(-k - 10, i) || ' that the ' || tw(-k - 20, i), ' . ' ORDER BY i)
FROM generate_series(1, 25) i $$;
CREATE TABLE tfix AS
SELECT row_number() OVER (ORDER BY s, v)::int AS id, s AS story, spotsigs(tsite((s + v) % 3) || ' . ' || tstory(s, v)) AS sig
FROM generate_series(1, 40) s, generate_series(1, 1 + s % 4) v;

CREATE TABLE tfix_pk AS SELECT id, sig FROM tfix;

CREATE TABLE tpages (id int PRIMARY KEY, ord int, sig spotsig, dup int, sim float8);
CREATE INDEX ON tpages USING spotsigs (sig);

-- Analyzing: the owner only; the id column defaults to the primary key.
CREATE ROLE tstats_reader;
GRANT SELECT ON tpages TO tstats_reader;
SET ROLE tstats_reader;
SELECT sqlerr($$SELECT spotsigs_analyze('tpages', 'sig')$$);
SELECT sqlerr($$INSERT INTO spotsigs_template_store SELECT * FROM spotsigs_template_store$$);
SELECT sqlerr($$SELECT count(*) FROM spotsigs_template_store$$);
RESET ROLE;
SELECT sqlerr($$SELECT spotsigs_analyze('tpages', 'nosuch')$$);
SELECT sqlerr($$SELECT spotsigs_analyze('tpages', 'ord')$$);
SELECT sqlerr($$SELECT spotsigs_analyze('tfix', 'sig')$$);
SELECT sqlerr($$SELECT spotsigs_analyze(NULL, 'sig')$$);

-- An empty table: no template signature, zero rows.
SELECT spotsigs_analyze('tpages', 'sig');
SELECT relation, sig_column, id_column, rows_analyzed, template_size FROM spotsigs_stats;

-- (a) No template: the trigger without a threshold compares plain similarities at 0.4
-- (spotsigs.trigger_refresh off: the table never gains statistics; sql/trigger_refresh.sql).
CREATE TABLE tempty (LIKE tpages INCLUDING ALL);
CREATE TRIGGER tempty_flag BEFORE INSERT ON tempty FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
SET spotsigs.trigger_refresh = off;
INSERT INTO tempty (id, ord, sig)
SELECT id, row_number() OVER (ORDER BY md5(id::text)), sig FROM tfix ORDER BY md5(id::text);
RESET spotsigs.trigger_refresh;
SELECT count(*) AS flagged FROM tempty WHERE dup IS NOT NULL;
WITH ref AS (
  SELECT n.id, (SELECT o.id FROM tempty o WHERE o.ord < n.ord AND similarity(n.sig, o.sig) >= 0.4
                ORDER BY similarity(n.sig, o.sig) DESC, o.id LIMIT 1) AS dup
  FROM tempty n)
SELECT count(*) AS differences FROM ref JOIN tempty t USING (id)
WHERE ref.dup IS DISTINCT FROM t.dup
   OR t.sim IS DISTINCT FROM (SELECT similarity(t.sig, o.sig) FROM tempty o WHERE o.id = t.dup);

-- (b) Half of the rows loaded and analyzed first, the other half through the trigger with the
-- first half's template throughout (refresh off: the second half would cross a refresh at a
-- quarter's growth; sql/trigger_refresh.sql tests it).
INSERT INTO tpages (id, ord, sig) SELECT id, 0, sig FROM tfix WHERE id % 2 = 0;
SELECT spotsigs_analyze('tpages', 'sig') > 0 AS has_template;
SELECT relation, sig_column, id_column, rows_analyzed, template_size > 0 AS has_template,
       template = spotsigs_template('tpages', 'id', 'sig') AS is_the_definition FROM spotsigs_stats;
CREATE TRIGGER tpages_flag BEFORE INSERT ON tpages FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
SET spotsigs.trigger_refresh = off;
INSERT INTO tpages (id, ord, sig)
SELECT id, row_number() OVER (ORDER BY md5(id::text)), sig FROM tfix WHERE id % 2 = 1 ORDER BY md5(id::text);
RESET spotsigs.trigger_refresh;
CREATE TABLE tref AS
WITH t AS (SELECT template AS t FROM spotsigs_stats WHERE relation = 'tpages'::regclass)
SELECT n.id,
       (SELECT o.id FROM tpages o WHERE o.id <> n.id AND o.ord < n.ord
          AND similarity(spotsig_remove(n.sig, t.t), spotsig_remove(o.sig, t.t)) >= 0.4
        ORDER BY similarity(spotsig_remove(n.sig, t.t), spotsig_remove(o.sig, t.t)) DESC, o.id LIMIT 1) AS dup,
       t.t
FROM tpages n, t WHERE n.ord > 0;
SELECT count(*) AS flagged, count(*) FILTER (WHERE p.dup IS NOT NULL AND
         (SELECT similarity(p.sig, o.sig) FROM tpages o WHERE o.id = p.dup) < 0.4) AS below_plain_04
FROM tpages p WHERE p.dup IS NOT NULL;
SELECT count(*) AS differences FROM tref r JOIN tpages p USING (id)
WHERE r.dup IS DISTINCT FROM p.dup
   OR p.sim IS DISTINCT FROM (SELECT similarity(spotsig_remove(p.sig, r.t), spotsig_remove(o.sig, r.t))
                             FROM tpages o WHERE o.id = p.dup);

-- '' and 'content' as the threshold argument mean the same; mode first flags rows whose
-- content similarity to an earlier row reaches 0.4 (each flag checked), the same rows as best.
CREATE TABLE tfirst (LIKE tpages INCLUDING ALL);
INSERT INTO tfirst SELECT * FROM tpages WHERE ord = 0;
SELECT spotsigs_analyze('tfirst', 'sig') > 0 AS has_template;
SELECT (SELECT template FROM spotsigs_stats WHERE relation = 'tfirst'::regclass) = (SELECT t FROM tref LIMIT 1)
       AS same_template_as_tpages;
CREATE TRIGGER tfirst_flag BEFORE INSERT ON tfirst FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', 'content', 'first', 'locked');
INSERT INTO tfirst (id, ord, sig) SELECT id, ord, sig FROM tpages WHERE ord > 0 ORDER BY ord;
SELECT count(*) FILTER (WHERE (f.dup IS NULL) <> (p.dup IS NULL)) AS flagged_differently,
       count(*) FILTER (WHERE f.dup IS NOT NULL AND (o.ord >= f.ord OR f.sim < 0.4 OR f.sim IS DISTINCT FROM
         similarity(spotsig_remove(f.sig, r.t), spotsig_remove(o.sig, r.t)))) AS bad_flags
FROM tfirst f JOIN tpages p USING (id) LEFT JOIN tfirst o ON o.id = f.dup LEFT JOIN tref r ON r.id = f.id
WHERE f.ord > 0;
DROP TRIGGER tfirst_flag ON tfirst;
DELETE FROM tfirst WHERE ord > 0;
CREATE TRIGGER tfirst_flag BEFORE INSERT ON tfirst FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '');
SET spotsigs.trigger_refresh = off;
INSERT INTO tfirst (id, ord, sig) SELECT id, ord, sig FROM tpages WHERE ord > 0 ORDER BY ord;
RESET spotsigs.trigger_refresh;
SELECT count(*) AS differences_from_no_argument FROM tfirst f JOIN tpages p USING (id)
WHERE f.dup IS DISTINCT FROM p.dup OR f.sim IS DISTINCT FROM p.sim;
DROP TABLE tfirst;

-- The plain measure stays available by name: a threshold argument.
CREATE TABLE tplain (LIKE tpages INCLUDING ALL);
CREATE TRIGGER tplain_flag BEFORE INSERT ON tplain FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.4');
INSERT INTO tplain SELECT * FROM tempty ORDER BY ord;
SELECT count(*) AS differences FROM tplain a JOIN tempty b USING (id) WHERE a.dup IS DISTINCT FROM b.dup;

-- spotsigs_flag_batch without a threshold flags as the trigger would (content measure, the
-- stored template of the table): the first half analyzed, the second half (new ids above 1000)
-- flagged in one batch, against the brute force over every row of smaller id.
CREATE TABLE tbatch (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
INSERT INTO tbatch (id, sig) SELECT id, sig FROM tfix WHERE id % 2 = 0;
SELECT spotsigs_analyze('tbatch', 'sig') > 0 AS has_template;
INSERT INTO tbatch (id, sig) SELECT 1000 + id, sig FROM tfix WHERE id % 2 = 1;
SELECT spotsigs_flag_batch('tbatch', 'id', 'sig', 'dup', 'sim', NULL, 1000) AS flagged;
WITH t AS (SELECT template AS t FROM spotsigs_stats WHERE relation = 'tbatch'::regclass),
ref AS (
  SELECT n.id, b.id AS dup, b.s FROM tbatch n CROSS JOIN t LEFT JOIN LATERAL (
    SELECT o.id, similarity(spotsig_remove(n.sig, t.t), spotsig_remove(o.sig, t.t)) AS s FROM tbatch o
    WHERE o.id < n.id AND similarity(spotsig_remove(n.sig, t.t), spotsig_remove(o.sig, t.t)) >= 0.4
    ORDER BY 2 DESC, o.id LIMIT 1) b ON true
  WHERE n.id >= 1000)
SELECT count(*) AS differences FROM ref JOIN tbatch p USING (id)
WHERE ref.dup IS DISTINCT FROM p.dup OR ref.s IS DISTINCT FROM p.sim;

-- The joins without a threshold use the stored template (here the first half's, not the one
-- the whole table would give): spotsigs_join equals the brute force over all pairs.
CREATE TABLE tjoin_ref AS
WITH t AS (SELECT template AS t FROM spotsigs_stats WHERE relation = 'tbatch'::regclass)
SELECT a.id::bigint AS id1, b.id::bigint AS id2, similarity(spotsig_remove(a.sig, t.t), spotsig_remove(b.sig, t.t)) AS s
FROM tbatch a JOIN tbatch b ON a.id < b.id, t
WHERE similarity(spotsig_remove(a.sig, t.t), spotsig_remove(b.sig, t.t)) >= 0.4;
SELECT spotsigs_template('tbatch', 'id', 'sig') = (SELECT template FROM spotsigs_stats
                                                  WHERE relation = 'tbatch'::regclass) AS stored_is_recomputed;
SELECT (SELECT count(*) FROM tjoin_ref) AS pairs,
       (SELECT count(*) FROM (SELECT id1, id2, similarity FROM spotsigs_join('tbatch', 'id', 'sig')
                              EXCEPT SELECT * FROM tjoin_ref) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM tjoin_ref EXCEPT
                              SELECT id1, id2, similarity FROM spotsigs_join('tbatch', 'id', 'sig')) x) AS missing;

-- spotsigs_join_rs without a threshold: the content measure with the stored template of s;
-- with measure 'jaccard' (by name), the plain one.
CREATE TABLE tnew AS SELECT id, sig FROM tfix WHERE id % 2 = 1;
CREATE TABLE trs_ref AS
WITH t AS (SELECT template AS t FROM spotsigs_stats WHERE relation = 'tbatch'::regclass)
SELECT r.id::bigint AS r_id, s.id::bigint AS s_id, similarity(spotsig_remove(r.sig, t.t), spotsig_remove(s.sig, t.t)) AS s
FROM tnew r, tbatch s, t
WHERE similarity(spotsig_remove(r.sig, t.t), spotsig_remove(s.sig, t.t)) >= 0.4;
SELECT (SELECT count(*) FROM trs_ref) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM spotsigs_join_rs('tnew', 'id', 'sig', 'tbatch', 'id', 'sig')
                              EXCEPT SELECT * FROM trs_ref) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM trs_ref EXCEPT
                              SELECT * FROM spotsigs_join_rs('tnew', 'id', 'sig', 'tbatch', 'id', 'sig')) x) AS missing;
SELECT (SELECT count(*) FROM spotsigs_join_rs('tnew', 'id', 'sig', 'tbatch', 'id', 'sig', 0.4, measure => 'jaccard')) AS plain,
       (SELECT count(*) FROM tnew r, tbatch s WHERE similarity(r.sig, s.sig) >= 0.4) AS plain_brute_force;
-- Without stored statistics on either side, the template is computed from the rows of s.
SELECT (SELECT count(*) FROM spotsigs_join_rs('tnew', 'id', 'sig', 'tfix_pk', 'id', 'sig')) =
       (WITH t AS (SELECT spotsigs_template('tfix_pk', 'id', 'sig') AS t)
        SELECT count(*) FROM tnew r, tfix_pk s, t
        WHERE similarity(spotsig_remove(r.sig, t.t), spotsig_remove(s.sig, t.t)) >= 0.4) AS computed_from_s;
-- % with a content query: the index serves it (a search of the content bound, then every row
-- rechecked by the operator), and every query's rows equal the brute force over the stored template.
CREATE INDEX tbatch_sig ON tbatch USING spotsigs (sig);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM tbatch WHERE sig % spotsig_content_query('{1}', 'tbatch', 'sig');
SELECT count(*) AS queries,
       count(*) FILTER (WHERE got IS DISTINCT FROM want) AS differences,
       sum(cardinality(got)) AS rows_returned
FROM (SELECT q.id,
             (SELECT array_agg(b.id ORDER BY b.id) FROM tbatch b
               WHERE b.sig % spotsig_content_query(q.sig, 'tbatch', 'sig')) AS got,
             (SELECT array_agg(b.id ORDER BY b.id) FROM tbatch b, spotsigs_stats s
               WHERE s.relation = 'tbatch'::regclass
                 AND similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)) >= 0.4) AS want
      FROM tbatch q) x;
SET enable_indexscan = off;
SET enable_bitmapscan = on;
SELECT count(*) AS bitmap_differences
FROM (SELECT q.id,
             (SELECT array_agg(b.id ORDER BY b.id) FROM tbatch b
               WHERE b.sig % spotsig_content_query(q.sig, 'tbatch', 'sig')) AS got,
             (SELECT array_agg(b.id ORDER BY b.id) FROM tbatch b, spotsigs_stats s
               WHERE s.relation = 'tbatch'::regclass
                 AND similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)) >= 0.4) AS want
      FROM tbatch q) x WHERE got IS DISTINCT FROM want;
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;
-- Without statistics the query's template is empty: the plain similarity at 0.4.
SELECT (SELECT count(*) FROM tnew a, tnew b WHERE a.sig % spotsig_content_query(b.sig, 'tnew', 'sig')) =
       (SELECT count(*) FROM tnew a, tnew b WHERE similarity(a.sig, b.sig) >= 0.4) AS plain_without_statistics;
-- A hand-made query value whose content still holds template signatures means the same.
SELECT count(*) AS hand_made_differences FROM tbatch a, tbatch b, spotsigs_stats s
WHERE s.relation = 'tbatch'::regclass
  AND (a.sig % ROW(b.sig, 0.4, s.template, NULL, NULL, NULL)::spotsigs_content_query) IS DISTINCT FROM
      (a.sig % spotsig_content_query(b.sig, 'tbatch', 'sig'));

-- The constructor reads the template through spotsigs_stats with the caller's privileges, also
-- within one transaction whose statements see the same snapshot: a role that may not read tbatch
-- gets the empty template (the plain measure) until it is granted SELECT.
BEGIN;
SELECT (spotsig_content_query('{1}', 'tbatch', 'sig')).template_version IS NOT NULL AS owner_sees_template;
SET LOCAL ROLE tstats_reader;
SELECT length((spotsig_content_query('{1}', 'tbatch', 'sig')).template) AS reader_template_length;
RESET ROLE;
GRANT SELECT ON tbatch TO tstats_reader;
SET LOCAL ROLE tstats_reader;
SELECT (spotsig_content_query('{1}', 'tbatch', 'sig')).template_version IS NOT NULL AS reader_with_select_sees_template;
RESET ROLE;
ROLLBACK;

-- ORDER BY <-> with a content query: the index's ordered scan (lower bounds, rechecked by the
-- executor). For every query, the 5 nearest through the index have the distances of a full sort
-- of the brute force, and the same rows above the 5th distance (ties at it may differ); the whole
-- order (no LIMIT) holds every row at its brute-force distance.
SELECT spotsig_content_distance('{1,2,3}', ROW('{1,2,5}', 0.4, '{3}', NULL, NULL, NULL)::spotsigs_content_query) AS distance_half,
       '{1,2,3}'::spotsig <-> ROW('{1,2,5}', 0.4, '{5}', NULL, NULL, NULL)::spotsigs_content_query AS distance_one,
       '{1,2,3}'::spotsig <-> ROW('{1}', 0.4, NULL, NULL, NULL, NULL)::spotsigs_content_query AS distance_null;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM tbatch ORDER BY sig <-> spotsig_content_query('{1}', 'tbatch', 'sig') LIMIT 5;
CREATE TEMP TABLE tdist AS
SELECT q.id AS q, b.id AS b, similarity(spotsig_remove(b.sig, s.template), spotsig_remove(q.sig, s.template)) AS sim
FROM tbatch q, tbatch b, spotsigs_stats s WHERE s.relation = 'tbatch'::regclass;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE got_d IS DISTINCT FROM want_d) AS distance_differences,
       count(*) FILTER (WHERE got_above IS DISTINCT FROM want_above) AS row_differences,
       sum((SELECT count(*) FROM unnest(got_d) d WHERE d < 1)) AS distances_below_1,
       count(*) FILTER (WHERE got_d[5] = 1) AS queries_tied_at_1
FROM (SELECT q.id,
             (SELECT array_agg(d ORDER BY d) FROM (SELECT b.sig <-> spotsig_content_query(q.sig, 'tbatch', 'sig') AS d
                FROM tbatch b ORDER BY b.sig <-> spotsig_content_query(q.sig, 'tbatch', 'sig') LIMIT 5) x) AS got_d,
             (SELECT array_agg(d ORDER BY d) FROM (SELECT 1 - t.sim AS d FROM tdist t WHERE t.q = q.id
                ORDER BY 1 - t.sim LIMIT 5) x) AS want_d,
             (SELECT array_agg(b ORDER BY b) FROM (SELECT b.id AS b, b.sig <-> spotsig_content_query(q.sig, 'tbatch', 'sig') AS d
                FROM tbatch b ORDER BY b.sig <-> spotsig_content_query(q.sig, 'tbatch', 'sig') LIMIT 5) x
               WHERE d < (SELECT max(1 - t.sim) FROM (SELECT sim FROM tdist t WHERE t.q = q.id ORDER BY 1 - sim LIMIT 5) t)) AS got_above,
             (SELECT array_agg(b ORDER BY b) FROM (SELECT t.b, 1 - t.sim AS d FROM tdist t WHERE t.q = q.id ORDER BY 1 - t.sim LIMIT 5) x
               WHERE d < (SELECT max(1 - t.sim) FROM (SELECT sim FROM tdist t WHERE t.q = q.id ORDER BY 1 - sim LIMIT 5) t)) AS want_above
      FROM tbatch q) x;
SELECT count(*) AS full_order_differences
FROM tbatch q
WHERE (SELECT array_agg(ROW(d, b) ORDER BY d, b) FROM (SELECT b.id AS b, b.sig <-> spotsig_content_query(q.sig, 'tbatch', 'sig') AS d
         FROM tbatch b ORDER BY b.sig <-> spotsig_content_query(q.sig, 'tbatch', 'sig')) x)
      IS DISTINCT FROM
      (SELECT array_agg(ROW(1 - t.sim, t.b) ORDER BY 1 - t.sim, t.b) FROM tdist t WHERE t.q = q.id);
-- With a % key of another query, rows sharing nothing with the ORDER BY query come last, at 1.
SELECT count(*) AS filtered_order_differences
FROM tbatch q, tbatch r
WHERE q.id % 7 = 0 AND r.id % 5 = 0
  AND (SELECT array_agg(ROW(d, b) ORDER BY d, b) FROM (SELECT b.id AS b, b.sig <-> spotsig_content_query(r.sig, 'tbatch', 'sig') AS d
         FROM tbatch b WHERE b.sig % spotsig_content_query(q.sig, 'tbatch', 'sig')
         ORDER BY b.sig <-> spotsig_content_query(r.sig, 'tbatch', 'sig')) x)
      IS DISTINCT FROM
      (SELECT array_agg(ROW(1 - t.sim, t.b) ORDER BY 1 - t.sim, t.b) FROM tdist t, tdist f
        WHERE t.q = r.id AND f.q = q.id AND f.b = t.b AND f.sim >= 0.4);
RESET enable_seqscan;
DROP TABLE tdist;

-- The content bound at its boundary: hand-made queries (content, threshold, template) against
-- rows whose template parts are small and huge, with overlaps that put the bound and the content
-- similarity exactly at the threshold, just above and just below it; % and <-> through the
-- index, plain and bitmap, equal the brute force (every query's rows, every row's distance).
CREATE TABLE tbound (id int PRIMARY KEY, sig spotsig);
CREATE INDEX tbound_sig ON tbound USING spotsigs (sig);
CREATE TEMP TABLE tbq (qid int, q spotsigs_content_query);
INSERT INTO tbq VALUES
  (1, ROW('{1,2,3,4,5}', 0.4, '{a0,a1,a2,a3,a4,a5,a6,a7,a8,a9}', NULL, NULL, NULL)),
  (2, ROW('{1,2,3,4,5,6,7,8,9,10}', 0.4, '{a0,a1,a2,a3,a4,a5,a6,a7,a8,a9}', NULL, NULL, NULL)),
  (3, ROW('{1:2,2,3,4:3,5}', 0.5, '{a0,a1,a2,a3,a4,a5,a6,a7,a8,a9}', NULL, NULL, NULL)),
  (4, ROW('{1,2,3}', 1.0, '{a0,a1,a2,a3,a4,a5,a6,a7,a8,a9}', NULL, NULL, NULL)),
  (5, ROW('{1,2,3,4,5,6,7}', 0.3, '{}', NULL, NULL, NULL)),
  (6, ROW('{1,2,3,4,5,a0}', 0.4, '{a0,a1,a2,a3,a4,a5,a6,a7,a8,a9}', NULL, NULL, NULL)),
  (7, ROW('{a0,a1}', 0.4, '{a0,a1,a2,a3,a4,a5,a6,a7,a8,a9}', NULL, NULL, NULL));
-- Rows: a subset of 1..10 (the content) plus template signatures a0..a9 at frequencies up to 400
-- (rows far longer than any plain match), plus c1..c6 (content no query holds).
INSERT INTO tbound
SELECT row_number() OVER ()::int, ('{' || concat_ws(',', nullif(c, ''), nullif(tp, ''), nullif(x, '')) || '}')::spotsig
FROM (SELECT string_agg(h::text, ',' ORDER BY h) FILTER (WHERE (m >> (h - 1)) & 1 = 1) AS c
      FROM generate_series(0, 1023, 7) m, generate_series(1, 10) h GROUP BY m) cs,
     (VALUES (''), ('a0'), ('a1:3,a2'), ('a0:400,a5:400,a9:200')) tp(tp),
     (VALUES (''), ('c1'), ('c1,c2,c3'), ('c1:2,c2,c3,c4,c5,c6')) xs(x)
WHERE concat_ws(',', nullif(c, ''), nullif(tp, ''), nullif(x, '')) <> '';
SELECT count(*) AS rows FROM tbound;
CREATE TEMP TABLE tbref AS
SELECT q.qid, b.id, (q.q).threshold AS tau,
       similarity(spotsig_remove(b.sig, (q.q).template), spotsig_remove((q.q).content, (q.q).template)) AS sim
FROM tbq q, tbound b;
SELECT qid, count(*) FILTER (WHERE sim >= tau) AS matches,
       count(*) FILTER (WHERE sim = tau) AS at_threshold FROM tbref GROUP BY qid ORDER BY qid;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT q.qid,
       (SELECT array_agg(b.id ORDER BY b.id) FROM tbound b WHERE b.sig % q.q)
         IS NOT DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM tbref r WHERE r.qid = q.qid AND sim >= tau) AS index_equal,
       (SELECT array_agg(ROW(d, b) ORDER BY d, b) FROM (SELECT b.id AS b, b.sig <-> q.q AS d FROM tbound b ORDER BY b.sig <-> q.q) x)
         = (SELECT array_agg(ROW(1 - sim, id) ORDER BY 1 - sim, id) FROM tbref r WHERE r.qid = q.qid) AS order_equal,
       (SELECT array_agg(d) FROM (SELECT b.sig <-> q.q AS d FROM tbound b ORDER BY b.sig <-> q.q LIMIT 3) x)
         = (SELECT array_agg(d) FROM (SELECT 1 - sim AS d FROM tbref r WHERE r.qid = q.qid ORDER BY 1 - sim LIMIT 3) x) AS top3_equal
FROM tbq q ORDER BY q.qid;
SET enable_indexscan = off;
SET enable_bitmapscan = on;
SELECT q.qid,
       (SELECT array_agg(b.id ORDER BY b.id) FROM tbound b WHERE b.sig % q.q)
         IS NOT DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM tbref r WHERE r.qid = q.qid AND sim >= tau) AS bitmap_equal
FROM tbq q ORDER BY q.qid;
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;
DROP TABLE tbound, tbq, tbref;

DROP TABLE tbatch, tjoin_ref, tnew, trs_ref;

-- A new analyze is seen by the next statement.
DELETE FROM tpages WHERE ord > 0;
SELECT spotsigs_analyze('tpages', 'sig', 'id') > 0 AS has_template;
SELECT rows_analyzed FROM spotsigs_stats;

-- Readers see the statistics of the tables they may read, and only those.
SET ROLE tstats_reader;
SELECT relation, rows_analyzed FROM spotsigs_stats;
RESET ROLE;
REVOKE SELECT ON tpages FROM tstats_reader;
SET ROLE tstats_reader;
SELECT count(*) FROM spotsigs_stats;
RESET ROLE;
ALTER TABLE tpages ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON tpages TO tstats_reader;
SET ROLE tstats_reader;
SELECT count(*) AS with_row_security FROM spotsigs_stats;
RESET ROLE;

-- A dropped table's statistics go with the next analyze; they are never shown.
DROP TABLE tpages;
SELECT count(*) FROM spotsigs_stats;
SELECT spotsigs_analyze('tempty', 'sig');
SELECT relation FROM spotsigs_stats;

-- The planner's estimate prices a content search (strategies 4 and 5 with a template): on a table
-- of 2,500 rows it still takes the index for %, the bare %, and the nearest 5 by content; on 40
-- rows a sequential scan.
CREATE TABLE tcbig (id int PRIMARY KEY, sig spotsig);
INSERT INTO tcbig SELECT row_number() OVER (ORDER BY s, v)::int, spotsigs(tsite(s % 7) || ' . ' || tstory(s, v))
FROM generate_series(1, 1000) s, generate_series(1, 1 + s % 4) v;
CREATE INDEX tcbig_sig ON tcbig USING spotsigs (sig);
CREATE TABLE tcsmall AS SELECT * FROM tcbig WHERE id <= 40;
ALTER TABLE tcsmall ADD PRIMARY KEY (id);
CREATE INDEX tcsmall_sig ON tcsmall USING spotsigs (sig);
VACUUM ANALYZE tcbig, tcsmall;
SELECT spotsigs_analyze('tcbig', 'sig') > 0 AS big_analyzed, spotsigs_analyze('tcsmall', 'sig') > 0 AS small_analyzed;
EXPLAIN (COSTS OFF) SELECT id FROM tcbig WHERE sig % spotsig_content_query((SELECT sig FROM tcbig WHERE id = 7), 'tcbig', 'sig');
EXPLAIN (COSTS OFF) SELECT id FROM tcbig WHERE sig % (SELECT sig FROM tcbig WHERE id = 7);
EXPLAIN (COSTS OFF) SELECT id FROM tcbig ORDER BY sig <-> (SELECT sig FROM tcbig WHERE id = 7) LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM tcsmall WHERE sig % (SELECT sig FROM tcsmall WHERE id = 7);
EXPLAIN (COSTS OFF) SELECT id FROM tcsmall ORDER BY sig <-> (SELECT sig FROM tcsmall WHERE id = 7) LIMIT 5;

-- A content query names the statistics it was made with (table, column, analyzed_at): a value
-- kept across a new analyze of the column no longer resolves (55000), nor does a value naming
-- statistics its user may not see (42501); a value naming them in part is refused (22023).
SELECT spotsig_content_query(sig, 'tcbig', 'sig')::text AS kept FROM tcbig WHERE id = 7 \gset
SELECT (q).template_relation, (q).template_column, (q).template IS NULL AS carries_none,
       (q).template_version = (SELECT analyzed_at FROM spotsigs_stats WHERE relation = 'tcbig'::regclass) AS names_stored
FROM (SELECT :'kept'::spotsigs_content_query AS q) x;
SELECT count(*) > 0 AS kept_value_resolves FROM tcbig WHERE sig % :'kept'::spotsigs_content_query;
GRANT SELECT ON tcbig TO tstats_reader;
ALTER TABLE tcbig ENABLE ROW LEVEL SECURITY;
CREATE POLICY tcbig_all ON tcbig FOR SELECT USING (true);
SET ROLE tstats_reader;
SELECT sqlerr(format('SELECT count(*) FROM tcbig WHERE sig %% %L::spotsigs_content_query', :'kept'));
RESET ROLE;
ALTER TABLE tcbig DISABLE ROW LEVEL SECURITY;
DROP POLICY tcbig_all ON tcbig;
REVOKE SELECT ON tcbig FROM tstats_reader;
SELECT spotsigs_analyze('tcbig', 'sig') > 0 AS analyzed_again;
SELECT sqlerr(format('SELECT count(*) FROM tcbig WHERE sig %% %L::spotsigs_content_query', :'kept'));
SELECT sqlerr($$SELECT '{1}'::spotsig % ROW('{1}', 0.4, NULL, 'tcbig', 'sig', NULL)::spotsigs_content_query$$);
SELECT sqlerr($$SELECT '{1}'::spotsig % ROW('{1}', 0.4, '{}', 'tcbig', 'sig', now())::spotsigs_content_query$$);
DROP TABLE tcbig, tcsmall;

DROP TABLE tempty, tplain, tfix, tfix_pk, tref;
DROP FUNCTION tw, tstory, tsite;
DROP ROLE tstats_reader;
