#!/bin/bash
# The CUDA path of dlcache.torch, for a machine with a GPU and a CUDA build
# of torch (Debian's python3-torch is CPU only). Not part of make check,
# which cannot depend on a GPU: one short script for a session that has one.
#
#   tests/perf/python_cuda.sh            (PYTHON=... for another interpreter)
#
# 1. tests/python/test_errors.py's cuda_path: device="cuda" + normalize
#    against the CPU path (float32, allclose), and host-to-device GB/s.
# 2. tools/examples/train.py --device cuda, data loading only and with the
#    model, for dlcache and torch's DataLoader: images/s and the data wait
#    per step, side by side.
# Exits 77 (skip) when the interpreter's torch sees no CUDA device.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
PY=${PYTHON:-/usr/bin/python3}
make -j"$(nproc)" BUILD="$BUILD" lib tools python >/dev/null
export PYTHONPATH=$PWD/$BUILD/python DLCACHECTL=$PWD/$BUILD/dlcachectl
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
	echo "skip python_cuda: $PY's torch sees no CUDA device"
	exit 77
fi
"$PY" -c 'import torch; print("# torch", torch.__version__, torch.cuda.get_device_name(0))'
"$PY" tests/python/test_errors.py 2>&1 | grep -E '^(ok|FAIL|skip) cuda|^# cuda'
D=$BUILD/demo-data
"$DLCACHECTL" gen "$D" --images "${IMAGES:-1200}" >/dev/null
for mode in --no-model ""; do
	for loader in dlcache torch; do
		echo "# train.py --loader $loader --device cuda $mode"
		"$PY" tools/examples/train.py "$D" --loader "$loader" --device cuda \
			--size 224 --batch-size 128 --epochs 3 --workers "$(nproc)" \
			$mode --json
	done
done
