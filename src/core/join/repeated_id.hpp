// Finding a repeated row id in the ids a join read (a join's ids must be unique).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/join/join.hpp"

namespace spotsigs {

// The smallest id that occurs more than once among the collection's ids, or none. Ids in
// ascending order take one pass; ids that span a range of at most 64 per row (serial ids, in
// whatever order the heap holds them: COPY places rows that do not fit the current page on a new
// one and later rows in the gaps, so a table loaded in id order is not read back in id order) are
// checked against a bitmap of that range; anything else is sorted first.
std::optional<int64_t> repeated_id(const Collection& docs);

// The same among a list of ids (every row a join read, kept or not).
std::optional<int64_t> repeated_id(const std::vector<int64_t>& ids);

}  // namespace spotsigs
