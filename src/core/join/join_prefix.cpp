// The lister that writes a document's prefix into PrefixLists, and the listing of a whole collection.
#include "core/join/join_prefix.hpp"

#include <algorithm>
#include <utility>

namespace spotsigs::join_detail {

namespace {
// Totals below this are tabulated by a lister (128 KB); longer ones computed each time.
constexpr uint64_t kListerTable = uint64_t(1) << 15;
// How many documents ahead list_all_prefixes() fetches a document's first signatures.
constexpr size_t kListAhead = 4;

// Walks document d's signatures (hashes h, n of them, frequencies freq(i), total mass x) in its
// order, listing those whose suffix mass reaches need; the frequent ones go to stash, in the
// order frequent ranks them, after the others. Always inlined, once per frequency width: through
// FreqView every listed signature would pay two switches on the width, and the view's fields
// would be read again after every store of an entry.
template <class Freq>
inline __attribute__((always_inline)) void walk_prefix(uint32_t d, const uint64_t* h, uint32_t n, uint64_t x,
                                                       uint64_t need, Freq freq, const FrequentSignatures& frequent,
                                                       std::vector<uint64_t>& stash, PrefixLists& out) {
    uint64_t suf = x;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t fo = frequent.order_of(h[i]);
        if (fo != FrequentSignatures::kNone) {
            stash.push_back(static_cast<uint64_t>(fo) << 32 | i);
            continue;
        }
        if (suf < need) return;  // every later signature has less mass after it
        const uint32_t f = freq(i);
        out.add(h[i], d, PrefixEntry::tag(suf - need, f > 1));
        suf -= f;
    }
    // The whole non-frequent part was in the prefix: go on with the frequent ones, in order.
    std::sort(stash.begin(), stash.end());
    for (uint64_t s : stash) {
        if (suf < need) return;
        const uint32_t i = static_cast<uint32_t>(s);
        const uint32_t f = freq(i);
        out.add(h[i], d, PrefixEntry::tag(suf - need, f > 1));
        suf -= f;
    }
}
}  // namespace

PrefixLister::PrefixLister(double tau, const FrequentSignatures& frequent)
    : tau_(tau), frequent_(&frequent), req_(kListerTable, 0) {}

void PrefixLister::list(uint32_t d, const MultisetView& v, PrefixLists& out) {
    const uint64_t x = v.length;
    if (x == 0) return;
    const uint64_t need = required(x + min_partner_length(x, tau_));
    stash_.clear();
    const unsigned char* f = v.freqs.data;
    switch (v.freqs.width) {
        case 0:
            walk_prefix(
                d, v.hashes, v.size, x, need, [f](uint32_t i) { return freq_at<0>(f, i); }, *frequent_, stash_, out);
            break;
        case 1:
            walk_prefix(
                d, v.hashes, v.size, x, need, [f](uint32_t i) { return freq_at<1>(f, i); }, *frequent_, stash_, out);
            break;
        default:  // 2 and 4 bytes: rare (a frequency above 255)
            walk_prefix(
                d, v.hashes, v.size, x, need, [&v](uint32_t i) { return v.freqs[i]; }, *frequent_, stash_, out);
            break;
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
