"""bench/autograd.py — PyTorch twin of bench/autograd.lua (same case names)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, DEVICE

torch = try_import("torch")
if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    torch.set_num_threads(1)
    g = {"torch": torch, "a": torch.ones(100, device=dev), "b": torch.ones(100, device=dev),
         "w": torch.ones(100, device=dev, requires_grad=True)}
    case("x + b: 100 float32", "torch", "w + b", globals=g)
    case("x + b: 100 float32", "torch untracked", "a + b", globals=g)
    case("x:add(b): 100 float32", "torch", "w.add(b)", globals=g)
    case("x:exp(): 100 float32", "torch", "w.exp()", globals=g)
    case("x.shape", "torch", "w.shape", globals=g)
    nn = torch.nn
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(dev)
    g2 = {"torch": torch, "model": model, "x": torch.rand(16, 32, device=dev),
          "y": torch.randint(0, 10, (16,), device=dev)}
    case("MLP 32-64-10, batch 16: forward + backward", "torch",
         "model.zero_grad(); torch.nn.functional.cross_entropy(model(x), y).backward()", globals=g2)
