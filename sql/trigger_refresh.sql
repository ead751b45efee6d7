-- The content trigger's statistics refresh (spotsigs.trigger_refresh): a trigger without a
-- threshold, on a table that starts empty, analyzes the table and re-flags every row when the
-- rows it sees reach the stored statistics' rows plus a quarter (16 the first time). After a
-- load in id order every flag equals the brute force with the stored template, and
-- spotsigs_flag_batch's.
\i sql/include/sqlerr.sql

-- 40 stories in 1-4 copies on 3 sites (a site template of 25 sentences on each page; copies of a
-- story differ in every k-th sentence, k from 2 to 6): 100 rows.
CREATE FUNCTION rw(a int, b int) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'w' || substr(md5(a::text || ':' || b::text), 1, 6) $$;
CREATE FUNCTION rstory(s int, variant int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || rw(s, i) || ' is a ' ||
       CASE WHEN (i + variant) % (2 + s % 5) = 0 THEN rw(s * 1000 + variant, i) ELSE rw(s + 100000, i) END ||
       ' that the ' || rw(s + 200000, i), ' . ' ORDER BY i) FROM generate_series(1, 30) i $$;
CREATE FUNCTION rsite(k int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || rw(-k, i) || ' is a ' || rw(-k - 10, i) || ' that the ' || rw(-k - 20, i), ' . ' ORDER BY i)
FROM generate_series(1, 25) i $$;
CREATE TABLE rsrc AS
SELECT row_number() OVER (ORDER BY md5(s::text || ':' || v::text))::int AS id,
       spotsigs(rsite((s + v) % 3) || ' . ' || rstory(s, v)) AS sig
FROM generate_series(1, 40) s, generate_series(1, 1 + s % 4) v;
SELECT count(*) AS rows FROM rsrc;

