"""bench/create.py — NumPy (CuPy on cuda) / PyTorch twin of bench/create.lua (same case names)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, array_module, DEVICE

xp, impl, xsync = array_module()
torch = try_import("torch")

if xp is not None:
    # gpulua's x[1] gives a Lua number: on cuda that is a copy back, as CuPy's .item()
    item = "" if impl == "numpy" else ".item()"
    g = {"xp": xp, "x": xp.zeros(1, xp.float32), "m": xp.zeros((4, 4), xp.float32)}
    case("zeros(1): create + drop", impl, "xp.zeros(1)", globals=g)
    case("zeros(1, opts): create + drop", impl, "xp.zeros(1, dtype=xp.float32)", globals=g)
    case("zeros(1000): create + drop", impl, "xp.zeros(1000, xp.float32)", globals=g)
    case("x[1]: read, 1-element vector", impl, "x[0]" + item, globals=g)
    case("x[{i, j}]: read, 4x4 matrix", impl, "m[1, 2]" + item, globals=g)
    case("x[i] = v: write, 1-element vector", impl, "x[0] = 1.5", globals=g)
    case("x.shape: property", impl, "m.shape", globals=g)

if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    g = {"torch": torch, "dev": dev, "x": torch.zeros(1, device=dev),
         "m": torch.zeros(4, 4, device=dev)}
    case("zeros(1): create + drop", "torch", "torch.zeros(1, device=dev)", globals=g)
    case("zeros(1000): create + drop", "torch", "torch.zeros(1000, device=dev)", globals=g)
    case("x[1]: read, 1-element vector", "torch", "x[0].item()", globals=g)
    case("x[{i, j}]: read, 4x4 matrix", "torch", "m[1, 2].item()", globals=g)
    case("x[i] = v: write, 1-element vector", "torch", "x[0] = 1.5", globals=g)
