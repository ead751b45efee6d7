#!/usr/bin/env bash
# The spotsigs index benchmark (issue 3): 1M+ rows generated from ../shared/data/textcorpus.
#
#   test/bench/index_bench.sh [database]        (default spotsigs_bench; PG* variables apply)
#
# Steps: load textcorpus into docs (75,400 rows) and extract base = spotsigs(body); generate
# bench = 14 perturbed copies (1,055,600 rows, index_gen.sql); build the index and time % at
# tau 0.8 and top-10 <-> over NQ=1000 queries, the first NSEQ=20 of them also by sequential scan
# (index_bench.sql); then spotsigs against pg_trgm's GIN index on the same text, NTRGM=10
# queries on the 75,400 documents (index_trgm.sql; one pg_trgm query takes 15-20 s there). Set REBUILD=0 to reuse existing tables and
# index. Needs the server to have maintenance_work_mem of a few hundred MB to build in minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
db=${1:-spotsigs_bench}
data=${DATA:-$here/../../../shared/data/textcorpus/docs.tsv.gz}
NQ=${NQ:-1000}; NSEQ=${NSEQ:-20}; NTRGM=${NTRGM:-10}; REBUILD=${REBUILD:-1}
psql -X -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 || createdb "$db"
if [ "$REBUILD" = 1 ]; then
  psql -X -v ON_ERROR_STOP=1 -d "$db" <<SQL
CREATE EXTENSION IF NOT EXISTS spotsigs;
DROP TABLE IF EXISTS docs, base, bench;
CREATE TABLE docs (id bigint PRIMARY KEY, source text, title text, body text);
\copy docs from program 'zcat $data'
CREATE TABLE base AS SELECT id, spotsigs(body) AS sig FROM docs;
SQL
  psql -X -v ON_ERROR_STOP=1 -d "$db" -v copies=14 -f "$here/index_gen.sql"
fi
psql -X -v ON_ERROR_STOP=1 -d "$db" -v nq="$NQ" -v nseq="$NSEQ" -v rebuild="$REBUILD" -f "$here/index_bench.sql"
psql -X -v ON_ERROR_STOP=1 -d "$db" -v ntrgm="$NTRGM" -f "$here/index_trgm.sql"
