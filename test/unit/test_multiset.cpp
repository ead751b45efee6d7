// Unit tests of multisets, similarity, the packed layout and the text form.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/signature/binary_format.hpp"
#include "core/signature/multiset.hpp"
#include "core/signature/packed.hpp"
#include "core/signature/text_format.hpp"

using namespace spotsigs;

namespace {

// A multiset from (hash, freq) pairs.
Multiset ms(std::vector<std::pair<uint64_t, uint64_t>> p) {
    return Multiset::from_pairs(std::move(p));
}

// The paper's section 4.3.2 documents.
const Multiset d1 = ms({{1, 5}, {2, 4}, {3, 4}});
const Multiset d2 = ms({{1, 8}, {2, 4}});
const Multiset d3 = ms({{1, 4}, {2, 5}, {3, 5}});

}  // namespace

TEST(Multiset, FromPairsSortsAndSums) {
    Multiset m = ms({{9, 1}, {3, 2}, {9, 4}, {5, 0}});
    EXPECT_EQ(m.hashes, (std::vector<uint64_t>{3, 9}));
    EXPECT_EQ(m.freqs, (std::vector<uint32_t>{2, 5}));
    EXPECT_EQ(m.length, 7u);
}

TEST(Multiset, UnsignedOrder) {
    Multiset m = ms({{0x8000000000000000ULL, 1}, {1, 1}});
    EXPECT_EQ(m.hashes[0], 1u);
    EXPECT_EQ(m.hashes[1], 0x8000000000000000ULL);
}

TEST(Multiset, LengthLimit) {
    EXPECT_NO_THROW(ms({{1, kMaxLength}}));
    EXPECT_THROW(ms({{1, kMaxLength}, {2, 1}}), Error);
    EXPECT_THROW(ms({{1, kMaxLength}, {1, 1}}), Error);
}

TEST(Similarity, PaperExample) {
    EXPECT_EQ(d1.length, 13u);
    EXPECT_EQ(d2.length, 12u);
    EXPECT_EQ(d3.length, 14u);
    EXPECT_DOUBLE_EQ(similarity(d1.view(), d3.view()), 0.8);
    EXPECT_EQ(similarity(d1.view(), d3.view()), 12.0 / 15.0);
    EXPECT_EQ(similarity(d1.view(), d2.view()), 9.0 / 16.0);
    EXPECT_EQ(similarity(d2.view(), d3.view()), 8.0 / 18.0);
    EXPECT_EQ(similarity(d3.view(), d1.view()), similarity(d1.view(), d3.view()));
}

TEST(Similarity, EmptyIsZero) {
    Multiset e;
    EXPECT_EQ(similarity(e.view(), e.view()), 0.0);
    EXPECT_EQ(similarity(e.view(), d1.view()), 0.0);
    EXPECT_EQ(set_similarity(e.view(), d1.view()), 0.0);
}

TEST(Similarity, SetSimilarityIgnoresFrequencies) {
    EXPECT_EQ(set_similarity(d1.view(), d2.view()), 2.0 / 3.0);
    EXPECT_EQ(set_similarity(d1.view(), d3.view()), 1.0);
}

TEST(Similarity, IdenticalIsOne) {
    EXPECT_EQ(similarity(d1.view(), d1.view()), 1.0);
    Multiset copy = d1;
    EXPECT_TRUE(equal(d1.view(), copy.view()));
    EXPECT_FALSE(equal(d1.view(), d3.view()));
}

// Packs m into a buffer whose hashes are 8-byte aligned, as in a MAXALIGNed datum.
static std::vector<uint64_t> packed(const Multiset& m, size_t& len) {
    len = packed_size(m.view());
    std::vector<uint64_t> buf(len / 8 + 2);
    pack(m.view(), reinterpret_cast<unsigned char*>(buf.data()) + 4);
    return buf;
}

