#!/usr/bin/env bash
# Two builds of spotsigs side by side on one kept Citus cluster (citus_bench.sh with KEEP=DIR):
# for each entry of ORDER (default "old new old new") it installs that build's library into the
# PostgreSQL of PGBIN, replaces the Citus functions of src/sql/70_citus.sql on every node by that
# build's (CREATE OR REPLACE; the task functions dropped first, since their result type may
# differ between builds), then times spotsigs_join on the distributed table `scaled` and on its
# local copy `scaled_local` at TAU (NULL: the default call) and prints each worker's matching time
# from its log. The functions so created stand outside the extension: a cluster for measuring, not
# for keeping.
#
#   OLD=/path/to/old/checkout NEW=/path/to/new/checkout KEEP=DIR TAU=0.5 test/bench/citus_ab.sh
#
# Both checkouts must be built (make). Run as root (it writes the library into PostgreSQL's lib
# directory; make install of the checkout you keep afterwards puts the right one back).
set -euo pipefail
: "${OLD:?checkout of the old build}" "${NEW:?checkout of the new build}" "${KEEP:?the directory of the kept cluster}"
: "${TAU:=0.5}" "${ORDER:=old new old new}" "${PORT:=5600}" "${WORKERS:=3}"
bin=${PGBIN:-$(dirname "$(command -v pg_config)")}
lib=$("$bin/pg_config" --pkglibdir)/spotsigs.so
q() { "$bin/psql" -X -qAt -v ON_ERROR_STOP=1 -h "$KEEP" -p "$1" -U postgres "${@:2}"; }
use() {
  local tree=$1
  cp "$tree/spotsigs.so" "$lib"
  sed -e 's/@extschema@/public/g' -e 's|MODULE_PATHNAME|$libdir/spotsigs|g' \
      -e 's/^CREATE FUNCTION/CREATE OR REPLACE FUNCTION/' -e 's/^CREATE AGGREGATE/CREATE OR REPLACE AGGREGATE/' \
      "$tree/src/sql/70_citus.sql" > "$KEEP/ab_70.sql"
  for ((n = 0; n <= WORKERS; n++)); do
    q $((PORT + n)) >/dev/null <<'SQL'
SET citus.enable_ddl_propagation = off;
SET client_min_messages = warning;
DO $$ BEGIN
  ALTER EXTENSION spotsigs DROP FUNCTION spotsigs_citus_task(text[], name, name, double precision, integer, text, jsonb, boolean, text, spotsig);
EXCEPTION WHEN OTHERS THEN NULL; END $$;
DO $$ BEGIN
  ALTER EXTENSION spotsigs DROP FUNCTION spotsigs_citus_range_task(jsonb, integer, double precision, integer, text);
EXCEPTION WHEN OTHERS THEN NULL; END $$;
DROP FUNCTION IF EXISTS spotsigs_citus_task(text[], name, name, double precision, integer, text, jsonb, boolean, text, spotsig);
DROP FUNCTION IF EXISTS spotsigs_citus_range_task(jsonb, integer, double precision, integer, text);
SQL
    { echo 'SET citus.enable_ddl_propagation = off; SET client_min_messages = warning;'; cat "$KEEP/ab_70.sql"; } | q $((PORT + n)) >/dev/null
  done
}
now() { date +%s.%N; }
for which in $ORDER; do
  case $which in old) use "$OLD" ;; new) use "$NEW" ;; *) echo "ORDER takes old and new" >&2; exit 1 ;; esac
  for ((n = 1; n <= WORKERS; n++)); do wc -l < "$KEEP/n$n.log" > "$KEEP/ab_mark$n"; done
  t0=$(now); q "$PORT" -c "SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', $TAU)" >/dev/null
  t1=$(now); q "$PORT" -c "SELECT count(*) FROM spotsigs_join('scaled_local', 'id', 'sig', $TAU)" >/dev/null
  t2=$(now)
  m=$(for ((n = 1; n <= WORKERS; n++)); do
        tail -n +$(($(cat "$KEEP/ab_mark$n") + 1)) "$KEEP/n$n.log" | grep -o '[0-9.]* s matching' | tail -1
      done | awk '{printf "%s ", $1}')
  run=$(tail -n 40 "$KEEP/n0.log" | grep -o 'spotsigs_citus_run: .*' | tail -1)
  echo "$which tau $TAU: distributed $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s, one node $(awk "BEGIN{printf \"%.2f\", $t2 - $t1}") s; task matching: $m; $run"
done
