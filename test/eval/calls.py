"""calls.py: every call of the extension whose meaning may change with the default similarity,
in one place. Edit here, not in eval.py or newuser.py, when the extension renames a measure or
changes how the plain measure is asked for.

Placeholders: {rel} a table with columns id and sig, {tau} a threshold, {pages} the path of a
pages.tsv.gz.
"""

# The paper's plain multiset Jaccard (eq. 4), the measure of Table 1's SpotSigs, shingle and
# LSH rows. PLAIN_SIMILARITY is the brute-force SQL reference that PLAIN_JOIN must equal.
PLAIN_SIMILARITY = 'similarity({a}, {b})'
PLAIN_JOIN = "spotsigs_join('{rel}', 'id', 'sig', {tau})"

# The measure spotsigs_join applies when called without a threshold (the content measure), at an
# explicit threshold: the Table 1 row "spotsigs_join's own measure".
DEFAULT_MEASURE_JOIN = "spotsigs_join('{rel}', 'id', 'sig', {tau}, measure => 'content')"

# The new user's path, as the README tells it (section "Deduplicate a table"): the table with a
# generated signature column, loaded, then ANALYZE.
NEWUSER_LOAD = r"""
CREATE EXTENSION spotsigs;
CREATE TABLE pages (
  id      bigint PRIMARY KEY,
  cluster int,
  host    text,
  kind    text,
  html    text,
  sig     spotsig GENERATED ALWAYS AS (spotsigs(html)) STORED
);
\copy pages (id, cluster, host, kind, html) FROM PROGRAM 'zcat {pages}'
"""
NEWUSER_ANALYZE = 'ANALYZE pages'

# "Old defaults": what the same user got before the template-robust similarity (issue 39),
# plain multiset Jaccard at tau 0.2. "New defaults": the calls with no threshold, on the code
# being evaluated. Joins return (id1, id2, similarity); clusters (id, cluster).
OLD_JOIN = "SELECT id1, id2, similarity FROM spotsigs_join('pages', 'id', 'sig', 0.2)"
OLD_CLUSTERS = "SELECT id, cluster FROM spotsigs_clusters('pages', 'id', 'sig', 0.2)"
NEW_JOIN = "SELECT id1, id2, similarity FROM spotsigs_join('pages', 'id', 'sig')"
NEW_CLUSTERS = "SELECT id, cluster FROM spotsigs_clusters('pages', 'id', 'sig')"