TEST(Packed, WidthsAndRoundTrip) {
    std::vector<std::pair<Multiset, unsigned>> cases = {{ms({}), 0},
                                                        {ms({{7, 1}, {8, 1}}), 0},
                                                        {ms({{7, 255}}), 1},
                                                        {ms({{7, 256}, {9, 1}}), 2},
                                                        {ms({{7, 65536}}), 4}};
    for (auto& [m, width] : cases) {
        EXPECT_EQ(freq_width_for(m.view()), width);
        size_t len;
        auto buf = packed(m, len);
        EXPECT_EQ(len, kPackedHeaderSize + m.hashes.size() * (8 + width));
        MultisetView v = unpack_checked(reinterpret_cast<unsigned char*>(buf.data()) + 4, len);
        EXPECT_TRUE(equal(v, m.view()));
    }
}

// unpack_header reads the length, count and width from the header's bytes alone (a copy of the
// first kPackedHeaderSize bytes, as a toast slice gives), with unpack's checks of the full size.
TEST(Packed, HeaderAloneGivesWhatUnpackGives) {
    Multiset m = ms({{1, 2}, {5, 300}, {9, 1}});
    size_t len;
    auto buf = packed(m, len);
    const unsigned char* p = reinterpret_cast<unsigned char*>(buf.data()) + 4;
    const std::vector<unsigned char> head(p, p + kPackedHeaderSize);
    const PackedHeader h = unpack_header(head.data(), len);
    const MultisetView v = unpack(p, len);
    EXPECT_EQ(h.length, v.length);
    EXPECT_EQ(h.length, 303u);
    EXPECT_EQ(h.n, v.size);
    EXPECT_EQ(h.width, 2u);
    for (size_t bad_len : {len - 1, len + 1, size_t(3)}) {
        std::string a, b;
        try {
            unpack_header(head.data(), bad_len);
        } catch (const Error& e) {
            a = std::string(e.what()) + "/" + e.detail();
        }
        try {
            unpack(p, bad_len);
        } catch (const Error& e) {
            b = std::string(e.what()) + "/" + e.detail();
        }
        EXPECT_FALSE(a.empty()) << bad_len;
        EXPECT_EQ(a, b) << bad_len;
    }
}

TEST(Packed, RejectsCorruptBytes) {
    Multiset m = ms({{1, 2}, {5, 3}});
    size_t len;
    auto buf = packed(m, len);
    unsigned char* p = reinterpret_cast<unsigned char*>(buf.data()) + 4;
    EXPECT_THROW(unpack(p, len - 1), Error);
    EXPECT_THROW(unpack(p, 3), Error);
    p[0] = 9;
    EXPECT_THROW(unpack(p, len), Error);
    p[0] = kPackedVersion;
    p[kPackedHeaderSize + 16] = 0;  // first frequency
    EXPECT_THROW(unpack_checked(p, len), Error);
    p[kPackedHeaderSize + 16] = 2;
    std::swap(p[kPackedHeaderSize], p[kPackedHeaderSize + 8]);  // hashes out of order
    EXPECT_THROW(unpack_checked(p, len), Error);
}

TEST(TextFormat, Canonical) {
    EXPECT_EQ(to_text(ms({}).view()), "{}");
    EXPECT_EQ(to_text(parse_text("{ff:2, 1, 0A}").view()), "{0000000000000001,000000000000000a,00000000000000ff:2}");
    EXPECT_EQ(to_text(parse_text(" { 1 : 3 , 1 } ").view()), "{0000000000000001:4}");
}

TEST(TextFormat, Errors) {
    for (const char* bad :
         {"", "x", "{", "{1,}", "{1:0}", "{1:000}", "{1:}", "{1:-2}", "{12345678901234567}", "{1} x", "{1 2}", "{,}"}) {
        try {
            parse_text(bad);
            ADD_FAILURE() << "accepted " << bad;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidText) << bad;
        }
    }
    // Well-formed literals beyond the limits are the program limit, not a syntax error.
    for (const char* big : {"{1:2147483648}", "{1:00000000000000000000002147483648}", "{1:2147483647,2}",
                            "{1:2147483647,1}", "{1:99999999999999999999999999999}"}) {
        try {
            parse_text(big);
            ADD_FAILURE() << "accepted " << big;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::ProgramLimit) << big;
        }
    }
    // Leading zeros are allowed however many there are.
    EXPECT_EQ(to_text(parse_text("{1:007,2:000000000000000000002147483640}").view()),
              "{0000000000000001:7,0000000000000002:2147483640}");
}

