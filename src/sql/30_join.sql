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
