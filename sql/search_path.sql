-- search_path hijacking: objects that a user with CREATE on a schema of the caller's
-- search_path defines cannot stand in for the ones the extension's functions call; and the
-- extension installed by a non-superuser into another schema works from any search_path.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql

CREATE TABLE sp_docs (id int, sig spotsig);
INSERT INTO sp_docs VALUES (1, '{1,2,3,4}'), (2, '{1,2,3,5}'), (3, '{7,8,9}');

-- A user with CREATE on public plants functions that an unpinned search_path would resolve to
-- (public.format matches the argument types exactly, pg_catalog.format only through VARIADIC).
CREATE ROLE spotsigs_sp_mallory;
GRANT CREATE ON SCHEMA public TO spotsigs_sp_mallory;
SET ROLE spotsigs_sp_mallory;
CREATE FUNCTION public.format(text, regclass, name, name) RETURNS text LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'public.format ran as %', current_user; END $$;
CREATE FUNCTION public.unnest(bigint[]) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'public.unnest ran as %', current_user; END $$;
RESET ROLE;

SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs('sp_docs', 'id', 'sig', 0.5, 2, 16)$$);
SELECT * FROM spotsigs_lsh_pairs('sp_docs', 'id', 'sig', 0.5, 2, 16) ORDER BY 1, 2;
DROP FUNCTION public.format(text, regclass, name, name);
SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs('sp_docs', 'id', 'sig', 0.5, 2, 16)$$);
-- Also when the caller's search_path puts public before pg_catalog.
SET search_path = public, pg_catalog;
SELECT sqlerr($$SELECT * FROM spotsigs_lsh_pairs('sp_docs', 'id', 'sig', 0.5, 2, 16)$$);
RESET search_path;
DROP FUNCTION public.unnest(bigint[]);
REVOKE CREATE ON SCHEMA public FROM spotsigs_sp_mallory;
DROP ROLE spotsigs_sp_mallory;

-- The extension in schema "other" of a new database, installed by a non-superuser (the
-- extension is trusted), used with a search_path that does not contain "other".
SELECT current_database() AS regdb \gset
CREATE DATABASE spotsigs_sp_db;
CREATE ROLE spotsigs_sp_owner;
GRANT CREATE ON DATABASE spotsigs_sp_db TO spotsigs_sp_owner;
\c spotsigs_sp_db
GRANT CREATE ON SCHEMA public TO spotsigs_sp_owner;
SET ROLE spotsigs_sp_owner;
CREATE SCHEMA other;
CREATE EXTENSION spotsigs WITH SCHEMA other;
SET search_path = public;
-- Decoys in public with the names of the extension's objects.
CREATE FUNCTION public.similarity(anyelement, anyelement) RETURNS double precision LANGUAGE sql
  AS $$ SELECT 0.99::double precision $$;
CREATE FUNCTION public.unnest(bigint[]) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'public.unnest ran as %', current_user; END $$;
CREATE TABLE d (id int PRIMARY KEY, body text, sig other.spotsig, dup int, sim double precision);
CREATE INDEX d_sig ON d USING spotsigs (sig);
CREATE TRIGGER d_dedup BEFORE INSERT ON d FOR EACH ROW
  EXECUTE FUNCTION other.spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.5');
INSERT INTO d (id, sig) VALUES (1, '{1,2,3,4}'), (2, '{1,2,3,5}'), (3, '{7,8,9}'), (4, '{1,2,3,4}');
SELECT id, dup, round(sim::numeric, 4) AS sim FROM d ORDER BY id;
SELECT * FROM other.spotsigs_lsh_pairs('d', 'id', 'sig', 0.5, 2, 16) ORDER BY 1, 2;
SELECT * FROM other.spotsigs_join('d', 'id', 'sig', 0.5) ORDER BY 1, 2;
SELECT * FROM other.spotsigs_clusters('d', 'id', 'sig', 0.5) ORDER BY 1;
SELECT other.spotsigs_index_check('d_sig');
SELECT other.spotsigs_threshold(NULL) AS default_threshold;
SET enable_seqscan = off;
SELECT id FROM d WHERE sig OPERATOR(other.%) '{1,2,3,4}'::other.spotsig ORDER BY id;
RESET enable_seqscan;
RESET ROLE;
\c :regdb
DROP DATABASE spotsigs_sp_db WITH (FORCE);  -- the session just left may not have exited yet
DROP ROLE spotsigs_sp_owner;
