"""bench/rng.py — NumPy / PyTorch twin of bench/rng.lua (same case names): (named rng, not random: a random.py would shadow Python's random module)
NumPy's default_rng() (PCG64) random / standard_normal / integers into 1e7 elements."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, DEVICE

np = try_import("numpy")
torch = try_import("torch")
N = 10000000

if np is not None and DEVICE == "cpu":
    g = {"np": np, "rng": np.random.default_rng(1), "N": N}
    case("rand(1e7) float32", "numpy", "rng.random(N, dtype=np.float32)", globals=g)
    case("randn(1e7) float32", "numpy", "rng.standard_normal(N, dtype=np.float32)", globals=g)
    case("rand(1e7) float64", "numpy", "rng.random(N)", globals=g)
    case("randn(1e7) float64", "numpy", "rng.standard_normal(N)", globals=g)
    case("randint(1, 100, 1e7) int64", "numpy", "rng.integers(1, 100, N, endpoint=True)", globals=g)

if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    sync = "torch.cuda.synchronize()" if dev == "cuda" else "None"
    g = {"torch": torch, "dev": dev, "N": N}
    case("rand(1e7) float32", "torch", "torch.rand(N, device=dev); " + sync, globals=g)
    case("randn(1e7) float32", "torch", "torch.randn(N, device=dev); " + sync, globals=g)
