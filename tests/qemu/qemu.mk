# QEMU integration tests of dlcache.ko (see the comment at the top of
# tests/qemu/run.sh). Included by the top-level Makefile.
#
#   make qemu-test                     for each kernel of KERNELS (default
#                                      "6.1 6.12"): build the module for it
#                                      (build/kmod-<release>/), boot it, run
#                                      every test; lines "ok qemu-6.1:basic"
#   make qemu-test KERNELS=6.12        only some kernels
#   make qemu-test QEMU_ONLY=hit_miss  run only some tests (comma separated)
#                                      then, per kernel, packs on an emulated
#                                      NVMe namespace read through io_uring
#                                      passthrough (tests/qemu/nvme/nvme.sh,
#                                      "ok qemu-nvme-6.1:...")
#   make qemu-nvme KERNELS=6.12        only those
#   make qemu-smoke                    check the harness alone (no module)
#   make qemu-debug                    the whole suite again, and the
#                                      integration test, on the debug kernel
#                                      (PROVE_LOCKING, DEBUG_ATOMIC_SLEEP,
#                                      KASAN, UBSAN, kmemleak, KCOV) that
#                                      tests/qemu/debug-kernel/build.sh
#                                      builds once and caches outside the
#                                      clone; lines "ok qemu-debug:basic"
#                                      (each half alone: qemu-debug-suite,
#                                      qemu-debug-int)
#   make fuzz FUZZ_SECONDS=300         on the debug kernel, only the
#                                      coverage-guided fuzzer
#                                      tests/fuzz/kcov_fuzz.c: N s of the old
#                                      blind fuzzer (tests/qemu/tests/fuzz.c)
#                                      for comparison, then N s of KCOV-guided
#                                      fuzzing; "ok qemu-fuzz:kcov_fuzz" and
#                                      "# kcov-fuzz: ..." lines (PCs, execs)
#   make fuzz-check                    the same, bounded for make check
#                                      (FUZZ_CHECK_SECONDS=30 each)
#
# A kernel whose image or headers are missing is one "skip qemu-<k>:all"
# line (make deps installs both kernels); under CI=true it is one FAIL
# (tests/skip-required.sh).

.PHONY: qemu-test qemu-smoke qemu-debug qemu-debug-suite qemu-debug-int debug-kernel qemu-nvme

# Slower than Debian's kernel under TCG (KASAN, lockdep): longer limits.
QEMU_DEBUG_TIMEOUT ?= 1500
QEMU_DEBUG_TEST_TIMEOUT ?= 240

qemu-test:
	@rc=0; for k in $(KERNELS); do \
		r=$$(tools/build/kver.sh "$$k"); \
		if [ -z "$$r" ] || [ ! -e "/boot/vmlinuz-$$r" ] || [ ! -d "/lib/modules/$$r/build" ]; then \
			tests/skip-required.sh "qemu-$$k:all" "no $$k kernel image and headers installed: make deps" || rc=1; \
			continue; \
		fi; \
		if ! $(MAKE) --no-print-directory module KVER="$$r"; then \
			echo "FAIL qemu-$$k:module (dlcache.ko does not build for $$r)"; \
			rc=1; continue; \
		fi; \
		BUILD=$(BUILD) QEMU_KVER="$$r" QEMU_TAG="qemu-$$k" \
			tests/qemu/run.sh $(if $(QEMU_ONLY),--only $(QEMU_ONLY)) || rc=1; \
		BUILD=$(BUILD) NVME_KVER="$$k" DLCACHE_KO=$(BUILD)/kmod-$$r/dlcache.ko \
			tests/qemu/nvme/nvme.sh || rc=1; \
	done; exit $$rc
	@BUILD=$(BUILD) tests/qemu/integration/integration.sh

qemu-smoke:
	@BUILD=$(BUILD) tests/qemu/run.sh --smoke

qemu-nvme:
	@rc=0; for k in $(KERNELS); do \
		r=$$(tools/build/kver.sh "$$k"); \
		[ -z "$$r" ] || $(MAKE) --no-print-directory module KVER="$$r" || rc=1; \
		BUILD=$(BUILD) NVME_KVER="$$k" DLCACHE_KO=$(BUILD)/kmod-$$r/dlcache.ko \
			tests/qemu/nvme/nvme.sh || rc=1; \
	done; exit $$rc

