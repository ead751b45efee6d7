#!/usr/bin/env bash
# Benchmark of the similarity join (paper section 5, Figure 7 and Table 2) on real documents.
#
#   test/bench/join_bench.sh [path/to/textcorpus]     (default: ../shared/data/textcorpus)
#
# In a throwaway cluster (pg_virtualenv) it
#  1. loads the 75,400 documents of textcorpus and extracts their spot signatures;
#  2. scales them to ROWS (default 1,000,000) documents with test/bench/scale_corpus.cpp: the
#     first 75,400 rows are the real corpus, later copies are unrelated documents of the same
#     shape over the same vocabulary (each signature swapped for one of about the same document
#     frequency; SCALE_MODE=fresh gives every copy brand-new signatures instead), except a share
#     VARIANT_SHARE (default 0.10) of them, which are near-duplicate variants of their base
#     document (2-15% of the signatures replaced); seed SEED (default 42);
#  3. times spotsigs_join at tau in TAUS (default 1.0 0.9 0.8 0.6 0.44 0.3 0.2 0.1) with 1 and 2
#     threads on both corpora (best of REPEAT runs, default 2), the scaled corpus at tau 0.2 with 2
#     threads once more with the built-in settings (spotsigs.join_memory_limit 4GB,
#     spotsigs.join_huge_pages off: the issue 36 goal), and in the same run the sequential read of the
#     signature column (SELECT sum(length(sig)): every value read and detoasted, the floor of any
#     join), method 'nopart' on all rows at tau 0.9 (cut off after NOPART_TIMEOUT seconds),
#     'noprune' and 'nopart' on the first SUBSAMPLE rows (default 100,000), and pg_trgm's %
#     self-join with a GIN index on TRGM_DOCS (default 1,000; 5,000 took over 15 minutes at tau 0.9) of the documents' texts against
#     spotsigs_join on the same documents;
#     spotsigs.join_memory_limit is JOIN_MEMORY_LIMIT (default 10GB: 1M documents need more
#     than the 4GB default);
#     spotsigs.join_huge_pages is JOIN_HUGE_PAGES (default on: the join's large blocks come from
#     the reserved huge pages while the pool has room, see docs/matcher.md "Memory"; reserve them first,
#     as root: sysctl vm.nr_hugepages=2200, enough for shared_buffers and one 1M join), and the
#     1M join at tau 0.9 with 2 threads is also timed with it off, in the same run;
#     with DEFAULT_CALL=1 the call without a threshold (the content measure at 0.4) and the old
#     default (plain at 0.2) are timed first (DEFAULT_ONLY=1: only them);
#  4. prints the ratios against the goals, writes results.txt, runtime.dat and the plot
#     join_runtime.png (runtime against tau, like the paper's Figure 7) to OUT (default
#     build/join-bench), and when the run completes copies them over join_results.txt,
#     join_runtime.dat and join_runtime.png in RESULTS (default test/bench/results; RESULTS= keeps
#     them in OUT only, for partial runs such as TAUS=0.9).
# Needs: make install done, gnuplot (gnuplot-nox), postgresql-contrib (pg_trgm), g++.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
corpus=${1:-$repo/../shared/data/textcorpus}
corpus=$(cd "$corpus" && pwd)
: "${ROWS:=1000000}" "${VARIANT_SHARE:=0.10}" "${SEED:=42}" "${REPEAT:=2}"
: "${SCALE_MODE:=vocab}" "${SUBSAMPLE:=100000}" "${TRGM_DOCS:=1000}" "${NOPART_TIMEOUT:=900}"
: "${OUT:=$repo/build/join-bench}"
export SCALE_MODE ROWS VARIANT_SHARE SEED REPEAT SUBSAMPLE TRGM_DOCS NOPART_TIMEOUT OUT

if [[ -z ${JOIN_BENCH_INSIDE:-} ]]; then
  mkdir -p "$OUT"
  g++ -std=c++17 -O2 -o "$OUT/scale_corpus" "$here/scale_corpus.cpp"
  export PATH=${PGBIN:-/usr/lib/postgresql/15/bin}:$PATH
  env JOIN_BENCH_INSIDE=1 pg_virtualenv -t -v 15 -o shared_buffers=2GB -o max_wal_size=8GB \
    -o synchronous_commit=off -o work_mem=256MB -o maintenance_work_mem=1GB \
    -o spotsigs.max_threads=2 -o spotsigs.join_memory_limit=${JOIN_MEMORY_LIMIT:-10GB} \
    -o spotsigs.join_huge_pages=${JOIN_HUGE_PAGES:-on} \
    -o max_parallel_workers_per_gather=0 \
    "$here/join_bench.sh" "$corpus"
  results=${RESULTS-$repo/test/bench/results}
  if [[ -n $results ]]; then
    cp "$OUT/results.txt" "$results/join_results.txt"
    cp "$OUT/runtime.dat" "$results/join_runtime.dat"
    cp "$OUT/join_runtime.png" "$results/join_runtime.png"
  fi
  exit 0
