-- sqlerr(q): runs q and returns 'ok', or its SQLSTATE, message and detail instead of failing the
-- test. The tests that check errors include it with \i (from the directory pg_regress runs
-- in); OR REPLACE, since they share a database.
CREATE OR REPLACE FUNCTION sqlerr(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  detail text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' / ' || nullif(detail, ''), '');
END $$;
