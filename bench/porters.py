"""bench/porters.py — SciPy / NumPy / PyTorch twin of bench/porters.lua (same case names):
scipy.special and torch.special's erfinv, gammaln, digamma of 1e7 float32; NumPy's
Generator and PyTorch's samplers for 1e7 poisson, gamma, binomial, multinomial draws;
torch.index_add / torch.scatter_reduce and NumPy's ufunc.at of 1e7 float32 into 1e4.
Wall-clock, best and median of repeats of >= 0.2 s (bench.py's once). CPU only: on cuda
nothing runs (the Lua side's cases have no GPU anchors here)."""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import try_import, QUICK, DEVICE, once

np = try_import("numpy")
special = try_import("scipy.special")
torch = try_import("torch")
N = 1000000 if QUICK else 10000000
NAME = "1e6" if QUICK else "1e7"
M = 10000

if DEVICE == "cpu" and np is not None:
    rng = np.random.default_rng(1)
    u = rng.uniform(-1, 1, N).astype(np.float32)
    x = rng.uniform(0.1, 20.1, N).astype(np.float32)
    src = rng.random(N, dtype=np.float32)
    idx = rng.integers(0, M, N)
    dst = np.zeros(M, dtype=np.float32)
    pv = [0.1, 0.2, 0.3, 0.4]
    w = np.arange(1, 101, dtype=np.float64)
    w /= w.sum()

    if special is not None:
        once("erfinv %s f32" % NAME, "scipy", lambda: special.erfinv(u), "scipy.special.erfinv")
        once("gammaln %s f32" % NAME, "scipy", lambda: special.gammaln(x), "scipy.special.gammaln")
        once("digamma %s f32" % NAME, "scipy", lambda: special.digamma(x), "scipy.special.digamma")

    once("poisson(4) %s" % NAME, "numpy", lambda: rng.poisson(4, N), "default_rng().poisson")
    once("poisson(100) %s" % NAME, "numpy", lambda: rng.poisson(100, N), "default_rng().poisson")
    once("gamma(2.5) %s f32" % NAME, "numpy", lambda: rng.standard_gamma(2.5, N, dtype=np.float32),
         "standard_gamma(dtype=float32)")
    once("binomial(20, 0.3) %s" % NAME, "numpy", lambda: rng.binomial(20, 0.3, N), "default_rng().binomial")
    once("binomial(1000, 0.4) %s" % NAME, "numpy", lambda: rng.binomial(1000, 0.4, N), "BTPE")
    once("multinomial(10, pvals[4]) %s" % NAME, "numpy", lambda: rng.multinomial(10, pv, N),
         "default_rng().multinomial")
    once("multinomial(w[100], %s, replacement)" % NAME, "numpy", lambda: rng.choice(100, N, p=w),
         "default_rng().choice(100, N, p=w)")

    def ufunc_at(f):
        def run():
            d = dst.copy()
            f.at(d, idx, src)
            return d
        return run
    once("index_add %s -> 1e4 f32" % NAME, "numpy", ufunc_at(np.add), "np.add.at")
    once("scatter_reduce sum %s -> 1e4 f32" % NAME, "numpy", ufunc_at(np.add), "np.add.at")
    once("scatter_reduce amax %s -> 1e4 f32" % NAME, "numpy", ufunc_at(np.maximum), "np.maximum.at")

if DEVICE == "cpu" and torch is not None and np is not None:
    tu, tx = torch.from_numpy(u), torch.from_numpy(x)
    once("erfinv %s f32" % NAME, "torch", lambda: torch.special.erfinv(tu), "torch.special.erfinv")
    once("gammaln %s f32" % NAME, "torch", lambda: torch.special.gammaln(tx), "torch.special.gammaln")
    once("digamma %s f32" % NAME, "torch", lambda: torch.special.digamma(tx), "torch.special.digamma")

    lam4, lam100 = torch.full((N,), 4.0), torch.full((N,), 100.0)
    once("poisson(4) %s" % NAME, "torch", lambda: torch.poisson(lam4), "torch.poisson (float32 counts)")
    once("poisson(100) %s" % NAME, "torch", lambda: torch.poisson(lam100), "torch.poisson (float32 counts)")
    shape = torch.full((N,), 2.5)
    once("gamma(2.5) %s f32" % NAME, "torch", lambda: torch._standard_gamma(shape), "torch._standard_gamma")
    c20, p03 = torch.full((N,), 20.0), torch.full((N,), 0.3)
    c1000, p04 = torch.full((N,), 1000.0), torch.full((N,), 0.4)
    once("binomial(20, 0.3) %s" % NAME, "torch", lambda: torch.binomial(c20, p03), "torch.binomial (float32)")
    once("binomial(1000, 0.4) %s" % NAME, "torch", lambda: torch.binomial(c1000, p04), "torch.binomial (float32)")
    tw = torch.arange(1, 101, dtype=torch.float32)
    once("multinomial(w[100], %s, replacement)" % NAME, "torch", lambda: torch.multinomial(tw, N, True),
         "torch.multinomial")

    tsrc, tidx, tdst = torch.from_numpy(src), torch.from_numpy(idx), torch.from_numpy(dst)
    once("index_add %s -> 1e4 f32" % NAME, "torch", lambda: torch.index_add(tdst, 0, tidx, tsrc), "torch.index_add")
    once("scatter_reduce sum %s -> 1e4 f32" % NAME, "torch", lambda: torch.scatter_reduce(tdst, 0, tidx, tsrc, "sum"),
         "torch.scatter_reduce")
    once("scatter_reduce amax %s -> 1e4 f32" % NAME, "torch",
         lambda: torch.scatter_reduce(tdst, 0, tidx, tsrc, "amax"), "torch.scatter_reduce")
