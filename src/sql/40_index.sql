-- The spotsigs index access method: % (threshold) and ORDER BY <-> (nearest first) over spotsig.

CREATE FUNCTION spotsigs_handler(internal) RETURNS index_am_handler
    AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD spotsigs TYPE INDEX HANDLER spotsigs_handler;
COMMENT ON ACCESS METHOD spotsigs IS 'length-partitioned inverted index of spot signatures for % and <->';

CREATE OPERATOR CLASS spotsig_ops DEFAULT FOR TYPE spotsig USING spotsigs AS
    OPERATOR 1 % (spotsig, spotsig),
    OPERATOR 2 <-> (spotsig, spotsig) FOR ORDER BY float_ops,
    OPERATOR 3 % (spotsig, spotsigs_query);

CREATE FUNCTION spotsigs_index_check(index regclass) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_index_check(regclass) IS 'verifies the structure of a spotsigs index; raises XX002 when it is corrupt';

CREATE FUNCTION spotsigs_index_stats(index regclass,
    OUT segment integer, OUT partition integer, OUT min_length bigint, OUT max_length bigint,
    OUT rows bigint, OUT lists bigint, OUT postings bigint) RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_index_stats(regclass) IS 'rows, posting lists and postings per segment and length partition (segment -1: pending list)';
