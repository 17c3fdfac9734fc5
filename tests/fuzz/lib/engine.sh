#!/bin/sh
# tests/fuzz/lib/engine.sh CLANG: which engine drives the fuzz harnesses.
# "libfuzzer" when CLANG links a -fsanitize=fuzzer,address,undefined
# program (clang and its libclang_rt.fuzzer: make deps installs clang and
# libclang-rt-14-dev), else "driver" (driver.c, built with gcc).
clang=${1:-clang}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
	'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
	'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n > 99; }' \
	> "$tmp/t.c"
if command -v "$clang" > /dev/null 2>&1 &&
	"$clang" -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" > /dev/null 2>&1; then
	echo libfuzzer
else
	echo driver
fi
