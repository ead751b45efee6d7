-- Template statistics the database keeps: per (table, spotsig column), the content measure's
-- template signatures, computed from every row by spotsigs_analyze() and used by default by the
-- trigger and the joins (docs/content-measure.md, "Stored statistics").

-- The store. Only spotsigs_analyze() writes it (as the store's owner, after checking that its
-- caller owns the table); nobody else may read or write it: readers use spotsigs_stats. The
-- relation is a regclass so that pg_dump writes it by name and a restore finds the new table's
-- OID; rows of tables dropped since are left out of the dump (and removed by the next analyze).
CREATE TABLE spotsigs_template_store (
    relation regclass NOT NULL,
    sig_column name NOT NULL,
    id_column name NOT NULL,
    rows_analyzed bigint NOT NULL,
    template spotsig NOT NULL,
    analyzed_at timestamp with time zone NOT NULL,
    PRIMARY KEY (relation, sig_column)
);
REVOKE ALL ON spotsigs_template_store FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('spotsigs_template_store',
    'WHERE EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) relation)');

-- Computes and stores the template of rel's sig_column, ordering rows by fmix64 of id_column (the
-- single-column integer primary key when NULL); returns the number of template signatures. Only
-- the table's owner may run it, as for ANALYZE.
CREATE FUNCTION spotsigs_analyze(rel regclass, sig_column name, id_column name DEFAULT NULL) RETURNS integer
    AS 'MODULE_PATHNAME', 'spotsigs_analyze' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION spotsigs_analyze(regclass, name, name) IS
    'computes and stores the content measure''s template of a spotsig column (table owner only)';

-- The stored statistics of the tables the current user may read: like pg_stats, a column shows
-- when the user has SELECT on it and row-level security does not apply to the user on the table
-- (the template summarises every row). security_barrier: a user's own conditions are applied
-- only after the view's.
CREATE VIEW spotsigs_stats WITH (security_barrier) AS
SELECT s.relation, s.sig_column, s.id_column, s.rows_analyzed,
       spotsig_distinct(s.template) AS template_size, s.analyzed_at, s.template
FROM spotsigs_template_store s
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.relation
JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid
     AND a.attname OPERATOR(pg_catalog.=) s.sig_column AND NOT a.attisdropped
WHERE pg_catalog.has_column_privilege(c.oid, a.attnum, 'SELECT')
  AND NOT pg_catalog.row_security_active(c.oid);
GRANT SELECT ON spotsigs_stats TO PUBLIC;
COMMENT ON VIEW spotsigs_stats IS
    'stored template statistics (spotsigs_analyze) of the spotsig columns the current user may read';
