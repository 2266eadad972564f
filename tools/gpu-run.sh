#!/usr/bin/env bash
# tools/gpu-run.sh — the one command of a lent-GPU run (../shared/device/README.md):
#   build for this GPU's architecture only, `gpulua --check`, the GPU-focused specs on cuda,
#   the GPU targets beside CuPy and PyTorch with NVML's power read around them,
#   compute-sanitizer memcheck on a short list, the remaining specs that run on cuda, and
#   the examples on cuda.
#
# A GPU run returns at most 8 files from $OUT and kills a command at its limit, so:
#   - $OUT holds at most GPU_RUN_MAX_FILES (8) files: summary.txt (this script's output),
#     one TAP file per spec stage, bench.txt, and logs.tgz (every other log, packed again
#     after each stage, so a run killed half way still brings back what finished);
#   - busted writes its TAP straight into $OUT, one line per test as it ends;
#   - each stage has a time limit, cut to what is left of GPU_RUN_SECONDS (420) less the
#     time to pack, so the whole run ends in time; a stage that has no time left is skipped.
#
# usage, on the device (carry [".devdeps", ".devdata"], prepared by tools/gpu-prepare.sh):
#   bash tools/gpu-run.sh
# here, before any GPU sees it:
#   bash tools/gpu-run.sh --dry-run     the same stages on the cpu device (no sanitizer,
#                                       small benchmarks, a short spec list) into a local
#                                       $OUT (default build/gpu-run/out); last line
#                                       "N passed, N failed" over the harness's own checks
# Variables: OUT, GPU_RUN_SECONDS, GPU_RUN_STAGES (names, default all, in order),
#   GPU_RUN_SPECS / GPU_RUN_SPECS_MORE (the two spec lists), GPU_RUN_MAKEFLAGS (dry run's
#   build, e.g. CUDA=0), GPU_RUN_BUDGET_<stage> (a stage's limit in seconds).
set -u
cd "$(dirname "$0")/.."

DRY=0
[ "${1:-}" = --dry-run ] && DRY=1
START=$SECONDS
TOTAL=${GPU_RUN_SECONDS:-420}
PACK_RESERVE=10
MAX_FILES=${GPU_RUN_MAX_FILES:-8}
STAGES=${GPU_RUN_STAGES:-build check specs bench sanitizer specs_more examples}

if [ "$DRY" = 1 ] && [ -z "${OUT:-}" ]; then
  OUT=build/gpu-run/out
  rm -rf "$OUT"
fi
if [ -d "${OUT:-}" ] && [ -n "$(ls -A "$OUT")" ]; then
  echo "gpu-run.sh: OUT ($OUT) is not empty" >&2; exit 2
