-- The extension's functions as the catalog records them: which resolve names through a
-- search_path they do not pin, and every function's volatility, parallel safety, strictness and
-- leakproofness, so that a change to any of them shows up here.

-- Functions of the extension in a language other than C (an aggregate counts as 'internal') that do not pin their search_path: they
-- would resolve names through the caller's. Must be none. C functions are exempt: C code looks
-- nothing up by name through the search_path, except where it runs SQL (spotsigs_join,
-- spotsigs_join_rs, spotsigs_clusters, spotsigs_citus_pack, and the trigger's row-security
-- probe), whose queries are built from quoted, schema-qualified names and schema-qualified operators only. A pinned
-- search_path on a C function would also make every call save and restore the setting.
CREATE VIEW ext_functions AS
  SELECT p.oid, p.oid::regprocedure AS function, l.lanname AS language, p.provolatile AS volatile,
         p.proparallel AS parallel, p.proisstrict AS strict, p.proleakproof AS leakproof,
         p.prosecdef AS secdef, p.proconfig AS config
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'spotsigs'
  JOIN pg_language l ON l.oid = p.prolang;

SELECT function, language FROM ext_functions
WHERE language NOT IN ('c', 'internal')
  AND NOT EXISTS (SELECT 1 FROM unnest(config) s WHERE s LIKE 'search\_path=%')
ORDER BY function::text;

-- What the others pin it to.
SELECT function, language, config FROM ext_functions WHERE language NOT IN ('c', 'internal') ORDER BY function::text;

-- Volatility (i immutable, s stable, v volatile) and parallel safety (s safe, r restricted,
-- u unsafe). Functions that read tables (the joins, spotsigs_lsh_pairs, the index inspection)
-- are PARALLEL RESTRICTED; the trigger and the access method handler are VOLATILE and PARALLEL
-- UNSAFE (the defaults; neither is called by a query's expressions); no function is
-- SECURITY DEFINER.
SELECT function, language, volatile, parallel, strict, leakproof, secdef FROM ext_functions
ORDER BY function::text;

DROP VIEW ext_functions;

-- What PARALLEL RESTRICTED ensures: under a forced parallel plan these run in the leader, which
-- can read its temporary tables (a PARALLEL SAFE function may run in a worker, which cannot).
CREATE TEMP TABLE cat_tmp (id int, sig spotsig);
INSERT INTO cat_tmp VALUES (1, '{1,2,3,4}'), (2, '{1,2,3,5}'), (3, '{7,8,9}');
-- (debug_parallel_query is called force_parallel_mode before PostgreSQL 16)
DO $$ BEGIN PERFORM set_config(CASE WHEN current_setting('server_version_num')::int < 160000
  THEN 'force_parallel_mode' ELSE 'debug_parallel_query' END, 'on', false); END $$;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SELECT * FROM spotsigs_lsh_pairs('cat_tmp', 'id', 'sig', 0.5, 2, 16);
SELECT * FROM spotsigs_join('cat_tmp', 'id', 'sig', 0.5);
SELECT count(*) FROM spotsigs_clusters('cat_tmp', 'id', 'sig', 0.5);
DO $$ BEGIN PERFORM set_config(CASE WHEN current_setting('server_version_num')::int < 160000
  THEN 'force_parallel_mode' ELSE 'debug_parallel_query' END, 'off', false); END $$;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
DROP TABLE cat_tmp;
