// Similarity functions and operators, the threshold GUC, and accessors of a spotsig.
#include "pg/pg.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"
}

#include "core/common/threshold.hpp"
#include "pg/boundary.hpp"
#include "pg/gucs.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace spotsigs::pg {

double similarity_threshold = 0.2;

// Rejects thresholds of 0 (every pair, even of empty values, would be "similar"); the GUC's
// range already rejects values outside [0, 1].
static bool check_similarity_threshold(double* newval, void**, GucSource) {
    if (valid_threshold(*newval)) return true;
    char msg[kThresholdMessageSize];
    threshold_message(*newval, msg, sizeof msg);
    GUC_check_errdetail("The %s.", msg);
    return false;
}

void check_threshold_value(double tau) {
    if (valid_threshold(tau)) return;
    char msg[kThresholdMessageSize];
    threshold_message(tau, msg, sizeof msg);
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s", msg)));
}

double threshold_arg(FunctionCallInfo fcinfo, int argno) {
    if (PG_ARGISNULL(argno)) return similarity_threshold;
    double tau = PG_GETARG_FLOAT8(argno);
    check_threshold_value(tau);
    return tau;
}

void register_similarity_gucs() {
    DefineCustomRealVariable(
        "spotsigs.similarity_threshold", "Threshold of the spotsig % operator (multiset Jaccard similarity).",
        "Pairs with similarity(a, b) >= this value satisfy a % b. Must be in (0, 1].", &similarity_threshold, 0.2, 0.0,
        1.0, PGC_USERSET, 0, check_similarity_threshold, nullptr, nullptr);
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

// spotsigs_threshold(threshold) -> float8: the threshold a function given this argument uses
// (spotsigs.similarity_threshold when NULL), or ERROR 22023 when it is not in (0, 1]. For the
// extension's SQL functions, so that they check it with the same code and message as C ones.
SPOTSIGS_FUNCTION(spotsigs_threshold) {
    PG_RETURN_FLOAT8(threshold_arg(fcinfo, 0));
}
