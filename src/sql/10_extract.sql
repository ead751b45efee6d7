-- Extraction: spotsigs(), spotsigs_terms(), spotsig_from_terms().

CREATE FUNCTION spotsigs(doc text) RETURNS spotsig
    AS 'MODULE_PATHNAME', 'spotsigs_extract' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsigs(text) IS 'spot signatures of a document (HTML or plain text) with the default configuration';

-- Explicit configuration: antecedents a(distance, chain) and the stopwords skipped in chains
-- (NULL = the default English list). Not STRICT only so that stopwords may be NULL; a NULL
-- document gives NULL, a NULL elsewhere is an error.
CREATE FUNCTION spotsigs(doc text, antecedents text[], distance integer, chain integer,
                         stopwords text[] DEFAULT NULL) RETURNS spotsig
    AS 'MODULE_PATHNAME', 'spotsigs_extract' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Several spot specifications in one call, written as in the paper: 'is(3,1), that(5,2)'.
CREATE FUNCTION spotsigs(doc text, spec text, stopwords text[] DEFAULT NULL) RETURNS spotsig
    AS 'MODULE_PATHNAME', 'spotsigs_extract' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION spotsigs_terms(doc text, OUT signature text, OUT freq integer) RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'spotsigs_terms' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 100;
CREATE FUNCTION spotsigs_terms(doc text, antecedents text[], distance integer, chain integer,
                               stopwords text[] DEFAULT NULL, OUT signature text, OUT freq integer)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'spotsigs_terms' LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 100;
CREATE FUNCTION spotsigs_terms(doc text, spec text, stopwords text[] DEFAULT NULL,
                               OUT signature text, OUT freq integer) RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'spotsigs_terms' LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 100;

CREATE FUNCTION spotsig_from_terms(signatures text[], freqs integer[]) RETURNS spotsig
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_from_terms(text[], integer[]) IS 'a spotsig from signature texts (e.g. the:south:carolina) hashed as extraction hashes them';