fi

# pg_virtualenv runs as postgres when started as root: the output directory must be writable.
chmod 0777 "$OUT" 2>/dev/null || true
log() { echo "$*" | tee -a "$OUT/results.txt"; }
: > "$OUT/results.txt"
. "$here/timing_lib.sh"

log "== spotsigs join benchmark, $(date -u +%FT%TZ), $(nproc) cores, $(uname -r)"
log "corpus: $corpus; ROWS=$ROWS VARIANT_SHARE=$VARIANT_SHARE SEED=$SEED SUBSAMPLE=$SUBSAMPLE TRGM_DOCS=$TRGM_DOCS REPEAT=$REPEAT NOPART_TIMEOUT=$NOPART_TIMEOUT"
log "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
log "spotsigs.join_huge_pages: $(psql_q -c 'SHOW spotsigs.join_huge_pages'); $(awk '/^HugePages_(Total|Free|Rsvd):/ {printf "%s %s ", $1, $2}' /proc/meminfo)"
psql_q -c "CREATE EXTENSION spotsigs; CREATE EXTENSION pg_trgm;"
psql_q -c "CREATE TABLE docs (id bigint PRIMARY KEY, source text, title text, body text)"
psql_q -c "\\copy docs from program 'zcat \"$corpus/docs.tsv.gz\"'"
timed "CREATE TABLE base AS SELECT id, spotsigs(title || E'\\n' || body) AS sig FROM docs; SELECT count(*) FROM base"
log "extracted $val documents in $(ratio "$ms" 1000) s"
psql_q -c "ALTER TABLE base ADD PRIMARY KEY (id)" -c "VACUUM ANALYZE base"
log "base signatures: $(psql_q -c "SELECT 'mean length ' || round(avg(length(sig)), 1) || ', mean distinct ' || round(avg(spotsig_distinct(sig)), 1) || ', empty ' || count(*) FILTER (WHERE length(sig) = 0) FROM base")"

# The scaled corpus (through a file: the generator's summary goes to the log).
psql_q -c "\\copy (SELECT id, sig FROM base ORDER BY id) to '$OUT/base.tsv'"
"$OUT/scale_corpus" "$ROWS" "$VARIANT_SHARE" "$SEED" "$SCALE_MODE" < "$OUT/base.tsv" > "$OUT/scaled.tsv" 2> "$OUT/scale_summary.txt"
log "$(cat "$OUT/scale_summary.txt")"
psql_q -c "CREATE TABLE scaled (id bigint, sig spotsig)"
psql_q -c "\\copy scaled from '$OUT/scaled.tsv'"
rm -f "$OUT/scaled.tsv" "$OUT/base.tsv"
psql_q -c "ALTER TABLE scaled ADD PRIMARY KEY (id)" -c "VACUUM ANALYZE scaled"
psql_q -c "CREATE TABLE sub AS SELECT * FROM scaled WHERE id <= $SUBSAMPLE" -c "VACUUM ANALYZE sub"
log "scaled table: $(psql_q -c "SELECT count(*) || ' rows, ' || pg_size_pretty(pg_total_relation_size('scaled')) FROM scaled")"

# 1. The floor: a sequential read of the signature column.
psql_q -c "SELECT sum(length(sig)) FROM scaled" >/dev/null   # warm the cache
best "SELECT sum(length(sig)) FROM scaled"
floor=$s
log "sequential read of scaled.sig (sum(length(sig))): $floor s"
best "SELECT sum(length(sig)) FROM base"
log "sequential read of base.sig: $s s"

