"""bench/create.py — NumPy / PyTorch twin of bench/create.lua (same case names)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, DEVICE

np = try_import("numpy")
torch = try_import("torch")

if np is not None and DEVICE == "cpu":
    g = {"np": np, "x": np.zeros(1, np.float32), "m": np.zeros((4, 4), np.float32)}
    case("zeros(1): create + drop", "numpy", "np.zeros(1)", globals=g)
    case("zeros(1, opts): create + drop", "numpy", "np.zeros(1, dtype=np.float32)", globals=g)
    case("zeros(1000): create + drop", "numpy", "np.zeros(1000, np.float32)", globals=g)
    case("x[1]: read, 1-element vector", "numpy", "x[0]", globals=g)
    case("x[{i, j}]: read, 4x4 matrix", "numpy", "m[1, 2]", globals=g)
    case("x[i] = v: write, 1-element vector", "numpy", "x[0] = 1.5", globals=g)
    case("x.shape: property", "numpy", "m.shape", globals=g)

if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    g = {"torch": torch, "dev": dev, "x": torch.zeros(1, device=dev),
         "m": torch.zeros(4, 4, device=dev)}
    case("zeros(1): create + drop", "torch", "torch.zeros(1, device=dev)", globals=g)
    case("zeros(1000): create + drop", "torch", "torch.zeros(1000, device=dev)", globals=g)
    case("x[1]: read, 1-element vector", "torch", "x[0].item()", globals=g)
    case("x[{i, j}]: read, 4x4 matrix", "torch", "m[1, 2].item()", globals=g)
    case("x[i] = v: write, 1-element vector", "torch", "x[0] = 1.5", globals=g)
