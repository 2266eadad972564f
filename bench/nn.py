# bench/nn.py — twin of bench/nn.lua: one epoch of a 784-256-10 ReLU MLP, batch 128, Adam,
# cross-entropy, on 60000 random 784-float32 images, in PyTorch's CPU eager mode with 1
# thread (its best setting on this machine). Prints bench/lib/bench.py records.
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from bench import emit
try:
    import torch
except ImportError:
    sys.exit(0)
torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "1")))
quick = os.environ.get("BENCH_QUICK") == "1"
EPOCHS = 1 if quick else 3
N = 12800 if quick else 60000
torch.manual_seed(0)
x = torch.rand(N, 784)
y = torch.randint(0, 10, (N,))
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
lossf = torch.nn.CrossEntropyLoss()

def epoch():
    perm = torch.randperm(N)
    for s in range(0, N, 128):
        idx = perm[s:s + 128]
        loss = lossf(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()

name = "mlp 784-256-10 adam b128 epoch n=%d" % N
epoch()
ts = []
for _ in range(EPOCHS):
    t = time.perf_counter()
    epoch()
    ts.append(time.perf_counter() - t)
ts.sort()
emit("result", "nn", name, "torch", "%.1f" % (ts[0] * 1e9), "%.1f" % (ts[(EPOCHS - 1) // 2] * 1e9),
     "%.3f s/epoch, %d thread(s)" % (ts[0], torch.get_num_threads()))
