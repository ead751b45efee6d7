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
-- The threshold rule of every function with a threshold argument, for the extension's SQL
-- functions: the argument when in (0, 1], spotsigs.similarity_threshold when NULL, else 22023.
CREATE FUNCTION spotsigs_threshold(threshold double precision) RETURNS double precision
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION spotsigs_threshold(double precision) IS 'the threshold to use: the argument if in (0, 1], spotsigs.similarity_threshold if NULL; otherwise an error';
CREATE FUNCTION spotsig_distance(spotsig, spotsig) RETURNS double precision
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR % (
    LEFTARG = spotsig, RIGHTARG = spotsig, PROCEDURE = spotsig_similar,
    COMMUTATOR = %, RESTRICT = contsel, JOIN = contjoinsel
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
    RESTRICT = contsel, JOIN = contjoinsel
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

-- Every pair of rows of rel whose similarity under `measure` is >= threshold, once, with
-- id1 < id2. measure 'content': multiset Jaccard without the collection's template signatures
-- (those whose pages are on average not near duplicates of one another; README "Choosing a
-- threshold and a method"), found anew from the rows read by every call; 'jaccard': the paper's
-- plain multiset Jaccard, similarity(sig1, sig2). measure NULL = 'content' when threshold is NULL
-- too (threshold 0.4), 'jaccard' when a threshold is given (as in 0.1.0). threshold NULL with
-- 'jaccard' = spotsigs.similarity_threshold; threads NULL = spotsigs.max_threads (larger values
-- are capped at it); method NULL = spotsigs.join_method. Rows with a NULL id or signature are
-- skipped; ids must be unique.
CREATE FUNCTION spotsigs_join(rel regclass, id_column name, sig_column name,
                              threshold double precision DEFAULT NULL, threads integer DEFAULT NULL,
                              method text DEFAULT NULL, measure text DEFAULT NULL)
    RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'spotsigs_join' LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION spotsigs_join(regclass, name, name, double precision, integer, text, text) IS
    'all pairs of near-duplicate rows (content or plain multiset Jaccard >= threshold), id1 < id2';

-- Every (r, s) pair of rows with similarity >= threshold: a new crawl r against an archive s.
CREATE FUNCTION spotsigs_join_rs(r regclass, r_id_column name, r_sig_column name,
                                 s regclass, s_id_column name, s_sig_column name,
                                 threshold double precision DEFAULT NULL, threads integer DEFAULT NULL,
                                 method text DEFAULT NULL)
    RETURNS TABLE(r_id bigint, s_id bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'spotsigs_join_rs' LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION spotsigs_join_rs(regclass, name, name, regclass, name, name, double precision, integer, text) IS
    'all pairs (r row, s row) whose signatures have multiset Jaccard similarity >= threshold';

-- Connected components of the near-duplicate graph of spotsigs_join (same arguments): every row
-- with a signature and the smallest id of its component (a row without near duplicates is a
-- cluster of its own).
CREATE FUNCTION spotsigs_clusters(rel regclass, id_column name, sig_column name,
                                  threshold double precision DEFAULT NULL, threads integer DEFAULT NULL,
                                  method text DEFAULT NULL, measure text DEFAULT NULL)
    RETURNS TABLE(id bigint, cluster bigint)
    AS 'MODULE_PATHNAME', 'spotsigs_clusters' LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION spotsigs_clusters(regclass, name, name, double precision, integer, text, text) IS
    'near-duplicate clusters: connected components of the spotsigs_join graph, cluster = smallest id';

-- The content measure's statistics, for use outside the join: the template signatures of a
-- table's rows, and a signature without them. For rows a, b of rel and t = spotsigs_template(rel,
-- id, sig), similarity(spotsig_remove(a.sig, t), spotsig_remove(b.sig, t)) is the similarity
-- spotsigs_join(rel, id, sig, measure => 'content') reports for the pair (as long as the rows
-- are unchanged): store those signatures to use %, the index or the trigger with the content measure.
CREATE FUNCTION spotsigs_template(rel regclass, id_column name, sig_column name) RETURNS spotsig
    AS 'MODULE_PATHNAME', 'spotsigs_template' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_template(regclass, name, name) IS
    'the template signatures of the rows (the content measure leaves them out), each with frequency 1';
CREATE FUNCTION spotsig_remove(sig spotsig, signatures spotsig) RETURNS spotsig
    AS 'MODULE_PATHNAME', 'spotsig_remove' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsig_remove(spotsig, spotsig) IS 'sig without the signatures that occur in the second argument';
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
-- Flagging near duplicates as rows arrive: the spotsigs_flag_duplicates() trigger function.
--
-- CREATE TRIGGER ... BEFORE INSERT OR UPDATE OF body ON t FOR EACH ROW EXECUTE FUNCTION
--   spotsigs_flag_duplicates(spotsig_column, duplicate_column, similarity_column or '',
--                            threshold [, 'best' | 'first' [, 'unlocked' | 'locked']]);
-- The table needs a single-column integer primary key (the value the duplicate column gets) and
-- an index USING spotsigs on the spotsig column. See the README, "Deduplicating as you ingest", and docs/ingest.md.

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
BEGIN
    IF rel IS NULL OR id_col IS NULL OR sig_col IS NULL OR k IS NULL OR l IS NULL OR seed IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'spotsigs_lsh_pairs: only the threshold may be NULL';
    END IF;
    -- k and l are checked by the key function itself, also when rel has no row to call it on.
    PERFORM @extschema@.spotsig_lsh_keys('{}'::@extschema@.spotsig, k, l, seed);
    RETURN QUERY EXECUTE pg_catalog.format($q$
        WITH d AS MATERIALIZED (
            SELECT %2$I::pg_catalog.int8 AS id, %3$I AS sig FROM %1$s WHERE %3$I IS NOT NULL),
        keys AS (SELECT id, pg_catalog.unnest(@extschema@.spotsig_lsh_keys(sig, $1, $2, $3)) AS key FROM d),
        cand AS (SELECT DISTINCT a.id AS i, b.id AS j FROM keys a JOIN keys b
                 ON a.key = b.key AND a.id < b.id),
        pairs AS MATERIALIZED (SELECT c.i, c.j, x.sig AS s1, y.sig AS s2
                 FROM cand c JOIN d x ON x.id = c.i JOIN d y ON y.id = c.j)
        SELECT i, j, sim FROM (SELECT i, j, @extschema@.similarity(s1, s2) AS sim FROM pairs) v
        WHERE sim >= $4$q$, rel, id_col, sig_col)
    USING k, l, seed, tau;
END
$fn$;
COMMENT ON FUNCTION spotsigs_lsh_pairs(regclass, name, name, double precision, integer, integer, bigint) IS 'LSH-S: min-hash banding candidates verified by exact similarity >= threshold';
-- Citus: the similarity joins of a hash-distributed table run on the nodes that hold its shards.
-- spotsigs_join, spotsigs_clusters and spotsigs_join_rs call these when Citus is installed and
-- the relation is distributed; nothing here needs Citus when the extension is created (PL/pgSQL
-- looks up Citus's catalogs and functions only when it runs).
--
-- The split: node v joins the rows of its own shards with each other, and with the rows of the
-- nodes v+1, ..., v+floor((W-1)/2) (mod W; for even W, node v < W/2 also takes v+W/2), fetched
-- shard by shard from those nodes. Every pair of rows then lies in exactly one task: on one node
-- (v's self-join) or on two nodes v and w, of which exactly one takes the other. Only the fetched
-- rows and the pairs cross the network.

-- The rows of rel with an id and a signature, read as the caller and packed for another node
-- (the signatures in their binary form, base64 text): how a task fetches another node's shard,
-- and how a batch travels to the nodes. spotsigs_citus_unpack reads them back.
CREATE FUNCTION spotsigs_citus_pack(rel regclass, id_column name, sig_column name) RETURNS text
    AS 'MODULE_PATHNAME', 'spotsigs_citus_pack' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_citus_pack(regclass, name, name) IS
    'internal: the rows of a table packed for another node (signatures in binary form)';

CREATE FUNCTION spotsigs_citus_unpack(data text) RETURNS TABLE(id bigint, sig spotsig)
    AS 'MODULE_PATHNAME', 'spotsigs_citus_unpack' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION spotsigs_citus_unpack(text) IS 'internal: the rows spotsigs_citus_pack packed';

-- The candidate pairs (pairs left by the join's filters and verified) of the joins this session
-- ran on this node: a task's difference across its joins is its share of the matching work.
CREATE FUNCTION spotsigs_join_candidates() RETURNS bigint
    AS 'MODULE_PATHNAME', 'spotsigs_join_candidates' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION spotsigs_join_candidates() IS
    'the candidate pairs the similarity joins of this session verified so far (diagnostics)';

-- One node's share of a distributed join, run on that node. local_shards: the shards here;
-- remotes: [{"host": h, "port": p, "shards": [name, ...]}, ...], the shards to fetch and pair with
-- the local rows (with "id" and "sig" when their columns are named otherwise than the local ones); batch: rows packed by spotsigs_citus_pack, sent along and paired with the local
-- rows like fetched ones; self_join: whether to pair the local rows with each other too. Returns
-- {"rows", "fetched", "bytes", "candidates", "self": [[id1, id2, sim], ...], "cross": [[local id,
-- other id, sim], ...]} and logs the counts at LOG on this node. extra_float_digits > 0:
-- similarities travel as shortest exact decimals, so the coordinator reads back the very doubles.
CREATE FUNCTION spotsigs_citus_task(local_shards text[], id_column name, sig_column name,
                                    threshold double precision, threads integer, method text,
                                    remotes jsonb, self_join boolean, batch text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp SET extra_float_digits = 1 AS $fn$
DECLARE
    local_q text;
    nrows bigint;
    fetched bigint := 0;
    nbytes bigint := 0;
    nshards integer := 0;
    n bigint;
    group_rows bigint;
    node jsonb;
    shard text;
    ok boolean;
    res text;
    self_pairs jsonb := '[]';
    cross_pairs jsonb := '[]';
    result jsonb;
    candidates bigint := @extschema@.spotsigs_join_candidates();
    started timestamptz := clock_timestamp();
    fetch_started timestamptz;
    fetch_s float8 := 0;
BEGIN
    -- the local rows, as one relation for the join (each name checked to be a local relation)
    SELECT string_agg(format('SELECT %I::bigint AS id, %I AS sig FROM %s', id_column, sig_column,
                             s::regclass), ' UNION ALL ')
      INTO local_q FROM unnest(local_shards) s;
    IF local_q IS NULL THEN
        local_q := format('SELECT NULL::bigint AS id, NULL::@extschema@.spotsig AS sig WHERE false');
    END IF;
    -- The temporary view and table below are this session's own: Citus must not treat them as
    -- DDL to propagate (it refuses that on a worker).
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    IF to_regclass('pg_temp.spotsigs_task_local') IS NOT NULL THEN DROP VIEW pg_temp.spotsigs_task_local; END IF;
    IF to_regclass('pg_temp.spotsigs_task_remote') IS NOT NULL THEN DROP TABLE pg_temp.spotsigs_task_remote; END IF;
    EXECUTE 'CREATE TEMP VIEW spotsigs_task_local AS ' || local_q;
    SELECT count(*) INTO nrows FROM pg_temp.spotsigs_task_local;
    IF self_join THEN
        SELECT coalesce(jsonb_agg(jsonb_build_array(j.id1, j.id2, j.similarity)), '[]') INTO self_pairs
          FROM @extschema@.spotsigs_join('pg_temp.spotsigs_task_local', 'id', 'sig', threshold, threads, method) j;
    END IF;
    -- The other rows, one group at a time (the batch, then each remote node's shards), so that a
    -- task holds its own rows and one other node's at most; each group joined with the local rows.
    CREATE TEMP TABLE spotsigs_task_remote (id bigint, sig @extschema@.spotsig);
    FOR node IN SELECT jsonb_array_elements(CASE WHEN batch IS NULL THEN '[]' ELSE '[{"batch": true}]' END::jsonb
                                            || remotes) LOOP
        TRUNCATE pg_temp.spotsigs_task_remote;
        fetch_started := clock_timestamp();
        IF node ? 'batch' THEN
            INSERT INTO pg_temp.spotsigs_task_remote SELECT * FROM @extschema@.spotsigs_citus_unpack(batch);
            GET DIAGNOSTICS group_rows = ROW_COUNT;
            nbytes := nbytes + octet_length(batch);
        ELSE
            group_rows := 0;
            FOR shard IN SELECT jsonb_array_elements_text(node -> 'shards') LOOP
                SELECT w.success, w.result INTO ok, res
                  FROM pg_catalog.master_run_on_worker(ARRAY[node ->> 'host'], ARRAY[(node ->> 'port')::integer],
                    ARRAY[format('SELECT @extschema@.spotsigs_citus_pack(%L, %L, %L)', shard,
                                 coalesce(node ->> 'id', id_column), coalesce(node ->> 'sig', sig_column))],
                    false) w;
                IF NOT ok THEN
                    RAISE EXCEPTION 'spotsigs: could not read shard % on %:%', shard, node ->> 'host', node ->> 'port'
                        USING ERRCODE = 'XX000', DETAIL = res;
                END IF;
                nbytes := nbytes + octet_length(res);
                nshards := nshards + 1;
                INSERT INTO pg_temp.spotsigs_task_remote SELECT * FROM @extschema@.spotsigs_citus_unpack(res);
                GET DIAGNOSTICS n = ROW_COUNT;
                group_rows := group_rows + n;
            END LOOP;
        END IF;
        fetched := fetched + group_rows;
        fetch_s := fetch_s + extract(epoch FROM clock_timestamp() - fetch_started);
        IF group_rows > 0 THEN
            cross_pairs := cross_pairs || (
                SELECT coalesce(jsonb_agg(jsonb_build_array(j.r_id, j.s_id, j.similarity)), '[]')
                  FROM @extschema@.spotsigs_join_rs('pg_temp.spotsigs_task_local', 'id', 'sig',
                                                    'pg_temp.spotsigs_task_remote', 'id', 'sig', threshold, threads, method) j);
        END IF;
    END LOOP;
    DROP VIEW pg_temp.spotsigs_task_local;
    DROP TABLE pg_temp.spotsigs_task_remote;
    candidates := @extschema@.spotsigs_join_candidates() - candidates;
    result := jsonb_build_object('rows', nrows, 'fetched', fetched, 'bytes', nbytes, 'candidates', candidates,
                                 'self', self_pairs, 'cross', cross_pairs);
    RAISE LOG 'spotsigs_citus_task: % local rows in % shards, % rows (% bytes) fetched from % remote shards, % candidates, % pairs (% bytes returned); % s, % s of them fetching',
        nrows, cardinality(local_shards), fetched, nbytes, nshards, candidates,
        jsonb_array_length(self_pairs) + jsonb_array_length(cross_pairs), octet_length(result::text),
        round(extract(epoch FROM clock_timestamp() - started)::numeric, 2), round(fetch_s::numeric, 2);
    RETURN result;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_task(text[], name, name, double precision, integer, text, jsonb, boolean, text) IS
    'internal: one node''s share of a distributed spotsigs_join or spotsigs_join_rs (called by the coordinator)';

-- Whether rel is a hash-distributed Citus table (false without Citus).
CREATE FUNCTION spotsigs_citus_distributed(rel regclass) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN false;
    END IF;
    RETURN EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = rel AND partmethod = 'h');
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_distributed(regclass) IS 'whether a relation is a hash-distributed Citus table';

-- The nodes holding shards of the hash-distributed rel, each with its shards' qualified names
-- (one placement per shard: the first healthy one), ordered by host and port.
CREATE FUNCTION spotsigs_citus_nodes(rel regclass, OUT host text, OUT port integer, OUT shards jsonb)
    RETURNS SETOF record LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    RETURN QUERY
    SELECT n.nodename::text, n.nodeport,
           jsonb_agg(pg_catalog.shard_name(rel, s.shardid, false) ORDER BY s.shardid)
      FROM pg_catalog.pg_dist_shard s
      CROSS JOIN LATERAL (SELECT p.groupid FROM pg_catalog.pg_dist_placement p
                          WHERE p.shardid = s.shardid AND p.shardstate = 1
                          ORDER BY p.placementid LIMIT 1) p
      JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid AND n.noderole = 'primary'
     WHERE s.logicalrelid = rel
     GROUP BY n.nodename, n.nodeport
     ORDER BY n.nodename, n.nodeport;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_nodes(regclass) IS 'internal: the nodes holding shards of a distributed table, with their shards';

-- Runs one spotsigs_citus_task per node at once through Citus's master_run_on_worker and returns
-- their pairs: a task's own pairs as they are, its cross pairs as (local id, other id) when
-- ordered is false, or with the smaller id first when it is true.
CREATE FUNCTION spotsigs_citus_run(hosts text[], ports integer[], cmds text[], ordered boolean)
    RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    r record;
    res jsonb;
BEGIN
    FOR r IN SELECT m.node_name, m.node_port, m.success, m.result
               FROM pg_catalog.master_run_on_worker(hosts, ports, cmds, true) m LOOP
        IF NOT r.success THEN
            RAISE EXCEPTION 'spotsigs: the join task on %:% failed', r.node_name, r.node_port
                USING ERRCODE = 'XX000', DETAIL = r.result;
        END IF;
        res := r.result::jsonb;
        RETURN QUERY
            SELECT (e ->> 0)::bigint, (e ->> 1)::bigint, (e ->> 2)::float8
              FROM jsonb_array_elements(res -> 'self') e
            UNION ALL
            SELECT CASE WHEN ordered THEN least((e ->> 0)::bigint, (e ->> 1)::bigint) ELSE (e ->> 0)::bigint END,
                   CASE WHEN ordered THEN greatest((e ->> 0)::bigint, (e ->> 1)::bigint) ELSE (e ->> 1)::bigint END,
                   (e ->> 2)::float8
              FROM jsonb_array_elements(res -> 'cross') e;
    END LOOP;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_run(text[], integer[], text[], boolean) IS 'internal: runs spotsigs_citus_task on several nodes at once and returns their pairs';

-- The pairs of a self-join of the hash-distributed rel, each once with id1 < id2, computed by
-- the nodes holding its shards (the split is described at the top of this file).
CREATE FUNCTION spotsigs_citus_join(rel regclass, id_column name, sig_column name,
                                    threshold double precision, threads integer, method text)
    RETURNS TABLE(id1 bigint, id2 bigint, similarity double precision)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    hosts text[];
    ports integer[];
    shards jsonb[];
    cmds text[];
    w integer;
    remotes jsonb;
BEGIN
    SELECT array_agg(n.host), array_agg(n.port), array_agg(n.shards) INTO hosts, ports, shards
      FROM @extschema@.spotsigs_citus_nodes(rel) n;
    IF hosts IS NULL THEN
        RETURN;
    END IF;
    w := cardinality(hosts);
    FOR v IN 0 .. w - 1 LOOP
        SELECT coalesce(jsonb_agg(jsonb_build_object('host', hosts[1 + (v + k) % w], 'port', ports[1 + (v + k) % w],
                                                     'shards', shards[1 + (v + k) % w]) ORDER BY k), '[]')
          INTO remotes
          FROM generate_series(1, w / 2) k
         WHERE k <= (w - 1) / 2 OR v < w / 2;
        cmds[v + 1] := format('SELECT @extschema@.spotsigs_citus_task(%L::text[], %L, %L, %L::float8, %L::integer, %L, %L::jsonb, true)',
                              ARRAY(SELECT jsonb_array_elements_text(shards[v + 1])), id_column, sig_column,
                              threshold, threads, method, remotes);
    END LOOP;
    RETURN QUERY SELECT * FROM @extschema@.spotsigs_citus_run(hosts, ports, cmds, true);
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_join(regclass, name, name, double precision, integer, text) IS
    'internal: spotsigs_join of a hash-distributed table, run on the nodes holding its shards';

-- The (batch row, archive row) pairs of spotsigs_join_rs for a hash-distributed archive. Each
-- node holding shards of the archive pairs its own archive rows with the batch's: a batch that is
-- not distributed is read here once and sent to every such node; a distributed one is fetched by
-- each node from the nodes holding its shards (its own included, through the same path), one
-- node's at a time. When both are distributed, the smaller (citus_table_size) is the one that
-- travels. Returns (batch id, archive id, similarity).
CREATE FUNCTION spotsigs_citus_join_rs(batch regclass, batch_id name, batch_sig name,
                                       archive regclass, archive_id name, archive_sig name,
                                       threshold double precision, threads integer, method text)
    RETURNS TABLE(r_id bigint, s_id bigint, similarity double precision)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    hosts text[];
    ports integer[];
    cmds text[];
    batch_rows text;
    remotes jsonb := '[]';
    empty boolean;
BEGIN
    IF @extschema@.spotsigs_citus_distributed(batch) THEN
        IF pg_catalog.citus_table_size(batch) > pg_catalog.citus_table_size(archive) THEN
            -- the roles swapped: the other side is the smaller (equal sizes do not swap again)
            RETURN QUERY SELECT j.s_id, j.r_id, j.similarity
              FROM @extschema@.spotsigs_citus_join_rs(archive, archive_id, archive_sig,
                                                      batch, batch_id, batch_sig, threshold, threads, method) j;
            RETURN;
        END IF;
        SELECT coalesce(jsonb_agg(jsonb_build_object('host', n.host, 'port', n.port, 'shards', n.shards,
                                                     'id', batch_id, 'sig', batch_sig)), '[]')
          INTO remotes FROM @extschema@.spotsigs_citus_nodes(batch) n;
        empty := jsonb_array_length(remotes) = 0;
    ELSE
        batch_rows := @extschema@.spotsigs_citus_pack(batch, batch_id, batch_sig);
        empty := octet_length(batch_rows) <= 8;  -- the packed format's tag alone: no rows
    END IF;
    SELECT array_agg(n.host), array_agg(n.port),
           array_agg(format('SELECT @extschema@.spotsigs_citus_task(%L::text[], %L, %L, %L::float8, %L::integer, %L, %L::jsonb, false, %L)',
                            ARRAY(SELECT jsonb_array_elements_text(n.shards)), archive_id, archive_sig,
                            threshold, threads, method, remotes, batch_rows))
      INTO hosts, ports, cmds
      FROM @extschema@.spotsigs_citus_nodes(archive) n;
    IF hosts IS NULL OR empty THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT p.id2, p.id1, p.similarity FROM @extschema@.spotsigs_citus_run(hosts, ports, cmds, false) p;
END
$fn$;
COMMENT ON FUNCTION spotsigs_citus_join_rs(regclass, name, name, regclass, name, name, double precision, integer, text) IS
    'internal: spotsigs_join_rs of a batch against a hash-distributed archive, run on the nodes holding its shards';

-- Ingest for tables without the trigger (Citus refuses triggers on distributed tables): after
-- the rows with ids >= first_id have been written (ids increasing in arrival order), flags each
-- of them as spotsigs_flag_duplicates(sig, duplicate, similarity, threshold, 'best') would have,
-- had the rows been inserted one by one in ascending id order: with the row of highest
-- similarity >= threshold among all rows of smaller id (ties to the smallest id), else NULL.
-- The matching is one spotsigs_join_rs of the new rows against the table, so on a distributed
-- table it runs on the workers. Calls on one table are serialized (an advisory lock held until
-- the transaction ends). similarity_column NULL: none. Returns the number of rows flagged.
CREATE FUNCTION spotsigs_flag_batch(target regclass, id_column name, sig_column name,
                                    duplicate_column name, similarity_column name,
                                    threshold double precision, first_id bigint)
    RETURNS bigint LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    n bigint;
    sim_set text := '';
    sim_clear text := '';
BEGIN
    IF target IS NULL OR id_column IS NULL OR sig_column IS NULL OR duplicate_column IS NULL OR first_id IS NULL
       OR threshold IS NULL THEN
        RAISE EXCEPTION 'only similarity_column may be NULL' USING ERRCODE = '22004';
    END IF;
    PERFORM @extschema@.spotsigs_threshold(threshold);  -- the one threshold rule (22023)
    IF similarity_column IS NOT NULL THEN
        sim_set := format(', %I = m.similarity', similarity_column);
        sim_clear := format(', %I = NULL', similarity_column);
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('spotsigs_flag_batch'), target::oid::integer);
    -- left over from a call that failed in a subtransaction the caller caught
    IF to_regclass('pg_temp.spotsigs_flag_new') IS NOT NULL THEN DROP TABLE pg_temp.spotsigs_flag_new; END IF;
    IF to_regclass('pg_temp.spotsigs_flag_match') IS NOT NULL THEN DROP TABLE pg_temp.spotsigs_flag_match; END IF;
    EXECUTE format('CREATE TEMP TABLE spotsigs_flag_new AS SELECT %I::bigint AS id, %I AS sig FROM %s WHERE %I >= $1 AND %I IS NOT NULL',
                   id_column, sig_column, target, id_column, sig_column) USING first_id;
    CREATE TEMP TABLE spotsigs_flag_match AS
      SELECT DISTINCT ON (j.r_id) j.r_id, j.s_id, j.similarity
        FROM @extschema@.spotsigs_join_rs('pg_temp.spotsigs_flag_new', 'id', 'sig', target, id_column, sig_column, threshold) j
       WHERE j.s_id < j.r_id
       ORDER BY j.r_id, j.similarity DESC, j.s_id;
    EXECUTE format('UPDATE %s SET %I = NULL%s WHERE %I >= $1 AND %I IS NOT NULL',
                   target, duplicate_column, sim_clear, id_column, duplicate_column) USING first_id;
    EXECUTE format('UPDATE %s t SET %I = m.s_id%s FROM pg_temp.spotsigs_flag_match m WHERE t.%I = m.r_id',
                   target, duplicate_column, sim_set, id_column);
    GET DIAGNOSTICS n = ROW_COUNT;
    DROP TABLE pg_temp.spotsigs_flag_new, pg_temp.spotsigs_flag_match;
    RETURN n;
END
$fn$;
COMMENT ON FUNCTION spotsigs_flag_batch(regclass, name, name, name, name, double precision, bigint) IS
    'flags the rows with ids >= first_id as the spotsigs_flag_duplicates trigger (best) would, for tables without it (Citus)';
