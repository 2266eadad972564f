"""bench/routines.py — NumPy (CuPy on cuda) twin of bench/routines.lua (same case names):
einsum, unique, median and histogram, wall-clock, best and median of repeats of
>= MIN_TIME seconds."""
import os
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import emit, array_module, QUICK

MIN_TIME = 0.05 if QUICK else 0.2
REPEATS = 3 if QUICK else 7
GROUP = "routines"


def run(name, impl, fn, note, sync=lambda: None):
    try:
        fn(); sync()
    except Exception as e:  # a case that cannot run says why
        emit("result", GROUP, name, impl, "-", "-", "error: %s" % e)
        return
    t0 = time.perf_counter(); fn(); sync()
    iters = max(1, int(-(-MIN_TIME // max(time.perf_counter() - t0, 1e-7))))
    ts = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        ts.append((time.perf_counter() - t) / iters)
    ts.sort()
    emit("result", GROUP, name, impl, "%.1f" % (ts[0] * 1e9), "%.1f" % (ts[(REPEATS - 1) // 2] * 1e9), note)


def cases(np):
    rng = np.random.default_rng(1)
    a = rng.random((64, 128, 128), dtype=np.float32)
    b = rng.random((64, 128, 128), dtype=np.float32)
    n = 1000000 if QUICK else 10000000
    x = rng.standard_normal(n, dtype=np.float32)
    if hasattr(np, "asarray") and np.__name__ == "cupy":
        a, b, x = np.asarray(a), np.asarray(b), np.asarray(x)
    return [
        ("matmul bij,bjk 64x128x128", lambda: np.matmul(a, b), "np.matmul"),
        ("einsum bij,bjk->bik 64x128x128", lambda: np.einsum("bij,bjk->bik", a, b, optimize=True), "optimize=True"),
        ("einsum ij,jk,kl->il 128", lambda: np.einsum("ij,jk,kl->il", a[0], a[1], a[2], optimize="greedy"),
         "optimize='greedy'"),
        ("unique %g f32" % n, lambda: np.unique(x), "np.unique"),
        ("median %g f32" % n, lambda: np.median(x), "np.median (partition)"),
        ("histogram %g f32" % n, lambda: np.histogram(x, bins=100), "bins=100"),
    ]


xp, impl, _ = array_module()
if xp is not None:
    xsync = (lambda: xp.cuda.Device().synchronize()) if impl == "cupy" else (lambda: None)
    for name, fn, note in cases(xp):
        run(name, impl, fn, note, xsync)
