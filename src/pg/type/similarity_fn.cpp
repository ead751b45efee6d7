// Similarity functions and operators, the threshold GUC, and accessors of a spotsig.
#include "pg/pg.hpp"

extern "C" {
#include "access/detoast.h"
#include "funcapi.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"
}

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/common/threshold.hpp"
#include "core/signature/packed.hpp"
#include "pg/boundary.hpp"
#include "pg/citus/fold.hpp"
#include "pg/gucs.hpp"
#include "pg/type/auto_query.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace spotsigs::pg {

double similarity_threshold = 0.2;
bool similarity_threshold_auto = true;

namespace {

// The setting's text: a string setting, not a real one, because PostgreSQL checks a real
// setting's range (printing the value with %g: 1.0000000000000002 reads "1") and rejects NaN
// before any hook of ours runs, each with its own wording. As a string, every value reaches
// check_similarity_threshold, which applies the threshold rule and message of every other entry
// point and stores the shortest exact spelling of the value. The value 'auto' (any case, the
// default) is stored as "auto".
char* similarity_threshold_text = nullptr;

// Replaces *newval by text and hands tau to the assign hook in *extra, both allocated as the
// check hook must (compat.hpp); false with the out-of-memory error when either cannot be.
bool store_threshold(const char* text, double tau, char** newval, void** extra) {
    char* canonical = static_cast<char*>(SPOTSIGS_GUC_MALLOC(std::strlen(text) + 1));
    double* value = static_cast<double*>(SPOTSIGS_GUC_MALLOC(sizeof(double)));
    if (canonical == nullptr || value == nullptr) {
        if (canonical != nullptr) SPOTSIGS_GUC_FREE(canonical);
        if (value != nullptr) SPOTSIGS_GUC_FREE(value);
        GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
        GUC_check_errmsg("out of memory");
        return false;
    }
    std::strcpy(canonical, text);
    SPOTSIGS_GUC_FREE(*newval);
    *newval = canonical;
    *value = tau;
    *extra = value;
    return true;
}

// Reads the value as float8in does (the same values, the same two errors for a non-number and
// for an overflow), then applies the threshold rule (threshold.hpp's message, 22023). A valid
// value is rewritten to the shortest digits that read back as the same double, and handed to the
// assign hook in extra; both are allocated as PostgreSQL, which frees them, requires
// (compat.hpp). Sets no error through ereport: PostgreSQL also calls check hooks while reading the
// configuration file, where a hook must report failure by returning false.
bool check_similarity_threshold(char** newval, void** extra, GucSource) {
    const char* s = *newval;
    while (*s == ' ' || *s == '\t' || *s == '\n') ++s;
    if (pg_strncasecmp(s, "auto", 4) == 0) {
        const char* e = s + 4;
        while (*e == ' ' || *e == '\t' || *e == '\n') ++e;
        if (*e == '\0') {
            return store_threshold("auto", 0.0, newval, extra);  // 'auto': no threshold is 0
        }
    }
    char* end = nullptr;
    errno = 0;
    double tau = *s == '\0' ? 0.0 : std::strtod(s, &end);
    if (*s == '\0' || end == s) {
        GUC_check_errcode(ERRCODE_INVALID_TEXT_REPRESENTATION);
        GUC_check_errmsg("invalid input syntax for type double precision: \"%s\"", *newval);
        return false;
    }
    if (errno == ERANGE && (tau == 0.0 || std::isinf(tau))) {
        GUC_check_errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
        GUC_check_errmsg("\"%s\" is out of range for type double precision", *newval);
        return false;
    }
    while (*end == ' ' || *end == '\t' || *end == '\n') ++end;
    if (*end != '\0') {
        GUC_check_errcode(ERRCODE_INVALID_TEXT_REPRESENTATION);
        GUC_check_errmsg("invalid input syntax for type double precision: \"%s\"", *newval);
        return false;
    }
    if (!valid_threshold(tau)) {
        char msg[kThresholdMessageSize];
        threshold_message(tau, msg, sizeof msg);
        GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
        GUC_check_errmsg("%s", msg);
        return false;
    }
    char text[40];
    auto r = std::to_chars(text, text + sizeof text - 1, tau);
    *r.ptr = '\0';
    return store_threshold(text, tau, newval, extra);
}

// 'auto' (extra 0) sets the plain threshold to 0.2, the default before 'auto': every path that
// reads similarity_threshold answers as it did, except a bare % rewritten by the planner.
void assign_similarity_threshold(const char*, void* extra) {
    const double tau = *static_cast<double*>(extra);
    similarity_threshold_auto = tau == 0.0;
    similarity_threshold = similarity_threshold_auto ? kAutoPlainThreshold : tau;
    citus_fold_setting_changed();  // plans that carry the previous value as a constant
}

}  // namespace

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
    DefineCustomStringVariable(
        "spotsigs.similarity_threshold", "Threshold of the spotsig % operator (multiset Jaccard similarity).",
        "A value in (0, 1]: pairs with similarity(a, b) >= it satisfy a % b. auto: a % b on a column with stored "
        "statistics (spotsigs_analyze) compares the content at 0.4, otherwise the similarity at 0.2.",
        &similarity_threshold_text, "auto", PGC_USERSET, 0, check_similarity_threshold, assign_similarity_threshold,
        nullptr);
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

// length(s): the sum of frequencies, |d| in the paper. Read from the header alone: a compressed
// or out-of-line value is not detoasted whole for it (a distributed join's length split computes
// it for every row it exports, beside the value itself), and the header is checked against the
// value's full size as view_of checks it.
SPOTSIGS_FUNCTION(spotsig_length) {
    Datum d = PG_GETARG_DATUM(0);
    struct varlena* raw = reinterpret_cast<struct varlena*>(DatumGetPointer(d));
    const size_t len = toast_raw_datum_size(d) - VARHDRSZ;
    const bool whole = !VARATT_IS_EXTERNAL(raw) && !VARATT_IS_COMPRESSED(raw);
    struct varlena* head = whole ? raw : PG_DETOAST_DATUM_SLICE(d, 0, kPackedHeaderSize);
    const size_t have = VARSIZE_ANY_EXHDR(head);
    PackedHeader h;
    pg_entry([&] {
        // A header cut short by the slice is a value shorter than its header: unpack_header says so.
        h = unpack_header(reinterpret_cast<const unsigned char*>(VARDATA_ANY(head)),
                          have < kPackedHeaderSize ? have : len);
        return Datum(0);
    });
    PG_RETURN_INT32(int32(h.length));
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
