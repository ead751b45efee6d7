#!/usr/bin/env bash
# Exactness of the similarity join on real pages: every method of spotsigs_join (and of
# spotsigs_join_rs) returns exactly the pairs and similarities of 'bruteforce' on newsframes-dev
# at tau in {0.1, 0.2, 0.3, 0.44, 0.6, 0.8, 0.9, 1.0}, with 1 and 2 threads, and so do spotsigs_join,
# spotsigs_clusters and spotsigs_join_rs in passes under a small spotsigs.join_memory_limit.
# Exits non-zero on a difference.
#
#   test/join_exact.sh [path/to/newsframes-dev]      (default: ../shared/data/newsframes-dev)
#
# Runs in a throwaway cluster made by pg_virtualenv unless PGHOST/PGDATABASE already point to one
# (set JOIN_EXACT_INSIDE=1 then). The extension must be installed (make install).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data=${1:-$here/../../shared/data/newsframes-dev}
data=$(cd "$data" && pwd)
if [[ -z ${JOIN_EXACT_INSIDE:-} ]]; then
  export PATH=${PGBIN:-/usr/lib/postgresql/15/bin}:$PATH
  exec env JOIN_EXACT_INSIDE=1 pg_virtualenv -t -v 15 "$here/join_exact.sh" "$data"
fi

source "$here/exact_lib.sh"

echo "loading $data/pages.tsv.gz and extracting signatures"
load_pages "$data"
psql_q <<SQL
-- two halves for the R-S form
CREATE TABLE pages_r AS SELECT id, sig FROM pages WHERE id % 2 = 0;
CREATE TABLE pages_s AS SELECT id, sig FROM pages WHERE id % 2 = 1;
SQL
psql_q -c "SELECT 'pages: ' || count(*) || ', mean signature length: ' || round(avg(length(sig))) FROM pages"


# Four copies of the pages for pass mode, and their size in memory (from the join's DEBUG1 report).
psql_q -c "DROP TABLE IF EXISTS pages4;
           CREATE TABLE pages4 AS SELECT id + k * 1000000 AS id, sig FROM pages, generate_series(0, 3) k"
psql_q -c "DROP TABLE IF EXISTS pages4r, pages4s;
           CREATE TABLE pages4r AS SELECT id, sig FROM pages4 WHERE id % 2 = 0;
           CREATE TABLE pages4s AS SELECT id, sig FROM pages4 WHERE id % 2 = 1"
docs_mb=$(psql -X -qAt -c "SET client_min_messages = debug1" \
  -c "SELECT count(*) FROM spotsigs_join('pages4', 'id', 'sig', 1.0)" 2>&1 | sed -n 's/.*documents (\([0-9]*\) MB).*/\1/p' | head -1)
echo "four copies of the pages in memory: ${docs_mb} MB"

# in_passes FN CALL: creates table passes from CALL (of function FN) under the first
# spotsigs.join_memory_limit from a quarter of the copies' size upward with which FN reports that
# it ran in passes; sets ran (the passes; empty when no limit up to twice their size did) and lim.
in_passes() {
  ran=""
  for lim in $(seq $((docs_mb / 4 + 1)) $(((docs_mb + 15) / 16)) $((2 * docs_mb + 12))); do
    if out=$(psql -X -v ON_ERROR_STOP=1 -qAt -c "SET client_min_messages = debug1" \
               -c "SET spotsigs.join_memory_limit = '${lim}MB'" -c "DROP TABLE IF EXISTS passes" \
               -c "CREATE TABLE passes AS SELECT * FROM $2" 2>&1) &&
       ran=$(sed -n "s/.*$1: \([0-9]*\) passes within.*/\1/p" <<<"$out") && [[ -n $ran ]]; then
      return
    fi
    ran=""
  done
}

