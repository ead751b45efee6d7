-- What a user without privileges on a table can learn through the extension: the index
-- inspection functions need SELECT on the index's table (or its ownership), as reading the
-- rows would; the joins need SELECT and name themselves when it is missing.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql

CREATE TABLE pv_docs (id int PRIMARY KEY, sig spotsig);
INSERT INTO pv_docs VALUES (1, '{1,2,3,4}'), (2, '{1,2,3,5}'), (3, '{7,8,9}');
CREATE INDEX pv_docs_sig ON pv_docs USING spotsigs (sig);
CREATE ROLE spotsigs_pv_user;
CREATE ROLE spotsigs_pv_owner;
GRANT SELECT, INSERT ON pv_docs TO spotsigs_pv_owner;

-- No privilege on the table: 42501 from both inspection functions and from every join.
SET ROLE spotsigs_pv_user;
SELECT sqlerr($$SELECT spotsigs_index_check('pv_docs_sig')$$);
SELECT sqlerr($$SELECT * FROM spotsigs_index_stats('pv_docs_sig')$$);
SELECT sqlerr($$SELECT * FROM spotsigs_join('pv_docs', 'id', 'sig', 0.5)$$);
SELECT sqlerr($$SELECT * FROM spotsigs_join_rs('pv_docs', 'id', 'sig', 'pv_docs', 'id', 'sig', 0.5)$$);
SELECT sqlerr($$SELECT * FROM spotsigs_clusters('pv_docs', 'id', 'sig', 0.5)$$);
SELECT sqlerr($$SELECT spotsigs_template('pv_docs', 'id', 'sig')$$);
SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs('pv_docs', 'id', 'sig', 0.5)$$);
RESET ROLE;

-- SELECT on the table is enough.
GRANT SELECT ON pv_docs TO spotsigs_pv_user;
SET ROLE spotsigs_pv_user;
SELECT spotsigs_index_check('pv_docs_sig');
SELECT segment, partition, rows FROM spotsigs_index_stats('pv_docs_sig') WHERE rows > 0;
RESET ROLE;
REVOKE SELECT ON pv_docs FROM spotsigs_pv_user;

-- So is owning the table, even after revoking one's own SELECT.
ALTER TABLE pv_docs OWNER TO spotsigs_pv_owner;
SET ROLE spotsigs_pv_owner;
REVOKE SELECT ON pv_docs FROM spotsigs_pv_owner;
SELECT spotsigs_index_check('pv_docs_sig');
RESET ROLE;

DROP TABLE pv_docs;
DROP ROLE spotsigs_pv_user;
DROP ROLE spotsigs_pv_owner;
