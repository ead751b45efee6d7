-- Comparing spotsigs: similarity(), set_similarity(), % and <->, and accessors.

CREATE FUNCTION similarity(spotsig, spotsig) RETURNS double precision
    AS 'MODULE_PATHNAME', 'spotsig_similarity' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION similarity(spotsig, spotsig) IS 'multiset Jaccard similarity; 0 when either is empty';
CREATE FUNCTION set_similarity(spotsig, spotsig) RETURNS double precision
    AS 'MODULE_PATHNAME', 'spotsig_set_similarity' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION set_similarity(spotsig, spotsig) IS 'Jaccard similarity of the distinct signatures; 0 when either is empty';

-- STABLE: the result depends on the spotsigs.similarity_threshold setting.
CREATE FUNCTION spotsig_similar(spotsig, spotsig) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_distance(spotsig, spotsig) RETURNS double precision
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR % (
    LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_similar,
    COMMUTATOR = %, RESTRICT = contsel, JOIN = contjoinsel
);
CREATE OPERATOR <-> (
    LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_distance, COMMUTATOR = <->
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
