// The Extractor: a configuration compiled into a word table, run over tokenized documents.
#include "core/extract/extract.hpp"

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/common/error.hpp"
#include "core/extract/config_check.hpp"
#include "core/extract/signature_counts.hpp"
#include "core/extract/spot_chains.hpp"
#include "core/extract/word_table.hpp"
#include "core/signature/hash.hpp"
#include "core/text/tokenize.hpp"

namespace spotsigs {

namespace {

// Collects one word list with a flag and spec group per distinct word, in first-seen order.
struct WordListBuilder {
    std::vector<std::string> words;
    std::vector<bool> stop;
    std::vector<std::vector<CompiledSpec>> specs;
    std::unordered_map<std::string, uint32_t> index;

    // The position of word in the list, adding it if new.
    uint32_t at(const std::string& word) {
        auto [it, added] = index.emplace(word, uint32_t(words.size()));
        if (added) {
            words.push_back(word);
            stop.push_back(false);
            specs.emplace_back();
        }
        return it->second;
    }
};

// Sink for SpotChains that hashes signatures and counts them.
struct HashSink {
    using State = SigHasher;
    SignatureCounts& counts;

    // Begins a signature with its antecedent.
    void start(State& s, std::string_view antecedent) const {
        s = SigHasher();
        s.add(antecedent);
    }
    // Appends ":word" (on a local copy, which the compiler keeps in a register).
    void add(State& s, std::string_view word) const {
        SigHasher h = s;
        h.add_separator();
        h.add(word);
        s = h;
    }
    // Records count occurrences of the finished signature.
    void emit(const State& s, uint64_t count, uint64_t, uint32_t) const { counts.add(s.finish(), count); }
};

// Sink for SpotChains that keeps the signature texts with their first occurrence.
struct TextSink {
    using State = std::string;
    struct Entry {
        std::string text;
        uint64_t count;
        uint64_t origin;  // token index of the first antecedent that produced it
        uint32_t spec;
    };
    std::vector<Entry> entries;
    std::unordered_map<std::string, size_t> index;

    // Begins a signature with its antecedent.
    void start(State& s, std::string_view antecedent) const { s.assign(antecedent); }
    // Appends ":word".
    void add(State& s, std::string_view word) const {
        s.push_back(':');
        s.append(word);
    }
    // Records count occurrences of the finished signature text.
    void emit(const State& s, uint64_t count, uint64_t origin, uint32_t spec) {
        auto [it, added] = index.emplace(s, entries.size());
        if (added) {
            entries.push_back(Entry{s, count, origin, spec});
            return;
        }
        Entry& e = entries[it->second];
        e.count += count;
        if (std::tie(origin, spec) < std::tie(e.origin, e.spec)) {
            e.origin = origin;
            e.spec = spec;
        }
    }
};

// Refuses documents above the size limit.
void check_size(std::string_view doc) {
    if (doc.size() > kMaxDocumentBytes)
        throw Error(ErrorKind::ProgramLimit, "document too large for spot signature extraction",
                    "The document has " + std::to_string(doc.size()) + " bytes; the limit is " +
                        std::to_string(kMaxDocumentBytes) + ".");
}

}  // namespace

struct Extractor::Impl {
    std::vector<CompiledSpec> specs;  // grouped by antecedent
    std::vector<WordInfo> infos;      // per table word, then one for every other word
    WordTable table;

    // Validates config, merges duplicate specs, and builds the word table.
    static Impl* build(const ExtractConfig& config) {
        WordListBuilder list;
        for (const SpotSpec& s : config.specs) {
            check_spec_numbers(s.distance, s.chain);
            std::vector<CompiledSpec>& group = list.specs[list.at(single_word(s.antecedent, "antecedent"))];
            CompiledSpec c{uint32_t(s.distance), uint32_t(s.chain)};
            bool seen = std::any_of(group.begin(), group.end(), [&](const CompiledSpec& g) {
                return g.distance == c.distance && g.chain == c.chain;
            });
            if (!seen) group.push_back(c);
        }
        for (const std::string& w : config.stopwords) list.stop[list.at(single_word(w, "stopword"))] = true;
        std::vector<CompiledSpec> specs;
        std::vector<WordInfo> infos(list.words.size() + 1);  // the last one: any other word
        for (size_t i = 0; i < list.words.size(); ++i) {
            infos[i].stop = list.stop[i];
            infos[i].spec_begin = uint32_t(specs.size());
            specs.insert(specs.end(), list.specs[i].begin(), list.specs[i].end());
            infos[i].spec_end = uint32_t(specs.size());
        }
        return new Impl{std::move(specs), std::move(infos), WordTable(list.words)};
    }

    // Tokenizes doc and feeds every token, with its table entry, to the chain builder.
    template <class Sink>
    void run(std::string_view doc, Sink& sink, const PollFn& poll) const {
        check_size(doc);
        SpotChains<Sink> chains(specs, sink);
        const WordInfo* info = infos.data();
        const int32_t other = int32_t(infos.size() - 1);
        // The per-word callback is inlined into the tokenizer's loop.
        tokenize(
            doc,
            [&](std::string_view w) SPOTSIGS_LAMBDA_INLINE {
                int32_t k = table.find(w);
                chains.token(w, info[k < 0 ? other : k]);
            },
            poll);
        chains.finish();
    }
};

Extractor::Extractor(const ExtractConfig& config) : impl_(Impl::build(config)) {}

Extractor::~Extractor() {
    delete impl_;
}

Multiset Extractor::extract(std::string_view doc, const PollFn& poll) const {
    SignatureCounts counts;
    HashSink sink{counts};
    impl_->run(doc, sink, poll);
    return Multiset::from_pairs(counts.pairs());
}

std::vector<Term> Extractor::terms(std::string_view doc, const PollFn& poll) const {
    TextSink sink;
    impl_->run(doc, sink, poll);
    std::sort(sink.entries.begin(), sink.entries.end(),
              [](const auto& a, const auto& b) { return std::tie(a.origin, a.spec) < std::tie(b.origin, b.spec); });
    std::vector<Term> out;
    out.reserve(sink.entries.size());
    uint64_t total = 0;
    for (TextSink::Entry& e : sink.entries) {
        total += e.count;
        if (e.count > kMaxLength || total > kMaxLength)
            throw Error(ErrorKind::ProgramLimit, "spotsig length exceeds 2147483647");
        out.push_back(Term{std::move(e.text), uint32_t(e.count)});
    }
    return out;
}

}  // namespace spotsigs
