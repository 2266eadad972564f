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
--   conv.lua         Conv1d, Conv2d, ConvTranspose1d/2d, MaxPool2d, AvgPool2d, BatchNorm1d/2d;
--                    conv1d, conv_transpose1d/2d
--   losses.lua       the losses and loss modules, one_hot, the class-label check
--   training.lua     compile, fit, evaluate, predict (methods of every Module)
--   initializers.lua nn.init
--   utils.lua        nn.utils (clip_grad_norm_, clip_grad_value_, weight_norm, spectral_norm, ...)
--   metrics.lua      compile's Keras metrics (mae, mse, binary/categorical/top-k accuracies)
--   callbacks.lua    fit's callbacks (EarlyStopping, ModelCheckpoint, ...)
--   saving.lua       model:save / nn.load_model (architecture, weights, optimizer in one file)
--   ddp.lua          DistributedDataParallel (over gpu.distributed)
--   resample.lua     1-D and adaptive pooling, interpolate, pixel_shuffle
--   recurrent.lua    RNN, LSTM, GRU
--   resample_layers.lua  MaxPool1d, AvgPool1d, Adaptive*Pool*, Upsample, PixelShuffle
--   activations.lua  SiLU, ELU, SELU, PReLU, Mish, Hard*, ... ; ModuleList, ModuleDict, Unflatten
--   norm.lua         LayerNorm, GroupNorm, RMSNorm
--   attention.lua    scaled_dot_product_attention, MultiheadAttention
--   transformer.lua  TransformerEncoderLayer / DecoderLayer, TransformerEncoder / Decoder, Transformer
--   more_layers.lua  GLU, the pads, InstanceNorm*, Bilinear, RNN/LSTM/GRU cells, ParameterList...
--   extra_layers.lua RReLU, EmbeddingBag, Unfold/Fold, MaxUnpool2d, LazyLinear/LazyConv2d, grid_sample
--   keras_functional.lua  Input, Model (Keras's functional API), Activation, Reshape, merges
--   keras_layers.lua      Conv2D, MaxPooling2D, AveragePooling2D, Global*Pooling2D (channels-last)
--   keras_preprocessing.lua  Resizing, CenterCrop, RandomFlip, RandomRotation, RandomZoom, RandomCrop
--   keras_conv.lua        DepthwiseConv2D, SeparableConv2D, Conv2DTranspose (channels-last)
--   keras_rnn.lua         Keras's LSTM, GRU (nn.LSTM / nn.GRU with one integer), SimpleRNN, Bidirectional; Masking
--   conv3d.lua            conv3d & co: Conv3d, ConvTranspose3d, Max/AvgPool3d, Conv3D, Max/AveragePooling3D
--   regularizers.lua      nn.regularizers, nn.constraints, ActivityRegularization, Module:losses
--   packed.lua            packed sequences (nn.utils.pack_padded_sequence ...) and the RNNs over them
--   keras_metrics.lua     Keras's stateful metrics (nn.metrics.Precision ...)

local options = require "gpu.options"

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

-- A part's functional forms into nn.functional (and, with also_nn, into nn).
local function add_functional(fns, also_nn)
  for k, f in pairs(fns) do
    assert(F[k] == nil, "gpu.nn.functional: two parts define " .. k)
    F[k] = f
  end
  if also_nn then export(fns) end
end

-- A part's layers (all it holds but its functional forms) into nn.
local function export_layers(part)
  local mods = {}
  for k in pairs(part) do if k ~= "functional" then mods[#mods + 1] = k end end
  export(part, mods)
end

export(F, { "linear", "dense", "relu", "sigmoid", "tanh", "gelu", "softplus", "leaky_relu", "softmax",
            "log_softmax", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm" })
export(require "gpu.nn.module", { "Module", "class", "Sequential" })
export((require "gpu.nn.layers"))
local conv = require "gpu.nn.conv"
add_functional(conv.functional)
export_layers(conv)
export((require "gpu.nn.losses"))
export((require "gpu.nn.ddp"))
add_functional(require("gpu.nn.resample").functional)
export((require "gpu.nn.resample_layers"))
export((require "gpu.nn.recurrent"))
-- the layers: modules into nn, functional forms into nn and nn.functional
-- (nn.F), the losses' functional forms into nn.functional too
for _, name in ipairs { "gpu.nn.activations", "gpu.nn.norm", "gpu.nn.attention", "gpu.nn.transformer",
                        "gpu.nn.more_layers", "gpu.nn.extra_layers", "gpu.nn.keras_functional", "gpu.nn.keras_layers",
                        "gpu.nn.keras_conv", "gpu.nn.conv3d", "gpu.nn.keras_preprocessing", "gpu.nn.keras_rnn" } do
  local part = require(name)
  add_functional(part.functional or {}, true)
  export_layers(part)
end
-- nn.LSTM(units) and nn.GRU(units) build Keras's layers of this load (recurrent.lua)
for kind, cls in pairs(require("gpu.nn.keras_rnn")._classes) do getmetatable(nn[kind]).keras_class = cls end
for _, k in ipairs { "cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                     "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "cosine_embedding_loss",
                     "margin_ranking_loss", "triplet_margin_loss", "one_hot", "poisson_nll_loss", "gaussian_nll_loss",
                     "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
                     "ctc_loss" } do
  if F[k] == nil then F[k] = nn[k] end
end
-- every functional form refuses arguments it does not take (nn.softmax(x, 2, "junk"))
for k, f in pairs(F) do
  if type(f) == "function" then
    local counted = options.counted("nn." .. k, f)
    if nn[k] == f then nn[k] = counted end
    F[k] = counted
  end
end
nn.F = F
nn.init = require "gpu.nn.initializers"
do
  local reg = require "gpu.nn.regularizers"
  nn.regularizers, nn.constraints, nn.ActivityRegularization = reg.regularizers, reg.constraints, reg.ActivityRegularization
end
nn.utils = require "gpu.nn.utils"
nn.metrics = require "gpu.nn.metrics"
nn.callbacks = require "gpu.nn.callbacks"
export(nn.callbacks, { "Callback", "EarlyStopping", "ModelCheckpoint", "LearningRateScheduler", "ReduceLROnPlateau",
                       "CSVLogger", "TerminateOnNaN", "LambdaCallback" })
nn.load_model = require("gpu.nn.saving").load_model
nn.model_from_json = require("gpu.nn.saving").model_from_json
nn.fans = nn.init.fans
-- fit's progress lines (nn._progress: the specs format lines and replace its terminal_width)
nn._progress = require("gpu.nn.training").progress

return options.count_all("nn.", nn)
