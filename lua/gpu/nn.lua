-- gpu.nn: modules, layers, activations, losses, and Keras-style compile/fit/evaluate/predict.
--
--   local nn = gpu.nn
--   local model = nn.Sequential{ nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10) }
--   local loss = nn.cross_entropy(model(x), y)          -- labels 1..C
--
--   local model = nn.Sequential{ nn.Dense(64, {activation = "relu", input_shape = {784}}),
--                                nn.Dense(10, {activation = "softmax"}) }
--   model:compile{optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = {"accuracy"}}
--   local history = model:fit(x, y, {epochs = 10, batch_size = 32, validation_split = 0.1})
--
-- Layers are built on the differentiable array ops of gpu.autograd; linear and softmax +
-- cross-entropy are single tape nodes with hand-written backward passes (fewer
-- temporaries, and the loss of a softmax output layer is computed from its logits as
-- one stable log-softmax, as Keras does).

local gpu = require "gpu"
local autograd = require "gpu.autograd"
local optim = require "gpu.optim"

local nn = {}
local fused = gpu.fused
local record = autograd.record
local nodes = setmetatable({}, { __index = function(_, x) return autograd.requires_grad(x) or nil end })

local function shape_str(s) return "(" .. table.concat(s, ", ") .. ")" end

local is_array
do
  local meta = getmetatable(gpu.zeros(1, { device = "cpu" }))    -- (no device start at require)
  is_array = function(v) return type(v) == "userdata" and getmetatable(v) == meta end
end

local function check_array(v, fname, arg, what)
  if not is_array(v) then
    error(("bad argument #%d to '%s' (%s: gpu.array expected, got %s)"):format(arg, fname, what, type(v)), 3)
  end
end

-- ---- Module base -------------------------------------------------------------------------------

local Module = {}
Module.__index = Module
nn.Module = Module

-- class(name [, parent]): a layer class; calling it constructs (cls.init(self, ...)).
local function class(name, parent)
  parent = parent or Module
  local cls = {}
  cls.__index = cls
  cls.__name = name
  cls.__call = function(self, ...) return self:forward(...) end
  cls.__tostring = function(self) return self:repr() end
  setmetatable(cls, {
    __index = parent,
    __call = function(c, ...)
      local self = setmetatable({ _params = {}, _pnames = {}, _modules = {}, _mnames = {}, training = true }, c)
      if c.init then c.init(self, ...) end
      return self
    end,
  })
  return cls
end
nn.class = class

