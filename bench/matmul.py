"""bench/matmul.py — NumPy (CuPy on cuda) / PyTorch twin of bench/matmul.lua (same case names):
float32 n x n matmul, wall-clock, best and median of repeats of >= MIN_TIME seconds."""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import emit, try_import, array_module, DEVICE, QUICK

MIN_TIME = 0.05 if QUICK else 0.25
REPEATS = 3 if QUICK else 7
SIZES = [int(s) for s in os.environ.get("BENCH_MATMUL_SIZES", "256 512 1024 2048 4096").replace(",", " ").split()]


def run(impl, n, mm, sync=lambda: None):
    name = "float32 matmul n=%d" % n
    mm(); sync()
    t0 = time.perf_counter(); mm(); sync()
    iters = max(1, int(-(-MIN_TIME // max(time.perf_counter() - t0, 1e-9))))
    ts = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        for _ in range(iters):
            mm()
        sync()
        ts.append((time.perf_counter() - t) / iters)
    ts.sort()
    best, med = ts[0], ts[(REPEATS - 1) // 2]
    emit("result", "matmul", name, impl, "%.1f" % (best * 1e9), "%.1f" % (med * 1e9),
         "%.1f GFLOP/s" % (2 * n ** 3 / best / 1e9))


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
