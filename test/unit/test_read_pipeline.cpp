// Unit tests of the read pipeline: what it files equals what was added, and the self-join over
// the prefixes it listed while reading equals the reference matchers.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/common/error.hpp"
#include "core/join/join.hpp"
#include "core/join/join_prefix.hpp"
#include "core/join/read_pipeline.hpp"
#include "core/signature/packed.hpp"
#include "core/template/content.hpp"

using namespace spotsigs;

namespace {

constexpr auto kWait = std::chrono::milliseconds(10);

// Random multisets: near-duplicate variants of earlier ones, empty ones, a small skewed
// vocabulary (so that some signatures are frequent) and a few heavy frequencies.
std::vector<Multiset> random_sets(uint32_t seed, size_t n, size_t max_distinct, uint64_t vocab) {
    std::mt19937_64 rng(seed);
    std::vector<Multiset> out;
    auto draw = [&] {
        std::vector<std::pair<uint64_t, uint64_t>> d;
        size_t k = 1 + rng() % max_distinct;
        for (size_t i = 0; i < k; ++i) {
            double u = std::uniform_real_distribution<double>(0, 1)(rng);
            uint64_t f = rng() % 8 == 0 ? 1 + rng() % 300 : 1 + rng() % 2;
            d.push_back({static_cast<uint64_t>(u * u * static_cast<double>(vocab)) * 0x9e3779b97f4a7c15ULL, f});
        }
        return d;
    };
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> raw;
    while (raw.size() < n) {
        uint64_t roll = rng() % 10;
        if (roll < 4 && !raw.empty()) {
            auto d = raw[rng() % raw.size()];
            if (!d.empty() && rng() % 2) d.erase(d.begin() + static_cast<long>(rng() % d.size()));
            if (!d.empty() && rng() % 2) d[rng() % d.size()].second += 1;
            raw.push_back(d);
        } else if (roll == 4) {
            raw.push_back({});
        } else {
            raw.push_back(draw());
        }
    }
    for (auto& d : raw) out.push_back(Multiset::from_pairs(d));
    return out;
}

// The packed payload of m, as a stored value holds it after its varlena header.
std::vector<unsigned char> packed(const Multiset& m) {
    std::vector<unsigned char> bytes(packed_size(m.view()));
    pack(m.view(), bytes.data());
    return bytes;
}

// Adds every set to the pipeline (ids 1000 + index), from unaligned copies, and closes it.
void feed(ReadPipeline& p, const std::vector<Multiset>& sets) {
    for (size_t i = 0; i < sets.size(); ++i) {
        std::vector<unsigned char> bytes = packed(sets[i]);
        std::vector<unsigned char> shifted(bytes.size() + 1);
        std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());  // the pipeline must not need alignment
        while (!p.add(static_cast<int64_t>(1000 + i), shifted.data() + 1, bytes.size(), kWait)) {
        }
    }
    p.close();
    while (!p.wait_filed(kWait)) {
    }
}

// Checks that c holds exactly the sets, in order, under ids 1000 + index.
void expect_filed(const Collection& c, const std::vector<Multiset>& sets) {
    ASSERT_EQ(c.size(), sets.size());
    for (size_t i = 0; i < sets.size(); ++i) {
        MultisetView v = c.doc(i);
        ASSERT_EQ(c.id(i), static_cast<int64_t>(1000 + i));
        ASSERT_EQ(v.size, sets[i].hashes.size()) << i;
        ASSERT_EQ(v.length, sets[i].length) << i;
        for (uint32_t k = 0; k < v.size; ++k) {
            ASSERT_EQ(v.hashes[k], sets[i].hashes[k]) << i;
            ASSERT_EQ(v.freqs[k], sets[i].freqs[k]) << i;
        }
    }
}

// A collection built directly from the sets.
Collection direct(const std::vector<Multiset>& sets) {
    Collection c;
    for (size_t i = 0; i < sets.size(); ++i) c.add(static_cast<int64_t>(1000 + i), sets[i].view());
    return c;
}

