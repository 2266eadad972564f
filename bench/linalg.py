"""bench/linalg.py — NumPy twin of bench/linalg.lua (same case names): solve, inv,
cholesky, qr, svd, eigh of n x n float64 matrices and a batched solve of 10,000 3x3
systems; wall-clock, best and median of repeats of >= 0.2 s (bench.py's once)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import array_module, once

SIZES = [int(s) for s in os.environ.get("BENCH_LINALG_SIZES", "256 1024").replace(",", " ").split()]


def run(impl, name, fn):
    once(name, impl, fn, "")


xp, impl, _ = array_module()
if xp is not None:
    la = xp.linalg
    rng = xp.random
    for n in SIZES:
        a = rng.rand(n, n) + n * xp.eye(n)
        spd = a @ a.T + n * xp.eye(n)
        b = rng.rand(n, 1)
        tag = " n=%d float64" % n
        run(impl, "solve" + tag, lambda: la.solve(a, b))
        run(impl, "inv" + tag, lambda: la.inv(a))
        run(impl, "cholesky" + tag, lambda: la.cholesky(spd))
        run(impl, "qr" + tag, lambda: la.qr(a))
        run(impl, "svd" + tag, lambda: la.svd(a))
        run(impl, "eigh" + tag, lambda: la.eigh(spd))
    a3 = rng.rand(10000, 3, 3) + 3 * xp.eye(3)
    b3 = rng.rand(10000, 3, 1)
    run(impl, "solve batch 10000x3x3 float64", lambda: la.solve(a3, b3))
