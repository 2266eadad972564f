#!/usr/bin/env bash
# tools/gpu-check.sh — what a lent GPU session runs, in one call:
#   1. build with that machine's nvcc, for its GPU's architecture only (a third of the
#      compile time of the fat binary `make` builds), into build/gpucheck;
#   2. `gpulua --check`;
#   3. the issue-4/5 figures of gpulua, PyTorch and CuPy in the same run, as one table:
#      device-to-device copy (the reference), add, sum, rand and randn of 2^28 float32 in
#      GB/s, and the wall time per op of a 1-element add in a loop (well under a minute);
#   4. the spec suite on cuda, then compute-sanitizer (memcheck) over spec/cuda_spec.lua.
# Logs go to $OUT (the device tool brings them back).
# usage (device tool, carry [".devdeps"]):  bash tools/gpu-check.sh [targets|linalg]
#   targets: steps 1-3 only.   linalg: steps 1-2, then gpu.linalg (cuSOLVER) beside
#   torch.linalg (bench/gpu_linalg.lua/.py: solve inv cholesky qr svd eigh, n = 256/1024,
#   float32/float64) and spec/linalg_parity_spec.lua; "all" runs that group after step 3.   GPU_TARGETS_MATMUL=1: matmul 8192 rows in the table too.
#   BENCH=1: also bench/run.sh (BENCH_GROUPS, default elementwise) on cuda.
# Prepare here first: ../shared/device/fetch-debs.sh (writes .devdeps/).
set -u
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*"; }
MODE=${1:-all}

source .devdeps/env.sh
# Debian's lua5.4 headers include a multiarch header that env.sh does not put on the path
export C_INCLUDE_PATH=/opt/devdeps/usr/include/x86_64-linux-gnu:${C_INCLUDE_PATH:-}
bash .devdeps/probe.sh > "$OUT/probe.txt" 2>&1
head -3 "$OUT/probe.txt"

B=build/gpucheck
BIN=$B/gpulua
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
ARCH=()
if [[ "$cap" =~ ^[0-9]+$ ]]; then
  ARCH=("NVFLAGS=-O3 -Xcompiler -fPIC -std=c++17 --expt-relaxed-constexpr -gencode arch=compute_$cap,code=sm_$cap")
fi
stamp "build (sm_${cap:-default})"
if ! make -j"$(nproc)" BUILD=$B BIN=$BIN SO=$B/gpu.so LIB=$B/libgpulua.a "${ARCH[@]}" > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; stamp "build FAILED"; exit 1
fi
grep -E 'warning|error' "$OUT/build.log" | head -20

stamp check
$BIN --check 2>&1 | tee "$OUT/check.txt" | tail -8

linalg_group() {
  stamp "gpu.linalg (cuSOLVER) beside torch.linalg"
  timeout 120 $BIN bench/gpu_linalg.lua > "$OUT/linalg-gpulua.txt" 2>&1
  grep -v '^RESULT' "$OUT/linalg-gpulua.txt" | tail -5
  timeout 120 python3 bench/gpu_linalg.py "$OUT/linalg-gpulua.txt" > "$OUT/linalg.txt" 2>&1
  grep -v '^RESULT' "$OUT/linalg.txt"
  stamp "linalg cpu/cuda parity"
  timeout 180 $BIN "$BUSTED" -o TAP spec/linalg_parity_spec.lua > "$OUT/linalg-parity.log" 2>&1
  echo "linalg parity: $(grep -c '^ok ' "$OUT/linalg-parity.log") ok, $(grep -c '^not ok ' "$OUT/linalg-parity.log") not ok"
  grep -A6 '^not ok' "$OUT/linalg-parity.log" | head -60
}
if [ "$MODE" = linalg ]; then linalg_group; stamp done; exit 0; fi

stamp "issue-4/5 figures: gpulua, then PyTorch and CuPy"
timeout 60 $BIN bench/gpu_targets.lua > "$OUT/targets-gpulua.txt" 2>&1
grep -v '^RESULT' "$OUT/targets-gpulua.txt" | tail -5
timeout 90 python3 bench/gpu_targets.py "$OUT/targets-gpulua.txt" > "$OUT/targets.txt" 2>&1
grep -v '^RESULT' "$OUT/targets.txt"

if [ "$MODE" = targets ]; then stamp done; exit 0; fi
linalg_group

stamp "spec suite on cuda (gpulua host)"
GPULUA_TEST_DEVICES=cuda GPULUA_ONLY_BIN=1 GPULUA_TEST_LOG_DIR="$OUT" timeout ${TEST_SECONDS:-120} \
  sh tools/run-tests.sh $BIN > "$OUT/test-gpu.log" 2>&1
grep -E '^[a-z0-9.]+: [0-9]+ passed|^[0-9]+ passed' "$OUT/test-gpu.log"
grep -A6 '^not ok' "$OUT/test-gpu.log" | head -150

if [ "${BENCH:-0}" = 1 ]; then
  stamp "benchmarks on cuda"
  GPULUA_BENCH_DEVICE=cuda BENCH_QUICK=1 BENCH_GROUPS="${BENCH_GROUPS:-elementwise}" BENCH_OUT="$OUT/RESULTS-gpu.md" \
    timeout ${BENCH_SECONDS:-35} sh bench/run.sh $BIN > "$OUT/bench.log" 2>&1
  tail -40 "$OUT/bench.log"
fi

if command -v compute-sanitizer >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  stamp "compute-sanitizer (memcheck) over the CUDA specs"
  GPULUA_TEST_DEVICES=cuda timeout 30 "$CS" --tool memcheck --leak-check no --error-exitcode 9 \
    $BIN "$BUSTED" -o TAP spec/cuda_spec.lua > "$OUT/sanitizer.log" 2>&1
  echo "sanitizer exit: $? ($(grep -c '^ok ' "$OUT/sanitizer.log") ok, $(grep -c '^not ok ' "$OUT/sanitizer.log") not ok)"
  grep -m3 -A12 'Invalid\|ERROR SUMMARY' "$OUT/sanitizer.log" | head -40
fi
stamp done
