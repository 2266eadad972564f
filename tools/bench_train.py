# tools/bench_train.py: the PyTorch twin of tools/bench_train.lua (see there)
import time, torch, os
torch.manual_seed(0)
params = []
for i in range(4):
    p = torch.randn(512, 512, requires_grad=True)
    p.grad = torch.randn(512, 512)
    params.append(p)
def ms(fn):
    for _ in range(3): fn()
    t = []
    for _ in range(21):
        t0 = time.perf_counter(); fn(); t.append((time.perf_counter() - t0) * 1e3)
    t.sort(); return t[10]
for name in ["SGD", "Adam", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]:
    opt = getattr(torch.optim, name)(params, lr=1e-4)
    print("%-10s %8.3f ms" % (name, ms(opt.step)))
print("%-10s %8.3f ms" % ("clip_norm", ms(lambda: torch.nn.utils.clip_grad_norm_(params, 1e9))))
d = "/usr/share/games/fortunes"
files = sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)) and not os.path.islink(os.path.join(d, f)) and not f.endswith(".dat"))
text = "".join(open(os.path.join(d, f), encoding="utf-8").read() for f in files)
chars = sorted(set(text)); stoi = {c: i + 1 for i, c in enumerate(chars)}
t0 = time.perf_counter()
ids = torch.tensor([stoi[c] for c in text], dtype=torch.int64)
print("%-10s %8.3f ms (%d chars)" % ("encode", (time.perf_counter() - t0) * 1e3, ids.numel()))
