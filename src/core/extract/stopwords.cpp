// The built-in word lists: the default antecedents and the default stopwords.
#include <string>
#include <vector>

#include "core/extract/extract.hpp"

namespace spotsigs {

// Articles and the flexions of be, can, will, have, do (the paper's best antecedent set).
const std::vector<std::string>& default_antecedents() {
    static const std::vector<std::string> words = {"a",    "an",    "the",  // articles
                                                   "is",   "are",   "was",   "were",
                                                   "be",   "been",  "being", "am",      // be
                                                   "can",  "could", "will",  "would",   // can, will
                                                   "have", "has",   "had",   "having",  // have
                                                   "do",   "does",  "did",   "doing"};  // do
    return words;
}

// PostgreSQL's english.stop (127 words, in the file's order), the same list that
// to_tsvector('english', ...) drops.
const std::vector<std::string>& default_stopwords() {
    static const std::vector<std::string> words = {
        "i",       "me",         "my",       "myself",     "we",    "our",    "ours",    "ourselves", "you",
        "your",    "yours",      "yourself", "yourselves", "he",    "him",    "his",     "himself",   "she",
        "her",     "hers",       "herself",  "it",         "its",   "itself", "they",    "them",      "their",
        "theirs",  "themselves", "what",     "which",      "who",   "whom",   "this",    "that",      "these",
        "those",   "am",         "is",       "are",        "was",   "were",   "be",      "been",      "being",
        "have",    "has",        "had",      "having",     "do",    "does",   "did",     "doing",     "a",
        "an",      "the",        "and",      "but",        "if",    "or",     "because", "as",        "until",
        "while",   "of",         "at",       "by",         "for",   "with",   "about",   "against",   "between",
        "into",    "through",    "during",   "before",     "after", "above",  "below",   "to",        "from",
        "up",      "down",       "in",       "out",        "on",    "off",    "over",    "under",     "again",
        "further", "then",       "once",     "here",       "there", "when",   "where",   "why",       "how",
        "all",     "any",        "both",     "each",       "few",   "more",   "most",    "other",     "some",
        "such",    "no",         "nor",      "not",        "only",  "own",    "same",    "so",        "than",
        "too",     "very",       "s",        "t",          "can",   "will",   "just",    "don",       "should",
        "now"};
    return words;
}

}  // namespace spotsigs
