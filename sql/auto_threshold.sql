-- spotsigs.similarity_threshold = 'auto' (the default): a bare x % y on a table column compares
-- by content at 0.4 against the column's stored template once spotsigs_analyze has run, and is
-- the plain similarity at 0.2 (the default before 'auto') until then; a numeric setting is the
-- plain similarity at that threshold everywhere; a bare x <-> y alike, by the distance 1 - that
-- similarity. Every answer is compared with the brute force.
\i sql/include/sqlerr.sql
-- The brute force runs under enable_seqscan = off too, whose cost of a disabled plan would have
-- every call JIT-compiled (seconds per query on a loaded machine); JIT changes no answer.
SET jit = off;

SELECT length('{}'::spotsig);  -- loads the library, which defines the setting
SHOW spotsigs.similarity_threshold;
SET spotsigs.similarity_threshold = ' AuTo ';
SHOW spotsigs.similarity_threshold;
SELECT sqlerr($$SET spotsigs.similarity_threshold = 'autos'$$);
SELECT sqlerr($$SET spotsigs.similarity_threshold = 'auto 0.5'$$);
SET spotsigs.similarity_threshold = 0.8;
SHOW spotsigs.similarity_threshold;
RESET spotsigs.similarity_threshold;
SHOW spotsigs.similarity_threshold;

-- 30 stories in 1-4 copies on 3 sites, each page carrying its site's 20-sentence template, the
-- copies of a story on one site, differing in every k-th sentence: the plain similarity at 0.2
-- pairs stories of one site through the template; the content similarity at 0.4 does not.
CREATE FUNCTION atw(a int, b int) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'w' || substr(md5(a::text || ':' || b::text), 1, 6) $$;
CREATE FUNCTION astory(s int, variant int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || atw(s, i) || ' is a ' ||
       CASE WHEN (i + variant) % (4 + s % 4) = 0 THEN atw(s * 1000 + variant, i) ELSE atw(s + 100000, i) END ||
       ' that the ' || atw(s + 200000, i), ' . ' ORDER BY i) FROM generate_series(1, 30) i $$;
CREATE FUNCTION asite(k int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || atw(-k, i) || ' is a ' || atw(-k - 10, i) || ' that the ' || atw(-k - 20, i), ' . ' ORDER BY i)
FROM generate_series(1, 20) i $$;
CREATE TABLE apages (id int PRIMARY KEY, sig spotsig);
INSERT INTO apages
SELECT row_number() OVER (ORDER BY s, v)::int, spotsigs(asite(s % 3) || ' . ' || astory(s, v))
FROM generate_series(1, 30) s, generate_series(1, 1 + s % 4) v;
CREATE INDEX apages_sig ON apages USING spotsigs (sig);

-- The reference of one query row: the plain similarity at tau when t is NULL, else the content
-- similarity at 0.4 against t.
CREATE FUNCTION aref(q spotsig, t spotsig, tau float8) RETURNS int[] LANGUAGE sql STABLE AS $$
SELECT coalesce(array_agg(p.id ORDER BY p.id), '{}') FROM apages p
WHERE CASE WHEN t IS NULL THEN similarity(p.sig, q) >= tau
      ELSE similarity(spotsig_remove(p.sig, t), spotsig_remove(q, t)) >= 0.4 END
$$;
CREATE FUNCTION asorted(a int[]) RETURNS int[] LANGUAGE sql IMMUTABLE AS
$$ SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM unnest(a) x $$;
CREATE FUNCTION atemplate() RETURNS spotsig LANGUAGE sql STABLE AS
$$ SELECT template FROM spotsigs_stats WHERE relation = 'apages'::regclass AND sig_column = 'sig' $$;
-- Every row as the query of a bare %, in PL/pgSQL (one cached plan for all calls): how many
-- queries differ from the reference, and how many matches there are in all.
CREATE FUNCTION adiff(mode text, tau float8, OUT differences int, OUT matches int) LANGUAGE plpgsql AS $$
DECLARE
  q record;
  got int[];
  t spotsig := CASE mode WHEN 'content' THEN atemplate() END;
BEGIN
  differences := 0;
  matches := 0;
  FOR q IN SELECT id, sig FROM apages ORDER BY id LOOP
    SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO got FROM apages WHERE sig % q.sig;
    IF got IS DISTINCT FROM aref(q.sig, t, tau) THEN differences := differences + 1; END IF;
    matches := matches + cardinality(got);
  END LOOP;
