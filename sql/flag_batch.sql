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

-- The call's own temporary tables never are the caller's objects, whatever these are called: a
-- temporary table of the caller's named like the function's former work tables is neither read
-- nor dropped, and a target with such a name is flagged like any other. Nothing is left behind.
CREATE TEMP TABLE spotsigs_flag_match (note text);
INSERT INTO spotsigs_flag_match VALUES ('the caller''s row');
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0.6, 201);
SELECT * FROM spotsigs_flag_match;
CREATE TEMP TABLE spotsigs_flag_new (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
INSERT INTO spotsigs_flag_new (id, sig) SELECT id, sig FROM fb_src WHERE id <= 40;
SELECT spotsigs_flag_batch('spotsigs_flag_new', 'id', 'sig', 'dup', 'sim', 0.6, 1);
SELECT count(*) AS rows, count(dup) AS flagged FROM spotsigs_flag_new;
SELECT count(*) AS differences FROM spotsigs_flag_new n JOIN fb_trig t USING (id)
WHERE n.dup IS DISTINCT FROM t.dup OR n.sim IS DISTINCT FROM t.sim;
SELECT relname FROM pg_class WHERE relnamespace = pg_my_temp_schema() AND relkind = 'r' ORDER BY 1;
DROP TABLE spotsigs_flag_match, spotsigs_flag_new;
-- Likewise the Citus task (run here directly, with ordinary tables as its shards): the caller's
-- spotsigs_task_local and spotsigs_task_remote stay as they are.
CREATE TEMP VIEW spotsigs_task_local AS SELECT 'the caller''s view' AS note;
CREATE TEMP TABLE spotsigs_task_remote AS SELECT 'the caller''s table' AS note;
-- Its pairs come packed (spotsigs_citus_pairs_agg) and read back as the join's, similarities too.
SELECT split_part(t, E'\n', 1)::json -> 'rows' AS rows, split_part(t, E'\n', 1)::json -> 'pairs' AS pairs,
       (SELECT count(*) FROM spotsigs_join('fb', 'id', 'sig', 0.6)) AS join_pairs,
       (SELECT count(*) FROM (SELECT p.* FROM string_to_table(t, E'\n') WITH ORDINALITY l(line, n),
                                              spotsigs_citus_pairs(substr(l.line, 2), false) p WHERE l.n > 1
                              EXCEPT ALL SELECT * FROM spotsigs_join('fb', 'id', 'sig', 0.6)) x) AS not_in_join,
       (SELECT string_agg(left(line, 1), '') FROM string_to_table(t, E'\n') WITH ORDINALITY l(line, n) WHERE n > 1) AS lines
  FROM spotsigs_citus_task(ARRAY['public.fb'], 'id', 'sig', 0.6, NULL, NULL, '[]', true) t;
SELECT * FROM spotsigs_task_local UNION ALL SELECT * FROM spotsigs_task_remote;
SELECT relname FROM pg_class WHERE relnamespace = pg_my_temp_schema() AND relkind IN ('r', 'v') ORDER BY 1;
DROP VIEW spotsigs_task_local;
DROP TABLE spotsigs_task_remote;

-- errors
\set VERBOSITY sqlstate
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0, 1);
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 1.5, 1);
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0.5, NULL);
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'nosuch', 'sim', 0.5, 1);
-- only under READ COMMITTED (a call must see the batches committed while it waited for its lock)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0.5, 1);
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT spotsigs_flag_batch('fb', 'id', 'sig', 'dup', 'sim', 0.5, 1);
ROLLBACK;
\set VERBOSITY default

-- without Citus no table is distributed, and the joins run here as always
SELECT spotsigs_citus_distributed('fb');
SELECT count(*) FROM spotsigs_join('fb', 'id', 'sig', 0.6);
DROP TABLE fb, fb_trig, fb_src;
