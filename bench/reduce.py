"""bench/reduce.py — NumPy (CuPy on cuda) / PyTorch twin of bench/reduce.lua (same case names):
reductions on a 4096 x 4096 float32 array, wall-clock, best and median of repeats of
>= MIN_TIME seconds (its own loop, as bench/reduce.lua: some cases take 0.5 s a call,
too long for bench.py's calibration that starts at 100 calls).

PyTorch runs with its default thread count (noted in each row); NumPy's reductions are
single-threaded.
"""
import os
import sys
from types import SimpleNamespace
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import try_import, array_module, DEVICE, QUICK, once

N = 4096
run = once  # bench.py's once(): one call per fn(), wall time


def lse_by_hand(np, a):
    m = a.max(1, keepdims=True)
    return np.log(np.exp(a - m).sum(1)) + m[:, 0]


# The cases, in bench/reduce.lua's order and names: (name, call, note), or (name, NumPy's call,
# its note, PyTorch's call, its note) where the two differ. A call takes v: the library as
# v.lib and its arrays v.x (N x N float32), v.xt (its transpose), v.x64 (float64), v.small.
CASES = [
    ("sum, all 4096x4096 f32", lambda v: v.x.sum(), "x.sum()"),
    ("sum, axis 1 (down columns)", lambda v: v.x.sum(0), "x.sum(0)"),
    ("sum, axis 2 (along rows)", lambda v: v.x.sum(1), "x.sum(1)"),
    ("sum, axis 2 of the transpose", lambda v: v.xt.sum(1), "x.T.sum(1)", lambda v: v.xt.sum(1), "x.t().sum(1)"),
    ("sum, all f64", lambda v: v.x64.sum(), "float64"),
    ("mean, axis 2", lambda v: v.x.mean(1), "x.mean(1)"),
    ("var, axis 1", lambda v: v.x.var(0), "x.var(0)", lambda v: v.x.var(0, unbiased=False), "x.var(0)"),
    ("max, all", lambda v: v.x.max(), "x.max()"),
    ("argmax, axis 2", lambda v: v.x.argmax(1), "x.argmax(1)"),
    ("logsumexp, axis 2", lambda v: lse_by_hand(v.lib, v.x), "max-shifted, by hand",
     lambda v: v.lib.logsumexp(v.x, 1), "torch.logsumexp(x, 1)"),
    ("norm, all", lambda v: v.lib.linalg.norm(v.x), "np.linalg.norm(x)",
     lambda v: v.lib.linalg.norm(v.x), "torch.linalg.norm(x)"),
    ("cumsum, axis 1", lambda v: v.x.cumsum(0), "x.cumsum(0)"),
    ("sum of 1000 (call overhead)", lambda v: v.small.sum(), "small.sum()"),
]


def cases(v, torch_side):
    """(name, fn, note) of every case over the arrays v, NumPy's (or CuPy's) or PyTorch's."""
    for c in CASES:
        name, fn, note = (c[0], c[3], c[4]) if torch_side and len(c) > 3 else c[:3]
        yield name, (lambda fn=fn: fn(v)), note


xp, impl, _ = array_module()
torch = try_import("torch")
if xp is not None:
    xsync = (lambda: xp.cuda.Device().synchronize()) if impl == "cupy" else (lambda: None)
    x = xp.random.default_rng(1).random((N, N), dtype=xp.float32)
    v = SimpleNamespace(lib=xp, x=x, xt=x.T, x64=x.astype(xp.float64), small=xp.ones(1000, xp.float32))
    for name, fn, note in cases(v, False):
        run(name, impl, fn, note, xsync)
if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    nt = torch.get_num_threads()
    x = torch.rand(N, N, generator=torch.Generator().manual_seed(1)).to(dev)
    v = SimpleNamespace(lib=torch, x=x, xt=x.t(), x64=x.double(), small=torch.ones(1000, device=dev))
    for name, fn, note in cases(v, True):
        run(name, "torch", fn, "%s (%d thread%s)" % (note, nt, "s" if nt > 1 else ""), sync)
