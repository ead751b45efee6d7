// Extraction throughput of the pure core on the text corpus, as plain text and wrapped in HTML.
//
//   make bench-core && build/core_extract [max_docs] [rounds]
//
// Reads docs.tsv.gz (COPY text format: id, source, title, body) through zcat; the path is
// $SPOTSIGS_TEXTCORPUS or ../shared/data/textcorpus/docs.tsv.gz as seen from the repository.
// Prints MB/s of Extractor::extract with the default configuration, by CPU time of this thread
// (what one core achieves) and by wall-clock time, best of `rounds` passes.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "core/extract/extract.hpp"

using namespace spotsigs;

namespace {

// One corpus row.
struct Doc {
    std::string title;
    std::string body;
};

// Undoes COPY text escapes (\\ \t \n \r \b \f \v, octal \ooo, hex \xhh); \N becomes empty.
std::string unescape_copy(const std::string& s) {
    if (s == "\\N") return {};
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out.push_back(s[i]);
            continue;
        }
        char c = s[++i];
        switch (c) {
            case 't': out.push_back('\t'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'v': out.push_back('\v'); break;
            case 'x': {
                int v = 0, k = 0;
                for (; k < 2 && i + 1 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])); ++k) {
                    char h = s[++i];
                    v = v * 16 + (h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                }
                out.push_back(k ? char(v) : 'x');
                break;
            }
            default:
                if (c >= '0' && c <= '7') {
                    int v = c - '0';
                    for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
                        v = v * 8 + (s[++i] - '0');
                    out.push_back(char(v));
                } else {
                    out.push_back(c);  // "\\" and any other escaped character stand for themselves
                }
        }
    }
    return out;
}

// Splits a line on tabs.
std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t t; (t = line.find('\t', start)) != std::string::npos; start = t + 1)
        f.push_back(line.substr(start, t - start));
    f.push_back(line.substr(start));
    return f;
}

// Reads up to max_docs rows of the corpus through zcat.
std::vector<Doc> read_corpus(const std::string& path, size_t max_docs) {
    std::string cmd = "zcat '" + path + "'";
    FILE* f = popen(cmd.c_str(), "r");
    if (f == nullptr) {
        std::perror("popen");
        std::exit(1);
    }
    std::vector<Doc> docs;
    std::string line;
    char buf[1 << 16];
    auto take = [&] {
        std::vector<std::string> fields = split_tabs(line);
        if (fields.size() == 4) docs.push_back(Doc{unescape_copy(fields[2]), unescape_copy(fields[3])});
        line.clear();
    };
    while (docs.size() < max_docs && std::fgets(buf, sizeof buf, f) != nullptr) {
        line += buf;
        if (!line.empty() && line.back() == '\n') {
            line.pop_back();
            take();
        }
    }
    if (!line.empty() && docs.size() < max_docs) take();
    pclose(f);
    return docs;
}

// Escapes text for HTML and turns blank-line-separated paragraphs into <p> elements; every
// other apostrophe becomes &rsquo; so that references are exercised too.
std::string html_paragraphs(const std::string& text) {
    std::string out = "<p>";
    bool odd = false;
    for (size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '&') {
            out += "&amp;";
        } else if (c == '<') {
            out += "&lt;";
        } else if (c == '>') {
            out += "&gt;";
        } else if (c == '\'') {
            out += (odd = !odd) ? "&rsquo;" : "'";
        } else if (c == '\n' && i + 1 < text.size() && text[i + 1] == '\n') {
            out += "</p>\n<p>";
            while (i + 1 < text.size() && text[i + 1] == '\n') ++i;
        } else {
            out.push_back(c);
        }
    }
    return out + "</p>";
}