// Join output as comparable triples.
std::vector<std::tuple<uint32_t, uint32_t, double>> triples(const JoinPairs& pairs) {
    std::vector<std::tuple<uint32_t, uint32_t, double>> out;
    for (const JoinPair& p : pairs) out.emplace_back(p.a, p.b, p.similarity);
    return out;
}

// Options for a join.
JoinOptions options(double tau, int threads, JoinMethod m = JoinMethod::Partitioned) {
    JoinOptions o;
    o.tau = tau;
    o.threads = threads;
    o.method = m;
    return o;
}

}  // namespace

TEST(ReadPipeline, FilesWhatWasAdded) {
    std::vector<Multiset> sets = random_sets(3, 3000, 40, 5000);
    // One value larger than a batch buffer (1 MB): 200,000 signatures.
    Multiset big;
    for (uint64_t h = 0; h < 200000; ++h) {
        big.hashes.push_back(h * 7 + 1);
        big.freqs.push_back(1 + h % 3);
        big.length += 1 + h % 3;
    }
    sets.insert(sets.begin() + 1500, big);
    for (bool background : {true, false}) {
        SCOPED_TRACE(background ? "filing thread" : "filed by the caller");
        ReadPipeline p(0.0, 0, 0, background);
        feed(p, sets);
        EXPECT_EQ(p.rows(), sets.size());
        EXPECT_EQ(p.prefixes(), nullptr);
        expect_filed(p.docs(), sets);
    }
}

// A reader far ahead of the filing thread (it only copies bytes, while filing checks and stores
// them in fresh memory) fills every batch buffer and then faults in the memory the filing thread
// writes next; what is filed stays exactly what was added.
// Whether the reader gets ahead depends on how the two threads are scheduled, so on a busy
// machine many runs may never wait: up to forty runs, at least one of which must fault memory in
// (each run also checks that what is filed is exactly what was added).
TEST(ReadPipeline, ReaderFaultsInTheFilingThreadsMemoryWhileWaiting) {
    std::vector<Multiset> sets = random_sets(11, 30000, 300, 1000000);
    size_t sigs = 0;
    for (const Multiset& m : sets) sigs += m.hashes.size();
    ReadPipeline p(0.0, sets.size(), sigs, true);
    size_t i = 0;
    std::vector<unsigned char> bytes;
    // Adds rows until one is given back (no free batch within the wait), or all are taken.
    auto fill = [&] {
        for (; i < sets.size(); ++i) {
            bytes = packed(sets[i]);
            if (!p.add(static_cast<int64_t>(1000 + i), bytes.data(), bytes.size(), std::chrono::milliseconds(20)))
                return;
        }
    };
    // Every batch full while the filing thread is held; released, it files one (its memory then
    // has room to fault in), and the row given back is taken.
    p.hold_filing(true);
    fill();
    ASSERT_LT(i, sets.size());
    p.hold_filing(false);
    while (!p.add(static_cast<int64_t>(1000 + i), bytes.data(), bytes.size(), kWait)) {
    }
    ++i;
    // Held again: once the batches are full, add() faults in the memory the filing thread writes
    // next while it waits, then gives the row back.
    p.hold_filing(true);
    const size_t before = p.prefaulted_bytes();
    fill();
    ASSERT_LT(i, sets.size());
    EXPECT_GT(p.prefaulted_bytes(), before);
    EXPECT_GT(p.waited_seconds(), 0.0);
    p.hold_filing(false);
    for (; i < sets.size(); ++i) {
        bytes = packed(sets[i]);
        while (!p.add(static_cast<int64_t>(1000 + i), bytes.data(), bytes.size(), kWait)) {
        }
    }
    p.close();
    while (!p.wait_filed(kWait)) {
    }
    expect_filed(p.docs(), sets);
}

