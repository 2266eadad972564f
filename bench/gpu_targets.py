"""bench/gpu_targets.py — PyTorch/CuPy twin of bench/gpu_targets.lua (the same figures as
"RESULT <lib> <figure> <value>" lines), then the table of all three against the GPU
targets:  python3 bench/gpu_targets.py [gpulua-results-file]
(the file holds gpu_targets.lua's RESULT lines; without it only torch and cupy are shown).
GB/s figures are device time from CUDA events, best of 10, over 2^28 float32; add1 is the
wall time per op of a 20000-op Python loop of a 1-element add."""
import os
import sys
import time

N = 2 ** int(os.environ.get("GPU_TARGETS_LOG2N", "28"))
GB = 4 * N / 1e9
MATMUL = os.environ.get("GPU_TARGETS_MATMUL") == "1"
results = {}


def result(lib, figure, value):
    results.setdefault(lib, {})[figure] = value
    print("RESULT %s %s %.4f" % (lib, figure, value), flush=True)


def best(n, f, event, elapsed_ms):
    s, e = event(), event()
    f()
    b = 1e30
    for _ in range(n):
        s.record(); f(); e.record(); e.synchronize()
        b = min(b, elapsed_ms(s, e))
    return b / 1e3


def loop_add1(x, y, sync):
    for _ in range(1000):
        x + y
    sync()
    t0 = time.perf_counter()
    for _ in range(20000):
        c = x + y
    sync()
    return (time.perf_counter() - t0) / 20000 * 1e6


def run_torch():
    import torch
    if not torch.cuda.is_available():
        return
    ev = lambda: torch.cuda.Event(enable_timing=True)
    el = lambda s, e: s.elapsed_time(e)
    a = torch.ones(N, device="cuda"); b = torch.ones(N, device="cuda")
    result("torch", "copy", 2 * GB / best(10, lambda: a.clone(), ev, el))
    result("torch", "add", 3 * GB / best(10, lambda: a + b, ev, el))
    result("torch", "sum", GB / best(10, lambda: a.sum(), ev, el))
    del a, b
    result("torch", "uniform", GB / best(10, lambda: torch.rand(N, device="cuda"), ev, el))
    result("torch", "normal", GB / best(10, lambda: torch.randn(N, device="cuda"), ev, el))
    torch.cuda.empty_cache()
    x = torch.ones(1, device="cuda"); y = torch.ones(1, device="cuda")
    result("torch", "add1", loop_add1(x, y, torch.cuda.synchronize))
    if MATMUL:
        torch.backends.cuda.matmul.allow_tf32 = False
        for dt, name in ((torch.float32, "matmul_f32"), (torch.bfloat16, "matmul_bf16")):
            m1 = torch.rand(8192, 8192, device="cuda", dtype=dt); m2 = torch.rand(8192, 8192, device="cuda", dtype=dt)
            result("torch", name, 2 * 8192 ** 3 / best(5, lambda: m1 @ m2, ev, el) / 1e12)
            del m1, m2
        torch.cuda.empty_cache()


def run_cupy():
    import cupy as cp
    ev = lambda: cp.cuda.Event()
    el = lambda s, e: cp.cuda.get_elapsed_time(s, e)
    a = cp.ones(N, cp.float32); b = cp.ones(N, cp.float32)
    result("cupy", "copy", 2 * GB / best(10, lambda: a.copy(), ev, el))
    result("cupy", "add", 3 * GB / best(10, lambda: a + b, ev, el))
    result("cupy", "sum", GB / best(10, lambda: a.sum(), ev, el))
    del a, b
    result("cupy", "uniform", GB / best(10, lambda: cp.random.random(N, dtype=cp.float32), ev, el))
    result("cupy", "normal", GB / best(10, lambda: cp.random.standard_normal(N, dtype=cp.float32), ev, el))
    cp.get_default_memory_pool().free_all_blocks()
    x = cp.ones(1, cp.float32); y = cp.ones(1, cp.float32)
    result("cupy", "add1", loop_add1(x, y, cp.cuda.Device().synchronize))


def fmt(lib, fig):
    v = results.get(lib, {}).get(fig)
    if v is None:
        return "-"
    if fig == "add1":
        return "%.2f us" % v
    if fig.startswith("matmul"):
        return "%.1f TF/s" % v
    copy = results.get(lib, {}).get("copy")
    pct = " (%d%%)" % round(100 * v / copy) if copy and fig != "copy" else ""
    return "%.0f GB/s%s" % (v, pct)


def verdict(fig):
    g = results.get("gpulua", {})
    v, copy = g.get(fig), g.get("copy")
    if v is None:
        return "-", "-"
    if fig in ("add", "sum", "uniform", "normal"):
        ok = copy is not None and v >= 0.8 * copy
        extra = ""
        if fig == "add" and "cupy" in results:
            ok = ok and v >= results["cupy"].get("add", 0)
            extra = " and >= CuPy"
        return ">= 80% of copy" + extra, "yes" if ok else "NO"
    if fig == "add1":
        lim = []
        if "cupy" in results:
            lim.append(("0.5x CuPy", 0.5 * results["cupy"]["add1"]))
        if "torch" in results:
            lim.append(("PyTorch", results["torch"]["add1"]))
        if not lim:
            return "<= 0.5x CuPy, <= PyTorch", "-"
        ok = all(v <= x for _, x in lim)
        return "<= " + ", <= ".join(n for n, _ in lim), "yes" if ok else "NO"
    if fig.startswith("matmul") and "torch" in results and fig in results["torch"]:
        return ">= 0.95x PyTorch", "yes" if v >= 0.95 * results["torch"][fig] else "NO"
    return "(reference)" if fig == "copy" else "-", ""


def table():
    figs = [("copy", "device copy 2^28 f32"), ("add", "add 2^28 f32"), ("sum", "sum 2^28 f32"),
            ("uniform", "rand 2^28 f32"), ("normal", "randn 2^28 f32"), ("add1", "1-element add, per op")]
    if MATMUL:
        figs += [("matmul_f32", "matmul 8192 f32"), ("matmul_bf16", "matmul 8192 bf16")]
    rows = [("figure", "gpulua", "PyTorch", "CuPy", "target", "met")]
    for fig, name in figs:
        t, ok = verdict(fig)
        rows.append((name, fmt("gpulua", fig), fmt("torch", fig), fmt("cupy", fig), t, ok))
    w = [max(len(r[i]) for r in rows) for i in range(6)]
    for k, r in enumerate(rows):
        print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")
        if k == 0:
            print("|" + "|".join("-" * (x + 2) for x in w) + "|")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        for line in open(sys.argv[1]):
            p = line.split()
            if len(p) == 4 and p[0] == "RESULT":
                results.setdefault(p[1], {})[p[2]] = float(p[3])
    for name, run in (("torch", run_torch), ("cupy", run_cupy)):
        try:
            run()
        except Exception as e:          # a missing or broken library leaves its column empty
            print("%s: skipped (%s: %s)" % (name, type(e).__name__, e), flush=True)
    print()
    table()