-- The brute force: each row's best match among the rows of smaller id by content similarity
-- (template t) >= 0.4, ties to the smallest id.
CREATE FUNCTION rdiff(rel regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format($q$
    WITH t AS (SELECT template AS t FROM spotsigs_stats WHERE relation = %L::regclass),
    ref AS (SELECT n.id, b.id AS dup, b.s FROM %s n CROSS JOIN t LEFT JOIN LATERAL (
      SELECT o.id, similarity(spotsig_remove(n.sig, t.t), spotsig_remove(o.sig, t.t)) AS s FROM %s o
      WHERE o.id < n.id AND similarity(spotsig_remove(n.sig, t.t), spotsig_remove(o.sig, t.t)) >= 0.4
      ORDER BY 2 DESC, o.id LIMIT 1) b ON true)
    SELECT count(*) FROM ref JOIN %s p USING (id) WHERE ref.dup IS DISTINCT FROM p.dup OR ref.s IS DISTINCT FROM p.sim
  $q$, rel, rel, rel, rel) INTO n;
  RETURN n;
END $$;

-- The trigger fires on UPDATE too: the re-flag's own UPDATEs do not fire it again.
CREATE TABLE rpages (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON rpages USING spotsigs (sig);
CREATE TRIGGER rflag BEFORE INSERT OR UPDATE ON rpages FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
SHOW spotsigs.trigger_refresh;

-- Refresh points (targets 16, 20, 25, 31, 38, 47, 58, 72, 90, 112): 16 rows do not refresh; the
-- 17th row finds 16 and refreshes, the 21st finds 20, the 32nd to 91st (within one statement) 31
-- to 90; 100 rows stay with the statistics of 90.
INSERT INTO rpages (id, sig) SELECT id, sig FROM rsrc WHERE id <= 16 ORDER BY id;
SELECT count(*) AS statistics FROM spotsigs_stats WHERE relation = 'rpages'::regclass;
INSERT INTO rpages (id, sig) SELECT id, sig FROM rsrc WHERE id = 17;
SELECT rows_analyzed FROM spotsigs_stats WHERE relation = 'rpages'::regclass;
INSERT INTO rpages (id, sig) SELECT id, sig FROM rsrc WHERE id BETWEEN 18 AND 20 ORDER BY id;
SELECT rows_analyzed FROM spotsigs_stats WHERE relation = 'rpages'::regclass;
INSERT INTO rpages (id, sig) SELECT id, sig FROM rsrc WHERE id = 21;
SELECT rows_analyzed FROM spotsigs_stats WHERE relation = 'rpages'::regclass;
INSERT INTO rpages (id, sig) SELECT id, sig FROM rsrc WHERE id > 21 ORDER BY id;
SELECT rows_analyzed, template = spotsigs_template('rpages', 'id', 'sig') AS is_a_template_of_the_table,
       template_size > 0 AS has_template
FROM spotsigs_stats WHERE relation = 'rpages'::regclass;
-- The stored template is that of the first 90 rows.
CREATE TABLE rfirst90 AS SELECT id, sig FROM rsrc WHERE id <= 90;
ALTER TABLE rfirst90 ADD PRIMARY KEY (id);
SELECT spotsigs_template('rfirst90', 'id', 'sig') = (SELECT template FROM spotsigs_stats
                                                    WHERE relation = 'rpages'::regclass) AS template_of_90_rows;

-- Every flag equals the brute force with the stored template, and what spotsigs_flag_batch
-- gives (its UPDATEs would fire the trigger: disabled while it runs).
SELECT count(*) AS flagged, rdiff('rpages') AS differences_from_brute_force FROM rpages WHERE dup IS NOT NULL;
CREATE TABLE rbefore AS SELECT id, dup, sim FROM rpages;
ALTER TABLE rpages DISABLE TRIGGER rflag;
SELECT spotsigs_flag_batch('rpages', 'id', 'sig', 'dup', 'sim', NULL, 0) AS flag_batch_flagged;
ALTER TABLE rpages ENABLE TRIGGER rflag;
SELECT count(*) AS differences_from_flag_batch FROM rbefore b JOIN rpages p USING (id)
WHERE b.dup IS DISTINCT FROM p.dup OR b.sim IS DISTINCT FROM p.sim;

-- Setting off: today's behaviour (no statistics ever stored: plain similarities at 0.4).
CREATE TABLE roff (LIKE rpages INCLUDING ALL);
CREATE TRIGGER roff_flag BEFORE INSERT ON roff FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
SET spotsigs.trigger_refresh = off;
INSERT INTO roff (id, sig) SELECT id, sig FROM rsrc ORDER BY id;
RESET spotsigs.trigger_refresh;
SELECT count(*) AS statistics FROM spotsigs_stats WHERE relation = 'roff'::regclass;
SELECT count(*) AS differences_from_plain_04 FROM roff n
WHERE n.dup IS DISTINCT FROM (SELECT o.id FROM roff o WHERE o.id < n.id AND similarity(n.sig, o.sig) >= 0.4
                              ORDER BY similarity(n.sig, o.sig) DESC, o.id LIMIT 1);
-- spotsigs.trigger_refresh_growth = 2: targets 16, 32, 64; 40 rows keep the statistics of 32.
SET spotsigs.trigger_refresh_growth = 2;
CREATE TABLE rgrow (LIKE rpages INCLUDING ALL);
CREATE TRIGGER rgrow_flag BEFORE INSERT ON rgrow FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
INSERT INTO rgrow (id, sig) SELECT id, sig FROM rsrc WHERE id <= 40 ORDER BY id;
SELECT rows_analyzed, rdiff('rgrow') AS differences_from_brute_force FROM spotsigs_stats
WHERE relation = 'rgrow'::regclass;
RESET spotsigs.trigger_refresh_growth;
SHOW spotsigs.trigger_refresh_growth;
-- The template changing between two refreshes: rows 1-32 are stories on site 0 (1-3 copies
-- each), rows 33-48 pages of a new site 9, every other one a copy of a site-0 story. The refresh
-- at 38 rows saw 6 of them, the one at 47 rows (the 48th insert) 15: its template differs, the
-- re-flag changes some rows' flags and leaves other matches as they were, and every flag equals
-- the brute force with the template of each refresh.
CREATE TABLE rsite_src AS
SELECT row_number() OVER (ORDER BY s, v)::int AS id, spotsigs(rsite(0) || ' . ' || rstory(s, v)) AS sig
FROM generate_series(1, 16) s, generate_series(1, 1 + s % 3) v;
INSERT INTO rsite_src SELECT 32 + k, spotsigs(rsite(9) || ' . ' ||
       CASE WHEN k % 2 = 1 THEN rstory(k, 9) ELSE rstory(100 + k, 1) END) FROM generate_series(1, 16) k;
CREATE TABLE rsitep (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON rsitep USING spotsigs (sig);
CREATE TRIGGER rsitep_flag BEFORE INSERT ON rsitep FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
INSERT INTO rsitep (id, sig) SELECT id, sig FROM rsite_src WHERE id <= 47 ORDER BY id;
SELECT rows_analyzed, rdiff('rsitep') AS differences_from_brute_force FROM spotsigs_stats
WHERE relation = 'rsitep'::regclass;
CREATE TABLE rsite_before AS SELECT id, dup, sim FROM rsitep;
CREATE TABLE rsite_tmpl AS SELECT template FROM spotsigs_stats WHERE relation = 'rsitep'::regclass;
INSERT INTO rsitep (id, sig) SELECT id, sig FROM rsite_src WHERE id = 48;
SELECT rows_analyzed, template IS DISTINCT FROM (SELECT template FROM rsite_tmpl) AS template_changed,
       rdiff('rsitep') AS differences_from_brute_force
FROM spotsigs_stats WHERE relation = 'rsitep'::regclass;
SELECT count(*) FILTER (WHERE (b.dup, b.sim) IS DISTINCT FROM (p.dup, p.sim)) AS reflagged,
       count(*) FILTER (WHERE (b.dup, b.sim) IS NOT DISTINCT FROM (p.dup, p.sim) AND p.dup IS NOT NULL) AS kept_match
FROM rsite_before b JOIN rsitep p USING (id);
-- A factor that would refresh on every row, or not a number: refused (22023, 22P02).
\set VERBOSITY terse
SET spotsigs.trigger_refresh_growth = 1;
SET spotsigs.trigger_refresh_growth = 'never';
\set VERBOSITY default
-- The modes: on, background, off (the boolean spellings still name on and off); anything else
-- is refused (22023) with the list. test/t/023_trigger_refresh_background.pl tests background.
SELECT sqlerr('SET spotsigs.trigger_refresh = sometimes');
SET spotsigs.trigger_refresh = background;
SHOW spotsigs.trigger_refresh;
SET spotsigs.trigger_refresh = false;
SHOW spotsigs.trigger_refresh;
SET spotsigs.trigger_refresh = true;
SHOW spotsigs.trigger_refresh;
RESET spotsigs.trigger_refresh;
-- Nor does a REPEATABLE READ transaction refresh (its re-flag could meet rows a refresh
-- committed since its snapshot, and fail).
CREATE TABLE rrr (LIKE rpages INCLUDING ALL);
CREATE TRIGGER rrr_flag BEFORE INSERT ON rrr FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
BEGIN ISOLATION LEVEL REPEATABLE READ;
INSERT INTO rrr (id, sig) SELECT id, sig FROM rsrc WHERE id <= 40 ORDER BY id;
COMMIT;
SELECT count(*) AS statistics FROM spotsigs_stats WHERE relation = 'rrr'::regclass;
INSERT INTO rrr (id, sig) SELECT id, sig FROM rsrc WHERE id = 41;
SELECT rows_analyzed FROM spotsigs_stats WHERE relation = 'rrr'::regclass;
-- Mode 'first' is not refreshed.
CREATE TABLE rfirst (LIKE rpages INCLUDING ALL);
CREATE TRIGGER rfirst_flag BEFORE INSERT ON rfirst FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '', 'first');
INSERT INTO rfirst (id, sig) SELECT id, sig FROM rsrc ORDER BY id;
SELECT count(*) AS statistics FROM spotsigs_stats WHERE relation = 'rfirst'::regclass;

-- Cancel: a statement cancelled during a refresh (here by statement_timeout while the re-flag's
-- UPDATE fires a slow trigger of the user's) rolls the refresh back and leaves the session able
-- to refresh: the next insert does.
CREATE TABLE rcancel (LIKE rpages INCLUDING ALL);
CREATE TRIGGER rcancel_flag BEFORE INSERT ON rcancel FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
CREATE FUNCTION rslow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$;
CREATE TRIGGER rcancel_slow BEFORE UPDATE ON rcancel FOR EACH ROW EXECUTE FUNCTION rslow();
SET spotsigs.trigger_refresh = off;
INSERT INTO rcancel (id, sig) SELECT id, sig FROM rsrc WHERE id <= 64 ORDER BY id;
RESET spotsigs.trigger_refresh;
SET statement_timeout = '500ms';
\set VERBOSITY terse
INSERT INTO rcancel (id, sig) SELECT id, sig FROM rsrc WHERE id = 65;
\set VERBOSITY default
RESET statement_timeout;
SELECT count(*) AS statistics, (SELECT count(*) FROM rcancel) AS rows FROM spotsigs_stats
WHERE relation = 'rcancel'::regclass;
DROP TRIGGER rcancel_slow ON rcancel;
INSERT INTO rcancel (id, sig) SELECT id, sig FROM rsrc WHERE id = 65;
SELECT rows_analyzed, rdiff('rcancel') AS differences_from_brute_force FROM spotsigs_stats
WHERE relation = 'rcancel'::regclass;

-- Privileges: only the table's owner refreshes (as ANALYZE); another inserting role keeps the
-- stored statistics (here none) and its rows are flagged with them. The owner is no superuser
-- (a superuser bypasses row-level security).
CREATE ROLE rr_owner;
CREATE ROLE rr_writer;
GRANT CREATE ON SCHEMA public TO rr_owner;
GRANT SELECT ON rsrc TO rr_owner, rr_writer;
SET ROLE rr_owner;
CREATE TABLE rpriv (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON rpriv USING spotsigs (sig);
CREATE TRIGGER rpriv_flag BEFORE INSERT ON rpriv FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
GRANT SELECT, INSERT ON rpriv TO rr_writer;
SET ROLE rr_writer;
INSERT INTO rpriv (id, sig) SELECT id, sig FROM rsrc WHERE id <= 40 ORDER BY id;
SET ROLE rr_owner;
SELECT count(*) AS statistics FROM spotsigs_stats WHERE relation = 'rpriv'::regclass;
INSERT INTO rpriv (id, sig) SELECT id, sig FROM rsrc WHERE id = 41;
SELECT rows_analyzed FROM spotsigs_stats WHERE relation = 'rpriv'::regclass;

-- Row-level security enabled on the table: no refresh, even by the owner with the policies
-- forced on it (the re-flag would write into other writers' rows ids their policies may hide).
-- Rows 1001-1040 are hidden from everyone but the owner; the owner inserts 40 visible rows.
CREATE TABLE rrls (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON rrls USING spotsigs (sig);
CREATE TRIGGER rrls_flag BEFORE INSERT ON rrls FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
ALTER TABLE rrls ENABLE ROW LEVEL SECURITY;
CREATE POLICY rrls_all ON rrls USING (id <= 1000);
INSERT INTO rrls (id, sig) SELECT 1000 + id, sig FROM rsrc WHERE id <= 40 ORDER BY id;
INSERT INTO rrls (id, sig) SELECT id, sig FROM rsrc WHERE id <= 20 ORDER BY id;
ALTER TABLE rrls FORCE ROW LEVEL SECURITY;
INSERT INTO rrls (id, sig) SELECT id, sig FROM rsrc WHERE id BETWEEN 21 AND 40 ORDER BY id;
ALTER TABLE rrls NO FORCE ROW LEVEL SECURITY;
SELECT count(*) AS rows, count(*) FILTER (WHERE id > 1000) AS hidden_rows,
       (SELECT count(*) FROM spotsigs_stats WHERE relation = 'rrls'::regclass) AS statistics
FROM rrls;
DROP TABLE rpriv, rrls;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM rr_owner;

DROP TABLE rpages, rbefore, rfirst90, roff, rrr, rfirst, rcancel, rsrc, rsite_src, rsitep, rsite_before, rsite_tmpl;
DROP ROLE rr_owner, rr_writer;
DROP FUNCTION rslow(), rdiff(regclass), rw(int, int), rstory(int, int), rsite(int);
