# tools/bench_layer_norm.py N: torch.nn.LayerNorm forward and forward+backward, median ms at N threads
# (beside tools/bench_layer_norm.lua; bench/RESULTS.md has the figures).
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
def med(f, n=300):
    for _ in range(10): f()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    ts.sort(); return ts[len(ts)//2] * 1e3
for shp in [(4096, 128), (32, 128, 128)]:
    D = shp[-1]
    x = torch.randn(*shp); dy = torch.randn(*shp)
    ln = torch.nn.LayerNorm(D)
    with torch.no_grad():
        f = med(lambda: ln(x))
    xr = x.clone().requires_grad_()
    def step():
        y = ln(xr); y.backward(dy); ln.zero_grad(); xr.grad = None
    fb = med(step)
    print("%-12s torch %s threads: fwd %.3f ms, fwd+bwd %.3f ms" % ("x".join(map(str, shp)), sys.argv[1], f, fb))
