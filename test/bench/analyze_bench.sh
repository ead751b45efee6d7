#!/usr/bin/env bash
# analyze_bench.sh TABLE...: the time of spotsigs_analyze(TABLE, 'sig') on each table, one run
# each, in a new session: elapsed, the backend's processor time (user + system of all its
# threads, from /proc/PID/stat) and its peak memory (VmHWM, the peak resident set, which counts
# the shared buffers it touched; and the largest RssAnon, its private memory, sampled every 50 ms).
# The tables need a column sig spotsig; the published figures' tables: corpus_base (the 75,400
# textcorpus documents, as scaled_lib.sh makes it) and content_vocab (1,000,000 scaled rows,
# vocab mode, with newsframes-dev embedded: 1,001,353 rows, as test/bench/content_cost_bench.sh
# makes and keeps them). Runs as root or as the server's user on the server's machine (it reads
# the backend's /proc entries).
#   PGHOST=... PGDATABASE=... test/bench/analyze_bench.sh corpus_base content_vocab
set -euo pipefail
echo "# test/bench/analyze_bench.sh $*, $(date -u +%FT%TZ), $(nproc) cores"
ticks=$(getconf CLK_TCK)
for t in "$@"; do
  fifo=$(mktemp -u /tmp/analyze-bench.XXXXXX)
  mkfifo "$fifo"
  # One session: its pid first, then the call once the sampler has started.
  { psql -X -qAt -v ON_ERROR_STOP=1 -c 'SELECT pg_backend_pid()' -c '\o /dev/null' \
      -c "SELECT count(*) FROM $t" -c '\o' -c '\! cat '"$fifo"' >/dev/null' \
      -c '\timing on' -c "SELECT spotsigs_analyze('$t', 'sig')" -c '\timing off' \
      -c "SELECT pg_sleep(0.2)" -c '\! cat '"$fifo"' >/dev/null'; } >"$fifo.out" 2>&1 &
  psql_pid=$!
  while [ ! -s "$fifo.out" ]; do sleep 0.05; done
  pid=$(head -1 "$fifo.out")
  # Reads after the count(*) above (the table's pages read once, as the call reads them).
  sleep 0.5
  read -r -a st </proc/"$pid"/stat
  cpu0=$((st[13] + st[14]))
  anon=0
  echo go >"$fifo"
  (while [ -e /proc/"$pid" ]; do
     a=$(awk '/^RssAnon/ {print $2}' /proc/"$pid"/status 2>/dev/null || echo 0)
     [ "${a:-0}" -gt "$anon" ] && anon=$a && echo "$anon" >"$fifo.anon"
     sleep 0.05
   done) &
  sampler=$!
  until grep -q '^Time:' "$fifo.out"; do sleep 0.05; done
  read -r -a st </proc/"$pid"/stat
  cpu1=$((st[13] + st[14]))
  hwm=$(awk '/^VmHWM/ {print $2}' /proc/"$pid"/status)
  echo done >"$fifo"
  wait "$psql_pid"
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  rows=$(psql -X -qAt -c "SELECT count(*) FROM $t")
  printf '%s: %s rows, template %s signatures; elapsed %s ms, backend processor %.2f s, peak resident (VmHWM) %d MB, peak private (RssAnon) %d MB; load average %s\n' \
    "$t" "$rows" "$(sed -n 2p "$fifo.out")" "$(awk '/^Time:/ {print $2}' "$fifo.out")" \
    "$(echo "($cpu1 - $cpu0) / $ticks" | bc -l)" $((hwm / 1024)) $(($(cat "$fifo.anon" 2>/dev/null || echo 0) / 1024)) \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
  rm -f "$fifo" "$fifo.out" "$fifo.anon"
done