function Module:register_parameter(name, p)
  if self._params[name] == nil then self._pnames[#self._pnames + 1] = name end
  if p ~= nil and not p:is_leaf() then p = p:detach() end
  self._params[name] = p and p:requires_grad() or nil
  self[name] = self._params[name]
  return self._params[name]
end

function Module:add_module(name, m)
  if self._modules[name] == nil then self._mnames[#self._mnames + 1] = name end
  self._modules[name] = m
  return m
end

function Module:repr() return getmetatable(self).__name .. "()" end

function Module:forward()
  error(getmetatable(self).__name .. ": forward is not implemented", 2)
end

-- named_parameters(): an ordered list of {name, array} pairs, also usable as
-- `for name, p in m:named_parameters() do`.
function Module:named_list(prefix, out, seen)
  out, seen = out or {}, seen or {}
  prefix = prefix or ""
  for _, n in ipairs(self._pnames) do
    local p = self._params[n]
    if p ~= nil and not seen[p] then
      seen[p] = true
      out[#out + 1] = { prefix .. n, p }
    end
  end
  for _, n in ipairs(self._mnames) do
    self._modules[n]:named_list(prefix .. n .. ".", out, seen)
  end
  return out
end

function Module:named_parameters()
  local list = self:named_list()
  local i = 0
  return setmetatable(list, { __call = function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end })
end

function Module:parameters()
  local out = {}
  for _, e in ipairs(self:named_list()) do out[#out + 1] = e[2] end
  return out
end

function Module:modules()
  local out = { self }
  for _, n in ipairs(self._mnames) do
    for _, m in ipairs(self._modules[n]:modules()) do out[#out + 1] = m end
  end
  return out
end

function Module:num_parameters()
  local c = 0
  for _, p in ipairs(self:parameters()) do c = c + p.size end
  return c
end

function Module:zero_grad()
  for _, p in ipairs(self:parameters()) do p:set_grad(nil) end
  return self
end

function Module:train(mode)
  if mode == nil then mode = true end
  for _, m in ipairs(self:modules()) do m.training = mode end
  return self
end

function Module:eval() return self:train(false) end

-- to(device): moves the parameters (new arrays; create optimizers after moving). A
-- parameter already there stays the same array ("cuda" is "cuda:0", as arrays name it).
function Module:to(device)
  if device == "cuda" then device = "cuda:0" end
  for _, m in ipairs(self:modules()) do
    for _, n in ipairs(m._pnames) do
      local p = m._params[n]
      if p ~= nil and p.device ~= device then
        m:register_parameter(n, gpu.no_grad(function() return p:to(device) end))
      end
    end
    m.device = device
  end
  return self
end

function Module:cuda() return self:to("cuda") end
function Module:cpu() return self:to("cpu") end

function Module:state_dict()
  local sd = {}
  for _, e in ipairs(self:named_list()) do sd[e[1]] = e[2] end
  return sd
end

-- load_state_dict(sd [, {strict = true}]): copies values into the parameters; names the
-- missing, unexpected and mis-shaped entries before changing anything.
function Module:load_state_dict(sd, opts)
  if type(sd) ~= "table" then error("load_state_dict: a table of arrays expected, got " .. type(sd), 2) end
  local strict = not (opts and opts.strict == false)
  local own = self:named_list()
  local missing, unexpected, misshaped = {}, {}, {}
  local names = {}
  for _, e in ipairs(own) do
    names[e[1]] = e[2]
    local v = sd[e[1]]
    if v == nil then missing[#missing + 1] = e[1]
    elseif not is_array(v) then misshaped[#misshaped + 1] = e[1] .. " (not an array)"
    elseif shape_str(v.shape) ~= shape_str(e[2].shape) then
      misshaped[#misshaped + 1] = ("%s (expected %s, got %s)"):format(e[1], shape_str(e[2].shape), shape_str(v.shape))
    end
  end
  for k in pairs(sd) do if names[k] == nil then unexpected[#unexpected + 1] = tostring(k) end end
  table.sort(missing); table.sort(unexpected); table.sort(misshaped)
  local faults = {}
  if #misshaped > 0 then faults[#faults + 1] = "mis-shaped: " .. table.concat(misshaped, ", ") end
  if strict and #missing > 0 then faults[#faults + 1] = "missing: " .. table.concat(missing, ", ") end
  if strict and #unexpected > 0 then faults[#faults + 1] = "unexpected: " .. table.concat(unexpected, ", ") end
  if #faults > 0 then error("load_state_dict: " .. table.concat(faults, "; "), 2) end
  gpu.no_grad(function()
    for _, e in ipairs(own) do
      local v = sd[e[1]]
      if v ~= nil then e[2][{}] = v:to(e[2].device):astype(e[2].dtype) end
    end
  end)
  return self
end

function Module:save(path)
  local sd = {}
  for k, v in pairs(self:state_dict()) do sd[k] = v:detach() end
  gpu.save_safetensors(path, sd)
  return self
end

function Module:load(path, opts)
  local sd = gpu.load_safetensors(path)
  return self:load_state_dict(sd, opts)
end

-- ---- initialisation (from gpu.random's seeded generator) -----------------------------------------

local init = {}
nn.init = init

local function fans(shape)
  if #shape == 2 then return shape[2], shape[1] end     -- (out, in) for Linear's weight
  return shape[1], shape[1]
end

function init.uniform(shape, lim, opts)
  return gpu.random.uniform(-lim, lim, shape, opts)
end

function init.glorot_uniform(fan_in, fan_out, shape, opts)
  return init.uniform(shape, math.sqrt(6 / (fan_in + fan_out)), opts)
end

function init.he_normal(fan_in, shape, opts)
  return gpu.random.normal(0, math.sqrt(2 / fan_in), shape, opts)
end

function init.he_uniform(fan_in, shape, opts)
  return init.uniform(shape, math.sqrt(6 / fan_in), opts)
end
nn.fans = fans

local function dev_opts(dtype, device)
  return { dtype = dtype or "float32", device = device or gpu.device() }
end

-- ---- functional forms --------------------------------------------------------------------------

-- Under gpu.autocast (see gpu.amp) the forward matmul computes in the half dtype and
-- returns float32; hmm runs the backward matmuls the same way (d: the forward's dtype).
local function hmm(a, b, d)
  if d == nil then return a:matmul(b) end
  return require("gpu.amp").autocast(d, a.matmul, a, b)
end

-- linear(x, w, b): x (..., in) @ w (out, in)^T + b (out): one tape node.
function nn.linear(x, w, b)
  local d = autograd.autocast_dtype()
  local y
  if d == nil then y = fused.linear(x, w, b)      -- GEMM + bias in one call, recorded below
  else y = gpu.no_grad(function() local r = x:matmul(w.T); if b ~= nil then r:add_(b) end; return r end) end
  record(y, { x, w, b }, function(g)
    local gx, gw, gb
    local g2 = g.ndim == 2 and g or g:reshape(-1, g.shape[g.ndim])
    if nodes[x] then gx = hmm(g, w, d) end
    if nodes[w] then
      local x2 = x.ndim == 2 and x or x:reshape(-1, x.shape[x.ndim])
      gw = hmm(g2.T, x2, d)
    end
    if b ~= nil and nodes[b] then gb = g2:sum(1) end
    return gx, gw, gb
  end)
  return y
end

-- dense(x, kernel, b): Keras layout, kernel (in, units).
function nn.dense(x, k, b)
  local d = autograd.autocast_dtype()
  local y
  if d == nil then y = fused.linear(x, k.T, b)
  else y = gpu.no_grad(function() local r = x:matmul(k); if b ~= nil then r:add_(b) end; return r end) end
  record(y, { x, k, b }, function(g)
    local gx, gk, gb
    local g2 = g.ndim == 2 and g or g:reshape(-1, g.shape[g.ndim])
    if nodes[x] then gx = hmm(g, k.T, d) end
    if nodes[k] then
      local x2 = x.ndim == 2 and x or x:reshape(-1, x.shape[x.ndim])
      gk = hmm(x2.T, g2, d)
    end
    if b ~= nil and nodes[b] then gb = g2:sum(1) end
    return gx, gk, gb
  end)
  return y
end

function nn.relu(x) return x:relu() end
function nn.sigmoid(x) return x:sigmoid() end
function nn.tanh(x) return x:tanh() end
function nn.gelu(x) return x:gelu() end
function nn.softplus(x) return x:softplus() end
function nn.leaky_relu(x, slope)
  slope = slope or 0.01
  return gpu.where(x:gt(0), x, x * slope)
end

-- softmax outputs remember their logits, so a cross-entropy on them is computed from
-- the logits (one stable log-softmax) instead of log(softmax).
local logits_of = setmetatable({}, { __mode = "k" })

-- Softmax over the last axis on a device with cuDNN (gpu.dnn.available): cudnnSoftmax
-- forward and backward, one tape node; nil where it does not apply (then array ops).
local dnn = gpu.dnn
-- (bfloat16 stays on array ops until cuDNN's legacy softmax has been seen taking it)
local dnn_floats = { float16 = true, float32 = true, float64 = true }
local function dnn_softmax(x, axis, log)
  if dnn == nil or dnn.enabled == false or (axis ~= -1 and axis ~= x.ndim)
    or not dnn_floats[x.dtype] or x.ndim < 1 or dnn.available(x.device) ~= true then
    return nil
  end
  local o = { log = log }
  local y = gpu.no_grad(function() return dnn.softmax(x, o) end)
  record(y, { x }, function(g)
    if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
    return dnn.softmax_backward(y, g, o)
  end)
  return y
end

function nn.log_softmax(x, axis)
  axis = axis or -1
  return dnn_softmax(x, axis, true) or x - x:logsumexp(axis, { keepdims = true })
end

function nn.softmax(x, axis)
  axis = axis or -1
  local y = dnn_softmax(x, axis, false) or (x - x:logsumexp(axis, { keepdims = true })):exp()
  if axis == -1 or axis == x.ndim then logits_of[y] = x end
  return y
end

-- ---- losses -------------------------------------------------------------------------------------

-- The smallest and largest element of a, as Lua numbers, in one copy back (each :item()
-- would wait for the device).
local function min_max(a)
  local b = gpu.stack({ a:min(), a:max() }):totable()
  return b[1], b[2]
end

-- Class labels 1..C as an integer array; checked before anything is computed.
local function check_labels(fname, labels, n, C)
  if not is_array(labels) then
    error(("%s: labels must be a gpu.array of class numbers 1..%d, got %s"):format(fname, C, type(labels)), 3)
  end
  if labels.ndim ~= 1 or labels.shape[1] ~= n then
    error(("%s: %d predictions but labels of shape %s (expected (%d))"):format(fname, n, shape_str(labels.shape), n), 3)
  end
  local lo, hi = min_max(labels)
  if lo < 1 or hi > C then
    local bad = lo < 1 and lo or hi
    error(("%s: labels are 1-based (1..%d); found %s"):format(fname, C, tostring(bad)), 3)
  end
  if not labels.dtype:match("int") then
    if (labels - labels:floor()):abs():max():item() ~= 0 then
      error(("%s: labels must be whole class numbers 1..%d"):format(fname, C), 3)
    end
  end
end

-- Labels 1..C against the positions 0..C-1 (arange(C), not arange(1, C + 1): C + 1 wraps
-- at math.maxinteger, and a float C would give float32 classes that miss labels past 2^24).
local function onehot(labels, C, dtype, device)
  local classes = gpu.arange(C, { device = device })
  return (labels:reshape(labels.shape[1], 1) - 1):eq(classes):astype(dtype)
end
nn.one_hot = function(labels, C, opts)
  opts = opts or {}
  local n = math.tointeger(C)
  if n == nil or n < 0 then
    error(("one_hot: number of classes must be a non-negative integer, got %s"):format(tostring(C)), 2)
  end
  return onehot(labels, n, opts.dtype or "float32", labels.device)
end

local function reduce_loss(per, reduction, fname)
  if reduction == nil or reduction == "mean" then return per:mean() end
  if reduction == "sum" then return per:sum() end
  if reduction == "none" then return per end
  error(("%s: reduction must be 'mean', 'sum' or 'none', got %s"):format(fname, tostring(reduction)), 3)
end

-- Cross-entropy from logits (one node): against labels (N, 1..C, already checked) with
-- label smoothing eps, or a target distribution (N, C) (labels nil). With t the smoothed
-- one-hot rows or the targets: loss_i = lse_i - sum_c t_ic z_ic; d/dz = softmax - t.
-- float32/float64 logits go through gpu.fused (one pass per row forward and backward);
-- other dtypes through array ops.
local fused_float = { float32 = true, float64 = true }
local function ce_from_logits(fname, z, labels, target, eps, reduction)
  local N, C = z.shape[1], z.shape[2]
  if reduction ~= nil and reduction ~= "mean" and reduction ~= "sum" and reduction ~= "none" then
    error(("%s: reduction must be 'mean', 'sum' or 'none', got %s"):format(fname, tostring(reduction)), 2)
  end
  local per, p, lt, fopts
  if fused_float[z.dtype] then
    if labels ~= nil and labels.dtype ~= "int64" then labels = labels:astype("int64") end
    lt = labels or target
    fopts = eps > 0 and { label_smoothing = eps } or nil
    per, p = fused.cross_entropy(z, lt, fopts)
  else
    if labels ~= nil then
      target = onehot(labels, C, z.dtype, z.device)
      if eps > 0 then target = target * (1 - eps) + eps / C end
    end
    per, p = gpu.no_grad(function()
      local lse = z:logsumexp(2, { keepdims = true })
      return (lse - (target * z):sum(2, { keepdims = true })):reshape(N), (z - lse):exp()
    end)
  end
  local out
  if reduction == "none" then out = per
  elseif reduction == "sum" then out = per:sum()
  else out = per:mean() end
  record(out, { z }, function(g)
    local scale = (reduction == nil or reduction == "mean") and 1 / N or 1
    if lt then
      return fused.cross_entropy_backward(p, lt, g, { label_smoothing = eps, scale = scale })
    end
    local d = p - target
    if reduction == "none" then return d * g:reshape(N, 1) end
    return d * (g * scale)
  end)
  return out
end

-- cross_entropy(logits (N, C), labels (N) in 1..C [, {label_smoothing=, reduction=}])
function nn.cross_entropy(logits, labels, opts)
  check_array(logits, "cross_entropy", 1, "logits")
  if logits.ndim ~= 2 then
    error(("cross_entropy: logits must be (N, C), got shape %s"):format(shape_str(logits.shape)), 2)
  end
  opts = opts or {}
  local N, C = logits.shape[1], logits.shape[2]
  check_labels("cross_entropy", labels, N, C)
  local eps = opts.label_smoothing or 0
  if type(eps) ~= "number" or eps < 0 or eps > 1 then error("cross_entropy: label_smoothing must be in [0, 1]", 2) end
  return ce_from_logits("cross_entropy", logits, labels, nil, eps, opts.reduction)
end

-- Keras: sparse_categorical_crossentropy(y_pred, labels): y_pred are probabilities (a
-- softmax output: computed from its logits) or logits with {from_logits = true}.
function nn.sparse_categorical_crossentropy(pred, labels, opts)
  check_array(pred, "sparse_categorical_crossentropy", 1, "predictions")
  opts = opts or {}
  if pred.ndim ~= 2 then
    error(("sparse_categorical_crossentropy: predictions must be (N, C), got shape %s"):format(shape_str(pred.shape)), 2)
  end
  local N, C = pred.shape[1], pred.shape[2]
  check_labels("sparse_categorical_crossentropy", labels, N, C)
  local z = opts.from_logits and pred or logits_of[pred]
  if z then return ce_from_logits("sparse_categorical_crossentropy", z, labels, nil, 0, opts.reduction) end
  local t = onehot(labels, C, pred.dtype, pred.device)
  -- plain probabilities: -log p_label, clipped as Keras does
  local p = pred:clip(1e-7, 1 - 1e-7)
  return reduce_loss(-(p:log() * t):sum(2), opts.reduction, "sparse_categorical_crossentropy")
end

function nn.categorical_crossentropy(pred, target, opts)
  check_array(pred, "categorical_crossentropy", 1, "predictions")
  check_array(target, "categorical_crossentropy", 2, "targets")
  opts = opts or {}
  if shape_str(pred.shape) ~= shape_str(target.shape) or pred.ndim ~= 2 then
    error(("categorical_crossentropy: predictions %s and targets %s must have the same (N, C) shape")
      :format(shape_str(pred.shape), shape_str(target.shape)), 2)
  end
  local t = target:astype(pred.dtype)
  local z = opts.from_logits and pred or logits_of[pred]
  if z then return ce_from_logits("categorical_crossentropy", z, nil, t:astype(z.dtype), 0, opts.reduction) end
  local p = pred:clip(1e-7, 1 - 1e-7)
  return reduce_loss(-(p:log() * t):sum(2), opts.reduction, "categorical_crossentropy")
end

local function same_shape(fname, a, b)
  check_array(a, fname, 1, "input")
  check_array(b, fname, 2, "target")
  if shape_str(a.shape) ~= shape_str(b.shape) then
    error(("%s: input %s and target %s differ in shape"):format(fname, shape_str(a.shape), shape_str(b.shape)), 3)
  end
end

function nn.mse_loss(a, b, opts)
  same_shape("mse_loss", a, b)
  local d = a - b
  return reduce_loss(d * d, opts and opts.reduction, "mse_loss")
end

function nn.binary_cross_entropy(p, y, opts)
  same_shape("binary_cross_entropy", p, y)
  local lp = p:log():clip(-100, nil)
  local lq = (1 - p):log():clip(-100, nil)
  return reduce_loss(-(y * lp + (1 - y) * lq), opts and opts.reduction, "binary_cross_entropy")
end

function nn.binary_cross_entropy_with_logits(z, y, opts)
  same_shape("binary_cross_entropy_with_logits", z, y)
  return reduce_loss(z:softplus() - y * z, opts and opts.reduction, "binary_cross_entropy_with_logits")
end

nn.cross_entropy_loss = nn.cross_entropy
nn.mse = nn.mse_loss

-- Loss modules: nn.CrossEntropyLoss{label_smoothing = 0.1}(logits, labels)
local function loss_class(name, fn)
  local cls = class(name)
  function cls:init(opts) self.opts = opts end
  function cls:forward(a, b) return fn(a, b, self.opts) end
  nn[name] = cls
end
loss_class("CrossEntropyLoss", nn.cross_entropy)
loss_class("MSELoss", nn.mse_loss)
loss_class("BCELoss", nn.binary_cross_entropy)
loss_class("BCEWithLogitsLoss", nn.binary_cross_entropy_with_logits)

-- losses by Keras name (compile{loss = "..."})
nn.losses = {
  sparse_categorical_crossentropy = nn.sparse_categorical_crossentropy,
  categorical_crossentropy = nn.categorical_crossentropy,
  cross_entropy = nn.cross_entropy,
  mse = nn.mse_loss, mean_squared_error = nn.mse_loss,
  binary_crossentropy = nn.binary_cross_entropy,
  binary_crossentropy_from_logits = nn.binary_cross_entropy_with_logits,
}

-- ---- layers -------------------------------------------------------------------------------------

local function check_width(layer, x, want)
  if x.ndim < 1 or x.shape[x.ndim] ~= want then
    error(("%s: expected input width %d, got %d (input shape %s)")
      :format(layer, want, x.ndim > 0 and x.shape[x.ndim] or 0, shape_str(x.shape)), 3)
  end
end

-- Linear(in, out [, {bias = true, dtype =, device =}]): y = x W^T + b, W (out, in).
local Linear = class("Linear")
nn.Linear = Linear
function Linear:init(fin, fout, opts)
  if math.type(fin) ~= "integer" or fin < 1 or math.type(fout) ~= "integer" or fout < 1 then
    error("Linear: in_features and out_features must be positive integers", 3)
  end
  opts = opts or {}
  self.in_features, self.out_features = fin, fout
  local o = dev_opts(opts.dtype, opts.device)
  local lim = 1 / math.sqrt(fin)         -- PyTorch's default (Kaiming uniform, a = sqrt 5)
  self:register_parameter("weight", init.uniform({ fout, fin }, lim, o))
  if opts.bias ~= false then self:register_parameter("bias", init.uniform({ fout }, lim, o)) end
end
function Linear:forward(x)
  check_array(x, "Linear", 1, "input")
  check_width(("Linear(%d, %d)"):format(self.in_features, self.out_features), x, self.in_features)
  return nn.linear(x, self.weight, self.bias)
end
function Linear:repr() return ("Linear(%d, %d)"):format(self.in_features, self.out_features) end

local activations = {
  relu = nn.relu, sigmoid = nn.sigmoid, tanh = nn.tanh, gelu = nn.gelu, softplus = nn.softplus,
  softmax = function(x) return nn.softmax(x, -1) end,
  log_softmax = function(x) return nn.log_softmax(x, -1) end,
  leaky_relu = nn.leaky_relu,
  linear = function(x) return x end,
}
nn.activations = activations

-- Dense(units [, {activation =, input_shape =, use_bias = true, kernel_initializer =}]):
-- Keras's layer; the kernel (in, units) is built at the first call unless input_shape
-- says the width.
local Dense = class("Dense")
nn.Dense = Dense
function Dense:init(units, opts)
  if math.type(units) ~= "integer" or units < 1 then error("Dense: units must be a positive integer", 3) end
  opts = opts or {}
  self.units = units
  self.opts = opts
  local act = opts.activation
  if act ~= nil and type(act) ~= "function" then
    if activations[act] == nil then
      local names = {}
      for k in pairs(activations) do names[#names + 1] = k end
      table.sort(names)
      error(("Dense: unknown activation '%s' (expected one of %s)"):format(tostring(act), table.concat(names, ", ")), 3)
    end
  end
  self.activation_name = type(act) == "string" and act or (act and "custom" or "linear")
  self.activation = type(act) == "function" and act or activations[act or "linear"]
  if opts.input_shape then
    local s = opts.input_shape
    if type(s) == "number" then s = { s } end
    self.input_shape = s
    self:build(s[#s])
  end
end
function Dense:build(fin, input_device)
  self.in_features = fin
  -- a layer built at its first call is built where its input is
  local o = dev_opts(self.opts.dtype, self.device or self.opts.device or input_device)
  local ki = self.opts.kernel_initializer or (self.activation_name == "relu" and "he_uniform" or "glorot_uniform")
  local k
  if ki == "he_uniform" then k = init.he_uniform(fin, { fin, self.units }, o)
  elseif ki == "he_normal" then k = init.he_normal(fin, { fin, self.units }, o)
  elseif ki == "glorot_uniform" then k = init.glorot_uniform(fin, self.units, { fin, self.units }, o)
  else error(("Dense: unknown kernel_initializer '%s'"):format(tostring(ki)), 4) end
  self:register_parameter("kernel", k)
  if self.opts.use_bias ~= false then self:register_parameter("bias", gpu.zeros({ self.units }, o)) end
end
function Dense:forward(x)
  check_array(x, "Dense", 1, "input")
  if self.in_features == nil then self:build(x.shape[x.ndim], x.device) end
  check_width(("Dense(%d)"):format(self.units), x, self.in_features)
  return self.activation(nn.dense(x, self.kernel, self.bias))
end
function Dense:repr() return ("Dense(%d, activation=%s)"):format(self.units, self.activation_name) end

local function simple(name, fn)
  local cls = class(name)
  function cls:forward(x) return fn(x, self) end
  nn[name] = cls
  return cls
end
simple("ReLU", function(x) return x:relu() end)
simple("Sigmoid", function(x) return x:sigmoid() end)
simple("Tanh", function(x) return x:tanh() end)
simple("GELU", function(x) return x:gelu() end)
simple("Softplus", function(x) return x:softplus() end)
simple("Identity", function(x) return x end)
local LeakyReLU = simple("LeakyReLU", function(x, self) return nn.leaky_relu(x, self.negative_slope) end)
function LeakyReLU:init(slope) self.negative_slope = slope or 0.01 end
local Softmax = simple("Softmax", function(x, self) return nn.softmax(x, self.axis) end)
function Softmax:init(axis) self.axis = axis or -1 end
local LogSoftmax = simple("LogSoftmax", function(x, self) return nn.log_softmax(x, self.axis) end)
function LogSoftmax:init(axis) self.axis = axis or -1 end

-- Flatten(): (N, ...) -> (N, prod ...)
local Flatten = simple("Flatten", function(x)
  if x.ndim <= 2 then return x end
  return x:reshape(x.shape[1], -1)
end)
function Flatten:init(opts) self.input_shape = opts and opts.input_shape end

-- Dropout(p): zeroes elements with probability p in training, scales the rest by 1/(1-p).
local Dropout = class("Dropout")
nn.Dropout = Dropout
function Dropout:init(p)
  p = p or 0.5
  if type(p) ~= "number" or p < 0 or p >= 1 then error("Dropout: p must be in [0, 1)", 3) end
  self.p = p
end
function Dropout:forward(x)
  if not self.training or self.p == 0 then return x end
  local keep = gpu.random.bernoulli(1 - self.p, x.shape, { dtype = x.dtype, device = x.device })
  return x * (keep * (1 / (1 - self.p)))
end
function Dropout:repr() return ("Dropout(p=%g)"):format(self.p) end

-- Embedding(num, dim): rows of a (num, dim) table, looked up by indices 1..num.
local Embedding = class("Embedding")
nn.Embedding = Embedding
function Embedding:init(num, dim, opts)
  if math.type(num) ~= "integer" or num < 1 or math.type(dim) ~= "integer" or dim < 1 then
    error("Embedding: num_embeddings and embedding_dim must be positive integers", 3)
  end
  opts = opts or {}
  self.num, self.dim = num, dim
  self:register_parameter("weight", gpu.random.normal(0, 1, { num, dim }, dev_opts(opts.dtype, opts.device)))
end
function Embedding:forward(idx)
  check_array(idx, "Embedding", 1, "indices")
  if not idx.dtype:match("int") then error("Embedding: indices must be an integer array, got " .. idx.dtype, 2) end
  local lo, hi = min_max(idx)
  if lo < 1 or hi > self.num then
    error(("Embedding: indices are 1-based (1..%d); found %d"):format(self.num, lo < 1 and lo or hi), 2)
  end
  local flat = idx:reshape(idx.size)
  local rows = self.weight:take(flat, 1)
  local s = idx.shape
  s[#s + 1] = self.dim
  return rows:reshape(s)
end
function Embedding:repr() return ("Embedding(%d, %d)"):format(self.num, self.dim) end

-- Sequential{m1, m2, ...} or Sequential(m1, m2, ...)
local Sequential = class("Sequential")
nn.Sequential = Sequential
function Sequential:init(first, ...)
  local list = (type(first) == "table" and getmetatable(first) == nil) and first or { first, ... }
  self.layers = {}
  for i, m in ipairs(list) do
    if type(m) ~= "table" or m.forward == nil then
      error(("Sequential: element #%d is not a module"):format(i), 3)
    end
    self:add(m)
  end
end
function Sequential:add(m)
  self.layers[#self.layers + 1] = m
  self:add_module(tostring(#self.layers), m)
  return self
end
function Sequential:forward(x)
  for i = 1, #self.layers do x = self.layers[i](x) end
  return x
end
function Sequential:repr()
  local parts = {}
  for i, m in ipairs(self.layers) do parts[i] = "  (" .. i .. "): " .. m:repr() end
  return "Sequential(\n" .. table.concat(parts, "\n") .. "\n)"
end

-- summary([input_shape]): a table of layers, output shapes and parameter counts, from
-- one forward pass of a batch of 1 (zeros). Prints it and returns the text.
function Module:summary(input_shape, opts)
  local layers = self.layers or { self }
  if input_shape == nil then
    local first = layers[1]
    input_shape = first and first.input_shape
    if input_shape == nil then
      error("summary: the input shape is unknown (pass it, or give the first layer input_shape =)", 2)
    end
  end
  if type(input_shape) == "number" then input_shape = { input_shape } end
  local s = { 1 }
  for i, d in ipairs(input_shape) do s[i + 1] = d end
  local device
  for _, p in ipairs(self:parameters()) do device = p.device break end
  local rows = { { "Layer (type)", "Output Shape", "Param #" } }
  local total = 0
  gpu.no_grad(function()
    local was = self.training
    self:eval()
    local x = gpu.zeros(s, { device = device })
    for i, m in ipairs(layers) do
      x = m(x)
      local os = x.shape
      os[1] = "None"
      local np = m:num_parameters()
      total = total + np
      rows[#rows + 1] = { ("%s (%s)"):format(i, getmetatable(m).__name), shape_str(os), tostring(np) }
    end
    self:train(was)
  end)
  local w = { 0, 0, 0 }
  for _, r in ipairs(rows) do for j = 1, 3 do w[j] = math.max(w[j], #r[j]) end end
  local lines = {}
  local rule = string.rep("-", w[1] + w[2] + w[3] + 6)
  for i, r in ipairs(rows) do
    lines[#lines + 1] = ("%-" .. w[1] .. "s   %-" .. w[2] .. "s   %" .. w[3] .. "s"):format(r[1], r[2], r[3])
    if i == 1 then lines[#lines + 1] = rule end
  end
  lines[#lines + 1] = rule
  lines[#lines + 1] = ("Total params: %d"):format(total)
  local text = table.concat(lines, "\n")
  if not (opts and opts.quiet) then print(text) end
  return text
end

-- ---- Keras style: compile / fit / evaluate / predict ---------------------------------------------

local function n_rows(x) return x.shape[1] end

-- A metric's running count: a Lua number, or a 0-d array summed on the device, which is
-- read (one wait for the device) only when shown, not at every step.
local function count_value(c) return type(c) == "number" and c or c:item() end

local function metric_fn(name)
  if name == "accuracy" or name == "acc" or name == "sparse_categorical_accuracy" or name == "categorical_accuracy" then
    return function(pred, y)
      local p = pred:argmax(2)
      local want = y.ndim == 2 and y:argmax(2) or y:astype(p.dtype)
      return p:eq(want):sum()               -- number correct, a 0-d array on pred's device
    end
  end
  error(("compile: unknown metric '%s' (supported: accuracy)"):format(tostring(name)), 4)
end

function Module:compile(opts)
  opts = opts or {}
  local loss = opts.loss or "sparse_categorical_crossentropy"
  if type(loss) == "string" then
    local f = nn.losses[loss]
    if f == nil then
      local names = {}
      for k in pairs(nn.losses) do names[#names + 1] = k end
      table.sort(names)
      error(("compile: unknown loss '%s' (expected one of %s)"):format(loss, table.concat(names, ", ")), 2)
    end
    self._loss_name, self._loss = loss, f
  elseif type(loss) == "table" or type(loss) == "function" then
    self._loss_name, self._loss = "custom", function(p, y) return loss(p, y) end
  else
    error("compile: loss must be a name, a function or a loss module", 2)
  end
  self._opt_spec = opts.optimizer or "rmsprop"
  self._optimizer = nil
  if type(self._opt_spec) == "table" and self._opt_spec.step then self._optimizer = self._opt_spec end
  if type(self._opt_spec) == "string" and optim.by_name(self._opt_spec) == nil then
    error(("compile: unknown optimizer '%s' (expected sgd, adam, adamw or rmsprop)"):format(self._opt_spec), 2)
  end
  self._metrics = {}
  for _, m in ipairs(opts.metrics or {}) do
    self._metrics[#self._metrics + 1] = { name = m == "acc" and "accuracy" or m, fn = metric_fn(m) }
  end
  self._compiled = true
  return self
end

local function ensure_optimizer(self)
  if self._optimizer then return self._optimizer end
  local params = self:parameters()
  if #params == 0 then
    error("fit: the model has no parameters yet (give the first layer input_shape =, or call the model once)", 3)
  end
  self._optimizer = optim.by_name(self._opt_spec)(params, {})
  return self._optimizer
end

local function check_xy(fname, x, y)
  check_array(x, fname, 1, "x")
  if y ~= nil then
    check_array(y, fname, 2, "y")
    if x.ndim == 0 or y.ndim == 0 or x.shape[1] ~= y.shape[1] then
      error(("%s: x has %d samples but y has %d"):format(fname, x.ndim > 0 and x.shape[1] or 0,
        y.ndim > 0 and y.shape[1] or 0), 3)
    end
  end
end

local function fmt_time(s)
  if s >= 3600 then return ("%dh%02dm"):format(s // 3600, (s % 3600) // 60) end
  if s >= 60 then return ("%dm%02ds"):format(s // 60, math.floor(s % 60)) end
  return ("%.1fs"):format(s)
end

local function progress_line(done, total, elapsed, vals, bar)
  local parts = {}
  if bar then
    local width = 30
    local filled = math.floor(width * done / total)
    parts[#parts + 1] = "[" .. string.rep("=", filled) .. (filled < width and ">" or "") ..
      string.rep(".", math.max(0, width - filled - 1)) .. "]"
  end
  parts[#parts + 1] = ("%d/%d"):format(done, total)
  if done < total and done > 0 then
    parts[#parts + 1] = "ETA " .. fmt_time(elapsed / done * (total - done))
  else
    parts[#parts + 1] = fmt_time(elapsed)
  end
  for _, kv in ipairs(vals) do parts[#parts + 1] = ("%s: %.4f"):format(kv[1], kv[2]) end
  return table.concat(parts, " - ")
end

-- One pass over (x, y) without updates: {loss =, metric = ...} as Lua numbers.
-- model_device(m): where the model's parameters are (nil before they exist)
local function model_device(m)
  for _, p in ipairs(m:parameters()) do return p.device end
end

local function run_eval(self, x, y, bs)
  local n = n_rows(x)
  local loss_sum, counts = 0, {}
  for _, m in ipairs(self._metrics) do counts[m.name] = 0 end
  local device = model_device(self)
  gpu.no_grad(function()
    for s = 1, n, bs do
      local e = math.min(n, s + bs - 1)
      local xb, yb = x[{ { s, e } }], y[{ { s, e } }]
      if device and xb.device ~= device then xb = xb:to(device) end
      if device and yb.device ~= device then yb = yb:to(device) end
      local pred = self(xb)
      loss_sum = loss_sum + self._loss(pred, yb):item() * (e - s + 1)
      for _, m in ipairs(self._metrics) do counts[m.name] = counts[m.name] + m.fn(pred, yb) end
    end
  end)
  local out = { loss = loss_sum / n }
  for _, m in ipairs(self._metrics) do out[m.name] = count_value(counts[m.name]) / n end
  return out
end

-- fit(x, y [, {epochs = 1, batch_size = 32, shuffle = true, validation_split =,
-- validation_data = {xv, yv}, verbose = 1, progress = "bar"|"plain",
-- precision = "float32"|"bf16"|"fp16"}]) -> history
-- precision = "bf16"/"fp16" trains under gpu.autocast (float32 master weights); fp16 adds
-- a GradScaler (self.grad_scaler, or opts.grad_scaler) whose skipped steps (inf/NaN
-- gradients) are reported per epoch in history.skipped and in the progress line.
function Module:fit(x, y, opts)
  if not self._compiled then error("fit: call compile{optimizer =, loss =} first", 2) end
  check_xy("fit", x, y)
  opts = opts or {}
  local epochs = opts.epochs or 1
  local bs = opts.batch_size or 32
  if math.type(epochs) ~= "integer" or epochs < 1 then error("fit: epochs must be a positive integer", 2) end
  if math.type(bs) ~= "integer" or bs < 1 then error("fit: batch_size must be a positive integer", 2) end
  local verbose = opts.verbose == nil and 1 or opts.verbose
  if verbose == false then verbose = 0 elseif verbose == true then verbose = 1 end
  local amp_dtype, scaler = false, nil
  if opts.precision ~= nil then
    amp_dtype = require("gpu.amp").dtype_name("fit", opts.precision, 2)
    if amp_dtype == "float16" then
      scaler = opts.grad_scaler or self.grad_scaler or optim.GradScaler()
      self.grad_scaler = scaler
    end
  end
  local xv, yv
  if opts.validation_data then
    xv, yv = opts.validation_data[1], opts.validation_data[2]
    check_xy("fit", xv, yv)
  elseif opts.validation_split then
    local vs = opts.validation_split
    if type(vs) ~= "number" or vs <= 0 or vs >= 1 then error("fit: validation_split must be in (0, 1)", 2) end
    local n = n_rows(x)
    local nv = math.floor(n * vs)
    if nv < 1 or nv >= n then error("fit: validation_split leaves no training or no validation samples", 2) end
    -- Keras takes the last fraction, before shuffling
    xv, yv = x[{ { n - nv + 1, n } }], y[{ { n - nv + 1, n } }]
    x, y = x[{ { 1, n - nv } }], y[{ { 1, n - nv } }]
  end
  local device
  for _, p in ipairs(self:parameters()) do device = p.device break end
  local n = n_rows(x)
  local bar = opts.progress == "bar" or (opts.progress == nil and gpu.isatty(io.stdout)
    and os.getenv("TERM") ~= "dumb" and os.getenv("GPULUA_PLAIN") == nil)
  local history = { loss = {} }
  if amp_dtype then history.skipped = {}; history.precision = amp_dtype end
  for _, m in ipairs(self._metrics) do history[m.name] = {} end
  if xv then
    history.val_loss = {}
    for _, m in ipairs(self._metrics) do history["val_" .. m.name] = {} end
  end
  self:train()
  local opt
  local shuffle = opts.shuffle ~= false
  for epoch = 1, epochs do
    local t0 = gpu.clock()
    -- the shuffle's indices live where x does (take needs them there), a copy where y does
    local order = shuffle and gpu.random.permutation(n, { device = x.device }) or nil
    local order_y = order and y.device ~= x.device and order:to(y.device) or order
    local seen, loss_sum, counts = 0, 0, {}
    for _, m in ipairs(self._metrics) do counts[m.name] = 0 end
    if verbose == 1 and bar and epochs > 1 then io.write(("Epoch %d/%d\n"):format(epoch, epochs)) end
    local last_draw = 0
    local step = 0
    local skipped0 = scaler and scaler.skipped or 0
    local loss_n = 0
    for s = 1, n, bs do
      step = step + 1
      local e = math.min(n, s + bs - 1)
      local xb, yb
      if order then
        xb, yb = x:take(order[{ { s, e } }], 1), y:take(order_y[{ { s, e } }], 1)
      else
        xb, yb = x[{ { s, e } }], y[{ { s, e } }]
      end
      if device and xb.device ~= device then xb = xb:to(device) end
      if device and yb.device ~= device then yb = yb:to(device) end
      local pred, loss
      if amp_dtype then
        pred, loss = require("gpu.amp").autocast(amp_dtype, function()
          local p = self(xb)
          return p, self._loss(p, yb)
        end)
      else
        pred = self(xb)
        loss = self._loss(pred, yb)
      end
      if opt == nil then opt = ensure_optimizer(self) end
      local lv = loss:item()
      local finite = lv == lv and lv ~= math.huge and lv ~= -math.huge
      if lv ~= lv and not scaler then
        error(("fit: the loss is NaN at step %d of epoch %d (lower the learning rate, or check the inputs)")
          :format(step, epoch), 2)
      end
      opt:zero_grad()
      if scaler then
        scaler:scale(loss):backward()
        scaler:step(opt)
        scaler:update()
      else
        loss:backward()
        opt:step()
      end
      local nb = e - s + 1
      seen = seen + nb
      if finite or not scaler then
        loss_sum = loss_sum + lv * nb
        loss_n = loss_n + nb
      end
      if #self._metrics > 0 then
        gpu.no_grad(function()
          for _, m in ipairs(self._metrics) do counts[m.name] = counts[m.name] + m.fn(pred, yb) end
        end)
      end
      if verbose == 1 and bar then
        local now = gpu.clock()
        if now - last_draw > 0.1 or seen == n then
          last_draw = now
          local vals = { { "loss", loss_sum / math.max(loss_n, 1) } }
          for _, m in ipairs(self._metrics) do vals[#vals + 1] = { m.name, count_value(counts[m.name]) / seen } end
          io.write("\r" .. progress_line(seen, n, now - t0, vals, true))
          io.stdout:flush()
        end
      end
    end
    local vals = { { "loss", loss_sum / math.max(loss_n, 1) } }
    history.loss[epoch] = loss_sum / math.max(loss_n, 1)
    local skipped_note = ""
    if amp_dtype then
      local k = scaler and scaler.skipped - skipped0 or 0
      history.skipped[epoch] = k
      if scaler then skipped_note = (" - skipped steps: %d (fp16 loss scale %g)"):format(k, scaler:get_scale()) end
    end
    for _, m in ipairs(self._metrics) do
      local c = count_value(counts[m.name])
      history[m.name][epoch] = c / n
      vals[#vals + 1] = { m.name, c / n }
    end
    if xv then
      self:eval()
      local r = run_eval(self, xv, yv, math.max(bs, 256))
      self:train()
      history.val_loss[epoch] = r.loss
      vals[#vals + 1] = { "val_loss", r.loss }
      for _, m in ipairs(self._metrics) do
        history["val_" .. m.name][epoch] = r[m.name]
        vals[#vals + 1] = { "val_" .. m.name, r[m.name] }
      end
    end
    if verbose == 1 or verbose == 2 then
      local line = progress_line(n, n, gpu.clock() - t0, vals, bar and verbose == 1)
      line = line .. skipped_note
      if bar and verbose == 1 then io.write("\r" .. line .. "\n")
      else io.write(("epoch %d/%d: "):format(epoch, epochs) .. line .. "\n") end
      io.stdout:flush()
    end
  end
  if amp_dtype then
    local total = 0
    for _, k in ipairs(history.skipped) do total = total + k end
    history.skipped_steps = total
  end
  self.history = history
  return history
end

function Module:evaluate(x, y, opts)
  if not self._compiled then error("evaluate: call compile{optimizer =, loss =} first", 2) end
  check_xy("evaluate", x, y)
  opts = opts or {}
  local was = self.training
  self:eval()
  local r = run_eval(self, x, y, opts.batch_size or 256)
  self:train(was)
  if opts.verbose then
    local parts = { ("loss: %.4f"):format(r.loss) }
    for _, m in ipairs(self._metrics) do parts[#parts + 1] = ("%s: %.4f"):format(m.name, r[m.name]) end
    print(table.concat(parts, " - "))
  end
  return r
end

function Module:predict(x, opts)
  check_xy("predict", x)
  opts = opts or {}
  local bs = opts.batch_size or 256
  local was = self.training
  self:eval()
  local parts = {}
  local device = model_device(self)
  gpu.no_grad(function()
    local n = n_rows(x)
    for s = 1, n, bs do
      local xb = x[{ { s, math.min(n, s + bs - 1) } }]
      if device and xb.device ~= device then xb = xb:to(device) end
      parts[#parts + 1] = self(xb)
    end
  end)
  self:train(was)
  if #parts == 1 then return parts[1] end
  return gpu.concat(parts, 1)
end

require("gpu.conv")(nn)    -- Conv2d, pooling, batch norm (lua/gpu/conv.lua)

return nn
