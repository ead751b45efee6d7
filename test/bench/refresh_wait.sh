# refresh_settle (sourced by the trigger benchmarks and evaluations): waits until no background
# refresh worker (spotsigs.trigger_refresh = background) is left, and sets $settled_ns to the
# time (date +%s%N) it first saw none. A worker registered at the end of a statement shows in
# pg_stat_activity only once the postmaster has started it, so "none" must hold for five checks
# 20 ms apart; a worker seen meanwhile starts the count again.
refresh_settle() {
  local quiet=0 n
  settled_ns=$(date +%s%N)
  while [ "$quiet" -lt 5 ]; do
    n=$(psql -X -qAt -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'spotsigs refresh'")
    if [ "$n" = 0 ]; then
      [ "$quiet" = 0 ] && settled_ns=$(date +%s%N)
      quiet=$((quiet + 1))
    else
      quiet=0
    fi
    sleep 0.02
  done
}
