#!/bin/sh
# tools/gpu-prepare.sh — here, before a lent-GPU call (../shared/device/README.md): the
# Debian packages that machine lacks (.devdeps, by ../shared/device/fetch-debs.sh: Lua,
# busted, OpenBLAS, readline) and the Fashion-MNIST files the examples train on
# (.devdata/fashion-mnist); both git-ignored, both sent with the
# call as `carry`. What travels (the tracked and unignored files plus the carried folders)
# must fit in 64 MiB: the script adds it up and fails when it does not.
# Then one call: carry [".devdeps", ".devdata"], command `bash tools/gpu-run.sh`, limit 450 s.
set -eu
cd "$(dirname "$0")/.."
if [ ! -f .devdeps/env.sh ]; then
  for f in ../shared/device/fetch-debs.sh ../../shared/device/fetch-debs.sh; do
    [ -x "$f" ] && { "$f"; break; }
  done
  [ -f .devdeps/env.sh ] || { echo "gpu-prepare: ../shared/device/fetch-debs.sh not found" >&2; exit 1; }
fi
mkdir -p .devdata/fashion-mnist
src=${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  [ -f ".devdata/fashion-mnist/$f" ] || cp "$src/$f" .devdata/fashion-mnist/
done
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 cat 2>/dev/null | wc -c)
carried=$(cat .devdeps/* .devdata/*/* 2>/dev/null | wc -c)
total=$((tree + carried))
limit=$((64 * 1024 * 1024))
echo "gpu-prepare: working tree $((tree / 1048576)) MiB + .devdeps and .devdata $((carried / 1048576)) MiB = $((total / 1048576)) MiB (limit 64 MiB)"
if [ "$total" -gt "$limit" ]; then
  echo "gpu-prepare: too large to travel; leave .devdata out (the examples then make their own data)" >&2
  exit 1
fi