# The debug kernel alone: built once, then reused (one result line).
debug-kernel:
	@if env=$$(tests/qemu/debug-kernel/build.sh); then \
		eval "$$env"; \
		echo "ok debug-kernel:build ($$DEBUG_KREL; cold build took $$(cat $$(dirname $$DEBUG_KERNEL)/build-seconds) s)"; \
	else \
		echo "FAIL debug-kernel:build"; exit 1; \
	fi

# The debug kernel's environment (DEBUG_KREL, DEBUG_KDIR, DEBUG_KERNEL) and
# dlcache.ko built for it, or a FAIL line for TAG: debug_env,TAG
define debug_env
if ! env=$$(tests/qemu/debug-kernel/build.sh); then \
	echo "FAIL $(1):kernel (the debug kernel did not build; see above)"; exit 1; \
fi; \
eval "$$env"; \
if ! $(MAKE) --no-print-directory module KDIR="$$DEBUG_KDIR"; then \
	echo "FAIL $(1):module (dlcache.ko does not build for $$DEBUG_KREL)"; exit 1; \
fi; \
ko=$(BUILD)/kmod-$$DEBUG_KREL/dlcache.ko
endef

# Both halves; make check runs them as two targets, the integration
# beside kunit and fuzz-check (tests/run-checks.sh).
qemu-debug:
	@rc=0; \
	$(MAKE) --no-print-directory qemu-debug-suite || rc=1; \
	$(MAKE) --no-print-directory qemu-debug-int || rc=1; \
	exit $$rc

qemu-debug-suite:
	@start=$$(date +%s); \
	$(call debug_env,qemu-debug); \
	echo "# qemu-debug: $$DEBUG_KREL ready after $$(( $$(date +%s) - start )) s (cold build: $$(cat $$(dirname $$DEBUG_KERNEL)/build-seconds) s)"; \
	BUILD=$(BUILD) QEMU_KERNEL="$$DEBUG_KERNEL" DLCACHE_KO="$$ko" QEMU_TAG=qemu-debug QEMU_CHECKERS=1 \
		QEMU_TIMEOUT=$(QEMU_DEBUG_TIMEOUT) QEMU_TEST_TIMEOUT=$(QEMU_DEBUG_TEST_TIMEOUT) \
		tests/qemu/run.sh $(if $(QEMU_ONLY),--only $(QEMU_ONLY))

qemu-debug-int:
	@$(call debug_env,qemu-debug-int); \
	BUILD=$(BUILD) INT_KERNEL="$$DEBUG_KERNEL" INT_MODDIR=none DLCACHE_KO="$$ko" \
		INT_TAG=qemu-debug-int INT_TIMEOUT=$(QEMU_DEBUG_TIMEOUT) \
		tests/qemu/integration/integration.sh

# ---- coverage-guided fuzzing (tests/fuzz/kcov_fuzz.c) -----------------------
.PHONY: fuzz fuzz-check
FUZZ_SECONDS ?= 300
FUZZ_CHECK_SECONDS ?= 30

# fuzz_run,SECONDS: debug kernel, module for it, one boot running kcov_fuzz.
define fuzz_run
if ! ls /usr/src/linux-source-6.1*.tar.xz > /dev/null 2>&1; then \
	tests/skip-required.sh qemu-fuzz:kcov_fuzz "no /usr/src/linux-source-6.1 for the debug kernel: make deps"; \
	exit $$?; \
fi; \
$(call debug_env,qemu-fuzz); \
BUILD=$(BUILD) QEMU_KERNEL="$$DEBUG_KERNEL" DLCACHE_KO="$$ko" \
	QEMU_TAG=qemu-fuzz QEMU_CHECKERS=1 FUZZ_SECONDS=$(1) EXTRA_TESTS=tests/fuzz/kcov_fuzz.c \
	QEMU_TEST_TIMEOUT=$$((2 * $(1) + 300)) QEMU_TIMEOUT=$$((2 * $(1) + 1200)) \
	tests/qemu/run.sh --only kcov_fuzz
endef

fuzz:
	@$(call fuzz_run,$(FUZZ_SECONDS))

fuzz-check:
	@$(call fuzz_run,$(FUZZ_CHECK_SECONDS))