TEST(ReadPipeline, SmallInputsJoinLikeBruteForce) {
    // Fewer documents than the sample window: the prefixes are listed when the pipeline closes.
    for (uint32_t seed = 1; seed <= 6; ++seed) {
        std::vector<Multiset> sets = random_sets(seed, 300 + 150 * seed, 4 + seed * 5, 60 + 40 * seed);
        Collection c = direct(sets);
        for (double tau : {0.3, 0.6, 0.8, 0.9, 1.0})
            for (int threads : {1, 2}) {
                // A one-thread call files on the caller's thread.
                ReadPipeline p(tau, 0, 0, threads > 1);
                feed(p, sets);
                ASSERT_NE(p.prefixes(), nullptr);
                ASSERT_EQ(triples(self_join(p, options(tau, threads))),
                          triples(self_join(c, options(tau, 1, JoinMethod::BruteForce))))
                    << "seed " << seed << " tau " << tau << " threads " << threads;
            }
    }
}

TEST(ReadPipeline, LargeInputsListWhileReading) {
    // More documents than the sample window (65,536): most prefixes are listed as they arrive,
    // ordered by frequent signatures taken from the first documents only.
    std::vector<Multiset> sets = random_sets(11, 90000, 12, 40000);
    Collection c = direct(sets);
    for (double tau : {0.5, 0.8, 0.95}) {
        ReadPipeline p(tau, sets.size(), 0);
        feed(p, sets);
        JoinPairs got = self_join(p, options(tau, 2));
        EXPECT_GT(got.size(), 1000u);
        ASSERT_EQ(triples(got), triples(self_join(c, options(tau, 2, JoinMethod::NoPart)))) << "tau " << tau;
    }
    // The same, filed by the caller as it adds (a one-thread call).
    ReadPipeline p(0.8, sets.size(), 0, false);
    feed(p, sets);
    ASSERT_EQ(triples(self_join(p, options(0.8, 1))), triples(self_join(c, options(0.8, 2, JoinMethod::NoPart))));
}

TEST(ReadPipeline, PrefixesLeftByTheFilingThreadAreListedByTheMatcher) {
    // A filing thread told to leave every batch unlisted (backlog 0): past the sample window the
    // matcher's workers list all the prefixes, and the join is unchanged.
    std::vector<Multiset> sets = random_sets(13, 90000, 12, 40000);
    Collection c = direct(sets);
    for (double tau : {0.5, 0.9}) {
        ReadPipeline p(tau, sets.size(), 0, true, 0);
        feed(p, sets);
        EXPECT_EQ(p.deferred_docs(), sets.size() - 65536) << "tau " << tau;
        JoinPairs got = self_join(p, options(tau, 2));
        EXPECT_GT(got.size(), 1000u);
        ASSERT_EQ(triples(got), triples(self_join(c, options(tau, 2, JoinMethod::NoPart)))) << "tau " << tau;
    }
    // Filed by the caller (one thread), nothing is left.
    ReadPipeline q(0.9, sets.size(), 0, false, 0);
    feed(q, sets);
    EXPECT_EQ(q.deferred_docs(), 0u);
}

// Filing without a set of signatures (the content measure's template): the collection holds
// each document without them, every row kept (empty ones too), and the join over the prefixes
// listed while filing equals the brute force over the documents without them; the same whether
// the filing thread or the caller files, below and past the sample window.
TEST(ReadPipeline, FilesWithoutASetOfSignatures) {
    for (size_t n : {size_t(2000), size_t(80000)}) {
        std::vector<Multiset> sets = random_sets(17, n, 14, 3000);
        // The set: every third signature of the vocabulary's frequent part, and one absent key.
        std::vector<uint64_t> drop{0x1234567};
        for (uint64_t v = 0; v < 3000; v += 3) drop.push_back(v * 0x9e3779b97f4a7c15ULL);
        const SignatureSet set(drop);
        std::vector<Multiset> without(sets.size());
        size_t emptied = 0;
        for (size_t i = 0; i < sets.size(); ++i) {
            set.remove_into(sets[i].view(), without[i]);
            emptied += !sets[i].hashes.empty() && without[i].hashes.empty();
        }
        EXPECT_GT(emptied, 0u) << "some rows lose every signature";
        Collection c = direct(without);
        for (bool background : {true, false}) {
            SCOPED_TRACE(std::to_string(n) + (background ? " rows, filing thread" : " rows, filed by the caller"));
            ReadPipeline p(0.6, 0, 0, background);
            p.remove_signatures(&set);
            feed(p, sets);
            expect_filed(p.docs(), without);
            ASSERT_EQ(triples(self_join(p, options(0.6, 2))),
                      triples(self_join(c, options(0.6, 1, n > 10000 ? JoinMethod::NoPart : JoinMethod::BruteForce))));
        }
    }
}

