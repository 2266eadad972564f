# bench/keras_fit.py — twin of bench/keras_fit.lua: the mnist_convnet epoch (batch 128, random data of
# the same shapes) in PyTorch eager (NCHW, Adam, cross-entropy; 1 thread on the CPU, its best
# setting on this 2-core machine; TORCH_THREADS changes it) and in Keras 3 itself (torch
# backend, channels-last, fit). Prints bench/lib/bench.py records.
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
EPOCHS = 1 if quick else 3
N = (1280 if quick else 6000) if device == "cpu" else 60000
NAME = "convnet fit epoch b128 n=%d" % N

torch.manual_seed(0)
x = torch.rand(N, 1, 28, 28, device=device)
y = torch.randint(0, 10, (N,), device=device)
model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Dropout(0.5), torch.nn.Linear(64 * 5 * 5, 10)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
lossf = torch.nn.CrossEntropyLoss()


def epoch():
    model.train()
    perm = torch.randperm(N, device=device)
    for s in range(0, N, 128):
        idx = perm[s:s + 128]
        loss = lossf(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(run):
    run()
    ts = []
    for _ in range(EPOCHS):
        t = time.perf_counter()
        run()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[0], ts[(EPOCHS - 1) // 2]


b, m = timed(epoch)
emit("result", "keras_fit", NAME, "torch", "%.1f" % (b * 1e9), "%.1f" % (m * 1e9),
     "%.3f s/epoch, torch %s, %s" % (b, torch.__version__, device if device != "cpu" else "%d thread(s)" % torch.get_num_threads()))

os.environ.setdefault("KERAS_BACKEND", "torch")
try:
    import keras
except ImportError:
    sys.exit(0)
import numpy as np
xk = np.random.default_rng(0).random((N, 28, 28, 1), dtype=np.float32)
yk = np.eye(10, dtype=np.float32)[np.random.default_rng(1).integers(0, 10, N)]
inputs = keras.Input((28, 28, 1))
h = keras.layers.Conv2D(32, 3, activation="relu")(inputs)
h = keras.layers.MaxPooling2D(2)(h)
h = keras.layers.Conv2D(64, 3, activation="relu")(h)
h = keras.layers.MaxPooling2D(2)(h)
h = keras.layers.Flatten()(h)
h = keras.layers.Dropout(0.5)(h)
km = keras.Model(inputs, keras.layers.Dense(10, activation="softmax")(h))
km.compile(optimizer="adam", loss="categorical_crossentropy")
b, m = timed(lambda: km.fit(xk, yk, epochs=1, batch_size=128, verbose=0))
emit("result", "keras_fit", NAME, "keras", "%.1f" % (b * 1e9), "%.1f" % (m * 1e9),
     "%.3f s/epoch, Keras %s (torch backend)" % (b, keras.__version__))
