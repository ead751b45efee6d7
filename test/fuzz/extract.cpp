// libFuzzer target: extraction on arbitrary bytes must never crash, and extract() and terms()
// must agree and keep the multiset invariants. An input starting with '#' carries its own spot
// specification on the first line ("#the(1,2) a(2,1)\n<document>"), which fuzzes the parser too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/error.hpp"
#include "core/extract/extract.hpp"
#include "core/signature/hash.hpp"
#include "core/text/tokenize.hpp"

using namespace spotsigs;

namespace {

// Stops the run with a crash report when a property does not hold.
void require(bool ok) {
    if (!ok) std::abort();
}

// Checks the multiset invariants and that terms() hashes to the same multiset.
void check(const Extractor& ex, std::string_view doc) {
    Multiset m = ex.extract(doc);
    uint64_t sum = 0;
    for (size_t i = 0; i < m.hashes.size(); ++i) {
        require(i == 0 || m.hashes[i - 1] < m.hashes[i]);
        require(m.freqs[i] >= 1);
        sum += m.freqs[i];
    }
    require(sum == m.length);
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    for (const Term& t : ex.terms(doc)) {
        require(t.freq >= 1 && !t.text.empty());
        pairs.emplace_back(signature_hash(t.text), t.freq);
    }
    require(equal(Multiset::from_pairs(std::move(pairs)).view(), m.view()));
}

// Every word is non-empty and is its own single token (lowercasing is idempotent, and a
// word holds no separator).
void check_words(std::string_view doc) {
    tokenize(doc, [](std::string_view w) {
        require(!w.empty());
        int n = 0;
        tokenize(w, [&](std::string_view again) {
            ++n;
            require(again == w);
        });
        require(n == 1);
    });
}

}  // namespace

// Runs one input through the default and a small configuration (or the input's own).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const Extractor defaults(ExtractConfig::defaults());
    static const Extractor small(
        ExtractConfig::parse_specs("the(1,2) a(2,1) is(3,3) x(1,1) x(2,4)", {"of", "and", "the", "a"}));
    std::string_view input(reinterpret_cast<const char*>(data), size);
    if (!input.empty() && input[0] == '#') {
        size_t eol = input.find('\n');
        std::string_view spec = input.substr(1, eol == input.npos ? input.npos : eol - 1);
        std::string_view doc = eol == input.npos ? std::string_view() : input.substr(eol + 1);
        try {
            Extractor own(ExtractConfig::parse_specs(spec, {"of", "and", "the", "a", "x"}));
            check(own, doc);
        } catch (const Error& e) {
            require(e.kind() == ErrorKind::InvalidParameter);
        }
        return 0;
    }
    check(defaults, input);
    check(small, input);
    check_words(input);
    return 0;
}
