"""newuser.py: a data set deduplicated exactly as the README tells a new user, with the old
defaults and with the new ones side by side (the SQL of both lives in calls.py).

The user's table goes into a database of its own, so nothing of the Table 1 runs (other tables,
statistics) can influence what the calls see. Pairs of spotsigs_join are scored as returned
(no threshold applied by the scorer); spotsigs_clusters is scored by all unordered pairs of
rows within each returned cluster.
"""
import os
import subprocess
import time

import calls
from db import TIMER_SQL, export, log, one, psql, score, timed

RUNS = (('old', 'join', calls.OLD_JOIN), ('new', 'join', calls.NEW_JOIN),
        ('old', 'clusters', calls.OLD_CLUSTERS), ('new', 'clusters', calls.NEW_CLUSTERS))


def cluster_pairs(table):
    """The query of all unordered pairs (a < b) of rows in one cluster of table(id, cluster)."""
    return ('SELECT x.id, y.id FROM {t} x JOIN {t} y ON x.cluster = y.cluster AND x.id < y.id'
            .format(t=table))


def run(pages, tmp, db='newuser'):
    """Loads pages (a pages.tsv.gz) the README's way into database db, runs the four calls and
    scores them against pages itself; returns a dict of the figures."""
    subprocess.run(['dropdb', '--if-exists', db], check=True)
    subprocess.run(['createdb', db], check=True)
    t0 = time.monotonic()
    psql(calls.NEWUSER_LOAD.format(pages=pages), db)
    load_ms = (time.monotonic() - t0) * 1000
    psql(TIMER_SQL, db)
    res = dict(load_ms=load_ms, analyze_ms=timed(calls.NEWUSER_ANALYZE, db),
               rows=int(one('SELECT count(*) FROM pages', db)),
               setting=one("LOAD 'spotsigs'; SELECT coalesce(current_setting("
                           "'spotsigs.similarity_threshold', true), 'not defined')", db),
               runs=[])
    for which, kind, sql in RUNS:
        log('new user:', which, kind)
        table = 'nu_%s_%s' % (which, kind)
        ms = timed('CREATE TABLE %s AS %s' % (table, sql), db)
        query = ('SELECT id1, id2, similarity FROM %s' % table if kind == 'join'
                 else cluster_pairs(table))
        path = os.path.join(tmp, '%s.txt' % table)
        export(query, path, db)
        s = score(pages, path)
        res['runs'].append(dict(which=which, kind=kind, sql=sql, ms=ms, p=s['precision'],
                                r=s['recall'], f1=s['f1'], pairs=s['pairs']))
    return res


def write(res, out, dataset, code):
    """Writes newuser.md: the side-by-side table and the calls it measured."""
    cols = res['runs']
    head = ['', ] + ['%s defaults: %s' % (c['which'], c['kind']) for c in cols]
    rows = [('P', lambda c: '%.4f' % c['p']), ('R', lambda c: '%.4f' % c['r']),
            ('F1', lambda c: '**%.4f**' % c['f1']), ('pairs', lambda c: '%d' % c['pairs']),
            ('call ms', lambda c: '%.0f' % c['ms'])]
    lines = ['# %s: a new user\'s deduplication, old defaults against new' % dataset, '',
             'Code %s; %d rows; `spotsigs.similarity_threshold` = %s. Loading the table (with the '
             'generated signature column) took %.0f ms, `%s` %.0f ms.' % (
                 code, res['rows'], res['setting'], res['load_ms'], calls.NEWUSER_ANALYZE,
                 res['analyze_ms']), '',
             '| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for name, f in rows:
        lines.append('| %s | %s |' % (name, ' | '.join(f(c) for c in cols)))
    lines += ['', 'Pairs of a `clusters` call: all unordered pairs within each returned cluster. '
              '"call ms": `CREATE TABLE ... AS` the call, timed in the backend.', '',
              'Calls (test/eval/calls.py):', '']
    lines += ['* %s defaults, %s: `%s`' % (c['which'], c['kind'], c['sql']) for c in cols]
    with open(os.path.join(out, 'newuser.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return '\n'.join(lines)