TEST(BinaryFormat, RoundTripAndAnyOrder) {
    Multiset m = ms({{~uint64_t(0), 3}, {1, 1}, {uint64_t(1) << 63, 2}});
    std::string bin = to_binary(m.view());
    size_t used = 0;
    Multiset back = parse_binary(reinterpret_cast<const unsigned char*>(bin.data()), bin.size(), &used);
    EXPECT_EQ(used, bin.size());
    EXPECT_TRUE(equal(m.view(), back.view()));
    // The same pairs in signed order (as spotsig_hashes lists them), one hash split in two,
    // followed by bytes that belong to the caller.
    const unsigned char signed_order[] = {0,    0,    0,    4,    0x80, 0,    0,    0,    0,    0,    0, 0, 0, 0,
                                          0,    2,    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1,
                                          0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0,    0,    0, 2, 0, 0,
                                          0,    0,    0,    0,    0,    1,    0,    0,    0,    1,    9, 9};
    back = parse_binary(signed_order, sizeof signed_order, &used);
    EXPECT_EQ(used, sizeof signed_order - 2);
    EXPECT_TRUE(equal(m.view(), back.view()));
}

TEST(BinaryFormat, Errors) {
    auto kind_of = [](std::vector<unsigned char> bytes) {
        size_t used = 0;
        try {
            parse_binary(bytes.data(), bytes.size(), &used);
        } catch (const Error& e) {
            return e.kind();
        }
        return ErrorKind::Internal;  // accepted
    };
    EXPECT_EQ(kind_of({0, 0, 0}), ErrorKind::InvalidBinary);
    EXPECT_EQ(kind_of({0xff, 0xff, 0xff, 0xff}), ErrorKind::InvalidBinary);              // count -1
    EXPECT_EQ(kind_of({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7}), ErrorKind::InvalidBinary);  // cut short
    EXPECT_EQ(kind_of({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xfd}), ErrorKind::InvalidBinary);
    EXPECT_EQ(kind_of({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0}), ErrorKind::InvalidBinary);
    EXPECT_EQ(kind_of({0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 1}),
              ErrorKind::ProgramLimit);
    try {
        const unsigned char neg[] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xfd};
        size_t used = 0;
        parse_binary(neg, sizeof neg, &used);
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "invalid frequency -3 in external spotsig value");
    }
}

