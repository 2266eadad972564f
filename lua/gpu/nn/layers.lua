-- gpu.nn.layers: Linear (PyTorch), Dense (Keras), the activation layers, Flatten, Dropout
-- and Embedding.
local options = require "gpu.options"
local raise, argerror, check_array, shape_str = options.raise, options.argerror, options.check_array,
  options.shape_str
local gpu = require "gpu"
local F = require "gpu.nn.functional"
local module = require "gpu.nn.module"
local class = module.class
local init = require "gpu.nn.initializers"
local check_labels = require("gpu.nn.losses").check_labels
local regularizers = require "gpu.nn.regularizers"

local Lay = {}

local function check_width(layer, x, want)
  if x.ndim < 1 or x.shape[x.ndim] ~= want then
    raise("%s: expected input width %d, got %d (input shape %s)", layer, want, x.ndim > 0 and x.shape[x.ndim] or 0,
      shape_str(x.shape))
  end
end

local function positive(fname, argn, v, what)
  return options.value(v, { type = "integer", min = 1 }, fname, argn, what)
end

-- ---- Linear ---------------------------------------------------------------------------------

local LINEAR = options.declare("nn.Linear", module.with_placement {
  bias = { type = "boolean", default = true },
}, { example = "gpu.nn.Linear(2, 3, %s)" })

-- Linear(in, out [, {bias = true, dtype =, device =}] or [, bias]): y = x W^T + b, W (out, in).
local Linear = class("Linear")
function Linear:init(fin, fout, opts)
  positive("nn.Linear", 1, fin, "in_features")
  positive("nn.Linear", 2, fout, "out_features")
  if type(opts) == "boolean" then opts = { bias = opts } end        -- PyTorch's positional bias
  local o = LINEAR:check(opts, 3)
  self.in_features, self.out_features = fin, fout
  local p = module.placement(o)
  local lim = 1 / math.sqrt(fin)         -- PyTorch's default (Kaiming uniform, a = sqrt 5)
  self:register_parameter("weight", init.uniform({ fout, fin }, lim, p))
  if o.bias then self:register_parameter("bias", init.uniform({ fout }, lim, p)) end
end
function Linear:forward(x)
  local name = self:repr()
  check_array(x, name, 1, "input")
  check_width(name, x, self.in_features)
  return F.linear(x, self.weight, self.bias)
end
function Linear:repr() return ("Linear(%d, %d)"):format(self.in_features, self.out_features) end

-- ---- Dense ----------------------------------------------------------------------------------

