#!/usr/bin/env python3
"""trigger_refresh_sim.py: replays the ingest trigger without a threshold (mode best) and its
statistics refresh on a dev set, from the content pairs under each template the refresh would
store, and scores the groups (closure of duplicate_of) pairwise against the labels.

The trigger is exact against its template (test/eval/content_trigger_exact.sh), so a row's flag
is a function of the template in force and the rows present: the best match at or above 0.4 among
the rows present when it is inserted, or, after a refresh, among the rows of smaller id present at
the refresh; ties to the smallest id. The replay computes, for each number k of rows a refresh
analyzes, the template of the first k rows of the insertion order (spotsigs_template, the
definition spotsigs_analyze stores) and every pair of the whole set whose content similarity under
it reaches 0.4 (spotsigs_join of the rows without it), then follows the refresh rule row by row.
With the rule as built (factor 1.25, at least 16 rows, the rows present before the new one; factor
2 the rule before) it gives
the figures test/eval/trigger_eval.sh measures through the trigger; other rules can be tried
without building them (--factor, --count-new, --half), and the incremental statistics designed in
docs/content-measure.md (--step N: each row flagged with the template of the rows present, rounded
down to a multiple of N rows and never below the last analysis; the re-flags at the doublings
kept).

Usage: test/with-cluster python3 test/eval/trigger_refresh_sim.py [--sets newsframes-dev,docversions-dev]
           [--seeds 1,2,3] [--modes empty,half] [--factor 1.25] [--count-new] [--half N] [--step N]
"""
import argparse
import collections
import hashlib
import itertools
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get('SHARED', os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared')))
if not os.path.isdir(SHARED):
    SHARED = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..', 'shared'))

SETUP = r"""
CREATE EXTENSION IF NOT EXISTS spotsigs;
CREATE TABLE IF NOT EXISTS sim_template (set text, seed int, k int, PRIMARY KEY (set, seed, k));
CREATE TABLE IF NOT EXISTS sim_pairs (set text, seed int, k int, a int, b int, s float8);
-- The content pairs (>= 0.4) of the whole set under the template of its first k rows in the
-- seed's order (md5(id:seed), as trigger_eval.sh orders them). k = 0: no template (plain at 0.4).
CREATE OR REPLACE FUNCTION sim_pairs_for(tbl text, seed int, k int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t spotsig;
BEGIN
  IF EXISTS (SELECT 1 FROM sim_template x WHERE x.set = tbl AND x.seed = sim_pairs_for.seed AND x.k = sim_pairs_for.k) THEN
    RETURN;
  END IF;
  DROP TABLE IF EXISTS pg_temp.sim_sub;
  DROP TABLE IF EXISTS pg_temp.sim_content;
  EXECUTE format('CREATE TEMP TABLE sim_sub AS SELECT id, sig FROM %I ORDER BY md5(id::text || '':'' || $1) LIMIT $2', tbl)
    USING seed::text, k;
  t := spotsigs_template('pg_temp.sim_sub', 'id', 'sig');
  EXECUTE format('CREATE TEMP TABLE sim_content AS SELECT id, spotsig_remove(sig, $1) AS sig FROM %I', tbl) USING t;
  INSERT INTO sim_pairs SELECT tbl, seed, k, j.id1, j.id2, j.similarity
    FROM spotsigs_join('pg_temp.sim_content', 'id', 'sig', 0.4, measure => 'jaccard') j;
  INSERT INTO sim_template VALUES (tbl, seed, k);
END $$;
"""


def psql(sql):
    out = subprocess.run(['psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-F', '\t', '-c', sql],
                         capture_output=True, text=True, check=True).stdout
    return [line.split('\t') for line in out.splitlines() if line]


def load(name):
    tbl = name.replace('-', '_')
    if not psql(f"SELECT 1 FROM pg_class WHERE relname = '{tbl}'"):
        subprocess.run(['psql', '-Xq', '-v', 'ON_ERROR_STOP=1'], check=True, text=True, input=f"""
CREATE TABLE {tbl} (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\\copy {tbl} from program 'zcat {SHARED}/data/{name}/pages.tsv.gz'
ALTER TABLE {tbl} ADD COLUMN sig spotsig;
UPDATE {tbl} SET sig = spotsigs(html);
""")
    return tbl


class Set:
    def __init__(self, name):
        self.tbl = load(name)
        self.label = {int(i): int(c) for i, c in psql(f"SELECT id, cluster FROM {self.tbl}")}
        by = collections.defaultdict(list)
        for i, c in self.label.items():
            by[c].append(i)
        self.true = {p for g in by.values() for p in itertools.combinations(sorted(g), 2)}
        self.cache = {}

    def order(self, seed):
        return sorted(self.label, key=lambda i: hashlib.md5(f"{i}:{seed}".encode()).hexdigest())

    def pairs(self, seed, k):
        """id -> {id: content similarity >= 0.4} under the template of the first k rows."""
        if (seed, k) not in self.cache:
            psql(f"SELECT sim_pairs_for('{self.tbl}', {seed}, {k})")
            nb = collections.defaultdict(dict)
            for a, b, s in psql(f"SELECT a, b, s FROM sim_pairs WHERE set = '{self.tbl}' AND seed = {seed} AND k = {k}"):
                nb[int(a)][int(b)] = nb[int(b)][int(a)] = float(s)
            self.cache[(seed, k)] = nb
        return self.cache[(seed, k)]

    def score(self, flags):
        parent = {}

        def find(x):
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        for r, m in flags.items():
            if m is not None:
                ra, rb = find(r), find(m[0])
                if ra != rb:
                    parent[ra] = rb
        groups = collections.defaultdict(list)
        for x in list(parent):
            groups[find(x)].append(x)
        pred = {p for g in groups.values() for p in itertools.combinations(sorted(g), 2)}
        tp, fp, fn = len(pred & self.true), len(pred - self.true), len(self.true - pred)
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn)
        return p, r, 2 * p * r / (p + r), tp, fp, fn


