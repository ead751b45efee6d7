# Timing helpers for the SQL benchmarks (sourced): psql_q runs psql quietly, unaligned, stopping
# at the first error; timed SQL runs SQL once and sets $ms (psql's \timing of the last statement)
# and $val (the last result row); best SQL keeps the fastest of $REPEAT runs in $ms and, in
# seconds, $s; ratio A B prints A/B with two decimals.
psql_q() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }
timed() {
  local out
  out=$(psql_q -c '\timing on' -c "$1")
  ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tail -1)
  # || true: a statement without rows (CREATE INDEX) leaves grep nothing to print (status 1).
  val=$(grep -v '^Time:' <<<"$out" | tail -1 || true)
}
best() {
  local b=""
  for ((k = 0; k < REPEAT; k++)); do
    timed "$1"
    if [[ -z $b ]] || awk "BEGIN{exit !($ms < $b)}"; then b=$ms; fi
  done
  ms=$b
  s=$(awk "BEGIN{printf \"%.3f\", $ms/1000}")
}
ratio() { awk "BEGIN{printf \"%.2f\", $1/$2}"; }
