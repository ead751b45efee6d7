#!/usr/bin/env bash
# content_trigger_bench.sh: the cost of the content measure's stored statistics and trigger beside
# the plain trigger, one run each, on textcorpus: spotsigs_analyze on the first BASE rows (and on
# all 75,400 with ALL=1), then NEW further rows (taken from every 3rd id above BASE) COPYed... as
# one INSERT ... SELECT through the trigger: plain at '0.4', then without a threshold (content
# measure with the stored template), each rolled back.
# Usage: test/with-cluster test/bench/content_trigger_bench.sh   (BASE=20000 NEW=5000 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=$(cd ../shared 2>/dev/null || cd ../../shared; pwd)
BASE=${BASE:-20000} NEW=${NEW:-5000}
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
q <<SQL
CREATE EXTENSION IF NOT EXISTS spotsigs;
CREATE TABLE src (id bigint PRIMARY KEY, source text, title text, body text);
\copy src from program 'zcat $shared/data/textcorpus/docs.tsv.gz'
CREATE TABLE sigs AS SELECT id, spotsigs(body) AS sig FROM src;
ALTER TABLE sigs ADD PRIMARY KEY (id);
CREATE TABLE pages (id bigint PRIMARY KEY, sig spotsig, dup bigint, sim float8);
INSERT INTO pages (id, sig) SELECT id, sig FROM sigs WHERE id % 3 <> 0 OR id <= $BASE ORDER BY id LIMIT $BASE;
CREATE INDEX ON pages USING spotsigs (sig);
VACUUM ANALYZE pages;
SQL
if [ "${ALL:-0}" = 1 ]; then
  q -c '\timing on' -c "SELECT 'spotsigs_analyze, 75,400 rows: ' || spotsigs_analyze('sigs', 'sig')" | grep -E 'analyze|Time'
fi
q -c '\timing on' -c "SELECT 'spotsigs_analyze, $BASE rows: ' || spotsigs_analyze('pages', 'sig')" | grep -E 'analyze|Time'
newrows="SELECT id, sig FROM sigs WHERE id % 3 = 0 AND id > $BASE ORDER BY id LIMIT $NEW"
for args in "'sig', 'dup', 'sim', '0.4'" "'sig', 'dup', 'sim'"; do
  q -c "CREATE TRIGGER flag BEFORE INSERT ON pages FOR EACH ROW EXECUTE FUNCTION spotsigs_flag_duplicates($args)"
  echo "trigger ($args), $NEW rows:"
  q -c 'BEGIN' -c '\timing on' -c "INSERT INTO pages (id, sig) $newrows" -c '\timing off' \
    -c "SELECT count(dup) AS flagged FROM pages WHERE id > $BASE" -c 'ROLLBACK' | grep -E 'Time|^ +[0-9]'
  q -c 'DROP TRIGGER flag ON pages' -c 'VACUUM pages'
done
