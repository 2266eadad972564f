"""bench/routines.py — NumPy (CuPy on cuda) twin of bench/routines.lua (same case names):
einsum, sort, argsort, unique, median, histogram, isin and intersect1d, wall-clock, best and median of repeats of
>= 0.2 s (bench.py's once)."""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import array_module, QUICK, once

run = once  # bench.py's once(): one call per fn(), wall time


def cases(np):
    rng = np.random.default_rng(1)
    a = rng.random((64, 128, 128), dtype=np.float32)
    b = rng.random((64, 128, 128), dtype=np.float32)
    n = 1000000 if QUICK else 10000000
    x = rng.standard_normal(n, dtype=np.float32)
    sa = np.random.default_rng(1).integers(0, 2000000, 1000000)
    sb = np.random.default_rng(2).integers(0, 2000000, 1000000)
    if hasattr(np, "asarray") and np.__name__ == "cupy":
        a, b, x = np.asarray(a), np.asarray(b), np.asarray(x)
        sa, sb = np.asarray(sa), np.asarray(sb)
    return [
        ("matmul bij,bjk 64x128x128", lambda: np.matmul(a, b), "np.matmul"),
        ("einsum bij,bjk->bik 64x128x128", lambda: np.einsum("bij,bjk->bik", a, b, optimize=True), "optimize=True"),
        ("einsum ij,jk,kl->il 128", lambda: np.einsum("ij,jk,kl->il", a[0], a[1], a[2], optimize="greedy"),
         "optimize='greedy'"),
        ("sort %g f32" % n, lambda: np.sort(x), "np.sort"),
        ("argsort %g f32" % n, lambda: np.argsort(x, kind="stable"), "np.argsort(kind='stable')"),
        ("unique %g f32" % n, lambda: np.unique(x), "np.unique"),
        ("median %g f32" % n, lambda: np.median(x), "np.median (partition)"),
        ("histogram %g f32" % n, lambda: np.histogram(x, bins=100), "bins=100"),
        ("isin 1e6 int64", lambda: np.isin(sa, sb), "np.isin"),
        ("intersect1d 1e6 int64", lambda: np.intersect1d(sa, sb), "np.intersect1d"),
    ]


xp, impl, _ = array_module()
if xp is not None:
    xsync = (lambda: xp.cuda.Device().synchronize()) if impl == "cupy" else (lambda: None)
    for name, fn, note in cases(xp):
        run(name, impl, fn, note, xsync)
