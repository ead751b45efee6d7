#!/usr/bin/env bash
# The content-measure search through the spotsigs index beside the plain one, on the textcorpus
# scaled to ROWS rows (default 1,000,000; scaled_lib.sh): per query, in one run, in turn,
#   content  `sig % spotsigs_content_query`, plain `sig % spotsig_query(q, 0.4)` and the bare
#            `sig % q` under the default setting (auto: the content measure against the
#            statistics stored for t1m),
#   content  `ORDER BY sig <-> spotsigs_content_query LIMIT 10`  and  plain `ORDER BY sig <-> q LIMIT 10`,
# each timed in the backend (clock_timestamp around the statement, as content_query_eval.sh does);
# p50 and p95 over NQ (default 200) queries sampled from the table in hashint8(id) order, after a
# first pass of every query (its content <-> timed apart: the backend's count of content lengths
# falls in it). Then
# COLD (default 10) first searches, each in a new connection: a bare `%` (the backend reads and
# prepares the template) and a plain `% spotsig_query(q, 0.4)`.
#
#   test/bench/content_query_bench.sh [path/to/textcorpus]    (default: ../shared/data/textcorpus)
#
# The template: the 1M scaled rows' own statistics hold nearly every signature (each recurs on
# about 13 mostly unrelated rows, docs/content-measure.md), which leaves queries without content.
# The queries therefore take the template of the real corpus (the table's first 75,400 rows,
# analyzed as table t75k): spotsig_content_query(q, 't75k', 'sig'), and the statistics stored for
# t1m are a copy of t75k's row (analyzing the 1M rows takes over 20 minutes and gives the
# template above). The plain `<->` runs under a numeric setting (plain everywhere), since a bare
# `<->` on t1m is by content under auto.
# FIRST=N (after the build) instead times each of a new connection's first N ordered content
# queries `ORDER BY sig <-> spotsig_content_query(q, 't75k', 'sig') LIMIT 10` on their own
# (the ones that fall due for the count of content lengths, or a slice of it, included) and prints
# p50, p99 and max, and then the median and max of COLD bare `%` searches, each the first of a new
# connection, run after it. On the 1M rows the count falls due at a new connection's 134th such
# query (its rechecks reach 1 in 2,048 of the index's postings), so FIRST=100 times no count;
# FIRST=2000 takes the whole count in.
# The cluster lives in OUT/cluster (default OUT=build/content-query-bench) and is kept between
# runs (the 1M rows take several minutes to build); REBUILD=1 builds the tables again, BUILD_ONLY=1
# stops after building them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
corpus=${1:-$repo/../shared/data/textcorpus}
[ -d "$corpus" ] || { echo "content_query_bench: no corpus at $corpus (pass the textcorpus directory)" >&2; exit 2; }
corpus=$(cd "$corpus" && pwd)
: "${ROWS:=1000000}" "${NQ:=200}" "${COLD:=10}" "${REBUILD:=0}" "${SHARED_BUFFERS:=2GB}"
: "${VARIANT_SHARE:=0.10}" "${SEED:=42}" "${SCALE_MODE:=vocab}"
: "${OUT:=$repo/build/content-query-bench}"
bin=${PGBIN:-$(dirname "$(command -v pg_ctl)")}
export PATH=$bin:$PATH
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cluster=$OUT/cluster
as_pg=()
if [ "$(id -u)" -eq 0 ]; then as_pg=(runuser -u postgres --); fi
export PGHOST=$cluster PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
psql_q() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }

