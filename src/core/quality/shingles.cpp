// Word n-shingling over the shared tokeniser.
#include "core/quality/shingles.hpp"

#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/error.hpp"
#include "core/signature/hash.hpp"
#include "core/text/tokenize.hpp"

namespace spotsigs {

Multiset shingles(std::string_view doc, int n, const PollFn& poll) {
    if (n < 1 || n > kMaxShingleWidth)
        throw Error(ErrorKind::InvalidParameter, "shingle width must be between 1 and 100",
                    "n is " + std::to_string(n) + ".");
    std::vector<std::string> window(static_cast<size_t>(n));  // ring buffer of the last n words
    size_t seen = 0;
    std::unordered_map<uint64_t, uint64_t> counts;
    tokenize(
        doc,
        [&](std::string_view word) {
            window[seen % n].assign(word.data(), word.size());
            ++seen;
            if (seen < static_cast<size_t>(n)) return;
            SigHasher h;
            for (size_t i = seen - n; i < seen; ++i) {
                if (i != seen - n) h.add_separator();
                h.add(window[i % n]);
            }
            ++counts[h.finish()];
        },
        poll);
    std::vector<std::pair<uint64_t, uint64_t>> pairs(counts.begin(), counts.end());
    return Multiset::from_pairs(std::move(pairs));
}

}  // namespace spotsigs
