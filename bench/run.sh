#!/bin/sh
# bench/run.sh — runs every benchmark group and writes bench/RESULTS.md.
# usage: bench/run.sh [./gpulua]
# env:   GPULUA_BENCH_DEVICE=cpu|cuda (default cpu), BENCH_GROUPS="g1 g2" (only those),
#        BENCH_QUICK=1 (fewer, shorter repeats), BENCH_OUT=file (default bench/RESULTS.md;
#        "-" to write none), BENCH_VENV=dir (default .venv-bench; "none": Debian's
#        Python only).
#
# A group is bench/<group>.lua and/or bench/<group>.py: the Lua file runs under the
# gpulua under test and under the stock lua5.4 with gpu.so; the Python twin runs the
# same cases with NumPy / SciPy / PyTorch when they are installed (skipped otherwise),
# twice: under Debian's python3 (NumPy 1.24) and under the benchmarks' own virtual
# environment with the newest releases from PyPI (bench/venv.sh makes it on first use;
# its columns are named "pypi numpy", "pypi torch"...). All print tab-separated records
# (bench/lib/bench.lua) that bench/lib/report.py turns into tables.
# To add cases: add B.case(...) lines to a group, or a new bench/<group>.lua (+ .py).
# char_lm, gpu_linalg and gpu_targets are not groups: their own drivers run them
# (bench/char_lm.sh; make bench-gpu).
set -eu
BIN=${1:-./gpulua}
DEVICE=${GPULUA_BENCH_DEVICE:-cpu}
OUT=${BENCH_OUT:-bench/RESULTS.md}
export GPULUA_BENCH_DEVICE="$DEVICE"

# measure a private copy, so a rebuild during the run cannot change what is measured
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$BIN" "$tmp/gpulua"
[ -f gpu.so ] && cp gpu.so "$tmp/gpu.so"
records="$tmp/records.tsv"
done_groups=
failures=

# a python3 with NumPy if there is one (pyenv's may lack it; Debian's python3-numpy is
# for /usr/bin/python3)
PY=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { PY=$(command -v python3 || true); echo "bench: NumPy not found (make deps installs python3-numpy): NumPy columns skipped"; }
[ -n "$PY" ] || { echo "bench: python3 is needed to run the benchmarks" >&2; exit 1; }

# the newest NumPy, SciPy, PyTorch from PyPI, in a virtual environment of the benchmarks'
# own (nothing else uses it); without one (no network) only Debian's columns are shown
VENV=${BENCH_VENV:-.venv-bench}
VPY=
if [ "$VENV" != none ]; then
  if out=$(sh bench/venv.sh "$VENV"); then VPY=$(printf '%s\n' "$out" | tail -1)
  else echo "bench: no $VENV (bench/venv.sh failed): PyPI columns skipped"; fi
fi

info() { printf 'info\t%s\t%s\n' "$1" "$2" >> "$records"; }
info date "$(date -u '+%Y-%m-%d %H:%M UTC')"
info machine "$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores ($(uname -m), $(uname -r))"
info gpulua "$("$tmp/gpulua" --version 2>&1 | head -1), $("$tmp/gpulua" -e 'local b = gpu.config().build; io.write("cuda=", tostring(b.cuda), " openmp=", tostring(b.openmp), " ", b.compiler)')"
info device "$DEVICE"
versions() {   # "3.11.2; numpy 1.24.2, scipy 1.10.1, torch not installed, ..."
  "$1" -c 'import importlib, sys
out = []
for m in ("numpy", "scipy", "torch", "pyfftw"):
    try:
        out.append("%s %s" % (m, importlib.import_module(m).__version__))
    except Exception:
        out.append("%s not installed" % m)
print("%s; %s" % (sys.version.split()[0], ", ".join(out)))' 2>/dev/null
}
info "python ($PY)" "$(versions "$PY")"
[ -z "$VPY" ] || info "python ($VENV, the columns \"pypi ...\")" "$(versions "$VPY")"
info fftw "$(pkg-config --modversion fftw3f 2>/dev/null || echo 'not found') (bench/fftw_direct.c, column \"FFTW\")"

for f in bench/*.lua bench/*.py; do
  [ -e "$f" ] || continue
  g=$(basename "${f%.*}")
  case " $done_groups char_lm gpu_linalg gpu_targets " in *" $g "*) continue ;; esac
  if [ -n "${BENCH_GROUPS:-}" ]; then            # BENCH_GROUPS="a b": only those groups
    case " $BENCH_GROUPS " in *" $g "*) ;; *) continue ;; esac
  fi
  done_groups="$done_groups $g"
  echo "== $g"
  # a group that dies is reported and the others still run
  if [ -f "bench/$g.lua" ]; then
    GPULUA_BENCH_IMPL=gpulua "$tmp/gpulua" "bench/$g.lua" >> "$records" || failures="$failures $g(gpulua)"
    if [ -f "$tmp/gpu.so" ] && command -v lua5.4 >/dev/null 2>&1; then
      GPULUA_BENCH_IMPL=lua5.4+gpu.so LUA_CPATH="$tmp/?.so;;" lua5.4 "bench/$g.lua" >> "$records" \
        || failures="$failures $g(lua5.4)"
    fi
  fi
  if [ -f "bench/$g.py" ]; then
    GPULUA_BENCH_BIN="$tmp/gpulua" GPULUA_BENCH_SO_DIR="$tmp" "$PY" "bench/$g.py" >> "$records" \
      || failures="$failures $g(python)"
    if [ -n "$VPY" ]; then
      GPULUA_BENCH_PYTAG=pypi GPULUA_BENCH_BIN="$tmp/gpulua" GPULUA_BENCH_SO_DIR="$tmp" "$VPY" "bench/$g.py" \
        >> "$records" || failures="$failures $g(pypi python)"
    fi
  fi
done

echo
if [ "$OUT" = - ]; then "$PY" bench/lib/report.py "$records"
else
  # everything from "## Recorded runs" on (GPU sessions, written by hand) is kept
  kept="$tmp/kept.md"
  [ -f "$OUT" ] && sed -n '/^## Recorded runs/,$p' "$OUT" > "$kept" || : > "$kept"
  "$PY" bench/lib/report.py --markdown "$OUT" "$records"
  if [ -s "$kept" ]; then printf '\n' >> "$OUT"; cat "$kept" >> "$OUT"; fi
  echo "(written to $OUT)"
fi
if [ -n "$failures" ]; then echo "bench: these runs failed:$failures" >&2; exit 1; fi
