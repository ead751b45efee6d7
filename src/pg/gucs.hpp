// The extension's configuration parameters (GUCs); each feature registers its own.
#pragma once

namespace spotsigs::pg {

// spotsigs.similarity_threshold: the threshold of the % operator.
extern double similarity_threshold;

// Registers the similarity GUCs (called from _PG_init).
void register_similarity_gucs();

// Registers the join GUCs: spotsigs.max_threads, join_memory_limit, join_huge_pages, join_method.
void register_join_gucs();

}  // namespace spotsigs::pg
