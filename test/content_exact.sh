#!/usr/bin/env bash
# Exactness of the content measure on real pages: on each data set, spotsigs_join(...,
# measure => 'content') with every method and 1 or 2 threads returns exactly the pairs and
# similarities of similarity(spotsig_remove(a, t), spotsig_remove(b, t)) >= tau over all pairs in
# SQL, t = spotsigs_template(...), at tau in {0.1, 0.4, 0.7}; spotsigs_clusters() at the default
# equals the connected components of that truth. (That spotsigs_template finds the signatures
# its definition names is checked against a reference in test/unit/test_content.cpp.)
#
#   test/content_exact.sh [data-dir ...]   (default: ../shared/data/newsframes-dev and docversions-dev)
#
# Runs in a throwaway cluster made by pg_virtualenv unless PGHOST/PGDATABASE already point to one
# (set CONTENT_EXACT_INSIDE=1 then). The extension must be installed (make install).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if (($# == 0)); then set -- "$here/../../shared/data/newsframes-dev" "$here/../../shared/data/docversions-dev"; fi
if [[ -z ${CONTENT_EXACT_INSIDE:-} ]]; then
  export PATH=${PGBIN:-/usr/lib/postgresql/15/bin}:$PATH
  exec env CONTENT_EXACT_INSIDE=1 pg_virtualenv -t -v 15 "$here/content_exact.sh" "$@"
fi

source "$here/exact_lib.sh"

failed=0
for data in "$@"; do
  data=$(cd "$data" && pwd)
  echo "== $data"
  load_pages "$data"
  psql_q <<SQL
DROP TABLE IF EXISTS truth_all;
-- every pair's content similarity, by similarity() on the signatures without the template
CREATE TABLE truth_all AS
WITH t AS (SELECT spotsigs_template('pages', 'id', 'sig') AS t),
     c AS (SELECT id::bigint AS id, spotsig_remove(sig, t) AS sig FROM pages, t WHERE sig IS NOT NULL)
SELECT a.id AS id1, b.id AS id2, similarity(a.sig, b.sig) AS similarity
FROM c a JOIN c b ON a.id < b.id WHERE similarity(a.sig, b.sig) > 0;
SQL
  printf '%-5s %-8s %-12s %-8s %s\n' tau pairs method threads differences
  for tau in 0.1 0.4 0.7; do
    truth="SELECT * FROM truth_all WHERE similarity >= $tau"
    n=$(psql_q -c "SELECT count(*) FROM ($truth) t")
    for method in partitioned nopart noprune bruteforce; do
      for threads in 1 2; do
        d=$(diff_count "$truth" "SELECT * FROM spotsigs_join('pages', 'id', 'sig', $tau, $threads, '$method', 'content')")
        printf '%-5s %-8s %-12s %-8s %s\n' "$tau" "$n" "$method" "$threads" "$d"
        [[ $d == 0 ]] || failed=1
      done
    done
  done
  # the default call (no threshold, no measure) is the content measure at 0.4
  d=$(diff_count "SELECT * FROM truth_all WHERE similarity >= 0.4" "SELECT * FROM spotsigs_join('pages', 'id', 'sig')")
  printf '%-5s %-8s %-12s %-8s %s\n' default - default - "$d"
  [[ $d == 0 ]] || failed=1
  # spotsigs_clusters() at the default: the connected components of the truth at 0.4
  d=$(cluster_diff "SELECT id1, id2 FROM truth_all WHERE similarity >= 0.4" \
                    "SELECT * FROM spotsigs_clusters('pages', 'id', 'sig')")
  printf '%-5s %-8s %-12s %-8s %s\n' default - clusters - "$d"
  [[ $d == 0 ]] || failed=1
done
if ((failed)); then echo "FAILED: the content join differs from similarity() without the template"; exit 1; fi
echo "content join identical to the SQL brute force on every data set"
