#!/usr/bin/env bash
# The join under spotsigs.join_memory_limit on the 1M scaled rows, side by side in one run:
#  - the sequential read of the signature column (SELECT sum(length(sig)): the floor of a join);
#  - tau 0.9 with the default limit and with LIMIT_SMALL (default 256MB, which runs in passes):
#    time, pairs (count and a checksum of every (id1, id2, similarity)) and their ratio;
#  - tau TAU_LOW (default 0.2; none skips it) with the default limit: time, against the
#    sequential read;
#  each join with its accounted peak against the backend's sampled resident memory
#  (test/bench/join_memory.sh).
#
#   PGHOST=... PGDATABASE=... test/bench/join_limit_bench.sh
#
# Runs against the cluster in the environment (started with the settings you want to measure;
# the extension installed). When table `scaled` is missing it is built as join_bench.sh builds it
# (textcorpus scaled to ROWS, default 1,000,000 rows, VARIANT_SHARE 0.10, SEED 42, SCALE_MODE vocab).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${ROWS:=1000000}" "${VARIANT_SHARE:=0.10}" "${SEED:=42}" "${SCALE_MODE:=vocab}"
: "${LIMIT_SMALL:=256MB}" "${TAU_LOW:=0.2}" "${OUT:=$repo/build/join-limit-bench}"
corpus=${CORPUS:-$repo/../shared/data/textcorpus}
psql_q() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }
mkdir -p "$OUT"
chmod 0777 "$OUT" 2>/dev/null || true

# shellcheck source=scaled_lib.sh
. "$here/scaled_lib.sh"
if [[ $(psql_q -c "SELECT to_regclass('scaled') IS NULL") == t ]]; then
  load_scaled scaled "$ROWS"
fi

log() { echo "$*" | tee -a "$OUT/results.txt"; }
: > "$OUT/results.txt"
log "== join under spotsigs.join_memory_limit, $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
log "scaled: $(psql_q -c "SELECT count(*) || ' rows, ' || pg_size_pretty(pg_total_relation_size('scaled')) FROM scaled");" \
    "default limit $(psql_q -c "LOAD 'spotsigs'" -c 'SHOW spotsigs.join_memory_limit'), work_mem $(psql_q -c 'SHOW work_mem')," \
    "max_threads $(psql_q -c "LOAD 'spotsigs'" -c 'SHOW spotsigs.max_threads')"

# Seconds of the fastest of two runs of a plain query.
seq_read() {
  local best=""
  for _ in 1 2; do
    local ms
    ms=$(psql_q -c '\timing on' -c "SELECT sum(length(sig)) FROM scaled" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
    if [[ -z $best ]] || awk "BEGIN{exit !($ms < $best)}"; then best=$ms; fi
  done
  awk "BEGIN{printf \"%.3f\", $best / 1000}"
}
join_q() { echo "SELECT count(*) || ' ' || sum(hashtext(id1 || ' ' || id2 || ' ' || similarity)) FROM spotsigs_join('scaled', 'id', 'sig', $1)"; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }

floor=$(seq_read)
log "sequential read of scaled.sig: $floor s"
a=$("$here/join_memory.sh" "SELECT 1;" "$(join_q 0.9)")
log "tau 0.9, default limit: $a"
b=$("$here/join_memory.sh" "SET spotsigs.join_memory_limit = '$LIMIT_SMALL';" "$(join_q 0.9)")
log "tau 0.9, limit $LIMIT_SMALL: $b"
ta=$(field elapsed_s "$a"); tb=$(field elapsed_s "$b")
ra=$(sed -n 's/.*result=\([0-9]* -\{0,1\}[0-9]*\).*/\1/p' <<<"$a"); rb=$(sed -n 's/.*result=\([0-9]* -\{0,1\}[0-9]*\).*/\1/p' <<<"$b")
log "  same pairs: $([[ $ra == "$rb" ]] && echo yes || echo NO) ($ra / $rb); time ratio $(awk "BEGIN{printf \"%.2f\", $tb / $ta}")x (goal <= 2x)"
if [[ $TAU_LOW != none ]]; then
  c=$("$here/join_memory.sh" "SELECT 1;" "$(join_q "$TAU_LOW")") || true
  log "tau $TAU_LOW, default limit: $c"
  tc=$(field elapsed_s "$c")
  log "  against the sequential read: $(awk "BEGIN{printf \"%.1f\", $tc / $floor}")x"
fi
floor2=$(seq_read)
log "sequential read again: $floor2 s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
