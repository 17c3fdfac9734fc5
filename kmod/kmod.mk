# SPDX-License-Identifier: GPL-2.0
#
# Kernel module targets, included by the top-level Makefile.
#
#   make module   build/kmod/dlcache.ko against KDIR (default: the running
#                 kernel's headers, else the newest /lib/modules/*/build);
#                 without headers, says so on one line and succeeds
#   make kunit    KUnit suites under UML in an extracted linux-source-6.1
#                 (KUNIT_SRC, KUNIT_BUILD; KUNIT_SANITIZERS=0 skips the KASAN,
#                 UBSAN and DEBUG_LIST run after the PROVE_LOCKING one)
#   make style    checkpatch --strict and sparse (make C=2) on the module
#
# qemu-test is defined by tests/qemu/qemu.mk.

KMOD_DIR := $(BUILD)/kmod
KDIR ?= $(shell d=/lib/modules/$$(uname -r)/build; \
	if [ -d "$$d" ]; then echo "$$d"; else \
	ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1; fi)
KUNIT_SRC ?= $(BUILD)/kunit-src
KUNIT_BUILD ?= $(BUILD)/kunit
KUNIT_SANITIZERS ?= 1

.PHONY: module kunit style

module:
	@if [ -z "$(KDIR)" ] || [ ! -d "$(KDIR)" ]; then \
		echo "module: no kernel headers (install linux-headers or set KDIR=); dlcache.ko not built"; \
		exit 0; \
	fi; \
	kmod/shadow.sh . $(KMOD_DIR) && \
	$(MAKE) --no-print-directory -C "$(KDIR)" M=$(abspath $(KMOD_DIR)) modules

kunit:
	@KUNIT_SRC=$(abspath $(KUNIT_SRC)) KUNIT_BUILD=$(abspath $(KUNIT_BUILD)) \
		KUNIT_SANITIZERS=$(KUNIT_SANITIZERS) tests/kunit/run.sh

style:
	@kmod/style.sh $(abspath $(KUNIT_SRC)) "$(KDIR)" $(abspath $(KMOD_DIR))
