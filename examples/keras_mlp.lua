-- examples/keras_mlp.lua — the seeds' Keras model on Fashion-MNIST:
-- Dense(64, relu, input_shape = 784) -> Dense(10, softmax), adam,
-- sparse_categorical_crossentropy, accuracy, 10 epochs.
--
--   gpulua examples/keras_mlp.lua [--epochs N] [--device cpu|cuda] [--small]
-- --small: a few hundred samples and 1 epoch (what the specs run).
local gpu = require "gpu"
local nn = gpu.nn

local epochs, device, small = 10, nil, false
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--epochs" then epochs = tonumber(arg[i + 1]); i = i + 1
  elseif a == "--device" then device = arg[i + 1]; i = i + 1
  elseif a == "--small" then small = true; epochs = 1
  else error("keras_mlp: unknown option " .. a .. " (--epochs N, --device D, --small)") end
  i = i + 1
end
if device then gpu.set_device(device) end
gpu.random.seed(42)

local ds = gpu.data.fashion_mnist{ scale = true, flatten = true, limit = small and 600 or nil }
local x, y = ds.train.x, ds.train.y
print(("train %s, test %s, device %s"):format(table.concat(x.shape, "x"), table.concat(ds.test.x.shape, "x"),
  gpu.device()))

local model = nn.Sequential{
  nn.Dense(64, { activation = "relu", input_shape = { 784 } }),
  nn.Dense(10, { activation = "softmax" }),
}
model:summary()
model:compile{ optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }

local t0 = gpu.clock()
local history = model:fit(x, y, { epochs = epochs, batch_size = 32, validation_split = 0.1 })
local secs = gpu.clock() - t0
local r = model:evaluate(ds.test.x, ds.test.y)
print(("%d epochs in %.1f s (%.2f s/epoch); test loss %.4f, test accuracy %.4f")
  :format(epochs, secs, secs / epochs, r.loss, r.accuracy))
return { history = history, test = r }