TEST(ReadPipeline, PrefixesForAnotherThresholdAreNotUsed) {
    std::vector<Multiset> sets = random_sets(5, 800, 20, 300);
    Collection c = direct(sets);
    ReadPipeline p(0.95, 0, 0);
    feed(p, sets);
    EXPECT_EQ(triples(self_join(p, options(0.6, 2))), triples(self_join(c, options(0.6, 1, JoinMethod::BruteForce))));
    ReadPipeline q(0.6, 0, 0);
    feed(q, sets);
    EXPECT_EQ(triples(self_join(q, options(0.6, 1, JoinMethod::NoPrune))),
              triples(self_join(c, options(0.6, 1, JoinMethod::BruteForce))));
}

TEST(ReadPipeline, CorruptValuesAreReported) {
    std::vector<Multiset> sets = random_sets(2, 50, 10, 100);
    size_t k = 0;
    while (sets[k].hashes.size() < 2) ++k;
    // An unknown format version (caught by the header check), then two hashes swapped (caught
    // when the value is stored).
    std::vector<unsigned char> version = packed(sets[k]);
    version[0] = 9;
    std::vector<unsigned char> order = packed(sets[k]);
    std::swap_ranges(order.begin() + kPackedHeaderSize, order.begin() + kPackedHeaderSize + 8,
                     order.begin() + kPackedHeaderSize + 8);
    for (bool background : {true, false})
        for (const std::vector<unsigned char>& bad : {version, order}) {
            ReadPipeline p(0.8, 0, 0, background);
            try {
                for (size_t i = 0; i < sets.size(); ++i) {
                    std::vector<unsigned char> b = i == 20 ? bad : packed(sets[i]);
                    while (!p.add(static_cast<int64_t>(i), b.data(), b.size(), kWait)) {
                    }
                }
                p.close();
                while (!p.wait_filed(kWait)) {
                }
                FAIL() << "no error";
            } catch (const Error& e) {
                EXPECT_EQ(e.kind(), ErrorKind::DataCorrupted) << e.what() << (background ? "" : " (by the caller)");
            }
        }
}

TEST(ReadPipeline, StopsWithoutClosing) {
    std::vector<Multiset> sets = random_sets(4, 5000, 30, 1000);
    auto t0 = std::chrono::steady_clock::now();
    {
        ReadPipeline p(0.9, 0, 0);
        for (size_t i = 0; i < sets.size(); ++i) {
            std::vector<unsigned char> b = packed(sets[i]);
            while (!p.add(static_cast<int64_t>(i), b.data(), b.size(), kWait)) {
            }
        }
        p.stop();
        p.stop();  // idempotent
        EXPECT_FALSE(p.wait_filed(kWait));
    }  // the destructor after stop()
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    // Filed by the caller: stopping leaves nothing to wait for, and the input is reported as
    // stopped rather than joined in part.
    ReadPipeline q(0.9, 0, 0, false);
    std::vector<unsigned char> b = packed(sets[0]);
    ASSERT_TRUE(q.add(1, b.data(), b.size(), kWait));
    q.stop();
    try {
        q.wait_filed(kWait);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Canceled) << e.what();
    }
}

// The threads of this process (Linux).
size_t process_threads() {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) n += entry.is_directory();
    return n;
}

TEST(ReadPipeline, OneThreadCallsStartNoThread) {
    const size_t before = process_threads();
    {
        ReadPipeline p(0.9, 0, 0, false);
        EXPECT_EQ(process_threads(), before);
        ReadPipeline q(0.9, 0, 0, true);
        EXPECT_EQ(process_threads(), before + 1);
    }
    EXPECT_EQ(process_threads(), before);
}

