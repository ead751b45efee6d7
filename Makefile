# spotsigs: PGXS build of the extension, plus plain targets for the pure C++ core's tests.
#
#   make && make install     build and install the extension (needs pg_config on PATH)
#   make installcheck        pg_regress tests against a running server
#   make prove_installcheck  TAP tests (test/t/*.pl, or PROVE_TESTS=...), as a user other than root
#   make unit                GoogleTest unit tests of the core (no PostgreSQL needed)
#   make fuzz                libFuzzer targets of the core (clang)
#   make bench-core          Google Benchmark programs of the core
#   make format              clang-format the C++ sources in place (format-check: only report)
#   test/run-all             everything, on a fresh Debian 12 machine (see README)

EXTENSION = spotsigs
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" spotsigs.control)
MODULE_big = spotsigs

# Sources live in one folder per part (src/core/<part>/, src/pg/ and src/pg/<part>/); every
# include names its path from src/ ("core/join/join.hpp", "pg/boundary.hpp"). The extension's
# objects are built out of the source tree, under build/ext/ (rule below).
BUILD = build
CORE_SRCS = $(sort $(wildcard src/core/*/*.cpp))
PG_SRCS = $(sort $(wildcard src/pg/*.cpp src/pg/*/*.cpp))
OBJS = $(patsubst src/%.cpp,$(BUILD)/ext/%.o,$(CORE_SRCS) $(PG_SRCS))

# The install script is assembled from one file per feature, in name order. The full scripts of
# earlier releases and the upgrade scripts between releases are kept as they are in sql-versions/.
SQL_PARTS = $(sort $(wildcard src/sql/*.sql))
# The step from the last release to this version is assembled too, from its hand-written changes
# and the files that this version adds whole (sql-versions/README.md).
UPGRADE_0_3_0_NEW = src/sql/35_template.sql src/sql/45_content_query.sql
DATA_built = $(EXTENSION)--$(EXTVERSION).sql $(EXTENSION)--0.2.0--0.3.0.sql
DATA = $(sort $(wildcard sql-versions/$(EXTENSION)--*.sql))

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --load-extension=$(EXTENSION)

PG_CPPFLAGS = -Isrc
# -MMD -MP: every object records the headers it includes (build/**/*.d, read at the end), so a
# header change rebuilds every object that depends on it (a stale object would disagree on class
# layouts).
PG_CXXFLAGS = -std=c++17 -Wno-register -fno-omit-frame-pointer -pthread -MMD -MP
SHLIB_LINK = -lstdc++ -pthread
EXTRA_CLEAN = $(BUILD)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)

# Debian's PostgreSQL is built with LLVM, so PGXS would also compile every .cpp to bitcode for
# JIT inlining, with clang and without PG_CXXFLAGS (it fails on C++17). JIT inlining of this C++
# code gains nothing, so the bitcode step is switched off.
override with_llvm = no

include $(PGXS)

# PGXS compiles OBJS by make's built-in rule, which wants each object beside its source; this
# rule is that one with the object under build/ext/ instead (same compiler and flags).
$(BUILD)/ext/%.o: src/%.cpp
	@mkdir -p $(@D)
	$(COMPILE.cc) $(OUTPUT_OPTION) $<


$(EXTENSION)--$(EXTVERSION).sql: $(SQL_PARTS) spotsigs.control
	cat $(SQL_PARTS) > $@

$(EXTENSION)--0.2.0--0.3.0.sql: sql-versions/$(EXTENSION)--0.2.0--0.3.0.sql.in $(UPGRADE_0_3_0_NEW)
	cat $^ > $@

