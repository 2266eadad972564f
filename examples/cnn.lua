-- examples/cnn.lua — a small convolutional network on Fashion-MNIST:
-- Conv2d(1, 16, 3, pad 1) -> BatchNorm2d -> ReLU -> MaxPool2d(2) -> Conv2d(16, 32, 3, pad 1)
-- -> BatchNorm2d -> ReLU -> MaxPool2d(2) -> Flatten -> Linear(32*7*7, 10); Adam with a cosine
-- learning-rate schedule, cross-entropy.
--
--   gpulua examples/cnn.lua [--epochs N] [--device cpu|cuda] [--small] [--limit N] [--plot [DIR]]
-- --small: the first 600 training and 600 test images and 1 epoch (what the specs run);
-- --limit N: the first N training and N test images (with --small too).
-- --plot: writes into DIR (default .) cnn_history.png (loss and test accuracy per epoch,
-- through gnuplot) and cnn_predictions.png (the first 32 test images, 8 a row) with its
-- caption cnn_predictions.txt: each image's predicted class, row by row, and the true
-- class after a wrong one.
local gpu = require "gpu"
local nn, optim, data = gpu.nn, gpu.optim, gpu.data

local epochs, device, small, limit, plot_dir = 3, gpu.device(), false, nil, nil
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--epochs" then epochs = tonumber(arg[i + 1]); i = i + 1
  elseif a == "--device" then device = arg[i + 1]; i = i + 1
  elseif a == "--limit" then
    limit = math.tointeger(tonumber(arg[i + 1] or ""))
    if not limit or limit < 1 then error("cnn: --limit needs a positive number of images, got " .. tostring(arg[i + 1])) end
    i = i + 1
  elseif a == "--small" then small = true; epochs = 1
  elseif a == "--plot" then
    plot_dir = "."
    if arg[i + 1] and arg[i + 1]:sub(1, 2) ~= "--" then plot_dir = arg[i + 1]; i = i + 1 end
  else error("cnn: unknown option " .. a .. " (--epochs N, --device D, --small, --limit N, --plot [DIR])") end
  i = i + 1
end
if small then limit = limit or 600 end
gpu.random.seed(0)

local ds = data.fashion_mnist{ scale = true, limit = limit }
local x, y = ds.train.x, ds.train.y
x = x:reshape(x.shape[1], 1, 28, 28)
local tx, ty = ds.test.x, ds.test.y
tx = tx:reshape(tx.shape[1], 1, 28, 28)

local model = nn.Sequential{
  nn.Conv2d(1, 16, 3, { padding = 1 }), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(16, 32, 3, { padding = 1 }), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
  nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
}:to(device)
print(("cnn: %d parameters, %d training images, device %s"):format(model:num_parameters(), x.shape[1], device))
local opt = optim.Adam(model:parameters(), { lr = 1e-3 })
local sched = optim.CosineAnnealingLR(opt, { T_max = epochs })   -- lr decays to 0 over the run

local function accuracy()
  model:eval()
  local c = gpu.no_grad(function()
    local n = 0
    for xb, yb in data.batches(tx, ty, 500, { device = device }) do
      n = n + model(xb):argmax(2):eq(yb):sum():item()
    end
    return n
  end)
  model:train()
  return c / ty.shape[1]
end

local history = { loss = {}, test_accuracy = {} }     -- for --plot
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
  local dt = gpu.clock() - te
  sched:step()
  history.loss[epoch], history.test_accuracy[epoch] = total / n, accuracy()
  print(("epoch %d/%d: loss %.4f (%.1f s); test accuracy %.4f"):format(epoch, epochs, total / n, dt,
    history.test_accuracy[epoch]))
  io.stdout:flush()
end
local secs = gpu.clock() - t0
print(("%d epochs in %.1f s (%.2f s/epoch); test accuracy %.4f"):format(epochs, secs, secs / epochs, accuracy()))

-- --plot: the curves, and a grid of test images with a caption of their predicted labels
if plot_dir then
  local base = plot_dir .. "/cnn_"
  gpu.plot.history(history, { file = base .. "history.png", title = "cnn: Fashion-MNIST" })
  local n, cols = 32, 8
  local images, truth = tx[{ { 1, n } }], ty[{ { 1, n } }]:totable()
  model:eval()
  local pred = gpu.no_grad(function() return model(images:to(device)):argmax(2):totable() end)
  gpu.image.save(base .. "predictions.png", images, { nrow = cols })
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
