-- Comparing spotsigs: similarity(), set_similarity(), % and <->, and accessors.

CREATE FUNCTION similarity(spotsig, spotsig) RETURNS double precision
    AS 'MODULE_PATHNAME', 'spotsig_similarity' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION similarity(spotsig, spotsig) IS 'multiset Jaccard similarity; 0 when either is empty';
-- Its planner support function answers nothing; calling it while the planner simplifies a query
-- loads the library, whose planner hook then offers the SpotsigsJoin scan for similarity(a, b) >=
-- tau even in a session that has not used the library yet (src/pg/planner/).
CREATE FUNCTION spotsig_similarity_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER FUNCTION similarity(spotsig, spotsig) SUPPORT spotsig_similarity_support;
CREATE FUNCTION set_similarity(spotsig, spotsig) RETURNS double precision
    AS 'MODULE_PATHNAME', 'spotsig_set_similarity' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION set_similarity(spotsig, spotsig) IS 'Jaccard similarity of the distinct signatures; 0 when either is empty';

-- STABLE: the result depends on the spotsigs.similarity_threshold setting.
CREATE FUNCTION spotsig_similar(spotsig, spotsig) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
-- The threshold rule of every function with a threshold argument, for the extension's SQL
-- functions: the argument when in (0, 1], spotsigs.similarity_threshold when NULL, else 22023.
CREATE FUNCTION spotsigs_threshold(threshold double precision) RETURNS double precision
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION spotsigs_threshold(double precision) IS 'the threshold to use: the argument if in (0, 1], spotsigs.similarity_threshold if NULL; otherwise an error';
CREATE FUNCTION spotsig_distance(spotsig, spotsig) RETURNS double precision
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The join selectivity of % (contjoinsel's estimate), in the library: planning a join on % (of a
-- spotsig, a spotsigs_query or a spotsigs_content_query) calls it before the join's paths are
-- made, which loads the library, whose planner hook then offers the SpotsigsJoin scan
-- (src/pg/planner/) even in a session that has not used the library yet.
CREATE FUNCTION spotsig_joinsel(internal, oid, internal, smallint, internal) RETURNS double precision
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OPERATOR % (
    LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_similar,
    COMMUTATOR = %, RESTRICT = contsel, JOIN = spotsig_joinsel
);
CREATE OPERATOR <-> (
    LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_distance, COMMUTATOR = <->
);

-- An explicit-threshold query: sig % spotsig_query(q, tau) is similarity(sig, q) >= tau. The
-- threshold is part of the operand, so the operator is IMMUTABLE and a query shipped elsewhere
-- (Citus sends it to every shard) means the same there, whatever the session's settings.
CREATE TYPE spotsigs_query AS (sig spotsig, threshold double precision);
COMMENT ON TYPE spotsigs_query IS 'a query signature with its own similarity threshold, for sig % spotsig_query(q, tau)';
CREATE FUNCTION spotsig_query(sig spotsig, threshold double precision) RETURNS spotsigs_query
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_query(spotsig, double precision) IS 'a spotsigs_query: the right operand of % with its own threshold in (0, 1]';
CREATE FUNCTION spotsig_similar_query(spotsig, spotsigs_query) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR % (
    LEFTARG = spotsig, RIGHTARG = spotsigs_query, PROCEDURE = spotsig_similar_query,
    RESTRICT = contsel, JOIN = spotsig_joinsel
);

CREATE FUNCTION length(spotsig) RETURNS integer
    AS 'MODULE_PATHNAME', 'spotsig_length' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION length(spotsig) IS 'sum of the signature frequencies (|d| in the paper)';
CREATE FUNCTION spotsig_distinct(spotsig) RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_distinct(spotsig) IS 'number of distinct signatures';
CREATE FUNCTION spotsig_hashes(spotsig, OUT hash bigint, OUT freq integer) RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 100;
COMMENT ON FUNCTION spotsig_hashes(spotsig) IS 'the stored 64-bit hashes (as signed bigint) with their frequencies';
