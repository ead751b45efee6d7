#!/usr/bin/env bash
# Single-thread matching against the published AllPairs, PPJoin and GroupJoin of the VLDB 2016
# set-similarity-join evaluation (Mann, Augsten, Bouros), on the same spot-signature multisets.
#
#   test/bench/ssjoin_compare.sh /path/to/gpussjoin-checkout [path/to/textcorpus]
#
# 1. builds their program with test/bench/ssjoin_build.sh (see there why from gpussjoin) and
#    ours, build/core_join_file (test/bench/core_join_file.cpp), with the same compiler flags;
# 2. in a throwaway cluster (pg_virtualenv) extracts the spot signatures of the 75,400 documents
#    of textcorpus (title, newline, body, as join_bench.sh does) and, when ROWS is set, scales
#    them to ROWS documents with scale_corpus (VARIANT_SHARE, SEED as in join_bench.sh);
#    REUSE=1 keeps the signatures of an earlier run (OUT/base.tsv);
# 3. for each tau in TAUS (default 0.9 0.8 0.6 0.44 0.3 0.2): our core self_join on one thread, timed
#    whole, from the multisets in stored order (fastest of REPEAT, default 3); and each of their
#    three algorithms on the same multisets in two forms (core_join_file writes both; the k-th
#    copy of a signature is its own element):
#     - "prepared": integer records already ordered by token frequency and size, the form the
#       evaluation's data sets come in (fastest of REPEAT runs);
#     - "own prep": the hex tokens, which their program orders itself (--whitespace; about 20 s
#       of tokenising per run on textcorpus, so REPEAT_OWN runs, default 1). Its join then
#       runs on a heap its preparation has already grown, and is the faster of the two.
#    Their program times the join alone, after reading, ordering and index set-up;
# 4. prints the pair counts and the ratios their join / our whole call, to
#    OUT/ssjoin_results.txt (default build/ssjoin-bench), and when the run completes copies it over
#    RESULTS/ssjoin_results.txt (default test/bench/results; RESULTS= keeps it in OUT only). Their count must equal ours less the
#    pairs of similarity exactly tau that their floating-point overlap bound rounds away
#    (ceil((|a|+|b|) tau/(1+tau)) a hair above an integer), which core_join_file counts.
# Needs: make install done; Debian packages libboost-program-options-dev, libsparsehash-dev.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
src=${1:?path to a gpussjoin checkout}
corpus=$(cd "${2:-$repo/../shared/data/textcorpus}" && pwd)
: "${TAUS:=0.9 0.8 0.6 0.44 0.3 0.2}" "${REPEAT:=3}" "${REPEAT_OWN:=1}" "${ROWS:=0}" "${VARIANT_SHARE:=0.10}" "${SEED:=42}"
: "${OUT:=$repo/build/ssjoin-bench}"
mkdir -p "$OUT"; chmod 0777 "$OUT"
export REPEAT

"$here/ssjoin_build.sh" "$src" "$OUT/set_sim_join-src" > "$OUT/build.log" 2>&1 \
  || { tail -20 "$OUT/build.log"; exit 1; }
their="$OUT/set_sim_join-src/set_sim_join"
make -s -C "$repo" build/core_join_file
ours="$repo/build/core_join_file"

# Signatures, through pg_virtualenv (runs as postgres when started as root).
export PATH=${PGBIN:-/usr/lib/postgresql/15/bin}:$PATH
[[ ${REUSE:-} == 1 && -s $OUT/base.tsv ]] || pg_virtualenv -t -v 15 bash -c "
  set -euo pipefail
  psql() { command psql -X -v ON_ERROR_STOP=1 -qAt \"\$@\"; }
  psql -c 'CREATE EXTENSION spotsigs'
  psql -c 'CREATE TABLE docs (id bigint PRIMARY KEY, source text, title text, body text)'
  psql -c \"\\\\copy docs from program 'zcat \\\"$corpus/docs.tsv.gz\\\"'\"
  psql -c \"\\\\copy (SELECT id, spotsigs(title || E'\\\\n' || body) FROM docs ORDER BY id) to '$OUT/base.tsv'\"
"
sigs="$OUT/base.tsv"
if (( ROWS > 0 )); then
  g++ -std=c++17 -O2 -o "$OUT/scale_corpus" "$here/scale_corpus.cpp"
  "$OUT/scale_corpus" "$ROWS" "$VARIANT_SHARE" "$SEED" vocab < "$OUT/base.tsv" > "$OUT/scaled.tsv" 2> "$OUT/scale_summary.txt"
  sigs="$OUT/scaled.tsv"
fi

res="$OUT/ssjoin_results.txt"
log() { echo "$*" | tee -a "$res"; }
: > "$res"
log "== single-thread join against set_sim_join (VLDB 2016), $(date -u +%FT%TZ), $(nproc) cores"
log "input: $(basename "$sigs") ($( ((ROWS > 0)) && echo "$ROWS scaled rows" || echo "textcorpus")), REPEAT=$REPEAT"
log "their source: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "$src") (gpussjoin, CPU verification put back)"
"$ours" "$sigs" "$OUT/records.txt" "$OUT/tokens.txt" $TAUS > "$OUT/ours.txt" 2> "$OUT/ours.log"
log "$(cat "$OUT/ours.log")"
log "$(printf '%-5s %8s %7s | %-9s %8s %9s %9s %8s %8s' tau pairs ours algorithm pairs prepared own_prep ratio_p ratio_o)"
# their ALGO TAU INPUT-ARGS...: runs their program; sets $tpairs and $t (join seconds).
their_run() {
  local line
  # Their output: "count,join seconds,GPU seconds (0 here)".
  line=$("$their" --algorithm "$1" --threshold "$2" "${@:3}" --threads 1 --scenario 1 --devmemory 1M \
         | grep -m1 '^[0-9]*,')
  tpairs=${line%%,*}; t=$(cut -d, -f2 <<<"$line")
}
# fastest N ALGO TAU INPUT-ARGS...: the fastest of N runs in $best; pair counts checked.
fastest() {
  local n=$1; shift; best=""
  for ((k = 0; k < n; k++)); do
    their_run "$@"
    (( tpairs == opairs - rounded )) || mismatch=1
    if [[ -z $best ]] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
  done
}
mismatch=0
for tau in $TAUS; do
  read -r _ opairs osec _ rounded < <(awk -v t="$tau" '$1 == t' "$OUT/ours.txt")
  for algo in allpairs ppjoin groupjoin; do
    fastest "$REPEAT" "$algo" "$tau" --input "$OUT/records.txt"; prep=$best
    fastest "$REPEAT_OWN" "$algo" "$tau" --input "$OUT/tokens.txt" --whitespace; own=$best
    log "$(printf '%-5s %8s %7.4f | %-9s %8s %9.4f %9.4f %7.2fx %7.2fx' "$tau" "$opairs" "$osec" "$algo" "$tpairs" \
      "$prep" "$own" "$(awk "BEGIN{print $prep / $osec}")" "$(awk "BEGIN{print $own / $osec}")")"
  done
  log "      ($rounded of our pairs have similarity exactly $tau and fall below their rounded bound)"
done
if (( mismatch == 0 )); then log "pair counts: theirs = ours - rounded-away pairs, in every run"
else log "pair counts: DIFFERENT beyond the rounded-away pairs (see above)"; fi
log "ratio = their join time / our whole call (above 1: ours is faster)"
rm -f "$OUT/records.txt" "$OUT/tokens.txt" "$OUT/scaled.tsv"
results=${RESULTS-$repo/test/bench/results}
[[ -z $results ]] || cp "$res" "$results/ssjoin_results.txt"
