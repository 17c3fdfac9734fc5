# QEMU integration tests of dlcache.ko (see the comment at the top of
# tests/qemu/run.sh). Included by the top-level Makefile.
#
#   make qemu-test                     for each kernel of KERNELS (default
#                                      "6.1 6.12"): build the module for it
#                                      (build/kmod-<release>/), boot it, run
#                                      every test; lines "ok qemu-6.1:basic"
#   make qemu-test KERNELS=6.12        only some kernels
#   make qemu-test QEMU_ONLY=hit_miss  run only some tests (comma separated)
#   make qemu-smoke                    check the harness alone (no module)
#
# A kernel whose image or headers are missing is one "skip qemu-<k>:all"
# line (make deps installs both kernels).

.PHONY: qemu-test qemu-smoke

qemu-test:
	@rc=0; for k in $(KERNELS); do \
		r=$$(kmod/kver.sh "$$k"); \
		if [ -z "$$r" ] || [ ! -e "/boot/vmlinuz-$$r" ] || [ ! -d "/lib/modules/$$r/build" ]; then \
			echo "skip qemu-$$k:all (no $$k kernel image and headers installed: make deps)"; \
			continue; \
		fi; \
		if ! $(MAKE) --no-print-directory module KVER="$$r"; then \
			echo "FAIL qemu-$$k:module (dlcache.ko does not build for $$r)"; \
			rc=1; continue; \
		fi; \
		BUILD=$(BUILD) QEMU_KVER="$$r" QEMU_TAG="qemu-$$k" \
			tests/qemu/run.sh $(if $(QEMU_ONLY),--only $(QEMU_ONLY)) || rc=1; \
	done; exit $$rc
	@BUILD=$(BUILD) tests/qemu/integration/integration.sh

qemu-smoke:
	@BUILD=$(BUILD) tests/qemu/run.sh --smoke
