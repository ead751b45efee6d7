#!/usr/bin/env bash
# Boost's containers against the core's own in its hot paths, measured with the standalone core
# benchmarks. Each variant is the core's source file with only the container's type replaced (a
# copy under OUT, the tree is not changed), linked with the benchmark's driver and the benchmark
# build of the rest of the core:
#  - extraction: the per-document hash -> count table (SignatureCounts, hand-written open
#    addressing) against boost::unordered_flat_map and std::unordered_map (build/core_extract on
#    the textcorpus documents, text and HTML, MB/s of one thread);
#  - content statistics: the judging workers' memo of pair similarities (std::unordered_map)
#    against boost::unordered_flat_map (build/core_template_file, 1 and 2 threads);
#  - index search: the candidates of threshold_search (std::unordered_map) against
#    boost::unordered_flat_map, and its per-query vectors (order, df) as boost::container::
#    small_vector (build/core_index_search, every 25th row a query, plain and content bound).
# The variants run alternately, ROUNDS times each; compare the best figures (other jobs on the
# machine only slow a run down).
#
#   BOOST_INC=/path/to/include test/bench/containers_bench.sh
#
# BOOST_INC must hold Boost 1.81 or later (boost/unordered/unordered_flat_map.hpp; Debian's
# libboost1.81-dev; without installing it: `apt-get download libboost1.81-dev` and
# `dpkg -x libboost1.81-dev_*.deb DIR`, then BOOST_INC=DIR/usr/include). SIGS (default: the
# textcorpus signatures, OUT/textcorpus.tsv, which `\copy (SELECT id, sig FROM corpus_base) to
# ...` writes from the join benchmarks' database) feeds the statistics and the search; TEXTCORPUS
# the extraction. REBUILD=0 keeps the variants built by an earlier run. Writes OUT/results.txt
# (default build/containers) and copies it to RESULTS (default
# test/bench/results/containers_results.txt; RESULTS= keeps it in OUT).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
: "${BOOST_INC:=/usr/include}" "${OUT:=$repo/build/containers}" "${ROUNDS:=3}"
: "${SIGS:=$OUT/textcorpus.tsv}"
shared=$repo/../shared
[ -d "$shared" ] || shared=$repo/../../shared
: "${TEXTCORPUS:=$shared/data/textcorpus/docs.tsv.gz}"
if [[ ! -e $BOOST_INC/boost/unordered/unordered_flat_map.hpp ]]; then
  echo "BOOST_INC=$BOOST_INC has no boost/unordered/unordered_flat_map.hpp (Boost >= 1.81 needed)" >&2
  exit 2
fi
mkdir -p "$OUT"
log() { echo "$*" | tee -a "$OUT/results.txt"; }
: > "$OUT/results.txt"
flags=(-std=c++17 -O3 -march=x86-64-v2 -DNDEBUG -g -pthread -Isrc -isystem "$BOOST_INC")
make -s -j2 build/bench/libspotsigs_core.a
lib=build/bench/libspotsigs_core.a

# variant NAME DRIVER SOURCE [SED...]: OUT/NAME, the driver linked with SOURCE edited by the sed
# expressions (none: as it is).
variant() {
  local name=$1 driver=$2 src=$3
  shift 3
  [[ ${REBUILD:-1} == 0 && -x $OUT/$name/bench ]] && return 0
  mkdir -p "$OUT/$name"
  sed "$@" "$src" > "$OUT/$name/$(basename "$src")"
  cp "$OUT/$name/$(basename "$src")" "$OUT/$name/variant.cpp"
  g++ "${flags[@]}" -I"$here" -include "$here/containers_variants.hpp" -c -o "$OUT/$name/variant.o" "$OUT/$name/variant.cpp"
  g++ "${flags[@]}" -o "$OUT/$name/bench" "test/bench/$driver.cpp" "$OUT/$name/variant.o" "$lib" -pthread
}

variant extract-own core_extract src/core/extract/extract.cpp -e ''
variant extract-boost core_extract src/core/extract/extract.cpp \
  -e 's|#include "core/extract/signature_counts.hpp"|#define SPOTSIGS_COUNTS_MAP boost::unordered_flat_map\n#include "containers_counts.hpp"|'
variant extract-std core_extract src/core/extract/extract.cpp \
  -e 's|#include "core/extract/signature_counts.hpp"|#define SPOTSIGS_COUNTS_MAP std::unordered_map\n#include "containers_counts.hpp"|'
