-- spotsigs_flag_batch(): flags a batch of written rows as the 'best' trigger would, on plain
-- PostgreSQL (the same function serves Citus tables, see test/t/040_citus.pl); the Citus
-- helpers are inert without Citus.
\set SHOW_CONTEXT never
SET extra_float_digits = 0;

-- 300 rows in 30 families of 10 near duplicates, inserted with the trigger in ascending id
-- order in two statements, and the same rows flagged by two batches without it
CREATE TABLE fb_src AS
SELECT i AS id, ('{' || string_agg(to_hex((i % 30) * 1000 + k + CASE WHEN (k + i) % 9 = 0 THEN 500 ELSE 0 END), ',') || '}')::spotsig AS sig
FROM generate_series(1, 300) i, generate_series(1, 20 + i % 7) k GROUP BY i;
CREATE TABLE fb_trig (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
CREATE INDEX ON fb_trig USING spotsigs (sig);
CREATE TRIGGER t BEFORE INSERT ON fb_trig FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.6', 'best');
INSERT INTO fb_trig (id, sig) SELECT id, sig FROM fb_src WHERE id <= 200 ORDER BY id;
INSERT INTO fb_trig (id, sig) SELECT id, sig FROM fb_src WHERE id > 200 ORDER BY id;

CREATE TABLE fb (id int PRIMARY KEY, sig spotsig, dup int, sim real);
INSERT INTO fb (id, sig) SELECT id, sig FROM fb_src WHERE id <= 200;
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0.6, 1);
INSERT INTO fb (id, sig) SELECT id, sig FROM fb_src WHERE id > 200;
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0.6, 201);
SELECT count(*) AS rows, count(dup) AS flagged FROM fb_trig;
-- differences from the trigger's flags (the similarity column is real here: compared as real)
SELECT count(*) AS differences FROM fb JOIN fb_trig t USING (id)
WHERE fb.dup IS DISTINCT FROM t.dup OR fb.sim IS DISTINCT FROM t.sim::real;
-- a second call over the same rows gives the same flags; a batch flagging nothing clears stale flags
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', NULL, 0.6, 201);
UPDATE fb SET dup = -1 WHERE id = 300;
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 1, 300);
SELECT dup, sim FROM fb WHERE id = 300;

-- errors
\set VERBOSITY sqlstate
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0, 1);
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 1.5, 1);
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0.5, NULL);
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'nosuch', 'sim', 0.5, 1);
\set VERBOSITY default

-- without Citus no table is distributed, and the joins run here as always
SELECT spotsigs_citus_distributed('fb');
SELECT count(*) FROM spotsigs_join('fb', 'id', 'sig', 0.6);
DROP TABLE fb, fb_trig, fb_src;
