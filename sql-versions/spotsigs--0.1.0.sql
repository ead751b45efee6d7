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
-- The similarity join: all pairs of near-duplicate documents of a table (paper section 4).

-- Every pair of rows of rel with similarity(sig1, sig2) >= threshold, once, with id1 < id2.
-- threshold NULL = spotsigs.similarity_threshold; threads NULL = spotsigs.max_threads (larger
-- values are capped at it); method NULL = spotsigs.join_method. Rows with a NULL id or
-- signature are skipped; ids must be unique.
CREATE FUNCTION spotsigs_join(rel regclass, id_column name, sig_column name,
                              threshold double precision DEFAULT NULL, threads integer DEFAULT NULL,
                              method text DEFAULT NULL)
    RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'spotsigs_join' LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION spotsigs_join(regclass, name, name, double precision, integer, text) IS
    'all pairs of near-duplicate rows (multiset Jaccard of the signatures >= threshold), id1 < id2';

-- Every (r, s) pair of rows with similarity >= threshold: a new crawl r against an archive s.
CREATE FUNCTION spotsigs_join_rs(r regclass, r_id_column name, r_sig_column name,
                                 s regclass, s_id_column name, s_sig_column name,
                                 threshold double precision DEFAULT NULL, threads integer DEFAULT NULL,
                                 method text DEFAULT NULL)
    RETURNS TABLE(r_id bigint, s_id bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'spotsigs_join_rs' LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION spotsigs_join_rs(regclass, name, name, regclass, name, name, double precision, integer, text) IS
    'all pairs (r row, s row) whose signatures have multiset Jaccard similarity >= threshold';

-- Connected components of the near-duplicate graph: every row with a signature and the smallest
-- id of its component (a row without near duplicates is a cluster of its own).
CREATE FUNCTION spotsigs_clusters(rel regclass, id_column name, sig_column name,
                                  threshold double precision DEFAULT NULL, threads integer DEFAULT NULL,
                                  method text DEFAULT NULL)
    RETURNS TABLE(id bigint, cluster bigint)
    AS 'MODULE_PATHNAME', 'spotsigs_clusters' LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION spotsigs_clusters(regclass, name, name, double precision, integer, text) IS
    'near-duplicate clusters: connected components of the spotsigs_join graph, cluster = smallest id';
-- The spotsigs index access method: % (threshold) and ORDER BY <-> (nearest first) over spotsig.

CREATE FUNCTION spotsigs_handler(internal) RETURNS index_am_handler
    AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD spotsigs TYPE INDEX HANDLER spotsigs_handler;
COMMENT ON ACCESS METHOD spotsigs IS 'length-partitioned inverted index of spot signatures for % and <->';

CREATE OPERATOR CLASS spotsig_ops DEFAULT FOR TYPE spotsig USING spotsigs AS
    OPERATOR 1 % (spotsig, spotsig),
    OPERATOR 2 <-> (spotsig, spotsig) FOR ORDER BY float_ops;

CREATE FUNCTION spotsigs_index_check(index regclass) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_index_check(regclass) IS 'verifies the structure of a spotsigs index; raises XX002 when it is corrupt';

CREATE FUNCTION spotsigs_index_stats(index regclass,
    OUT segment integer, OUT partition integer, OUT min_length bigint, OUT max_length bigint,
    OUT rows bigint, OUT lists bigint, OUT postings bigint) RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_index_stats(regclass) IS 'rows, posting lists and postings per segment and length partition (segment -1: pending list)';
-- Flagging near duplicates as rows arrive: the spotsigs_flag_duplicates() trigger function.
--
-- CREATE TRIGGER ... BEFORE INSERT OR UPDATE OF body ON t FOR EACH ROW EXECUTE FUNCTION
--   spotsigs_flag_duplicates(spotsig_column, duplicate_column, similarity_column or '',
--                            threshold [, 'best' | 'first' [, 'unlocked' | 'locked']]);
-- The table needs a single-column integer primary key (the value the duplicate column gets) and
-- an index USING spotsigs on the spotsig column. See the README, "Deduplicate as you ingest".

CREATE FUNCTION spotsigs_flag_duplicates() RETURNS trigger
    AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION spotsigs_flag_duplicates() IS 'BEFORE ROW trigger: sets the duplicate and similarity columns from the most similar (or first) earlier row at or above the threshold';
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
