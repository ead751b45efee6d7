-- spotsigs_flag_duplicates() tells the writer of a row the id of another row and its
-- similarity: it matches only rows the writer may read (SELECT privilege, row-level security),
-- and it stores its values as an INSERT of them would (typmod, domain constraints).
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql

-- Two tenants share a table; each sees only its own rows. The duplicate column is a smallint,
-- so a matched id above 32767 would raise an error naming it.
CREATE ROLE spotsigs_ts_a;
CREATE ROLE spotsigs_ts_b;
CREATE ROLE spotsigs_ts_writer;
CREATE TABLE ts_docs (id int PRIMARY KEY, tenant name NOT NULL DEFAULT current_user, sig spotsig,
                      dup smallint, sim double precision);
CREATE INDEX ts_docs_sig ON ts_docs USING spotsigs (sig);
CREATE TRIGGER ts_dedup BEFORE INSERT OR UPDATE ON ts_docs FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.5');
ALTER TABLE ts_docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY ts_own ON ts_docs USING (tenant = current_user);
GRANT SELECT, INSERT, UPDATE ON ts_docs TO spotsigs_ts_a, spotsigs_ts_b;
GRANT INSERT ON ts_docs TO spotsigs_ts_writer;

SET ROLE spotsigs_ts_a;
INSERT INTO ts_docs (id, sig) VALUES (1, '{1,2,3,4,5,6,7,8,9,10}'), (40000, '{21,22,23,24,25,26,27,28,29,30}');
RESET ROLE;

-- Tenant b writes copies of tenant a's documents: no match, and no error naming id 40000.
SET ROLE spotsigs_ts_b;
INSERT INTO ts_docs (id, sig) VALUES (2, '{1,2,3,4,5,6,7,8,9,10}') RETURNING id, dup, sim;
SELECT sqlerr($$INSERT INTO ts_docs (id, sig) VALUES (3, '{21,22,23,24,25,26,27,28,29,30}')$$);
-- Its own rows still match, best first, in 'best' and 'first' mode and on UPDATE.
INSERT INTO ts_docs (id, sig) VALUES (4, '{1,2,3,4,5,6,7,8,9,11}') RETURNING id, dup, round(sim::numeric, 4) AS sim;
UPDATE ts_docs SET sig = '{1,2,3,4,5,6,7,8,9,12}' WHERE id = 4 RETURNING id, dup, round(sim::numeric, 4) AS sim;
RESET ROLE;
ALTER TABLE ts_docs DISABLE TRIGGER ts_dedup;
CREATE TRIGGER ts_first BEFORE INSERT ON ts_docs FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.5', 'first');
SET ROLE spotsigs_ts_b;
INSERT INTO ts_docs (id, sig) VALUES (5, '{1,2,3,4,5,6,7,8,9,10,11}') RETURNING id, dup, round(sim::numeric, 4) AS sim;
RESET ROLE;
DROP TRIGGER ts_first ON ts_docs;
ALTER TABLE ts_docs ENABLE TRIGGER ts_dedup;

-- The table's owner (row security does not apply) sees every row: rows 1 (tenant a) and 2
-- (tenant b) are both equal to this one, the tie goes to the smaller id.
INSERT INTO ts_docs (id, tenant, sig) VALUES (6, 'spotsigs_ts_b', '{1,2,3,4,5,6,7,8,9,10}')
  RETURNING id, dup, round(sim::numeric, 4) AS sim;
-- With row_security off, a user subject to it is refused, as its SELECT would be.
SET ROLE spotsigs_ts_b;
SET row_security = off;
SELECT sqlerr($$INSERT INTO ts_docs (id, sig) VALUES (7, '{1,2,3,4,5,6,7,8,9,10}')$$);
RESET row_security;
RESET ROLE;

-- A writer without SELECT learns nothing: 42501 for rows with a signature.
SET ROLE spotsigs_ts_writer;
SELECT sqlerr($$INSERT INTO ts_docs (id, sig) VALUES (8, '{1,2,3,4,5,6,7,8,9,10}')$$);
RESET ROLE;
-- SELECT on the key and the signature columns is enough (the policies still apply).
GRANT SELECT (id, sig, tenant) ON ts_docs TO spotsigs_ts_writer;
SET ROLE spotsigs_ts_writer;
SELECT sqlerr($$INSERT INTO ts_docs (id, sig) VALUES (8, '{1,2,3,4,5,6,7,8,9,10}')$$);
RESET ROLE;
SELECT id, tenant, dup, round(sim::numeric, 4) AS sim FROM ts_docs ORDER BY id;
DROP TABLE ts_docs;

