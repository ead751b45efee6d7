// Multisets of signature hashes: the in-memory form, a read-only view, and Jaccard similarity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace spotsigs {

// The i-th frequency of an array stored W bytes wide (0: every frequency is 1), for loops that
// know the width and should not switch on it per read.
template <unsigned W>
inline uint32_t freq_at(const unsigned char* data, size_t i) noexcept {
    if constexpr (W == 0) {
        return 1;
    } else if constexpr (W == 1) {
        return data[i];
    } else if constexpr (W == 2) {
        uint16_t v;
        std::memcpy(&v, data + 2 * i, 2);
        return v;
    } else {
        static_assert(W == 4, "widths are 0, 1, 2 or 4");
        uint32_t v;
        std::memcpy(&v, data + 4 * i, 4);
        return v;
    }
}

// Frequencies stored with a fixed byte width: 0 means "every frequency is 1", else 1, 2 or 4.
struct FreqView {
    const unsigned char* data = nullptr;
    unsigned width = 0;

    // The i-th frequency.
    uint32_t operator[](size_t i) const noexcept {
        switch (width) {
            case 0: return freq_at<0>(data, i);
            case 1: return freq_at<1>(data, i);
            case 2: return freq_at<2>(data, i);
            default: return freq_at<4>(data, i);
        }
    }
};

// The largest length (sum of frequencies) and so the largest frequency a value may have: 2^31-1,
// so that both fit SQL's int.
constexpr uint64_t kMaxLength = 0x7fffffffULL;

// A read-only multiset: hashes strictly ascending (unsigned order), every frequency >= 1.
struct MultisetView {
    const uint64_t* hashes = nullptr;
    FreqView freqs;
    uint32_t size = 0;    // number of distinct signatures
    uint64_t length = 0;  // sum of frequencies, |d| in the paper

    bool empty() const noexcept { return size == 0; }
};

// An owning multiset with the same invariants as MultisetView.
struct Multiset {
    std::vector<uint64_t> hashes;
    std::vector<uint32_t> freqs;
    uint64_t length = 0;

    // A view over this multiset's storage (valid while it is unchanged).
    MultisetView view() const noexcept {
        MultisetView v;
        v.hashes = hashes.data();
        v.freqs.data = reinterpret_cast<const unsigned char*>(freqs.data());
        v.freqs.width = 4;
        v.size = static_cast<uint32_t>(hashes.size());
        v.length = length;
        return v;
    }

    // Builds a multiset from (hash, count) pairs in any order; equal hashes are summed.
    // Throws Error(ProgramLimit) if the length would exceed kMaxLength.
    static Multiset from_pairs(std::vector<std::pair<uint64_t, uint64_t>> pairs);
};

// Sum over common signatures of min(freqA, freqB).
uint64_t overlap(const MultisetView& a, const MultisetView& b) noexcept;

// The overlap of two multisets given as sorted distinct keys [x, xe) and [y, ye) with their
// multiplicities fx and fy: the sum over common keys of the smaller multiplicity.
template <class K>
uint64_t sorted_overlap(const K* x, const K* xe, const uint32_t* fx, const K* y, const K* ye,
                        const uint32_t* fy) noexcept {
    uint64_t o = 0;
    while (x < xe && y < ye) {
        if (*x < *y) {
            ++x;
            ++fx;
        } else if (*y < *x) {
            ++y;
            ++fy;
        } else {
            o += *fx < *fy ? *fx : *fy;
            ++x, ++y, ++fx, ++fy;
        }
    }
    return o;
}

// Multiset Jaccard (paper eq. 4): overlap / (|a| + |b| - overlap); 0 when either side is empty.
double similarity(const MultisetView& a, const MultisetView& b) noexcept;

// Plain set Jaccard over the distinct signatures; 0 when either side is empty.
double set_similarity(const MultisetView& a, const MultisetView& b) noexcept;

// True when both hold the same signatures with the same frequencies.
bool equal(const MultisetView& a, const MultisetView& b) noexcept;

}  // namespace spotsigs
