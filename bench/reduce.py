"""bench/reduce.py — NumPy (CuPy on cuda) / PyTorch twin of bench/reduce.lua (same case names):
reductions on a 4096 x 4096 float32 array, wall-clock, best and median of repeats of
>= MIN_TIME seconds (its own loop, as bench/reduce.lua: some cases take 0.5 s a call,
too long for bench.py's calibration that starts at 100 calls).

PyTorch runs with its default thread count (noted in each row); NumPy's reductions are
single-threaded.
"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import try_import, array_module, DEVICE, QUICK, once

N = 4096
run = once  # bench.py's once(): one call per fn(), wall time


def numpy_cases(np):
    """NumPy's cases, or CuPy's (np is then cupy: the same calls)."""
    x = np.random.default_rng(1).random((N, N), dtype=np.float32)
    xt, x64, small = x.T, x.astype(np.float64), np.ones(1000, np.float32)

    def lse(a):
        m = a.max(1, keepdims=True)
        return np.log(np.exp(a - m).sum(1)) + m[:, 0]
    return [
        ("sum, all 4096x4096 f32", lambda: x.sum(), "x.sum()"),
        ("sum, axis 1 (down columns)", lambda: x.sum(0), "x.sum(0)"),
        ("sum, axis 2 (along rows)", lambda: x.sum(1), "x.sum(1)"),
        ("sum, axis 2 of the transpose", lambda: xt.sum(1), "x.T.sum(1)"),
        ("sum, all f64", lambda: x64.sum(), "float64"),
        ("mean, axis 2", lambda: x.mean(1), "x.mean(1)"),
        ("var, axis 1", lambda: x.var(0), "x.var(0)"),
        ("max, all", lambda: x.max(), "x.max()"),
        ("argmax, axis 2", lambda: x.argmax(1), "x.argmax(1)"),
        ("logsumexp, axis 2", lambda: lse(x), "max-shifted, by hand"),
        ("norm, all", lambda: np.linalg.norm(x), "np.linalg.norm(x)"),
        ("cumsum, axis 1", lambda: x.cumsum(0), "x.cumsum(0)"),
        ("sum of 1000 (call overhead)", lambda: small.sum(), "small.sum()"),
    ]


def torch_cases(torch, dev):
    x = torch.rand(N, N, generator=torch.Generator().manual_seed(1)).to(dev)
    xt, x64, small = x.t(), x.double(), torch.ones(1000, device=dev)
    return [
        ("sum, all 4096x4096 f32", lambda: x.sum(), "x.sum()"),
        ("sum, axis 1 (down columns)", lambda: x.sum(0), "x.sum(0)"),
        ("sum, axis 2 (along rows)", lambda: x.sum(1), "x.sum(1)"),
        ("sum, axis 2 of the transpose", lambda: xt.sum(1), "x.t().sum(1)"),
        ("sum, all f64", lambda: x64.sum(), "float64"),
        ("mean, axis 2", lambda: x.mean(1), "x.mean(1)"),
        ("var, axis 1", lambda: x.var(0, unbiased=False), "x.var(0)"),
        ("max, all", lambda: x.max(), "x.max()"),
        ("argmax, axis 2", lambda: x.argmax(1), "x.argmax(1)"),
        ("logsumexp, axis 2", lambda: torch.logsumexp(x, 1), "torch.logsumexp(x, 1)"),
        ("norm, all", lambda: torch.linalg.norm(x), "torch.linalg.norm(x)"),
        ("cumsum, axis 1", lambda: x.cumsum(0), "x.cumsum(0)"),
        ("sum of 1000 (call overhead)", lambda: small.sum(), "small.sum()"),
    ]


xp, impl, _ = array_module()
torch = try_import("torch")
if xp is not None:
    xsync = (lambda: xp.cuda.Device().synchronize()) if impl == "cupy" else (lambda: None)
    for name, fn, note in numpy_cases(xp):
        run(name, impl, fn, note, xsync)
if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    nt = torch.get_num_threads()
    for name, fn, note in torch_cases(torch, dev):
        run(name, "torch", fn, "%s (%d thread%s)" % (note, nt, "s" if nt > 1 else ""), sync)