-- A partition of a table with row-level security: the trigger fires on the partition, whose
-- index knows nothing of the parent's policies, so it refuses (0A000) for users they apply to.
CREATE TABLE ts_parts (id int, tenant name NOT NULL DEFAULT current_user, sig spotsig, dup int,
                       PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE ts_part1 PARTITION OF ts_parts FOR VALUES FROM (0) TO (1000);
CREATE INDEX ON ts_part1 USING spotsigs (sig);
CREATE TRIGGER ts_part_dedup BEFORE INSERT ON ts_part1 FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', '', '0.5');
ALTER TABLE ts_parts ENABLE ROW LEVEL SECURITY;
CREATE POLICY ts_parts_own ON ts_parts USING (tenant = current_user);
GRANT SELECT, INSERT ON ts_parts TO spotsigs_ts_a, spotsigs_ts_b;
-- The owner, to whom the policies do not apply, is served.
INSERT INTO ts_parts (id, tenant, sig) VALUES (1, 'spotsigs_ts_a', '{1,2,3,4,5,6,7,8,9,10}');
INSERT INTO ts_parts (id, sig) VALUES (3, '{1,2,3,4,5,6,7,8,9,10}') RETURNING id, dup;
-- Tenant b (SELECT granted on the partitioned table only, which suffices) is refused.
SET ROLE spotsigs_ts_b;
SELECT sqlerr($$INSERT INTO ts_parts (id, sig) VALUES (2, '{1,2,3,4,5,6,7,8,9,10}')$$);
RESET ROLE;
DROP TABLE ts_parts;

-- A partition with its own row-level security under a partitioned table without: a writer with
-- SELECT and INSERT on the partitioned table reads every row of the partition through it (a
-- partition's policies apply only to queries naming the partition), so the trigger matches them.
-- A writer granted the partition alone is subject to its policies, and is served under them.
CREATE TABLE ts_pp (id int, tenant name NOT NULL DEFAULT current_user, sig spotsig, dup int,
                    PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE ts_pp1 PARTITION OF ts_pp FOR VALUES FROM (0) TO (1000);
CREATE INDEX ON ts_pp1 USING spotsigs (sig);
CREATE TRIGGER ts_pp_dedup BEFORE INSERT ON ts_pp1 FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', '', '0.5');
ALTER TABLE ts_pp1 ENABLE ROW LEVEL SECURITY;
CREATE POLICY ts_pp1_own ON ts_pp1 USING (tenant = current_user);
GRANT SELECT, INSERT ON ts_pp TO spotsigs_ts_b;
GRANT SELECT, INSERT ON ts_pp1 TO spotsigs_ts_writer;
INSERT INTO ts_pp (id, tenant, sig) VALUES (1, 'spotsigs_ts_a', '{1,2,3,4,5,6,7,8,9,10}');
SET ROLE spotsigs_ts_b;
SELECT id, tenant FROM ts_pp ORDER BY id;
SELECT sqlerr($$INSERT INTO ts_pp (id, sig) VALUES (2, '{1,2,3,4,5,6,7,8,9,10}')$$);
SET ROLE spotsigs_ts_writer;
SELECT id, tenant FROM ts_pp1 ORDER BY id;
INSERT INTO ts_pp1 (id, sig) VALUES (4, '{1,2,3,4,5,6,7,8,9,10}');
INSERT INTO ts_pp1 (id, sig) VALUES (5, '{1,2,3,4,5,6,7,8,9,10}');
RESET ROLE;
SELECT id, tenant, dup FROM ts_pp ORDER BY id;
DROP TABLE ts_pp;

-- Domains and typmods of the written columns apply: numeric(3,2) rounds, a domain's CHECK and
-- NOT NULL are enforced (a row without a match writes NULL, which a NOT NULL domain refuses).
CREATE DOMAIN ts_dup AS integer CHECK (VALUE <> 13);
CREATE DOMAIN ts_sim AS numeric(4,3) CHECK (VALUE < 0.95);
CREATE DOMAIN ts_sim_nn AS double precision NOT NULL;
CREATE TABLE ts_dom (id int PRIMARY KEY, sig spotsig, dup ts_dup, sim ts_sim, sim2 numeric(3,2));
CREATE INDEX ON ts_dom USING spotsigs (sig);
CREATE TRIGGER ts_dom1 BEFORE INSERT ON ts_dom FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.5');
INSERT INTO ts_dom (id, sig) VALUES (13, '{1,2,3,4,5,6,7,8,9,10}'), (20, '{31,32,33,34,35,36,37,38,39,40}');
-- 9/11 = 0.8181...: stored as numeric(4,3).
INSERT INTO ts_dom (id, sig) VALUES (21, '{31,32,33,34,35,36,37,38,39,41}') RETURNING id, dup, sim;
-- similarity 1 violates ts_sim's CHECK; a match with id 13 violates ts_dup's.
SELECT sqlerr($$INSERT INTO ts_dom (id, sig) VALUES (22, '{31,32,33,34,35,36,37,38,39,40}')$$);
SELECT sqlerr($$INSERT INTO ts_dom (id, sig) VALUES (23, '{1,2,3,4,5,6,7,8,9,11}')$$);
DROP TRIGGER ts_dom1 ON ts_dom;
CREATE TRIGGER ts_dom2 BEFORE INSERT ON ts_dom FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim2', '0.5');
INSERT INTO ts_dom (id, sig) VALUES (24, '{31,32,33,34,35,36,37,38,39,42}') RETURNING id, dup, sim2;
DROP TRIGGER ts_dom2 ON ts_dom;
ALTER TABLE ts_dom ADD COLUMN sim3 ts_sim_nn DEFAULT 0;
CREATE TRIGGER ts_dom3 BEFORE INSERT ON ts_dom FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim3', '0.5');
INSERT INTO ts_dom (id, sig) VALUES (25, '{31,32,33,34,35,36,37,38,39,43}') RETURNING id, dup, round(sim3::numeric, 4) AS sim3;
SELECT sqlerr($$INSERT INTO ts_dom (id, sig) VALUES (26, '{51,52,53}')$$);
DROP TABLE ts_dom;
DROP DOMAIN ts_dup, ts_sim, ts_sim_nn;
DROP ROLE spotsigs_ts_a;
DROP ROLE spotsigs_ts_b;
DROP ROLE spotsigs_ts_writer;