fi
OUT=${OUT:?set OUT (the device tool sets it)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOGS=$(mktemp -d)
exec > >(tee "$OUT/summary.txt") 2>&1
TEE_PID=$!
# summary.txt is whole when the script returns: close the pipe to tee and wait for it
finish() { local rc=$?; rm -rf "$LOGS"; exec >&- 2>&-; wait "$TEE_PID" 2> /dev/null; exit $rc; }
trap finish EXIT

stamp() { echo "[$((SECONDS - START)) s] $*"; }
pack() { tar -C "$LOGS" -czf "$OUT/logs.tgz.part" . && mv "$OUT/logs.tgz.part" "$OUT/logs.tgz"; }

# --- the two setups: the device, and the dry run on the cpu ---------------------------
if [ "$DRY" = 1 ]; then
  DEVICE=cpu
  BIN=${GPULUA_BIN:-./gpulua}
  BUSTED=${BUSTED:-$(command -v busted || echo /usr/bin/busted)}
  BUILD_CMD=(make -j"$(nproc)" ${GPU_RUN_MAKEFLAGS:-})
  TARGETS_LOG2N=20
  SPECS=${GPU_RUN_SPECS:-spec/cuda_spec.lua spec/kernel_cuda_spec.lua spec/linalg_parity_spec.lua}
  SPECS_MORE=${GPU_RUN_SPECS_MORE:-spec/device_spec.lua spec/bench_spec.lua}
  EXAMPLES=${GPU_RUN_EXAMPLES:-check_gpu quickstart cpu_vs_gpu}
  export GPULUA_PARITY_SELFTEST=1
else
  DEVICE=cuda
  # shellcheck disable=SC1091
  source .devdeps/env.sh
  # Debian's lua5.4 headers include a multiarch header that env.sh does not put on the path
  export C_INCLUDE_PATH=/opt/devdeps/usr/include/x86_64-linux-gnu:${C_INCLUDE_PATH:-}
  B=build/gpurun
  BIN=$B/gpulua
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
  ARCH=()
  if [[ "$cap" =~ ^[0-9]+$ ]]; then
    ARCH=("NVFLAGS=-O3 -Xcompiler -fPIC -std=c++17 --expt-relaxed-constexpr -gencode arch=compute_$cap,code=sm_$cap")
  fi
  BUILD_CMD=(make -j"$(nproc)" BUILD=$B BIN=$BIN SO=$B/gpu.so LIB=$B/libgpulua.a "${ARCH[@]}")
  TARGETS_LOG2N=28
  SPECS=${GPU_RUN_SPECS:-spec/cuda_spec.lua spec/kernel_cuda_spec.lua spec/cudnn_rnn_spec.lua
    spec/attention_bwd_spec.lua spec/linalg_parity_spec.lua spec/parity_spec.lua spec/fastpath_spec.lua
    spec/device_spec.lua spec/memory_spec.lua spec/bench_spec.lua}
  # every other spec that runs on cuda (its devices() lists it)
  SPECS_MORE=${GPU_RUN_SPECS_MORE:-$(grep -l 'devices()' spec/*_spec.lua | grep -v -F "$(printf '%s\n' $SPECS)" | tr '\n' ' ')}
  EXAMPLES=${GPU_RUN_EXAMPLES:-check_gpu quickstart cpu_vs_gpu matmul mixed_precision keras_mlp cnn}
  export FASHION_MNIST=$PWD/.devdata/fashion-mnist
  bash .devdeps/probe.sh > "$LOGS/probe.txt" 2>&1
  head -3 "$LOGS/probe.txt"
fi
export GPULUA_BIN=$BIN GPULUA_TEST_DEVICES=$DEVICE GPULUA_BENCH_DEVICE=$DEVICE
export XDG_CACHE_HOME=$PWD/.test-cache

# Each stage's limit in seconds (on an H100/H200 with 16 cores): the default stages sum to
# 405, within 420 less the pack reserve; a stage that ends early leaves its time to the
# next ones, and a build cut short goes on where it stopped in a second call
declare -A BUDGET=([build]=150 [check]=10 [specs]=80 [bench]=45 [sanitizer]=30 [specs_more]=55 [examples]=35
                   [linalg]=90 [nn]=90 [apifuzz]=120)

# run_stage NAME CMD...: runs CMD under the stage's limit (timeout signals its whole process
# group, so busted's children and the power sampler end with it), its output into
# $LOGS/NAME.log; says ok, failed or timed out, and packs the logs
STAGE_RESULTS=()
run_stage() {
  local name=$1; shift
  local want=${BUDGET[$name]}
  local over="GPU_RUN_BUDGET_$name"
  [ -n "${!over:-}" ] && want=${!over}
  local left=$((TOTAL - PACK_RESERVE - (SECONDS - START)))
  local limit=$(( want < left ? want : left ))
  if [ "$limit" -lt 3 ]; then
    stamp "$name: skipped (no time left of ${TOTAL} s)"
    STAGE_RESULTS+=("$name skipped")
    return
  fi
  stamp "$name (limit $limit s)"
  local t=$SECONDS rc=0
  timeout -k 5 "$limit" "$@" > "$LOGS/$name.log" 2>&1 || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    stamp "$name: TIMED OUT after $((SECONDS - t)) s (limit $limit s)"
    STAGE_RESULTS+=("$name timeout")
  elif [ "$rc" -ne 0 ]; then
    stamp "$name: failed (status $rc, $((SECONDS - t)) s)"
    tail -15 "$LOGS/$name.log"
    STAGE_RESULTS+=("$name failed")
  else
    stamp "$name: ok ($((SECONDS - t)) s)"
    STAGE_RESULTS+=("$name ok")
  fi
  pack
}

# busted over a list of spec files, its TAP straight into $OUT (flushed per test by busted)
busted_stage() {
  local tap=$1; shift
  # shellcheck disable=SC2086
  "$BIN" "$BUSTED" -o TAP "$@" > "$OUT/$tap"
}
tap_count() {
  [ -f "$OUT/$1" ] || { echo "$1: none"; return; }
  echo "$1: $(grep -c '^ok ' "$OUT/$1") ok, $(grep -c '^not ok ' "$OUT/$1") not ok"
  grep -A6 '^not ok ' "$OUT/$1" | head -60
}

# the NVML power sampler of the bench stage (nvidia-smi reads NVML), and the joules it saw
power_start() {
  if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then
    nvidia-smi --query-gpu=timestamp,power.draw,utilization.gpu,temperature.gpu,memory.used \
      --format=csv,noheader,nounits -lms 200 > "$LOGS/power.csv" 2>&1 &
    POWER_PID=$!
  else
    POWER_PID=
    echo "power: cannot measure here (no nvidia-smi/NVML on this machine)" >> "$OUT/bench.txt"
  fi
}
power_stop() {
  [ -n "$POWER_PID" ] || return 0
  kill "$POWER_PID" 2> /dev/null; wait "$POWER_PID" 2> /dev/null
  awk -F', ' 'NF >= 2 && $2 + 0 > 0 { n++; s += $2; if ($2 > m) m = $2 }
    END { if (n) printf "power: %d samples at 200 ms, mean %.1f W, peak %.1f W, about %.0f J\n", n, s / n, m, s / n * n * 0.2;
          else print "power: NVML gave no readings" }' "$LOGS/power.csv" >> "$OUT/bench.txt"
}

# --- the stages ----------------------------------------------------------------------
stage_build() { "${BUILD_CMD[@]}"; }
stage_check() { "$BIN" --check; }
stage_specs() { busted_stage tap-specs.txt $SPECS; }
stage_specs_more() { busted_stage tap-specs-more.txt $SPECS_MORE; }
stage_bench() {
  power_start
  GPU_TARGETS_LOG2N=$TARGETS_LOG2N "$BIN" bench/gpu_targets.lua > "$LOGS/targets-gpulua.txt" 2>&1
  local rc=$?
  power_stop
  grep '^RESULT' "$LOGS/targets-gpulua.txt" >> "$OUT/bench.txt"
  if [ "$DRY" = 0 ]; then
    GPU_TARGETS_LOG2N=$TARGETS_LOG2N python3 bench/gpu_targets.py "$LOGS/targets-gpulua.txt" >> "$OUT/bench.txt" 2>&1
  fi
  # gpu.bench's own energy reading (NVML's counter on a GPU, RAPL on the cpu): 2^24-element adds
  "$BIN" -e 'local d = os.getenv("GPULUA_BENCH_DEVICE") local a = gpu.ones(2^24, { device = d })
    local r = gpu.bench(function() return a + a end, { device = d, n = 200, quiet = true, name = "add 2^24" })
    print("gpu.bench: " .. tostring(r))' >> "$OUT/bench.txt" 2>&1
  return $rc
}
stage_sanitizer() {
  local cs
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  "$cs" --tool memcheck --leak-check no --error-exitcode 9 "$BIN" "$BUSTED" -o TAP spec/cuda_spec.lua spec/kernel_cuda_spec.lua
}
# not in the default list (GPU_RUN_STAGES="linalg", "nn" or "apifuzz" after a build, in a
# second call): gpu.linalg beside torch.linalg, MLP/CNN epochs beside PyTorch, and the API
# fuzzer with cuda arrays (apifuzz.sh caps data, not address space, where a GPU answers)
stage_linalg() {
  "$BIN" bench/gpu_linalg.lua > "$LOGS/linalg-gpulua.txt" 2>&1 || return 1
  [ "$DRY" = 1 ] || python3 bench/gpu_linalg.py "$LOGS/linalg-gpulua.txt" >> "$OUT/bench.txt" 2>&1
}
stage_nn() {
  "$BIN" bench/nn.lua 2>&1 | tee -a "$OUT/bench.txt"
  [ "$DRY" = 1 ] || python3 bench/nn.py >> "$OUT/bench.txt" 2>&1
}
stage_apifuzz() { sh tools/apifuzz.sh "$BIN" 1 2 20000; }
stage_examples() {
  local ex rc=0 st
  for ex in $EXAMPLES; do
    local args=()
    case $ex in
      cpu_vs_gpu|matmul) [ "$DRY" = 1 ] && args=(--small) ;;
      mixed_precision) args=(--epochs 1) ;;
      keras_mlp|torch_mlp) args=(--epochs 2) ;;
      cnn) args=(--epochs 1 --limit 10000) ;;
    esac
    echo "== gpulua --device $DEVICE examples/$ex.lua ${args[*]}"
    "$BIN" --device "$DEVICE" "examples/$ex.lua" "${args[@]}" 2>&1 | tail -25
    st=${PIPESTATUS[0]}
    [ "$st" -eq 0 ] || { echo "status $st"; rc=1; }
  done
  return $rc
}

export -f stage_build stage_check stage_specs stage_specs_more stage_bench stage_sanitizer stage_examples \
  stage_linalg stage_nn stage_apifuzz \
  busted_stage power_start power_stop
export BIN BUSTED DEVICE DRY OUT LOGS SPECS SPECS_MORE EXAMPLES TARGETS_LOG2N
for s in $STAGES; do
  if [ "$s" = sanitizer ] && [ "$DRY" = 1 ]; then stamp "sanitizer: skipped (no sanitizer on the cpu)"; continue; fi
  if ! declare -F "stage_$s" > /dev/null; then stamp "unknown stage $s"; STAGE_RESULTS+=("$s failed"); continue; fi
  case $s in
    build) run_stage build "${BUILD_CMD[@]}" ;;
    *) run_stage "$s" bash -c "stage_$s" ;;
  esac
  case $s in
    build) grep -E 'warning|error' "$LOGS/build.log" | head -20
           [ "${STAGE_RESULTS[-1]}" = "build ok" ] || break
           # the fingerprints of this build's GPU functions: appended to bench/gpu-ran.tsv
           # when the cuda specs pass (doc/HACKING.md), then `make unverified`
           gpu_name=$( [ "$DRY" = 1 ] && echo "cpu (dry run)" ||
                       nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
           "$BIN" tools/unverified.lua --record "$(date -u +%F)" "${gpu_name:-unknown GPU}" > "$LOGS/gpu-ran.tsv" &&
             echo "gpu-ran.tsv: $(wc -l < "$LOGS/gpu-ran.tsv") functions (in logs.tgz)"
           pack ;;
    check) tail -8 "$LOGS/check.log" ;;
    specs) tap_count tap-specs.txt ;;
    specs_more) tap_count tap-specs-more.txt ;;
    bench) cat "$OUT/bench.txt" 2> /dev/null | grep -v '^RESULT' ;;
    sanitizer) grep -m3 -A12 'Invalid\|ERROR SUMMARY' "$LOGS/sanitizer.log" | head -40 ;;
  esac
done
pack

# --- the harness's own checks: what a GPU run relies on -----------------------------------
passed=0; failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "harness: FAILED: $1"; fi; }
nfiles=$(find "$OUT" -type f | wc -l)
echo "files in OUT: $nfiles (at most $MAX_FILES): $(cd "$OUT" && find . -type f | sort | tr '\n' ' ')"
check "at most $MAX_FILES files in OUT" '[ "$nfiles" -le "$MAX_FILES" ]'
check "no folder in OUT" '[ -z "$(find "$OUT" -mindepth 1 -type d)" ]'
check "logs.tgz holds every stage's log" 'for r in "${STAGE_RESULTS[@]}"; do n=${r%% *}; [ "${r#* }" = skipped ] || tar -tzf "$OUT/logs.tgz" | grep -qx "./$n.log" || exit 1; done'
for r in "${STAGE_RESULTS[@]}"; do
  check "stage ${r%% *} ran to its end" '[ "${r#* }" = ok ] || [ "${r#* }" = skipped ]'
done
for t in tap-specs.txt tap-specs-more.txt; do
  [ -f "$OUT/$t" ] || continue
  check "$t has test lines and no failure" 'grep -q "^ok " "$OUT/$t" && ! grep -q "^not ok " "$OUT/$t"'
done
stamp "done: $((SECONDS - START)) s of ${TOTAL} s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
