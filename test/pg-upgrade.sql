-- The tables of test/pg-upgrade (as in test/t/050_upgrade.pl): synthetic stories of 120 words,
-- 4 near-duplicate variants each, a spotsigs index, the trigger, and a row whose value is NULL.
SELECT setseed(0.5);
CREATE TABLE story AS
  SELECT s, i, CASE WHEN random() < 0.3
                    THEN (ARRAY['the','a','is','was','will','can','has','does'])[1 + floor(random() * 8)::int]
                    ELSE 'w' || floor(random() * 5000)::int END AS word
  FROM generate_series(1, 40) s, generate_series(1, 120) i;
CREATE TABLE src AS
  SELECT 4 * (s - 1) + v AS n,
         string_agg(CASE WHEN random() < 0.02 THEN 'x' || floor(random() * 5000)::int ELSE word END, ' ' ORDER BY i) AS body
  FROM story, generate_series(1, 4) v GROUP BY s, v;
CREATE TABLE docs (
  id int PRIMARY KEY,
  body text,
  sig spotsig GENERATED ALWAYS AS (spotsigs(body)) STORED,
  duplicate_of int,
  similarity float8);
CREATE INDEX docs_sig ON docs USING spotsigs (sig);
CREATE TRIGGER docs_dedup BEFORE INSERT OR UPDATE OF body ON docs
  FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'duplicate_of', 'similarity', '0.6', 'best');
INSERT INTO docs (id, body) VALUES (1000, NULL);
