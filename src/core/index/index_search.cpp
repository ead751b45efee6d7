// Threshold and top-k search over length-partitioned posting lists, and the posting list coding.
#include "core/index/index_search.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "core/common/error.hpp"
#include "core/common/threshold.hpp"

namespace spotsigs {

bool overlap_may_reach(uint64_t omax, uint64_t a, uint64_t b, double tau) noexcept {
    if (a == 0 || b == 0) return false;
    uint64_t m = std::min(a, b);
    if (omax > m) omax = m;
    return similarity_from_overlap(omax, a, b) >= tau;
}

// True unless the lengths alone prove similarity < tau (computed as fl(min) / fl(max)).
static bool lengths_may_match(uint64_t a, uint64_t b, double tau) noexcept {
    if (a == 0 || b == 0) return false;
    return static_cast<double>(std::min(a, b)) / static_cast<double>(std::max(a, b)) >= tau;
}

LengthRange length_range(uint64_t qlen, double tau) noexcept {
    LengthRange r;
    if (qlen == 0 || !(tau > 0.0) || tau > 1.0) return r;  // empty: lo 1 > hi 0
    // Estimate the ends, then step to the exact first/last length the computed test accepts.
    double lo_est = std::ceil(tau * static_cast<double>(qlen));
    uint64_t lo = lo_est < 1.0 ? 1 : static_cast<uint64_t>(lo_est);
    if (lo > qlen) lo = qlen;
    while (lo > 1 && lengths_may_match(qlen, lo - 1, tau)) --lo;
    while (lo < qlen && !lengths_may_match(qlen, lo, tau)) ++lo;
    double hi_est = std::floor(static_cast<double>(qlen) / tau);
    uint64_t hi = hi_est >= static_cast<double>(kMaxLength) ? kMaxLength : static_cast<uint64_t>(hi_est);
    if (hi < qlen) hi = qlen;
    while (hi < kMaxLength && lengths_may_match(qlen, hi + 1, tau)) ++hi;
    while (hi > qlen && !lengths_may_match(qlen, hi, tau)) --hi;
    r.lo = lo;
    r.hi = hi;
    if (!lengths_may_match(qlen, qlen, tau)) r = LengthRange{};
    return r;
}

LengthRange content_length_range(uint64_t qlen, double tau) noexcept {
    LengthRange r;
    if (qlen == 0 || !(tau > 0.0) || tau > 1.0) return r;  // empty: lo 1 > hi 0
    // Estimate, then step to the least overlap whose computed bound reaches tau (the bound grows
    // with o, and o = qlen gives 1.0 >= tau).
    double est = std::ceil(tau * static_cast<double>(qlen));
    uint64_t lo = est < 1.0 ? 1 : est > static_cast<double>(qlen) ? qlen : static_cast<uint64_t>(est);
    while (lo > 1 && content_bound(lo - 1, qlen) >= tau) --lo;
    while (lo < qlen && content_bound(lo, qlen) < tau) ++lo;
    r.lo = lo;
    r.hi = kMaxLength;
    return r;
}

Partitioning::Partitioning(uint32_t growth_percent) {
    if (growth_percent < 1) growth_percent = 1;
    starts_.push_back(0);
    uint64_t b = 1;
    while (b <= kMaxLength) {
        starts_.push_back(b);
        uint64_t step = b * growth_percent / 100;
        b += step < 1 ? 1 : step;
    }
}

uint32_t Partitioning::partition_of(uint64_t len) const noexcept {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), len);
    return static_cast<uint32_t>((it - starts_.begin()) - 1);
}

uint64_t Partitioning::lower(uint32_t p) const noexcept {
    return starts_[p];
}

uint64_t Partitioning::upper(uint32_t p) const noexcept {
    return p + 1 < starts_.size() ? starts_[p + 1] - 1 : kMaxLength;
}

namespace {

// A candidate's state: its length and the overlap accumulated so far.
struct Candidate {
    uint32_t length;
    uint64_t acc;
};

// The most overlap candidate c can reach when q's unread signatures hold rem: what it has, plus
// rem, but never more than its own length.
uint64_t max_overlap(const Candidate& c, uint64_t rem) {
    return c.acc + std::min<uint64_t>(rem, c.length - std::min<uint64_t>(c.acc, c.length));
}

// The test of one search: its measure, query length, threshold and the lengths it reads.
struct Bound {
    SearchMeasure measure;
    uint64_t qlen;
    double tau;
    LengthRange range;

