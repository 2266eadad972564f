-- bench/nn.lua — one training epoch (Adam, cross-entropy, batch 128, shuffled) of:
--   mlp: 784-256-10 ReLU on 60000 images of 784 float32 (Fashion-MNIST's shape; random
--        data, so the benchmark needs no data set). Target: on the CPU >= 1.2x faster
--        than PyTorch's CPU eager with 1 thread (its best setting on this 2-core machine),
--        i.e. time ratio <= 1/1.2; on a GPU at least PyTorch eager's throughput.
--   cnn: conv3x3(32) ReLU maxpool2 conv3x3(64) ReLU maxpool2 linear(3136, 10) on 1x28x28
--        images (60000 on a GPU, 3840 on the CPU to keep the run short).
-- Twin: bench/nn.py (torch on the same device). GPULUA_BENCH_DEVICE=cuda runs on the GPU.
-- Records as bench/lib/bench.lua prints them: time per epoch in ns, best and median.
local gpu = require "gpu"
local nn, optim = gpu.nn, gpu.optim

local device = os.getenv("GPULUA_BENCH_DEVICE") or "cpu"
local impl = os.getenv("GPULUA_BENCH_IMPL") or (_G.gpu and "gpulua" or "lua5.4+gpu.so")
local quick = os.getenv("BENCH_QUICK") == "1"
local only = os.getenv("BENCH_NN")             -- "mlp" or "cnn": just that one
local EPOCHS = quick and 1 or 3
local function emit(...) io.write(table.concat({ ... }, "\t"), "\n"); io.flush() end

local function run(name, x, y, model, target)
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
  if target then emit("target", "nn", name, "max_ratio", target, "torch") end
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
end

gpu.random.seed(0)
if only == nil or only == "mlp" then
  local N = quick and 12800 or 60000
  local x = gpu.rand({ N, 784 }, { device = device })
  local y = gpu.random.randint(1, 10, { N }, { dtype = "int64", device = device })
  local model = nn.Sequential{ nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10) }:to(device)
  run(("mlp 784-256-10 adam b128 epoch n=%d"):format(N), x, y, model,
      device == "cpu" and ("%.4f"):format(1 / 1.2) or "1.0000")
end
if only == nil or only == "cnn" then
  local N = device == "cpu" and (quick and 1280 or 3840) or (quick and 12800 or 60000)
  local x = gpu.rand({ N, 1, 28, 28 }, { device = device })
  local y = gpu.random.randint(1, 10, { N }, { dtype = "int64", device = device })
  local model = nn.Sequential{
    nn.Conv2d(1, 32, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(64 * 7 * 7, 10) }:to(device)
  run(("cnn 2xconv3x3+pool adam b128 epoch n=%d"):format(N), x, y, model, device ~= "cpu" and "1.0000" or nil)
end
