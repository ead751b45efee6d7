// spotsig_auto_query: the right operand a bare `x % y` is rewritten to under
// spotsigs.similarity_threshold = 'auto' (auto_query.cpp).
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "nodes/primnodes.h"
}

namespace spotsigs::pg {

// The thresholds of 'auto': the content measure's where the column has stored statistics, and the
// plain measure's default of 0.2.0 elsewhere.
constexpr double kAutoContentThreshold = 0.4;
constexpr double kAutoPlainThreshold = 0.2;

// Whether the call q (spotsig_auto_query(y, rel, column), rel and column constants) has no stored
// statistics behind it, read in the store whoever the user is: its value is then the plain query
// at spotsigs.similarity_threshold (0.2 under 'auto') whatever the setting. spotsigs_analyze
// invalidates the plans that name the table, so a plan relying on this is made again once
// statistics appear. Raises PostgreSQL errors.
bool auto_query_never_content(FuncExpr* q);

}  // namespace spotsigs::pg
