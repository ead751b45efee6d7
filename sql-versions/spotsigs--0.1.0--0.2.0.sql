-- spotsigs 0.1.0 -> 0.2.0 (ALTER EXTENSION spotsigs UPDATE TO '0.2.0').
--
-- On-disk formats: unchanged. A stored spotsig value is still packed format version 1 and a
-- spotsigs index still has metapage version 4, so tables and indexes written under 0.1.0 are
-- read as they are: nothing is rewritten and no index needs REINDEX.
--
-- This script brings the catalog of a 0.1.0 installation to exactly what a fresh 0.2.0
-- installation creates: test/t/020_upgrade.pl compares the two object by object and lists every
-- difference. A change to src/sql/*.sql after 0.1.0 needs its counterpart here: CREATE for a new
-- object, CREATE OR REPLACE or ALTER FUNCTION for changed attributes of an existing function
-- (a changed return type or a removed argument needs DROP and CREATE, and objects that depend on
-- the function must come back with it).

\echo Use "ALTER EXTENSION spotsigs UPDATE TO '0.2.0'" to load this file. \quit
