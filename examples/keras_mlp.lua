-- examples/keras_mlp.lua — the seeds' Keras model on Fashion-MNIST:
-- Dense(64, relu, input_shape = 784) -> Dense(10, softmax), adam,
-- sparse_categorical_crossentropy, accuracy, 10 epochs.
--
--   gpulua examples/keras_mlp.lua [--epochs N] [--device cpu|cuda] [--small] [--plot [DIR]]
-- --small: a few hundred samples and 1 epoch (what the specs run).
-- --plot: writes into DIR (default .) keras_mlp_history.png (the training curves, through
-- gnuplot) and keras_mlp_predictions.png (the first 32 test images, 8 a row) with its
-- caption keras_mlp_predictions.txt: each image's predicted class, row by row, and the
-- true class after a wrong one.
local gpu = require "gpu"
local nn = gpu.nn

local epochs, device, small, plot_dir = 10, nil, false, nil
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--epochs" then epochs = tonumber(arg[i + 1]); i = i + 1
  elseif a == "--device" then device = arg[i + 1]; i = i + 1
  elseif a == "--small" then small = true; epochs = 1
  elseif a == "--plot" then
    plot_dir = "."
    if arg[i + 1] and arg[i + 1]:sub(1, 2) ~= "--" then plot_dir = arg[i + 1]; i = i + 1 end
  else error("keras_mlp: unknown option " .. a .. " (--epochs N, --device D, --small, --plot [DIR])") end
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

-- --plot: the curves, and a grid of test images with a caption of their predicted labels
if plot_dir then
  local base = plot_dir .. "/keras_mlp_"
  gpu.plot.history(history, { file = base .. "history.png", title = "keras_mlp: Fashion-MNIST" })
  local n, cols = 32, 8
  local images, truth = ds.test.x[{ { 1, n } }], ds.test.y[{ { 1, n } }]:totable()
  local pred = model:predict(images):argmax(2):totable()
  gpu.image.save(base .. "predictions.png", images:reshape(n, 1, 28, 28), { nrow = cols })
  local caption = {}
  for k = 1, n do
    local name = ds.classes[pred[k]] .. (pred[k] ~= truth[k] and " [true: " .. ds.classes[truth[k]] .. "]" or "")
    caption[#caption + 1] = name .. (k % cols == 0 and "\n" or ", ")
  end
  local f = assert(io.open(base .. "predictions.txt", "w"))
  f:write(table.concat(caption))
  f:close()
  print(("wrote %shistory.png, %spredictions.png and %spredictions.txt"):format(base, base, base))
end
return { history = history, test = r }
