#!/usr/bin/env bash
# refresh_background_bench.sh TABLE: the background statistics refresh of a large table under a
# load of one row per connection (docs/ingest.md, "At 1M rows, one row per connection"). TABLE
# has the content trigger (spotsigs_flag_duplicates('sig', 'duplicate_of', 'similarity'), no
# threshold), a spotsigs index and columns (id bigint, body text, sig GENERATED from body); its
# statistics are stored. The store's row count is lowered to ROWS_ANALYZED (default 800000) so
# that the next insert is due; then one INSERT from a new connection with
# spotsigs.trigger_refresh = background, and N (default 10) more, each a copy of an existing row,
# PAUSE (default 2) seconds apart: each insert's time and the refresh workers seen after it, then
# the time from the due insert to the last worker's exit. The inserted rows (ids from FIRST_ID,
# default 90000000) are deleted at the end. Connection from the PG* environment variables.
#   PGHOST=/tmp PGPORT=5499 PGDATABASE=tb test/bench/refresh_background_bench.sh docs
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t=${1:?the table}
: "${ROWS_ANALYZED:=800000}" "${N:=10}" "${PAUSE:=2}" "${FIRST_ID:=90000000}"
q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }
insert() {  # a copy of the row with the k-th smallest id, as id FIRST_ID + k, from a new connection
  q -c "SET spotsigs.trigger_refresh = background" \
    -c "INSERT INTO $t (id, body) SELECT $((FIRST_ID + $1)), body FROM $t ORDER BY id OFFSET $(($1 * 1000)) LIMIT 1"
}
workers() { q -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'spotsigs refresh'"; }
echo "# test/bench/refresh_background_bench.sh $t, $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
q -c "UPDATE spotsigs_template_store SET rows_analyzed = $ROWS_ANALYZED WHERE relation = '$t'::regclass"
t0=$(now)
insert 0
t1=$(now)
echo "due insert: $(echo "$t1 - $t0" | bc) s, workers after it: $(workers)"
for ((k = 1; k <= N; k++)); do
  s=$(now)
  insert "$k"
  e=$(now)
  echo "insert $k: $(echo "$e - $s" | bc) s, workers after it: $(workers)"
  sleep "$PAUSE"
done
settled_ns=0
# shellcheck source=test/bench/refresh_wait.sh
source "$here/refresh_wait.sh"
refresh_settle
echo "no worker left $(echo "scale=3; $settled_ns / 1000000000 - $t1" | bc) s after the due insert returned"
q -c "SELECT 'analyzed ' || rows_analyzed || ' rows, ' || template_size || ' template signatures' FROM spotsigs_stats WHERE relation = '$t'::regclass"
q -c "DELETE FROM $t WHERE id >= $FIRST_ID" -c "VACUUM $t"