if [ ! -d "$cluster/data" ]; then
  mkdir -p "$cluster"
  [ ${#as_pg[@]} -eq 0 ] || chown postgres: "$cluster"
  "${as_pg[@]}" "$bin/initdb" -D "$cluster/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null
  REBUILD=1
fi
stop() { "${as_pg[@]}" "$bin/pg_ctl" -D "$cluster/data" -m fast stop >/dev/null 2>&1 || true; }
stop
"${as_pg[@]}" "$bin/pg_ctl" -D "$cluster/data" -l "$cluster/log" -w -o "-k $cluster -c listen_addresses='' \
  -c shared_buffers=$SHARED_BUFFERS -c maintenance_work_mem=1GB -c max_wal_size=8GB -c synchronous_commit=off \
  -c max_parallel_workers_per_gather=0 -c spotsigs.max_threads=2" start >/dev/null
trap stop EXIT
psql_q -c "CREATE EXTENSION IF NOT EXISTS spotsigs" -c "ALTER EXTENSION spotsigs UPDATE"

if [ "$REBUILD" = 1 ] || [[ $(psql_q -c "SELECT to_regclass('t1m_sig') IS NULL") == t ]]; then
  source "$here/scaled_lib.sh"
  psql_q -c "DROP TABLE IF EXISTS t1m, t75k"
  load_scaled t1m "$ROWS"
  psql_q -c "CREATE INDEX t1m_sig ON t1m USING spotsigs (sig)" -c "VACUUM ANALYZE t1m"
  psql_q -c "CREATE TABLE t75k AS SELECT * FROM t1m WHERE id <= 75400" -c "ALTER TABLE t75k ADD PRIMARY KEY (id)" \
    -c "SELECT spotsigs_analyze('t75k', 'sig')" >/dev/null
fi
# t1m's statistics: a copy of t75k's (see above), so that a bare % on t1m is by content.
psql_q -c "INSERT INTO spotsigs_template_store SELECT 't1m'::regclass, sig_column, id_column, rows_analyzed,
  template, analyzed_at FROM spotsigs_template_store WHERE relation = 't75k'::regclass
  ON CONFLICT (relation, sig_column) DO UPDATE SET template = EXCLUDED.template, analyzed_at = EXCLUDED.analyzed_at,
  rows_analyzed = EXCLUDED.rows_analyzed, id_column = EXCLUDED.id_column"
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0

if [ "${FIRST:-0}" -gt 0 ]; then
  psql_q <<SQL | tee "$OUT/first.txt"
SET enable_seqscan = off;
CREATE TEMP TABLE q AS SELECT id, sig FROM t1m WHERE length(sig) > 0 ORDER BY hashint8(id) LIMIT $FIRST;
CREATE TEMP TABLE tm (i int, ms float8);
DO \$\$
DECLARE r record; t0 timestamptz; n bigint; i int := 0;
BEGIN
  FOR r IN SELECT * FROM q ORDER BY hashint8(id) LOOP
    i := i + 1;
    t0 := clock_timestamp();
    SELECT count(*) INTO n FROM (SELECT id FROM t1m p ORDER BY p.sig <-> spotsig_content_query(r.sig, 't75k', 'sig') LIMIT 10) x;
    INSERT INTO tm VALUES (i, extract(epoch FROM clock_timestamp() - t0) * 1000);
  END LOOP;
END \$\$;
SELECT 'first $FIRST ordered content queries of a new connection: p50 ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2)
  || ' ms, p99 ' || round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2) || ' ms, max '
  || round(max(ms)::numeric, 1) || ' ms (query ' || (array_agg(i ORDER BY ms DESC))[1] || '), total ' || round(sum(ms)::numeric) || ' ms' FROM tm;
SQL
  ids=$(psql_q -c "SELECT id FROM t1m WHERE length(sig) > 0 ORDER BY hashint8(id) LIMIT $COLD")
  for id in $ids; do
    psql_q -c "DO \$\$ DECLARE s spotsig; n bigint; t0 timestamptz; BEGIN
      SELECT sig INTO s FROM t1m WHERE id = $id; t0 := clock_timestamp();
      SELECT count(*) INTO n FROM t1m p WHERE p.sig % s;
      RAISE NOTICE '%', extract(epoch FROM clock_timestamp() - t0) * 1000; END \$\$" 2>&1 | sed 's/.*NOTICE: *//'
  done | sort -g | awk '{v[NR] = $1} END {printf "cold bare %% after (first search in a new connection, %d connections): median %.3f ms, max %.3f ms\n", NR, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR]}' | tee -a "$OUT/first.txt"
  exit 0
fi

{
  echo "rows: $(psql_q -c 'SELECT count(*) FROM t1m'), template: $(psql_q -c "SELECT template_size FROM spotsigs_stats WHERE relation = 't75k'::regclass") signatures (t75k), $NQ queries"
  psql_q <<SQL
SET enable_seqscan = off;
CREATE TEMP TABLE q AS SELECT id, sig FROM t1m WHERE length(sig) > 0 ORDER BY hashint8(id) LIMIT $NQ;
CREATE TEMP TABLE tm (kind text, ms float8, n bigint);
-- Every query once, so that the pages they read are in shared_buffers.
SELECT count(*) FROM q, LATERAL (SELECT count(*) FROM t1m p WHERE p.sig % spotsig_content_query(q.sig, 't75k', 'sig')) c;
SELECT count(*) FROM q, LATERAL (SELECT count(*) FROM t1m p WHERE p.sig % spotsig_query(q.sig, 0.4)) c;
-- The two <-> kinds once each too, timed: the content one's first pass is where the backend counts
-- its rows' content lengths (docs/index.md, "The content measure"), once its rechecks reach their share.
DO \$\$
DECLARE r record; t0 timestamptz; n bigint;
BEGIN
  FOR r IN SELECT * FROM q ORDER BY id LOOP
    t0 := clock_timestamp();
    SELECT count(*) INTO n FROM (SELECT id FROM t1m p ORDER BY p.sig <-> spotsig_content_query(r.sig, 't75k', 'sig') LIMIT 10) x;
    INSERT INTO tm VALUES ('<-> content LIMIT 10, first pass', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
    PERFORM set_config('spotsigs.similarity_threshold', '0.4', true);
    SELECT count(*) INTO n FROM (SELECT id FROM t1m p ORDER BY p.sig <-> r.sig LIMIT 10) x;
    PERFORM set_config('spotsigs.similarity_threshold', 'auto', true);
  END LOOP;
END \$\$;
-- The three % kinds run in an order that rotates from query to query (and the two <-> kinds
-- alternate), so that each is the first to read a query's lists as often as the others.
DO \$\$
DECLARE r record; t0 timestamptz; n bigint; i int := 0; k int;
BEGIN
  FOR r IN SELECT * FROM q ORDER BY id LOOP
    i := i + 1;
    FOR j IN 0..2 LOOP
      k := (i + j) % 3;
      t0 := clock_timestamp();
      IF k = 0 THEN
        SELECT count(*) INTO n FROM t1m p WHERE p.sig % spotsig_content_query(r.sig, 't75k', 'sig');
        INSERT INTO tm VALUES ('% content', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
      ELSIF k = 1 THEN
        SELECT count(*) INTO n FROM t1m p WHERE p.sig % spotsig_query(r.sig, 0.4);
        INSERT INTO tm VALUES ('% plain 0.4', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
      ELSE
        SELECT count(*) INTO n FROM t1m p WHERE p.sig % r.sig;
        INSERT INTO tm VALUES ('% bare (auto: content)', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
      END IF;
    END LOOP;
    FOR j IN 0..1 LOOP
      IF (i + j) % 2 = 0 THEN
        t0 := clock_timestamp();
        SELECT count(*) INTO n FROM (SELECT id FROM t1m p ORDER BY p.sig <-> spotsig_content_query(r.sig, 't75k', 'sig') LIMIT 10) x;
        INSERT INTO tm VALUES ('<-> content LIMIT 10', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
      ELSE
        PERFORM set_config('spotsigs.similarity_threshold', '0.4', true);
        t0 := clock_timestamp();
        SELECT count(*) INTO n FROM (SELECT id FROM t1m p ORDER BY p.sig <-> r.sig LIMIT 10) x;
        INSERT INTO tm VALUES ('<-> plain LIMIT 10', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
        PERFORM set_config('spotsigs.similarity_threshold', 'auto', true);
      END IF;
    END LOOP;
  END LOOP;
END \$\$;
SELECT kind || ': p50 ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3) || ' ms, p95 '
       || round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 3) || ' ms, max ' || round(max(ms)::numeric, 1) || ' ms, rows per query '
       || round(avg(n), 1) FROM tm GROUP BY kind ORDER BY kind;
SQL
  # The first search of a new connection (the table's pages are in shared_buffers by now).
  ids=$(psql_q -c "SELECT id FROM t1m WHERE length(sig) > 0 ORDER BY hashint8(id) LIMIT $COLD")
  for kind in "bare %" "plain % 0.4"; do
    cond='p.sig % s'
    [ "$kind" = "bare %" ] || cond='p.sig % spotsig_query(s, 0.4)'
    for id in $ids; do
      psql_q -c "DO \$\$ DECLARE s spotsig; n bigint; t0 timestamptz; BEGIN
        SELECT sig INTO s FROM t1m WHERE id = $id; t0 := clock_timestamp();
        SELECT count(*) INTO n FROM t1m p WHERE $cond;
        RAISE NOTICE '%', extract(epoch FROM clock_timestamp() - t0) * 1000; END \$\$" 2>&1 | sed 's/.*NOTICE: *//'
    done | sort -g | awk -v k="$kind" '{v[NR] = $1} END {printf "cold %s (first search in a new connection, %d connections): median %.3f ms, max %.3f ms\n", k, NR, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR]}'
  done
} | tee "$OUT/results.txt"
