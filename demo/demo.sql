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
\echo '== Near-duplicate pairs at the default threshold (similarity >= spotsigs.similarity_threshold):'
SHOW spotsigs.similarity_threshold;
SELECT a.id AS id1, b.id AS id2, round(similarity(a.sig, b.sig)::numeric, 3) AS similarity,
       a.host AS host1, b.host AS host2, left(a.title, 48) AS title1
FROM pages a JOIN pages b ON a.id < b.id AND a.sig % b.sig
ORDER BY similarity DESC, id1, id2;

\echo
\echo '== Checked against the ground truth (same story = true duplicate):'
WITH found AS (
    SELECT a.story = b.story AS correct FROM pages a JOIN pages b ON a.id < b.id AND a.sig % b.sig
), truth AS (
    SELECT count(*) AS n FROM pages a JOIN pages b ON a.id < b.id AND a.story = b.story
)
SELECT count(*) FILTER (WHERE correct) AS correct_pairs,
       count(*) FILTER (WHERE NOT correct) AS wrong_pairs,
       (SELECT n FROM truth) AS true_pairs
FROM found;
