-- The README's demo: 37 crawled-looking news pages (Wikinews stories syndicated into the frames
-- of fictional sites, plus single stories in the same frames). Which pages carry the same story?
\pset footer off
CREATE EXTENSION IF NOT EXISTS spotsigs;

CREATE TABLE pages (
    id    int PRIMARY KEY,
    host  text NOT NULL,
    story int NOT NULL,          -- ground truth, used only to check the answer below
    title text NOT NULL,
    html  text NOT NULL,
    sig   spotsig GENERATED ALWAYS AS (spotsigs(html)) STORED
);
\copy pages (id, host, story, title, html) from 'demo/pages.tsv'

\echo
\echo '== No two pages are byte-identical:'
SELECT count(*) AS pages, count(DISTINCT md5(html)) AS distinct_pages FROM pages;

\echo
\echo '== What spot signatures look like (first page, first 8):'
SELECT signature, freq FROM pages, spotsigs_terms(html) WHERE id = 1 LIMIT 8;

\echo
\echo '== Near-duplicate pairs (spotsigs_join at the default threshold, spotsigs.similarity_threshold):'
SHOW spotsigs.similarity_threshold;
SELECT j.id1, j.id2, round(j.similarity::numeric, 3) AS similarity,
       a.host AS host1, b.host AS host2, left(a.title, 44) AS title1
FROM spotsigs_join('pages', 'id', 'sig') j
JOIN pages a ON a.id = j.id1 JOIN pages b ON b.id = j.id2
ORDER BY j.similarity DESC, j.id1, j.id2
LIMIT 15;

\echo
\echo '== The pages grouped into clusters (spotsigs_clusters; cluster = smallest member id):'
SELECT c.cluster, count(*) AS pages, string_agg(p.host, ', ' ORDER BY p.id) AS sites,
       min(left(p.title, 40)) AS a_title
FROM spotsigs_clusters('pages', 'id', 'sig') c JOIN pages p USING (id)
GROUP BY c.cluster HAVING count(*) > 1
ORDER BY pages DESC, c.cluster;

\echo
\echo '== Checked against the ground truth (same story = true duplicate):'
WITH found AS (
    SELECT a.story = b.story AS correct
    FROM spotsigs_join('pages', 'id', 'sig') j JOIN pages a ON a.id = j.id1 JOIN pages b ON b.id = j.id2
), truth AS (
    SELECT count(*) AS n FROM pages a JOIN pages b ON a.id < b.id AND a.story = b.story
)
SELECT count(*) FILTER (WHERE correct) AS correct_pairs,
       count(*) FILTER (WHERE NOT correct) AS wrong_pairs,
       (SELECT n FROM truth) AS true_pairs
FROM found;
