// Scales a corpus of spot signatures to any size with a known share of near-duplicate variants.
//
//   scale_corpus ROWS [VARIANT_SHARE=0.10] [SEED=42] [MODE=vocab|fresh] < base.tsv > scaled.tsv
//
// Input and output are PostgreSQL COPY text lines "id<TAB>spotsig" ('{hex[:freq],...}'). Output
// row r (0-based, id r+1) derives from base row r % N, copy c = r / N:
//   * c = 0: the base document itself (so the first N rows are the real corpus);
//   * c >= 1, with probability VARIANT_SHARE: a near-duplicate variant of the base document:
//     each distinct signature is dropped with probability d, d drawn uniformly from
//     [0.02, 0.15] per row, and about d * size new random signatures are added (similarity to
//     the base document then lies around 0.75-0.96);
//   * otherwise: a new, unrelated document of the same shape over the same vocabulary: every
//     signature is replaced by another signature of the base corpus with about the same
//     document frequency (the vocabulary, sorted by document frequency, is cut into blocks of
//     64, and copy c permutes each block with its own bijection). The scaled corpus so keeps
//     the base corpus's vocabulary and document-frequency profile, as a larger crawl of the
//     same kind of text would (with MODE=fresh, every copy gets brand-new signatures instead:
//     each hash mixed with a per-copy salt, so the vocabulary grows with the row count).
// Every random choice comes from SplitMix64 seeded with SEED and the row number: the output is
// the same on every run and machine. The summary on stderr counts rows and variants.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../src/core/signature/hash.hpp"

