// The index-based matchers: NoPrune, NoPart and Partitioned are one probe loop with different
// filters switched on (ProbeConfig). Every filter is a lemma of join_bounds.hpp.
//
// Orientation. A self-join examines each pair once, from the document of smaller rank (shorter,
// or equally long with the smaller collection index) — the probe — against the larger one in
// the index, as the paper's Algorithm 1 steps from a partition into its right neighbour. An R-S
// join probes with every document of R into an index over S, partners of any admissible length.
#include <algorithm>
#include <memory>

#include "core/join/join_bounds.hpp"
#include "core/join/join_internal.hpp"
#include "core/join/pair_sink.hpp"
#include "core/join/partition.hpp"

namespace spotsigs::join_detail {
namespace {

// Documents handed to a worker at a time, and how many postings it reads between cancel checks.
constexpr size_t kProbeChunk = 32;
constexpr uint32_t kPostingStride = 1u << 16;
// Result pairs a worker collects before it accounts for them against the memory limit.
constexpr size_t kPairBatch = 4096;

// The overlap of A[i..] and B[j..] (sorted ids with frequencies; ra, rb their masses), or some
// value below t as soon as Lemma 6 shows the overlap cannot reach t.
inline uint64_t merge_overlap(const uint32_t* sa, const uint32_t* fa, uint64_t na, uint64_t i, uint64_t ra,
                              const uint32_t* sb, const uint32_t* fb, uint64_t nb, uint64_t j, uint64_t rb,
                              uint64_t t) noexcept {
    uint64_t o = 0;
    while (i < na && j < nb) {
        if (o + std::min(ra, rb) < t) return o;
        uint32_t x = sa[i], y = sb[j];
        if (x < y) {
            ra -= fa[i++];
        } else if (y < x) {
            rb -= fb[j++];
        } else {
            o += std::min(fa[i], fb[j]);
            ra -= fa[i++];
            rb -= fb[j++];
        }
    }
    return o;
}

// Everything one join's probes share (read-only while the workers run).
struct ProbeJob {
    const DocStore* probe;    // the probing documents
    const DocStore* indexed;  // the documents in the index
    const InvertedIndex* index;
    const Collection* probe_docs;  // originals, for NoPrune's plain similarity()
    const Collection* indexed_docs;
    const TauPartitions* parts;  // null unless cfg.partitions
    const RequiredOverlap* req;
    ProbeConfig cfg;
    double tau;
    bool self;  // self-join: partners are the larger ranks of the same store
};

// A candidate of the counting probe: the partner, where the pair's first common signature lies
// in A and the masses of both from there on, the shared prefix mass counted so far, and its slot
// in the probe's table.
struct Candidate {
    uint32_t rank;
    uint32_t len;
    uint32_t pos_a;
    uint32_t suf_a, suf_b;
    uint32_t shared;  // kDead once a bound has excluded the pair
    uint32_t slot;
};
constexpr uint32_t kDead = UINT32_MAX;

// The candidates of one probe by partner rank: an open-addressing table (linear probing, at most
// half full) of (rank, index into the candidate list). A probe meets a few hundred partners;
// a table of them stays in the first-level cache, where a mark per indexed document (megabytes,
// read at random once per posting) did not.
class CandidateTable {
public:
    static constexpr uint32_t kEmpty = UINT32_MAX;
    CandidateTable() { resize(10); }
    // The candidate index of rank, or kEmpty; *slot receives where it is or would go.
    uint32_t find(uint32_t rank, uint32_t* slot) const noexcept {
        uint32_t k = (rank * 0x9E3779B1u) >> shift_;
        while (slots_[k].rank != kEmpty && slots_[k].rank != rank) k = (k + 1) & mask_;
        *slot = k;
        return slots_[k].rank == kEmpty ? kEmpty : slots_[k].cand;
    }
    // Puts rank at slot (from find); cands then holds more entries than before by one.
    void put(uint32_t slot, uint32_t rank, std::vector<Candidate>& cands) {
        slots_[slot] = Entry{rank, static_cast<uint32_t>(cands.size() - 1)};
        cands.back().slot = slot;
        if (cands.size() * 2 > slots_.size()) {  // regrow, twice the size, and re-place every entry
            resize(bits_ + 1);
            for (uint32_t c = 0; c < cands.size(); ++c) {
                uint32_t k;
                find(cands[c].rank, &k);
                slots_[k] = Entry{cands[c].rank, c};
                cands[c].slot = k;
            }
        }
    }
    // Empties the table of the entries of cands.
    void clear(const std::vector<Candidate>& cands) noexcept {
        for (const Candidate& c : cands) slots_[c.slot].rank = kEmpty;
    }

private:
    struct Entry {
        uint32_t rank;
        uint32_t cand;
    };
    void resize(unsigned bits) {
        bits_ = bits;
        shift_ = 32 - bits;
        mask_ = (uint32_t(1) << bits) - 1;
        slots_.assign(size_t(1) << bits, Entry{kEmpty, 0});
    }
    std::vector<Entry> slots_;
    unsigned bits_ = 0, shift_ = 0;
    uint32_t mask_ = 0;
};

// One worker's scratch: the generation-stamped "seen" marks over the indexed documents, or with
// the counting probe its candidates and their table.
struct ProbeScratch {
    std::vector<uint32_t> seen;
    std::vector<Candidate> cands;
    CandidateTable table;
    uint32_t stamp = 0;