variant template-std core_template_file src/core/template/content.cpp -e ''
variant template-boost core_template_file src/core/template/content.cpp \
  -e 's|std::vector<std::unordered_map<uint64_t, double>> cache|std::vector<boost::unordered_flat_map<uint64_t, double>> cache|'
variant search-std core_index_search src/core/index/index_search.cpp -e ''
variant search-boost core_index_search src/core/index/index_search.cpp \
  -e 's|std::unordered_map<uint64_t, Candidate> cands;|boost::unordered_flat_map<uint64_t, Candidate> cands;|' -e 's|it = cands.erase(it);|cands.erase(it++);  // boost 1.81: erase returns nothing, other iterators stay valid|'
variant search-boost-small core_index_search src/core/index/index_search.cpp \
  -e 's|std::unordered_map<uint64_t, Candidate> cands;|boost::unordered_flat_map<uint64_t, Candidate> cands;|' -e 's|it = cands.erase(it);|cands.erase(it++);  // boost 1.81: erase returns nothing, other iterators stay valid|' \
  -e 's|const std::vector<uint32_t>& order, const Bound& b|const boost::container::small_vector<uint32_t, 256>\& order, const Bound\& b|' \
  -e 's|std::vector<uint32_t> order(q.size);|boost::container::small_vector<uint32_t, 256> order(q.size);|' \
  -e 's|std::vector<uint64_t> df(q.size);|boost::container::small_vector<uint64_t, 256> df(q.size);|'
for v in template-boost search-boost search-boost-small; do
  case $v in template-*) f=content.cpp;; *) f=index_search.cpp;; esac
  if cmp -s "$OUT/${v%%-*}-std/$f" "$OUT/$v/$f"; then echo "variant $v: the edit did not apply" >&2; exit 1; fi
done
if cmp -s "$OUT/extract-own/extract.cpp" "$OUT/extract-boost/extract.cpp"; then echo "variant extract-boost: the edit did not apply" >&2; exit 1; fi

log "== Boost containers against the core's, $(date -u +%FT%TZ), $(grep -m1 'define BOOST_LIB_VERSION' "$BOOST_INC/boost/version.hpp"), g++ $(g++ -dumpversion), $ROUNDS rounds alternating"
for round in $(seq "$ROUNDS"); do
  for v in extract-own extract-boost extract-std; do
    log "round $round, $v (load average $(cut -d' ' -f1-3 /proc/loadavg)): $(SPOTSIGS_TEXTCORPUS=$TEXTCORPUS "$OUT/$v/bench" 20000 2 | tr '\n' ' ')"
  done
  for v in template-std template-boost; do
    for th in 1 2; do
      log "round $round, $v (load average $(cut -d' ' -f1-3 /proc/loadavg)): $("$OUT/$v/bench" "$SIGS" $th 2 | tail -1)"
    done
  done
  for v in search-std search-boost search-boost-small; do
    log "round $round, $v (load average $(cut -d' ' -f1-3 /proc/loadavg)): $("$OUT/$v/bench" "$SIGS" 25 2 | tr '\n' ' ')"
  done
done
# The best figure of each variant over the rounds.
summary() {
  python3 - "$OUT/results.txt" <<'PY'
import collections, re, sys
best = collections.OrderedDict()
def keep(key, x, higher):
    best[key] = x if key not in best else (max if higher else min)(best[key], x)
for line in open(sys.argv[1]):
    m = re.match(r'round \d+, (\S+) \(', line)
    if not m:
        continue
    v = m.group(1)
    if v.startswith('extract'):
        for kind in ('plain', 'html'):
            keep(f'{v}, {kind}: MB/s (processor)', float(re.search(kind + r'\s+[\d.]+\s+([\d.]+)', line).group(1)), True)
    elif v.startswith('template'):
        t = re.search(r'(\d+) threads.*processor ([\d.]+) s', line)
        keep(f'{v}, {t.group(1)} threads: processor s', float(t.group(2)), False)
    else:
        for kind, x in re.findall(r'(plain|content) bound: ([\d.]+) us', line):
            keep(f'{v}, {kind} bound: us a query', float(x), False)
print('best of the rounds:')
for k, x in best.items():
    print(f'  {k} {x}')
PY
}
summary | tee -a "$OUT/results.txt"
results=${RESULTS-$repo/test/bench/results/containers_results.txt}
[[ -n $results ]] && cp "$OUT/results.txt" "$results"
exit 0
