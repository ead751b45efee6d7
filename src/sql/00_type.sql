-- spotsigs: the spotsig type (a multiset of 64-bit signature hashes), its I/O and equality.

\echo Use "CREATE EXTENSION spotsigs" to load this file. \quit

CREATE TYPE spotsig;

CREATE FUNCTION spotsig_in(cstring) RETURNS spotsig
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_out(spotsig) RETURNS cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_recv(internal) RETURNS spotsig
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_send(spotsig) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE spotsig (
    INPUT = spotsig_in,
    OUTPUT = spotsig_out,
    RECEIVE = spotsig_recv,
    SEND = spotsig_send,
    INTERNALLENGTH = VARIABLE,
    ALIGNMENT = double,
    STORAGE = extended
);
COMMENT ON TYPE spotsig IS 'multiset of spot signatures: sorted 64-bit hashes with frequencies';

-- Equality and hashing, so exact duplicates group with GROUP BY / DISTINCT and hash-join.
CREATE FUNCTION spotsig_eq(spotsig, spotsig) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION spotsig_ne(spotsig, spotsig) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION spotsig_hash(spotsig) RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_hash_extended(spotsig, bigint) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR = (
    LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel, HASHES
);
CREATE OPERATOR <> (
    LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);

CREATE OPERATOR CLASS spotsig_hash_ops DEFAULT FOR TYPE spotsig USING hash AS
    OPERATOR 1 = (spotsig, spotsig),
    FUNCTION 1 spotsig_hash(spotsig),
    FUNCTION 2 spotsig_hash_extended(spotsig, bigint);

-- A total order (by length, then number of distinct signatures, then the canonical bytes), so
-- that sorting, count(DISTINCT ...), UNION and merge joins work as for core types. Shorter
-- documents sort first; beyond that the order has no meaning.
CREATE FUNCTION spotsig_cmp(spotsig, spotsig) RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_lt(spotsig, spotsig) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_le(spotsig, spotsig) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_gt(spotsig, spotsig) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION spotsig_ge(spotsig, spotsig) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR < (LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR > (LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
CREATE OPERATOR >= (LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);

CREATE OPERATOR CLASS spotsig_btree_ops DEFAULT FOR TYPE spotsig USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 spotsig_cmp(spotsig, spotsig);
