#!/usr/bin/env bash
# Two builds' reading of fetched rows side by side on a kept Citus cluster (citus_bench.sh with
# KEEP=DIR): on the worker at PORT (default 5601) one transaction writes the rows of that worker's
# shards of `scaled` to an intermediate result (Citus's binary COPY format, as a distributed
# join's export does), then reads it back REPEAT (default 3) times with read_intermediate_result,
# which passes every signature through spotsig_recv (as a task's fetched rows are). For each
# entry of ORDER (default "old new old new") that build's library is installed first (a new file:
# running backends keep the one they loaded). Prints the read times in ms per build.
#
#   OLD=/path/to/old/checkout NEW=/path/to/new/checkout KEEP=DIR test/bench/citus_recv_ab.sh
#
# Run as root; make install of the checkout you keep afterwards puts the right library back.
set -euo pipefail
: "${OLD:?checkout of the old build}" "${NEW:?checkout of the new build}" "${KEEP:?the directory of the kept cluster}"
: "${PORT:=5601}" "${ORDER:=old new old new}" "${REPEAT:=3}"
bin=${PGBIN:-$(dirname "$(command -v pg_config)")}
lib=$("$bin/pg_config" --pkglibdir)/spotsigs.so
q() { "$bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$KEEP" -p "$PORT" -U postgres "$@"; }
shards=$(q -c "SET citus.override_table_visibility = off" -c "
  SELECT string_agg(format('SELECT id::int8, sig FROM %s', c.oid::regclass), ' UNION ALL ')
    FROM pg_class c WHERE c.relname ~ '^scaled_[0-9]+$' AND c.relkind = 'r'")
script=$(mktemp /tmp/citus_recv_ab.XXXXXX)
trap 'rm -f "$script"' EXIT
{
  echo "SET work_mem = '1GB';"
  echo 'BEGIN;'
  echo "SELECT count(*) FROM (SELECT create_intermediate_result('recv_ab', \$q\$ $shards \$q\$)) x;"
  echo '\timing on'
  for ((i = 0; i < REPEAT; i++)); do
    echo "SELECT count(*) FROM read_intermediate_result('recv_ab', 'binary') AS u(id int8, sig spotsig);"
  done
  echo '\timing off'
  echo 'ROLLBACK;'
} > "$script"
echo "rows read per call: $(q -c "SET citus.override_table_visibility = off" -c "SELECT sum(n) FROM (SELECT (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %s', c.oid::regclass), false, true, '')))[1]::text::bigint AS n FROM pg_class c WHERE c.relname ~ '^scaled_[0-9]+\$' AND c.relkind = 'r') s")"
for which in $ORDER; do
  case $which in old) tree=$OLD ;; new) tree=$NEW ;; *) echo "ORDER takes old and new" >&2; exit 1 ;; esac
  cp --remove-destination "$tree/spotsigs.so" "$lib"
  echo "$which: $(q -f "$script" | awk '/^Time:/ { printf "%s ", $2 }')ms"
done
