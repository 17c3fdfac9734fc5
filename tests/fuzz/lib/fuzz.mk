# Fuzzing libdlcache's parsers with budgets (tests/fuzz/lib). Included by
# the top-level Makefile.
#
#   make fuzz-lib FUZZ_SECONDS=N   every harness N s (default 60), keeping
#                                  the inputs that found new coverage in
#                                  FUZZ_LIB_CORPUS (default
#                                  $(BUILD)/fuzzlib/corpus/NAME, kept
#                                  between runs); findings in
#                                  $(BUILD)/fuzzlib/artifacts
#   make fuzz-lib-check            the same, bounded for make check
#                                  (FUZZ_LIB_CHECK_SECONDS=15 each, from
#                                  the seeds alone); one line per harness:
#                                  "ok fuzz-lib:NAME (...)", "FAIL ..." or
#                                  "skip ..."; "# fuzz-lib: ..." lines with
#                                  the coverage before and after; the
#                                  harnesses run one per CPU at a time
#                                  (FUZZ_LIB_JOBS)
#   make fuzz-lib-build            the harnesses and their seeds only
#
# One harness per parser (fuzz_NAME.c): pack, index, jpeg (plain and
# crop-first decode), jpeg_exact (the exact transform), jpeg_rst
# (restart-indexed JPEGs, MCU-exact decode), image (PNG, WebP, BMP,
# PPM/PGM/PBM and TIFF, decoded whole), stage (the staging
# directory's start-up scan). Each input runs under a time and a memory
# budget (FUZZ_LIB_TIMEOUT s, FUZZ_LIB_RSS_MB MiB of RSS, no single
# allocation over FUZZ_LIB_MALLOC_MB MiB); going over is a finding, as a
# crash is. The engine is libFuzzer (clang -fsanitize=fuzzer,address,
# undefined) where clang links it, else driver.c, a small coverage-guided
# mutator built with gcc (FUZZ_LIB_ENGINE=driver forces it). The library
# is compiled into $(BUILD)/fuzzlib/ENGINE/ of its own. Seeds are made
# there too, at build time (seedgen.c, seeds.sh), from the project's
# generators; tests/fuzz/lib/seeds/ holds only a few hand-written bytes.

.PHONY: fuzz-lib fuzz-lib-check fuzz-lib-build fuzz-lib-build-libfuzzer \
	fuzz-lib-build-driver

FUZZ_LIB_NAMES := pack index jpeg jpeg_exact jpeg_rst image stage
FUZZ_LIB_DIR := $(BUILD)/fuzzlib
FUZZ_LIB_CLANG ?= clang
FUZZ_LIB_CHECK_SECONDS ?= 15
FUZZ_LIB_TIMEOUT ?= 10
FUZZ_LIB_RSS_MB ?= 1024
FUZZ_LIB_MALLOC_MB ?= 1024
FUZZ_LIB_CORPUS ?= $(FUZZ_LIB_DIR)/corpus
# qemu.mk's FUZZ_SECONDS defaults to 300 for the kernel fuzzer; this one's
# default is 60, unless FUZZ_SECONDS is given.
FUZZ_LIB_SECONDS = $(if $(filter command line environment,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),60)
# Evaluated only by the recipes that use it (it compiles a test program).
FUZZ_LIB_ENGINE ?= $(shell tests/fuzz/lib/engine.sh $(FUZZ_LIB_CLANG))

