// In-memory sorts of a segment's postings and documents (posting_sort.hpp).
#include "core/index/posting_sort.hpp"

#include <algorithm>

namespace spotsigs {

void sort_posting_records(PostingRecord* r, size_t n) noexcept {
    std::sort(r, r + n, posting_record_before);
}

void sort_doc_records(DocRecord* r, size_t n) noexcept {
    std::sort(r, r + n, doc_record_before);
}

}  // namespace spotsigs
