#!/bin/bash
# Builds a CPU-only set_sim_join (AllPairs, PPJoin, GroupJoin of Mann, Augsten, Bouros, VLDB 2016)
# for test/bench/ssjoin_compare.sh, from a checkout of chribell/gpussjoin (commit 9154a78).
#
#   test/bench/ssjoin_build.sh /path/to/gpussjoin-checkout /path/to/build-dir
#
# Why this detour: Mann's own release (ssjoin.dbresearch.uni-salzburg.at) is not reachable from
# our machines; gpussjoin is the one public copy of its source we can reach. It keeps Mann's
# filtering code (candidate generation) unchanged but hands each probe's candidates to a GPU
# for verification. This script puts the verification back on the CPU, the way Mann's release
# does it: each candidate is checked with Mann's own verifypair() (verify.h), starting after the
# prefix positions already seen. It edits a copy; the checkout is left as it is.
#  * gpu_handler.h becomes an empty class with the same interface (no CUDA needed);
#  * allpairs.h and mpjoin.h (PPJoin) get the CPU verification loop after candidate generation;
#  * groupjoin.h already verifies on the CPU every pair but each group's representative pair
#    (sent to the GPU); the skip is removed so the CPU verifies that pair too.
# Built with the fork's Release settings (-O3 -DNDEBUG) and, like our build/core_* programs,
# -march=x86-64-v2; statistics counters off. Needs the Debian
# packages libboost-program-options-dev and libsparsehash-dev (old sparsehash pulled in std::tr1).
set -euo pipefail
src=${1:?gpussjoin checkout}; out=${2:?build directory}
[ -f "$src/mpjoin.h" ] && [ -f "$src/gpu_handler.h" ] || { echo "not a gpussjoin checkout: $src" >&2; exit 1; }
rm -rf "$out"; mkdir -p "$out"
cp "$src"/*.h "$src"/*.cxx "$out"/

# The stub: same member functions, no device, no results of its own.
cat > "$out/gpu_handler.h" <<'STUB'
#ifndef GPUSSJOIN_HANDLER_H
#define GPUSSJOIN_HANDLER_H
#include <chrono>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include "definitions.h"
// CPU build: the algorithms verify their candidates themselves; this class only keeps the
// interface the fork's algorithm classes call.
class GPUHandler {
public:
    GPUHandler(unsigned, bool, double, unsigned int, size_t, bool, const std::string&) {}
    void addIndexedRecord(const std::vector<unsigned int>&) {}
    void addForeignRecord(const std::vector<unsigned int>&) {}
    void transferInputCollection() {}
    void transferForeignInputCollection() {}
    void insertProbe(unsigned int) {}
    void insertCandidate(unsigned int) {}
    void updateProbeNumberOfCandidates() {}
    void updateMaxSetSize(unsigned int) {}
    void reserveCandidateSpace() {}
    void flush() {}
    void free() {}
    size_t getResult() { return 0; }
    float getGPUTotalTime() { return 0; }
};
#endif
STUB

# put_back_verification FILE NEED PROBE_POS INDEX_POS: after a probe's candidate generation in
# FILE, verify each candidate with verifypair(), needing overlap NEED. Merging starts after the
# prefixes: the prefix that ends on the larger token was read whole, the other one from just
# after its last common token (PROBE_POS in the probe, INDEX_POS in the indexed record).
put_back_verification() {
  NEED=$2 PROBE_POS=$3 INDEX_POS=$4 perl -0pi -e '
s{(\t\tstatistics\.candidatesP1\.add\(candidateSet\.size\(\)\);\n)\s*_gpuHandler->updateProbeNumberOfCandidates\(\);\n\s*candidateSet\.reset\(\);\n}{$1
\t\tfor (typename CandidateSet_::iterator c = candidateSet.begin(); c != candidateSet.end(); ++c) {
\t\t\tCandidateData & cd = candidateSet.getCandidateData(*c);
\t\t\tIndexedRecord & other = indexedrecords[*c];
\t\t\tunsigned int otherlen = other.tokens.size();
\t\t\tunsigned int need = $ENV{NEED};
\t\t\tunsigned int endother = IndexStructure::verify_indexrecord_start(other, otherlen, this);
\t\t\tunsigned int endprobe = LengthFilterPolicy::verify_record_start(reclen, maxprefix, need);
\t\t\tbool probefirst = record.tokens[endprobe - 1] > other.tokens[endother - 1];
\t\t\tunsigned int p = probefirst ? $ENV{PROBE_POS} : endprobe;
\t\t\tunsigned int q = probefirst ? endother : $ENV{INDEX_POS};
\t\t\tif (verifypair(record.tokens, other.tokens, need, p, q, cd.count)) ++result;
\t\t\tcd.reset();
\t\t}
}s or die "$ARGV: candidate loop not found\n";
s{\n\s*result = _gpuHandler->getResult\(\);}{} or die "$ARGV: result line not found\n";
' "$1"
}
# AllPairs counts the common prefix tokens; PPJoin (MpJoin class) keeps the positions of the
# last one.
put_back_verification "$out/allpairs.h" 'minoverlapcache[otherlen]' cd.count cd.count
put_back_verification "$out/mpjoin.h" cd.minoverlap 'cd.recpos + 1' 'cd.indrecpos + 1'

# GroupJoin: verify the representative pair on the CPU as well.
perl -0pi -e '
s{\n\s*bool first = true;}{} or die "groupjoin.h: first flag not found\n";
s{\n\s*if \(first\) \{\n\s*first = false;\n\s*recpl2 = recpl2->nextgrouprecord;\n\s*continue;\n\s*\}}{} or die "groupjoin.h: skip not found\n";
' "$out/groupjoin.h"

cd "$out"
g++ -std=c++11 -O3 -march=x86-64-v2 -DNDEBUG -DNO_STAT_COUNTERS -include tr1/functional -I. -o set_sim_join \
    main.cxx input.cxx statistics.cxx timing.cxx cmdline_allpairs.cxx cmdline_groupjoin.cxx \
    cmdline_groupjoin_jaccard.cxx cmdline_mpjoin.cxx cmdline_mpjoin_jaccard.cxx \
    -lboost_program_options -lpthread
echo "built $out/set_sim_join"
