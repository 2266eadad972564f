# bench/seq.py — twin of bench/seq.lua in PyTorch eager (threads: TORCH_THREADS, default 1).
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from bench import once, DEVICE
try:
    import torch
except ImportError:
    sys.exit(0)
if DEVICE.startswith("cuda") and not torch.cuda.is_available():
    sys.exit(0)
torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "1")))
sync = (lambda: torch.cuda.synchronize()) if DEVICE.startswith("cuda") else (lambda: None)


def step(m, x):
    def fn():
        y = m(x)
        if isinstance(y, tuple):
            y = y[0]
        y.sum().backward()
        for p in m.parameters():
            p.grad = None
    return fn


torch.manual_seed(0)
x = torch.randn(128, 32, 64, device=DEVICE)
once("lstm 2x256 L128 N32 in64 train step", "torch", step(torch.nn.LSTM(64, 256, num_layers=2).to(DEVICE), x), "",
     sync)
once("gru 2x256 L128 N32 in64 train step", "torch", step(torch.nn.GRU(64, 256, num_layers=2).to(DEVICE), x), "", sync)
xt = torch.randn(16, 64, 32, 32, device=DEVICE)
once("convtranspose2d 64->32 k4 s2 16x32x32 train step", "torch",
     step(torch.nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1).to(DEVICE), xt), "", sync)