// The document wrapped in a news-site page: head with style and script, navigation, footer.
std::string html_page(const Doc& d) {
    std::string title = html_paragraphs(d.title);
    title = title.substr(3, title.size() - 7);  // without the <p> wrapper
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + title +
           " &mdash; The Daily Example</title>\n"
           "<style>\nbody { font-family: Georgia, serif; margin: 0 auto; max-width: 48em; }\n"
           "nav a { color: #036; text-decoration: none; } .ad > p { display: none; }\n</style>\n"
           "<script type=\"text/javascript\">\nvar pageInfo = { section: \"news\", id: 42 };\n"
           "if (window.innerWidth < 600 && pageInfo.id > 0) { document.body.className = 'narrow'; }\n"
           "</script>\n</head>\n<body>\n<!-- header navigation -->\n<nav class=\"top\"><ul>"
           "<li><a href=\"/\">Home</a></li><li><a href=\"/world\">World</a></li>"
           "<li><a href=\"/business\">Business</a></li><li><a href=\"/sport\">Sport</a></li>"
           "<li><a href=\"/culture?lang=en&amp;page=1\">Culture &amp; Arts</a></li></ul></nav>\n"
           "<article>\n<h1>" +
           title + "</h1>\n" + html_paragraphs(d.body) +
           "\n</article>\n<aside class=\"ad\"><p>Subscribe now &ndash; only &euro;1 a week!</p></aside>\n"
           "<footer>&copy; 2024 The Daily Example &middot; <a href=\"/privacy\">Privacy</a></footer>\n"
           "<noscript><img src=\"/pixel.gif\" alt=\"\"></noscript>\n</body></html>\n";
}

// Seconds of CPU time used by this thread.
double cpu_seconds() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Seconds of wall-clock time.
double wall_seconds() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Result of timing one variant.
struct Figures {
    double bytes = 0;
    double cpu = 1e300;
    double wall = 1e300;
    double signatures = 0;
};

// Extracts every document `rounds` times and keeps the best times.
Figures measure(const Extractor& ex, const std::vector<std::string>& docs, int rounds) {
    Figures f;
    for (const std::string& d : docs) f.bytes += double(d.size());
    for (int r = 0; r < rounds; ++r) {
        double c0 = cpu_seconds(), w0 = wall_seconds();
        double sigs = 0;
        for (const std::string& d : docs) sigs += double(ex.extract(d).length);
        f.cpu = std::min(f.cpu, cpu_seconds() - c0);
        f.wall = std::min(f.wall, wall_seconds() - w0);
        f.signatures = sigs;
    }
    return f;
}

}  // namespace

// Reads the corpus, builds both variants, and prints their throughput side by side.
int main(int argc, char** argv) {
    size_t max_docs = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : size_t(-1);
    int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
    const char* env = std::getenv("SPOTSIGS_TEXTCORPUS");
    std::string path = env ? env : "../shared/data/textcorpus/docs.tsv.gz";

    std::vector<Doc> docs = read_corpus(path, max_docs);
    if (docs.empty()) {
        std::fprintf(stderr, "no documents read from %s (set SPOTSIGS_TEXTCORPUS)\n", path.c_str());
        return 1;
    }
    std::vector<std::string> plain, html;
    for (const Doc& d : docs) {
        plain.push_back(d.body);
        html.push_back(html_page(d));
    }
    Extractor ex(ExtractConfig::defaults());
    Figures p = measure(ex, plain, rounds);
    Figures h = measure(ex, html, rounds);

    std::printf("corpus: %s, %zu documents, default config (distance %d, chain %d), best of %d\n", path.c_str(),
                docs.size(), kDefaultDistance, kDefaultChain, rounds);
    std::printf("%-8s %12s %14s %14s %14s\n", "variant", "MB", "MB/s (cpu)", "MB/s (wall)", "signatures");
    for (auto [name, f] : {std::make_pair("plain", p), std::make_pair("html", h)})
        std::printf("%-8s %12.1f %14.1f %14.1f %14.0f\n", name, f.bytes / 1e6, f.bytes / 1e6 / f.cpu,
                    f.bytes / 1e6 / f.wall, f.signatures);
    return 0;
}
