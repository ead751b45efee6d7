#!/usr/bin/env python3
"""eval.py: quality evaluation of spotsigs and the paper's baselines on data sets of pages.

Run by test/eval/run-eval inside a throwaway cluster (PG* variables set), once per data set: a
directory with a pages.tsv.gz (columns id, cluster, host, kind, html; COPY text format), or its
name under ../shared/data. Every method runs in SQL; pairs with similarity >= 0.05 are scored
by score-pairs --sweep (tau 0.05 .. 1.00). Writes to $EVAL_OUT/<data set>/: table1.md,
fine-spotsigs.md, figure6.md, heldout.md, newuser.md, timings.md, sweeps.tsv, data/*.dat, *.png.

Held-out split: clusters with an even id form half A (used for tuning), odd ids half B (held
out); singletons have cluster ids of their own and so fall into one half or the other.
"""
import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time

import calls
import newuser
from db import TIMER_SQL, export, log, one, psql, score as score_file

SHARED_DATA = os.environ.get('EVAL_SHARED_DATA', '../shared/data')
RESULTS = os.environ.get('EVAL_OUT', 'test/eval/results')
DATA = OUT = NAME = None  # the data set being evaluated (set by main())
TMP = tempfile.mkdtemp(prefix='spotsigs-eval-')
atexit.register(shutil.rmtree, TMP, True)
STOPFILE = '/usr/share/postgresql/15/tsearch_data/english.stop'

# The paper's best antecedent set (extract.cpp's default_antecedents()) and other sets of Fig. 6.
ANTECEDENT_SETS = {
    'articles': ['a', 'an', 'the'],
    'articles+is': ['a', 'an', 'the', 'is'],
    'be': ['is', 'are', 'was', 'were', 'be', 'been', 'being', 'am'],
    'be+have+do': ['is', 'are', 'was', 'were', 'be', 'been', 'being', 'am', 'have', 'has', 'had',
                   'having', 'do', 'does', 'did'],
}


def setup():
    """Creates the extension, the timing helper and the pages table; writes the truth files."""
    psql(TIMER_SQL + r"""
CREATE EXTENSION IF NOT EXISTS spotsigs;
DROP TABLE IF EXISTS pages;
CREATE TABLE pages (id int PRIMARY KEY, cluster int NOT NULL, host text, kind text, html text);
\copy pages FROM PROGRAM 'zcat %s'
ANALYZE pages;
""" % DATA)
    rows = psql('SELECT id, cluster FROM pages ORDER BY id')
    halves = {}
    for name, keep in (('all', lambda c: True), ('A', lambda c: c % 2 == 0),
                       ('B', lambda c: c % 2 == 1)):
        path = os.path.join(TMP, 'truth-%s.txt' % name)
        with open(path, 'w') as f:
            f.write('id cluster\n')
            for i, c in rows:
                if keep(int(c)):
                    f.write('%s %s\n' % (i, c))
                    halves.setdefault(name, set()).add(int(i))
    return halves


def sql_array(words):
    """A SQL text[] literal of words."""
    return "ARRAY[%s]::text[]" % ','.join("'%s'" % w.replace("'", "''") for w in words)


def extract(name, expr, idf=None):
    """Builds table sig_<name>(id, sig) from expr over pages.html, optionally IDF-filtered;
    returns the extraction time in ms (extraction + statistics + filter)."""
    ms = float(one("""
DROP TABLE IF EXISTS raw_{n}, stats_{n}, sig_{n};
SELECT eval_ms($q$CREATE TABLE raw_{n} AS SELECT id, {e} AS sig FROM pages$q$);
""".format(n=name, e=expr)))
    if idf is None:
        psql('ALTER TABLE raw_{n} RENAME TO sig_{n}'.format(n=name))
    else:
        ms += float(one("""
SELECT eval_ms($q$CREATE TABLE stats_{n} AS SELECT count(sig) AS n, spotsig_df_agg(sig) AS df FROM raw_{n}$q$)
     + eval_ms($q$CREATE TABLE sig_{n} AS SELECT r.id, spotsig_filter(r.sig, s.df, s.n, {lo}, {hi}) AS sig
                   FROM raw_{n} r, stats_{n} s$q$);
""".format(n=name, lo=idf[0], hi=idf[1])))
    psql('ALTER TABLE sig_{n} ADD PRIMARY KEY (id); ANALYZE sig_{n};'.format(n=name))
    return ms


