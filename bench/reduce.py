"""bench/reduce.py — NumPy / PyTorch twin of bench/reduce.lua (same case names).

PyTorch runs with its default thread count (torch.get_num_threads(), reported in the
notes); NumPy's reductions are single-threaded. timeit measures wall-clock time.
"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, DEVICE

np = try_import("numpy")
torch = try_import("torch")
N = 4096

if np is not None and DEVICE == "cpu":
    rng = np.random.default_rng(1)
    x = rng.random((N, N), dtype=np.float32)
    g = {"np": np, "x": x, "xt": x.T, "x64": x.astype(np.float64), "small": np.ones(1000, np.float32)}
    cases = [
        ("sum, all 4096x4096 f32", "x.sum()"),
        ("sum, axis 1 (down columns)", "x.sum(0)"),
        ("sum, axis 2 (along rows)", "x.sum(1)"),
        ("sum, axis 2 of the transpose", "xt.sum(1)"),
        ("sum, all f64", "x64.sum()"),
        ("mean, axis 2", "x.mean(1)"),
        ("var, axis 1", "x.var(0)"),
        ("max, all", "x.max()"),
        ("argmax, axis 2", "x.argmax(1)"),
        ("logsumexp, axis 2", "(lambda m: np.log(np.exp(x - m).sum(1)) + m[:, 0])(x.max(1, keepdims=True))"),
        ("norm, all", "np.linalg.norm(x)"),
        ("cumsum, axis 1", "x.cumsum(0)"),
        ("sum of 1000 (call overhead)", "small.sum()"),
    ]
    for name, stmt in cases:
        case(name, "numpy", stmt, globals=g)

if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(N, N, generator=gen).to(dev)
    sync = "torch.cuda.synchronize()" if dev == "cuda" else "None"
    g = {"torch": torch, "x": x, "xt": x.t(), "x64": x.double(), "small": torch.ones(1000, device=dev)}
    threads = " (%d thread%s)" % (torch.get_num_threads(), "s" if torch.get_num_threads() > 1 else "")
    cases = [
        ("sum, all 4096x4096 f32", "x.sum()"),
        ("sum, axis 1 (down columns)", "x.sum(0)"),
        ("sum, axis 2 (along rows)", "x.sum(1)"),
        ("sum, axis 2 of the transpose", "xt.sum(1)"),
        ("sum, all f64", "x64.sum()"),
        ("mean, axis 2", "x.mean(1)"),
        ("var, axis 1", "x.var(0, unbiased=False)"),
        ("max, all", "x.max()"),
        ("argmax, axis 2", "x.argmax(1)"),
        ("logsumexp, axis 2", "torch.logsumexp(x, 1)"),
        ("norm, all", "torch.linalg.norm(x)"),
        ("cumsum, axis 1", "x.cumsum(0)"),
        ("sum of 1000 (call overhead)", "small.sum()"),
    ]
    for name, stmt in cases:
        case(name, "torch", "%s; %s" % (stmt, sync), globals=g, note=stmt + threads)
