# spotsigs: PGXS build of the extension, plus plain targets for the pure C++ core's tests.
#
#   make && make install     build and install the extension (needs pg_config on PATH)
#   make installcheck        pg_regress tests against a running server
#   make unit                GoogleTest unit tests of the core (no PostgreSQL needed)
#   make fuzz                libFuzzer targets of the core (clang)
#   make bench-core          Google Benchmark programs of the core
#   test/run-all             everything, on a fresh Debian 12 machine (see README)

EXTENSION = spotsigs
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" spotsigs.control)
MODULE_big = spotsigs

CORE_SRCS = $(sort $(wildcard src/core/*.cpp))
PG_SRCS = $(sort $(wildcard src/pg/*.cpp src/pg/*/*.cpp))
OBJS = $(CORE_SRCS:.cpp=.o) $(PG_SRCS:.cpp=.o)

# The install script is assembled from one file per feature, in name order.
SQL_PARTS = $(sort $(wildcard src/sql/*.sql))
DATA_built = $(EXTENSION)--$(EXTVERSION).sql

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --load-extension=$(EXTENSION)

PG_CPPFLAGS = -Isrc/core
# -MMD -MP: every object records the headers it includes (src/**/*.d), so a header change
# rebuilds every object that depends on it (a stale object would disagree on class layouts).
PG_CXXFLAGS = -std=c++17 -Wno-register -fno-omit-frame-pointer -pthread -MMD -MP
SHLIB_LINK = -lstdc++ -pthread
EXTRA_CLEAN = build $(OBJS:.o=.d)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)

# Debian's PostgreSQL is built with LLVM, so PGXS would also compile every .cpp to bitcode for
# JIT inlining, with clang and without PG_CXXFLAGS (it fails on C++17). JIT inlining of this C++
# code gains nothing, so the bitcode step is switched off.
override with_llvm = no

include $(PGXS)

-include $(OBJS:.o=.d)


$(DATA_built): $(SQL_PARTS) spotsigs.control
	cat $(SQL_PARTS) > $@

# ---- the pure C++ core, built without PostgreSQL ----
CORE_CXX ?= g++
CORE_FLAGS = -std=c++17 -O2 -g -Wall -Wextra -pthread -Isrc/core
BUILD = build

UNIT_SRCS = $(sort $(wildcard test/unit/*.cpp))
$(BUILD)/unit_tests: $(CORE_SRCS) $(UNIT_SRCS) $(wildcard src/core/*.hpp test/unit/*.hpp)
	@mkdir -p $(BUILD)
	$(CORE_CXX) $(CORE_FLAGS) -Itest/unit -o $@ $(CORE_SRCS) $(UNIT_SRCS) -lgtest -lgtest_main -pthread

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests

FUZZ_SRCS = $(sort $(wildcard test/fuzz/*.cpp))
FUZZ_BINS = $(patsubst test/fuzz/%.cpp,$(BUILD)/fuzz_%,$(FUZZ_SRCS))
$(BUILD)/fuzz_%: test/fuzz/%.cpp $(CORE_SRCS) $(wildcard src/core/*.hpp)
	@mkdir -p $(BUILD)
	clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -Isrc/core -o $@ $< $(CORE_SRCS)

fuzz: $(FUZZ_BINS)

BENCH_SRCS = $(sort $(wildcard test/bench/core_*.cpp))
BENCH_BINS = $(patsubst test/bench/%.cpp,$(BUILD)/%,$(BENCH_SRCS))
$(BUILD)/core_%: test/bench/core_%.cpp $(CORE_SRCS) $(wildcard src/core/*.hpp)
	@mkdir -p $(BUILD)
	$(CORE_CXX) -std=c++17 -O3 -march=x86-64-v2 -DNDEBUG -g -pthread -Isrc/core -o $@ $< $(CORE_SRCS) -lbenchmark -pthread

bench-core: $(BENCH_BINS)

.PHONY: unit fuzz bench-core
