-- A search by the content measure, served by the spotsigs index:
--   sig % spotsig_content_query(q, 'pages', 'sig')
-- is similarity(spotsig_remove(sig, t), spotsig_remove(q, t)) >= 0.4, t the template stored for
-- pages.sig by spotsigs_analyze (empty when none is stored or the user may not see it in
-- spotsigs_stats: then the plain similarity at 0.4). The query value carries q's content, the
-- threshold and t, so the operator is IMMUTABLE and its answer a function of that t. The index
-- searches the content bound, which keeps every content match, and has the executor recheck each
-- row with the operator (docs/content-measure.md). The first two fields are laid
-- out as spotsigs_query's, which the index's cost estimate reads.
--   ORDER BY sig <-> spotsig_content_query(q, 'pages', 'sig')
-- orders by 1 - that content similarity (the threshold plays no part); the index's ordered scan
-- returns lower bounds of it that the executor recomputes (xs_recheckorderby).
CREATE TYPE spotsigs_content_query AS (content spotsig, threshold double precision, template spotsig);
COMMENT ON TYPE spotsigs_content_query IS
    'a query''s content with the threshold and the template it was taken without, for sig % spotsig_content_query(q, rel, column)';
-- In C: a scan that rechecks its index condition evaluates the constructor for every row; it reads
-- the template from spotsigs_stats (the caller's privileges apply) once per expression (STABLE).
CREATE FUNCTION spotsig_content_query(sig spotsig, rel regclass, sig_column name) RETURNS spotsigs_content_query
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_content_query(spotsig, regclass, name) IS
    'the right operand of % for the content measure at 0.4 with the stored template of rel''s column';
CREATE FUNCTION spotsig_content_similar(spotsig, spotsigs_content_query) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR % (
    LEFTARG = spotsig, RIGHTARG = spotsigs_content_query, PROCEDURE = spotsig_content_similar,
    RESTRICT = contsel, JOIN = spotsig_joinsel
);
ALTER OPERATOR FAMILY spotsig_ops USING spotsigs ADD OPERATOR 4 % (spotsig, spotsigs_content_query);
CREATE FUNCTION spotsig_content_distance(spotsig, spotsigs_content_query) RETURNS double precision
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_content_distance(spotsig, spotsigs_content_query) IS
    '1 - the content similarity of a row to a content query, against the query''s template';
CREATE OPERATOR <-> (
    LEFTARG = spotsig, RIGHTARG = spotsigs_content_query, PROCEDURE = spotsig_content_distance
);
ALTER OPERATOR FAMILY spotsig_ops USING spotsigs ADD OPERATOR 5 <-> (spotsig, spotsigs_content_query) FOR ORDER BY float_ops;

-- A bare x % y under spotsigs.similarity_threshold = 'auto' (the default): the planner support of
-- spotsig_similar rewrites it, when x (else y) is a column of a table, into
--   x % spotsig_auto_query(y, 'table'::regclass, 'column'::name)
-- whose value, computed when the query runs, is y at a numeric setting with an empty template
-- (the plain similarity, exactly), or under 'auto' spotsig_content_query's value when the column
-- has statistics the user may read in spotsigs_stats, else y at 0.2 with an empty template
-- (src/pg/type/auto_query.cpp; docs/content-measure.md).
CREATE FUNCTION spotsig_auto_query(sig spotsig, rel regclass, sig_column name) RETURNS spotsigs_content_query
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_auto_query(spotsig, regclass, name) IS
    'the right operand a bare % on rel''s column becomes: by spotsigs.similarity_threshold, or under auto by the column''s statistics';
CREATE FUNCTION spotsig_similar_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER FUNCTION spotsig_similar(spotsig, spotsig) SUPPORT spotsig_similar_support;
