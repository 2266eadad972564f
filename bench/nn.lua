-- bench/nn.lua — one training epoch of a 784-256-10 ReLU MLP (batch 128, Adam,
-- cross-entropy) on 60000 images of 784 float32 (Fashion-MNIST's shape; random data, so
-- the benchmark needs no data set). Issue 6: >= 1.2x faster than PyTorch's CPU eager on
-- the same machine, i.e. time ratio <= 1/1.2. Twin: bench/nn.py (torch, 1 thread).
-- Records as bench/lib/bench.lua prints them: time per epoch in ns, best and median.
local gpu = require "gpu"
local nn, optim = gpu.nn, gpu.optim

local device = os.getenv("GPULUA_BENCH_DEVICE") or "cpu"
local impl = os.getenv("GPULUA_BENCH_IMPL") or (_G.gpu and "gpulua" or "lua5.4+gpu.so")
local quick = os.getenv("BENCH_QUICK") == "1"
local EPOCHS = quick and 1 or 3
local N = quick and 12800 or 60000
local function emit(...) io.write(table.concat({ ... }, "\t"), "\n"); io.flush() end

gpu.random.seed(0)
local x = gpu.rand({ N, 784 }, { device = device })
local y = gpu.random.randint(1, 10, { N }, { dtype = "int64", device = device })
local model = nn.Sequential{ nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10) }:to(device)
local opt = optim.Adam(model:parameters(), { lr = 1e-3 })

local function epoch()
  for xb, yb in gpu.data.batches(x, y, 128, { shuffle = true }) do
    local loss = nn.cross_entropy(model(xb), yb)
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
  gpu.synchronize()
end

local name = ("mlp 784-256-10 adam b128 epoch n=%d"):format(N)
emit("target", "nn", name, "max_ratio", ("%.4f"):format(1 / 1.2), "torch")
epoch()                                          -- warm-up
local ts = {}
for r = 1, EPOCHS do
  local t = gpu.clock()
  epoch()
  ts[r] = gpu.clock() - t
end
table.sort(ts)
emit("result", "nn", name, impl, ("%.1f"):format(ts[1] * 1e9), ("%.1f"):format(ts[(EPOCHS + 1) // 2] * 1e9),
     ("%.3f s/epoch"):format(ts[1]))
