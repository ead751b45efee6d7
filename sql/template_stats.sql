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

-- (a) No template: the trigger without a threshold compares plain similarities at 0.4.
CREATE TABLE tempty (LIKE tpages INCLUDING ALL);
CREATE TRIGGER tempty_flag BEFORE INSERT ON tempty FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
INSERT INTO tempty (id, ord, sig)
SELECT id, row_number() OVER (ORDER BY md5(id::text)), sig FROM tfix ORDER BY md5(id::text);
SELECT count(*) AS flagged FROM tempty WHERE dup IS NOT NULL;
WITH ref AS (
  SELECT n.id, (SELECT o.id FROM tempty o WHERE o.ord < n.ord AND similarity(n.sig, o.sig) >= 0.4
                ORDER BY similarity(n.sig, o.sig) DESC, o.id LIMIT 1) AS dup
  FROM tempty n)
SELECT count(*) AS differences FROM ref JOIN tempty t USING (id)
WHERE ref.dup IS DISTINCT FROM t.dup
   OR t.sim IS DISTINCT FROM (SELECT similarity(t.sig, o.sig) FROM tempty o WHERE o.id = t.dup);

-- (b) Half of the rows loaded and analyzed first, the other half through the trigger.
INSERT INTO tpages (id, ord, sig) SELECT id, 0, sig FROM tfix WHERE id % 2 = 0;
SELECT spotsigs_analyze('tpages', 'sig') > 0 AS has_template;
SELECT relation, sig_column, id_column, rows_analyzed, template_size > 0 AS has_template,
       template = spotsigs_template('tpages', 'id', 'sig') AS is_the_definition FROM spotsigs_stats;
CREATE TRIGGER tpages_flag BEFORE INSERT ON tpages FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
INSERT INTO tpages (id, ord, sig)
SELECT id, row_number() OVER (ORDER BY md5(id::text)), sig FROM tfix WHERE id % 2 = 1 ORDER BY md5(id::text);
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

-- The plain measure stays available by name: a threshold argument.
CREATE TABLE tplain (LIKE tpages INCLUDING ALL);
CREATE TRIGGER tplain_flag BEFORE INSERT ON tplain FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.4');
INSERT INTO tplain SELECT * FROM tempty ORDER BY ord;
SELECT count(*) AS differences FROM tplain a JOIN tempty b USING (id) WHERE a.dup IS DISTINCT FROM b.dup;

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

DROP TABLE tempty, tplain, tfix, tref;
DROP FUNCTION tw, tstory, tsite;
DROP ROLE tstats_reader;
