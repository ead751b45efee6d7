// A Bloom filter over signature hashes (the index's per-segment filters).
#include "core/index/key_filter.hpp"

namespace spotsigs {

KeyFilter::KeyFilter(size_t expected_keys, unsigned bits_per_key) {
    // A power of two of words (at least two, so the shift stays below 64) holding at least
    // expected_keys * bits_per_key bits. The word index takes the mix's top bits and the probes
    // its low 18, which stay apart up to 2^40 words.
    const size_t bits = expected_keys * (bits_per_key == 0 ? 1 : bits_per_key);
    unsigned log2 = 1;
    while ((size_t(64) << log2) < bits && log2 < 40) ++log2;
    words_.assign(size_t(1) << log2, 0);
    shift_ = 64 - log2;
}

}  // namespace spotsigs
