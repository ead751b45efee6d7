// The extension's configuration parameters (GUCs); each feature registers its own.
#pragma once

#include "pg/pg.hpp"

namespace spotsigs::pg {

// spotsigs.similarity_threshold: the threshold of the % operator, and of every threshold argument
// given as NULL; 0.2 under 'auto' (similarity_threshold_auto), where a bare % on a table column
// also follows the column's stored statistics (type/auto_query.cpp).
extern double similarity_threshold;
extern bool similarity_threshold_auto;

// The threshold argument argno of a call: spotsigs.similarity_threshold when it is NULL, else
// the value, or ERROR 22023 (threshold.hpp's message) when it is not in (0, 1].
double threshold_arg(FunctionCallInfo fcinfo, int argno);

// ERROR 22023 with threshold.hpp's message unless tau is in (0, 1]: the check every SQL entry
// point that takes a threshold value makes (the trigger adds its own context, the GUC its hook).
void check_threshold_value(double tau);

// Registers the similarity GUCs (called from _PG_init).
void register_similarity_gucs();

// Registers the join GUCs: spotsigs.max_threads, join_memory_limit, join_huge_pages, join_method,
// citus_split.
void register_join_gucs();

namespace index {
// Registers the index GUCs: spotsigs.content_count_step (index/scan.cpp).
void register_index_gucs();
}  // namespace index

}  // namespace spotsigs::pg
