#!/usr/bin/env bash
# join_rs_eval.sh: spotsigs_join_rs of one half of a dev set (a new crawl, even ids) against the
# other (the archive, odd ids), scored on the cross pairs: the true pairs are (r, s) rows of one
# labelled cluster. Calls: the default (content measure; the archive analyzed first, and not),
# and the plain measure at 0.2 (spotsigs.similarity_threshold's default) and 0.8.
# Usage: test/with-cluster test/eval/join_rs_eval.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=$(cd ../shared 2>/dev/null || cd ../../shared; pwd)
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
q -c 'CREATE EXTENSION IF NOT EXISTS spotsigs'
for set in newsframes-dev docversions-dev; do
  q <<SQL
DROP TABLE IF EXISTS src, crawl, archive;
CREATE TABLE src (id int PRIMARY KEY, cluster int, host text, kind text, html text);
\copy src from program 'zcat $shared/data/$set/pages.tsv.gz'
CREATE TABLE crawl AS SELECT id, cluster, spotsigs(html) AS sig FROM src WHERE id % 2 = 0;
CREATE TABLE archive AS SELECT id, cluster, spotsigs(html) AS sig FROM src WHERE id % 2 = 1;
ALTER TABLE crawl ADD PRIMARY KEY (id);
ALTER TABLE archive ADD PRIMARY KEY (id);
SQL
  for call in "content, archive not analyzed|" "content, archive analyzed|SELECT spotsigs_analyze('archive', 'sig');" \
              "plain 0.2|0.2" "plain 0.8|0.8"; do
    name=${call%%|*}; arg=${call#*|}
    extra=""; pre=""
    case "$arg" in 0.*) extra=", $arg, measure => 'jaccard'";; *) pre="$arg";; esac
    [ -n "$pre" ] && q -c "$pre" >/dev/null
    q -At -F ' ' <<SQL
WITH p AS (SELECT r_id, s_id FROM spotsigs_join_rs('crawl', 'id', 'sig', 'archive', 'id', 'sig'$extra)),
t AS (SELECT r.id AS r_id, s.id AS s_id FROM crawl r JOIN archive s USING (cluster)),
tp AS (SELECT count(*) AS n FROM p JOIN t ON p.r_id = t.r_id AND p.s_id = t.s_id)
SELECT '$set', '$name:', 'P', round(tp.n::numeric / nullif((SELECT count(*) FROM p), 0), 4),
       'R', round(tp.n::numeric / (SELECT count(*) FROM t), 4),
       'F1', round(2 * tp.n::numeric / ((SELECT count(*) FROM p) + (SELECT count(*) FROM t)), 4),
       'pairs', (SELECT count(*) FROM p), 'true', (SELECT count(*) FROM t)
FROM tp;
SQL
  done
done
