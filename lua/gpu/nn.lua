-- gpu.nn: modules, layers, activations, losses, and Keras-style compile/fit/evaluate/predict.
--
--   local nn = gpu.nn
--   local model = nn.Sequential{ nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10) }
--   local loss = nn.cross_entropy(model(x), y)          -- labels 1..C
--
--   local model = nn.Sequential{ nn.Dense(64, "relu", {input_shape = {784}}), nn.Dense(10, "softmax") }
--   model:compile("adam", "sparse_categorical_crossentropy", {"accuracy"})
--   local history = model:fit(x, y, {epochs = 10, batch_size = 32, validation_split = 0.1})
--
-- The parts, one role each (lua/gpu/nn/):
--   module.lua       Module (parameters, buffers, state_dict, to, ...), class(), Sequential, summary
--   functional.lua   the differentiable functional forms (nn.linear, nn.softmax, nn.conv2d, ...)
--   layers.lua       Linear, Dense, activation layers, Flatten, Dropout, Embedding
--   conv.lua         Conv2d, MaxPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d
--   losses.lua       the losses and loss modules, one_hot, the class-label check
--   training.lua     compile, fit, evaluate, predict (methods of every Module)
--   initializers.lua nn.init
--   utils.lua        nn.utils (clip_grad_norm_, clip_grad_value_)
--   metrics.lua      compile's Keras metrics (mae, mse, binary/categorical/top-k accuracies)
--   callbacks.lua    fit's callbacks (EarlyStopping, ModelCheckpoint, ...)
--   saving.lua       model:save / nn.load_model (architecture, weights, optimizer in one file)
--   ddp.lua          DistributedDataParallel (over gpu.distributed)
--   resample.lua     conv1d, conv_transpose1d/2d, 1-D and adaptive pooling, interpolate, pixel_shuffle
--   recurrent.lua    RNN, LSTM, GRU
--   resample_layers.lua  Conv1d, ConvTranspose1d/2d, MaxPool1d, AvgPool1d, Adaptive*Pool*, Upsample, PixelShuffle

local nn = {}

-- Copies the named (or all) entries of a part into nn; one name, one definition.
local function export(part, names)
  if names == nil then
    names = {}
    for k in pairs(part) do names[#names + 1] = k end
  end
  for _, k in ipairs(names) do
    assert(nn[k] == nil, "gpu.nn: two parts define " .. k)
    nn[k] = part[k]
  end
end

local F = require "gpu.nn.functional"
nn.functional = F
export(F, { "linear", "dense", "relu", "sigmoid", "tanh", "gelu", "softplus", "leaky_relu", "softmax",
            "log_softmax", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm" })
export(require "gpu.nn.module", { "Module", "class", "Sequential" })
export((require "gpu.nn.layers"))
export((require "gpu.nn.conv"))
export((require "gpu.nn.losses"))
export((require "gpu.nn.ddp"))
-- seq's part: 1-D and transposed convolutions, 1-D and adaptive pooling, resampling
for k, f in pairs(require("gpu.nn.resample").functional) do
  assert(F[k] == nil, "gpu.nn: two parts define functional." .. k)
  F[k] = f
end
export((require "gpu.nn.resample_layers"))
export((require "gpu.nn.recurrent"))
nn.init = require "gpu.nn.initializers"
nn.utils = require "gpu.nn.utils"
nn.metrics = require "gpu.nn.metrics"
nn.callbacks = require "gpu.nn.callbacks"
export(nn.callbacks, { "Callback", "EarlyStopping", "ModelCheckpoint", "LearningRateScheduler", "ReduceLROnPlateau",
                       "CSVLogger", "TerminateOnNaN" })
nn.load_model = require("gpu.nn.saving").load_model
nn.fans = nn.init.fans
-- fit's progress lines (nn._progress: the specs format lines and replace its terminal_width)
nn._progress = require("gpu.nn.training").progress

return nn
