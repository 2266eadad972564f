"""bench/matmul.py — NumPy (CuPy on cuda) / PyTorch twin of bench/matmul.lua (same case names):
float32 n x n matmul, wall-clock, best and median of repeats of >= 0.25 s (0.05 s with BENCH_QUICK=1)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import once, try_import, array_module, DEVICE

SIZES = [int(s) for s in os.environ.get("BENCH_MATMUL_SIZES", "256 512 1024 2048 4096").replace(",", " ").split()]


def run(impl, n, mm, sync=lambda: None):
    once("float32 matmul n=%d" % n, impl, mm, lambda best: "%.1f GFLOP/s" % (2 * n ** 3 / best / 1e9), sync,
         min_time=0.25)


xp, impl, _ = array_module()
torch = try_import("torch")
xsync = (lambda: xp.cuda.Device().synchronize()) if impl == "cupy" else (lambda: None)
for n in SIZES:
    if xp is not None:
        a = xp.random.rand(n, n).astype(xp.float32)
        b = xp.ones((n, n), xp.float32)
        run(impl, n, lambda: a @ b, xsync)
    if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
        dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
        ta = torch.rand(n, n, device=dev)
        tb = torch.ones(n, n, device=dev)
        run("torch", n, lambda: ta @ tb, torch.cuda.synchronize if dev == "cuda" else (lambda: None))