// growth_for() is what add() then takes, exactly, with or without a growth limit: a first read
// charges it before each document.
TEST(ReadPipeline, CollectionGrowthIsKnownBeforeAdding) {
    const std::vector<Multiset> sets = random_sets(21, 6000, 120, 20000);
    for (size_t limit : {size_t(0), size_t(1) << 20, size_t(3) << 20}) {
        SCOPED_TRACE(limit);
        Collection c;
        c.limit_growth(limit);
        for (size_t i = 0; i < sets.size(); ++i) {
            const size_t before = c.memory_bytes();
            const size_t growth = c.growth_for(sets[i].view());
            c.add(static_cast<int64_t>(i), sets[i].view());
            ASSERT_EQ(c.memory_bytes() - before, growth) << i;
        }
    }
}

// Under a budget the pipeline never holds more than it charged and never charges past the cap:
// a budget too small refuses a document and the read overflows (discard() gives everything
// back); a large one files everything, as without a budget, and its batch buffers go back once
// everything is filed.
TEST(ReadPipeline, StaysWithinItsBudget) {
    const std::vector<Multiset> sets = random_sets(5, 20000, 100, 50000);
    for (bool background : {true, false}) {
        SCOPED_TRACE(background ? "filing thread" : "filed by the caller");
        {
            ReadBudget budget(size_t(2) << 20);
            ReadPipeline p(0.5, 0, 0, background);
            p.charge_to(&budget);
            feed(p, sets);
            EXPECT_TRUE(p.overflowed());
            EXPECT_LE(budget.peak(), size_t(2) << 20);
            p.discard();
            EXPECT_EQ(budget.used(), 0u);
        }
        {
            ReadBudget budget(size_t(256) << 20);
            ReadPipeline p(0.5, 0, 0, background);
            p.charge_to(&budget);
            feed(p, sets);
            EXPECT_FALSE(p.overflowed());
            expect_filed(p.docs(), sets);
            EXPECT_LE(budget.peak(), size_t(256) << 20);
            EXPECT_GE(budget.used(), p.docs().memory_bytes());
            EXPECT_EQ(p.memory_bytes(), p.docs().memory_bytes() + p.prefixes()->lists.memory_bytes());
        }
    }
}

// Under a small memory limit (a pass's, without a budget) the batch buffers take at most an
// eighth of it, each at least 64 kB: a limit that holds the documents is not spent on buffers.
// A value larger than a batch still grows its batch for itself and is filed.
TEST(ReadPipeline, BatchBuffersFollowASmallLimit) {
    std::vector<Multiset> sets = random_sets(7, 3000, 40, 5000);
    Multiset big;
    for (uint64_t h = 0; h < 200000; ++h) {
        big.hashes.push_back(h * 7 + 1);
        big.freqs.push_back(1);
        big.length += 1;
    }
    sets.insert(sets.begin() + 1500, big);
    for (bool background : {true, false}) {
        SCOPED_TRACE(background ? "filing thread" : "filed by the caller");
        const size_t batches = background ? 4 : 1;
        {
            ReadPipeline p(0.0, 0, 0, background);
            p.limit_growth(size_t(4) << 20, false);
            EXPECT_EQ(p.memory_bytes(), batches * ((size_t(4) << 20) / (8 * batches)));
            feed(p, sets);
            expect_filed(p.docs(), sets);
        }
        {
            ReadPipeline p(0.0, 0, 0, background);
            p.limit_growth(size_t(100) << 10, false);
            EXPECT_EQ(p.memory_bytes(), batches * (size_t(64) << 10));
            feed(p, sets);
            expect_filed(p.docs(), sets);
        }
        {
            // A large limit keeps the usual buffers (2 MB each, less the allocator's header).
            ReadPipeline p(0.0, 0, 0, background);
            p.limit_growth(size_t(1) << 30, false);
            EXPECT_EQ(p.memory_bytes(), batches * ((size_t(2) << 20) - 64));
        }
    }
}
