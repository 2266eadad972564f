#!/usr/bin/env bash
# tools/gpu-nn.sh — the issue-6 checks on a lent GPU, in one call after tools/gpu-check.sh
# built build/gpucheck (it builds there itself if the binary is missing):
#   1. bench/nn.lua and bench/nn.py on cuda: MLP and CNN epochs, gpulua beside PyTorch eager;
#   2. the three Fashion-MNIST examples on cuda with their test accuracy and epoch times
#      (the data travels in .devdata/fashion-mnist: run tools/gpu-prepare.sh here first and
#      carry [".devdeps", ".devdata"]).
# Logs go to $OUT.   usage: bash tools/gpu-nn.sh [bench|examples]
set -u
OUT=${OUT:-/tmp/gpu-nn}
mkdir -p "$OUT"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*"; }
MODE=${1:-all}
source .devdeps/env.sh
export C_INCLUDE_PATH=/opt/devdeps/usr/include/x86_64-linux-gnu:${C_INCLUDE_PATH:-}
B=build/gpucheck
BIN=$B/gpulua
if [ ! -x "$BIN" ]; then
  stamp build
  make -j"$(nproc)" BUILD=$B BIN=$BIN SO=$B/gpu.so LIB=$B/libgpulua.a > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
fi
$BIN -e 'print("conv path on cuda: " .. tostring(gpu.config().conv))'

if [ "$MODE" != examples ]; then
  stamp "nn epochs on cuda: gpulua, then torch"
  GPULUA_BENCH_DEVICE=cuda timeout 120 $BIN bench/nn.lua 2>&1 | tee "$OUT/nn-gpulua.txt"
  GPULUA_BENCH_DEVICE=cuda timeout 120 python3 bench/nn.py 2>&1 | tee "$OUT/nn-torch.txt"
fi
if [ "$MODE" != bench ]; then
  export FASHION_MNIST=$PWD/.devdata/fashion-mnist
  for ex in "keras_mlp --epochs 10" "torch_mlp --epochs 10" "cnn --epochs 12"; do
    stamp "examples/$ex on cuda"
    timeout 150 $BIN examples/${ex%% *}.lua ${ex#* } --device cuda > "$OUT/ex-${ex%% *}.txt" 2>&1
    echo "status $?"; tail -4 "$OUT/ex-${ex%% *}.txt"
  done
fi
stamp done
