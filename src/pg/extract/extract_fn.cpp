// SQL entry points for extraction: spotsigs(), spotsigs_terms(), spotsig_from_terms().
#include "pg/pg.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/tuplestore.h"
}

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/extract/extract.hpp"
#include "core/signature/hash.hpp"
#include "core/signature/packed.hpp"
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/type/datum.hpp"

using namespace spotsigs;
using namespace spotsigs::pg;

namespace {

// The configuration arguments of one call, read before entering C++.
struct ConfigArgs {
    enum { Default, Uniform, Spec } kind = Default;
    TextArray antecedents;
    int distance = 0;
    int chain = 0;
    std::string_view spec;
    bool has_stopwords = false;
    TextArray stopwords;
};

// A compiled extractor cached in fn_extra, keyed by the configuration it was built from.
struct CachedExtractor {
    std::string key;
    std::unique_ptr<Extractor> extractor;
};

// Frees the cache when the function's memory context goes away.
void free_cache(void* arg) {
    delete static_cast<CachedExtractor*>(arg);
}

// A key that identifies a configuration (lengths make it unambiguous).
std::string config_key(const ConfigArgs& a) {
    std::string k = std::to_string(int(a.kind)) + "|" + std::to_string(a.distance) + "|" + std::to_string(a.chain) +
                    "|" + std::string(a.spec) + "|";
    auto add = [&k](const TextArray& t) {
        for (int i = 0; i < t.count; ++i)
            k += std::to_string(t.lengths[i]) + ":" + std::string(t.data[i], t.lengths[i]);
        k += "|";
    };
    add(a.antecedents);
    k += a.has_stopwords ? "S" : "D";
    add(a.stopwords);
    return k;
}

// Builds the core configuration from the call's arguments.
ExtractConfig build_config(const ConfigArgs& a) {
    std::vector<std::string> stop = a.has_stopwords ? to_strings(a.stopwords) : default_stopwords();
    switch (a.kind) {
        case ConfigArgs::Uniform:
            return ExtractConfig::uniform(to_strings(a.antecedents), a.distance, a.chain, std::move(stop));
        case ConfigArgs::Spec: return ExtractConfig::parse_specs(a.spec, std::move(stop));
        case ConfigArgs::Default: break;
    }
    return ExtractConfig::defaults();
}

// The extractor of the default configuration, shared by every call.
const Extractor& default_extractor() {
    static const Extractor shared(ExtractConfig::defaults());
    return shared;
}

// The last document the one-argument spotsigs() extracted, and its value (varlena bytes).
struct LastExtraction {
    bool valid = false;
    std::string doc;
    std::string value;
};
// Documents above this size are not remembered (the copy would cost more than it saves).
constexpr size_t kRememberAtMost = size_t(1) << 20;

// The extractor for this call: the shared default, or one cached per call site.
const Extractor& extractor_for(FunctionCallInfo fcinfo, const ConfigArgs& a) {
    if (a.kind == ConfigArgs::Default) return default_extractor();
    std::string key = config_key(a);
    auto* cache = static_cast<CachedExtractor*>(fcinfo->flinfo->fn_extra);
    if (cache != nullptr && cache->key == key) return *cache->extractor;
    auto fresh = std::make_unique<Extractor>(build_config(a));
    if (cache == nullptr) {
        cache = new CachedExtractor;
        MemoryContextCallback* cb = nullptr;
        try {
            pg_guard([&] {
                cb = static_cast<MemoryContextCallback*>(
                    MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(MemoryContextCallback)));
            });
        } catch (...) {
            delete cache;
            throw;
        }
        cb->func = free_cache;
        cb->arg = cache;
        MemoryContextRegisterResetCallback(fcinfo->flinfo->fn_mcxt, cb);
        fcinfo->flinfo->fn_extra = cache;
    }
    cache->key = std::move(key);
    cache->extractor = std::move(fresh);
    return *cache->extractor;
}

// Reads the optional configuration arguments that follow the document (argument 0).
ConfigArgs read_config(FunctionCallInfo fcinfo) {
    ConfigArgs a;
    int nargs = PG_NARGS();
    if (nargs == 1) return a;
    Oid second = get_fn_expr_argtype(fcinfo->flinfo, 1);
    int stop_arg;
    if (second == TEXTOID) {
        a.kind = ConfigArgs::Spec;
        if (PG_ARGISNULL(1))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("spot specification must not be NULL")));
        a.spec = text_view(PG_GETARG_DATUM(1));
        stop_arg = 2;
    } else {
        a.kind = ConfigArgs::Uniform;
        for (int i = 1; i <= 3; ++i)
            if (PG_ARGISNULL(i))
                ereport(ERROR,
                        (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", i == 1   ? "antecedents"
                                                                                                : i == 2 ? "distance"
                                                                                                         : "chain")));
        a.antecedents = read_text_array(PG_GETARG_DATUM(1), "antecedents");
        a.distance = PG_GETARG_INT32(2);
        a.chain = PG_GETARG_INT32(3);
        stop_arg = 4;
    }
    if (nargs > stop_arg && !PG_ARGISNULL(stop_arg)) {
        a.has_stopwords = true;
        a.stopwords = read_text_array(PG_GETARG_DATUM(stop_arg), "stopwords");
    }
    return a;
}