local activations = {
  relu = F.relu, sigmoid = F.sigmoid, tanh = F.tanh, gelu = F.gelu, softplus = F.softplus,
  softmax = function(x) return F.softmax(x, -1) end,
  log_softmax = function(x) return F.log_softmax(x, -1) end,
  leaky_relu = F.leaky_relu,
  linear = function(x) return x end,
}
Lay.activations = activations
local activation_names = {}
for k in pairs(activations) do activation_names[#activation_names + 1] = k end
table.sort(activation_names)

local kernel_inits = {
  glorot_uniform = function(fin, units, o) return init.glorot_uniform(fin, units, { fin, units }, o) end,
  glorot_normal = function(fin, units, o) return init.glorot_normal(fin, units, { fin, units }, o) end,
  he_uniform = function(fin, units, o) return init.he_uniform(fin, { fin, units }, o) end,
  he_normal = function(fin, units, o) return init.he_normal(fin, { fin, units }, o) end,
}
local kernel_init_names = {}
for k in pairs(kernel_inits) do kernel_init_names[#kernel_init_names + 1] = k end
table.sort(kernel_init_names)

local function shape_list(v)
  if math.type(v) == "integer" then return v >= 1, "must be a positive integer or a list of them" end
  if #v == 0 then return false, "must list at least one size" end
  for _, d in ipairs(v) do
    if math.type(d) ~= "integer" or d < 1 then return false, "must hold positive integers" end
  end
  return true
end
local input_shape_key = { type = "integer|table", check = shape_list }

local DENSE = options.declare("nn.Dense", module.with_placement(regularizers.keys {
  name = { type = "string" },
  activation = { type = "string|callable", choices = activation_names, default = "linear" },
  input_shape = input_shape_key,
  input_dim = { type = "integer", min = 1 },
  use_bias = { type = "boolean", default = true },
  kernel_initializer = { choices = kernel_init_names },
  bias_initializer = { choices = { "zeros", "ones" }, default = "zeros" },
}), { example = "gpu.nn.Dense(4, %s)" })

-- Dense(units [, activation] [, {activation =, input_shape =, use_bias = true,
-- kernel_initializer =, bias_initializer = "zeros", kernel_regularizer =, bias_regularizer =,
-- activity_regularizer =, kernel_constraint =, bias_constraint =, name =, dtype =, device =}]):
-- Keras's layer; the kernel (in, units) is built at the first call unless input_shape says
-- the width.
local Dense = class("Dense")
function Dense:init(units, act, opts)
  positive("nn.Dense", 1, units, "units")
  if type(act) == "table" and getmetatable(act) == nil and opts == nil then act, opts = nil, act end
  local o
  if act ~= nil then                       -- Keras's positional activation: Dense(64, "relu")
    o = DENSE:check(opts, 3)
    if opts and opts.activation ~= nil then argerror("nn.Dense", 3, "activation given twice") end
    o.activation = options.value(act, DENSE.keys.activation, "nn.Dense", 2, "activation")
  else
    o = DENSE:check(opts, 2)
  end
  self.units, self.opts = units, o
  regularizers.attach(self, o)
  if o.name then self.name = o.name end                -- Keras's layer name (a functional model's)
  self.activation_name = type(o.activation) == "string" and o.activation or "custom"
  self.activation = activations[o.activation] or o.activation
  local s = o.input_shape or o.input_dim
  if s then
    if type(s) == "number" then s = { s } end
    self.input_shape = s
    self:build(s[#s])
  end
end
function Dense:build(fin, input_device)
  self.in_features = fin
  -- a layer built at its first call is built where its input is
  local p = module.placement { dtype = self.opts.dtype, device = self.device or self.opts.device or input_device }
  local ki = self.opts.kernel_initializer or (self.activation_name == "relu" and "he_uniform" or "glorot_uniform")
  self:register_parameter("kernel", kernel_inits[ki](fin, self.units, p))
  if self.opts.use_bias then
    local make = self.opts.bias_initializer == "ones" and gpu.ones or gpu.zeros
    self:register_parameter("bias", make({ self.units }, p))
  end
end
function Dense:forward(x)
  check_array(x, "nn.Dense", 1, "input")
  if self.in_features == nil then
    if x.ndim < 1 or x.shape[x.ndim] < 1 then
      raise("Dense(%d): an input of shape %s has no width to build the kernel from", self.units, shape_str(x.shape))
    end
    self:build(x.shape[x.ndim], x.device)
  end
  check_width(("Dense(%d)"):format(self.units), x, self.in_features)
  return regularizers.activity(self, self.activation(F.dense(x, self.kernel, self.bias)))
end
Dense.keeps_mask = true           -- a Keras step mask goes on through it (module.call_masked)
function Dense:repr() return ("Dense(%d, activation=%s)"):format(self.units, self.activation_name) end

-- ---- activations, Flatten, Dropout ------------------------------------------------------------

-- A layer nn.<name>(arg) whose one option 'key' may also be given positionally; fn(x, self).
local function simple(name, fn, key, spec)
  local cls = class(name)
  local keys = {}
  if key then keys[key] = spec end
  local decl = options.declare("nn." .. name, keys,
    { example = ("gpu.nn.%s(%%s)(gpu.ones(2, 3))"):format(name) })
  function cls:init(v)
    if v ~= nil and (type(v) ~= "table" or getmetatable(v) ~= nil) and key then v = { [key] = v } end
    local o = decl:check(v, 1)
    if key then self[key] = o[key] end
  end
  function cls:forward(x) return fn(check_array(x, "nn." .. name, 1, "input"), self) end
  Lay[name] = cls
  return cls
end
-- ReLU([inplace = false]): inplace writes the input (PyTorch's nn.ReLU(inplace=True); under
-- autograd recorded as an in-place op, refused on a leaf that requires grad)
simple("ReLU", function(x, self) if self.inplace then return x:relu_() end return x:relu() end, "inplace",
  { type = "boolean", default = false })
simple("Sigmoid", function(x) return x:sigmoid() end)
simple("Tanh", function(x) return x:tanh() end)
simple("GELU", function(x, self) return F.gelu(x, self.approximate) end, "approximate",
  { choices = { "none", "tanh" }, default = "none" })
simple("Softplus", function(x) return x:softplus() end)
simple("Identity", function(x) return x end)
simple("LeakyReLU", function(x, self) return F.leaky_relu(x, self.negative_slope) end,
  "negative_slope", { type = "number", default = 0.01 })
simple("Softmax", function(x, self) return F.softmax(x, self.dim) end, "dim", { type = "integer", default = -1 })
simple("LogSoftmax", function(x, self) return F.log_softmax(x, self.dim) end, "dim", { type = "integer", default = -1 })
simple("Dropout", function(x, self)
  if not self.training or self.p == 0 then return x end
  local keep = gpu.random.bernoulli(1 - self.p, x.shape, { dtype = x.dtype, device = x.device })
  return x * (keep * (1 / (1 - self.p)))
end, "p", { type = "number", min = 0, max = 1, max_open = true, default = 0.5 })
Lay.Dropout.keeps_mask = true
function Lay.Dropout:repr() return ("Dropout(p=%g)"):format(self.p) end

-- Flatten([{input_shape =}]): (N, ...) -> (N, prod ...)
simple("Flatten", function(x)
  if x.ndim <= 2 then return x end
  return x:reshape(x.shape[1], -1)
end, "input_shape", input_shape_key)

-- ---- Embedding ------------------------------------------------------------------------------

local not_here = { unsupported = true }
local EMBEDDING = options.declare("nn.Embedding", module.with_placement {
  padding_idx = { type = "integer" },
  mask_zero = { type = "boolean", default = false },
  max_norm = not_here, norm_type = not_here, scale_grad_by_freq = not_here, sparse = not_here,
}, { example = "gpu.nn.Embedding(4, 2, %s)" })

-- Embedding(num, dim [, {padding_idx =, mask_zero = false, dtype =, device =}]): rows of a
-- (num, dim) table, looked up by indices 1..num. The padding_idx row starts at zeros and gets
-- no gradient. mask_zero (Keras's): 0 is a padding id, looked up as zeros (no row, so no
-- gradient), and the layer's mask (compute_mask) is ids ~= 0: the steps a following Keras
-- recurrent layer, GlobalAveragePooling1D... take, as after Masking.
local Embedding = class("Embedding")
function Embedding:init(num, dim, opts)
  positive("nn.Embedding", 1, num, "num_embeddings")
  positive("nn.Embedding", 2, dim, "embedding_dim")
  local o = EMBEDDING:check(opts, 3)
  local pad = o.padding_idx
  if pad ~= nil then
    if pad < 0 then pad = num + 1 + pad end            -- PyTorch's from-the-end form
    if pad < 1 or pad > num then
      argerror("nn.Embedding", 3, "option 'padding_idx' must be in 1..%d (or -%d..-1), got %d", num, num, o.padding_idx)
    end
  end
  self.num, self.dim, self.padding_idx, self.mask_zero = num, dim, pad, o.mask_zero
  local w = gpu.random.normal(0, 1, { num, dim }, module.placement(o))
  if pad then w[{ pad }] = 0 end
  self:register_parameter("weight", w)
end
function Embedding:forward(idx)
  check_labels("nn.Embedding", idx, self.num, { argn = 1, what = "indices", integer = true, zero = self.mask_zero })
  local flat = idx:reshape(idx.size)
  local rows
  if self.mask_zero then                 -- the padding id 0 reads row 1, then zeros in its place
    local keep = flat:ne(0)
    rows = gpu.where(keep:reshape(idx.size, 1), self.weight:take(gpu.maximum(flat, 1), 1), 0)
  else
    rows = self.weight:take(flat, 1)
  end
  if self.padding_idx then       -- the padding row's value, with no gradient flowing to it
    rows = gpu.where(flat:eq(self.padding_idx):reshape(idx.size, 1), rows:detach(), rows)
  end
  local s = idx.shape
  s[#s + 1] = self.dim
  return rows:reshape(s)
end
-- Keras's compute_mask: the ids that are not the padding 0 (idx's shape), with mask_zero;
-- else no mask
function Embedding:compute_mask(idx, _)
  if not self.mask_zero then return nil end
  check_array(idx, "nn.Embedding:compute_mask", 1, "indices")
  return idx:ne(0)
end
function Embedding:repr()
  return ("Embedding(%d, %d%s)"):format(self.num, self.dim, self.mask_zero and ", mask_zero=True" or "")
end

Lay.Linear, Lay.Dense, Lay.Embedding = Linear, Dense, Embedding
return Lay