# ---- TAP tests through PGXS ----
# PGXS's prove_installcheck runs prove with PostgreSQL::Test::Cluster from the installation that
# pg_config names; each test starts its own clusters. `make installcheck TAP_TESTS=1` runs them
# after pg_regress. PostgreSQL refuses to run as root: test/run-tap runs them as postgres.
PROVE_TESTS ?= test/t/*.pl
PROVE_FLAGS ?=

prove_installcheck:
	$(prove_installcheck)

# ---- the pure C++ core, built without PostgreSQL ----
# The core is compiled once per flavour into a static library that every test, fuzzer and
# benchmark program of that flavour links: build/libspotsigs_core.a (unit tests), and
# build/fuzz/ and build/bench/ for the libFuzzer and Google Benchmark programs, whose code needs
# other compiler flags (coverage and sanitizers; full optimisation without assertions).
CORE_CXX ?= g++
CORE_FLAGS = -std=c++17 -O2 -g -Wall -Wextra -pthread -Isrc
FUZZ_CXX = clang++
FUZZ_FLAGS = -std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -Isrc
BENCH_FLAGS = -std=c++17 -O3 -march=x86-64-v2 -DNDEBUG -g -pthread -Isrc

core_objs = $(patsubst src/core/%.cpp,$(1)/core/%.o,$(CORE_SRCS))
CORE_LIB = $(BUILD)/libspotsigs_core.a
FUZZ_CORE_LIB = $(BUILD)/fuzz/libspotsigs_core.a
BENCH_CORE_LIB = $(BUILD)/bench/libspotsigs_core.a

$(BUILD)/core/%.o: src/core/%.cpp
	@mkdir -p $(@D)
	$(CORE_CXX) $(CORE_FLAGS) -MMD -MP -c -o $@ $<
$(BUILD)/fuzz/core/%.o: src/core/%.cpp
	@mkdir -p $(@D)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -MMD -MP -c -o $@ $<
$(BUILD)/bench/core/%.o: src/core/%.cpp
	@mkdir -p $(@D)
	$(CORE_CXX) $(BENCH_FLAGS) -MMD -MP -c -o $@ $<

$(CORE_LIB): $(call core_objs,$(BUILD))
$(FUZZ_CORE_LIB): $(call core_objs,$(BUILD)/fuzz)
$(BENCH_CORE_LIB): $(call core_objs,$(BUILD)/bench)
$(CORE_LIB) $(FUZZ_CORE_LIB) $(BENCH_CORE_LIB):
	@rm -f $@
	ar rcs $@ $^

UNIT_SRCS = $(sort $(wildcard test/unit/*.cpp))
UNIT_OBJS = $(patsubst test/unit/%.cpp,$(BUILD)/unit/%.o,$(UNIT_SRCS))
$(BUILD)/unit/%.o: test/unit/%.cpp
	@mkdir -p $(@D)
	$(CORE_CXX) $(CORE_FLAGS) -Itest/unit -MMD -MP -c -o $@ $<
$(BUILD)/unit_tests: $(UNIT_OBJS) $(CORE_LIB)
	$(CORE_CXX) $(CORE_FLAGS) -o $@ $(UNIT_OBJS) $(CORE_LIB) -lgtest -lgtest_main -pthread

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests

FUZZ_SRCS = $(sort $(wildcard test/fuzz/*.cpp))
FUZZ_BINS = $(patsubst test/fuzz/%.cpp,$(BUILD)/fuzz_%,$(FUZZ_SRCS))
$(BUILD)/fuzz_%: test/fuzz/%.cpp $(FUZZ_CORE_LIB)
	$(FUZZ_CXX) $(subst fuzzer-no-link,fuzzer,$(FUZZ_FLAGS)) -MMD -MP -o $@ $< $(FUZZ_CORE_LIB)

fuzz: $(FUZZ_BINS)

BENCH_SRCS = $(sort $(wildcard test/bench/core_*.cpp))
BENCH_BINS = $(patsubst test/bench/%.cpp,$(BUILD)/%,$(BENCH_SRCS))
$(BUILD)/core_%: test/bench/core_%.cpp $(BENCH_CORE_LIB)
	$(CORE_CXX) $(BENCH_FLAGS) -MMD -MP -o $@ $< $(BENCH_CORE_LIB) -lbenchmark -pthread

bench-core: $(BENCH_BINS)

-include $(wildcard $(BUILD)/*.d $(BUILD)/*/*.d $(BUILD)/*/*/*.d $(BUILD)/*/*/*/*.d)

# ---- formatting (.clang-format) ----
FORMAT_SRCS = $(filter-out src/core/text/unicode_tables.hpp,$(sort $(wildcard src/*/*.[ch]pp src/*/*/*.[ch]pp \
	test/unit/*.[ch]pp test/fuzz/*.cpp test/bench/*.cpp)))

format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	clang-format --dry-run --Werror $(FORMAT_SRCS)

.PHONY: unit fuzz bench-core prove_installcheck format format-check

# ---- releases: the Debian package and the PGXN archive ----
#   make deb     postgresql-NN-spotsigs_VERSION-1_ARCH.deb in the top directory, built by
#                dpkg-buildpackage with pg_buildext (debian/) from a copy of this tree in build/deb,
#                one package per version that debian/pgversions lists and this Debian release
#                supports (its debian/control regenerated from debian/control.in)
#   make dist    spotsigs-VERSION.zip: git archive of HEAD, the archive PGXN takes
# deb checks that debian/changelog, dist that META.json, names spotsigs.control's version.
DEB_DIR = $(BUILD)/deb
DEB_VERSION = $(shell dpkg-parsechangelog -l debian/changelog -S Version)

deb:
	@test "$(firstword $(subst -, ,$(DEB_VERSION)))" = "$(EXTVERSION)" || \
	  { echo "debian/changelog is at $(DEB_VERSION), spotsigs.control at $(EXTVERSION)"; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	tar -c --exclude=./.git --exclude=./$(BUILD) --exclude='./*.deb' --exclude='./*.zip' . | tar -x -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && pg_buildext updatecontrol && MAKEFLAGS= dpkg-buildpackage -b -us -uc -j2
	rm -f postgresql-*-spotsigs_*.deb
	cp $(DEB_DIR)/postgresql-*-spotsigs_$(DEB_VERSION)_*.deb .
	@ls -l postgresql-*-spotsigs_$(DEB_VERSION)_*.deb

dist:
	@tools/check-meta META.json
	git archive --format=zip --prefix=$(EXTENSION)-$(EXTVERSION)/ -o $(EXTENSION)-$(EXTVERSION).zip HEAD
	@ls -l $(EXTENSION)-$(EXTVERSION).zip

.PHONY: deb dist
