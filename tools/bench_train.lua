-- tools/bench_train.lua: one optimizer step of each optimizer on 1M float32 parameters
-- (4 tensors of 256K), fused and through array ops, clip_grad_norm_, and CharVocab:encode
-- of the fortunes corpus; median milliseconds. Twin: tools/bench_train.py (PyTorch). Run both in one session:
--   OMP_NUM_THREADS=2 ./gpulua tools/bench_train.lua; OMP_NUM_THREADS=2 /usr/bin/python3 tools/bench_train.py
local gpu = require "gpu"
local optim = gpu.optim
gpu.random.seed(0)
local params = {}
for i = 1, 4 do
  params[i] = gpu.random.randn(512, 512):requires_grad()
  params[i]:set_grad(gpu.random.randn(512, 512))
end
local function ms(fn)
  for _ = 1, 3 do fn() end
  local t = {}
  for i = 1, 21 do
    local t0 = gpu.clock(); fn(); t[i] = (gpu.clock() - t0) * 1e3
  end
  table.sort(t)
  return t[11]
end
-- each step through its fused kernel, then (fused = false) through the array ops: the path
-- the five newer optimizers took before they had kernels
for _, name in ipairs { "SGD", "Adam", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam" } do
  local opt = optim[name](params, { lr = 1e-4 })
  local ops = optim[name](params, { lr = 1e-4, fused = false })
  print(("%-10s %8.3f ms   (array ops %8.3f ms)"):format(name, ms(function() opt:step() end),
    ms(function() ops:step() end)))
end
print(("%-10s %8.3f ms"):format("clip_norm", ms(function() gpu.nn.utils.clip_grad_norm_(params, 1e9) end)))
local text = gpu.data.read_text("/usr/share/games/fortunes")
local v = gpu.data.CharVocab(text)
local t0 = gpu.clock()
local ids = v:encode(text)
print(("%-10s %8.3f ms (%d chars)"):format("encode", (gpu.clock() - t0) * 1e3, ids.size))
