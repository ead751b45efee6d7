-- spotsigs_flag_duplicates(): flags as rows arrive (best and first guess), generated spotsig
-- columns, updates, the locked mode, and every misconfiguration error with its SQLSTATE.

-- Runs a statement and shows its SQLSTATE and message instead of failing.
CREATE FUNCTION try(cmd text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE cmd;
  RETURN 'ok';
EXCEPTION WHEN others THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- Short news texts: b1 and b2 differ in two words (similarity 0.548), b3 shares half of them
-- (0.333), b4 is unrelated, b5 has no spot signature at all.
CREATE TABLE texts (name text PRIMARY KEY, body text);
INSERT INTO texts VALUES
('b1', 'The council is expected to vote on the new budget next week. A spokesman said the plan will cut spending on roads and schools. The mayor has said she can not support a budget that does not fund the library. It was the third time this year that the council had delayed the vote. The budget is the largest in the history of the city and will be debated on Monday.'),
('b2', 'The council is expected to vote on the new budget next week. A spokesman said the plan will cut spending on roads and schools. The mayor has said she can not support a budget that does not fund the library. It was the third time this year that the council had delayed the vote. The budget is the largest in the history of the town and will be debated on Tuesday.'),
('b3', 'The council is expected to vote on the new budget next week. A spokesman said the plan will cut spending on roads and schools. The mayor has said she can not support a budget that does not fund the pool. It was the fourth time this year that the council had delayed the vote.'),
('b4', 'A storm is expected to reach the coast on Friday. The weather service said the wind will be strong and the rain can cause floods. Residents have been told to stay at home. It was the worst storm in a decade and the damage is likely to be large.'),
('b5', 'hello world, nothing here');
CREATE FUNCTION t(n text) RETURNS text LANGUAGE sql STABLE AS 'SELECT body FROM texts WHERE name = n';

-- The spotsig column is generated: the trigger computes it from the generation expression.
CREATE TABLE articles (
  id int PRIMARY KEY,
  body text,
  sig spotsig GENERATED ALWAYS AS (spotsigs(body)) STORED,
  duplicate_of int,
  similarity float8);
CREATE TRIGGER articles_dedup BEFORE INSERT OR UPDATE OF body ON articles
  FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'duplicate_of', 'similarity', '0.5', 'best');

-- Without a spotsigs index the trigger refuses to run (it would scan the table for every row).
INSERT INTO articles (id, body) VALUES (1, t('b1'));
SELECT try($$INSERT INTO articles (id, body) VALUES (1, t('b1'))$$);
CREATE INDEX articles_sig ON articles USING spotsigs (sig);
-- The session's own threshold for % is 0.9; the trigger uses its own (0.5) regardless.
SET spotsigs.similarity_threshold = 0.9;

-- Row 20 arrives first; row 10 (the same text) matches it; in one statement, row 30 (the same
-- text again) ties between 10 and 20 and takes the smallest id, row 2 matches the best one,
-- rows 3 and 4 stay below 0.5, an empty signature and a NULL body never match.
INSERT INTO articles (id, body) VALUES (20, t('b1'));
INSERT INTO articles (id, body) VALUES (10, t('b1'));
INSERT INTO articles (id, body) VALUES (30, t('b1')), (2, t('b2')), (3, t('b3')), (4, t('b4')),
                                       (5, t('b5')), (6, NULL), (7, t('b5'));
SELECT id, duplicate_of, round(similarity::numeric, 4) AS similarity, length(sig) AS length
FROM articles ORDER BY id;
-- The generated column PostgreSQL stored equals what the trigger compared.
SELECT count(*) AS stored_signatures_ok FROM articles WHERE sig IS NOT DISTINCT FROM spotsigs(body);
-- The trigger's threshold is set only for its own query: the session's setting is unchanged.
SHOW spotsigs.similarity_threshold;
RESET spotsigs.similarity_threshold;

-- UPDATE OF body flags again, never against the row itself.
UPDATE articles SET body = t('b4') WHERE id = 3;
UPDATE articles SET body = t('b2') WHERE id = 20;
UPDATE articles SET body = t('b3') WHERE id = 4;
SELECT id, duplicate_of, round(similarity::numeric, 4) AS similarity FROM articles WHERE id IN (3, 4, 20) ORDER BY id;

-- Mode 'first': some match at or above tau (which one depends on the index); no similarity column.
CREATE TABLE first_seen (id bigint PRIMARY KEY, sig spotsig, dup bigint);
CREATE INDEX ON first_seen USING spotsigs (sig);
CREATE TRIGGER first_dedup BEFORE INSERT ON first_seen
  FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', '', '0.3', 'first');
INSERT INTO first_seen VALUES (1, spotsigs(t('b1'))), (2, spotsigs(t('b4'))), (3, spotsigs(t('b3')));
INSERT INTO first_seen VALUES (4, spotsigs(t('b2'))), (5, NULL);
SELECT f.id, f.dup IS NOT NULL AS flagged, f.dup < f.id AS earlier,
       similarity(f.sig, e.sig) >= 0.3 AS at_least_tau
