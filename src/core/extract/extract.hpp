// Spot-signature extraction (paper section 3, slides' algorithm) over tokenised text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/common/cancel.hpp"
#include "core/signature/multiset.hpp"

namespace spotsigs {

// One spot specification a(d, c): antecedent word, spot distance, chain length.
struct SpotSpec {
    std::string antecedent;  // lowercase
    int distance = 1;
    int chain = 1;
};

// Limits on extraction parameters (bigger values are refused as absurd).
constexpr int kMaxDistance = 100;
constexpr int kMaxChain = 100;

// A complete extraction configuration: one or more spot specifications and the stopword list.
struct ExtractConfig {
    std::vector<SpotSpec> specs;
    std::vector<std::string> stopwords;  // lowercase words skipped inside chains

    // The shipped default: default_antecedents() at default distance/chain, default stopwords.
    static ExtractConfig defaults();
    // Every antecedent at the same distance and chain; throws Error(InvalidParameter) when
    // distance or chain is out of [1, kMax*] or an antecedent is not a single word.
    static ExtractConfig uniform(const std::vector<std::string>& antecedents, int distance, int chain,
                                 std::vector<std::string> stopwords);
    // Parses a multi-spec text such as "is(3,1), that(5,2)"; throws Error(InvalidParameter)
    // with a message naming the offending part.
    static ExtractConfig parse_specs(std::string_view text, std::vector<std::string> stopwords);
};

// The paper's best antecedent set: articles and the flexions of be, can, will, have, do.
const std::vector<std::string>& default_antecedents();
// A standard English stopword list (the one PostgreSQL ships as english.stop).
const std::vector<std::string>& default_stopwords();
constexpr int kDefaultDistance = 2;  // chosen on newsframes-dev: docs/evaluation.md
constexpr int kDefaultChain = 3;

// A signature as readable text with its count, for spotsigs_terms().
struct Term {
    std::string text;  // e.g. "the:south:carolina"
    uint32_t freq;
};

// A compiled configuration: word lookups prepared once and reused for many documents.
class Extractor {
public:
    explicit Extractor(const ExtractConfig& config);
    ~Extractor();
    Extractor(const Extractor&) = delete;
    Extractor& operator=(const Extractor&) = delete;

    // Extracts the signature multiset of a UTF-8 document (HTML or plain text).
    // poll, if set, is called about every megabyte of input and may throw to abort.
    Multiset extract(std::string_view doc, const PollFn& poll = {}) const;
    // The same signatures as readable text, in order of first occurrence, with counts.
    std::vector<Term> terms(std::string_view doc, const PollFn& poll = {}) const;

private:
    struct Impl;
    Impl* impl_;
};

// Largest document extract() accepts (bytes); larger input is Error(ProgramLimit).
constexpr size_t kMaxDocumentBytes = size_t(1) << 30;

}  // namespace spotsigs