namespace {

// One signature: hash and frequency.
struct Sig {
    uint64_t hash;
    uint32_t freq;
};

// SplitMix64: a small, well-mixed, seedable generator.
struct SplitMix {
    uint64_t state;
    // The next 64 random bits.
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // A uniform double in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// Parses '{hex[:freq],...}' into signatures; exits on malformed input.
std::vector<Sig> parse_sig(const std::string& text) {
    std::vector<Sig> out;
    size_t i = 1;
    if (text.size() < 2 || text[0] != '{') {
        std::fprintf(stderr, "bad signature: %s\n", text.c_str());
        std::exit(1);
    }
    while (i < text.size() && text[i] != '}') {
        char* end;
        Sig s{std::strtoull(text.c_str() + i, &end, 16), 1};
        i = static_cast<size_t>(end - text.c_str());
        if (text[i] == ':') {
            s.freq = static_cast<uint32_t>(std::strtoul(text.c_str() + i + 1, &end, 10));
            i = static_cast<size_t>(end - text.c_str());
        }
        out.push_back(s);
        if (text[i] == ',') ++i;
    }
    return out;
}

// Writes signatures in the text form (any order and duplicates are fine: input sums them).
void print_sig(const std::vector<Sig>& sigs, std::string& buf) {
    char tmp[40];
    buf += '{';
    for (size_t k = 0; k < sigs.size(); ++k) {
        if (k) buf += ',';
        int n = sigs[k].freq == 1
                    ? std::snprintf(tmp, sizeof tmp, "%016llx", static_cast<unsigned long long>(sigs[k].hash))
                    : std::snprintf(tmp, sizeof tmp, "%016llx:%u", static_cast<unsigned long long>(sigs[k].hash),
                                    sigs[k].freq);
        buf.append(tmp, n);
    }
    buf += '}';
}

// A bijective 64-bit mixer, used to derive unrelated hashes from a hash and a salt.
uint64_t mix(uint64_t x) {
    return spotsigs::fmix64(x);
}

}  // namespace

// Reads the base corpus, writes the scaled one, prints the summary.
int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: scale_corpus ROWS [VARIANT_SHARE] [SEED] [vocab|fresh] < base.tsv\n");
        return 2;
    }
    const uint64_t rows = std::strtoull(argv[1], nullptr, 10);
    const double share = argc > 2 ? std::atof(argv[2]) : 0.10;
    const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 42;

    std::ios::sync_with_stdio(false);
    std::vector<std::vector<Sig>> base;
    std::string line;
    while (std::getline(std::cin, line)) {
        size_t tab = line.find('\t');
        if (tab == std::string::npos) continue;
        base.push_back(parse_sig(line.substr(tab + 1)));
    }
    if (base.empty()) {
        std::fprintf(stderr, "no input rows\n");
        return 1;
    }
    const uint64_t n = base.size();
    const bool fresh = argc > 4 && std::strcmp(argv[4], "fresh") == 0;

    // The vocabulary in order of document frequency (ties by hash), and each hash's rank in it;
    // fresh mode needs neither (only the size, for the summary).
    std::unordered_map<uint64_t, uint32_t> df;
    for (const auto& d : base)
        for (const Sig& s : d) ++df[s.hash];
    std::vector<uint64_t> vocab;
    std::unordered_map<uint64_t, uint32_t> rank;
    if (!fresh) {
        vocab.reserve(df.size());
        for (const auto& e : df) vocab.push_back(e.first);
        std::sort(vocab.begin(), vocab.end(), [&df](uint64_t x, uint64_t y) {
            uint32_t a = df[x], b = df[y];
            return a != b ? a < b : x < y;
        });
        rank.reserve(vocab.size());
        for (uint32_t i = 0; i < vocab.size(); ++i) rank[vocab[i]] = i;
    }
    const uint64_t vsize = df.size();
    // Copy c's bijection of the ranks: inside each block of 64, offset -> (offset * a + b) mod 64
    // with a odd (a rotation in the last, partial block).
    auto permuted = [vsize, seed](uint32_t r, uint64_t copy) -> uint64_t {
        const uint64_t start = r & ~uint64_t(63);
        const uint64_t size = std::min<uint64_t>(64, vsize - start);
        SplitMix g{mix(seed ^ (copy * 0x9e3779b97f4a7c15ULL) ^ (start << 8))};
        const uint64_t a = g.next() | 1, b = g.next();
        const uint64_t off = r - start;
        return start + (size == 64 ? ((off * a + b) & 63) : ((off + b) % size));
    };
    uint64_t variants = 0, unrelated = 0, originals = 0;
    std::string out;
    out.reserve(1 << 22);
    std::vector<Sig> doc;
    for (uint64_t r = 0; r < rows; ++r) {
        const std::vector<Sig>& b = base[r % n];
        const uint64_t copy = r / n;
        SplitMix rng{seed * 0x100000001b3ULL ^ mix(r + 1)};
        doc.clear();
        if (copy == 0) {
            doc = b;
            ++originals;
        } else if (rng.uniform() < share) {
            double drop = 0.02 + 0.13 * rng.uniform();
            for (const Sig& s : b)
                if (rng.uniform() >= drop) doc.push_back(s);
            size_t add = static_cast<size_t>(drop * static_cast<double>(b.size()) + 0.5);
            for (size_t k = 0; k < add; ++k) doc.push_back(Sig{rng.next(), 1});
            ++variants;
        } else if (fresh) {
            const uint64_t salt = mix(seed + 0x9e3779b97f4a7c15ULL * copy);
            for (const Sig& s : b) doc.push_back(Sig{mix(s.hash ^ salt), s.freq});
            ++unrelated;
        } else {
            for (const Sig& s : b) doc.push_back(Sig{vocab[permuted(rank.at(s.hash), copy)], s.freq});
            ++unrelated;
        }
        out += std::to_string(r + 1);
        out += '\t';
        print_sig(doc, out);
        out += '\n';
        if (out.size() > (1 << 22) - (1 << 16)) {
            std::fwrite(out.data(), 1, out.size(), stdout);
            out.clear();
        }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fprintf(stderr,
                 "scaled corpus: %llu rows from %llu base documents (seed %llu, %s, vocabulary "
                 "%llu signatures): %llu originals, "
                 "%llu near-duplicate variants (share %.3f of the copies), %llu unrelated copies\n",
                 static_cast<unsigned long long>(rows), static_cast<unsigned long long>(n),
                 static_cast<unsigned long long>(seed), fresh ? "fresh signatures" : "same vocabulary",
                 static_cast<unsigned long long>(vsize), static_cast<unsigned long long>(originals),
                 static_cast<unsigned long long>(variants), share, static_cast<unsigned long long>(unrelated));
    return 0;
}
