#!/usr/bin/env bash
# trigger_refresh_incr.sh: where a trigger refresh's time goes (the analysis, the re-flag's join), and
# how many rows the incremental re-flag rule of docs/ingest.md ("Which flags a refresh can change")
# re-judges, checked against the full re-flag. A dev set's rows of smallest id (a fraction F) are
# analyzed and flagged as a refresh leaves them, the other rows inserted in id order and flagged
# with that template (what the trigger gives them in id order), then the statistics are gathered
# again over all rows and both re-flags computed:
#   full: every row's best match among the rows of smaller id (the refresh's statement);
#   incremental: only the rows of D = C + {rows whose match is in C} + {rows r with a match s in C,
#   s < r, under the new template}, C the rows holding a signature that entered or left the template.
# Prints the template sizes, |dT|, |C|, |D|, the rows whose flag the full re-flag changes, the rows
# where the incremental result differs from the full one (must be 0), and each step's time.
# ORDER=random: the other rows go through the trigger (refresh off) in a seeded random order instead,
# so some hold a flag the batch under the old template would not give (a match of larger id, or
# a best match missed among rows inserted later): the rule's premise fails and the incremental
# result may differ from the full one.
# Usage: [ORDER=id|random] test/with-cluster test/eval/trigger_refresh_incr.sh [SET ...]   (default both dev sets)
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=$(cd ../shared 2>/dev/null || cd ../../shared 2>/dev/null || cd /work/shared; pwd)
sets=${*:-newsframes-dev docversions-dev}
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
for set in $sets; do
for frac in 0.8 0.5; do
rnd=; [ "${ORDER:-id}" = random ] && rnd="-v random=1"
q $rnd 2>/dev/null <<SQL
DROP VIEW IF EXISTS refl; DROP TABLE IF EXISTS src, pages, full_ref, told, tnew, dt, crow, drow, dref;
CREATE TABLE src (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'
CREATE TABLE pages (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
INSERT INTO pages SELECT id, spotsigs(html) FROM src WHERE id <= (SELECT percentile_disc($frac) WITHIN GROUP (ORDER BY id) FROM src);
CREATE INDEX ON pages USING spotsigs (sig);
SELECT spotsigs_analyze('pages','sig','id') \g /dev/null
CREATE VIEW refl AS SELECT a.id, b.s_id, b.similarity FROM pages a LEFT JOIN (SELECT DISTINCT ON (j.r_id) j.r_id, j.s_id, j.similarity FROM spotsigs_join_rs('pages','id','sig','pages','id','sig',NULL::float8,NULL::int4,NULL::text,NULL::text) j WHERE j.s_id < j.r_id ORDER BY j.r_id, j.similarity DESC, j.s_id) b ON b.r_id = a.id;
UPDATE pages t SET dup = m.s_id, sim = m.similarity FROM refl m WHERE t.id = m.id;
\\if :{?random}
CREATE TRIGGER flag BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim');
SET spotsigs.trigger_refresh = off;
INSERT INTO pages SELECT id, spotsigs(html) FROM src WHERE id NOT IN (SELECT id FROM pages) ORDER BY md5(id::text || ':1');
DROP TRIGGER flag ON pages;
\\else
INSERT INTO pages SELECT id, spotsigs(html) FROM src WHERE id NOT IN (SELECT id FROM pages);
UPDATE pages t SET dup = m.s_id, sim = m.similarity FROM refl m WHERE t.id = m.id;
\\endif
CREATE TABLE told AS SELECT h.hash FROM spotsigs_stats, spotsig_hashes(template) h WHERE relation='pages'::regclass;
SQL
echo "== $set: analyzed at $frac of the rows (smallest ids), the others in ${ORDER:-id} order, refreshed at all rows; load $(cut -d' ' -f1-3 /proc/loadavg)"
q <<'SQL' | grep -v '^$'
\timing on
\echo analysis (spotsigs_analyze)
SELECT spotsigs_analyze('pages','sig','id') \g /dev/null
\echo full re-flag join (every row)
CREATE TABLE full_ref AS SELECT * FROM refl;
\timing off
CREATE TABLE tnew AS SELECT h.hash FROM spotsigs_stats, spotsig_hashes(template) h WHERE relation='pages'::regclass;
\timing on
\echo incremental: dT, C (through spotsig_hashes in SQL), D, the re-flag join of D
CREATE TABLE dt AS (SELECT hash FROM told EXCEPT SELECT hash FROM tnew) UNION (SELECT hash FROM tnew EXCEPT SELECT hash FROM told);
CREATE TABLE crow AS SELECT p.id, p.sig FROM pages p WHERE EXISTS (SELECT 1 FROM spotsig_hashes(p.sig) h JOIN dt USING (hash));
CREATE TABLE drow AS SELECT p.id, p.sig FROM pages p WHERE p.id IN (SELECT id FROM crow UNION SELECT p2.id FROM pages p2 JOIN crow c ON p2.dup = c.id UNION SELECT j.r_id FROM spotsigs_join_rs('pages','id','sig','crow','id','sig',NULL::float8,NULL::int4,NULL::text,NULL::text) j WHERE j.s_id < j.r_id);
CREATE TABLE dref AS SELECT a.id, b.s_id, b.similarity FROM drow a LEFT JOIN (SELECT DISTINCT ON (j.r_id) j.r_id, j.s_id, j.similarity FROM spotsigs_join_rs('drow','id','sig','pages','id','sig',NULL::float8,NULL::int4,NULL::text,NULL::text) j WHERE j.s_id < j.r_id ORDER BY j.r_id, j.similarity DESC, j.s_id) b ON b.r_id = a.id;
\timing off
SELECT (SELECT count(*) FROM pages) AS rows, (SELECT count(*) FROM told) AS t_old, (SELECT count(*) FROM tnew) AS t_new, (SELECT count(*) FROM dt) AS dt, (SELECT count(*) FROM crow) AS c, (SELECT count(*) FROM drow) AS d,
 (SELECT count(*) FROM full_ref f JOIN pages p USING (id) WHERE (f.s_id, f.similarity) IS DISTINCT FROM (p.dup, p.sim)) AS changed_by_full,
 (SELECT count(*) FROM full_ref f JOIN pages p USING (id) LEFT JOIN dref d USING (id) WHERE (f.s_id, f.similarity) IS DISTINCT FROM (CASE WHEN d.id IS NULL THEN p.dup ELSE d.s_id END, CASE WHEN d.id IS NULL THEN p.sim ELSE d.similarity END)) AS incremental_differs;
SQL
done; done