END $$;

-- The rewrite: the column's side gets spotsig_auto_query of the other side, in either order,
-- and the index serves it.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT p.id FROM apages p, apages q WHERE q.id = 1 AND p.sig % q.sig;
PREPARE acommuted(spotsig) AS SELECT id FROM apages WHERE $1 % sig;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE acommuted(NULL);
RESET plan_cache_mode;
-- Neither side a column: the plain operator, left as written (no index can serve it: a
-- sequential scan, allowed here since 18 marks a disabled one in the plan).
RESET enable_seqscan;
EXPLAIN (COSTS OFF) SELECT p.id FROM apages p WHERE spotsig_remove(p.sig, '{}') % spotsig_remove(p.sig, '{1}');

SET enable_seqscan = off;
-- (a) 'auto' without statistics: the plain similarity at 0.2, through the index and without.
SELECT * FROM adiff('plain', 0.2);
SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT * FROM adiff('plain', 0.2);
RESET enable_indexscan; RESET enable_bitmapscan; SET enable_seqscan = off;

-- A generic plan made now, run again after each change below.
-- The ids are sorted after the aggregate, not by array_agg's ORDER BY, for which 16 and later
-- plan a Sort below the Aggregate that 15 does not show.
PREPARE aone(int) AS
  SELECT asorted(array_agg(p.id)) AS ids FROM apages p, apages q WHERE q.id = $1 AND p.sig % q.sig;
SET plan_cache_mode = force_generic_plan;
EXECUTE aone(7);
SELECT aref(sig, NULL, 0.2) AS plain_02, aref(sig, NULL, 0.5) AS plain_05 FROM apages WHERE id = 7;

-- (b) Analyzed: the content similarity at 0.4 against the stored template, for the function's
-- cached plan and the prepared statement alike.
SELECT spotsigs_analyze('apages', 'sig') > 0 AS has_template;
SELECT * FROM adiff('content', NULL);
EXECUTE aone(7);
SELECT aref(sig, atemplate(), NULL) AS content FROM apages WHERE id = 7;
SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT * FROM adiff('content', NULL);
RESET enable_indexscan; RESET enable_bitmapscan; SET enable_seqscan = off;
EXPLAIN (COSTS OFF) EXECUTE aone(7);

-- (c) A numeric setting: the plain similarity at it, statistics or not; SET LOCAL too.
SET spotsigs.similarity_threshold = 0.5;
SELECT * FROM adiff('plain', 0.5);
EXECUTE aone(7);
SET spotsigs.similarity_threshold = 0.2;
SELECT * FROM adiff('plain', 0.2);
BEGIN;
SET LOCAL spotsigs.similarity_threshold = 0.5;
EXECUTE aone(7);
COMMIT;
EXECUTE aone(7);
RESET spotsigs.similarity_threshold;
EXECUTE aone(7);
RESET plan_cache_mode;

-- (d) A user who may not read the statistics (row-level security applies to them): 'auto' is the
-- plain similarity at 0.2 for them.
CREATE ROLE auto_rls_reader;
GRANT SELECT ON apages TO auto_rls_reader;
ALTER TABLE apages ENABLE ROW LEVEL SECURITY;
CREATE POLICY apages_all ON apages FOR SELECT USING (true);
SET ROLE auto_rls_reader;
SELECT count(*) AS visible_stats FROM spotsigs_stats WHERE relation = 'apages'::regclass;
SELECT coalesce(array_agg(p.id ORDER BY p.id), '{}') AS ids FROM apages p, apages q WHERE q.id = 7 AND p.sig % q.sig;
RESET ROLE;
ALTER TABLE apages DISABLE ROW LEVEL SECURITY;
DROP POLICY apages_all ON apages;
REVOKE ALL ON apages FROM auto_rls_reader;
DROP ROLE auto_rls_reader;

