-- The content trigger's template across statements: each statement flags with the template the
-- store holds as the statement sees it (read once per statement, the template itself again only
-- when its version changes): a new version in the writing transaction, the old one again after
-- that transaction rolls back, none once the statistics are gone. Every flag is checked against a
-- brute force over the earlier rows with that template. The refresh is off throughout
-- (sql/trigger_refresh.sql tests it), so only these changes move the template.
SET spotsigs.trigger_refresh = off;

-- The fixture of sql/template_stats.sql: 40 stories in 1-4 copies on 3 sites (a copy differs
-- from the story in every k-th sentence, k from 2 to 6; each page carries its site's
-- 25-sentence template, and the copies of a story are on different sites).
CREATE FUNCTION ttw(a int, b int) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'w' || substr(md5(a::text || ':' || b::text), 1, 6) $$;
CREATE FUNCTION ttstory(s int, variant int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || ttw(s, i) || ' is a ' ||
       CASE WHEN (i + variant) % (2 + s % 5) = 0 THEN ttw(s * 1000 + variant, i) ELSE ttw(s + 100000, i) END ||
       ' that the ' || ttw(s + 200000, i), ' . ' ORDER BY i) FROM generate_series(1, 30) i $$;
CREATE FUNCTION ttsite(k int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT string_agg('the ' || ttw(-k, i) || ' is a ' || ttw(-k - 10, i) || ' that the ' || ttw(-k - 20, i), ' . ' ORDER BY i)
FROM generate_series(1, 25) i $$;
CREATE TABLE ttfix AS
SELECT row_number() OVER (ORDER BY s, v)::int AS id, spotsigs(ttsite((s + v) % 3) || ' . ' || ttstory(s, v)) AS sig
FROM generate_series(1, 40) s, generate_series(1, 1 + s % 4) v;

CREATE TABLE tt (id int PRIMARY KEY, ord int, batch int, sig spotsig, dup int, sim float8);
CREATE INDEX ON tt USING spotsigs (sig);
INSERT INTO tt (id, ord, batch, sig) SELECT id, 0, 0, sig FROM ttfix WHERE id % 2 = 0;
SELECT spotsigs_analyze('tt', 'sig') > 0 AS has_template;
CREATE TRIGGER tt_flag BEFORE INSERT ON tt FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');

-- The batch b of the other rows (id % 6 = 2b - 1), one statement, in a shuffled order.
CREATE FUNCTION tt_insert(b int) RETURNS void LANGUAGE sql SET search_path = public, pg_catalog AS $$
INSERT INTO tt (id, ord, batch, sig)
SELECT id, 1000 * b + row_number() OVER (ORDER BY md5(id::text)), b, sig FROM ttfix
WHERE id % 6 = 2 * b - 1 ORDER BY md5(id::text) $$;
-- The rows of batch b flagged, and those whose flag differs from the best earlier row at or above
-- 0.4 by content similarity against template t (ties to the smallest id).
CREATE FUNCTION tt_check(b int, t spotsig, OUT flagged bigint, OUT differences bigint) LANGUAGE sql
SET search_path = public, pg_catalog AS $$
WITH ref AS (
  SELECT n.id, (SELECT o.id FROM tt o WHERE o.ord < n.ord
                  AND similarity(spotsig_remove(n.sig, t), spotsig_remove(o.sig, t)) >= 0.4
                ORDER BY similarity(spotsig_remove(n.sig, t), spotsig_remove(o.sig, t)) DESC, o.id LIMIT 1) AS dup
  FROM tt n WHERE n.batch = b)
SELECT count(p.dup),
       count(*) FILTER (WHERE r.dup IS DISTINCT FROM p.dup OR p.sim IS DISTINCT FROM
         (SELECT similarity(spotsig_remove(p.sig, t), spotsig_remove(o.sig, t)) FROM tt o WHERE o.id = p.dup))
FROM ref r JOIN tt p USING (id) $$;
CREATE TABLE tt_template AS SELECT template AS t FROM spotsigs_template_store WHERE relation = 'tt'::regclass;

-- Batch 1 with the stored template.
SELECT tt_insert(1);
SELECT * FROM tt_check(1, (SELECT t FROM tt_template));

-- In a transaction that replaces the statistics with an empty template (a new version), batch 2
-- is compared on whole rows; after the rollback, the same batch again with the first template.
BEGIN;
UPDATE spotsigs_template_store SET template = spotsigs(''), analyzed_at = clock_timestamp()
WHERE relation = 'tt'::regclass;
SELECT tt_insert(2);
SELECT * FROM tt_check(2, spotsigs(''));
SELECT differences > 0 AS not_the_first_templates_flags FROM tt_check(2, (SELECT t FROM tt_template));
ROLLBACK;
SELECT tt_insert(2);
SELECT * FROM tt_check(2, (SELECT t FROM tt_template));

-- No statistics: whole rows at 0.4.
DELETE FROM spotsigs_template_store WHERE relation = 'tt'::regclass;
SELECT tt_insert(3);
SELECT * FROM tt_check(3, spotsigs(''));
SELECT differences > 0 AS not_the_first_templates_flags FROM tt_check(3, (SELECT t FROM tt_template));
SELECT count(*) AS rows, count(DISTINCT batch) AS batches FROM tt;

RESET spotsigs.trigger_refresh;
DROP TABLE tt, ttfix, tt_template;
DROP FUNCTION ttw(int, int), ttstory(int, int), ttsite(int), tt_insert(int), tt_check(int, spotsig);
