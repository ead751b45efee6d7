// Registration and helpers of the join GUCs.
#include "pg/pg.hpp"

extern "C" {
#include "utils/guc.h"
}

#include <climits>
#include <cstring>

#include "pg/gucs.hpp"
#include "pg/join/join_gucs.hpp"

namespace spotsigs::pg {

int join_max_threads = 2;
int join_memory_limit_kb = 4 * 1024 * 1024;  // 4GB
int join_method_guc = static_cast<int>(JoinMethod::Partitioned);
bool join_huge_pages = false;
int citus_split_guc = 0;

namespace {

// The accepted method names, in JoinMethod order.
const struct config_enum_entry method_options[] = {{"partitioned", static_cast<int>(JoinMethod::Partitioned), false},
                                                   {"nopart", static_cast<int>(JoinMethod::NoPart), false},
                                                   {"noprune", static_cast<int>(JoinMethod::NoPrune), false},
                                                   {"bruteforce", static_cast<int>(JoinMethod::BruteForce), false},
                                                   {nullptr, 0, false}};

// spotsigs.citus_split: read by spotsigs_citus_join_tasks and spotsigs_citus_ranges (src/sql/70_citus.sql)
// through current_setting; the C side only registers it.
const struct config_enum_entry citus_split_options[] = {
    {"auto", 0, false}, {"pairs", 1, false}, {"length", 2, false}, {nullptr, 0, false}};

}  // namespace

size_t join_memory_limit_bytes() {
    return static_cast<size_t>(join_memory_limit_kb) * 1024;
}

std::string join_memory_limit_text() {
    long kb = join_memory_limit_kb;
    if (kb % (1024 * 1024) == 0) return std::to_string(kb / (1024 * 1024)) + "GB";
    if (kb % 1024 == 0) return std::to_string(kb / 1024) + "MB";
    return std::to_string(kb) + "kB";
}

bool parse_join_method(const char* text, JoinMethod* out) {
    for (const config_enum_entry* e = method_options; e->name != nullptr; ++e) {
        if (pg_strcasecmp(text, e->name) == 0) {
            *out = static_cast<JoinMethod>(e->val);
            return true;
        }
    }
    return false;
}

void register_join_gucs() {
    DefineCustomIntVariable("spotsigs.max_threads", "Most threads one spotsigs join may use for matching.",
                            "A join's threads argument is capped at this value; NULL means this value.",
                            &join_max_threads, 2, 1, 256, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "spotsigs.join_memory_limit", "Memory budget of one spotsigs join: copied signatures plus matcher structures.",
        "A join that would need more fails with SQLSTATE 53200 naming this limit.", &join_memory_limit_kb,
        4 * 1024 * 1024, 1024, INT_MAX, PGC_USERSET, GUC_UNIT_KB, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("spotsigs.join_huge_pages",
                             "Lets spotsigs joins take their large blocks from the reserved huge pages.",
                             "Blocks of 2 MB and more come from the pool of vm.nr_hugepages while it has "
                             "room, and from ordinary memory after. Off by default.",
                             &join_huge_pages, false, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable("spotsigs.join_method", "Matching method of spotsigs joins when the call names none.",
                             "partitioned (default), nopart, noprune or bruteforce: the paper's Table 2 variants.",
                             &join_method_guc, static_cast<int>(JoinMethod::Partitioned), method_options, PGC_USERSET,
                             0, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable(
        "spotsigs.citus_split", "For tests and benchmarks: the split of a distributed self-join by the plain measure.",
        "auto (the default) splits by signature length when that moves fewer rows, else by pairs of nodes; "
        "pairs always takes the pair split; length takes the length split whenever it can cut two ranges. "
        "The pairs are the same whichever split runs.",
        &citus_split_guc, 0, citus_split_options, PGC_SUSET, GUC_NOT_IN_SAMPLE, nullptr, nullptr, nullptr);
}

}  // namespace spotsigs::pg
