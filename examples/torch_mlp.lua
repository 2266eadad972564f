-- examples/torch_mlp.lua — the seeds' PyTorch model and loop on Fashion-MNIST:
-- Sequential(Linear(784, 64), ReLU(), Linear(64, 10)) trained with Adam and
-- cross-entropy, opt:zero_grad(); loss:backward(); opt:step().
--
--   gpulua examples/torch_mlp.lua [--epochs N] [--device cpu|cuda] [--small]
-- --small: a few hundred samples and 1 epoch (what the specs run).
local gpu = require "gpu"
local nn, optim, data = gpu.nn, gpu.optim, gpu.data

local epochs, device, small = 5, gpu.device(), false
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--epochs" then epochs = tonumber(arg[i + 1]); i = i + 1
  elseif a == "--device" then device = arg[i + 1]; i = i + 1
  elseif a == "--small" then small = true; epochs = 1
  else error("torch_mlp: unknown option " .. a .. " (--epochs N, --device D, --small)") end
  i = i + 1
end
gpu.random.seed(0)

local ds = data.fashion_mnist{ scale = true, flatten = true, limit = small and 600 or nil }
local x, y = ds.train.x, ds.train.y
local model = nn.Sequential{ nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10) }:to(device)
local opt = optim.Adam(model:parameters(), { lr = 1e-3 })

local t0 = gpu.clock()
for epoch = 1, epochs do
  local total, n = 0, 0
  local te = gpu.clock()
  for xb, yb in data.batches(x, y, 64, { shuffle = true, device = device }) do
    local loss = nn.cross_entropy(model(xb), yb)
    opt:zero_grad()
    loss:backward()
    opt:step()
    total = total + loss:item() * xb.shape[1]
    n = n + xb.shape[1]
  end
  print(("epoch %d/%d: loss %.4f (%.1f s)"):format(epoch, epochs, total / n, gpu.clock() - te))
end
local secs = gpu.clock() - t0

-- test accuracy, without recording a tape
model:eval()
local correct = gpu.no_grad(function()
  local c = 0
  for xb, yb in data.batches(ds.test.x, ds.test.y, 1000, { device = device }) do
    c = c + model(xb):argmax(2):eq(yb):sum():item()
  end
  return c
end)
local acc = correct / ds.test.y.shape[1]
print(("%d epochs in %.1f s (%.2f s/epoch); test accuracy %.4f"):format(epochs, secs, secs / epochs, acc))