-- (e) The SQL join on a bare %: planned as the join while the column has no statistics (the plain
-- measure at the session's threshold), and by the content measure once it has them.
RESET enable_seqscan;
CREATE TABLE ajoin AS SELECT * FROM apages;
SET enable_nestloop = off; SET enable_hashjoin = off; SET enable_mergejoin = off;
PREPARE ajoined AS SELECT count(*) FROM ajoin a JOIN ajoin b ON a.sig % b.sig;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE ajoined;
EXECUTE ajoined;
SELECT count(*) AS plain_02 FROM ajoin a, ajoin b WHERE similarity(a.sig, b.sig) >= 0.2;
SELECT spotsigs_analyze('ajoin', 'sig', 'id') > 0 AS has_template;
RESET enable_nestloop;
EXPLAIN (COSTS OFF) EXECUTE ajoined;
EXECUTE ajoined;
SELECT count(*) AS content FROM ajoin a, ajoin b, spotsigs_stats s
WHERE s.relation = 'ajoin'::regclass
  AND similarity(spotsig_remove(a.sig, s.template), spotsig_remove(b.sig, s.template)) >= 0.4;
RESET plan_cache_mode; RESET enable_hashjoin; RESET enable_mergejoin;
DEALLOCATE ALL;

-- (f) A bare <-> on the analyzed column under 'auto': 1 - the content similarity against the
-- stored template, served by the index's ordered scan (the executor rechecks its values), as the
-- brute force orders. For every row as the query, in PL/pgSQL (cached plans): the whole order has
-- the brute force's distances in ascending order and every row at its own; LIMIT 5 has the 5
-- smallest distances and every row below the 5th (ties at the 5th may be any of the tied rows;
-- ties_at_limit counts the queries with such a tie). A numeric setting orders by the plain
-- distance, which the content reference tells apart.
CREATE FUNCTION adist(q spotsig, t spotsig) RETURNS TABLE (id int, d float8) LANGUAGE sql STABLE AS $$
SELECT p.id, CASE WHEN t IS NULL THEN 1 - similarity(p.sig, q)
                  ELSE 1 - similarity(spotsig_remove(p.sig, t), spotsig_remove(q, t)) END FROM apages p $$;
CREATE FUNCTION aorder(t spotsig, k int, OUT differences int, OUT ties_at_limit int) LANGUAGE plpgsql AS $$
DECLARE
  q record;
  r record;
  ids int[];
  ds float8[];
  want float8[];
BEGIN
  differences := 0;
  ties_at_limit := 0;
  FOR q IN SELECT id, sig FROM apages ORDER BY id LOOP
    SELECT array_agg(b.d ORDER BY b.d) INTO want FROM adist(q.sig, t) b;
    ids := '{}';
    ds := '{}';
    FOR r IN SELECT id, sig <-> q.sig AS d FROM apages ORDER BY sig <-> q.sig LOOP
      ids := ids || r.id;
      ds := ds || r.d;
    END LOOP;
    IF ds IS DISTINCT FROM want
       OR EXISTS (SELECT FROM unnest(ids, ds) g(id, d) JOIN adist(q.sig, t) b USING (id) WHERE b.d <> g.d) THEN
      differences := differences + 1;
    END IF;
    ids := '{}';
    ds := '{}';
    FOR r IN SELECT id, sig <-> q.sig AS d FROM apages ORDER BY sig <-> q.sig LIMIT k LOOP
      ids := ids || r.id;
      ds := ds || r.d;
    END LOOP;
    IF ds IS DISTINCT FROM want[1:k]
       OR EXISTS (SELECT FROM unnest(ids, ds) g(id, d) JOIN adist(q.sig, t) b USING (id) WHERE b.d <> g.d)
       OR (SELECT array_agg(g.id ORDER BY g.id) FROM unnest(ids, ds) g(id, d) WHERE g.d < want[k]) IS DISTINCT FROM
          (SELECT array_agg(b.id ORDER BY b.id) FROM adist(q.sig, t) b WHERE b.d < want[k]) THEN
      differences := differences + 1;
    END IF;
    IF want[k] = want[k + 1] THEN ties_at_limit := ties_at_limit + 1; END IF;
  END LOOP;
END $$;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM apages ORDER BY sig <-> (SELECT sig FROM apages WHERE id = 7) LIMIT 5;
SELECT * FROM aorder(atemplate(), 5);
SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT * FROM aorder(atemplate(), 5);
RESET enable_indexscan; RESET enable_bitmapscan; SET enable_seqscan = off;
SET spotsigs.similarity_threshold = 0.5;
SELECT * FROM aorder(NULL, 5);
SELECT (aorder(atemplate(), 5)).differences > 0 AS plain_order_differs_from_content;
RESET spotsigs.similarity_threshold;
RESET enable_seqscan;

DROP TABLE apages, ajoin;
DROP FUNCTION aorder(spotsig, int), adist(spotsig, spotsig), adiff(text, float8), aref(spotsig, spotsig, float8), atemplate(), astory(int, int), asite(int), atw(int, int);
