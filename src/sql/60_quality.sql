-- Quality toolkit: word shingles, collection statistics and IDF-range filtering, I-Match
-- fingerprints, min-hash LSH (LSH-S) and cosine similarity, all on the spotsig type.

CREATE FUNCTION shingles(doc text, n integer) RETURNS spotsig
    AS 'MODULE_PATHNAME', 'spotsigs_shingles' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION shingles(text, integer) IS 'word n-shingles of a document (HTML or plain text), hashed like signatures with words joined by '':''';

-- Document frequencies: spotsig_df_agg(sig) is a spotsig whose frequency of each signature is
-- the number of aggregated rows holding it (NULL rows are skipped). Keep it with count(sig):
--   CREATE TABLE stats AS SELECT count(sig) AS n, spotsig_df_agg(sig) AS df FROM docs;
-- The support functions are IMMUTABLE, as core's (array_agg_transfn): their result depends on
-- their arguments only, the state being the aggregate's own.
CREATE FUNCTION spotsig_df_accum(internal, spotsig) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION spotsig_df_final(internal) RETURNS spotsig
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE AGGREGATE spotsig_df_agg(spotsig) (
    SFUNC = spotsig_df_accum,
    STYPE = internal,
    FINALFUNC = spotsig_df_final
);
COMMENT ON AGGREGATE spotsig_df_agg(spotsig) IS 'document frequencies of the signatures of the aggregated values, as a spotsig';

CREATE FUNCTION spotsig_idf(df bigint, n bigint) RETURNS double precision
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_idf(bigint, bigint) IS 'normalised IDF log(n/df)/log(n) (df 0 counts as 1)';

CREATE FUNCTION spotsig_filter(sig spotsig, df spotsig, n bigint, lo double precision,
                               hi double precision) RETURNS spotsig
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_filter(spotsig, spotsig, bigint, double precision, double precision) IS 'the signatures of sig whose normalised IDF under (df, n) lies in [lo, hi]; unseen signatures have idf 1';

CREATE FUNCTION imatch(sig spotsig) RETURNS bigint
    AS 'MODULE_PATHNAME', 'spotsig_imatch' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION imatch(spotsig) IS 'I-Match fingerprint of the distinct signatures (NULL when empty): equal fingerprints are duplicates';

CREATE FUNCTION spotsig_lsh_keys(sig spotsig, k integer, l integer, seed bigint DEFAULT 0)
    RETURNS bigint[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_lsh_keys(spotsig, integer, integer, bigint) IS 'l min-hash band keys of k rows each: values sharing a key are LSH candidates';

CREATE FUNCTION cosine_similarity(spotsig, spotsig) RETURNS double precision
    AS 'MODULE_PATHNAME', 'spotsig_cosine_similarity' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cosine_similarity(spotsig, spotsig) IS 'cosine of the frequency vectors (plain tf; IDF-filter first to discount common signatures)';

-- LSH-S: the pairs of rows of rel that share at least one band key and whose exact multiset
-- Jaccard similarity is at least threshold (NULL: spotsigs.similarity_threshold). Ids must be
-- castable to bigint. (The candidate pairs are materialised first so that similarity() runs on
-- candidates only.) It runs a query on rel as the caller (privileges and row security apply),
-- so it is PARALLEL RESTRICTED; its search_path is pinned, and the extension's objects are
-- named by their schema, so that no object of the caller's search_path can stand in for them.
CREATE FUNCTION spotsigs_lsh_pairs(rel regclass, id_col name, sig_col name,
                                   threshold double precision, k integer DEFAULT 6,
                                   l integer DEFAULT 32, seed bigint DEFAULT 0)
    RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision)
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    tau double precision := @extschema@.spotsigs_threshold(threshold);
    dup pg_catalog.int8;
BEGIN
    IF rel IS NULL OR id_col IS NULL OR sig_col IS NULL OR k IS NULL OR l IS NULL OR seed IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'spotsigs_lsh_pairs: only the threshold may be NULL';
    END IF;
    -- k and l are checked by the key function itself, also when rel has no row to call it on.
    PERFORM @extschema@.spotsig_lsh_keys('{}'::@extschema@.spotsig, k, l, seed);
    -- The joins' rule: ids unique among the rows whose signature is not NULL (22023).
    EXECUTE pg_catalog.format('SELECT %2$I::pg_catalog.int8 FROM %1$s WHERE %3$I IS NOT NULL AND %2$I IS NOT NULL
                               GROUP BY 1 HAVING pg_catalog.count(*) > 1 LIMIT 1', rel, id_col, sig_col) INTO dup;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = pg_catalog.format('id column of relation %s is not unique', rel),
            DETAIL = pg_catalog.format('The id %s occurs more than once.', dup);
    END IF;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        WITH d AS MATERIALIZED (
            SELECT %2$I::pg_catalog.int8 AS id, %3$I AS sig FROM %1$s WHERE %3$I IS NOT NULL),
        keys AS (SELECT id, pg_catalog.unnest(@extschema@.spotsig_lsh_keys(sig::@extschema@.spotsig, $1, $2, $3)) AS key FROM d),
        cand AS (SELECT DISTINCT a.id AS i, b.id AS j FROM keys a JOIN keys b
                 ON a.key = b.key AND a.id < b.id),
        pairs AS MATERIALIZED (SELECT c.i, c.j, x.sig AS s1, y.sig AS s2
                 FROM cand c JOIN d x ON x.id = c.i JOIN d y ON y.id = c.j)
        SELECT i, j, sim FROM (SELECT i, j, @extschema@.similarity(s1::@extschema@.spotsig, s2::@extschema@.spotsig) AS sim FROM pairs) v
        WHERE sim >= $4$q$, rel, id_col, sig_col)
    USING k, l, seed, tau;
END
$fn$;
COMMENT ON FUNCTION spotsigs_lsh_pairs(regclass, name, name, double precision, integer, integer, bigint) IS 'LSH-S: min-hash banding candidates verified by exact similarity >= threshold';
