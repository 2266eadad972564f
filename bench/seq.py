# bench/seq.py — twin of bench/seq.lua in PyTorch eager, at the thread count gpulua runs with
# (TORCH_THREADS, else OMP_NUM_THREADS, else the cores): the case names carry it.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from bench import once, DEVICE
try:
    import torch
except ImportError:
    sys.exit(0)
if DEVICE.startswith("cuda") and not torch.cuda.is_available():
    sys.exit(0)
threads = int(os.environ.get("TORCH_THREADS") or os.environ.get("OMP_NUM_THREADS") or os.cpu_count())
torch.set_num_threads(threads)
T = ", %d thread%s" % (threads, "" if threads == 1 else "s")
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
shape = " 2x256 L128 N32 in64 train step"
once("lstm" + shape + T, "torch", step(torch.nn.LSTM(64, 256, num_layers=2).to(DEVICE), x), "", sync)
once("gru" + shape + T, "torch", step(torch.nn.GRU(64, 256, num_layers=2).to(DEVICE), x), "", sync)
once("rnn tanh" + shape + T, "torch", step(torch.nn.RNN(64, 256, num_layers=2).to(DEVICE), x), "", sync)
xt = torch.randn(16, 64, 32, 32, device=DEVICE)
once("convtranspose2d 64->32 k4 s2 16x32x32 train step" + T, "torch",
     step(torch.nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1).to(DEVICE), xt), "", sync)
