# dlcache top-level Makefile.
#
#   make            library (static + shared + pkg-config), dlcachectl, and
#                   dlcache.ko when kernel headers are found (KDIR=...)
#   make demo       generate a data set once, bench 3 epochs (in-process cache)
#   make check      every test; ends with "N passed, N failed, N skipped"
#   make deps       install missing Debian packages (root, idempotent)
#   make deb        the Debian packages, in $(BUILD)/deb/
#   make MPI=1 BUILD=build/mpi   the same with cluster mode (Open MPI)
#   make python     the Python package (dlcache.torch) staged in $(BUILD)/python

SHELL := /bin/bash
# The first rule below comes from the flavour macro; plain `make` means all.
.DEFAULT_GOAL := all
CC ?= cc
BUILD ?= build
OPT ?= -O2
CFLAGS ?= $(OPT) -g
WARNINGS := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla
# The library's folders, one per layer, bottom up (Documentation/design.md,
# "Layers and folders"); a file names another's header by its bare name.
LIB_DIRS := base cache decode data io tier pipeline
CPPFLAGS_ALL := -D_GNU_SOURCE -Ilibdlcache/include $(LIB_DIRS:%=-Ilibdlcache/%) -Iuapi
# libpng, libwebp and libtiff decode what ImageFolder reads besides JPEG
# (libdlcache/decode/image.h).
LIBS := -luring -lnvme -ljpeg -lpng -lwebp -ltiff -lpthread -lm
TOOL_LIBS := -lblkid

VERSION := 0.1.0
SOVERSION := 0
# dlcachectl --version; debian/changelog and dkms.conf must say the same (tests/deb).
CPPFLAGS_ALL += -DDLCACHE_VERSION='"$(VERSION)"'

