-- examples/mixed_precision.lua — the seeds' mixed-precision workflow (PyTorch's
-- torch.cuda.amp.autocast + GradScaler) on Fashion-MNIST, then the same in Keras form:
--
--   local scaler = gpu.optim.GradScaler()             -- dynamic loss scaling (float16)
--   for xb, yb in batches do
--     local loss = gpu.autocast("float16", function() return nn.cross_entropy(model(xb), yb) end)
--     opt:zero_grad()
--     scaler:scale(loss):backward()                   -- scaled so small gradients survive fp16
--     scaler:step(opt)                                -- unscales; skips the step on inf/NaN
--     scaler:update()                                 -- adjusts the scale
--   end
--   model:fit(x, y, {precision = "bf16"})             -- Keras: autocast (+ scaler for fp16)
--
-- The parameters stay float32 (master weights); the matmuls of Linear/Dense compute in
-- float16/bfloat16 (tensor cores on a GPU), the rest in float32. On a CPU the half
-- precision is emulated: correct, and slower than float32.
--
--   gpulua examples/mixed_precision.lua [--epochs N] [--device cpu|cuda] [--small]
-- --small: a few hundred samples and 1 epoch (what the specs run).
local gpu = require "gpu"
local nn, optim, data = gpu.nn, gpu.optim, gpu.data

local epochs, device, small = 3, gpu.device(), false
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--epochs" then epochs = tonumber(arg[i + 1]); i = i + 1
  elseif a == "--device" then device = arg[i + 1]; i = i + 1
  elseif a == "--small" then small = true; epochs = 1
  else error("mixed_precision: unknown option " .. a .. " (--epochs N, --device D, --small)") end
  i = i + 1
end
gpu.random.seed(0)

local dev_type = device:match("^%a+")
print(("device: %s"):format(device))
if dev_type == "cpu" then
  print("on the CPU, float16/bfloat16 matmuls are emulated (computed in float32 and rounded):")
  print("the results are correct, but slower than float32; tensor cores need a GPU")
else
  print("on the GPU, the half-precision matmuls run on tensor cores (cuBLAS)")
end

local ds = data.fashion_mnist{ scale = true, flatten = true, limit = small and 600 or nil }
local x, y = ds.train.x, ds.train.y

local function accuracy(model)
  model:eval()
  local c = gpu.no_grad(function()
    local k = 0
    for xb, yb in data.batches(ds.test.x, ds.test.y, 1000, { device = device }) do
      k = k + gpu.autocast("bf16", function() return model(xb) end):argmax(2):eq(yb):sum():item()
    end
    return k
  end)
  model:train()
  return c / ds.test.y.shape[1]
end

-- 1. PyTorch style: autocast + GradScaler, float16
print("\n1. PyTorch style: autocast + GradScaler (float16)")
local model = nn.Sequential{ nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10) }:to(device)
local opt = optim.Adam(model:parameters(), { lr = 1e-3 })
local scaler = optim.GradScaler()              -- init_scale 2^16, growth_interval 2000
local t0 = gpu.clock()
for epoch = 1, epochs do
  local total, n, skipped0 = 0, 0, scaler.skipped
  local te = gpu.clock()
  for xb, yb in data.batches(x, y, 64, { shuffle = true, device = device }) do
    local loss = gpu.autocast("float16", function()
      return nn.cross_entropy(model(xb), yb)  -- logits come back float32; the loss is float32
    end)
    opt:zero_grad()
    scaler:scale(loss):backward()
    scaler:step(opt)
    scaler:update()
    local lv = loss:item()
    if lv == lv and lv < math.huge then
      total = total + lv * xb.shape[1]
      n = n + xb.shape[1]
    end
  end
  print(("epoch %d/%d: loss %.4f - skipped steps: %d - loss scale %g (%.1f s)")
    :format(epoch, epochs, total / math.max(n, 1), scaler.skipped - skipped0, scaler:get_scale(), gpu.clock() - te))
end
print(("weights stay %s; %d steps skipped in all; %.1f s; test accuracy %.4f")
  :format(model:parameters()[1].dtype, scaler.skipped, gpu.clock() - t0, accuracy(model)))

-- 2. Keras style: fit{precision = "bf16"} (bfloat16 has float32's range: no loss scaling)
print("\n2. Keras style: fit{precision = \"bf16\"}")
local km = nn.Sequential{ nn.Dense(64, { activation = "relu", input_shape = { 784 } }),
                          nn.Dense(10, { activation = "softmax" }) }:to(device)
km:compile{ optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
local t1 = gpu.clock()
local hist = km:fit(x, y, { epochs = epochs, batch_size = 64, precision = "bf16", verbose = 2 })
print(("bf16: final loss %.4f, accuracy %.4f, skipped steps %d; %.1f s; test accuracy %.4f")
  :format(hist.loss[epochs], hist.accuracy[epochs], hist.skipped_steps, gpu.clock() - t1, accuracy(km)))

-- and with float16 the fit loop adds the GradScaler and reports its skipped steps
local hist16 = km:fit(x, y, { epochs = 1, batch_size = 64, precision = "fp16", verbose = 2 })
print(("fp16: loss %.4f, skipped steps %d (loss scale now %g)")
  :format(hist16.loss[1], hist16.skipped_steps, km.grad_scaler:get_scale()))
print("mixed_precision ok")
