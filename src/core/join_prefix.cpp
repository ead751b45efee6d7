// Prefix entries in coarse buckets, and the lister that writes a document's prefix into them.
#include "join_prefix.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

#include "huge_pages.hpp"

namespace spotsigs::join_detail {

namespace {
// Totals below this are tabulated by a lister's RequiredOverlap (128 KB); longer ones computed.
constexpr uint64_t kListerTable = uint64_t(1) << 15;
// Blocks in the first and the largest slab of a PrefixLists, and the slabs' alignment.
constexpr size_t kFirstSlab = 64;
constexpr size_t kLastSlab = 1024;
constexpr size_t kSlabAlign = size_t(2) << 20;
// How many documents ahead list_all_prefixes() fetches a document's first signatures.
constexpr size_t kListAhead = 4;
}  // namespace

PrefixLists::Block* PrefixLists::new_block() {
    if (slabs_.empty() || used_ == slabs_.back().blocks) {
        // Slabs double from 64 blocks (512 KB, enough for small joins) to 1,024 (8 MB), each
        // aligned to 2 MB so that the larger ones fill whole huge pages.
        const size_t blocks = slabs_.empty() ? kFirstSlab : std::min(kLastSlab, 2 * slabs_.back().blocks);
        const size_t bytes = blocks * sizeof(Block);
        slabs_.reserve(slabs_.size() + 1);
        void* base = nullptr;
        if (posix_memalign(&base, kSlabAlign, bytes) != 0) throw std::bad_alloc();
        advise_huge_pages(base, bytes);
        slabs_.push_back(Slab{base, blocks});
        used_ = 0;
        bytes_ += bytes;
    }
    Block* b = new (static_cast<char*>(slabs_.back().base) + used_++ * sizeof(Block)) Block;
    return b;
}

void PrefixLists::absorb(PrefixLists& other) {
    for (size_t c = 0; c < kCoarse; ++c) {
        std::vector<Block*>& from = other.buckets_[c];
        std::vector<Block*>& to = buckets_[c];
        to.insert(to.end(), from.begin(), from.end());
        std::vector<Block*>().swap(from);
    }
    // This list's current slab stays the one it carves from: the other's go in front of it
    // (with none of its own, this one carves on from other's current slab).
    if (slabs_.empty()) used_ = other.used_;
    slabs_.insert(slabs_.empty() ? slabs_.end() : slabs_.end() - 1, other.slabs_.begin(), other.slabs_.end());
    other.slabs_.clear();
    other.used_ = 0;
    entries_ += other.entries_;
    bytes_ += other.bytes_;
    other.entries_ = 0;
    other.bytes_ = 0;
}

void PrefixLists::swap(PrefixLists& other) noexcept {
    for (size_t c = 0; c < kCoarse; ++c) buckets_[c].swap(other.buckets_[c]);
    slabs_.swap(other.slabs_);
    std::swap(used_, other.used_);
    std::swap(entries_, other.entries_);
    std::swap(bytes_, other.bytes_);
}

uint64_t PrefixLists::bucket_entries(size_t c) const noexcept {
    uint64_t k = 0;
    for (const Block* b : buckets_[c]) k += b->count;
    return k;
}

void PrefixLists::clear() noexcept {
    for (auto& b : buckets_) std::vector<Block*>().swap(b);
    for (const Slab& s : slabs_) std::free(s.base);  // blocks are trivially destructible
    slabs_.clear();
    used_ = 0;
    entries_ = 0;
    bytes_ = 0;
}

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
        out.add(PrefixEntry{v.hashes[i], d, static_cast<uint32_t>(suf)});
        suf -= v.freqs[i];
    }
    // The whole non-frequent part was in the prefix: go on with the frequent ones, in order.
    std::sort(stash_.begin(), stash_.end());
    for (uint64_t s : stash_) {
        if (suf < need) return;
        const uint32_t i = static_cast<uint32_t>(s);
        out.add(PrefixEntry{v.hashes[i], d, static_cast<uint32_t>(suf)});
        suf -= v.freqs[i];
    }
}

void list_all_prefixes(const Collection& docs, double tau, int threads, const CancelToken* cancel,
                       ListedPrefixes& out) {
    out.tau = tau;
    out.frequent = std::make_unique<FrequentSignatures>(docs, kFrequentSample, kFrequentMinCount);
    out.lists.clear();
    const size_t total = docs.size();
    std::vector<PrefixLists> part(static_cast<size_t>(threads));
    std::vector<PrefixLister> listers(static_cast<size_t>(threads), PrefixLister(tau, *out.frequent));
    // Documents in chunks of 4,096 on the workers, each worker into its own lists.
    run_workers(threads, total, 4096, [&](int w, size_t d0, size_t d1) {
        if (cancel != nullptr && cancel->stopped()) return;
        const size_t k = static_cast<size_t>(w);
        for (size_t d = d0; d < d1; ++d) {
            // A prefix is a few signatures at the start of each document: the walk reads one or
            // two cache lines per document, so the next documents' are fetched ahead.
            if (d + kListAhead < d1) {
                const uint64_t* next = docs.doc(d + kListAhead).hashes;
                __builtin_prefetch(next);
                __builtin_prefetch(next + 8);
            }
            listers[k].list(static_cast<uint32_t>(d), docs.doc(d), part[k]);
        }
    });
    throw_if_canceled(cancel);
    for (PrefixLists& p : part) out.lists.absorb(p);
}

}  // namespace spotsigs::join_detail