LIB_SRCS := $(sort $(wildcard $(LIB_DIRS:%=libdlcache/%/*.c)))
# MPI=1: cluster mode (libdlcache/tier/peer.c and the peer_*.c it is split
# into: PEER_SRCS) over Debian's Open MPI; else its stand-in (peer_none.c)
# refuses it. Build it into its own BUILD.
PEER_SRCS := $(filter-out libdlcache/tier/peer_none.c,$(wildcard libdlcache/tier/peer*.c))
MPI ?= 0
ifeq ($(MPI),1)
LIB_SRCS := $(filter-out libdlcache/tier/peer_none.c,$(LIB_SRCS))
CPPFLAGS_ALL += -DDLC_HAVE_MPI $(patsubst -I%,-isystem %,$(shell pkg-config --cflags ompi-c))
LIBS += $(shell pkg-config --libs ompi-c)
else
LIB_SRCS := $(filter-out $(PEER_SRCS),$(LIB_SRCS))
endif
TOOL_SRCS := $(sort $(wildcard tools/dlcachectl/*.c))
TEST_SRCS := $(sort $(wildcard tests/unit/test_*.c))
ifneq ($(MPI),1)
# The peer tier's own: MPI=1 builds only, which tests/cli/test_cluster.sh runs.
TEST_SRCS := $(filter-out tests/unit/test_balance.c,$(TEST_SRCS))
endif
TEST_HELPER_SRCS := $(sort $(wildcard tests/unit/helpers/*.c))

# One tree of objects per flavour: normal and sanitized.
define flavour
$(1)_DIR := $(BUILD)/$(1)
$(1)_LIB_OBJS := $$(LIB_SRCS:%.c=$(BUILD)/$(1)/%.o)
$(1)_TOOL_OBJS := $$(TOOL_SRCS:%.c=$(BUILD)/$(1)/%.o)
$(1)_TEST_HELPER_OBJS := $$(TEST_HELPER_SRCS:%.c=$(BUILD)/$(1)/%.o)
$(1)_TESTS := $$(TEST_SRCS:tests/unit/%.c=$(BUILD)/$(1)/tests/%)

$(BUILD)/$(1)/%.o: %.c $$(wildcard libdlcache/*/*.h tools/dlcachectl/*.h tests/unit/helpers/*.h uapi/*.h)
	@mkdir -p $$(@D)
	$$(CC) $$(CPPFLAGS_ALL) $$(CPPFLAGS) $$(CFLAGS) $(2) $$(WARNINGS) -fPIC -MMD -c $$< -o $$@

$(BUILD)/$(1)/libdlcache.a: $$($(1)_LIB_OBJS)
	@rm -f $$@
	ar rcs $$@ $$^

$(BUILD)/$(1)/tests/%: $(BUILD)/$(1)/tests/unit/%.o $$($(1)_TEST_HELPER_OBJS) $(BUILD)/$(1)/libdlcache.a
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) -o $$@ $$^ $$(LIBS) $$(TOOL_LIBS)
endef

$(eval $(call flavour,release,))
$(eval $(call flavour,asan,-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined))

.PHONY: all lib tools tests demo compare check deps clean install python \
	install-lib install-tools install-python deb deb-test
.SECONDARY:

all: lib tools module

lib: $(BUILD)/release/libdlcache.a $(BUILD)/libdlcache.so.$(VERSION) $(BUILD)/dlcache.pc

$(BUILD)/libdlcache.so.$(VERSION): $(release_LIB_OBJS) libdlcache/libdlcache.map
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libdlcache.so.$(SOVERSION) \
		-Wl,--version-script=libdlcache/libdlcache.map \
		-o $@ $(release_LIB_OBJS) $(LIBS)
	ln -sf libdlcache.so.$(VERSION) $(BUILD)/libdlcache.so.$(SOVERSION)
	ln -sf libdlcache.so.$(SOVERSION) $(BUILD)/libdlcache.so

PREFIX ?= /usr/local
# Debian's packages set LIBDIR=/usr/lib/<multiarch> (debian/rules).
LIBDIR ?= $(PREFIX)/lib
# Debian's python3 searches $(PREFIX)/lib/python3.N/dist-packages.
PYTHON_SITE ?= $(PREFIX)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3)/dist-packages
$(BUILD)/dlcache.pc: libdlcache/dlcache.pc.in
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

tools: $(BUILD)/dlcachectl

# ---- the Python package: ctypes over libdlcache.so, nothing to compile ----
# Staged as $(BUILD)/python/dlcache with _libpath.py naming the library it
# was built with; PYTHONPATH=$(BUILD)/python imports it.
PYTHON ?= /usr/bin/python3
PY_SRCS := $(sort $(wildcard python/dlcache/*.py))
python: $(BUILD)/python/dlcache/_libpath.py

$(BUILD)/python/dlcache/_libpath.py: $(PY_SRCS) $(BUILD)/libdlcache.so.$(VERSION)
	@mkdir -p $(@D)
	cp $(PY_SRCS) $(@D)/
	printf 'LIBDLCACHE = %s\n' "'$(abspath $(BUILD))/libdlcache.so.$(SOVERSION)'" > $@

$(BUILD)/dlcachectl: $(release_TOOL_OBJS) $(BUILD)/release/libdlcache.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS) $(TOOL_LIBS)

$(BUILD)/asan/dlcachectl: $(asan_TOOL_OBJS) $(BUILD)/asan/libdlcache.a
	$(CC) $(CFLAGS) -fsanitize=address,undefined -o $@ $^ $(LIBS) $(TOOL_LIBS)

tests: $(release_TESTS) $(asan_TESTS) $(BUILD)/dlcachectl $(BUILD)/asan/dlcachectl

# make install: the library, dlcachectl and the Python package under PREFIX
# (/usr/local), the package told where the library is (_libpath.py). The
# parts alone (DESTDIR, PREFIX, LIBDIR, PYTHON_SITE as for install) are what
# debian/rules installs into its packages.
install: install-lib install-tools install-python
	printf 'LIBDLCACHE = %s\n' "'$(LIBDIR)/libdlcache.so.$(SOVERSION)'" \
		> $(DESTDIR)$(PYTHON_SITE)/dlcache/_libpath.py
	@if [ -z "$(DESTDIR)" ]; then ldconfig 2>/dev/null || true; fi

install-lib: lib
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 644 libdlcache/include/dlcache.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/release/libdlcache.a $(DESTDIR)$(LIBDIR)/
	install -m 644 $(BUILD)/libdlcache.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libdlcache.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libdlcache.so.$(SOVERSION)
	ln -sf libdlcache.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libdlcache.so
	install -m 644 $(BUILD)/dlcache.pc $(DESTDIR)$(LIBDIR)/pkgconfig/

install-tools: tools
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/dlcachectl $(DESTDIR)$(PREFIX)/bin/

# The Python package, where Debian's python3 looks ($(PYTHON_SITE)).
install-python:
	install -d $(DESTDIR)$(PYTHON_SITE)/dlcache
	install -m 644 $(PY_SRCS) $(DESTDIR)$(PYTHON_SITE)/dlcache/

deps:
	@tests/deps.sh

# The Debian packages (debian/): dlcache-dkms, libdlcache0, libdlcache-dev,
# dlcache-tools, python3-dlcache, in $(BUILD)/deb/ (Documentation/admin.md,
# "Debian packages").
deb:
	@tools/build/deb.sh $(abspath $(BUILD))/deb

# make deb's packages installed on a clean root (an overlay of /), the
# module DKMS built loaded in QEMU, purged (tests/deb/test_deb.sh; root).
deb-test:
	@BUILD=$(BUILD) tests/deb/test_deb.sh

# ---- the main job --------------------------------------------------------
DEMO_DIR ?= $(BUILD)/demo-data
DEMO_IMAGES ?= 1200
demo: deps lib tools
	@tests/demo.sh $(BUILD)/dlcachectl $(DEMO_DIR) $(DEMO_IMAGES)

# Side by side with PyTorch and the decode limits, with ratios.
compare: deps lib tools
	@tests/perf/compare.sh $(BUILD)/dlcachectl $(DEMO_DIR) $(DEMO_IMAGES)

# ---- make bench: everything side by side, minutes; not part of check -----
# BENCH_SIZE: data set size (1G default, 200M for a quick run); BENCH_REPEATS:
# runs per system, interleaved (the median counts). See tests/perf/bench.sh.
BENCH_SIZE ?= 1G
BENCH_REPEATS ?= 3
BENCH_PROGS := $(BUILD)/bench/plain_loader $(BUILD)/bench/hitsim

$(BUILD)/bench/plain_loader: tests/perf/plain_loader.c $(BUILD)/release/libdlcache.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS) $(WARNINGS) -o $@ $^ -lturbojpeg $(LIBS)

$(BUILD)/bench/hitsim: tests/perf/hitsim.c tests/perf/hitsim_core.c tests/perf/hitsim_jobs.c tests/perf/optref.c \
		tools/dlcachectl/hitsim.c tools/dlcachectl/hitsim.h libdlcache/base/internal.h \
		libdlcache/cache/cache.h libdlcache/cache/policy.h $(BUILD)/release/libdlcache.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS) $(WARNINGS) -o $@ $< $(BUILD)/release/libdlcache.a $(LIBS)

# A decoded form of a sample: its bytes, its cost to make and use, and
# whether its samples are the exact path's (formbench.c; issue 32).
$(BUILD)/bench/formbench: tests/perf/formbench.c $(TEST_HELPER_SRCS) tests/unit/helpers/testutil.h \
		$(BUILD)/release/libdlcache.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) -Itests/unit $(CFLAGS) $(WARNINGS) -o $@ $< $(TEST_HELPER_SRCS) \
		$(BUILD)/release/libdlcache.a -lturbojpeg $(LIBS)

# Restart-indexed JPEGs: transcode size and MCU-exact decode rate (rstbench.c).
$(BUILD)/bench/rstbench: tests/perf/rstbench.c libdlcache/base/internal.h libdlcache/decode/decode.h \
		libdlcache/decode/jpegrst.h $(BUILD)/release/libdlcache.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS) $(WARNINGS) -o $@ $< $(BUILD)/release/libdlcache.a $(LIBS)

.PHONY: bench bench-storage bench-cluster bench-skew bench-forms
bench: deps lib tools $(BENCH_PROGS)
	@$(MAKE) --no-print-directory MPI=1 BUILD=$(BUILD)/mpi lib tools
	@tests/perf/bench.sh $(BUILD) $(BENCH_SIZE) $(BENCH_REPEATS)

# The storage-bound section alone: a throttled loop device (storage.sh).
BENCH_STORAGE_IMAGES ?= 4000
bench-storage: deps lib tools
	@tests/perf/storage.sh $(BUILD) $(BENCH_STORAGE_IMAGES) $(BENCH_REPEATS)

# The decoded-forms section alone, on make bench's generated set (forms.sh).
BENCH_FORMS_IMAGES ?= $(shell echo $$(( $$(numfmt --from=iec $(BENCH_SIZE)) / 71000 )))
bench-forms: deps lib tools
	@d=$(BUILD)/bench-data-$(BENCH_FORMS_IMAGES); \
	[ -f $$d.idx ] || { $(BUILD)/dlcachectl gen $$d --images $(BENCH_FORMS_IMAGES) --classes 100 >&2 && \
		$(BUILD)/dlcachectl index $$d -o $$d.idx >/dev/null; } && \
	tests/perf/forms.sh $(BUILD) $$d $(BENCH_REPEATS)

# The cluster section alone: 4 nodes in network namespaces (cluster.sh).
BENCH_CLUSTER_IMAGES ?= 800
bench-cluster: deps lib tools
	@$(MAKE) --no-print-directory MPI=1 BUILD=$(BUILD)/mpi lib tools
	@tests/perf/cluster.sh $(BUILD) $(BENCH_CLUSTER_IMAGES)

# The skewed-node section alone: two ranks of one job in step (skew.py).
BENCH_SKEW_IMAGES ?= 1200
bench-skew: deps lib tools
	@/usr/bin/python3 tests/perf/skew.py $(BUILD) $(BENCH_SKEW_IMAGES) $(BENCH_REPEATS)

# ---- tests ----------------------------------------------------------------
# The packages and the build are timed too: run-checks.sh's "times:" line
# starts with them (DLC_CHECK_T0).
check:
	@t0=$$(date +%s); \
	$(MAKE) --no-print-directory deps && \
	$(MAKE) --no-print-directory lib tools tests python module && \
	$(MAKE) --no-print-directory MPI=1 BUILD=$(BUILD)/mpi lib tools \
		$(BUILD)/mpi/release/tests/test_cluster $(BUILD)/mpi/asan/tests/test_cluster \
		$(BUILD)/mpi/release/tests/test_balance $(BUILD)/mpi/asan/tests/test_balance && \
	DLC_CHECK_T0=$$t0 tests/run-checks.sh $(BUILD)

-include kmod/kmod.mk
-include tests/qemu/qemu.mk
-include tests/fuzz/lib/fuzz.mk

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/release $(BUILD)/asan -name '*.d' -type f 2>/dev/null)