failed=0
printf '%-5s %-6s %-8s %-12s %-12s %s\n' tau form pairs method threads differences
for tau in 0.1 0.2 0.3 0.44 0.6 0.8 0.9 1.0; do
  # Similarities are compared exactly (the same double from the same formula).
  psql_q -c "DROP TABLE IF EXISTS truth, truth_rs;
             CREATE TABLE truth AS SELECT * FROM spotsigs_join('pages', 'id', 'sig', $tau, 1, 'bruteforce');
             CREATE TABLE truth_rs AS SELECT * FROM spotsigs_join_rs('pages_r', 'id', 'sig', 'pages_s', 'id', 'sig', $tau, 1, 'bruteforce');"
  n=$(psql_q -c "SELECT count(*) FROM truth")
  nrs=$(psql_q -c "SELECT count(*) FROM truth_rs")
  for method in partitioned nopart noprune bruteforce; do
    for threads in 1 2; do
      d=$(diff_count "SELECT * FROM truth" \
                     "SELECT * FROM spotsigs_join('pages', 'id', 'sig', $tau, $threads, '$method')")
      printf '%-5s %-6s %-8s %-12s %-12s %s\n' "$tau" self "$n" "$method" "$threads" "$d"
      [[ $d == 0 ]] || failed=1
      d=$(diff_count "SELECT * FROM truth_rs" \
                     "SELECT * FROM spotsigs_join_rs('pages_r', 'id', 'sig', 'pages_s', 'id', 'sig', $tau, $threads, '$method')")
      printf '%-5s %-6s %-8s %-12s %-12s %s\n' "$tau" rs "$nrs" "$method" "$threads" "$d"
      [[ $d == 0 ]] || failed=1
    done
  done
  # Pass mode, on four copies of the pages (a pass needs some megabytes of fixed structures
  # besides its documents: the pages alone fit one pass wherever a pass fits): under a
  # spotsigs.join_memory_limit near the documents' size the self-join runs in passes over length
  # ranges (join_passes.hpp). With the first limit below with which it does (at low thresholds
  # the smallest pass needs more) it must give the truth's pairs between any two copies, and
  # every non-empty page with its own copies at similarity 1.
  psql_q -c "DROP TABLE IF EXISTS truth4;
             CREATE TABLE truth4 AS
               SELECT least(t.id1 + k * 1000000, t.id2 + l * 1000000) AS id1,
                      greatest(t.id1 + k * 1000000, t.id2 + l * 1000000) AS id2, t.similarity
               FROM truth t, generate_series(0, 3) k, generate_series(0, 3) l
             UNION ALL
               SELECT p.id + k * 1000000, p.id + l * 1000000, 1.0::float8
               FROM pages p, generate_series(0, 3) k, generate_series(0, 3) l
               WHERE k < l AND length(p.sig) > 0"
  n4=$(psql_q -c "SELECT count(*) FROM truth4")
  for threads in 1 2; do
    in_passes spotsigs_join "spotsigs_join('pages4', 'id', 'sig', $tau, $threads)"
    if [[ -z $ran ]]; then
      printf '%-5s %-6s %-8s %-12s %-12s %s\n' "$tau" self4 "$n4" "passes" "$threads" "no limit ran in passes"
      failed=1
      continue
    fi
    d=$(diff_count "SELECT * FROM truth4" "SELECT * FROM passes")
    printf '%-5s %-6s %-8s %-12s %-12s %s\n' "$tau" self4 "$n4" "${ran}passes@${lim}MB" "$threads" "$d"
    [[ $d == 0 ]] || failed=1
  done
  # spotsigs_clusters and spotsigs_join_rs in passes: the clusters of the four copies as without
  # a limit, and the R-S truth between any copy of pages_r and any copy of pages_s.
  in_passes spotsigs_clusters "spotsigs_clusters('pages4', 'id', 'sig', $tau, 2)"
  d=$( [[ -n $ran ]] && diff_count "SELECT * FROM passes" "SELECT * FROM spotsigs_clusters('pages4', 'id', 'sig', $tau, 2)" || echo "no limit ran in passes")
  printf '%-5s %-6s %-8s %-12s %-12s %s\n' "$tau" clust4 "-" "${ran}passes@${lim}MB" 2 "$d"
  [[ $d == 0 ]] || failed=1
  in_passes spotsigs_join_rs "spotsigs_join_rs('pages4r', 'id', 'sig', 'pages4s', 'id', 'sig', $tau, 2)"
  d=$( [[ -n $ran ]] && diff_count "SELECT * FROM passes" \
         "SELECT r_id + k * 1000000, s_id + l * 1000000, similarity FROM truth_rs, generate_series(0, 3) k, generate_series(0, 3) l" ||
       echo "no limit ran in passes")
  printf '%-5s %-6s %-8s %-12s %-12s %s\n' "$tau" rs4 "$((nrs * 16))" "${ran}passes@${lim}MB" 2 "$d"
  [[ $d == 0 ]] || failed=1
  # spotsigs_clusters against connected components of the truth pairs, by label propagation.
  d=$(cluster_diff "SELECT id1, id2 FROM truth" "SELECT * FROM spotsigs_clusters('pages', 'id', 'sig', $tau)")
  printf '%-5s %-6s %-8s %-12s %-12s %s\n' "$tau" clust "$n" "partitioned" "2" "$d"
  [[ $d == 0 ]] || failed=1
  # The brute-force truth itself is checked against similarity() over all pairs in SQL.
  d=$(diff_count "SELECT id1, id2 FROM truth" \
                 "SELECT a.id::bigint, b.id::bigint FROM pages a JOIN pages b ON a.id < b.id WHERE similarity(a.sig, b.sig) >= $tau")
  printf '%-5s %-6s %-8s %-12s %-12s %s\n' "$tau" self "$n" "sql-nested" "-" "$d"
  [[ $d == 0 ]] || failed=1
done
if ((failed)); then echo "FAILED: some method differs from bruteforce"; exit 1; fi
echo "all methods identical to bruteforce"
