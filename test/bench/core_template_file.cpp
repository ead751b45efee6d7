// Times the content measure's statistics (template_signatures) on spot signatures read from a
// file (elapsed and processor time, which a machine shared with other jobs moves less), and
// prints how many template signatures they found and a checksum of them.
//
//   build/core_template_file SIGS.tsv [THREADS [REPEAT]]
//
// SIGS.tsv holds COPY text lines "id<TAB>{hex[:freq],...}" (an id and a spotsig), as
// `\copy (SELECT id, sig FROM t) to 'SIGS.tsv'` writes them; every row counts, empty ones too.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "core/join/join.hpp"
#include "core/signature/text_format.hpp"
#include "core/template/content.hpp"

using namespace spotsigs;

// Seconds of processor time the process has used (every thread's, user and system).
static double cpu_seconds() {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s SIGS.tsv [THREADS [REPEAT]]\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1;
    const int repeat = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
    Collection docs;
    std::string line;
    while (std::getline(in, line)) {
        size_t tab = line.find('\t');
        if (tab == std::string::npos) continue;
        Multiset m = parse_text(std::string_view(line).substr(tab + 1));
        docs.add(std::stoll(line.substr(0, tab)), m.view());
    }
    for (int r = 0; r < repeat; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_seconds();
        std::vector<uint64_t> t = template_signatures(docs, threads);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double cpu = cpu_seconds() - c0;
        uint64_t sum = 0;
        for (uint64_t h : t) sum = sum * 31 + h;
        std::printf("%zu rows, %d threads: %zu template signatures (checksum %016llx) in %.3f s (processor %.3f s)\n",
                    docs.size(), threads, t.size(), static_cast<unsigned long long>(sum), s, cpu);
    }
    return 0;
}