    // Starts a new probe: every document counts as unseen again.
    void next() {
        if (++stamp == 0) {
            std::fill(seen.begin(), seen.end(), 0);
            stamp = 1;
        }
    }
};

// Where signature id sits among the sorted ids [sig, sig + n) of a document that holds it.
inline uint32_t position_of(const uint32_t* sig, uint64_t n, uint32_t id) noexcept {
    return static_cast<uint32_t>(std::lower_bound(sig, sig + n, id) - sig);
}

// First rank in `docs` whose length is at least len (lengths ascend with rank).
inline uint32_t first_rank_with_length(const DocStore& docs, uint64_t len) {
    if (len > UINT32_MAX) return static_cast<uint32_t>(docs.size());
    auto it = std::lower_bound(docs.len.begin(), docs.len.end(), static_cast<uint32_t>(len));
    return static_cast<uint32_t>(it - docs.len.begin());
}

// Probes the index with document ra of job.probe; appends its pairs to out and counts the
// candidates it verified in verified. Returns false if it stopped early because the caller
// asked to cancel.
bool probe_one(const ProbeJob& job, size_t ra, ProbeScratch& scratch, const WorkerGuard& guard, JoinPairs& out,
               uint32_t& countdown, uint64_t& verified) {
    const DocStore& P = *job.probe;
    const DocStore& I = *job.indexed;
    const ProbeConfig& cfg = job.cfg;
    const RequiredOverlap& req = *job.req;
    const uint64_t a = P.len[ra];
    const uint64_t lo_a = min_partner_length(a, job.tau);

    // The window of partner ranks: Lemma 3's length filter below, the partitions above.
    uint32_t wbeg, wend = static_cast<uint32_t>(I.size());
    if (job.self) wbeg = static_cast<uint32_t>(ra + 1);
    else wbeg = cfg.prune ? first_rank_with_length(I, lo_a) : 0;
    if (job.parts != nullptr) {
        // Condition (A): every admissible longer partner lies in this partition or the next.
        size_t k = job.parts->partition_of(a);
        wend = first_rank_with_length(I, job.parts->lower(k + 2));
    }
    if (wbeg >= wend) return true;

    // Lemma 5: the smallest requirement of any admissible partner bounds how far to read.
    const uint64_t need = job.self ? req(2 * a) : req(a + lo_a);
    const uint64_t begin = P.off[ra], end = P.off[ra + 1];
    const uint32_t* sa = P.sig.data() + begin;
    const uint32_t* fa = P.freq.data() + begin;
    const uint64_t na = end - begin;
    uint64_t suf = a - P.lead[ra];  // A's mass from signature i on (suf_A of Lemma 4)
    scratch.next();
    const uint32_t stamp = scratch.stamp;
    uint32_t* seen = scratch.seen.data();

    for (uint64_t i = 0; i < na; suf -= fa[i], ++i) {
        if (cfg.prune && suf < need) break;
        const Posting* first = job.index->postings.data() + job.index->start[sa[i]];
        const Posting* last = job.index->postings.data() + job.index->start[sa[i] + 1];
        const Posting* p = std::lower_bound(first, last, wbeg, [](const Posting& x, uint32_t r) { return x.rank < r; });
        for (; p != last; ++p) {
            if (--countdown == 0) {
                countdown = kPostingStride;
                if (guard.stopped()) return false;
            }
            const uint32_t rb = p->rank;
            if (rb >= wend) break;
            const uint64_t b = p->len;
            uint64_t t = 0;
            if (cfg.prune) {
                t = req(a + b);
                // Lemma 4 with pos_A (the corrected delta1 test): req grows along the list, so
                // no later posting of it can pass either.
                if (t > suf) break;
            }
            if (seen[rb] == stamp) continue;
            seen[rb] = stamp;
            double sim;
            if (!cfg.prune) {
                ++verified;
                sim = similarity(job.probe_docs->doc(P.orig[ra]), job.indexed_docs->doc(I.orig[rb]));
                if (!(sim >= job.tau)) continue;
            } else {
                // Lemma 4 with pos_B: B's mass before this signature cannot be common.
                if (cfg.positional && t > p->suf) continue;
                const uint64_t bb = I.off[rb], nb = I.off[rb + 1] - bb;
                const uint32_t* sb = I.sig.data() + bb;
                ++verified;
                uint64_t o = merge_overlap(sa, fa, na, i, suf, sb, I.freq.data() + bb, nb, position_of(sb, nb, sa[i]),
                                           p->suf, t);
                if (o < t) continue;
                // The same expression as similarity(), so the reported value is bit-identical.
                sim = static_cast<double>(o) / static_cast<double>(a + b - o);
                if (!(sim >= job.tau)) continue;  // never taken: o >= req(a + b) (Lemma 1)
            }
            uint32_t x = P.orig[ra], y = I.orig[rb];
            if (job.self && y < x) std::swap(x, y);
            out.push_back(JoinPair{x, y, sim});
        }
    }
    return true;
}

// probe_one() with the count filter (cfg.count = l > 0, join_bounds.hpp Lemma 8): a posting of
// a partner already met adds A's frequency to the pair's shared mass instead of starting a
// verification, and after the probe only the pairs whose shared mass reaches min(t, l) are
// verified. The indexed prefixes reach down to need_B - (l - 1) (InvertedIndex::build); A's
// lists are read down to need_A - (l - 1), each for the partners of requirement t while A's
// suffix mass is at least t - (l - 1), so every signature that both segments of Lemma 8 hold is
// counted. A pair is dropped as soon as Lemma 4 rules it out at a common signature: at the first
// one from the two masses alone, at later ones with the mass counted before (every common
// signature before one in both segments is in both segments too).
bool probe_counting(const ProbeJob& job, size_t ra, ProbeScratch& scratch, const WorkerGuard& guard, JoinPairs& out,
                    uint32_t& countdown, uint64_t& verified) {
    const DocStore& P = *job.probe;
    const DocStore& I = *job.indexed;
    const InvertedIndex& index = *job.index;
    const RequiredOverlap& req = *job.req;
    const uint64_t l = job.cfg.count;
    const uint64_t a = P.len[ra];
    const uint64_t lo_a = min_partner_length(a, job.tau);
    const uint32_t wbeg = job.self ? static_cast<uint32_t>(ra + 1) : first_rank_with_length(I, lo_a);
    uint32_t wend = static_cast<uint32_t>(I.size());
    if (job.parts != nullptr) wend = first_rank_with_length(I, job.parts->lower(job.parts->partition_of(a) + 2));
    if (wbeg >= wend) return true;
    const uint64_t need = job.self ? req(2 * a) : req(a + lo_a);
    const uint64_t reach = need > l - 1 ? need - (l - 1) : 0;  // A's covered prefix ends below it
    const uint64_t begin = P.off[ra], end = P.off[ra + 1];
    const uint32_t* sa = P.sig.data() + begin;
    const uint32_t* fa = P.freq.data() + begin;
    const uint64_t na = end - begin;
    // How many signatures of A are read: its covered prefix (Lemma 5 with need - (l - 1)).
    uint64_t covered = 0;
    for (uint64_t m = a - P.lead[ra]; covered < na && m >= reach; m -= fa[covered], ++covered) {
    }
    // Every list read is two random accesses, its bounds and its first postings: the bounds are
    // fetched kAheadBounds signatures ahead, the postings kAheadLists ahead (their bounds are in
    // the cache by then).
    constexpr uint64_t kAheadBounds = 16, kAheadLists = 8;
    for (uint64_t i = 0; i < std::min(covered, kAheadBounds); ++i) __builtin_prefetch(&index.start[sa[i]]);
    std::vector<Candidate>& cands = scratch.cands;
    CandidateTable& table = scratch.table;
    cands.clear();
    uint64_t suf = a - P.lead[ra];
    for (uint64_t i = 0; i < covered; suf -= fa[i], ++i) {
        if (i + kAheadBounds < covered) __builtin_prefetch(&index.start[sa[i + kAheadBounds]]);
        if (i + kAheadLists < covered) __builtin_prefetch(index.postings.data() + index.start[sa[i + kAheadLists]]);
        const Posting* first = index.postings.data() + index.start[sa[i]];
        const Posting* last = index.postings.data() + index.start[sa[i] + 1];
        const Posting* p = std::lower_bound(first, last, wbeg, [](const Posting& x, uint32_t r) { return x.rank < r; });
        const uint32_t f = fa[i];
        for (; p != last; ++p) {
            if (--countdown == 0) {
                countdown = kPostingStride;
                if (guard.stopped()) return false;
            }
            if (p->rank >= wend) break;
            const uint64_t t = req(a + p->len);
            // Beyond A's covered prefix for this and every later (longer) partner of the list.
            if (t > suf + (l - 1)) break;
            uint32_t slot;
            const uint32_t at = table.find(p->rank, &slot);
            if (at == CandidateTable::kEmpty) {
                // The pair's first common signature (Lemma 4): both masses from here must reach t.
                const bool alive = t <= suf && t <= p->suf;
                cands.push_back(Candidate{p->rank, p->len, static_cast<uint32_t>(i), static_cast<uint32_t>(suf), p->suf,
                                          alive ? f : kDead, 0});
                table.put(slot, p->rank, cands);
                continue;
            }
            Candidate& c = cands[at];
            if (c.shared == kDead) continue;
            // Lemma 4 from this common signature on, plus the mass counted before it.
            if (c.shared + std::min<uint64_t>(suf, p->suf) < t) {
                c.shared = kDead;
                continue;
            }
            c.shared += f;
        }
    }
    table.clear(cands);
    for (const Candidate& c : cands) {
        if (c.shared == kDead) continue;
        const uint64_t b = c.len;
        const uint64_t t = req(a + b);
        if (c.shared < std::min(t, l)) continue;  // Lemma 8
        const uint64_t bb = I.off[c.rank], nb = I.off[c.rank + 1] - bb;
        const uint32_t* sb = I.sig.data() + bb;
        ++verified;
        const uint64_t o = merge_overlap(sa, fa, na, c.pos_a, c.suf_a, sb, I.freq.data() + bb, nb,
                                         position_of(sb, nb, sa[c.pos_a]), c.suf_b, t);
        if (o < t) continue;
        // The same expression as similarity(), so the reported value is bit-identical.
        const double sim = static_cast<double>(o) / static_cast<double>(a + b - o);
        uint32_t x = P.orig[ra], y = I.orig[c.rank];
        if (job.self && y < x) std::swap(x, y);
        out.push_back(JoinPair{x, y, sim});
    }
    return true;
}

// Runs the probes of job over all probe documents on the worker threads.
JoinPairs run_probes(const ProbeJob& job, const JoinOptions& opt, MemoryBudget& budget) {
    budget.charge(job.cfg.count != 0 ? 0 : static_cast<size_t>(opt.threads) * job.indexed->size() * sizeof(uint32_t),
                  "the per-thread candidate marks");
    WorkerGuard guard(opt, budget, true);
    // Empty documents take part in nothing, but they count as probed; so do, with probe_below,
    // the documents at least that long: in a self-join each pair is probed from its shorter
    // document, so theirs are all another pass's pairs.
    const size_t probes =
        job.self && opt.probe_below != 0 ? first_rank_with_length(*job.probe, opt.probe_below) : job.probe->size();
    guard.progress(job.probe_docs->size() - probes);
    std::vector<JoinPairs> out(static_cast<size_t>(opt.threads));
    std::vector<ProbeScratch> scratch(static_cast<size_t>(opt.threads));
    // With a sink, each worker puts its pairs in runs of a share of the sink's capacity, so that
    // the runs being filled stay within what the caller set aside for them
    // (PairSink::in_flight_bytes); they are accounted by their vectors' room, which is what the
    // sink counts once they are put.
    const size_t sink_run = opt.sink == nullptr ? 0 : PairSink::run_pairs(opt.sink->capacity(), opt.threads);
    const size_t batch = opt.sink == nullptr ? kPairBatch : std::min(kPairBatch, sink_run);
    run_workers(opt.threads, probes, kProbeChunk, [&](int w, size_t begin, size_t end) {
        ProbeScratch& s = scratch[static_cast<size_t>(w)];
        if (job.cfg.count == 0 && s.seen.size() != job.indexed->size()) s.seen.assign(job.indexed->size(), 0);
        JoinPairs& mine = out[static_cast<size_t>(w)];
        uint32_t stride = kPostingStride;
        // What the guard holds for mine: its pairs, or with a sink its room.
        auto held = [&] { return opt.sink != nullptr ? mine.capacity() : mine.size(); };
        size_t accounted = held();
        uint64_t verified = 0;
        // With a sink, the pairs go to it a run at a time (unsorted) instead of being kept.
        auto hand_over = [&] {
            guard.hand_over(*opt.sink, mine);
            accounted = held();
        };
        for (size_t r = begin; r < end; ++r) {
            const bool go_on =
                !guard.stopped() && (job.cfg.count != 0 ? probe_counting(job, r, s, guard, mine, stride, verified)
                                                        : probe_one(job, r, s, guard, mine, stride, verified));
            if (!go_on) {
                guard.add_verified(verified);
                return;
            }
            guard.progress(1);
            if (held() - accounted >= batch || (opt.sink != nullptr && mine.size() >= sink_run)) {
                guard.add_pairs(held() - accounted);
                accounted = held();
                if (opt.sink != nullptr && mine.size() >= sink_run) hand_over();
            }
        }
        guard.add_verified(verified);
        if (held() != accounted) guard.add_pairs(held() - accounted);
        accounted = held();
        if (opt.sink != nullptr && mine.size() >= sink_run) hand_over();
    });
    throw_if_canceled(opt.cancel);
    if (opt.sink != nullptr)
        for (JoinPairs& rest : out) guard.hand_over(*opt.sink, rest);
    return merge_sorted(out);
}

// The largest document length in docs.
uint64_t max_length(const DocStore& docs) {
    return docs.size() == 0 ? 0 : docs.len.back();
}

// Sets up the thresholds and partitions for documents up to longest and runs the probes.
JoinPairs run_join(const DocStore& probe, const DocStore& indexed, const InvertedIndex& index,
                   const Collection& probe_docs, const Collection& indexed_docs, uint64_t longest,
                   const JoinOptions& opt, const ProbeConfig& cfg, MemoryBudget& budget, bool self) {
    const uint64_t table = std::min<uint64_t>(2 * longest + 2, uint64_t(1) << 20);
    budget.charge(table * sizeof(uint32_t), "the threshold table");
    RequiredOverlap req(opt.tau, table);
    std::unique_ptr<TauPartitions> parts;
    if (cfg.partitions) {
        parts = std::make_unique<TauPartitions>(opt.tau, longest);
        budget.charge(parts->memory_bytes(), "the length partitions");
    }
    ProbeJob job{&probe, &indexed, &index, &probe_docs, &indexed_docs, parts.get(), &req, cfg, opt.tau, self};
    return run_probes(job, opt, budget);
}

}  // namespace

JoinPairs index_self_join(const Collection& docs, const JoinOptions& opt, const ProbeConfig& cfg) {
    MemoryBudget budget(opt.memory_limit, opt.accounted_peak);
    SignatureDictionary dict;
    std::vector<uint32_t> ids;
    std::vector<uint64_t> ids_off;
    dict.build(docs, budget, opt.cancel, opt.threads, &ids, &ids_off);
    const uint32_t num_sigs = dict.size();
    budget.release(dict.memory_bytes());
    dict = SignatureDictionary();
    DocStore store;
    store.build(docs, dict, &ids, &ids_off, opt.threads, budget, opt.cancel);
    budget.release(ids.size() * sizeof(uint32_t) + ids_off.size() * sizeof(uint64_t));
    std::vector<uint32_t>().swap(ids);
    std::vector<uint64_t>().swap(ids_off);
    InvertedIndex index;
    index.build(store, num_sigs, cfg.prefix_index, opt.tau, cfg.count == 0 ? 0 : cfg.count - 1, budget, opt.cancel);
    return run_join(store, store, index, docs, docs, max_length(store), opt, cfg, budget, true);
}

JoinPairs index_rs_join(const Collection& r, const Collection& s, const JoinOptions& opt, const ProbeConfig& cfg) {
    MemoryBudget budget(opt.memory_limit, opt.accounted_peak);
    // The dictionary holds the signatures of the smaller side (by bytes), numbered by their
    // document frequency there; the other side's signatures absent from it come first (df 0)
    // and are kept only as "lead" mass, since they can never be common. Any order both sides
    // share keeps the prefix filter exact (the lead of either side holds no signature of the
    // other); counting the smaller side keeps the dictionary, its table and its sort, to that
    // side's size (a batch against an archive of many distinct signatures).
    const bool count_r = r.memory_bytes() < s.memory_bytes();
    const Collection& counted = count_r ? r : s;
    const Collection& looked_up = count_r ? s : r;
    SignatureDictionary dict;
    std::vector<uint32_t> ids;
    std::vector<uint64_t> ids_off;
    dict.build(counted, budget, opt.cancel, opt.threads, &ids, &ids_off);
    DocStore ss, rs;
    DocStore& counted_store = count_r ? rs : ss;
    DocStore& looked_up_store = count_r ? ss : rs;
    counted_store.build(counted, dict, &ids, &ids_off, opt.threads, budget, opt.cancel);
    budget.release(ids.size() * sizeof(uint32_t) + ids_off.size() * sizeof(uint64_t));
    std::vector<uint32_t>().swap(ids);
    std::vector<uint64_t>().swap(ids_off);
    looked_up_store.build(looked_up, dict, nullptr, nullptr, opt.threads, budget, opt.cancel);
    const uint32_t num_sigs = dict.size();
    budget.release(dict.memory_bytes());
    dict = SignatureDictionary();
    InvertedIndex index;
    index.build(ss, num_sigs, cfg.prefix_index, opt.tau, cfg.count == 0 ? 0 : cfg.count - 1, budget, opt.cancel);
    const uint64_t longest = std::max(max_length(ss), max_length(rs));
    return run_join(rs, ss, index, r, s, longest, opt, cfg, budget, false);
}

}  // namespace spotsigs::join_detail
