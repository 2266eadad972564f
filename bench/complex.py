"""bench/complex.py — NumPy (CuPy on cuda) / PyTorch twin of bench/complex.lua (same case
names): complex64 a * b of 1e7 elements and an n = 1024 complex64 matmul."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, once, try_import, array_module, DEVICE

N = 1024


def flops(best):
    return "%.1f GFLOP/s" % (8 * N ** 3 / best / 1e9)


xp, impl, xsync = array_module()
if xp is not None:
    rs = xp.random.RandomState(0)

    def cplx(*shape):
        return (rs.rand(*shape) + 1j * rs.rand(*shape)).astype(xp.complex64)
    g = {"xp": xp, "A": cplx(10 ** 7), "B": cplx(10 ** 7)}
    case("a * b: 1e7 complex64", impl, "A * B; " + xsync, globals=g)
    x, y = cplx(N, N), cplx(N, N)
    sync = (lambda: xp.cuda.Device().synchronize()) if impl == "cupy" else (lambda: None)
    once("complex64 matmul n=1024", impl, lambda: x @ y, flops, sync)

torch = try_import("torch")
if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    tsync = "torch.cuda.synchronize()" if dev == "cuda" else "pass"
    gen = torch.Generator(device=dev).manual_seed(0)

    def tcplx(*shape):
        return torch.complex(torch.rand(*shape, generator=gen, device=dev), torch.rand(*shape, generator=gen, device=dev))
    g = {"torch": torch, "A": tcplx(10 ** 7), "B": tcplx(10 ** 7)}
    case("a * b: 1e7 complex64", "torch", "A * B; " + tsync, globals=g)
    tx, ty = tcplx(N, N), tcplx(N, N)
    once("complex64 matmul n=1024", "torch", lambda: tx @ ty, flops,
         torch.cuda.synchronize if dev == "cuda" else (lambda: None))
