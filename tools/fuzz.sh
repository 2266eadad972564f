#!/bin/sh
# tools/fuzz.sh — runs libFuzzer targets (build/fuzz/fuzz_<kind>, built by `make fuzz`
# and `make fuzz-ci`) for SECONDS each, from a corpus (build/fuzz/corpus/<kind>) seeded
# with the spec fixtures and every earlier find (spec/fixtures/fuzz/<prefix>-*).
# A crash, leak, timeout (10 s on one input) or huge allocation leaves its input in
# build/fuzz/<kind>-crash-* (-leak-, -timeout-, -oom-): fix it and keep the input as
# spec/fixtures/fuzz/<prefix>-<what> (spec/io_spec.lua loads those).
#
# usage: tools/fuzz.sh [-k] SECONDS KIND...
#   without -k it stops at the first target that finds something (make fuzz); with -k
#   every target runs, one test each, and the last line is "N passed, N failed" (CI).
keep_going=0
[ "$1" = "-k" ] && { keep_going=1; shift; }
seconds=$1; shift
passed=0; failed=0

seeds() {
  case $1 in
    npy) ls spec/fixtures/npy/*.npy spec/fixtures/fuzz/npy-* ;;
    npz) ls spec/fixtures/npy/*.npz spec/fixtures/fuzz/npz-* ;;
    safetensors) ls spec/fixtures/npy/*.safetensors spec/fixtures/fuzz/st-* ;;
    text) ls spec/fixtures/npy/*.txt spec/fixtures/npy/*.csv spec/fixtures/fuzz/txt-* ;;
    idx) ls spec/fixtures/fuzz/idx-* ;;
    png) ls spec/fixtures/png/*.png spec/fixtures/fuzz/png-* ;;
  esac 2>/dev/null
}

# IDX has no fixture files (spec/data_spec.lua writes its own): a few small files, in
# fuzz_idx's form (first byte even: the file as is; odd: gzip-compressed by the target)
idx_seeds() {
  printf '\000\000\000\010\002\000\000\000\002\000\000\000\003\001\002\003\004\005\377' > "$1/seed-u8"
  printf '\001\000\000\010\002\000\000\000\002\000\000\000\003\001\002\003\004\005\377' > "$1/seed-u8-gz"
  printf '\001\000\000\014\001\000\000\000\002\000\000\000\001\377\377\377\376' > "$1/seed-i32-gz"
  printf '\000\000\000\015\001\000\000\000\001\077\300\000\000' > "$1/seed-f32"
}

for kind in "$@"; do
  corpus=build/fuzz/corpus/$kind
  mkdir -p "$corpus"
  for f in $(seeds "$kind"); do [ -f "$f" ] && cp "$f" "$corpus/"; done
  [ "$kind" = idx ] && idx_seeds "$corpus"
  log=build/fuzz/$kind.log
  stamp=build/fuzz/$kind.stamp
  touch "$stamp"
  echo "== fuzz_$kind for ${seconds}s"
  status=0
  build/fuzz/fuzz_$kind -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix=build/fuzz/$kind- "$corpus" > "$log" 2>&1 || status=$?
  grep -E '^(Done|stat::new_units_added|stat::peak_rss_mb|SUMMARY)' "$log"
  found=$(find build/fuzz -maxdepth 1 -newer "$stamp" \( -name "$kind-crash-*" -o -name "$kind-leak-*" \
          -o -name "$kind-timeout-*" -o -name "$kind-oom-*" \) | head -5)
  if [ "$status" -ne 0 ] || [ -n "$found" ]; then
    tail -40 "$log"
    echo "fuzz_$kind: FAILED (status $status) ${found:+found: $found}"
    failed=$((failed + 1))
    [ "$keep_going" -eq 1 ] || exit 1
  else
    echo "fuzz_$kind: ok"
    passed=$((passed + 1))
  fi
done
if [ "$keep_going" -eq 1 ]; then
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
else
  echo "fuzz: no crash, hang, leak or huge allocation found"
fi
