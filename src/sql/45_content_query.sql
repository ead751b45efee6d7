-- A search by the content measure, served by the spotsigs index:
--   sig % spotsig_content_query(q, 'pages', 'sig')
-- is similarity(spotsig_remove(sig, t), spotsig_remove(q, t)) >= 0.4, t the template stored for
-- pages.sig by spotsigs_analyze (empty when none is stored or the user may not see it in
-- spotsigs_stats: then the plain similarity at 0.4). The query value holds q's content and the
-- threshold, and names t by the table, the column and the version of the statistics (their
-- analyzed_at): the operator is IMMUTABLE, a function of the value and of that stored version,
-- and raises 55000 once the statistics are replaced (src/pg/template/named.cpp). A value written
-- by hand may carry a template instead (the field template; the name fields NULL). The index
-- searches the content bound, which keeps every content match, and has the executor recheck each
-- row with the operator (docs/content-measure.md). The first two fields are laid out as
-- spotsigs_query's, which the index's cost estimate reads.
--   ORDER BY sig <-> spotsig_content_query(q, 'pages', 'sig')
-- orders by 1 - that content similarity (the threshold plays no part); the index's ordered scan
-- returns lower bounds of it that the executor recomputes (xs_recheckorderby).
CREATE TYPE spotsigs_content_query AS (content spotsig, threshold double precision, template spotsig,
    template_relation regclass, template_column name, template_version timestamp with time zone);
COMMENT ON TYPE spotsigs_content_query IS
    'a query''s content with the threshold and the template it was taken without (carried, or named by table, column and analyzed_at), for sig % spotsig_content_query(q, rel, column)';
-- In C: the statistics are read once per statement's snapshot, with spotsigs_stats's rule for
-- the caller (a scan that rechecks its index condition evaluates the constructor for every row).
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

-- A bare x % y or x <-> y: the planner support of spotsig_similar and spotsig_distance rewrites
-- it, when x (else y) is a column of a table, into
--   x % spotsig_auto_query(y, 'table'::regclass, 'column'::name)     (and <-> alike)
-- whose value, computed when the query runs, is y at a numeric setting with an empty template
-- (the plain similarity, exactly), or under 'auto' spotsig_content_query's value when the column
-- has statistics the user may read in spotsigs_stats, else y at 0.2 with an empty template
-- (src/pg/type/auto_query.cpp; docs/content-measure.md).
CREATE FUNCTION spotsig_auto_query(sig spotsig, rel regclass, sig_column name) RETURNS spotsigs_content_query
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_auto_query(spotsig, regclass, name) IS
    'the right operand a bare % or <-> on rel''s column becomes: by spotsigs.similarity_threshold, or under auto by the column''s statistics';
CREATE FUNCTION spotsig_similar_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER FUNCTION spotsig_similar(spotsig, spotsig) SUPPORT spotsig_similar_support;
ALTER FUNCTION spotsig_distance(spotsig, spotsig) SUPPORT spotsig_similar_support;
