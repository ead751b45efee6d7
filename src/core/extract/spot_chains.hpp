// The sliding-window chain builder of the slides' extraction algorithm, run as a stream.
//
// For an antecedent at token i with spec a(d, c): k = i + d; c times: skip forward over
// stopwords, stop at the end of the document, else take tokens[k] and k += d. A signature with
// at least one word is emitted. Instead of looking ahead, each open chain waits in a ring of
// buckets for the token index it needs next; a chain whose token was a stopword waits in the
// "due" list for the next non-stopword. Chains that still have no word and share a spec behave
// identically from then on, so in the due list they are merged into one with a count: a long
// run of antecedent stopwords ("a a a a ...") costs linear time and constant memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/extract/extract.hpp"

// Inlining hints for the per-token path (plain inline elsewhere).
#if defined(__GNUC__)
#define SPOTSIGS_INLINE inline __attribute__((always_inline))
#define SPOTSIGS_LAMBDA_INLINE __attribute__((always_inline))
#define SPOTSIGS_NOINLINE __attribute__((noinline))
#else
#define SPOTSIGS_INLINE inline
#define SPOTSIGS_LAMBDA_INLINE
#define SPOTSIGS_NOINLINE
#endif

namespace spotsigs {

// One spot specification after compilation.
struct CompiledSpec {
    uint32_t distance;
    uint32_t chain;
};

// What the extractor knows about a word of its table.
struct WordInfo {
    bool stop = false;        // skipped inside chains
    uint32_t spec_begin = 0;  // specs [spec_begin, spec_end) have this word as antecedent
    uint32_t spec_end = 0;
};

// Feeds tokens one by one and reports finished signatures to a Sink, which provides
// State (the signature being built), start(State&, antecedent), add(State&, word) and
// emit(const State&, count, token index of the antecedent, spec index).
template <class Sink>
class SpotChains {
public:
    // Prepares an empty window for the given specs.
    SpotChains(const std::vector<CompiledSpec>& specs, Sink& sink)
        : specs_(specs), sink_(sink), zero_due_(specs.size(), kNil) {
        for (uint32_t& b : ring_) b = kNil;
        pool_.reserve(32);
        free_.reserve(32);
    }

    // Consumes the next token; info describes it (a word outside the table has an info that is
    // neither a stopword nor an antecedent).
    // Only the checks are inline; the work on chains is in out-of-line functions.
    SPOTSIGS_INLINE void token(std::string_view word, const WordInfo& info) {
        uint32_t& slot = ring_[t_ & (kRing - 1)];
        if (slot != kNil) arrive(slot);
        if (due_ != kNil && !info.stop) take_word(word);
        if (info.spec_begin != info.spec_end) open_chains(word, info);
        ++t_;
    }

    // Ends the document: every open chain with at least one word is emitted as it is.
    void finish() {
        for (uint32_t& b : ring_) {
            emit_list(b);
            b = kNil;
        }
        emit_list(due_);
        due_ = kNil;
    }

private:
    static constexpr uint32_t kRing = 128;  // > kMaxDistance, so targets never wrap onto i
    static_assert(kRing > uint32_t(kMaxDistance), "ring must exceed the largest distance");
    static constexpr uint32_t kNil = 0xFFFFFFFFu;

    // An open chain.
    struct Chain {
        typename Sink::State state{};
        uint64_t count = 0;   // identical chains merged into this one
        uint64_t origin = 0;  // token index of the (earliest) antecedent
        uint32_t spec = 0;
        uint32_t found = 0;  // words in the chain so far
        uint32_t next = kNil;
    };

    // Moves the chains waiting for this token index into the due list.
    SPOTSIGS_NOINLINE void arrive(uint32_t& slot) {
        for (uint32_t c = slot; c != kNil;) {
            uint32_t next = pool_[c].next;
            to_due(c);
            c = next;
        }
        slot = kNil;
    }

    // Starts one chain per spec of the antecedent at the current token.
    SPOTSIGS_NOINLINE void open_chains(std::string_view word, const WordInfo& info) {
        for (uint32_t s = info.spec_begin; s < info.spec_end; ++s) {
            uint32_t c = alloc();
            Chain& ch = pool_[c];
            sink_.start(ch.state, word);
            ch.count = 1;
            ch.origin = t_;
            ch.spec = s;
            ch.found = 0;
            park(c, t_ + specs_[s].distance);
        }
    }

    // Gives every due chain the non-stopword word; finished chains are emitted.
    SPOTSIGS_NOINLINE void take_word(std::string_view word) {
        uint32_t c = due_;
        due_ = kNil;
        while (c != kNil) {
            Chain& ch = pool_[c];
            uint32_t next = ch.next;
            if (ch.found == 0) zero_due_[ch.spec] = kNil;
            sink_.add(ch.state, word);
            const CompiledSpec& sp = specs_[ch.spec];
            if (++ch.found == sp.chain) {
                sink_.emit(ch.state, ch.count, ch.origin, ch.spec);
                release(c);
            } else {
                park(c, t_ + sp.distance);
            }
            c = next;
        }
    }

    // Moves a chain whose token index has come into the due list, merging wordless chains.
    void to_due(uint32_t c) {
        Chain& ch = pool_[c];
        if (ch.found == 0) {
            uint32_t twin = zero_due_[ch.spec];
            if (twin != kNil) {
                pool_[twin].count += ch.count;
                if (ch.origin < pool_[twin].origin) pool_[twin].origin = ch.origin;
                release(c);
                return;
            }
            zero_due_[ch.spec] = c;
        }
        ch.next = due_;
        due_ = c;
    }

    // Puts a chain in the bucket of the token index it needs next.
    void park(uint32_t c, uint64_t target) {
        uint32_t& b = ring_[target & (kRing - 1)];
        pool_[c].next = b;
        b = c;
    }

    // Emits the chains of a list that have at least one word and frees them all.
    void emit_list(uint32_t c) {
        while (c != kNil) {
            Chain& ch = pool_[c];
            uint32_t next = ch.next;
            if (ch.found > 0) sink_.emit(ch.state, ch.count, ch.origin, ch.spec);
            release(c);
            c = next;
        }
    }

    // A free chain slot (reused when possible).
    uint32_t alloc() {
        if (!free_.empty()) {
            uint32_t c = free_.back();
            free_.pop_back();
            return c;
        }
        pool_.emplace_back();
        return uint32_t(pool_.size() - 1);
    }

    // Returns a chain slot to the free list.
    void release(uint32_t c) { free_.push_back(c); }

    const std::vector<CompiledSpec>& specs_;
    Sink& sink_;
    std::vector<Chain> pool_;
    std::vector<uint32_t> free_;
    std::vector<uint32_t> zero_due_;  // per spec: the wordless chain in the due list, if any
    uint32_t ring_[kRing];
    uint32_t due_ = kNil;
    uint64_t t_ = 0;
};

}  // namespace spotsigs
