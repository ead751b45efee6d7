// Times the core's self-join, on one thread, on spot signatures read from a file, and writes the
// same multisets as integer records in the form set-similarity-join programs read.
//
//   build/core_join_file SIGS.tsv RECORDS.txt TOKENS.txt TAU...
//
// SIGS.tsv holds COPY text lines "id<TAB>{hex[:freq],...}" (an id and a spotsig). Documents with
// an empty signature are skipped. RECORDS.txt receives the same documents as sets of integers, in
// the prepared form of the VLDB 2016 set-similarity-join evaluation (Mann, Augsten, Bouros): one
// line per record, its tokens ascending, records by ascending size, and token numbers given by
// ascending document frequency (the rarest is 0). The elements are the pairs (signature, k) for
// k = 1..freq: two documents share (s, k) exactly for k <= min of their frequencies of s, so set
// overlap and union equal the multiset ones and a set join finds exactly our pairs. TOKENS.txt
// receives the same documents unprepared, in input order: each signature's 16 hex digits
// written freq times (set_sim_join --whitespace numbers the k-th copy of a token as its own
// element, and orders the tokens and records itself).
// For each TAU it prints "tau pairs seconds at_tau rounded": the pairs with similarity >= tau, the fastest of
// REPEAT (environment, default 3) self_join calls, each timed whole (from the multisets in their
// stored hash order: ordering, partitioning and matching are all inside the time), and how many
// of the pairs have a similarity of exactly tau, and how many of those a program loses that
// computes the minimum overlap in floating point (as set_sim_join does: ceil() of a product
// that rounds just above the integer).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/join/join.hpp"
#include "core/signature/text_format.hpp"

using namespace spotsigs;

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s SIGS.tsv RECORDS.txt TOKENS.txt TAU...\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1]);
    std::ofstream out(argv[2]), tokens(argv[3]);
    if (!in || !out || !tokens) {
        std::fprintf(stderr, "cannot open %s, %s or %s\n", argv[1], argv[2], argv[3]);
        return 2;
    }
    Collection docs;
    std::vector<Multiset> sets;
    std::string line;
    size_t skipped = 0;
    while (std::getline(in, line)) {
        size_t tab = line.find('\t');
        if (tab == std::string::npos) continue;
        Multiset m = parse_text(std::string_view(line).substr(tab + 1));
        if (m.hashes.empty()) {
            ++skipped;
            continue;
        }
        docs.add(std::stoll(line.substr(0, tab)), m.view());
        char hex[17];
        for (size_t i = 0; i < m.hashes.size(); ++i) {
            std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(m.hashes[i]));
            for (uint32_t k = 0; k < m.freqs[i]; ++k) tokens << (i || k ? " " : "") << hex;
        }
        tokens << '\n';
        sets.push_back(std::move(m));
    }
    std::fprintf(stderr, "%zu documents, %zu empty ones skipped\n", docs.size(), skipped);

    // Number the elements (hash, k) by ascending document frequency, ties by (hash, k).
    using Elem = std::pair<uint64_t, uint32_t>;
    std::vector<Elem> all;
    for (const Multiset& m : sets)
        for (size_t i = 0; i < m.hashes.size(); ++i)
            for (uint32_t k = 1; k <= m.freqs[i]; ++k) all.emplace_back(m.hashes[i], k);
    std::sort(all.begin(), all.end());
    std::vector<Elem> distinct;
    std::vector<std::pair<uint32_t, uint32_t>> by_df;  // (document frequency, index in distinct)
    for (size_t i = 0; i < all.size();) {
        size_t j = i;
        while (j < all.size() && all[j] == all[i]) ++j;
        by_df.emplace_back(static_cast<uint32_t>(j - i), static_cast<uint32_t>(distinct.size()));
        distinct.push_back(all[i]);
        i = j;
    }
    std::vector<Elem>().swap(all);
    std::stable_sort(by_df.begin(), by_df.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<uint32_t> number(distinct.size());
    for (size_t r = 0; r < by_df.size(); ++r) number[by_df[r].second] = static_cast<uint32_t>(r);
    std::vector<std::vector<uint32_t>> records(sets.size());
    for (size_t d = 0; d < sets.size(); ++d) {
        const Multiset& m = sets[d];
        for (size_t i = 0; i < m.hashes.size(); ++i)
            for (uint32_t k = 1; k <= m.freqs[i]; ++k) {
                auto at = std::lower_bound(distinct.begin(), distinct.end(), Elem(m.hashes[i], k));
                records[d].push_back(number[static_cast<size_t>(at - distinct.begin())]);
            }
        std::sort(records[d].begin(), records[d].end());
    }
    std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    for (const auto& r : records) {
        for (size_t i = 0; i < r.size(); ++i) out << (i ? " " : "") << r[i];
        out << '\n';
    }
    out.close();
    std::fprintf(stderr, "%zu distinct elements (signature, k) written\n", distinct.size());

    const char* rep = std::getenv("REPEAT");
    int repeat = rep ? std::max(1, std::atoi(rep)) : 3;
    for (int t = 4; t < argc; ++t) {
        JoinOptions opt;
        opt.tau = std::atof(argv[t]);
        opt.threads = 1;
        double best = 0;
        JoinPairs found;
        for (int r = 0; r < repeat; ++r) {
            JoinPairs().swap(found);  // the last result's memory goes back untimed
            auto start = std::chrono::steady_clock::now();
            found = self_join(docs, opt);
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (r == 0 || s < best) best = s;
        }
        size_t at_tau = 0, rounded_away = 0;
        for (const JoinPair& p : found) {
            if (std::fabs(p.similarity - opt.tau) >= 1e-12) continue;
            ++at_tau;
            // The overlap bound as a program computing it in floating point would:
            // ceil((|a| + |b|) tau / (1 + tau)), capped at the shorter length.
            uint64_t la = docs.length(p.a), lb = docs.length(p.b);
            auto bound = static_cast<uint64_t>(std::ceil(static_cast<double>(la + lb) * opt.tau / (1 + opt.tau)));
            if (overlap(docs.doc(p.a), docs.doc(p.b)) < std::min({bound, la, lb})) ++rounded_away;
        }
        std::printf("%s %zu %.4f %zu %zu\n", argv[t], found.size(), best, at_tau, rounded_away);
        std::fflush(stdout);
    }
    return 0;
}