FROM first_seen f LEFT JOIN first_seen e ON e.id = f.dup ORDER BY f.id;

-- Mode 'locked' locks the length buckets of the new row's possible matches (object locks of
-- pg_class on the table, the bucket as sub-id; transaction-level, shown here while the
-- transaction is open) and flags as usual.
CREATE TABLE locked_docs (id int PRIMARY KEY, sig spotsig, dup int, sim real);
CREATE INDEX ON locked_docs USING spotsigs (sig);
CREATE TRIGGER locked_dedup BEFORE INSERT ON locked_docs
  FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.5', 'best', 'locked');
BEGIN;
INSERT INTO locked_docs VALUES (1, spotsigs(t('b1'))), (2, spotsigs(t('b2')));
SELECT mode, count(*) FROM pg_locks
WHERE locktype = 'object' AND pid = pg_backend_pid() AND classid = 'pg_class'::regclass
      AND objid = 'locked_docs'::regclass
GROUP BY mode ORDER BY mode;
COMMIT;
SELECT id, dup, sim FROM locked_docs ORDER BY id;
-- ... and refuses transaction snapshots, where a concurrent commit stays invisible.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT try($$INSERT INTO locked_docs VALUES (3, spotsigs(t('b1')))$$);
COMMIT;

-- The buckets a row of 5 signatures locks: lengths 1 to 11 at 0.5; at the smallest thresholds,
-- where 5/tau exceeds every integer (or is infinite), every bucket a stored length can have
-- (1 to 231), never none.
CREATE TABLE tiny_locks (id int PRIMARY KEY, sig spotsig, dup int, sim real);
CREATE INDEX ON tiny_locks USING spotsigs (sig);
CREATE FUNCTION bucket_locks(tau text) RETURNS TABLE (mode text, locks bigint, first_bucket int, last_bucket int)
LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE format('CREATE OR REPLACE TRIGGER tiny_dedup BEFORE INSERT ON tiny_locks FOR EACH ROW
                  EXECUTE FUNCTION spotsigs_flag_duplicates(%L, %L, %L, %L, %L, %L)',
                 'sig', 'dup', 'sim', tau, 'best', 'locked');
  INSERT INTO tiny_locks VALUES (1, '{1,2,3,4,5}');
  DELETE FROM tiny_locks;
  RETURN QUERY SELECT l.mode, count(*), min(l.objsubid)::int, max(l.objsubid)::int FROM pg_locks l
  WHERE l.locktype = 'object' AND l.pid = pg_backend_pid() AND l.classid = 'pg_class'::regclass
        AND l.objid = 'tiny_locks'::regclass
  GROUP BY l.mode ORDER BY l.mode;
END $f$;
SELECT * FROM bucket_locks('0.5');
SELECT * FROM bucket_locks('3e-19');
SELECT * FROM bucket_locks('2e-19');
SELECT * FROM bucket_locks('1e-300');
DROP TABLE tiny_locks;
DROP FUNCTION bucket_locks(text);

-- Misconfiguration: each is an ERROR naming the problem, at the first row.
CREATE TABLE m (id int PRIMARY KEY, body text, sig spotsig, dup int, sim float8, note text,
                gen int GENERATED ALWAYS AS (id + 1) STORED);
CREATE INDEX ON m USING spotsigs (sig);
CREATE FUNCTION try_trigger(args text, timing text DEFAULT 'BEFORE INSERT', level text DEFAULT 'ROW',
                            tbl text DEFAULT 'm') RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('CREATE TRIGGER probe %s ON %I FOR EACH %s EXECUTE FUNCTION spotsigs_flag_duplicates(%s)',
                 timing, tbl, level, args);
  r := try(format('INSERT INTO %I (id, sig) VALUES (1, spotsigs(t(''b1'')))', tbl));
  EXECUTE format('DROP TRIGGER probe ON %I', tbl);
  EXECUTE format('DELETE FROM %I', tbl);
  RETURN r;
END $$;
SELECT try_trigger($$'nosuch', 'dup', 'sim', '0.8'$$);
SELECT try_trigger($$'sig', 'nosuch', 'sim', '0.8'$$);
SELECT try_trigger($$'sig', 'dup', 'nosuch', '0.8'$$);
SELECT try_trigger($$'ctid', 'dup', 'sim', '0.8'$$);
SELECT try_trigger($$'body', 'dup', 'sim', '0.8'$$);
SELECT try_trigger($$'sig', 'note', 'sim', '0.8'$$);
SELECT try_trigger($$'sig', 'dup', 'note', '0.8'$$);
SELECT try_trigger($$'sig', 'gen', 'sim', '0.8'$$);
SELECT try_trigger($$'sig', 'id', 'sim', '0.8'$$);
SELECT try_trigger($$'sig', 'dup', 'dup', '0.8'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '0'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '1.5'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '-0.2'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', 'high'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '1e400'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '1e-400'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', 'NaN'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '1'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '0.8', 'worst'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '0.8', 'best', 'maybe'$$);
SELECT try_trigger($$'sig', 'dup'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '0.8', 'best', 'locked', 'extra'$$);
SELECT try_trigger($$'sig', 'dup', 'sim', '0.8'$$, 'AFTER INSERT');
SELECT try_trigger($$'sig', 'dup', 'sim', '0.8'$$, 'BEFORE INSERT', 'STATEMENT');
CREATE TABLE nopk (id int, sig spotsig, dup int);
CREATE INDEX ON nopk USING spotsigs (sig);
SELECT try_trigger($$'sig', 'dup', '', '0.8'$$, tbl => 'nopk');
CREATE TABLE textpk (id text PRIMARY KEY, sig spotsig, dup int);
CREATE INDEX ON textpk USING spotsigs (sig);
SELECT try_trigger($$'sig', 'dup', '', '0.8'$$, tbl => 'textpk');
-- A BEFORE DELETE trigger is refused when it fires.
CREATE TRIGGER probe BEFORE DELETE ON m FOR EACH ROW
  EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.8');
