// Times the index's threshold search (threshold_search over in-memory posting lists, the
// structure of the pending list) on spot signatures read from a file: every row is indexed, every
// STEP-th row is a query, at 0.4 with the plain bound and with the content bound (the trigger's
// search without a threshold, here with an empty template). Prints per kind the processor time
// per query (best of REPEAT rounds), the matches found and a checksum of their ids.
//
//   build/core_index_search SIGS.tsv [STEP=25 [REPEAT=3]]
//
// SIGS.tsv holds COPY text lines "id<TAB>{hex[:freq],...}", as `\copy (SELECT id, sig FROM t)
// to 'SIGS.tsv'` writes them.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "core/index/index_search.hpp"
#include "core/index/memory_postings.hpp"
#include "core/signature/text_format.hpp"

using namespace spotsigs;

// Seconds of processor time of this thread.
static double thread_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s SIGS.tsv [STEP [REPEAT]]\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    const size_t step = argc > 2 ? size_t(std::max(1, std::atoi(argv[2]))) : 25;
    const int repeat = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
    std::vector<Multiset> rows;
    std::vector<uint64_t> ids;
    std::string line;
    while (std::getline(in, line)) {
        size_t tab = line.find('\t');
        if (tab == std::string::npos) continue;
        rows.push_back(parse_text(std::string_view(line).substr(tab + 1)));
        ids.push_back(std::stoull(line.substr(0, tab)));
    }
    MemoryPostings index;
    for (size_t r = 0; r < rows.size(); ++r) index.add(ids[r], rows[r].view());
    const struct {
        const char* name;
        SearchMeasure measure;
    } kinds[] = {{"plain bound", SearchMeasure::kPlain}, {"content bound", SearchMeasure::kContentBound}};
    for (const auto& kind : kinds) {
        double best = 1e300;
        size_t queries = 0, matches = 0;
        uint64_t sum = 0;
        for (int round = 0; round < repeat; ++round) {
            queries = matches = 0;
            sum = 0;
            const double t0 = thread_seconds();
            for (size_t r = 0; r < rows.size(); r += step) {
                MultisetView q = rows[r].view();
                MemoryPostings::Source src(index, q);
                std::vector<Match> found = threshold_search(q, 0.4, src, nullptr, nullptr, kind.measure);
                ++queries;
                matches += found.size();
                for (const Match& m : found) sum += m.id * 0x9e3779b97f4a7c15ULL;
            }
            best = std::min(best, thread_seconds() - t0);
        }
        std::printf(
            "%zu rows, %zu queries at 0.4, %s: %.1f us a query (processor, best of %d), %zu matches "
            "(checksum %016llx)\n",
            rows.size(), queries, kind.name, 1e6 * best / double(queries), repeat, matches,
            static_cast<unsigned long long>(sum));
    }
    return 0;
}