def best(nb, r, allowed):
    """The trigger's choice: highest similarity at or above 0.4 among allowed, ties to the smallest id."""
    m = None
    for x, s in nb.get(r, {}).items():
        if x in allowed and (m is None or s > m[1] or (s == m[1] and x < m[0])):
            m = (x, s)
    return m


def replay(st, seed, mode, factor, count_new, half, step=0):
    """mode 'empty': every row through the trigger; 'half': the first half through the trigger, then
    spotsigs_analyze by hand (re-flags nothing, moves the target), then the rest."""
    order = st.order(seed)
    half = len(order) // 2 if half is None else half
    flags, present, seen = {}, [], set()
    analyzed = 0
    for pos, r in enumerate(order):
        if mode == 'half' and pos == half:
            analyzed = len(present)
        target = max(int(analyzed * factor), 16)
        if len(present) + (1 if count_new else 0) >= target:
            analyzed = len(present)
            nb = st.pairs(seed, analyzed)
            for x in present:
                flags[x] = best(nb, x, {y for y in present if y < x})
        k = max(analyzed, len(present) // step * step) if step else analyzed
        flags[r] = best(st.pairs(seed, k), r, seen)
        present.append(r)
        seen.add(r)
    return flags, analyzed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sets', default='newsframes-dev,docversions-dev')
    ap.add_argument('--seeds', default='1,2')
    ap.add_argument('--modes', default='empty,half')
    ap.add_argument('--factor', type=float, default=1.25)
    ap.add_argument('--count-new', action='store_true', help='count the arriving row toward the target')
    ap.add_argument('--half', type=int, default=None, help='rows loaded before the analysis (default half)')
    ap.add_argument('--step', type=int, default=0, help='incremental statistics, the template every N rows')
    a = ap.parse_args()
    psql(SETUP)
    for name in a.sets.split(','):
        st = Set(name)
        for seed in [int(s) for s in a.seeds.split(',')]:
            for mode in a.modes.split(','):
                flags, analyzed = replay(st, seed, mode, a.factor, a.count_new, a.half, a.step)
                p, r, f1, tp, fp, fn = st.score(flags)
                print(f"{name} seed {seed} {mode:5s} factor {a.factor:g}{' count-new' if a.count_new else ''}"
                      f"{'' if a.half is None else f' half {a.half}'}{f' step {a.step}' if a.step else ''} last analyzed {analyzed:5d}  "
                      f"P {p:.4f} R {r:.4f} F1 {f1:.4f} (TP {tp}, FP {fp}, FN {fn})", flush=True)


if __name__ == '__main__':
    main()