def sig_stats(name):
    """(distinct signatures over the collection, stored MB) of sig_<name>."""
    r = psql("""SELECT (SELECT count(DISTINCT h.hash) FROM sig_{n}, spotsig_hashes(sig) h),
                       (SELECT sum(pg_column_size(sig)) / 1048576.0 FROM sig_{n})""".format(n=name))[0]
    return int(r[0]), float(r[1])


def match_sql(name, kind, tau, k=6, l=32):
    """The SQL that writes pairs_<name>(a, b, s) of a method at threshold tau. 'jaccard' is the
    plain measure by its exact join, 'sqljaccard' the same measure by a brute-force SQL
    self-join (the reference), 'join' spotsigs_join's own measure."""
    if kind == 'jaccard':
        return 'CREATE TABLE pairs_{n} AS SELECT id1 AS a, id2 AS b, similarity AS s FROM {j}'.format(
            n=name, j=calls.PLAIN_JOIN.format(rel='sig_' + name, tau=tau))
    if kind == 'join':
        return 'CREATE TABLE pairs_{n} AS SELECT id1 AS a, id2 AS b, similarity AS s FROM {j}'.format(
            n=name, j=calls.DEFAULT_MEASURE_JOIN.format(rel='sig_' + name, tau=tau))
    if kind == 'sqljaccard':
        return """CREATE TABLE pairs_{n} AS SELECT x.id AS a, y.id AS b, s FROM sig_{n} x JOIN sig_{n} y
            ON x.id < y.id AND least(length(x.sig), length(y.sig)) >= {t} * greatest(length(x.sig), length(y.sig)),
            LATERAL {f} s WHERE s >= {t}""".format(
                n=name, t=tau, f=calls.PLAIN_SIMILARITY.format(a='x.sig', b='y.sig'))
    if kind == 'cosine':
        return """CREATE TABLE pairs_{n} AS SELECT x.id AS a, y.id AS b, s FROM sig_{n} x JOIN sig_{n} y
            ON x.id < y.id, LATERAL cosine_similarity(x.sig, y.sig) s WHERE s >= {t}""".format(n=name, t=tau)
    if kind == 'imatch':
        return """CREATE TABLE pairs_{n} AS WITH f AS (SELECT id, imatch(sig) AS fp FROM sig_{n})
            SELECT x.id AS a, y.id AS b, 1.0::float8 AS s FROM f x JOIN f y ON x.fp = y.fp AND x.id < y.id""".format(n=name)
    if kind == 'lsh':
        return """CREATE TABLE pairs_{n} AS SELECT id1 AS a, id2 AS b, similarity AS s
            FROM spotsigs_lsh_pairs('sig_{n}', 'id', 'sig', {t}, {k}, {l})""".format(n=name, t=tau, k=k, l=l)
    raise ValueError(kind)


def match(name, kind, tau, k=6, l=32, into=None):
    """Runs the matching of a method at tau into pairs_<name> (or pairs_<into>); returns its time
    in ms."""
    sql = match_sql(name, kind, tau, k, l)
    if into:
        sql = sql.replace('pairs_%s AS' % name, 'pairs_%s AS' % into, 1)
    into = into or name
    return float(one("DROP TABLE IF EXISTS pairs_{i}; SELECT eval_ms($q${s}$q$);".format(i=into, s=sql)))


def score(name, halves):
    """Exports pairs_<name> and scores it on all pages and on halves A and B: {half: sweep json}."""
    path = os.path.join(TMP, 'pairs-%s.txt' % name)
    export('SELECT a, b, s FROM pairs_%s' % name, path)
    out = {}
    for half in ('all', 'A', 'B'):
        src = path
        if half != 'all':
            ids = halves[half]
            src = os.path.join(TMP, 'pairs-%s-%s.txt' % (name, half))
            with open(path) as f, open(src, 'w') as g:
                for ln in f:
                    p = ln.split('\t')
                    if int(p[0]) in ids and int(p[1]) in ids:
                        g.write(ln)
        out[half] = score_file(os.path.join(TMP, 'truth-%s.txt' % half), src, '--sweep')
    return out


