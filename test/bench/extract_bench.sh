#!/usr/bin/env bash
# Extraction throughput benchmark (not a test). Two parts, each measured side by side in one run:
#  1. the pure C++ core (build/core_extract): MB/s for plain text and for HTML pages;
#  2. SQL: spotsigs(body) against to_tsvector('english', body) over the same rows of
#     ../shared/data/textcorpus (plain, and wrapped in an HTML page), in a throwaway cluster.
# Usage: test/bench/extract_bench.sh [ROWS]   (default: all 75,400 documents)
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus=${SPOTSIGS_TEXTCORPUS:-$(cd .. && pwd)/shared/data/textcorpus/docs.tsv.gz}
rows=${1:-75400}
make -s -j2 && make -s install && make -s build/core_extract
echo "== core (C++ only)"
SPOTSIGS_TEXTCORPUS=$corpus build/core_extract
echo "== SQL: spotsigs() vs to_tsvector('english') on the same $rows rows"
test/with-cluster psql -X -q -v ON_ERROR_STOP=1 -v corpus="$corpus" -v rows="$rows" -f test/bench/extract_bench.sql
