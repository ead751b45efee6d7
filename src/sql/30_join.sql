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
-- measure as for spotsigs_join; the content measure's template is the stored one of s
-- (spotsigs_analyze), else of r, else the one computed from the rows of s.
CREATE FUNCTION spotsigs_join_rs(r regclass, r_id_column name, r_sig_column name,
                                 s regclass, s_id_column name, s_sig_column name,
                                 threshold double precision DEFAULT NULL, threads integer DEFAULT NULL,
                                 method text DEFAULT NULL, measure text DEFAULT NULL)
    RETURNS TABLE(r_id bigint, s_id bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'spotsigs_join_rs' LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION spotsigs_join_rs(regclass, name, name, regclass, name, name, double precision, integer, text, text) IS
    'all pairs (r row, s row) whose content or plain multiset Jaccard similarity is >= threshold';

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
