-- Quality toolkit: word shingles, collection statistics and IDF-range filtering, I-Match
-- fingerprints, min-hash LSH (LSH-S) and cosine similarity, all on the spotsig type.

CREATE FUNCTION shingles(doc text, n integer) RETURNS spotsig
    AS 'MODULE_PATHNAME', 'spotsigs_shingles' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION shingles(text, integer) IS 'word n-shingles of a document (HTML or plain text), hashed like signatures with words joined by '':''';

-- Document frequencies: spotsig_df_agg(sig) is a spotsig whose frequency of each signature is
-- the number of aggregated rows holding it (NULL rows are skipped). Keep it with count(sig):
--   CREATE TABLE stats AS SELECT count(sig) AS n, spotsig_df_agg(sig) AS df FROM docs;
CREATE FUNCTION spotsig_df_accum(internal, spotsig) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;
CREATE FUNCTION spotsig_df_final(internal) RETURNS spotsig
    AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;
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
-- Jaccard similarity is at least threshold. Ids must be castable to bigint. (The candidate
-- pairs are materialised first so that similarity() runs on candidates only.)
CREATE FUNCTION spotsigs_lsh_pairs(rel regclass, id_col name, sig_col name,
                                   threshold double precision, k integer DEFAULT 6,
                                   l integer DEFAULT 32, seed bigint DEFAULT 0)
    RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision)
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $fn$
BEGIN
    RETURN QUERY EXECUTE format($q$
        WITH d AS MATERIALIZED (
            SELECT %2$I::bigint AS id, %3$I AS sig FROM %1$s WHERE %3$I IS NOT NULL),
        keys AS (SELECT id, unnest(@extschema@.spotsig_lsh_keys(sig, $1, $2, $3)) AS key FROM d),
        cand AS (SELECT DISTINCT a.id AS i, b.id AS j FROM keys a JOIN keys b
                 ON a.key = b.key AND a.id < b.id),
        pairs AS MATERIALIZED (SELECT c.i, c.j, x.sig AS s1, y.sig AS s2
                 FROM cand c JOIN d x ON x.id = c.i JOIN d y ON y.id = c.j)
        SELECT i, j, sim FROM (SELECT i, j, @extschema@.similarity(s1, s2) AS sim FROM pairs) v
        WHERE sim >= $4$q$, rel, id_col, sig_col)
    USING k, l, seed, threshold;
END
$fn$;
COMMENT ON FUNCTION spotsigs_lsh_pairs(regclass, name, name, double precision, integer, integer, bigint) IS 'LSH-S: min-hash banding candidates verified by exact similarity >= threshold';