// plan_binary and pack_binary give, for every value spotsig_send could write (random counts,
// hashes and frequencies of every width), the bytes pack() gives for parse_binary's multiset;
// for anything else (unsorted, repeated, past the length limit) plan_binary says so and
// parse_binary decides; malformed values throw the same errors from both.
TEST(BinaryFormat, PlannedPackingEqualsParseThenPack) {
    std::mt19937_64 rng(11);
    auto encode = [](const std::vector<std::pair<uint64_t, uint64_t>>& p, size_t count) {
        std::string out;
        auto put = [&](uint64_t v, int bytes) {
            for (int s = 8 * (bytes - 1); s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
        };
        put(count, 4);
        for (auto [h, f] : p) {
            put(h, 8);
            put(f, 4);
        }
        out += "tail";  // bytes after the value belong to the caller
        return out;
    };
    const uint64_t fmax_of[] = {1, 0xff, 0xffff, 0x7fffffff / 64};
    int canonical = 0, other = 0, errors = 0;
    for (int t = 0; t < 2000; ++t) {
        std::vector<std::pair<uint64_t, uint64_t>> p;
        const int n = int(rng() % 50);
        const uint64_t fmax = fmax_of[t % 4];
        for (int i = 0; i < n; ++i) p.emplace_back(rng() % (t % 7 == 0 ? 32 : ~uint64_t(0)), 1 + rng() % fmax);
        if (t % 3 != 0) std::sort(p.begin(), p.end());                 // mostly ascending, repeats when t % 7 == 0
        if (t % 11 == 0 && n > 0) p[rng() % n].second = 0;             // an invalid frequency
        if (t % 13 == 0 && n > 1) p[rng() % n].second = 0x7ffffff0;    // past the length limit
        const size_t count = t % 17 == 0 ? size_t(n) + 1 : size_t(n);  // cut short when larger
        const std::string bin = encode(p, count);
        const auto* data = reinterpret_cast<const unsigned char*>(bin.data());
        std::string want, got;
        size_t used = 0;
        try {
            Multiset m = parse_binary(data, bin.size(), &used);
            std::string packed(packed_size(m.view()), '\0');
            pack(m.view(), reinterpret_cast<unsigned char*>(packed.data()));
            want = packed + "/" + std::to_string(used);
        } catch (const Error& e) {
            want = e.what();
        }
        try {
            const BinaryPlan plan = plan_binary(data, bin.size());
            if (plan.canonical) {
                std::string packed(plan.packed_size, '\0');
                pack_binary(data, plan, reinterpret_cast<unsigned char*>(packed.data()));
                got = packed + "/" + std::to_string(plan.consumed);
                ++canonical;
            } else {
                // Not canonical: the caller parses it; the plan's size is what parse_binary consumes.
                Multiset m = parse_binary(data, bin.size(), &used);
                std::string packed(packed_size(m.view()), '\0');
                pack(m.view(), reinterpret_cast<unsigned char*>(packed.data()));
                got = packed + "/" + std::to_string(used);
                EXPECT_EQ(plan.consumed, used) << "case " << t;
                ++other;
            }
        } catch (const Error& e) {
            got = e.what();
            ++errors;
        }
        EXPECT_EQ(got, want) << "case " << t;
    }
    // Every kind of input occurred.
    EXPECT_GT(canonical, 500);
    EXPECT_GT(other, 100);
    EXPECT_GT(errors, 100);
}

// parse_binary takes ascending input as it comes and sorts anything else: both give what
// Multiset::from_pairs gives for the same pairs, with the same errors, whichever order the
// pairs come in and wherever the input stops being ascending.
TEST(BinaryFormat, RandomOrdersEqualFromPairs) {
    std::mt19937_64 rng(7);
    auto encode = [](const std::vector<std::pair<uint64_t, uint64_t>>& p) {
        std::string out;
        auto put = [&](uint64_t v, int bytes) {
            for (int s = 8 * (bytes - 1); s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
        };
        put(p.size(), 4);
        for (auto [h, f] : p) {
            put(h, 8);
            put(f, 4);
        }
        return out;
    };
    for (int t = 0; t < 600; ++t) {
        std::vector<std::pair<uint64_t, uint64_t>> p;
        const int n = int(rng() % 40);
        for (int i = 0; i < n; ++i) p.emplace_back(rng() % (t % 3 == 0 ? 16 : ~uint64_t(0)), 1 + rng() % 1000);
        if (t % 2 == 0) std::sort(p.begin(), p.end());              // ascending, with repeats when t % 3 == 0
        if (t % 5 == 0 && n > 0) p[rng() % n].second = 0x7fffff00;  // a length past the limit, mostly
        const std::string bin = encode(p);
        size_t used = 0;
        std::string got, want;
        try {
            got = to_text(parse_binary(reinterpret_cast<const unsigned char*>(bin.data()), bin.size(), &used).view());
        } catch (const Error& e) {
            got = e.what();
        }
        try {
            want = to_text(Multiset::from_pairs(p).view());
        } catch (const Error& e) {
            want = e.what();
        }
        EXPECT_EQ(got, want) << "case " << t;
    }
    // Ascending up to a repeat, then an invalid frequency: the invalid frequency is reported, as
    // when the input is read whole.
    const unsigned char late[] = {0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0,
                                  0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0};
    size_t used = 0;
    try {
        parse_binary(late, sizeof late, &used);
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "invalid frequency 0 in external spotsig value");
    }
}

TEST(TextFormat, RandomRoundTrip) {
    std::mt19937_64 rng(42);
    for (int t = 0; t < 200; ++t) {
        std::vector<std::pair<uint64_t, uint64_t>> p;
        int n = int(rng() % 50);
        for (int i = 0; i < n; ++i) p.emplace_back(rng(), 1 + rng() % 1000);
        Multiset m = ms(p);
        Multiset back = parse_text(to_text(m.view()));
        EXPECT_TRUE(equal(m.view(), back.view()));
    }
}
