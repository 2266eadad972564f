#!/bin/sh
# Runs the whole spec suite: busted under the given gpulua binary, busted under the stock
# lua5.4 loading ./gpu.so, and the embedding example; ends with "N passed, N failed".
# usage: tools/run-tests.sh ./gpulua [busted args...]
BIN=${1:-./gpulua}
[ $# -gt 0 ] && shift
# specs that start the CLI as a subprocess (spec/cli_spec.lua) run the binary under test
GPULUA_BIN=$BIN
export GPULUA_BIN
# kernels the specs compile (gpu.ElementwiseKernel, gpu.fuse) are cached in .test-cache,
# not in the user's ~/.cache: a rerun (and the next build flavour: make clean keeps it) finds them
XDG_CACHE_HOME=${GPULUA_TEST_CACHE:-$(pwd)/.test-cache}
export XDG_CACHE_HOME
BUSTED=${BUSTED:-$(command -v busted || echo /usr/bin/busted)}
LUA=${BUSTED_LUA:-$(command -v lua5.4 || echo lua5.4)}
SPECS=${SPECS:-spec}
passed=0; failed=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# run_busted NAME CMD... : runs busted with TAP output, counts ok / not ok lines
run_busted() {
  name=$1; shift
  echo "== $name"
  # GPULUA_TEST_LOG_DIR: the TAP goes there as busted writes it (flushed per test), so a
  # run killed at a time limit keeps every line written before
  tap="$log/$name.out"
  [ -n "${GPULUA_TEST_LOG_DIR:-}" ] && tap="$GPULUA_TEST_LOG_DIR/tap-$name.txt"
  # SPECS: the spec folder, or spec files separated by spaces
  # shellcheck disable=SC2086
  "$@" -o TAP $SPECS > "$tap" 2>&1
  status=$?
  ok=$(grep -c '^ok ' "$tap")
  nok=$(grep -c '^not ok ' "$tap")
  grep -A12 '^not ok ' "$tap" | head -150
  if [ "$ok" -eq 0 ] && [ "$nok" -eq 0 ] || { [ "$status" -ne 0 ] && [ "$nok" -eq 0 ]; }; then
    echo "$name: busted exited with status $status and no failing test line:"
    tail -20 "$tap"
    nok=$((nok + 1))
  fi
  echo "$name: $ok passed, $nok failed"
  passed=$((passed + ok)); failed=$((failed + nok))
}

run_busted gpulua "$BIN" "$BUSTED" "$@"

# spec/dist_spec.lua again as jobs of 1, 2 and 3 ranks when Open MPI's mpirun is there (each
# rank's TAP lines count; -np 1 is a launched world of one: Open MPI loaded, the blocking
# calls under their watchdog); not under ASan, whose leak check reports Open MPI's allocations
# run_mpi NP : mpirun -np NP of the gpulua host over spec/dist_spec.lua
run_mpi() {
  np=$1
  name=mpi-np$np
  echo "== $name"
  root=; [ "$(id -u)" = 0 ] && root=--allow-run-as-root
  rm -f "$log/$name".*.out
  timeout 300 mpirun --oversubscribe $root -np "$np" sh -c \
    'exec "$0" "$1" -o TAP spec/dist_spec.lua > "$2.$OMPI_COMM_WORLD_RANK.out" 2>&1' \
    "$BIN" "$BUSTED" "$log/$name" > "$log/$name.mpirun" 2>&1
  status=$?
  ok=$(cat "$log/$name".*.out 2>/dev/null | grep -c '^ok ')
  nok=$(cat "$log/$name".*.out 2>/dev/null | grep -c '^not ok ')
  cat "$log/$name".*.out 2>/dev/null | grep -A12 '^not ok ' | head -150
  if [ "$status" -ne 0 ] && [ "$nok" -eq 0 ] || [ "$ok" -eq 0 ]; then
    echo "$name: mpirun exited with status $status:"; tail -20 "$log/$name.mpirun"
    nok=$((nok + 1))
  fi
  echo "$name: $ok passed, $nok failed"
  passed=$((passed + ok)); failed=$((failed + nok))
}
if [ -z "$GPULUA_ASAN" ] && [ "$SPECS" = spec ] && command -v mpirun > /dev/null 2>&1; then
  run_mpi 1
  run_mpi 2
  run_mpi 3
fi

# the layers' specs again on the cpu's fallback: GPULUA_DNNL=0 keeps oneDNN unloaded, so
# convolutions, pooling and batch norm take im2col + GEMM and array ops, LayerNorm its own kernel
if [ "$SPECS" = spec ]; then
  GPULUA_DNNL=0 run_busted gpulua-no-onednn "$BIN" "$BUSTED" -p '^conv_spec' -p '^nn_spec' -p '^nn_forms_spec' \
    -p '^onednn_spec' -p '^onednn_layer_norm_spec' -p '^layers_spec' "$@"
fi

if [ -z "$GPULUA_ASAN" ] && [ -z "$GPULUA_ONLY_BIN" ]; then
  # the stock interpreter loads gpu.so from the repository root
  LUA_CPATH="./?.so;${LUA_CPATH:-;;}" GPULUA_HOST=lua5.4 run_busted lua5.4 "$LUA" "$BUSTED" "$@"

  echo "== embed"
  if make -s -C examples/embed > "$log/embed.out" 2>&1 && examples/embed/embed >> "$log/embed.out" 2>&1 \
     && grep -q '^embed: ok' "$log/embed.out"; then
    echo "embed: 1 passed, 0 failed"; passed=$((passed + 1))
  else
    cat "$log/embed.out"; echo "embed: 0 passed, 1 failed"; failed=$((failed + 1))
  fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
