-- bench/keras_fit.lua — Keras-style training on the CPU (or GPULUA_BENCH_DEVICE=cuda):
--   convnet: Keras's mnist_convnet as a functional model (Input 28x28x1, Conv2D 32 relu,
--            MaxPooling2D, Conv2D 64 relu, MaxPooling2D, Flatten, Dropout 0.5, Dense 10
--            softmax), compile(adam, categorical_crossentropy), one fit epoch, batch 128, on
--            random data. Target: <= 0.8x PyTorch eager's epoch of the same network (twin:
--            bench/keras_fit.py, which also times Keras 3 itself, torch backend).
--   convnet + metrics: the same with metrics {Precision, Recall} (compare with the row
--            above: the metrics' cost, target <= 1.05x).
--   Conv2D NHWC / Conv2d NCHW: forward and backward of one 3x3 convolution to 32 channels
--            on 128 images of 28x28x1, channels-last through nn.Conv2D and channels-first
--            through nn.Conv2d (compare the two rows: target NHWC <= 1.1x NCHW).
local gpu = require "gpu"
local nn = gpu.nn

local device = os.getenv("GPULUA_BENCH_DEVICE") or "cpu"
local impl = os.getenv("GPULUA_BENCH_IMPL") or (_G.gpu and "gpulua" or "lua5.4+gpu.so")
local quick = os.getenv("BENCH_QUICK") == "1"
local EPOCHS = quick and 1 or 3
local function emit(...) io.write(table.concat({ ... }, "\t"), "\n"); io.flush() end

local function best_median(ts)
  table.sort(ts)
  return ts[1], ts[(#ts + 1) // 2]
end

local N = device == "cpu" and (quick and 1280 or 6000) or 60000
gpu.random.seed(0)
local x = gpu.rand({ N, 28, 28, 1 }, { device = device })
local labels = gpu.random.randint(1, 10, { N }, { dtype = "int64", device = device })
local y = nn.functional.one_hot(labels, 10):astype("float32")

local function convnet()
  local inputs = nn.Input({ 28, 28, 1 })
  local h = nn.Conv2D(32, 3, { activation = "relu" })(inputs)
  h = nn.MaxPooling2D(2)(h)
  h = nn.Conv2D(64, 3, { activation = "relu" })(h)
  h = nn.MaxPooling2D(2)(h)
  h = nn.Flatten()(h)
  h = nn.Dropout(0.5)(h)
  local model = nn.Model(inputs, nn.Dense(10, { activation = "softmax" })(h))
  return device == "cpu" and model or model:to(device)
end

local function fit_case(name, metrics, target)
  local model = convnet()
  model:compile { optimizer = "adam", loss = "categorical_crossentropy", metrics = metrics }
  if target then        -- Debian's PyTorch where it is installed, and the newest from PyPI
    for _, base in ipairs { "torch", "pypi torch" } do emit("target", "keras_fit", name, "max_ratio", target, base) end
  end
  model:fit(x, y, { epochs = 1, batch_size = 128, verbose = 0 })            -- warm-up
  local ts = {}
  for r = 1, EPOCHS do
    local t = gpu.clock()
    model:fit(x, y, { epochs = 1, batch_size = 128, verbose = 0 })
    gpu.synchronize()
    ts[r] = gpu.clock() - t
  end
  local best, med = best_median(ts)
  emit("result", "keras_fit", name, impl, ("%.1f"):format(best * 1e9), ("%.1f"):format(med * 1e9), ("%.3f s/epoch"):format(best))
end

fit_case(("convnet fit epoch b128 n=%d"):format(N), nil, "0.8000")
fit_case(("convnet fit epoch b128 n=%d, metrics Precision Recall"):format(N),
  { nn.metrics.Precision(), nn.metrics.Recall() })

-- one convolution, forward and backward, in each layout
local function conv_case(name, layer, input)
  local xi = input:copy():requires_grad()
  local function once()
    local out = layer(xi)
    out:sum():backward()
  end
  once()
  local ts = {}
  for r = 1, quick and 3 or 7 do
    local t = gpu.clock()
    for _ = 1, 5 do once() end
    gpu.synchronize()
    ts[r] = (gpu.clock() - t) / 5
  end
  local best, med = best_median(ts)
  emit("result", "keras_fit", name, impl, ("%.1f"):format(best * 1e9), ("%.1f"):format(med * 1e9), "forward + backward")
end
local xs = gpu.rand({ 128, 28, 28, 1 }, { device = device })
conv_case("Conv2D 3x3 to 32, NHWC (128, 28, 28, 1)", nn.Conv2D(32, 3, { device = device }), xs)
conv_case("Conv2d 3x3 to 32, NCHW (128, 1, 28, 28)", nn.Conv2d(1, 32, 3, { device = device }), xs:permute({ 1, 4, 2, 3 }):contiguous())
