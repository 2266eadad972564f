"""bench/gpu_linalg.py — PyTorch twin of bench/gpu_linalg.lua (torch.linalg on the GPU,
the same cases, "RESULT torch <op>_<dtype>_<n> <seconds>"), then the table of both with
the target: gpulua at least 0.9x torch's speed (time ratio gpulua / torch <= 1.11).
    python3 bench/gpu_linalg.py [gpulua-results-file]"""
import sys
import time

results = {}


def result(lib, fig, v):
    results.setdefault(lib, {})[fig] = v
    print("RESULT %s %s %.6f" % (lib, fig, v), flush=True)


def run_torch():
    import torch
    if not torch.cuda.is_available():
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    for dt, tdt in (("float32", torch.float32), ("float64", torch.float64)):
        for n in (256, 1024):
            g = torch.Generator(device="cuda").manual_seed(n)
            a = torch.rand(n, n, generator=g, device="cuda", dtype=tdt) * 2 - 1 + n * torch.eye(n, device="cuda", dtype=tdt)
            spd = a @ a.T
            b = torch.rand(n, n, generator=g, device="cuda", dtype=tdt) * 2 - 1
            cases = {
                "solve": lambda: torch.linalg.solve(a, b),
                "inv": lambda: torch.linalg.inv(a),
                "cholesky": lambda: torch.linalg.cholesky(spd),
                "qr": lambda: torch.linalg.qr(a),
                "svd": lambda: torch.linalg.svd(a, full_matrices=False),
                "eigh": lambda: torch.linalg.eigh(spd),
            }
            for op in ("solve", "inv", "cholesky", "qr", "svd", "eigh"):
                f = cases[op]
                f(); torch.cuda.synchronize()
                best = 1e30
                for _ in range(3):
                    t0 = time.perf_counter(); f(); torch.cuda.synchronize()
                    best = min(best, time.perf_counter() - t0)
                result("torch", "%s_%s_%d" % (op, dt, n), best)


def main():
    if len(sys.argv) > 1:
        for line in open(sys.argv[1]):
            p = line.split()
            if len(p) == 4 and p[0] == "RESULT":
                results.setdefault(p[1], {})[p[2]] = float(p[3])
    try:
        run_torch()
    except Exception as e:  # noqa: BLE001 - report and still print the table
        print("torch failed: %r" % (e,))
    g, t = results.get("gpulua", {}), results.get("torch", {})
    print("\n| case | gpulua ms | torch ms | speed vs torch (>= 0.9) |")
    print("|---|---:|---:|---:|")
    met = total = 0
    for fig in sorted(set(g) | set(t)):
        gv, tv = g.get(fig), t.get(fig)
        ratio = tv / gv if gv and tv else None
        if ratio is not None:
            total += 1
            met += ratio >= 0.9
        print("| %s | %s | %s | %s |" % (fig, "%.3f" % (gv * 1e3) if gv else "-", "%.3f" % (tv * 1e3) if tv else "-",
                                        "%.2fx%s" % (ratio, "" if ratio >= 0.9 else " MISSED") if ratio else "-"))
    print("\nlinalg targets met: %d of %d" % (met, total))


if __name__ == "__main__":
    main()
