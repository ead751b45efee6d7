#!/usr/bin/env bash
# Peak memory of one spotsigs join, measured against its own accounting.
#
#   test/bench/join_memory.sh "SQL settings;" "SELECT ... FROM spotsigs_join(...)"
#
# Runs the settings and the query in one fresh psql session (PGHOST etc. from the environment)
# with client_min_messages = debug1, samples the backend's /proc/PID/status every 0.1 s while it
# runs, and prints: the elapsed time, the query's last row, the peak private resident memory
# (RssAnon: the process's own heap and mappings, the part a join's accounting covers; shared
# buffers the scan touches count in RssShmem and VmHWM instead), VmHWM at the end, and the
# accounted total the join logged at DEBUG1 (documents, matcher structures and the result rows
# the tuplestore keeps in memory, up to work_mem); with JOIN_MEMORY_PASSES=1 also what each pass
# (or the single run) read, found and accounted.
set -euo pipefail
settings=$1
query=$2
psql=${PSQL:-psql}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 777 "$tmp"
start=$(date +%s.%N)
"$psql" -X -qAt -v ON_ERROR_STOP=1 \
  -c "SELECT pg_backend_pid()" -c "SET client_min_messages = debug1" -c "$settings" \
  -c "SELECT pg_sleep(0.3)" -c "$query" > "$tmp/out" 2> "$tmp/err" &
ps=$!
pid=""
while [[ -z $pid ]] && kill -0 $ps 2>/dev/null; do pid=$(head -1 "$tmp/out" 2>/dev/null || true); sleep 0.05; done
peak_anon=0 hwm=0
while kill -0 $ps 2>/dev/null && [[ -r /proc/$pid/status ]]; do
  read -r anon h < <(awk '/^RssAnon:/ {a=$2} /^VmHWM:/ {h=$2} END {print a+0, h+0}' /proc/$pid/status 2>/dev/null || echo "0 0")
  (( anon > peak_anon )) && peak_anon=$anon
  (( h > hwm )) && hwm=$h
  sleep 0.1
done
status=0
wait $ps || status=$?
end=$(date +%s.%N)
acc=$(sed -n "s/.*accounted total \([0-9]*\) MB.*/\1/p" "$tmp/err" | tail -1)
echo "elapsed_s=$(awk "BEGIN{printf \"%.2f\", $end - $start - 0.3}") result=$(tail -1 "$tmp/out")" \
     "peak_rss_anon_mb=$((peak_anon / 1024)) vmhwm_mb=$((hwm / 1024)) accounted_mb=${acc:-none}" \
     "ratio=$(awk "BEGIN{a=${acc:-0}; p=$peak_anon/1024; printf \"%.2f\", (p > 0 ? a / p : 0)}")"
grep -E "passes|ERROR|DETAIL|HINT" "$tmp/err" || true
# JOIN_MEMORY_PASSES=1: also each pass's documents, pairs and accounted peak.
[[ -n ${JOIN_MEMORY_PASSES:-} ]] && grep -E "spotsigs_join: (read|accounted peak)" "$tmp/err" | sed 's/^DEBUG: */  pass: /'
exit $status
