// Similarity functions and operators, the threshold GUC, and accessors of a spotsig.
#include "pg.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"
}

#include "boundary.hpp"
#include "datum.hpp"
#include "gucs.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace spotsigs::pg {

double similarity_threshold = 0.2;

// Rejects thresholds of 0: every pair, even of empty values, would be "similar".
static bool check_threshold(double* newval, void**, GucSource) {
    if (*newval <= 0.0) {
        GUC_check_errdetail("The threshold must be greater than 0 and at most 1.");
        return false;
    }
    return true;
}

void register_similarity_gucs() {
    DefineCustomRealVariable("spotsigs.similarity_threshold",
                             "Threshold of the spotsig % operator (multiset Jaccard similarity).",
                             "Pairs with similarity(a, b) >= this value satisfy a % b. Must be in (0, 1].",
                             &similarity_threshold, 0.2, 0.0, 1.0, PGC_USERSET, 0, check_threshold,
                             nullptr, nullptr);
    MarkGUCPrefixReserved("spotsigs");
}

}  // namespace spotsigs::pg

namespace {

// Computes fn over two spotsig arguments.
template <class Fn>
double binary_measure(FunctionCallInfo fcinfo, Fn fn) {
    struct varlena* a = fetch_spotsig(PG_GETARG_DATUM(0));
    struct varlena* b = fetch_spotsig(PG_GETARG_DATUM(1));
    double r = 0;
    pg_entry([&] {
        r = fn(view_of(a), view_of(b));
        return Datum(0);
    });
    return r;
}

// Multiset Jaccard of two views.
double multiset_jaccard(const MultisetView& a, const MultisetView& b) {
    return similarity(a, b);
}

}  // namespace

// similarity(a, b): multiset Jaccard (paper eq. 4); 0 when either is empty.
SPOTSIGS_FUNCTION(spotsig_similarity) {
    PG_RETURN_FLOAT8(binary_measure(fcinfo, multiset_jaccard));
}

// set_similarity(a, b): Jaccard over the distinct signatures.
SPOTSIGS_FUNCTION(spotsig_set_similarity) {
    PG_RETURN_FLOAT8(binary_measure(fcinfo, set_similarity));
}

// a % b: similarity(a, b) >= spotsigs.similarity_threshold.
SPOTSIGS_FUNCTION(spotsig_similar) {
    PG_RETURN_BOOL(binary_measure(fcinfo, multiset_jaccard) >= similarity_threshold);
}

// a <-> b: 1 - similarity(a, b).
SPOTSIGS_FUNCTION(spotsig_distance) {
    PG_RETURN_FLOAT8(1.0 - binary_measure(fcinfo, multiset_jaccard));
}

// length(s): the sum of frequencies, |d| in the paper.
SPOTSIGS_FUNCTION(spotsig_length) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    MultisetView m;
    pg_entry([&] {
        m = view_of(v);
        return Datum(0);
    });
    PG_RETURN_INT32(int32(m.length));
}

// spotsig_distinct(s): the number of distinct signatures.
SPOTSIGS_FUNCTION(spotsig_distinct) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    MultisetView m;
    pg_entry([&] {
        m = view_of(v);
        return Datum(0);
    });
    PG_RETURN_INT32(int32(m.size));
}

// spotsig_hashes(s) RETURNS TABLE(hash bigint, freq int): the stored hashes, ascending unsigned.
SPOTSIGS_FUNCTION(spotsig_hashes) {
    struct varlena* v = fetch_spotsig(PG_GETARG_DATUM(0));
    MultisetView m;
    pg_entry([&] {
        m = view_of(v);
        return Datum(0);
    });
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (uint32_t i = 0; i < m.size; ++i) {
        Datum values[2] = {Int64GetDatum(int64(m.hashes[i])), Int32GetDatum(int32(m.freqs[i]))};
        bool nulls[2] = {false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return Datum(0);
}
