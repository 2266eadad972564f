#!/usr/bin/env bash
# tools/gpu-check.sh — everything a lent GPU session should run, in one call:
#   build with that machine's nvcc, `gpulua --check`, the spec suite on cuda, a
#   compute-sanitizer pass over the CUDA specs, and the GPU benchmarks against CuPy and
#   PyTorch. Logs go to $OUT (the device tool brings them back).
# usage (device tool, carry [".devdeps"]):  bash tools/gpu-check.sh [quick]
# Prepare here first: ../shared/device/fetch-debs.sh (writes .devdeps/).
set -u
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*"; }

source .devdeps/env.sh
# Debian's lua5.4 headers include a multiarch header that env.sh does not put on the path
export C_INCLUDE_PATH=/opt/devdeps/usr/include/x86_64-linux-gnu:${C_INCLUDE_PATH:-}
bash .devdeps/probe.sh > "$OUT/probe.txt" 2>&1
head -3 "$OUT/probe.txt"

stamp build
if ! make -j"$(nproc)" > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; stamp "build FAILED"; exit 1
fi
grep -E 'warning|error' "$OUT/build.log" | head -20

stamp check
./gpulua --check 2>&1 | tee "$OUT/check.txt" | tail -8

stamp "issue-4 targets (gpulua, then CuPy/PyTorch)"
timeout 35 ./gpulua bench/gpu_targets.lua 2>&1 | tee "$OUT/targets.txt"
timeout 40 python3 bench/gpu_targets.py 2>&1 | tee -a "$OUT/targets.txt"

stamp "spec suite on cuda (gpulua host)"
GPULUA_TEST_DEVICES=cuda GPULUA_ONLY_BIN=1 timeout 90 sh tools/run-tests.sh ./gpulua > "$OUT/test-gpu.log" 2>&1
grep -E '^[a-z0-9.]+: [0-9]+ passed|^[0-9]+ passed' "$OUT/test-gpu.log"
grep -A6 '^not ok' "$OUT/test-gpu.log" | head -150

stamp "benchmarks on cuda"
GPULUA_BENCH_DEVICE=cuda BENCH_QUICK=1 BENCH_GROUPS="${BENCH_GROUPS:-elementwise}" BENCH_OUT="$OUT/RESULTS-gpu.md" timeout ${BENCH_SECONDS:-35} sh bench/run.sh ./gpulua \
  > "$OUT/bench.log" 2>&1
tail -40 "$OUT/bench.log"

if command -v compute-sanitizer >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  stamp "compute-sanitizer (memcheck) over the CUDA specs"
  GPULUA_TEST_DEVICES=cuda timeout 30 "$CS" --tool memcheck --leak-check no --error-exitcode 9 \
    ./gpulua "$BUSTED" -o TAP spec/cuda_spec.lua > "$OUT/sanitizer.log" 2>&1
  echo "sanitizer exit: $? ($(grep -c '^ok ' "$OUT/sanitizer.log") ok, $(grep -c '^not ok ' "$OUT/sanitizer.log") not ok)"
  grep -m3 -A12 'Invalid\|ERROR SUMMARY' "$OUT/sanitizer.log" | head -40
fi
stamp done
