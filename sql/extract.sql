-- Extraction: the paper's example, configurations, HTML, generated columns and errors.
\set SHOW_CONTEXT never
\i sql/include/sqlerr.sql

-- The paper's section 3.2 example: antecedents {a, an, the, is}, distance 1, chain 2.
SELECT * FROM spotsigs_terms('At a rally to kick off a weeklong campaign for the South Carolina primary, Obama tried to set the record straight from an attack circulating widely on the Internet that is designed to play into prejudices against Muslims and fears of terrorism.', ARRAY['a','an','the','is'], 1, 2);

-- the same signatures, hashed from their texts, give the same value
SELECT spotsigs(doc, ARRAY['a','an','the','is'], 1, 2)
     = spotsig_from_terms(ARRAY['a:rally:kick','a:weeklong:campaign','the:south:carolina','the:record:straight',
                                'an:attack:circulating','the:internet:designed','is:designed:play'],
                          ARRAY[1,1,1,1,1,1,1]) AS same
FROM (VALUES ('At a rally to kick off a weeklong campaign for the South Carolina primary, Obama tried to set the record straight from an attack circulating widely on the Internet that is designed to play into prejudices against Muslims and fears of terrorism.')) v(doc);

-- distance 2 (the slides' algorithm): step two tokens, then move past stopwords.
-- tokens: the(0) red(1) fox(2) and(3) a(4) big(5) dog(6) ran(7) far(8)
SELECT * FROM spotsigs_terms('The red fox and a big dog ran far', ARRAY['the'], 2, 3);
-- a chain that reaches the end of the document is cut there; one word is enough
SELECT * FROM spotsigs_terms('Look at the end', ARRAY['the'], 1, 3);
SELECT * FROM spotsigs_terms('Nothing follows the', ARRAY['the'], 1, 3);
-- repeated signatures are counted
SELECT * FROM spotsigs_terms('the cat sat. the cat sat. the dog sat.', ARRAY['the'], 1, 1);

-- several specifications in one call, as in the paper: is(3,1), that(5,2)
SELECT * FROM spotsigs_terms('He said that the old bridge over the river is closed to all heavy traffic until spring repairs end', 'is(3,1), that(5,2)');

-- navigation without antecedents gives the empty value, which is similar to nothing
SELECT spotsigs('Home | World | Sports | Weather | Log in | Subscribe') AS nav;
SELECT similarity(spotsigs('Home | World | Sports'), spotsigs('Home | World | Sports')) AS nav_similarity;

-- HTML: script, style and comments are dropped, entities decoded, tags separate words
SELECT * FROM spotsigs_terms('<html><head><style>p { the: red }</style><script>if (a < b) { the.secret = plan; }</script></head><body><!-- the hidden comment --><p>The caf&eacute; is <b>open</b></p><p>the&nbsp;ÉCOLE&#39;s garden</p></body></html>', ARRAY['the','is'], 1, 2);
-- plain text with a bare '<' is not markup
SELECT * FROM spotsigs_terms('if the price < the cost then the firm loses', ARRAY['the'], 1, 1);

-- the paper's section 4.3.2 example through spotsig_from_terms
WITH d AS (
  SELECT spotsig_from_terms(ARRAY['s1','s2','s3'], ARRAY[5,4,4]) AS d1,
         spotsig_from_terms(ARRAY['s1','s2'], ARRAY[8,4]) AS d2,
         spotsig_from_terms(ARRAY['s1','s2','s3'], ARRAY[4,5,5]) AS d3
)
SELECT similarity(d1, d3) = 0.8 AS d1_d3, similarity(d1, d2) = 9/16::float8 AS d1_d2,
       similarity(d2, d3) = 8/18::float8 AS d2_d3, length(d1), length(d2), length(d3),
       spotsig_distinct(d1)
FROM d;
-- repeated signature texts are added up
SELECT spotsig_from_terms(ARRAY['x','y','x'], ARRAY[1,2,3]) = spotsig_from_terms(ARRAY['y','x'], ARRAY[2,4]) AS summed;

-- generated columns and expression indexes work (IMMUTABLE)
CREATE TABLE extract_articles (id int PRIMARY KEY, body text, sig spotsig GENERATED ALWAYS AS (spotsigs(body)) STORED);
INSERT INTO extract_articles (id, body) VALUES
  (1, 'The senator has said that the new budget is a disaster for the state and its schools.'),
  (2, '<div class="nav">Home</div><p>The senator has said that the new budget is a disaster for the state and its schools.</p>'),
  (3, 'Stocks rose on Monday as the market digested the latest jobs report from the government.'),
  (4, NULL);
SELECT a.id, b.id, similarity(a.sig, b.sig) FROM extract_articles a JOIN extract_articles b ON a.id < b.id ORDER BY 1, 2;
SELECT id, sig IS NULL AS null_sig, length(sig) FROM extract_articles ORDER BY id;
CREATE INDEX extract_articles_sig_hash ON extract_articles USING hash (spotsigs(body));
SELECT count(*) FROM extract_articles GROUP BY sig ORDER BY 1;

-- NULL document: NULL result
SELECT spotsigs(NULL) IS NULL AS a, spotsigs(NULL, ARRAY['the'], 1, 1) IS NULL AS b;

-- errors, with their SQLSTATEs
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['the'], 0, 2)$$);
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['the'], 1, 0)$$);
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['the'], -3, 2)$$);
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['the'], 101, 2)$$);
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['the'], 1, 1000000)$$);
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['the', NULL], 1, 2)$$);
SELECT sqlerr($$SELECT spotsigs('x', NULL::text[], 1, 2)$$);
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['the'], NULL, 2)$$);
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['two words'], 1, 2)$$);
SELECT sqlerr($$SELECT spotsigs('x', ARRAY['the'], 1, 2, ARRAY['of', NULL])$$);
SELECT sqlerr($$SELECT spotsigs('x', 'is(3,1), that(5')$$);
SELECT sqlerr($$SELECT spotsigs('x', 'is(0,1)')$$);
SELECT sqlerr($$SELECT spotsigs('x', NULL::text)$$);
SELECT sqlerr($$SELECT spotsig_from_terms(ARRAY['a','b'], ARRAY[1])$$);
SELECT sqlerr($$SELECT spotsig_from_terms(ARRAY['a'], ARRAY[0])$$);
SELECT sqlerr($$SELECT spotsig_from_terms(ARRAY['a'], ARRAY[-1])$$);
SELECT sqlerr($$SELECT spotsig_from_terms(ARRAY['a', NULL], ARRAY[1, 1])$$);
SELECT sqlerr($$SELECT spotsig_from_terms(ARRAY['a', 'b'], ARRAY[1, NULL])$$);
SELECT sqlerr($$SELECT spotsig_from_terms(ARRAY['a', 'b'], ARRAY[2147483647, 1])$$);
DROP TABLE extract_articles;
-- the one-argument form remembers its last document: repeated and alternating documents
-- still get their own signatures
SELECT i, spotsigs(t)::text AS sig
FROM (VALUES (1, 'the cat sat on the mat and the dog is here'), (2, 'it is a dog of the house'),
             (3, 'the cat sat on the mat and the dog is here'), (4, 'the cat sat on the rug and the dog is here'),
             (5, '')) v(i, t)
ORDER BY i;
