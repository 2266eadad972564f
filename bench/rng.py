"""bench/rng.py — NumPy (CuPy on cuda) / PyTorch twin of bench/rng.lua (same case names): (named rng, not random: a random.py would shadow Python's random module)
NumPy's default_rng() (PCG64) random / standard_normal / integers into 1e7 elements."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, array_module, DEVICE

xp, impl, xsync = array_module()
torch = try_import("torch")
N = 10000000

if xp is not None:
    # NumPy's Generator (PCG64); CuPy's Generator (XORWOW by default) on cuda
    g = {"xp": xp, "rng": xp.random.default_rng(1), "N": N}
    case("rand(1e7) float32", impl, "rng.random(N, dtype=xp.float32); " + xsync, globals=g)
    case("randn(1e7) float32", impl, "rng.standard_normal(N, dtype=xp.float32); " + xsync, globals=g)
    case("rand(1e7) float64", impl, "rng.random(N); " + xsync, globals=g)
    case("randn(1e7) float64", impl, "rng.standard_normal(N); " + xsync, globals=g)
    if impl == "numpy":
        case("randint(1, 100, 1e7) int64", impl, "rng.integers(1, 100, N, endpoint=True)", globals=g)
    else:
        case("randint(1, 100, 1e7) int64", impl, "xp.random.randint(1, 101, N, dtype=xp.int64); " + xsync, globals=g)

if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    sync = "torch.cuda.synchronize()" if dev == "cuda" else "None"
    g = {"torch": torch, "dev": dev, "N": N}
    case("rand(1e7) float32", "torch", "torch.rand(N, device=dev); " + sync, globals=g)
    case("randn(1e7) float32", "torch", "torch.randn(N, device=dev); " + sync, globals=g)
