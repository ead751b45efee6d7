// Building the inverted lists over re-coded documents (full, or prefixes only).
#include <algorithm>

#include "core/join/join_bounds.hpp"
#include "core/join/join_internal.hpp"
#include "core/memory/huge_pages.hpp"

namespace spotsigs::join_detail {

namespace {

// How many of document r's leading signatures go into the index.
uint32_t indexed_count(const DocStore& docs, size_t r, bool prefix, double tau, uint32_t extend,
                       const RequiredOverlap& req) {
    uint64_t begin = docs.off[r], end = docs.off[r + 1];
    if (!prefix) return static_cast<uint32_t>(end - begin);
    // Lemma 5: a partner of any admissible length needs at least req(b + lo(b)); a signature
    // whose suffix mass is below that can never be the first common one of a reported pair.
    uint64_t b = docs.len[r];
    uint64_t need = req(b + min_partner_length(b, tau));
    need = need > extend ? need - extend : 0;
    uint64_t suf = b - docs.lead[r];
    uint32_t k = 0;
    for (uint64_t i = begin; i < end && suf >= need; ++i, ++k) suf -= docs.freq[i];
    return k;
}

}  // namespace

size_t InvertedIndex::memory_bytes() const noexcept {
    return start.capacity() * sizeof(uint64_t) + postings.capacity() * sizeof(Posting);
}

void InvertedIndex::build(const DocStore& docs, uint32_t num_sigs, bool prefix, double tau, uint32_t extend,
                          MemoryBudget& budget, const CancelToken* cancel) {
    const size_t n = docs.size();
    uint64_t max_len = 0;
    for (size_t r = 0; r < n; ++r) max_len = std::max<uint64_t>(max_len, docs.len[r]);
    const uint64_t table = std::min<uint64_t>(2 * max_len + 2, uint64_t(1) << 20);
    budget.charge(table * sizeof(uint32_t), "the threshold table");
    RequiredOverlap req(tau, table);

    const size_t scratch = static_cast<size_t>(num_sigs) * sizeof(uint64_t) + n * sizeof(uint32_t);
    budget.charge((static_cast<size_t>(num_sigs) + 1) * sizeof(uint64_t) + scratch, "the inverted index offsets");
    std::vector<uint32_t> count;
    reserve_huge(count, n);
    count.resize(n);
    reserve_huge(start, static_cast<size_t>(num_sigs) + 1);
    start.assign(static_cast<size_t>(num_sigs) + 1, 0);
    uint64_t total = 0;
    for (size_t r = 0; r < n; ++r) {
        if (r % 4096 == 0) throw_if_canceled(cancel);
        count[r] = indexed_count(docs, r, prefix, tau, extend, req);
        total += count[r];
        for (uint64_t i = docs.off[r], e = i + count[r]; i < e; ++i) ++start[docs.sig[i] + 1];
    }
    for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];

    budget.charge(total * sizeof(Posting), "the inverted index postings");
    reserve_huge(postings, total);
    postings.resize(total);
    std::vector<uint64_t> fill;
    reserve_huge(fill, start.size() - 1);
    fill.assign(start.begin(), start.end() - 1);
    // Documents go in by ascending rank, so every list comes out sorted by rank (= by length).
    for (size_t r = 0; r < n; ++r) {
        if (r % 4096 == 0) throw_if_canceled(cancel);
        uint64_t suf = docs.len[r] - docs.lead[r];
        uint64_t begin = docs.off[r];
        for (uint32_t j = 0; j < count[r]; ++j) {
            uint32_t id = docs.sig[begin + j];
            postings[fill[id]++] = Posting{static_cast<uint32_t>(r), docs.len[r], static_cast<uint32_t>(suf)};
            suf -= docs.freq[begin + j];
        }
    }
    budget.release(scratch + table * sizeof(uint32_t));
}

}  // namespace spotsigs::join_detail