    // The value of an entry of length len with overlap o: its similarity, or its content bound.
    double value(uint64_t o, uint64_t len) const {
        return measure == SearchMeasure::kPlain ? similarity_from_overlap(o, qlen, len) : content_bound(o, qlen);
    }
    // True unless an overlap of at most omax with an entry of length len proves value < tau. The
    // overlap is at most min(qlen, len); both values grow with it.
    bool may_reach(uint64_t omax, uint64_t len) const {
        if (measure == SearchMeasure::kPlain) return overlap_may_reach(omax, qlen, len, tau);
        if (len == 0) return false;
        return content_bound(std::min({omax, qlen, len}), qlen) >= tau;
    }
    // The largest value an overlap of at most omax with an entry of length len can give.
    double bound(uint64_t omax, uint64_t len) const { return value(std::min({omax, qlen, len}), len); }
    // True unless no entry unseen so far can reach tau with the overlap rem left in q's unread
    // signatures (its best case: overlap rem at length clamp(rem, lo, hi)).
    bool unseen_may_reach(uint64_t rem) const {
        uint64_t y = std::clamp(rem, range.lo, range.hi);
        return may_reach(std::min(rem, y), y);
    }
};

// The number of signatures, in reading order, read while new candidates are still admitted:
// admission stops at the first signature where unseen_may_reach fails, a test of q's frequencies
// alone, so it is known before any list is read.
size_t admitting_prefix(const MultisetView& q, const std::vector<uint32_t>& order, const Bound& b) {
    uint64_t rem = q.length;
    for (size_t pos = 0; pos < order.size(); ++pos) {
        if (!b.unseen_may_reach(rem)) return pos;
        rem -= q.freqs[order[pos]];
    }
    return order.size();
}

}  // namespace

std::vector<Match> threshold_search(const MultisetView& q, double tau, PostingSource& src, const uint64_t* df_estimate,
                                    std::vector<Unverified>* unverified, SearchMeasure measure) {
    std::vector<Match> out;
    check_threshold(tau);
    if (q.empty()) return out;
    const uint64_t qlen = q.length;
    LengthRange range = measure == SearchMeasure::kPlain ? length_range(qlen, tau) : content_length_range(qlen, tau);
    if (range.empty()) return out;
    const Bound bnd{measure, qlen, tau, range};

    // Rarest signatures first (absent ones cost nothing and shrink the prefix bound at once).
    std::vector<uint32_t> order(q.size);
    std::iota(order.begin(), order.end(), 0u);
    std::vector<uint64_t> df(q.size);
    if (df_estimate == nullptr) {
        src.prepare(order.data(), order.size());
        for (uint32_t i = 0; i < q.size; ++i) df[i] = src.count(i, range.lo, range.hi);
    } else {
        std::copy(df_estimate, df_estimate + q.size, df.begin());
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return df[a] < df[b]; });
    // With estimates, the lists are looked up as they are needed: those read while admitting
    // together, then, while candidates live, in batches that double (few lookups are wasted when
    // the candidates die early, few batches are needed when they do not).
    size_t prepared = 0;
    auto prepare_upto = [&](size_t end) {
        end = std::min(end, order.size());
        if (df_estimate == nullptr || end <= prepared) return;
        std::vector<uint32_t> next(order.begin() + prepared, order.begin() + end);
        std::sort(next.begin(), next.end());
        src.prepare(next.data(), next.size());
        prepared = end;
    };
    prepare_upto(admitting_prefix(q, order, bnd) + 1);
    size_t batch = 8;

    std::unordered_map<uint64_t, Candidate> cands;
    uint64_t rem = qlen;  // sum of q's frequencies over signatures not yet read
    bool admitting = true;
    size_t pos = 0;
    for (; pos < order.size(); ++pos) {
        uint32_t i = order[pos];
        uint64_t fq = q.freqs[i];
        if (admitting && !bnd.unseen_may_reach(rem)) admitting = false;
        uint64_t lo = range.lo, hi = range.hi;
        if (!admitting) {
            // Drop candidates that cannot reach tau even with every remaining signature.
            uint64_t mn = UINT64_MAX, mx = 0;
            for (auto it = cands.begin(); it != cands.end();) {
                const Candidate& c = it->second;
                if (!bnd.may_reach(max_overlap(c, rem), c.length)) {
                    it = cands.erase(it);
                } else {
                    mn = std::min<uint64_t>(mn, c.length);
                    mx = std::max<uint64_t>(mx, c.length);
                    ++it;
                }
            }
            if (cands.empty()) break;
            if (unverified != nullptr && cands.size() <= order.size() - pos) {
                // Hand the survivors over with the bound that kept them: the similarity is monotone
                // in the overlap, which max_overlap bounds (clamped as overlap_may_reach does).
                for (const auto& [id, c] : cands)
                    unverified->push_back(Unverified{id, c.length, bnd.bound(max_overlap(c, rem), c.length)});
                cands.clear();
                break;
            }
            lo = mn;
            hi = mx;
        }
        if (df_estimate != nullptr) {
            if (pos >= prepared) {
                prepare_upto(pos + batch);
                batch *= 2;
            }
            df[i] = src.count(i, lo, hi);
        }
        if (df[i] > 0) {
            const bool admit = admitting;
            src.scan(i, lo, hi, [&](const Posting& p) {
                if (p.length < lo || p.length > hi) return true;  // outside the range: ignore
                uint64_t o = std::min<uint64_t>(fq, p.freq);
                auto it = cands.find(p.id);
                if (it != cands.end()) {
                    it->second.acc += o;
                } else if (admit) {
                    uint64_t omax = std::min<uint64_t>(p.length, o + (rem - fq));
                    if (bnd.may_reach(omax, p.length)) {
                        cands.emplace(p.id, Candidate{p.length, o});
                    }
                }
                return true;
            });
        }
        rem -= fq;
    }
    for (const auto& [id, c] : cands) {
        double s = bnd.value(c.acc, c.length);
        if (s >= tau) out.push_back(Match{id, s});
    }
    return out;
}