def at_tau(sweep, tau):
    """The sweep row of threshold tau."""
    return min(sweep['sweep'], key=lambda row: abs(row['threshold'] - tau))


def best_on(sweep):
    """The sweep row with the best F1 (ties: highest threshold)."""
    return max(sweep['sweep'], key=lambda row: (row['f1'], row['threshold']))


def write_dat(label, sweeps):
    """Writes data/<label>.dat: tau, P, R, F1 for all pages, then for halves A and B."""
    os.makedirs(os.path.join(OUT, 'data'), exist_ok=True)
    with open(os.path.join(OUT, 'data', label + '.dat'), 'w') as f:
        f.write('# tau P R F1 P_A R_A F1_A P_B R_B F1_B\n')
        for i, row in enumerate(sweeps['all']['sweep']):
            a, b = sweeps['A']['sweep'][i], sweeps['B']['sweep'][i]
            f.write('%.2f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f\n' % (
                row['threshold'], row['precision'], row['recall'], row['f1'],
                a['precision'], a['recall'], a['f1'], b['precision'], b['recall'], b['f1']))


def append_sweeps(label, sweeps):
    """Appends the sweeps of one run to sweeps.tsv (which main() starts afresh every run)."""
    with open(os.path.join(OUT, 'sweeps.tsv'), 'a') as f:
        for half in ('all', 'A', 'B'):
            for row in sweeps[half]['sweep']:
                f.write('%s\t%s\t%.2f\t%.4f\t%.4f\t%.4f\t%d\t%d\n' % (
                    label, half, row['threshold'], row['precision'], row['recall'], row['f1'],
                    row['tp'], row['fp']))


def run_method(m, halves, quick):
    """Extracts, matches at 0.05 and scores one method; then times the matching at its best tau.
    The plain measure's pairs come from its exact join; without --quick the brute-force SQL
    self-join runs at the best tau too, timed, and must return exactly the join's pairs."""
    log('method', m['label'])
    n, kind, k, l = m['name'], m['kind'], m.get('k', 6), m.get('l', 32)
    ext_ms = extract(n, m['expr'], m.get('idf'))
    nsig, mb = sig_stats(n)
    sweep_ms = match(n, kind, 0.05, k, l)
    sweeps = score(n, halves)
    best = best_on(sweeps['all'])
    tau = best['threshold']
    join_ms = match_ms = join_ok = None
    if kind in ('jaccard', 'join'):
        join_ms = match(n, kind, tau, into=n + '_best')
        if kind == 'jaccard' and not quick:
            match_ms = match(n, 'sqljaccard', tau, into=n + '_sql')
            join_ok = one("""SELECT count(*) FROM ((SELECT a, b FROM pairs_{n}_best EXCEPT SELECT a, b FROM pairs_{n}_sql)
                UNION ALL (SELECT a, b FROM pairs_{n}_sql EXCEPT SELECT a, b FROM pairs_{n}_best)) x""".format(n=n)) == '0'
    elif kind == 'imatch':
        match_ms = sweep_ms  # no threshold: the run above is the matching
    elif kind == 'lsh' or not quick:
        match_ms = match(n, kind, tau, k, l, into=n + '_best')
    write_dat(n, sweeps)
    append_sweeps(n, sweeps)
    return dict(m, ext_ms=ext_ms, nsig=nsig, mb=mb, match_ms=match_ms, sweeps=sweeps, best=best,
                join_ms=join_ms, join_ok=join_ok)


