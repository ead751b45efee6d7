// PostgreSQL's C headers, included with C linkage for the C++ layer; include this first.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
}

#include "pg/compat.hpp"

// Declares an fmgr-callable SQL function with C linkage.
#define SPOTSIGS_FUNCTION(name) \
    extern "C" {                \
    PG_FUNCTION_INFO_V1(name);  \
    }                           \
    extern "C" Datum name(PG_FUNCTION_ARGS)
