# SPDX-License-Identifier: GPL-2.0
#
# Kernel module targets, included by the top-level Makefile.
#
#   make module              build/kmod-<release>/dlcache.ko for the running
#                            kernel when its headers are installed, else the
#                            newest kernel with headers; build/kmod links to
#                            that directory. Without any headers, says so on
#                            one line and succeeds.
#   make module KVER=6.12    for another kernel: a full release
#                            (6.12.95+deb12-amd64) or a series (6.1, 6.12 =
#                            the newest installed of that series), against
#                            /lib/modules/<release>/build. Missing headers
#                            are one line naming the package, and an error.
#   make module KDIR=dir     against any kernel build tree (overrides KVER)
#   make kunit               the KUnit suites as a module on the debug
#                            kernel (PROVE_LOCKING, KASAN, UBSAN,
#                            DEBUG_LIST, kmemleak) in QEMU: tests/kunit/run.sh
#   make style               checkpatch --strict once, sparse (make C=2) per
#                            kernel of KERNELS that has headers, and the
#                            tree's shape (tests/structure.py)
#   make dkms-install        copy the module's sources to /usr/src/dlcache-<v>/
#                            and dkms add/build/install them for every
#                            installed kernel with headers (root; idempotent)
#   make dkms-src DESTDIR=d  only the copy, into d/usr/src/dlcache-<v>/ (the
#                            dlcache-dkms package's debian/rules)
#   make dkms-remove         dkms remove --all, and the /usr/src copy
#   make dkms-test           dkms add/build/install/remove for each kernel of
#                            KERNELS in a private DKMS tree under build/dkms
#                            (the system's DKMS tree and /lib/modules stay
#                            as they are); prints "ok dkms:<kernel>"
#
# KERNELS (default "6.1 6.12") is the list of kernels that qemu-test, style
# and dkms-test go through. qemu-test is defined by tests/qemu/qemu.mk.

KERNELS ?= 6.1 6.12
# checkpatch.pl and its data files: linux-source-6.1's scripts/ alone.
KSCRIPTS ?= $(BUILD)/kernel-scripts

# The kernel release to build for (DLC_KVER) and its build tree (KDIR).
DLC_KDIR_GIVEN := $(filter-out undefined,$(origin KDIR))
ifneq ($(DLC_KDIR_GIVEN),)
DLC_KVER := $(shell tools/build/kver.sh --kdir "$(KDIR)")
else
DLC_KVER := $(shell tools/build/kver.sh $(KVER))
KDIR := $(if $(DLC_KVER),/lib/modules/$(DLC_KVER)/build)
endif
KMOD_DIR := $(BUILD)/kmod-$(DLC_KVER)
# Asked for by name: missing headers are an error, not a quiet skip.
DLC_ASKED := $(if $(KVER)$(DLC_KDIR_GIVEN),1)

DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="*\([^"]*\)"*$$/\1/p' dkms.conf 2>/dev/null)
DKMS_SRC := /usr/src/dlcache-$(DKMS_VERSION)
# The files of a module source tree: Kbuild builds them as they lie.
DKMS_FILES = Kbuild dkms.conf $(wildcard kmod/*.c kmod/*.h) uapi/dlcache.h \
	libdlcache/cache/policy.c libdlcache/cache/policy.h

.PHONY: module kunit style dkms-install dkms-src dkms-remove dkms-test

# One line, not a wall of compiler errors, when the headers are missing.
DLC_NO_HEADERS = $(strip \
	$(if $(DLC_KVER),$(if $(wildcard $(KDIR)/Makefile),,$(if \
		$(DLC_KDIR_GIVEN),no kernel build tree at $(KDIR) (KDIR=),no headers for kernel $(DLC_KVER): install linux-headers-$(DLC_KVER))),$(if \
		$(KVER),no headers for kernel $(KVER): install linux-headers-<$(KVER) release>-amd64 (make deps installs 6.1 and 6.12))))

# Two makes that build one module directory (make check runs
# qemu-debug-int beside fuzz-check) take turns on its lock.
module:
	$(if $(DLC_NO_HEADERS),$(error $(DLC_NO_HEADERS)))
	@if [ -z "$(DLC_KVER)" ]; then \
		echo "module: no kernel headers (install linux-headers-$$(uname -r), or set KVER= or KDIR=); dlcache.ko not built"; \
		exit 0; \
	fi; \
	if [ -z "$(DLC_ASKED)" ] && [ "$(DLC_KVER)" != "$$(uname -r)" ]; then \
		echo "module: the running kernel $$(uname -r) has no headers (linux-headers-$$(uname -r)); building for $(DLC_KVER)"; \
	fi; \
	mkdir -p $(KMOD_DIR) && \
	exec 9> $(KMOD_DIR)/.build.lock && flock 9 && \
	tools/build/shadow.sh . $(KMOD_DIR) && \
	$(MAKE) --no-print-directory -C "$(KDIR)" M=$(abspath $(KMOD_DIR)) modules && \
	if [ -z "$(DLC_ASKED)" ]; then \
		if [ -d $(BUILD)/kmod ] && [ ! -L $(BUILD)/kmod ]; then rm -rf $(BUILD)/kmod; fi; \
		ln -sfn kmod-$(DLC_KVER) $(BUILD)/kmod; \
	fi

kunit:
	@BUILD=$(BUILD) tests/kunit/run.sh

# Then the tree's shape as design.md states it: no call or include cycle,
# calls down libdlcache's folders, the file and function limits
# (tests/structure.py, over the objects of make lib tools module).
style:
	@rc=0; tests/kmod/style.sh $(abspath $(KSCRIPTS)) $(abspath $(BUILD)) "$(KERNELS)" \
		$(if $(DLC_KDIR_GIVEN),"$(KDIR)") || rc=1; \
	/usr/bin/python3 tests/structure.py $(BUILD) || rc=1; \
	exit $$rc

dkms-install:
	@if [ "$$(id -u)" -ne 0 ]; then echo "dkms-install: needs root"; exit 1; fi; \
	command -v dkms >/dev/null || { echo "dkms-install: dkms is not installed (apt-get install dkms)"; exit 1; }; \
	if dkms status -m dlcache -v $(DKMS_VERSION) 2>/dev/null | grep -q .; then \
		dkms remove -m dlcache -v $(DKMS_VERSION) --all >/dev/null 2>&1; \
	fi; \
	$(MAKE) --no-print-directory -s dkms-src DESTDIR= && mkdir -p $(BUILD) && \
	dkms add -m dlcache -v $(DKMS_VERSION) >/dev/null && \
	for d in /lib/modules/*/build; do \
		[ -f "$$d/Makefile" ] || continue; \
		k=$$(basename "$$(dirname "$$d")"); \
		if dkms install -m dlcache -v $(DKMS_VERSION) -k "$$k" >$(BUILD)/dkms-$$k.log 2>&1; then \
			echo "dkms-install: dlcache $(DKMS_VERSION) installed for $$k"; \
		else \
			tail -n 20 $(BUILD)/dkms-$$k.log; \
			echo "dkms-install: dlcache $(DKMS_VERSION) failed for $$k (log: $(BUILD)/dkms-$$k.log)"; \
			exit 1; \
		fi; \
	done

# The module's sources as DKMS builds them, in $(DESTDIR)/usr/src/dlcache-<v>/
# (dkms-install; debian/rules for the dlcache-dkms package).
dkms-src:
	rm -rf $(DESTDIR)$(DKMS_SRC)
	mkdir -p $(DESTDIR)$(DKMS_SRC)
	cp --parents $(DKMS_FILES) $(DESTDIR)$(DKMS_SRC)/

dkms-remove:
	@if [ "$$(id -u)" -ne 0 ]; then echo "dkms-remove: needs root"; exit 1; fi; \
	if command -v dkms >/dev/null && dkms status -m dlcache -v $(DKMS_VERSION) 2>/dev/null | grep -q .; then \
		dkms remove -m dlcache -v $(DKMS_VERSION) --all >/dev/null 2>&1 && \
		echo "dkms-remove: dlcache $(DKMS_VERSION) removed"; \
	fi; \
	rm -rf $(DKMS_SRC)

dkms-test:
	@tests/kmod/dkms-test.sh $(abspath $(BUILD))/dkms $(DKMS_VERSION) "$(KERNELS)" $(DKMS_FILES)
