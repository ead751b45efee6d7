// Sorting a segment's postings and document records in memory, in the order the index writes
// them: postings by (hash ascending, partition ascending, length descending, id ascending), and
// documents by (length descending, id ascending).
//
// The index merges its pending list into a segment whenever the list passes its limit, in the
// middle of a COPY; PostgreSQL's general tuplesort spent most of that merge forming, copying and
// comparing one tuple per posting. A flat array of these records sorts the same keys in a
// fraction of the time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spotsigs {

// One posting of a segment being written.
struct PostingRecord {
    uint64_t hash;
    uint64_t id;
    uint32_t part;
    uint32_t length;
    uint32_t freq;
};

// One document record of a segment being written.
struct DocRecord {
    uint64_t id;
    uint32_t length;
    uint32_t distinct;
};

// The order within every list of the index (a posting list, the document list): descending
// length, then ascending id. True when (length_a, id_a) comes before (length_b, id_b).
inline bool list_order_before(uint32_t length_a, uint64_t id_a, uint32_t length_b, uint64_t id_b) noexcept {
    return length_a != length_b ? length_a > length_b : id_a < id_b;
}

// True when a comes before b in a segment (ids are unique within a list, so the order is total).
inline bool posting_record_before(const PostingRecord& a, const PostingRecord& b) noexcept {
    if (a.hash != b.hash) return a.hash < b.hash;
    if (a.part != b.part) return a.part < b.part;
    return list_order_before(a.length, a.id, b.length, b.id);
}

// True when a comes before b in a segment's document list.
inline bool doc_record_before(const DocRecord& a, const DocRecord& b) noexcept {
    return list_order_before(a.length, a.id, b.length, b.id);
}

// Sorts in place (never throws, allocates nothing).
void sort_posting_records(PostingRecord* r, size_t n) noexcept;
void sort_doc_records(DocRecord* r, size_t n) noexcept;

}  // namespace spotsigs