INSERT INTO m (id) VALUES (1);
SELECT try('DELETE FROM m');
DROP TRIGGER probe ON m;
-- A partial spotsigs index does not count.
CREATE TABLE partial (id int PRIMARY KEY, sig spotsig, dup int);
CREATE INDEX ON partial USING spotsigs (sig) WHERE id > 100;
SELECT try_trigger($$'sig', 'dup', '', '0.8'$$, tbl => 'partial');
-- The error of a missing index, in full.
CREATE TABLE noindex (id int PRIMARY KEY, sig spotsig, dup int);
CREATE TRIGGER noindex_dedup BEFORE INSERT ON noindex
  FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', '', '0.8');
INSERT INTO noindex VALUES (1, spotsigs(t('b1')));
-- Dropping the index is noticed by a session that already used the trigger.
INSERT INTO first_seen VALUES (6, spotsigs(t('b1')));
DROP INDEX first_seen_sig_idx;
SELECT try($$INSERT INTO first_seen VALUES (7, spotsigs(t('b1')))$$);

-- Many rows in families of near duplicates, half of them already in an index segment: the rows
-- inserted in one statement are flagged exactly as a nested-loop reference says (the index leaves
-- some matches for the trigger to verify from the rows, and after its first searches orders them
-- by the counts it remembered).
CREATE FUNCTION fam(i int) RETURNS spotsig LANGUAGE sql AS $$
  SELECT ('{' || string_agg(to_hex(((i % 600) / 5 * 13 + k + CASE WHEN i > 600 AND i % 3 = 0 THEN 1500 ELSE 0 END)
                              % 3000 + 1) || ':' || (1 + k % 3), ',') || '}')::spotsig
  FROM generate_series(0, 15 + i % 25) k WHERE (k + i) % 7 <> 0 $$;
CREATE TABLE fams (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
INSERT INTO fams (id, sig) SELECT i, fam(i) FROM generate_series(1, 600) i;
CREATE INDEX fams_sig ON fams USING spotsigs (sig);
CREATE TRIGGER fams_dedup BEFORE INSERT ON fams
  FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.6', 'best');
INSERT INTO fams (id, sig) SELECT i, fam(i) FROM generate_series(601, 1200) i ORDER BY i;
WITH ref AS (
  SELECT n.id, b.id AS dup, b.s AS sim
  FROM fams n LEFT JOIN LATERAL (
    SELECT e.id, similarity(n.sig, e.sig) AS s FROM fams e
    WHERE e.id < n.id AND similarity(n.sig, e.sig) >= 0.6
    ORDER BY 2 DESC, 1 LIMIT 1) b ON true
  WHERE n.id > 600)
SELECT count(*) AS rows, count(ref.dup) AS flagged,
       count(*) FILTER (WHERE ref.dup IS DISTINCT FROM f.dup OR ref.sim IS DISTINCT FROM f.sim) AS differences
FROM ref JOIN fams f USING (id);

-- Ties stored against key order: 12 identical copies of each of 50 signatures, written in
-- descending id order (so the heap and the index meet the largest id first) and indexed; each new
-- copy must get the smallest id of its 12 equals, whichever the trigger fetches first.
CREATE TABLE tied (id int PRIMARY KEY, sig spotsig, dup int, sim float8);
INSERT INTO tied (id, sig) SELECT i, fam(i % 50 + 1) FROM generate_series(600, 1, -1) i;
CREATE INDEX tied_sig ON tied USING spotsigs (sig);
CREATE TRIGGER tied_dedup BEFORE INSERT ON tied
  FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates('sig', 'dup', 'sim', '0.6', 'best');
INSERT INTO tied (id, sig) SELECT 1000 + j, fam(j) FROM generate_series(1, 50) j;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE sim = 1 AND dup = (SELECT min(e.id) FROM tied e WHERE e.id < 1000 AND e.sig = n.sig)) AS smallest_equal
FROM tied n WHERE id > 1000;

DROP TABLE articles, first_seen, locked_docs, m, nopk, textpk, partial, noindex, texts, fams, tied;
DROP FUNCTION fam(int);
DROP FUNCTION try_trigger(text, text, text, text);
DROP FUNCTION try(text);
DROP FUNCTION t(text);
