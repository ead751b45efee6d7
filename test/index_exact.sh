#!/usr/bin/env bash
# Exactness of the spotsigs index on newsframes-dev: loads the pages into database $1 (created if
# missing; default spotsigs_exact), extracts signatures, builds the index, checks it, and runs
# index_exact.sql (index results vs sequential scan at tau 0.44 and 0.8, top-10 vs full sort).
# Connection settings come from the usual PG* environment variables.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
db=${1:-spotsigs_exact}
data=${DATA:-$here/../../shared/data/newsframes-dev/pages.tsv.gz}
psql -X -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 || createdb "$db"
psql -X -v ON_ERROR_STOP=1 -d "$db" <<SQL
DROP TABLE IF EXISTS pages;
CREATE EXTENSION IF NOT EXISTS spotsigs;
CREATE TABLE pages (id int PRIMARY KEY, cluster int NOT NULL, host text, kind text, html text);
\copy pages from program 'zcat $data'
ALTER TABLE pages ADD COLUMN sig spotsig;
UPDATE pages SET sig = spotsigs(html);
VACUUM ANALYZE pages;
CREATE INDEX pages_sig ON pages USING spotsigs (sig);
SELECT spotsigs_index_check('pages_sig');
SQL
psql -X -v ON_ERROR_STOP=1 -d "$db" -f "$here/index_exact.sql"