def fine_sweep(name, best_tau):
    """Scores pairs of run name at tau best_tau -/+ 0.12 in steps of 0.01 (score-pairs
    --threshold) on all pages and both halves; writes fine-<name>.md and returns its rows."""
    lo = max(5, int(round(best_tau * 100)) - 12)
    rows = []
    for i in range(lo, min(100, lo + 24) + 1):
        tau = i / 100.0
        row = [tau]
        for half in ('all', 'A', 'B'):
            src = os.path.join(TMP, 'pairs-%s.txt' % name if half == 'all' else 'pairs-%s-%s.txt' % (name, half))
            j = score_file(os.path.join(TMP, 'truth-%s.txt' % half), src, '--threshold', '%.2f' % tau)
            row += [j['precision'], j['recall'], j['f1']]
        rows.append(row)
    lines = ['| tau | P | R | F1 | F1 (A) | F1 (B) |', '|---|---|---|---|---|---|']
    for row in rows:
        lines.append('| %.2f | %.4f | %.4f | %.4f | %.4f | %.4f |' % (row[0], row[1], row[2], row[3], row[6], row[9]))
    with open(os.path.join(OUT, 'fine-%s.md' % name), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return '\n'.join(lines)


def methods(default_words):
    """The methods of Table 1 (and the cosine variants of Figure 5)."""
    sp = 'spotsigs(html)'
    idf = (0.2, 0.85)
    im = (0.4, 0.75)
    return [
        dict(name='spotsigs', label='SpotSigs (defaults, no IDF)', expr=sp, kind='jaccard'),
        dict(name='spotsigs_join', label="SpotSigs (join's own measure)", expr=sp, kind='join'),
        dict(name='spotsigs_idf', label='SpotSigs (IDF [0.2, 0.85])', expr=sp, idf=idf, kind='jaccard'),
        dict(name='shingle1', label='1-Shingles', expr='shingles(html, 1)', idf=idf, kind='jaccard'),
        dict(name='shingle3', label='3-Shingles', expr='shingles(html, 3)', idf=idf, kind='jaccard'),
        dict(name='lsh', label='LSH-S k=6 l=32', expr=sp, idf=idf, kind='lsh', k=6, l=32, ref='spotsigs_idf'),
        dict(name='lsh_k6_l32', label='LSH-S (no IDF) k=6 l=32', expr=sp, kind='lsh', k=6, l=32, ref='spotsigs'),
        dict(name='lsh_k3_l32', label='LSH-S (no IDF) k=3 l=32', expr=sp, kind='lsh', k=3, l=32, ref='spotsigs'),
        dict(name='lsh_k2_l32', label='LSH-S (no IDF) k=2 l=32', expr=sp, kind='lsh', k=2, l=32, ref='spotsigs'),
        dict(name='imatch', label='I-Match', expr='shingles(html, 1)', idf=im, kind='imatch'),
        dict(name='imatch_s', label='I-Match-S', expr=sp, idf=im, kind='imatch'),
        dict(name='spotsigs_cos', label='SpotSigs, cosine', expr=sp, idf=idf, kind='cosine'),
        dict(name='shingle1_cos', label='1-Shingles, cosine', expr='shingles(html, 1)', idf=idf, kind='cosine'),
    ]


def fmt_idf(m):
    """The IDF range column."""
    return '[%.2f, %.2f]' % m['idf'] if m.get('idf') else 'none'


def table1(results):
    """Writes table1.md: the paper's Table 1 columns, at each method's best tau on all pages."""
    ref = next((r for r in results if r['name'] == 'spotsigs'), results[0])
    lines = ['| method | IDF | tau | k | l | #spots | MB | extraction ms | matching ms (SQL) | spotsigs_join ms | P | R | F1 | SpotSigs F1 gain |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for r in results:
        b = r['best']
        tau = 'n/a' if r['kind'] == 'imatch' else '%.2f' % b['threshold']
        gain = (ref['best']['f1'] / b['f1'] - 1) * 100 if b['f1'] > 0 else float('inf')
        join = 'n/a' if r['join_ms'] is None else '%.0f%s' % (
            r['join_ms'], {None: '', True: '', False: ' (pairs differ!)'}[r['join_ok']])
        lines.append('| %s | %s | %s | %s | %s | %d | %.2f | %.0f | %s | %s | %.3f | %.3f | %.3f | %s |' % (
            r['label'], fmt_idf(r), tau, r.get('k', 'n/a') if r['kind'] == 'lsh' else 'n/a',
            r.get('l', 'n/a') if r['kind'] == 'lsh' else 'n/a', r['nsig'], r['mb'], r['ext_ms'],
            'n/a' if r['match_ms'] is None else '%.0f' % r['match_ms'], join, b['precision'], b['recall'], b['f1'],
            '—' if r is ref else ('%+.1f%%' % gain if b['f1'] > 0 else 'n/a (F1 0)')))
    notes = ['\nLSH-S recall relative to SpotSigs on the same signatures, at the same tau:\n',
             '| LSH-S run | k | l | tau | SpotSigs R | LSH-S R | ratio |', '|---|---|---|---|---|---|---|']
    for lsh in (r for r in results if r['kind'] == 'lsh'):
        ref = next((r for r in results if r['name'] == lsh['ref']), None)
        if ref is None:
            continue
        for tau in sorted({0.1, 0.2, 0.3, 0.44, 0.5, 0.7, 0.9, ref['best']['threshold']}):
            a, b = at_tau(ref['sweeps']['all'], tau), at_tau(lsh['sweeps']['all'], tau)
            notes.append('| %s | %d | %d | %.2f | %.3f | %.3f | %.3f |' % (
                lsh['label'], lsh['k'], lsh['l'], a['threshold'], a['recall'], b['recall'],
                b['recall'] / a['recall'] if a['recall'] else 0))
    with open(os.path.join(OUT, 'table1.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n' + '\n'.join(notes) + '\n')
    return '\n'.join(lines)


def figure6(default_words, halves, quick):
    """Runs SpotSigs (no IDF) over antecedent sets, distances and chains; returns the runs."""
    sets = dict(ANTECEDENT_SETS)
    sets['default'] = default_words
    with open(STOPFILE) as f:
        sets['stopwords'] = [w.strip() for w in f if w.strip()]
    d0, c0 = DEFAULTS
    configs = [(s, d0, c0) for s in sets]
    if not quick:
        for d in (1, 2, 3, 4):
            for c in (1, 2, 3, 4):
                if (d, c) != (d0, c0):
                    configs.append(('default', d, c))
    runs = []
    for s, d, c in configs:
        name = 'f6_%s_%d_%d' % (s.replace('+', '_'), d, c)
        log('figure 6', s, d, c)
        expr = 'spotsigs(html, %s, %d, %d)' % (sql_array(sets[s]), d, c)
        extract(name, expr)
        match(name, 'jaccard', 0.05)
        sw = score(name, halves)
        write_dat(name, sw)
        append_sweeps(name, sw)
        psql('DROP TABLE sig_{n}, pairs_{n}'.format(n=name))
        runs.append(dict(name=name, set=s, d=d, c=c, sweeps=sw))
    return runs


def write_figure6(runs):
    """Writes figure6.md (best F1 per configuration, all pages and both halves) and heldout.md."""
    lines = ['| antecedents | d | c | best tau (all) | F1 (all) | best tau (A) | F1 (A) | F1 (B) at A\'s tau | best F1 (B) |',
             '|---|---|---|---|---|---|---|---|---|']
    for r in runs:
        ba, bA, bB = best_on(r['sweeps']['all']), best_on(r['sweeps']['A']), best_on(r['sweeps']['B'])
        lines.append('| %s | %d | %d | %.2f | %.4f | %.2f | %.4f | %.4f | %.4f |' % (
            r['set'], r['d'], r['c'], ba['threshold'], ba['f1'], bA['threshold'], bA['f1'],
            at_tau(r['sweeps']['B'], bA['threshold'])['f1'], bB['f1']))
    with open(os.path.join(OUT, 'figure6.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    # tuning on half A: best (set, d, c, tau) by A's F1, then its F1 on held-out half B
    tuned = max(runs, key=lambda r: (best_on(r['sweeps']['A'])['f1'], -r['d'], -r['c']))
    bA = best_on(tuned['sweeps']['A'])
    bB = at_tau(tuned['sweeps']['B'], bA['threshold'])
    txt = ('Tuned on half A (even cluster ids): antecedents %s, d=%d, c=%d, tau=%.2f: '
           'A F1 %.4f (P %.4f R %.4f); held-out half B at the same settings: F1 %.4f (P %.4f R %.4f)\n'
           % (tuned['set'], tuned['d'], tuned['c'], bA['threshold'], bA['f1'], bA['precision'],
              bA['recall'], bB['f1'], bB['precision'], bB['recall']))
    with open(os.path.join(OUT, 'heldout.md'), 'w') as f:
        f.write(txt)
    return '\n'.join(lines) + '\n\n' + txt


def write_heldout_methods(results):
    """Appends per-method held-out figures: tau tuned on half A, F1 reported on half B."""
    lines = ['\n| method | tau tuned on A | F1 on A | P on B | R on B | F1 on B | best F1 on B |',
             '|---|---|---|---|---|---|---|']
    for r in results:
        bA = best_on(r['sweeps']['A'])
        label = r['label']
        bB = at_tau(r['sweeps']['B'], bA['threshold'])
        lines.append('| %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f |' % (
            label, 'n/a' if r['kind'] == 'imatch' else '%.2f' % bA['threshold'], bA['f1'],
            bB['precision'], bB['recall'], bB['f1'], best_on(r['sweeps']['B'])['f1']))
    with open(os.path.join(OUT, 'heldout.md'), 'a') as f:
        f.write('\n'.join(lines) + '\n')
    return '\n'.join(lines)


def plot(results, runs):
    """Draws the Figure 5 and Figure 6 PNGs with gnuplot."""
    d = os.path.join(OUT, 'data')
    gp = ['set terminal pngcairo size 1100,600 noenhanced' if has_cairo() else 'set terminal png size 1100,600',
          'set xlabel "tau"', 'set yrange [0:1.02]', 'set xrange [0:1]', 'set key outside right top', 'set grid']
    # Figure 5: F1 against tau, Jaccard methods, cosine methods, and LSH-S against SpotSigs
    groups5 = [('fig5-f1', 'Jaccard', lambda r: r['kind'] in ('jaccard', 'join', 'imatch')),
               ('fig5-cosine', 'cosine (SpotSigs Jaccard for reference)',
                lambda r: r['kind'] == 'cosine' or r['name'] == 'spotsigs'),
               ('fig5-lsh-f1', 'LSH-S against SpotSigs',
                lambda r: r['kind'] == 'lsh' or r['name'] in ('spotsigs', 'spotsigs_idf'))]
    for fname, title, keep in groups5:
        rs = [r for r in results if keep(r)]
        if not rs:
            continue
        gp.append('set output "%s/%s.png"' % (OUT, fname))
        gp.append('set title "F1 against tau, %s (%s, all pages)"; set ylabel "F1"' % (title, NAME))
        gp.append('plot ' + ', '.join('"%s/%s.dat" using 1:4 with linespoints title "%s"' % (d, r['name'], r['label'])
                                      for r in rs))
    for r in results:
        gp.append('set output "%s/fig5-%s.png"' % (OUT, r['name']))
        gp.append('set title "%s: precision, recall and F1 against tau (%s)"; set ylabel ""' % (r['label'], NAME))
        gp.append('plot "{f}" using 1:2 w lp t "precision", "{f}" using 1:3 w lp t "recall", '
                  '"{f}" using 1:4 w lp t "F1"'.format(f='%s/%s.dat' % (d, r['name'])))
    if runs:
        d0, c0 = DEFAULTS
        groups = [('fig6-antecedents', 'antecedent sets (d=%d, c=%d)' % (d0, c0),
                   [r for r in runs if r['d'] == d0 and r['c'] == c0], lambda r: r['set']),
                  ('fig6-distance', 'spot distance (default antecedents, c=%d)' % c0,
                   [r for r in runs if r['set'] == 'default' and r['c'] == c0], lambda r: 'd=%d' % r['d']),
                  ('fig6-chain', 'chain length (default antecedents, d=%d)' % d0,
                   [r for r in runs if r['set'] == 'default' and r['d'] == d0], lambda r: 'c=%d' % r['c'])]
        for fname, title, rs, lab in groups:
            if not rs:
                continue
            gp.append('set output "%s/%s.png"' % (OUT, fname))
            gp.append('set title "SpotSigs F1 against tau: %s (%s)"; set ylabel "F1"' % (title, NAME))
            curves = ', '.join('"%s/%s.dat" using 1:4 with linespoints title "%s"' % (d, r['name'], lab(r))
                               for r in sorted(rs, key=lambda r: (r['d'], r['c'], r['set'])))
            gp.append('plot ' + curves)
            gp.append('set output "%s/%s-zoom.png"; set xrange [0.05:0.5]; set yrange [0.9:1.0]' % (OUT, fname))
            gp.append('plot ' + curves)
            gp.append('set xrange [0:1]; set yrange [0:1.02]')
    subprocess.run(['gnuplot'], input='\n'.join(gp) + '\n', text=True, check=True)


def has_cairo():
    """True when gnuplot offers the pngcairo terminal."""
    r = subprocess.run(['gnuplot', '-e', 'set terminal'], capture_output=True, text=True)
    return 'pngcairo' in (r.stdout + r.stderr)


DEFAULTS = (0, 0)


def dataset(arg):
    """(name, pages.tsv.gz path) of a data set argument: a pages.tsv.gz, a directory holding one,
    or the name of a directory under ../shared/data."""
    path = arg if os.path.exists(arg) else os.path.join(SHARED_DATA, arg)
    if os.path.isdir(path):
        path = os.path.join(path, 'pages.tsv.gz')
    if not os.path.isfile(path):
        sys.exit('no data set %s (looked for %s)' % (arg, path))
    path = os.path.abspath(path)
    return os.path.basename(os.path.dirname(path)), path


def code_version():
    """git describe of the code being evaluated."""
    r = subprocess.run(['git', '-C', os.path.dirname(os.path.abspath(__file__)), 'describe',
                        '--always', '--dirty'], capture_output=True, text=True)
    return r.stdout.strip() or 'unknown'


def evaluate(a, db):
    """Runs the evaluation of the data set in DATA/OUT in database db; returns the timings."""
    global DEFAULTS
    times = []

    def part(label, f, *args):
        t0 = time.monotonic()
        r = f(*args)
        times.append((label, time.monotonic() - t0))
        return r

    os.environ['PGDATABASE'] = db
    if not (a.only or a.no_figure6 or a.no_newuser or a.newuser_only):
        shutil.rmtree(OUT, ignore_errors=True)  # a whole run leaves no file of an earlier one
    os.makedirs(OUT, exist_ok=True)
    if not a.newuser_only:
        open(os.path.join(OUT, 'sweeps.tsv'), 'w').write('run\thalf\ttau\tP\tR\tF1\tTP\tFP\n')
        halves = part('load', setup)
        default_words = [w for w in os.environ.get('EVAL_DEFAULT_ANTECEDENTS', '').split(',') if w]
        if not default_words:
            default_words = read_default_antecedents()
        DEFAULTS = read_default_dc()
        log('default antecedents', default_words, 'd, c =', DEFAULTS)
        same = one("SELECT count(*) FILTER (WHERE spotsigs(html) <> spotsigs(html, %s, %d, %d)) FROM pages"
                   % (sql_array(default_words), DEFAULTS[0], DEFAULTS[1]))
        if same != '0':
            sys.exit('the default antecedents in eval.py differ from the extension\'s (%s pages)' % same)
        ms = methods(default_words)
        if a.only:
            keep = a.only.split(',')
            ms = [m for m in ms if m['name'] in keep]
        results = [part('Table 1: ' + m['name'], run_method, m, halves, a.quick) for m in ms]
        print(table1(results))
        spot = next((r for r in results if r['name'] == 'spotsigs'), None)
        if spot:
            print(part('fine sweep', fine_sweep, 'spotsigs', spot['best']['threshold']))
        runs = [] if a.no_figure6 else part('Figure 6', figure6, default_words, halves, a.quick)
        if runs:
            print(write_figure6(runs))
        print(write_heldout_methods(results))
        part('plots', plot, results, runs)
    if not a.no_newuser:
        res = part('new user', newuser.run, DATA, TMP, db + '_newuser')
        print(newuser.write(res, OUT, NAME, code_version()))
    return times


def write_timings(times):
    """Writes timings.md: the wall-clock seconds of each part of this run."""
    lines = ['# %s: run time of `test/eval/run-eval %s`' % (NAME, ' '.join(sys.argv[1:])), '',
             'Code %s. Wall-clock seconds on the machine the results were made on.' % code_version(), '',
             '| part | s |', '|---|---|']
    lines += ['| %s | %.1f |' % (label, s) for label, s in times]
    lines.append('| **total** | **%.1f** |' % sum(s for _, s in times))
    with open(os.path.join(OUT, 'timings.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    log('\n'.join(lines))


def main():
    """Runs the whole evaluation on each data set given (both dev sets when none is)."""
    global DATA, OUT, NAME
    ap = argparse.ArgumentParser()
    ap.add_argument('datasets', nargs='*', default=['newsframes-dev', 'docversions-dev'],
                    help='pages.tsv.gz files, directories holding one, or names under ../shared/data')
    ap.add_argument('--quick', action='store_true',
                    help='no distance/chain grid, no brute-force SQL timing of the Jaccard and cosine runs')
    ap.add_argument('--only', help='comma-separated method names of Table 1 to run')
    ap.add_argument('--no-figure6', action='store_true')
    ap.add_argument('--no-newuser', action='store_true', help='skip the new user\'s old/new defaults')
    ap.add_argument('--newuser-only', action='store_true', help='only the new user\'s old/new defaults')
    ap.add_argument('--replot', action='store_true', help='redraw the PNGs from results/<data set>/data only')
    a = ap.parse_args()
    for i, arg in enumerate(a.datasets):
        NAME, DATA = dataset(arg)
        OUT = os.path.join(RESULTS, NAME)
        if a.replot:
            replot()
            continue
        log('== data set', NAME, DATA)
        db = 'eval%d' % i
        subprocess.run(['dropdb', '--if-exists', db], check=True)
        subprocess.run(['createdb', db], check=True)
        times = evaluate(a, db)
        if not a.newuser_only:  # newuser.md holds the times of the new user's calls
            write_timings(times)
        log('results in', OUT)


def replot():
    """Redraws the PNGs from the data files of an earlier run (no database needed)."""
    global DEFAULTS
    DEFAULTS = read_default_dc()
    d = os.path.join(OUT, 'data')
    results = [m for m in methods([]) if os.path.exists(os.path.join(d, m['name'] + '.dat'))]
    runs = []
    for f in sorted(os.listdir(d)):
        if f.startswith('f6_'):
            parts = f[3:-4].rsplit('_', 2)
            runs.append(dict(name=f[:-4], set=parts[0].replace('_', '+'), d=int(parts[1]), c=int(parts[2])))
    plot(results, runs)


def read_default_antecedents():
    """The default antecedent set (mirrors default_antecedents() in src/core/extract/stopwords.cpp;
    main() checks that spotsigs(html) equals the explicit call with it)."""
    return ['a', 'an', 'the', 'is', 'are', 'was', 'were', 'be', 'been', 'being', 'am',
            'can', 'could', 'will', 'would', 'have', 'has', 'had', 'having',
            'do', 'does', 'did', 'doing']


def read_default_dc():
    """kDefaultDistance and kDefaultChain from extract.hpp."""
    src = os.path.join(os.path.dirname(__file__), '..', '..', 'src', 'core', 'extract.hpp')
    vals = {}
    for ln in open(src):
        for key in ('kDefaultDistance', 'kDefaultChain'):
            if 'constexpr int %s' % key in ln:
                vals[key] = int(ln.split('=')[1].split(';')[0])
    return vals['kDefaultDistance'], vals['kDefaultChain']


if __name__ == '__main__':
    main()