# The call a new user makes (no threshold: the content measure at 0.4) beside the old default
# (plain multiset Jaccard at 0.2), 1 and 2 threads, with the content statistics' share from
# the DEBUG1 message: with DEFAULT_CALL=1, or DEFAULT_ONLY=1, which stops after it (the content
# statistics of the 1M rows take far longer than the rest of this benchmark).
if [[ -n ${DEFAULT_CALL:-}${DEFAULT_ONLY:-} ]]; then
  log ""
  log "$(printf '%-34s %10s %10s %10s %10s %10s' call base_pairs base_1t base_2t scaled_pairs scaled_2t)"
  for call in "NULL, %s, NULL, 'content'" "0.2, %s, NULL, 'jaccard'"; do
    best "SELECT count(*) FROM spotsigs_join('base', 'id', 'sig', $(printf "$call" 1))"; b1=$s; bp=$val
    best "SELECT count(*) FROM spotsigs_join('base', 'id', 'sig', $(printf "$call" 2))"; b2=$s
    best "SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', $(printf "$call" 2))"; s2=$s; sp=$val
    log "$(printf '%-34s %10s %10s %10s %10s %10s' "$(printf "$call" t)" "$bp" "$b1" "$b2" "$sp" "$s2")"
  done
  log "content statistics, scaled, 2 threads: $(psql -X -qAt -c "SET client_min_messages = debug1" \
    -c "SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', NULL, 2)" 2>&1 | sed -n 's/^DEBUG: *spotsigs_join: content measure: //p')"
  if [[ -n ${DEFAULT_ONLY:-} ]]; then exit 0; fi
fi

# 2. Runtime against tau, 1 and 2 threads, on the real corpus and the scaled one.
echo "# tau base_1thread base_2threads scaled_1thread scaled_2threads (seconds)" > "$OUT/runtime.dat"
log ""
log "$(printf '%-5s %10s %10s %10s %10s %10s %10s %8s' tau base_pairs base_1t base_2t scaled_pairs scaled_1t scaled_2t speedup)"
declare -A t1 t2
for tau in ${TAUS:-1.0 0.9 0.8 0.6 0.44 0.3 0.2 0.1}; do
  best "SELECT count(*) FROM spotsigs_join('base', 'id', 'sig', $tau, 1)"; b1=$s; bp=$val
  best "SELECT count(*) FROM spotsigs_join('base', 'id', 'sig', $tau, 2)"; b2=$s
  best "SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', $tau, 1)"; s1=$s; sp=$val
  best "SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', $tau, 2)"; s2=$s
  t1[$tau]=$s1; t2[$tau]=$s2
  echo "$tau $b1 $b2 $s1 $s2" >> "$OUT/runtime.dat"
  log "$(printf '%-5s %10s %10s %10s %10s %10s %10s %8s' "$tau" "$bp" "$b1" "$b2" "$sp" "$s1" "$s2" "$(ratio "$s1" "$s2")x")"
done

# Tau 0.2 with the built-in memory limit and without the reserved huge pages (the cluster's
# settings above raise both), and where its time goes.
best "SET spotsigs.join_memory_limit = '4GB'; SET spotsigs.join_huge_pages = off;
      SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', 0.2, 2)"
t02=$s; p02=$val
log "scaled, tau 0.2, 2 threads, spotsigs.join_memory_limit = 4GB, spotsigs.join_huge_pages = off: $t02 s ($p02 pairs)"
log "phases at tau 0.2, 2 threads, built-in settings: $(psql -X -qAt -c "SET client_min_messages = debug1" \
  -c "SET spotsigs.join_memory_limit = '4GB'" -c "SET spotsigs.join_huge_pages = off" \
  -c "SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', 0.2, 2)" 2>&1 | sed -n 's/^DEBUG: *spotsigs_join: read/read/p')"

# The same join with spotsigs.join_huge_pages switched the other way (side by side).
hp=$(psql_q -c 'SHOW spotsigs.join_huge_pages')
other=$([[ $hp == on ]] && echo off || echo on)
best "SET spotsigs.join_huge_pages = $other; SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', 0.9, 2)"
log "scaled, tau 0.9, 2 threads, spotsigs.join_huge_pages = $other: $s s (against ${t2[0.9]} s with $hp: $(ratio "$s" "${t2[0.9]}")x)"

# Where the time of one join goes (reading the rows, matching), from its DEBUG1 message.
log "phases at tau 0.9, 2 threads: $(psql -X -qAt -c "SET client_min_messages = debug1" \
  -c "SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', 0.9, 2)" 2>&1 | sed -n 's/^DEBUG: *//p')"

# 3. The ablations (paper Table 2) and pg_trgm.
log ""
REPEAT_SAVED=$REPEAT; REPEAT=1
timed "SET statement_timeout = '${NOPART_TIMEOUT}s'; SELECT count(*) FROM spotsigs_join('scaled', 'id', 'sig', 0.9, 2, 'nopart')" \
  && nopart="$(ratio "$ms" 1000)" || nopart=""
if [[ -n $nopart ]]; then
  log "nopart, all $ROWS rows, tau 0.9, 2 threads: $nopart s ($val pairs)"
else
  nopart=$NOPART_TIMEOUT
  log "nopart, all $ROWS rows, tau 0.9, 2 threads: > $NOPART_TIMEOUT s (cut off by statement_timeout)"
