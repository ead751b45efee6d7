-- Flagging near duplicates as rows arrive: the spotsigs_flag_duplicates() trigger function.
--
-- CREATE TRIGGER ... BEFORE INSERT OR UPDATE OF body ON t FOR EACH ROW EXECUTE FUNCTION
--   spotsigs_flag_duplicates(spotsig_column, duplicate_column, similarity_column or '',
--                            threshold [, 'best' | 'first' [, 'unlocked' | 'locked']]);
-- The table needs a single-column integer primary key (the value the duplicate column gets) and
-- an index USING spotsigs on the spotsig column. See the README, "Deduplicating as you ingest", and docs/ingest.md.

CREATE FUNCTION spotsigs_flag_duplicates() RETURNS trigger
    AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION spotsigs_flag_duplicates() IS 'BEFORE ROW trigger: sets the duplicate and similarity columns from the most similar (or first) earlier row at or above the threshold';
