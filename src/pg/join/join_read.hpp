// Resolving a (relation, id column, signature column) argument triple and reading its rows into
// a core Collection, for spotsigs_join(), spotsigs_join_rs() and spotsigs_clusters().
#pragma once

#include "pg/pg.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/join/join.hpp"
#include "core/join/join_passes.hpp"
#include "core/join/read_pipeline.hpp"
#include "core/template/content.hpp"
#include "core/template/content_passes.hpp"

namespace spotsigs::pg {

class Progress;
class DeferredToast;

// A checked join input: everything needed to read it, in palloc'd / plain storage only.
struct JoinSource {
    Oid relid = InvalidOid;
    const char* relname = nullptr;  // qualified and quoted, for messages and the query
    const char* query = nullptr;    // SELECT id::bigint, sig FROM rel WHERE both are NOT NULL
    double est_rows = 0;            // planner statistics, 0 when unknown: used to presize
    double est_entries = 0;         // estimated distinct signatures over all rows
};

// Looks up and checks the relation and its two columns (existence, types, SELECT privilege);
// raises PostgreSQL errors directly, so call it outside pg_entry. spotsig_type is the type OID;
// fn, the SQL function reading it, is named in the privilege error.
JoinSource resolve_source(Oid relid, const char* id_column, const char* sig_column, Oid spotsig_type, const char* fn);

// A pipeline for reading src (presized from its statistics when they fit memory_limit), listing
// prefixes for list_tau (0: none), with a filing thread when background is true (else the
// backend's thread files as it reads). Inside pg_entry.
std::unique_ptr<ReadPipeline> open_pipeline(const JoinSource& src, double list_tau, size_t memory_limit,
                                            bool background);
// Sets out, a read's pipeline, and deferred, the notes of its out-of-line values, to hold within
// memory_limit. A first read, which may not fit, gives a budget: both charge what they allocate
// to it first (ReadPipeline::charge_to, DeferredToast::charge_to), the batch buffers take at most
// an eighth of what it has left, and the caller charges what it keeps beside them to it too. A
// pass, planned to fit, gives none: out keeps within memory_limit (ReadPipeline::limit_growth),
// listing prefixes while it is within it unless defer_listing is false. False when the budget has
// no room even for the pipeline's buffers (the read overflows before its first row). Call before
// the first row.
bool limit_read(ReadPipeline& out, DeferredToast& deferred, size_t memory_limit, ReadBudget* budget,
                bool defer_listing);
// After close(), waits (serving interrupts) until a first read's pipeline has filed everything;
// false when its budget refused a document on the way (the read overflowed): a first read is known
// to fit, or not, before anything is matched. Backend's thread, inside pg_entry.
bool filed_within_budget(ReadPipeline& out);

// Reads every row with a non-NULL id and signature into out and closes it (inside pg_entry;
// PostgreSQL is reached through pg_guard). Throws Error(OutOfMemory) once out exceeds
// memory_limit bytes, and the filing thread's errors.
void read_source(const JoinSource& src, ReadPipeline& out, size_t memory_limit, Progress& progress);

// The length of a row whose value is stored out of line (or of any row, for a read that removes
// a template): length as the read keeps it, stored as the relation holds it (for RowsDigest).
struct ExternalLength {
    int64_t id;
    uint32_t length;
    uint32_t stored;
};
// What read_source_filtered keeps of the rows: those with lengths in [lo, hi] outside
// [gap_lo, gap_hi) (a pass's, JoinPass::reads); past the memory limit it stops keeping rows and
// sets overflowed instead of raising an error; every row read (whatever its length, and after an
// overflow too) is counted in tally when it is given.
// An order-free digest of the (id, length) rows one read saw, kept or not. Passes rely on every
// read of a relation giving the rows the first read tallied (same snapshot); a relation whose
// reads differ (a view over nextval() or another volatile function, a volatile row security
// policy) gives a read whose digest differs from the first one's, but for a chance of 2^-64 per
// read, and that read is refused before any of its rows is matched (join passes, clusters).
struct RowsDigest {
    uint64_t rows = 0;
    uint64_t sum = 0;
    void add(int64_t id, uint64_t length) noexcept;
    bool operator==(const RowsDigest& o) const noexcept { return rows == o.rows && sum == o.sum; }
};

struct RowFilter {
    uint64_t lo = 1;
    uint64_t hi = UINT64_MAX;
    uint64_t gap_lo = 0;
    uint64_t gap_hi = 0;
    // Whether rows of length len are kept (before any overflow).
    bool holds(uint64_t len) const noexcept { return len >= lo && len <= hi && (len < gap_lo || len >= gap_hi); }
    // Whether the filter leaves rows out by their length.
    bool restricts() const noexcept { return lo > 1 || hi != UINT64_MAX || gap_lo < gap_hi; }
    bool overflowed = false;
    LengthTally* tally = nullptr;
    std::vector<int64_t>* ids = nullptr;  // when given, every row's id (with the tally)
    // When given (with the tally), every row with an out-of-line value, and its length (with
    // remove: every row, and its length without the template): a later read (the same snapshot)
    // given them sorted by id in `external` finds the lengths there instead of fetching each such
    // value's first chunk from the toast relation, or reading the whole row and removing the
    // template from it, to skip it.
    std::vector<ExternalLength>* note_external = nullptr;
    // With remove, rows whose values are stored inline are noted only while there are fewer
    // notes than this (the limit's share for them); a pass reads the others whole, as it must
    // read any row it finds no note for.
    size_t note_inline_max = SIZE_MAX;
    const std::vector<ExternalLength>* external = nullptr;
    // Every row read, kept or not; when expected is given, a read that ends with another digest
    // raises the error of a relation whose rows changed between reads (SQLSTATE 55000).
    RowsDigest seen;
    const RowsDigest* expected = nullptr;
    // A first read's budget (with a tally): what the read keeps is charged to it before it is
    // allocated (the pipeline's documents, prefix entries and batches, the ids and notes above,
    // the values read after the rows), and at the first row it refuses the read overflows (the
    // rows kept are discarded, the tally goes on). Without one, the read overflows once its
    // pipeline and notes hold more than the memory limit (a pass, planned to fit).
    ReadBudget* budget = nullptr;
    // An R-S join's other side, discarded too when this read overflows under the budget.
    ReadPipeline* discard_too = nullptr;
    // When given, every row is read without these signatures (the content measure's template):
    // lengths, tally and what is kept are the rows' without them; seen keeps the stored rows'.
    const SignatureSet* remove = nullptr;
};
// read_source with a RowFilter (join passes, join_passes.hpp).
void read_source_filtered(const JoinSource& src, ReadPipeline& out, size_t memory_limit, Progress& progress,
                          RowFilter& filter);
// Reads every row of src with a non-NULL id and signature, calling visit(id, row) on the
// backend's thread for each (inside pg_entry; every value detoasted in turn and freed after
// visit), and adds every row to seen (the content statistics' passes). Reports progress.
void visit_source(const JoinSource& src, Progress& progress, const RowVisit& visit, RowsDigest& seen);
// Waits (on a thread that may not touch PostgreSQL) until out has filed everything; false when
// cancel was set first. Rethrows the filing thread's errors.
bool wait_filed(ReadPipeline& pipe, const CancelToken* cancel);

// Raises the error of a relation whose rows differ from one read to the next (55000).
[[noreturn]] void throw_rows_changed(const char* relname);

// Throws Error(InvalidParameter) naming the relation and the id that two rows share.
[[noreturn]] void throw_repeated_id(const char* relname, int64_t id);

// Throws Error(InvalidParameter) naming the relation if two documents share an id.
void check_unique_ids(const Collection& docs, const char* relname);

// The same for every row a read saw: with a filter that collects ids, among those (every row,
// those it did not keep too: an empty signature's id counts as much as any, so that a repeated
// id is an error whatever the rows' signatures, the limit or the entry point), else among docs.
// Plain C++: callable on a matcher thread.
void check_read_ids(const Collection& docs, const RowFilter* filter, const char* relname);

}  // namespace spotsigs::pg
