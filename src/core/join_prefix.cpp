// The lister that writes a document's prefix into PrefixLists, and the listing of a whole collection.
#include "join_prefix.hpp"

#include <algorithm>
#include <utility>

namespace spotsigs::join_detail {

namespace {
// Totals below this are tabulated by a lister's RequiredOverlap (128 KB); longer ones computed.
constexpr uint64_t kListerTable = uint64_t(1) << 15;
// How many documents ahead list_all_prefixes() fetches a document's first signatures.
constexpr size_t kListAhead = 4;

// Lists signature i of document d (view v) at suffix mass suf, the document's prefix ending
// below need (always inlined: GCC made it a call per entry once PrefixLists::add wrote chunks,
// and the calls cost about 2% of a one-thread join at tau 0.44).
inline __attribute__((always_inline)) void add_entry(const MultisetView& v, uint32_t i, uint32_t d, uint64_t suf,
                                                     uint64_t need, PrefixLists& out) {
    out.add(v.hashes[i], d, PrefixEntry::tag(suf - need, v.freqs[i] > 1));
}
}  // namespace

PrefixLister::PrefixLister(double tau, const FrequentSignatures& frequent)
    : tau_(tau), frequent_(&frequent), req_(tau, kListerTable) {}

void PrefixLister::list(uint32_t d, const MultisetView& v, PrefixLists& out) {
    const uint64_t x = v.length;
    if (x == 0) return;
    const uint64_t need = req_(x + min_partner_length(x, tau_));
    uint64_t suf = x;
    stash_.clear();
    for (uint32_t i = 0; i < v.size; ++i) {
        const uint32_t fo = frequent_->order_of(v.hashes[i]);
        if (fo != FrequentSignatures::kNone) {
            stash_.push_back(static_cast<uint64_t>(fo) << 32 | i);
            continue;
        }
        if (suf < need) return;  // every later signature has less mass after it
        add_entry(v, i, d, suf, need, out);
        suf -= v.freqs[i];
    }
    // The whole non-frequent part was in the prefix: go on with the frequent ones, in order.
    std::sort(stash_.begin(), stash_.end());
    for (uint64_t s : stash_) {
        if (suf < need) return;
        const uint32_t i = static_cast<uint32_t>(s);
        add_entry(v, i, d, suf, need, out);
        suf -= v.freqs[i];
    }
}

void list_all_prefixes(const Collection& docs, double tau, int threads, const CancelToken* cancel,
                       ListedPrefixes& out) {
    out.tau = tau;
    out.frequent = std::make_unique<FrequentSignatures>(docs, frequent_sample_for(docs.size()), kFrequentMinCount);
    out.lists.clear();
    out.unlisted.clear();
    if (docs.size() > 0) out.unlisted.emplace_back(0, static_cast<uint32_t>(docs.size()));
    list_unlisted(docs, threads, cancel, out);
}

void list_unlisted(const Collection& docs, int threads, const CancelToken* cancel, ListedPrefixes& out) {
    // Documents in chunks of at most 4,096 on the workers, each worker into its own lists.
    constexpr uint32_t kChunk = 4096;
    std::vector<std::pair<uint32_t, uint32_t>> chunks;
    for (const auto& r : out.unlisted)
        for (uint32_t d = r.first; d < r.second; d += std::min(kChunk, r.second - d))
            chunks.emplace_back(d, d + std::min(kChunk, r.second - d));
    out.unlisted.clear();
    if (chunks.empty()) return;
    std::vector<PrefixLists> part(static_cast<size_t>(threads));
    std::vector<PrefixLister> listers(static_cast<size_t>(threads), PrefixLister(out.tau, *out.frequent));
    run_workers(threads, chunks.size(), 1, [&](int w, size_t c0, size_t c1) {
        const size_t k = static_cast<size_t>(w);
        for (size_t c = c0; c < c1; ++c) {
            if (cancel != nullptr && cancel->stopped()) return;
            const size_t d0 = chunks[c].first, d1 = chunks[c].second;
            for (size_t d = d0; d < d1; ++d) {
                // A prefix is a few signatures at the start of each document: the walk reads one
                // or two cache lines per document, so the next documents' are fetched ahead.
                if (d + kListAhead < d1) {
                    const uint64_t* next = docs.doc(d + kListAhead).hashes;
                    __builtin_prefetch(next);
                    __builtin_prefetch(next + 8);
                }
                listers[k].list(static_cast<uint32_t>(d), docs.doc(d), part[k]);
            }
        }
    });
    throw_if_canceled(cancel);
    for (PrefixLists& p : part) out.lists.absorb(p);
}

}  // namespace spotsigs::join_detail