FUZZ_LIB_SAN := -O1 -g -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_LIB_INC := $(CPPFLAGS_ALL) -Itests/fuzz/lib -Itests/unit/helpers
FUZZ_LIB_HDRS := $(wildcard libdlcache/*/*.h uapi/*.h \
	tests/fuzz/lib/*.h tests/unit/helpers/*.h)
FUZZ_LIB_EXTRA := tests/unit/helpers/testutil.c

# fuzz_lib_engine,ENGINE,CC,CFLAGS,LINKFLAGS,ENGINE_OBJS
define fuzz_lib_engine
$(1)_FUZZ_DIR := $(FUZZ_LIB_DIR)/$(1)
$(1)_FUZZ_LIB_OBJS := $$(LIB_SRCS:%.c=$(FUZZ_LIB_DIR)/$(1)/%.o)
$(1)_FUZZ_BINS := $$(FUZZ_LIB_NAMES:%=$(FUZZ_LIB_DIR)/$(1)/fuzz_%)

$(FUZZ_LIB_DIR)/$(1)/%.o: %.c $$(FUZZ_LIB_HDRS)
	@mkdir -p $$(@D)
	$(2) $$(FUZZ_LIB_INC) $(FUZZ_LIB_SAN) $(3) $$(WARNINGS) -MMD -c $$< -o $$@

$(FUZZ_LIB_DIR)/$(1)/fuzz_%: $(FUZZ_LIB_DIR)/$(1)/tests/fuzz/lib/fuzz_%.o $$($(1)_FUZZ_LIB_OBJS) $(5)
	$(2) $(FUZZ_LIB_SAN) $(4) -o $$@ $$^ $$(LIBS)

$(FUZZ_LIB_DIR)/$(1)/seedgen: $(FUZZ_LIB_DIR)/$(1)/tests/fuzz/lib/seedgen.o \
		$(FUZZ_LIB_DIR)/$(1)/tests/unit/helpers/testutil.o $$($(1)_FUZZ_LIB_OBJS)
	$(2) $(FUZZ_LIB_SAN) -o $$@ $$^ $$(LIBS)

$(FUZZ_LIB_DIR)/$(1)/seeds: $(FUZZ_LIB_DIR)/$(1)/seedgen tests/fuzz/lib/seeds.sh \
		$$(shell find tests/fuzz/lib/seeds -type f)
	ASAN_OPTIONS=detect_leaks=0 tests/fuzz/lib/seeds.sh $$< $$@

fuzz-lib-build-$(1): $$($(1)_FUZZ_BINS) $(FUZZ_LIB_DIR)/$(1)/seeds
endef

$(eval $(call fuzz_lib_engine,libfuzzer,$(FUZZ_LIB_CLANG),-fsanitize=fuzzer-no-link,-fsanitize=fuzzer,))
$(eval $(call fuzz_lib_engine,driver,$(CC),-fsanitize-coverage=trace-pc,,$(FUZZ_LIB_DIR)/driver/driver.o))

# The driver itself is not instrumented: it keeps the coverage map.
$(FUZZ_LIB_DIR)/driver/driver.o: tests/fuzz/lib/driver.c
	@mkdir -p $(@D)
	$(CC) $(FUZZ_LIB_SAN) $(WARNINGS) -c $< -o $@

fuzz-lib-build:
	@$(MAKE) --no-print-directory fuzz-lib-build-$(FUZZ_LIB_ENGINE)

# fuzz_lib_run,SECONDS,MODE: build (a failed build is one skip or FAIL
# line per harness, in run.sh), then run every harness.
define fuzz_lib_run
engine=$(FUZZ_LIB_ENGINE); \
$(MAKE) --no-print-directory -j2 fuzz-lib-build-$$engine > $(FUZZ_LIB_DIR)/build.log 2>&1 || \
	{ tail -n 20 $(FUZZ_LIB_DIR)/build.log; }; \
FUZZ_LIB_TIMEOUT=$(FUZZ_LIB_TIMEOUT) FUZZ_LIB_RSS_MB=$(FUZZ_LIB_RSS_MB) \
FUZZ_LIB_MALLOC_MB=$(FUZZ_LIB_MALLOC_MB) \
	tests/fuzz/lib/run.sh $$engine $(FUZZ_LIB_DIR) $(1) $(2) $(3) $(FUZZ_LIB_NAMES)
endef

fuzz-lib:
	@mkdir -p $(FUZZ_LIB_DIR)
	@$(call fuzz_lib_run,$(FUZZ_LIB_SECONDS),keep,$(FUZZ_LIB_CORPUS))

fuzz-lib-check:
	@mkdir -p $(FUZZ_LIB_DIR)
	@$(call fuzz_lib_run,$(FUZZ_LIB_CHECK_SECONDS),fresh,$(FUZZ_LIB_DIR)/check-corpus)

-include $(shell find $(FUZZ_LIB_DIR) -name '*.d' -type f 2>/dev/null)