namespace {
constexpr double kTiers[] = {0.8, 0.5, 0.3, 0.15, 0.05, 1e-12};  // few tiers: each is a full search
}

double order_tier(size_t t) noexcept {
    return kTiers[t];
}

size_t order_tier_count() noexcept {
    return sizeof kTiers / sizeof kTiers[0];
}

size_t put_varint(unsigned char* out, uint64_t v) noexcept {
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = static_cast<unsigned char>(v | 0x80);
        v >>= 7;
    }
    out[n++] = static_cast<unsigned char>(v);
    return n;
}

size_t encode_posting(unsigned char* out, const Posting& p, const Posting* prev) noexcept {
    size_t n = 0;
    if (prev == nullptr) {
        n += put_varint(out + n, p.length);
        n += put_varint(out + n, p.id);
    } else {
        uint64_t dl = prev->length - p.length;
        n += put_varint(out + n, dl);
        n += put_varint(out + n, dl == 0 ? p.id - prev->id : p.id);
    }
    n += put_varint(out + n, p.freq);
    return n;
}

bool decode_posting_nothrow(const unsigned char*& pos, const unsigned char* end, Posting& out,
                            const Posting* prev) noexcept {
    uint64_t v[3];
    for (int k = 0; k < 3; ++k) {
        uint64_t x = 0;
        unsigned shift = 0;
        for (;;) {
            if (pos >= end || shift >= 64) return false;
            unsigned char b = *pos++;
            x |= static_cast<uint64_t>(b & 0x7f) << shift;
            shift += 7;
            if (!(b & 0x80)) break;
        }
        v[k] = x;
    }
    uint64_t a = v[0], b = v[1], f = v[2];
    if (prev == nullptr) {
        if (a > kMaxLength) return false;
        out.length = static_cast<uint32_t>(a);
        out.id = b;
    } else {
        if (a > prev->length) return false;
        out.length = static_cast<uint32_t>(prev->length - a);
        if (a == 0) {
            if (b == 0 || b > UINT64_MAX - prev->id) return false;
            out.id = prev->id + b;
        } else {
            out.id = b;
        }
    }
    if (f > out.length) return false;
    out.freq = static_cast<uint32_t>(f);
    return true;
}

void decode_posting(const unsigned char*& pos, const unsigned char* end, Posting& out, const Posting* prev) {
    if (!decode_posting_nothrow(pos, end, out, prev))
        throw Error(ErrorKind::DataCorrupted, "corrupt spotsigs index", "malformed posting");
}

}  // namespace spotsigs
