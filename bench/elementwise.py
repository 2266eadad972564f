"""bench/elementwise.py — NumPy (CuPy on cuda) / PyTorch twin of bench/elementwise.lua (same case names)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, array_module, native, DEVICE

xp, impl, xsync = array_module()
torch = try_import("torch")

if xp is not None:
    f32 = xp.float32
    g = {"xp": xp, "a1": xp.ones(1, f32), "b1": xp.ones(1, f32),
         "a100": xp.ones(100, f32), "b100": xp.ones(100, f32),
         "A": xp.ones(10**7, f32), "B": xp.ones(10**7, f32),
         "M": xp.ones((4096, 4096), f32)}
    case("a + b: 1 float32", impl, "a1 + b1", globals=g)
    case("a + b: 100 float32", impl, "a100 + b100", globals=g)
    case("a * 2.5: 100 float32", impl, "a100 * 2.5", globals=g)
    case("c = a + b: 1e7 float32", impl, "A + B; " + xsync, globals=g)
    case("exp: 1e7 float32", impl, "xp.exp(A); " + xsync, globals=g)
    case("tanh: 1e7 float32", impl, "xp.tanh(A); " + xsync, globals=g)
    case("transpose copy: 4096x4096 float32", impl, "xp.ascontiguousarray(M.T); " + xsync, globals=g)

if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    sync = "torch.cuda.synchronize()" if dev == "cuda" else "pass"
    g = {"torch": torch, "a1": torch.ones(1, device=dev), "b1": torch.ones(1, device=dev),
         "a100": torch.ones(100, device=dev), "b100": torch.ones(100, device=dev),
         "A": torch.ones(10**7, device=dev), "B": torch.ones(10**7, device=dev),
         "M": torch.ones(4096, 4096, device=dev)}
    case("a + b: 1 float32", "torch", "a1 + b1", globals=g)
    case("a + b: 100 float32", "torch", "a100 + b100", globals=g)
    case("a * 2.5: 100 float32", "torch", "a100 * 2.5", globals=g)
    case("c = a + b: 1e7 float32", "torch", "A + B; " + sync, globals=g)
    case("exp: 1e7 float32", "torch", "torch.exp(A); " + sync, globals=g)
    case("tanh: 1e7 float32", "torch", "torch.tanh(A); " + sync, globals=g)
    case("transpose copy: 4096x4096 float32", "torch", "M.t().contiguous(); " + sync, globals=g)

# The machine's own ceiling for the add: STREAM's add kernel, 2 threads, warm pages.
if DEVICE == "cpu":
    native("stream.c", ["-fopenmp"])
