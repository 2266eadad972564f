# bench/nn.py — twin of bench/nn.lua in PyTorch eager: the same MLP and CNN epochs (Adam,
# cross-entropy, batch 128, shuffled) on random data of the same shapes. On the CPU with 1
# thread (PyTorch's best setting on this 2-core machine; TORCH_THREADS changes it); with
# GPULUA_BENCH_DEVICE=cuda on the GPU. Prints bench/lib/bench.py records.
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from bench import emit
try:
    import torch
except ImportError:
    sys.exit(0)
device = os.environ.get("GPULUA_BENCH_DEVICE", "cpu")
if device.startswith("cuda") and not torch.cuda.is_available():
    sys.exit(0)
torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "1")))
quick = os.environ.get("BENCH_QUICK") == "1"
only = os.environ.get("BENCH_NN")
EPOCHS = 1 if quick else 3


def sync():
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run(name, x, y, model):
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lossf = torch.nn.CrossEntropyLoss()
    n = x.shape[0]

    def epoch():
        perm = torch.randperm(n, device=device)
        for s in range(0, n, 128):
            idx = perm[s:s + 128]
            loss = lossf(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        sync()

    epoch()
    ts = []
    for _ in range(EPOCHS):
        t = time.perf_counter()
        epoch()
        ts.append(time.perf_counter() - t)
    ts.sort()
    emit("result", "nn", name, "torch", "%.1f" % (ts[0] * 1e9), "%.1f" % (ts[(EPOCHS - 1) // 2] * 1e9),
         "%.3f s/epoch, %s" % (ts[0], device if device != "cpu" else "%d thread(s)" % torch.get_num_threads()))


torch.manual_seed(0)
if only in (None, "mlp"):
    N = 12800 if quick else 60000
    x = torch.rand(N, 784, device=device)
    y = torch.randint(0, 10, (N,), device=device)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    run("mlp 784-256-10 adam b128 epoch n=%d" % N, x, y, model)
if only in (None, "cnn"):
    N = (1280 if quick else 3840) if device == "cpu" else (12800 if quick else 60000)
    x = torch.rand(N, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (N,), device=device)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 10))
    run("cnn 2xconv3x3+pool adam b128 epoch n=%d" % N, x, y, model)