// Polls for query cancel during extraction of a large document.
const PollFn& interrupt_poll() {
    static const PollFn poll = [] { check_interrupts(); };
    return poll;
}

}  // namespace

// spotsigs(doc [, antecedents, distance, chain [, stopwords]] | [, spec [, stopwords]]).
// The document is argument 0 and never NULL here (the functions are STRICT in the document;
// the SQL declarations that allow NULL stopwords are not STRICT and check the rest above).
SPOTSIGS_FUNCTION(spotsigs_extract) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    std::string_view doc = text_view(PG_GETARG_DATUM(0));
    ConfigArgs args = read_config(fcinfo);
    return pg_entry([&] {
        if (args.kind != ConfigArgs::Default) {
            const Extractor& ex = extractor_for(fcinfo, args);
            Multiset m = ex.extract(doc, interrupt_poll());
            return make_spotsig(m.view());
        }
        // The one-argument form remembers its last document and result. A trigger on a table
        // with `sig spotsig GENERATED ALWAYS AS (spotsigs(body)) STORED` must compute the
        // signature itself (generated columns are computed after BEFORE triggers), and then
        // PostgreSQL computes it again from the same text: that second call is a comparison.
        static LastExtraction last;
        if (last.valid && last.doc.size() == doc.size() && std::memcmp(last.doc.data(), doc.data(), doc.size()) == 0) {
            Datum copy = 0;
            pg_guard([&] {
                void* p = palloc(last.value.size());
                std::memcpy(p, last.value.data(), last.value.size());
                copy = PointerGetDatum(p);
            });
            return copy;
        }
        Multiset m = default_extractor().extract(doc, interrupt_poll());
        Datum result = make_spotsig(m.view());
        last.valid = false;
        if (doc.size() <= kRememberAtMost) {
            const struct varlena* v = reinterpret_cast<const struct varlena*>(DatumGetPointer(result));
            last.value.assign(reinterpret_cast<const char*>(v), VARSIZE(v));
            last.doc.assign(doc);
            last.valid = true;
        }
        return result;
    });
}

// spotsigs_terms(doc, ...) RETURNS TABLE(signature text, freq int): readable signatures.
SPOTSIGS_FUNCTION(spotsigs_terms) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    std::string_view doc = text_view(PG_GETARG_DATUM(0));
    ConfigArgs args = read_config(fcinfo);
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    return pg_entry([&] {
        const Extractor& ex = extractor_for(fcinfo, args);
        std::vector<Term> terms = ex.terms(doc, interrupt_poll());
        for (const Term& t : terms) {
            pg_guard([&] {
                Datum values[2];
                bool nulls[2] = {false, false};
                values[0] = PointerGetDatum(cstring_to_text_with_len(t.text.data(), int(t.text.size())));
                values[1] = Int32GetDatum(int32(t.freq));
                tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
            });
        }
        return Datum(0);
    });
}

// spotsig_from_terms(signatures text[], freqs int[]): a value from explicit signature texts.
SPOTSIGS_FUNCTION(spotsig_from_terms) {
    TextArray sigs = read_text_array(PG_GETARG_DATUM(0), "signatures");
    ArrayType* farr = PG_GETARG_ARRAYTYPE_P(1);
    Datum* fvals;
    bool* fnulls;
    int nf;
    deconstruct_array(farr, INT4OID, 4, true, TYPALIGN_INT, &fvals, &fnulls, &nf);
    if (nf != sigs.count)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("signatures and freqs must have the same number of elements"),
                        errdetail("signatures has %d elements, freqs has %d.", sigs.count, nf)));
    for (int i = 0; i < nf; ++i) {
        if (fnulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("freqs must not contain NULL elements")));
        if (DatumGetInt32(fvals[i]) < 1)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("frequency must be at least 1"),
                            errdetail("freqs[%d] is %d.", i + 1, DatumGetInt32(fvals[i]))));
    }
    if (static_cast<uint32>(nf) > kMaxDistinct)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("too many signatures: %d (the limit is %u)", nf, kMaxDistinct)));
    return pg_entry([&] {
        std::vector<std::pair<uint64_t, uint64_t>> pairs;
        pairs.reserve(nf);
        for (int i = 0; i < nf; ++i)
            pairs.emplace_back(signature_hash(std::string_view(sigs.data[i], sigs.lengths[i])),
                               uint64_t(DatumGetInt32(fvals[i])));
        Multiset m = Multiset::from_pairs(std::move(pairs));
        return make_spotsig(m.view());
    });
}
