// The join's configuration parameters: spotsigs.max_threads, spotsigs.join_memory_limit,
// spotsigs.join_huge_pages, spotsigs.join_method, spotsigs.citus_split (registered by
// register_join_gucs(), declared in gucs.hpp).
#pragma once

#include <cstddef>
#include <string>

#include "core/join/join.hpp"

namespace spotsigs::pg {

// spotsigs.max_threads: the most matcher threads one join may use.
extern int join_max_threads;
// spotsigs.join_memory_limit in kB: the budget of copied documents plus matcher structures.
extern int join_memory_limit_kb;
// spotsigs.join_huge_pages: whether a join's large blocks may come from the reserved huge pages.
extern bool join_huge_pages;
// spotsigs.join_method: the method used when the call passes none (a JoinMethod value).
extern int join_method_guc;
// spotsigs.citus_split (superuser, for tests and benchmarks): 0 auto, 1 pairs, 2 length; read in
// SQL by the distributed self-join (src/sql/70_citus.sql).
extern int citus_split_guc;

// The memory limit in bytes.
size_t join_memory_limit_bytes();

// The limit as text for messages, e.g. "4GB" or "512MB".
std::string join_memory_limit_text();

// Parses 'partitioned', 'nopart', 'noprune' or 'bruteforce'; false for anything else.
bool parse_join_method(const char* text, JoinMethod* out);

}  // namespace spotsigs::pg
