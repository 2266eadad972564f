#!/bin/sh
# bench/venv.sh — the virtual environment of the benchmarks' newest baselines: NumPy, SciPy,
# PyTorch and pyFFTW as PyPI has them today, beside Debian's python3-numpy (which
# bench/run.sh runs too, as its own columns). Used by the benchmarks only: neither the
# product nor its tests import anything from it.
# usage: sh bench/venv.sh [dir]   (default .venv-bench; env PYTHON: the python3 to base it
# on). Prints the environment's python on its last line; exits 1 when NumPy cannot be
# installed (then bench/run.sh runs Debian's columns only). Each package is tried on its
# own, so a missing wheel costs only its own columns. PyTorch: the CPU-only wheel from
# download.pytorch.org when that index answers, else PyPI's (which pulls the CUDA runtime
# wheels, a few GB).
set -u
DIR=${1:-.venv-bench}
PYTHON=${PYTHON:-python3}
VPY="$DIR/bin/python"

log() { echo "venv: $*" >&2; }

if [ ! -x "$VPY" ]; then
  "$PYTHON" -m venv "$DIR" || { log "could not create $DIR with $PYTHON -m venv"; exit 1; }
  "$VPY" -m pip install -q --upgrade pip >&2 || log "pip upgrade failed (continuing with the bundled one)"
fi

have() { "$VPY" -c "import $1" 2>/dev/null; }
# short timeouts: without a network every package fails in seconds, not minutes
pip_install() { "$VPY" -m pip install -q --disable-pip-version-check --retries 1 --timeout 15 "$@" >&2; }

for pkg in numpy scipy pyfftw; do
  have "$pkg" || pip_install "$pkg" || log "could not install $pkg (its columns are skipped)"
done
if ! have torch; then
  pip_install --index-url https://download.pytorch.org/whl/cpu torch 2>/dev/null \
    || pip_install torch || log "could not install torch (its columns are skipped)"
fi

have numpy || { log "NumPy is missing from $DIR"; exit 1; }
"$VPY" -c 'import importlib
for m in ("numpy", "scipy", "torch", "pyfftw"):
    try:
        v = importlib.import_module(m).__version__
    except Exception:
        v = "not installed"
    print("venv: %s %s" % (m, v))' >&2
echo "$VPY"
