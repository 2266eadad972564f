"""bench/gpu_targets.py — CuPy/PyTorch twin of bench/gpu_targets.lua (same lines)."""
import time
try:
    import torch
except Exception:
    torch = None
try:
    import cupy as cp
except Exception:
    cp = None

def best_torch(n, f):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    f(); b = 1e30
    for _ in range(n):
        s.record(); f(); e.record(); e.synchronize(); b = min(b, s.elapsed_time(e))
    return b / 1e3

N = 2 ** 28
if torch is not None and torch.cuda.is_available():
    a = torch.ones(N, device="cuda"); b = torch.ones(N, device="cuda")
    t = best_torch(10, lambda: a.clone()); print("torch copy 2^28 f32: %.0f GB/s" % (8 * N / t / 1e9))
    t = best_torch(10, lambda: a + b); print("torch add 2^28 f32: %.0f GB/s" % (12 * N / t / 1e9))
    t = best_torch(10, lambda: a.sum()); print("torch sum 2^28 f32: %.0f GB/s" % (4 * N / t / 1e9))
    del a, b
    x = torch.ones(1, device="cuda"); y = torch.ones(1, device="cuda")
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(20000): c = x + y
    torch.cuda.synchronize(); print("torch 1-element add: %.2f us/op" % ((time.perf_counter() - t0) / 20000 * 1e6))
    for dt in (torch.float32, torch.bfloat16):
        torch.backends.cuda.matmul.allow_tf32 = False
        m1 = torch.rand(8192, 8192, device="cuda", dtype=dt); m2 = torch.rand(8192, 8192, device="cuda", dtype=dt)
        t = best_torch(5, lambda: m1 @ m2); print("torch matmul 8192 %s: %.1f TFLOP/s" % (dt, 2 * 8192 ** 3 / t / 1e12))
if cp is not None:
    a = cp.ones(N, cp.float32); b = cp.ones(N, cp.float32)
    from cupyx.profiler import benchmark
    r = benchmark(lambda: a + b, n_repeat=10); print("cupy add 2^28 f32: %.0f GB/s" % (12 * N / r.gpu_times.min() / 1e9))
    r = benchmark(lambda: a.sum(), n_repeat=10); print("cupy sum 2^28 f32: %.0f GB/s" % (4 * N / r.gpu_times.min() / 1e9))
    del a, b
    x = cp.ones(1, cp.float32); y = cp.ones(1, cp.float32)
    cp.cuda.Device().synchronize(); t0 = time.perf_counter()
    for _ in range(20000): c = x + y
    cp.cuda.Device().synchronize(); print("cupy 1-element add: %.2f us/op" % ((time.perf_counter() - t0) / 20000 * 1e6))
