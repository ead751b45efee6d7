// The reference matcher: every pair through similarity(), split over the worker threads.
#include <algorithm>

#include "core/join/join_internal.hpp"

namespace spotsigs::join_detail {

namespace {

// Rows are cheap for short collections and the cancel flag is checked this often within a row.
constexpr size_t kRowChunk = 16;
constexpr size_t kColumnStride = 2048;

// Compares row docs of `rows` with columns [first(row), cols.size()) of `cols`; shared by both joins.
template <class First>
JoinPairs brute(const Collection& rows, const Collection& cols, const JoinOptions& opt, First first) {
    MemoryBudget budget(opt.memory_limit, opt.accounted_peak);
    WorkerGuard guard(opt, budget);
    std::vector<JoinPairs> out(static_cast<size_t>(opt.threads));
    run_workers(opt.threads, rows.size(), kRowChunk, [&](int w, size_t begin, size_t end) {
        JoinPairs& mine = out[static_cast<size_t>(w)];
        uint64_t verified = 0;
        struct Report {  // the chunk's count, however its loop ends
            WorkerGuard& g;
            uint64_t& n;
            ~Report() { g.add_verified(n); }
        } report{guard, verified};
        for (size_t i = begin; i < end; ++i) {
            if (guard.stopped()) return;
            MultisetView x = rows.doc(i);
            size_t before = mine.size();
            if (!x.empty()) {
                for (size_t j = first(i); j < cols.size(); ++j) {
                    if ((j & (kColumnStride - 1)) == 0 && guard.stopped()) return;
                    // probe_below (self-joins): the pair's shorter document decides its pass.
                    if (opt.probe_below != 0 && std::min(x.length, cols.doc(j).length) >= opt.probe_below) continue;
                    double sim = similarity(x, cols.doc(j));
                    ++verified;
                    if (sim >= opt.tau)
                        mine.push_back(JoinPair{static_cast<uint32_t>(i), static_cast<uint32_t>(j), sim});
                }
            }
            if (mine.size() != before) guard.add_pairs(mine.size() - before);
            guard.progress(1);
        }
    });
    throw_if_canceled(opt.cancel);
    return merge_sorted(out);
}

}  // namespace

JoinPairs brute_self_join(const Collection& docs, const JoinOptions& opt) {
    return brute(docs, docs, opt, [](size_t i) { return i + 1; });
}

JoinPairs brute_rs_join(const Collection& r, const Collection& s, const JoinOptions& opt) {
    return brute(r, s, opt, [](size_t) { return size_t(0); });
}

}  // namespace spotsigs::join_detail
