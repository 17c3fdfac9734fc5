#!/bin/bash
# make demo: the main job on the in-process cache. Generates an
# ImageNet-like data set once (cached under build/), indexes it, and runs
# three epochs with a cache that holds half of it.
set -euo pipefail

ctl=${1:-build/dlcachectl}
dir=${2:-build/demo-data}
images=${3:-1200}

"$ctl" gen "$dir" --images "$images" --classes 10
"$ctl" index "$dir" -o "$dir.idx"
echo
echo "3 epochs, batch 64, 224x224 RandomResizedCrop + flip, cache = half the data set:"
"$ctl" bench "$dir.idx" --epochs 3 --batch-size 64 --cache-fraction 0.5
