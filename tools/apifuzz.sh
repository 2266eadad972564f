#!/bin/sh
# Runs tools/apifuzz.lua over many seeds with a memory cap and a time limit per seed, and
# names the call that crashed or hung (the last one the fuzzer traced).
# usage: tools/apifuzz.sh BIN [first_seed=1] [seeds=20] [calls=20000]
#   BIN ./gpulua or ./gpulua-asan (an ASan build is told by its name). Ends with
#   "apifuzz: N seeds, N failed"; non-zero exit when one failed.
# The cap (2 GiB; ASan: 1 GiB a request) makes a legitimate but huge allocation (gpu.zeros(2^31)
# is 8 GiB, a reduction of a 2^62-element view along one axis 2^31 elements) fail with
# "out of memory" instead of taking the machine: ulimit -v for a plain build; ASan reserves
# terabytes of address space, so there its allocator refuses big requests instead. Where a
# GPU answers, the CUDA driver reserves address space of the device's size and more at
# initialisation and fails under ulimit -v: the cap is then on data (ulimit -d, which
# counts writable private memory and not the driver's reservations), 8 GiB by default.
BIN=${1:?usage: tools/apifuzz.sh BIN [first_seed] [seeds] [calls]}
FIRST=${2:-1}
SEEDS=${3:-20}
CALLS=${4:-20000}
case $BIN in
  *asan*)
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=1024"
    export ASAN_OPTIONS
    SLOW=${APIFUZZ_SLOW:-10}; LIMIT=${APIFUZZ_LIMIT:-1200} ;;
  *)
    if "$BIN" -e 'os.exit(gpu.is_available() and 0 or 1)' 2>/dev/null; then
      ulimit -d "${APIFUZZ_DATA_KB:-8388608}" 2>/dev/null || echo "apifuzz.sh: warning: no memory cap (ulimit -d)"
    else
      ulimit -v "${APIFUZZ_VMEM_KB:-2097152}" 2>/dev/null || echo "apifuzz.sh: warning: no memory cap (ulimit -v)"
    fi
    SLOW=${APIFUZZ_SLOW:-3}; LIMIT=${APIFUZZ_LIMIT:-120} ;;
esac
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
failed=0
seed=$FIRST
last=$((FIRST + SEEDS - 1))
while [ "$seed" -le "$last" ]; do
  APIFUZZ_TRACE=1 timeout "$LIMIT" "$BIN" tools/apifuzz.lua "$seed" "$CALLS" "$SLOW" \
    > "$log/out" 2> "$log/err"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
    cat "$log/out"
    if ! grep -q '^apifuzz: [0-9]* problems' "$log/out"; then     # it did not get to the end
      [ "$rc" -eq 124 ] && echo "apifuzz: seed $seed ran past ${LIMIT} s"
      echo "apifuzz: seed $seed exited with status $rc; the last call was:"
      grep '^apifuzz call: ' "$log/err" | tail -1
      grep -v -e '^apifuzz call: ' -e 'WARNING: AddressSanitizer failed to allocate' "$log/err" | tail -40
    fi
  fi
  seed=$((seed + 1))
done
echo "apifuzz: $SEEDS seeds, $failed failed"
[ "$failed" -eq 0 ]
