#!/usr/bin/env bash
# tools/gpu-tests.sh — the short lent-GPU run: build, then the whole spec suite on cuda
# with the full TAP output kept in $OUT (tools/gpu-check.sh does the longer session).
set -u
OUT=${OUT:-/tmp/gpu-tests}
mkdir -p "$OUT"
source .devdeps/env.sh
export C_INCLUDE_PATH=/opt/devdeps/usr/include/x86_64-linux-gnu:${C_INCLUDE_PATH:-}
make -j"$(nproc)" > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
GPULUA_TEST_DEVICES=cuda GPULUA_ONLY_BIN=1 GPULUA_TEST_LOG_DIR="$OUT" timeout ${TEST_SECONDS:-120} \
  sh tools/run-tests.sh ./gpulua > "$OUT/summary.txt" 2>&1
tail -3 "$OUT/summary.txt"
grep '^not ok' "$OUT/tap-gpulua.txt" | head -80
