"""db.py: the evaluation's access to PostgreSQL (psql) and to the scorer (score-pairs)."""
import json
import os
import subprocess
import sys

SCORER = os.environ.get('EVAL_SCORER', '../shared/tools/score-pairs')

# eval_ms(q) runs q and returns its wall-clock time in ms, measured inside the backend.
TIMER_SQL = r"""
CREATE OR REPLACE FUNCTION eval_ms(q text) RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE q;
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;
"""


def log(*a):
    """Prints a progress line to stderr."""
    print(*a, file=sys.stderr, flush=True)


def psql(sql, db=None):
    """Runs SQL through psql (database db, else $PGDATABASE) and returns the rows of its last
    result as lists of strings."""
    cmd = ['psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-F', '\t', '-f', '-']
    if db:
        cmd += ['-d', db]
    r = subprocess.run(cmd, input=sql, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('psql failed: %s\n--- SQL:\n%s' % (r.stderr, sql[:2000]))
    return [ln.split('\t') for ln in r.stdout.splitlines() if ln != '']


def one(sql, db=None):
    """The single value of a one-row, one-column query."""
    return psql(sql, db)[0][0]


def timed(sql, db=None):
    """Runs one SQL statement through eval_ms(); returns its time in ms."""
    return float(one('SELECT eval_ms($q$%s$q$)' % sql, db))


def export(query, path, db=None):
    """Writes the rows of query to path (tab-separated) with \\copy."""
    psql("\\copy (%s) TO '%s'" % (query, path), db)


def score(truth, pairs, *opts):
    """score-pairs TRUTH PAIRS OPTS --json, parsed."""
    r = subprocess.run([sys.executable, SCORER, truth, pairs] + list(opts) + ['--json'],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)
