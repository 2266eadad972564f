"""bench/lib/bench.py — timing helpers for the Python twins (NumPy or CuPy, PyTorch).

A twin (bench/<group>.py) calls case(name, impl, stmt, setup) for each case, with the
same case names as the Lua file, so the report puts them in one row. Times are ns per
iteration, best and median of several timeit repeats, minus the cost of timing `pass`
the same number of times. Output: the tab-separated records of bench/lib/bench.lua.

bench/run.sh runs each twin under Debian's python3 and again under the benchmarks' own
virtual environment (bench/venv.sh: the newest NumPy, SciPy, PyTorch from PyPI) with
GPULUA_BENCH_PYTAG=pypi; then every result's column is prefixed with the tag ("pypi numpy"),
and native() and twins that time no Python library (startup.py) do not run again.
"""
import os
import statistics
import sys
import timeit

DEVICE = os.environ.get("GPULUA_BENCH_DEVICE", "cpu")
QUICK = os.environ.get("BENCH_QUICK") == "1"
MIN_TIME = 0.01 if QUICK else 0.05
REPEATS = 3 if QUICK else 7
GROUP = os.path.splitext(os.path.basename(sys.argv[0]))[0]
PYTAG = os.environ.get("GPULUA_BENCH_PYTAG", "")


def emit(*fields):
    if PYTAG and fields[0] == "result":
        fields = fields[:3] + ("%s %s" % (PYTAG, fields[3]),) + fields[4:]
    print("\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in fields), flush=True)


def _per_iter(timer, n):
    ts = sorted(t / n * 1e9 for t in timer.repeat(REPEATS, n))
    return ts[0], ts[(REPEATS - 1) // 2]


def _calibrate(timer):
    n = 100
    while timer.timeit(n) < MIN_TIME:
        n *= 4
    return n


_empty = timeit.Timer("pass")
_overhead = _per_iter(_empty, _calibrate(_empty))[0]


def case(name, impl, stmt, setup="pass", note=None, globals=None):
    """Times `stmt` (a string, run after `setup`) and emits one result record."""
    try:
        timer = timeit.Timer(stmt, setup, globals=globals)
        timer.timeit(1)
    except Exception as e:  # a case that cannot run says why
        emit("result", GROUP, name, impl, "-", "-", "error: %s" % e)
        return
    best, med = _per_iter(timer, _calibrate(timer))
    emit("result", GROUP, name, impl, "%.1f" % (best - _overhead), "%.1f" % (med - _overhead),
         note if note is not None else stmt)


def once(name, impl, fn, note, sync=lambda: None, min_time=0.2):
    """For ops of milliseconds to seconds a call (bench.lua's B.once): fn() runs the op
    once; each repeat runs it enough times to last min_time (0.05 s with BENCH_QUICK=1);
    wall time per call, best and median, no loop overhead subtracted. note: a string, or a
    function of the best time per call (seconds) that returns it."""
    import time
    min_time = 0.05 if QUICK else min_time
    try:
        fn(); sync()
    except Exception as e:  # a case that cannot run says why
        emit("result", GROUP, name, impl, "-", "-", "error: %s" % e)
        return
    t0 = time.perf_counter(); fn(); sync()
    iters = max(1, int(-(-min_time // max(time.perf_counter() - t0, 1e-7))))
    ts = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        ts.append((time.perf_counter() - t) / iters)
    ts.sort()
    if callable(note):
        note = note(ts[0])
    emit("result", GROUP, name, impl, "%.1f" % (ts[0] * 1e9), "%.1f" % (ts[(REPEATS - 1) // 2] * 1e9), note)


def native(source, cflags=(), libs=()):
    """Compiles bench/<source> (a C program that prints its own records: the machine's or a
    library's own ceiling for a case) with cc, runs it and passes its records on. Only in
    the first Python's run: a second one would measure the same program again. Returns
    False (with a line on stderr) when it cannot be built or fails."""
    import subprocess, tempfile
    if PYTAG:
        return True
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), source)
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, os.path.splitext(source)[0])
        cmd = ["cc", "-O3", "-march=native", *cflags, path, "-o", exe, *libs]
        if subprocess.call(cmd) != 0:
            print("bench: could not build %s (%s)" % (source, " ".join(cmd)), file=sys.stderr)
            return False
        run = subprocess.run([exe], stdout=subprocess.PIPE, text=True)
        sys.stdout.write(run.stdout)
        sys.stdout.flush()
        return run.returncode == 0


def try_import(name):
    """The module (a submodule for a dotted name), or None where it is not installed."""
    import importlib
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def array_module():
    """The NumPy-style module of the run's device, its column name and a statement that
    waits for its device: NumPy on the cpu, CuPy on cuda (None where it is missing)."""
    if DEVICE == "cpu":
        return try_import("numpy"), "numpy", "pass"
    cp = try_import("cupy")
    try:
        if cp is not None and cp.cuda.runtime.getDeviceCount() > 0:
            return cp, "cupy", "xp.cuda.Device().synchronize()"
    except Exception:
        pass
    return None, "cupy", "pass"