fi
REPEAT=$REPEAT_SAVED
for tau in 0.9 0.6; do
  best "SELECT count(*) FROM spotsigs_join('sub', 'id', 'sig', $tau, 2, 'partitioned')"; p=$s; pp=$val
  best "SELECT count(*) FROM spotsigs_join('sub', 'id', 'sig', $tau, 2, 'nopart')"; np=$s; npp=$val
  REPEAT=1
  best "SELECT count(*) FROM spotsigs_join('sub', 'id', 'sig', $tau, 2, 'noprune')"; nr=$s; nrp=$val
  REPEAT=$REPEAT_SAVED
  log "subsample of $SUBSAMPLE rows, tau $tau, 2 threads: partitioned $p s ($pp pairs), nopart $np s ($npp pairs, $(ratio "$np" "$p")x), noprune $nr s ($nrp pairs, $(ratio "$nr" "$p")x)"
done

# pg_trgm: GIN index and % self-join on the texts of TRGM_DOCS documents spread over all sources.
step=$(( 75400 / TRGM_DOCS )); ((step >= 1)) || step=1
psql_q -c "CREATE TABLE trg AS SELECT id, title || E'\\n' || body AS body FROM docs WHERE id % $step = 0 LIMIT $TRGM_DOCS"
timed "CREATE INDEX trg_gin ON trg USING gin (body gin_trgm_ops)"; gin=$(ratio "$ms" 1000)
psql_q -c "VACUUM ANALYZE trg"
timed "CREATE TABLE trg_sig AS SELECT id, spotsigs(body) AS sig FROM trg"; ext=$(ratio "$ms" 1000)
log ""
log "pg_trgm on $(psql_q -c 'SELECT count(*) FROM trg') documents: GIN index build $gin s; spotsigs extraction $ext s"
for tau in 0.9 0.6; do
  timed "SET pg_trgm.similarity_threshold = $tau; SET enable_seqscan = off;
         SELECT count(*) FROM trg a JOIN trg b ON a.body % b.body AND a.id < b.id"; tr=$(ratio "$ms" 1000); trp=$val
  best "SELECT count(*) FROM spotsigs_join('trg_sig', 'id', 'sig', $tau, 2)"; sj=$s; sjp=$val
  log "  tau $tau: pg_trgm % self-join $tr s ($trp pairs); spotsigs_join $sj s ($sjp pairs): $(ratio "$tr" "$sj")x"
done

# 4. Goals.
t09=${t2[0.9]}
log ""
log "goals at tau 0.9 on $ROWS rows:"
log "  2 threads: $t09 s (goal <= 3 s): $(awk "BEGIN{print ($t09 <= 3) ? \"met\" : \"NOT met\"}")"
log "  against the sequential read: $(ratio "$t09" "$floor")x (goal <= 3x): $(awk "BEGIN{print ($t09 <= 3 * $floor) ? \"met\" : \"NOT met\"}")"
log "  nopart / partitioned: $(ratio "$nopart" "$t09")x (goal >= 10x): $(awk "BEGIN{print ($nopart >= 10 * $t09) ? \"met\" : \"NOT met\"}")"
log "  2 threads against 1: $(ratio "${t1[0.9]}" "$t09")x (goal >= 1.7x): $(awk "BEGIN{print (${t1[0.9]} >= 1.7 * $t09) ? \"met\" : \"NOT met\"}")"
log "goals at tau 0.2 on $ROWS rows, 2 threads, built-in settings:"
log "  $t02 s (goal <= 30 s): $(awk "BEGIN{print ($t02 <= 30) ? \"met\" : \"NOT met\"}")"
log "  against the sequential read: $(ratio "$t02" "$floor")x (goal <= 60x): $(awk "BEGIN{print ($t02 <= 60 * $floor) ? \"met\" : \"NOT met\"}")"
log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (on $(nproc) cores; the machine is shared, so times run high)"

gnuplot <<GP
set terminal pngcairo size 900,600 noenhanced
set output '$OUT/join_runtime.png'
set title 'spotsigs_join runtime against the threshold (textcorpus, $(nproc) cores)'
set xlabel 'similarity threshold tau'
set ylabel 'runtime (s)'
set logscale y
set key top right
set grid
plot '$OUT/runtime.dat' using 1:4 with linespoints title '$ROWS docs, 1 thread', \
     '' using 1:5 with linespoints title '$ROWS docs, 2 threads', \
     '' using 1:2 with linespoints title '75,400 docs, 1 thread', \
     '' using 1:3 with linespoints title '75,400 docs, 2 threads', \
     $floor with lines dashtype 2 title 'sequential read of $ROWS signatures'
GP
log ""
log "plot: $OUT/join_runtime.png; table: $OUT/runtime.dat; log: $OUT/results.txt"
