"""bench/fuse.py — NumPy, numexpr (the anchor of fused CPU expressions) and PyTorch twin
of bench/fuse.lua (same case names)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, DEVICE

N3 = "(a * b + c) * a - b: 1e7 float32"
N6 = "((a * b + c) * a - b) * c + a: 1e7 float32"
E3 = "(a * b + c) * a - b"
E6 = "((a * b + c) * a - b) * c + a"

if DEVICE == "cpu":
    np = try_import("numpy")
    ne = try_import("numexpr")
    torch = try_import("torch")
    if np is not None:
        rng = np.random.default_rng(0)
        g = {"a": rng.random(10**7, dtype=np.float32), "b": rng.random(10**7, dtype=np.float32),
             "c": rng.random(10**7, dtype=np.float32), "ne": ne}
        case(N3, "numpy", E3, globals=g)
        case(N6, "numpy", E6, globals=g)
        if ne is not None:
            case(N3, "numexpr", "ne.evaluate(%r)" % E3, globals=g, note="numexpr %s, %d threads" % (ne.__version__, ne.nthreads))
            case(N6, "numexpr", "ne.evaluate(%r)" % E6, globals=g)
    if torch is not None:
        g = {"a": torch.rand(10**7), "b": torch.rand(10**7), "c": torch.rand(10**7)}
        case(N3, "torch", E3, globals=g)
        case(N6, "torch", E6, globals=g)
