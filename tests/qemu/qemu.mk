# QEMU integration tests of dlcache.ko (see the comment at the top of
# tests/qemu/run.sh). Included by the top-level Makefile.
#
#   make qemu-test                     build the module, boot, run every test
#   make qemu-test QEMU_ONLY=hit_miss  run only some tests (comma separated)
#   make qemu-smoke                    check the harness alone (no module)

.PHONY: qemu-test qemu-smoke

qemu-test:
	@$(MAKE) --no-print-directory module
	@BUILD=$(BUILD) tests/qemu/run.sh $(if $(QEMU_ONLY),--only $(QEMU_ONLY))

qemu-smoke:
	@BUILD=$(BUILD) tests/qemu/run.sh --smoke
