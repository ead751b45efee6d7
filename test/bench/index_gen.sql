-- Generates bench(id, sig) with :copies * 75,400 rows from base(id, sig) (the textcorpus
-- signatures): copy 0 is the corpus itself; copy c >= 1 of a document keeps each signature with
-- probability 1 - 0.07 c and replaces the others by new ones, so every document has near
-- duplicates over a range of similarities (copy 1 about 0.87, copy 13 below 0.1). Ids are shifted
-- by 100,000 per copy. Deterministic (hashint8extended).
\set ON_ERROR_STOP on
DROP TABLE IF EXISTS bench;
CREATE TABLE bench (id bigint, sig spotsig);
ALTER TABLE bench ALTER COLUMN sig SET STORAGE EXTERNAL;
INSERT INTO bench SELECT id, sig FROM base;
SELECT format($f$
INSERT INTO bench
SELECT b.id + %1$s * 100000,
  (SELECT coalesce('{' || string_agg(to_hex(CASE WHEN abs(hashint8extended(h.hash, %1$s) %% 1000) < %2$s
                                                THEN h.hash ELSE hashint8extended(h.hash, %1$s + 1000) END)
                                      || ':' || h.freq, ',') || '}', '{}')::spotsig
   FROM spotsig_hashes(b.sig) h)
FROM base b$f$, c, 1000 - 70 * c)
FROM generate_series(1, :copies - 1) c \gexec
