-- gpu.nn.more_layers: more of PyTorch's layers and functional forms, as compositions of
-- dispatched ops (both devices, differentiable): GLU, Softmin, Hardshrink, Softshrink,
-- Threshold, CosineSimilarity, PairwiseDistance, ChannelShuffle, Dropout1d/2d/3d,
-- AlphaDropout, the padding layers, InstanceNorm1d/2d/3d, LocalResponseNorm, Bilinear,
-- RNNCell/LSTMCell/GRUCell, ParameterList/ParameterDict; nn.functional's dropout,
-- dropout1d/2d/3d, alpha_dropout, glu, softmin, hardshrink, softshrink, threshold,
-- normalize, cosine_similarity, pairwise_distance, embedding, gumbel_softmax and pad.
--
-- Dims are 1-based (PyTorch's dim = 1 is dim = 2 here); a negative dim counts from the end.
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"

local raise, argerror, check_array, shape_str, type_name = options.raise, options.argerror, options.check_array,
  options.shape_str, options.type_name
local class = module.class
local F = require "gpu.nn.functional"

local P = { functional = {} }
local Fn = P.functional

-- a dim of x (1-based, negatives from the end) as a positive one
local function dim_of(fname, x, d)
  local nd = x.ndim
  if math.type(d) ~= "integer" or d == 0 or d > nd or d < -nd then
    raise("%s: dim %s is out of range for an input of %d dimensions", fname, tostring(d), nd)
  end
  return d < 0 and nd + 1 + d or d
end

local function declare(name, keys, example) return options.declare(name, keys, { example = example }) end

-- a size argument: an integer >= 1, required
local function size_arg(fname, argn, v, what)
  if math.type(v) ~= "integer" or v < 1 then argerror(fname, argn, "%s must be an integer >= 1, got %s", what, type_name(v)) end
  return v
end

-- ---- elementwise ---------------------------------------------------------------------------

-- glu(x [, dim = -1]): the first half times the sigmoid of the second, along dim
function Fn.glu(x, dim)
  check_array(x, "nn.glu", 1, "input")
  local d = dim_of("nn.glu", x, dim or -1)
  local n = x.shape[d]
  if n % 2 ~= 0 then raise("nn.glu: dim %d has %d elements, an odd number (it is halved)", d, n) end
  local a, b = table.unpack(gpu.split(x, 2, d))
  return a * b:sigmoid()
end

-- softmin(x [, dim = -1]): softmax(-x)
function Fn.softmin(x, dim)
  check_array(x, "nn.softmin", 1, "input")
  return F.softmax(-x, dim_of("nn.softmin", x, dim or -1))
end

-- hardshrink(x [, lambd = 0.5]): x where |x| > lambd, else 0; softshrink: x - sign(x) lambd
-- there, 0 elsewhere
function Fn.hardshrink(x, lambd)
  check_array(x, "nn.hardshrink", 1, "input")
  lambd = options.value(lambd, { type = "number", min = 0, default = 0.5 }, "nn.hardshrink", 2, "lambd")
  return gpu.where(x:abs():gt(lambd), x, 0):astype(x.dtype)
end
function Fn.softshrink(x, lambd)
  check_array(x, "nn.softshrink", 1, "input")
  lambd = options.value(lambd, { type = "number", min = 0, default = 0.5 }, "nn.softshrink", 2, "lambd")
  return gpu.where(x:gt(lambd), x - lambd, gpu.where(x:lt(-lambd), x + lambd, 0)):astype(x.dtype)
end

-- threshold(x, threshold, value): x where x > threshold, else value
function Fn.threshold(x, threshold, value)
  check_array(x, "nn.threshold", 1, "input")
  options.value(threshold, { type = "number" }, "nn.threshold", 2, "threshold")
  options.value(value, { type = "number" }, "nn.threshold", 3, "value")
  return gpu.where(x:gt(threshold), x, value):astype(x.dtype)
end

-- normalize(x [, {p = 2, dim = 2, eps = 1e-12}]): x / max(||x||_p along dim, eps)
local NORMALIZE = declare("nn.normalize", { p = { type = "number", min = 0, min_open = true, default = 2 },
  dim = { type = "integer", default = 2 }, eps = { type = "number", min = 0, default = 1e-12 } },
  "gpu.nn.functional.normalize(gpu.ones(2, 3), %s)")
local function p_norm(x, p, d, keep)
  local a = x:abs()
  if p == 2 then return a:square():sum(d, { keepdims = keep }):sqrt() end
  if p == 1 then return a:sum(d, { keepdims = keep }) end
  if p == math.huge then return a:max({ d }, { keepdims = keep }) end
  return (a ^ p):sum(d, { keepdims = keep }) ^ (1 / p)
end
function Fn.normalize(x, opts)
  check_array(x, "nn.normalize", 1, "input")
  local o = NORMALIZE:check(opts, 2)
  local d = dim_of("nn.normalize", x, o.dim)
  return x / p_norm(x, o.p, d, true):maximum(o.eps)
end

-- cosine_similarity(x1, x2 [, {dim = 2, eps = 1e-8}]): PyTorch's, the norms clamped to eps
local COSSIM = declare("nn.cosine_similarity", { dim = { type = "integer", default = 2 },
  eps = { type = "number", min = 0, default = 1e-8 } }, "gpu.nn.functional.cosine_similarity(gpu.ones(2, 3), gpu.ones(2, 3), %s)")
local function cos_sim(x1, x2, o, fname)
  check_array(x1, fname, 1, "x1")
  check_array(x2, fname, 2, "x2")
  local shape = gpu.broadcast_shapes(x1.shape, x2.shape)
  local a, b = x1:broadcast_to(shape), x2:broadcast_to(shape)
  local d = dim_of(fname, a, o.dim)
  local na = a:square():sum(d):sqrt():maximum(o.eps)
  local nb = b:square():sum(d):sqrt():maximum(o.eps)
  return (a * b):sum(d) / (na * nb)
end
function Fn.cosine_similarity(x1, x2, opts)
  return cos_sim(x1, x2, COSSIM:check(opts, 3), "nn.cosine_similarity")
end

-- pairwise_distance(x1, x2 [, {p = 2, eps = 1e-6, keepdim = false}]): ||x1 - x2 + eps||_p over
-- the last axis
local PAIRDIST = declare("nn.pairwise_distance", { p = { type = "number", min = 0, min_open = true, default = 2 },
  eps = { type = "number", min = 0, default = 1e-6 }, keepdim = { type = "boolean", default = false } },
  "gpu.nn.functional.pairwise_distance(gpu.ones(2, 3), gpu.zeros(2, 3), %s)")
local function pair_dist(x1, x2, o, fname)
  check_array(x1, fname, 1, "x1")
  check_array(x2, fname, 2, "x2")
  local d = x1 - x2 + o.eps
  if d.ndim == 0 then d = d:reshape(1) end
  return p_norm(d, o.p, d.ndim, o.keepdim)
end
function Fn.pairwise_distance(x1, x2, opts)
  return pair_dist(x1, x2, PAIRDIST:check(opts, 3), "nn.pairwise_distance")
end

-- ---- dropout -------------------------------------------------------------------------------

local DROP = { p = { type = "number", min = 0, max = 1, default = 0.5 }, training = { type = "boolean", default = true },
  inplace = { type = "boolean", default = false } }

-- mask of whole channels: x (N, C, *) (or (C, *) without a batch: nbatch = 0)
local function channel_mask(x, p, spatial)
  local shape = {}
  local lead = x.ndim - spatial
  for d = 1, x.ndim do shape[d] = d <= lead and x.shape[d] or 1 end
  return gpu.random.bernoulli(1 - p, shape, { dtype = x.dtype, device = x.device })
end

local function drop(x, o, fname, spatial)
  check_array(x, fname, 1, "input")
  if not o.training or o.p == 0 then return x end
  if o.p == 1 then return x * 0 end
  if spatial then
    if x.ndim ~= spatial + 1 and x.ndim ~= spatial + 2 then
      raise("%s: expected an input of %d or %d dimensions ((N, C, ...) or (C, ...)), got %s", fname, spatial + 1,
        spatial + 2, shape_str(x.shape))
    end
    return x * channel_mask(x, o.p, spatial) * (1 / (1 - o.p))
  end
  return x * gpu.random.bernoulli(1 - o.p, x.shape, { dtype = x.dtype, device = x.device }) * (1 / (1 - o.p))
end

-- alpha_dropout: SELU's self-normalising dropout (dropped values at -alpha' then an affine
-- map keeping mean and variance)
local ALPHA_P = -1.7580993408473766          -- -SELU's scale * alpha
local function alpha_drop(x, o, fname)
  check_array(x, fname, 1, "input")
  if not o.training or o.p == 0 then return x end
  if o.p == 1 then return x * 0 end
  local q = 1 - o.p
  local a = (q + ALPHA_P * ALPHA_P * q * o.p) ^ -0.5
  local b = -a * ALPHA_P * o.p
  local keep = gpu.random.bernoulli(q, x.shape, { dtype = x.dtype, device = x.device })
  return (x * keep + (1 - keep) * ALPHA_P) * a + b
end

for _, d in ipairs({ { "dropout", nil }, { "dropout1d", 1 }, { "dropout2d", 2 }, { "dropout3d", 3 } }) do
  local name, spatial = d[1], d[2]
  local shape = ({ "2, 3", "2, 3, 4", "2, 3, 4, 4", "2, 3, 4, 4, 4" })[(spatial or 0) + 1]
  local decl = declare("nn.functional." .. name, DROP, ("gpu.nn.functional.%s(gpu.ones(%s), %%s)"):format(name, shape))
  Fn[name] = function(x, opts)
    if type(opts) == "number" then opts = { p = opts } end
    return drop(x, decl:check(opts, 2), "nn." .. name, spatial)
  end
end
local ALPHA_DECL = declare("nn.functional.alpha_dropout", DROP, "gpu.nn.functional.alpha_dropout(gpu.ones(2, 3), %s)")
function Fn.alpha_dropout(x, opts)
  if type(opts) == "number" then opts = { p = opts } end
  return alpha_drop(x, ALPHA_DECL:check(opts, 2), "nn.alpha_dropout")
end

-- ---- embedding, gumbel_softmax, pad ----------------------------------------------------------

-- embedding(input (integers 1..V), weight (V, D)): the rows of weight (differentiable in weight)
function Fn.embedding(input, weight)
  check_array(input, "nn.embedding", 1, "input")
  check_array(weight, "nn.embedding", 2, "weight")
  if weight.ndim ~= 2 then raise("nn.embedding: weight must be (num_embeddings, dim), got %s", shape_str(weight.shape)) end
  require("gpu.nn.losses").check_labels("nn.embedding", input, weight.shape[1], { argn = 1, what = "indices" })
  local flat = input:reshape(-1):astype("int64"):to(weight.device)
  local rows = weight:index(1, flat)
  local shape = { table.unpack(input.shape) }
  shape[#shape + 1] = weight.shape[2]
  return rows:reshape(table.unpack(shape))
end

local GUMBEL = declare("nn.gumbel_softmax", { tau = { type = "number", min = 0, min_open = true, default = 1 },
  hard = { type = "boolean", default = false }, dim = { type = "integer", default = -1 } },
  "gpu.nn.functional.gumbel_softmax(gpu.zeros(2, 3), %s)")
-- gumbel_softmax(logits [, {tau = 1, hard = false, dim = -1}]): softmax((logits + g) / tau),
-- g Gumbel(0, 1); hard: the one-hot of its argmax with the soft gradient (straight through)
function Fn.gumbel_softmax(logits, opts)
  check_array(logits, "nn.gumbel_softmax", 1, "logits")
  local o = GUMBEL:check(opts, 2)
  local d = dim_of("nn.gumbel_softmax", logits, o.dim)
  local g = -(-gpu.random.uniform(0, 1, logits.shape, { dtype = logits.dtype, device = logits.device })
    :maximum(1e-20):log()):maximum(1e-20):log()
  local y = F.softmax((logits + g) / o.tau, d)
  if not o.hard then return y end
  local idx = y:argmax(d, { keepdims = true })
  local hard = gpu.zeros(y.shape, { dtype = y.dtype, device = y.device }):scatter(d, idx,
    gpu.ones(idx.shape, { dtype = y.dtype, device = y.device }))
  return hard - y:detach() + y
end

local PAD_MODES = { constant = "constant", reflect = "reflect", replicate = "edge", circular = "wrap" }
local PADF = declare("nn.functional.pad", { mode = { choices = { "constant", "reflect", "replicate", "circular" },
  default = "constant" }, value = { type = "number", default = 0 } }, "gpu.nn.functional.pad(gpu.ones(2, 3), {1, 1}, %s)")
-- pad(x, pad, {mode = "constant", value = 0}): PyTorch's pad list, pairs from the last axis
-- back: {left, right [, top, bottom [, front, back]]}
local function torch_pad(x, pad, o, fname)
  check_array(x, fname, 1, "input")
  if type(pad) ~= "table" or #pad == 0 or #pad % 2 ~= 0 or #pad / 2 > x.ndim then
    argerror(fname, 2, "an even list of at most %d paddings expected, got %s", 2 * x.ndim, type_name(pad))
  end
  local width = {}
  for d = 1, x.ndim do width[d] = { 0, 0 } end
  for i = 1, #pad, 2 do
    local a, b = pad[i], pad[i + 1]
    if math.type(a) ~= "integer" or math.type(b) ~= "integer" or a < 0 or b < 0 then
      argerror(fname, 2, "paddings must be integers >= 0, got %s, %s", tostring(a), tostring(b))
    end
    local d = x.ndim - (i - 1) // 2
    if o.mode == "reflect" and (a >= x.shape[d] or b >= x.shape[d]) then
      raise("%s: reflect padding (%d, %d) must be smaller than the dimension's %d elements", fname, a, b, x.shape[d])
    end
    width[d] = { a, b }
  end
  local po = { mode = PAD_MODES[o.mode] }
  if o.mode == "constant" then po.constant_values = o.value end
  return gpu.pad(x, width, po)
end
function Fn.pad(x, pad, opts) return torch_pad(x, pad, PADF:check(opts, 3), "nn.pad") end

-- ---- layers --------------------------------------------------------------------------------

-- a layer of a functional form with its options checked at construction: cls(positional...)
-- or cls{opts}
local function simple(cname, keys, positional, forward, example, required)
  local cls = module.options_class(cname, keys, positional, nil, function(self, ...) return forward(self, self.opts, ...) end,
    example or "gpu.ones(2, 4)", required)
  P[cname] = cls
  return cls
end

local inplace = { type = "boolean", default = false }
simple("GLU", { dim = { type = "integer", default = -1 } }, { "dim" }, function(_, o, x) return Fn.glu(x, o.dim) end)
simple("Softmin", { dim = { type = "integer", default = -1 } }, { "dim" }, function(_, o, x) return Fn.softmin(x, o.dim) end)
simple("Hardshrink", { lambd = { type = "number", min = 0, default = 0.5 } }, { "lambd" },
  function(_, o, x) return Fn.hardshrink(x, o.lambd) end)
simple("Softshrink", { lambd = { type = "number", min = 0, default = 0.5 } }, { "lambd" },
  function(_, o, x) return Fn.softshrink(x, o.lambd) end)
simple("Threshold", { threshold = { type = "number" }, value = { type = "number" }, inplace = inplace },
  { "threshold", "value" }, function(_, o, x)
    if o.threshold == nil or o.value == nil then raise("nn.Threshold: threshold and value are required") end
    return Fn.threshold(x, o.threshold, o.value)
  end, nil, "{ threshold = 0.1, value = 0 }")
simple("CosineSimilarity", { dim = { type = "integer", default = 2 }, eps = { type = "number", min = 0, default = 1e-8 } },
  { "dim", "eps" }, function(_, o, a, b) return cos_sim(a, b, o, "nn.CosineSimilarity") end, "gpu.ones(2, 4), gpu.ones(2, 4)")
simple("PairwiseDistance", { p = { type = "number", min = 0, min_open = true, default = 2 },
  eps = { type = "number", min = 0, default = 1e-6 }, keepdim = { type = "boolean", default = false } },
  { "p", "eps", "keepdim" }, function(_, o, a, b) return pair_dist(a, b, o, "nn.PairwiseDistance") end,
  "gpu.ones(2, 4), gpu.ones(2, 4)")
simple("ChannelShuffle", { groups = { type = "integer", min = 1 } }, { "groups" }, function(_, o, x)
  if o.groups == nil then raise("nn.ChannelShuffle: groups is required") end
  check_array(x, "nn.ChannelShuffle", 1, "input")
  if x.ndim < 3 then raise("nn.ChannelShuffle: expected (N, C, ...) of 3 or more dimensions, got %s", shape_str(x.shape)) end
  local C = x.shape[2]
  if C % o.groups ~= 0 then raise("nn.ChannelShuffle: %d channels are not divisible by %d groups", C, o.groups) end
  local shape = { x.shape[1], o.groups, C // o.groups }
  for d = 3, x.ndim do shape[#shape + 1] = x.shape[d] end
  return x:reshape(table.unpack(shape)):transpose(2, 3):contiguous():reshape(table.unpack(x.shape))
end, "gpu.ones(1, 4, 2, 2)", "{ groups = 2 }")

for _, d in ipairs({ { "Dropout1d", 1 }, { "Dropout2d", 2 }, { "Dropout3d", 3 } }) do
  simple(d[1], { p = DROP.p, inplace = inplace }, { "p" }, function(self, o, x)
    return drop(x, { p = o.p, training = self.training }, "nn." .. d[1], d[2])
  end, ({ "gpu.ones(2, 3, 4)", "gpu.ones(2, 3, 4, 4)", "gpu.ones(2, 3, 4, 4, 4)" })[d[2]])
end
simple("AlphaDropout", { p = DROP.p, inplace = inplace }, { "p" }, function(self, o, x)
  return alpha_drop(x, { p = o.p, training = self.training }, "nn.AlphaDropout")
end)

-- padding layers: padding an integer (every side) or PyTorch's list
local function pad_layer(cname, sides, mode, with_value)
  local keys = { padding = { type = "integer|table" } }
  local positional = { "padding" }
  if with_value then keys.value = { type = "number", default = 0 }; positional[2] = "value" end
  simple(cname, keys, positional, function(_, o, x)
    local p = o.padding
    if p == nil then raise("nn.%s: padding is required", cname) end
    if type(p) ~= "table" then
      if math.type(p) ~= "integer" or p < 0 then raise("nn.%s: padding must be an integer >= 0", cname) end
      local list = {}
      for i = 1, 2 * sides do list[i] = p end
      p = list
    elseif #p ~= 2 * sides then
      raise("nn.%s: padding must have %d entries, got %d", cname, 2 * sides, #p)
    end
    if x.ndim < sides + 1 then
      raise("nn.%s: expected an input of %d or %d dimensions, got %s", cname, sides + 1, sides + 2, shape_str(x.shape))
    end
    return torch_pad(x, p, { mode = mode, value = o.value or 0 }, "nn." .. cname)
  end, sides == 1 and "gpu.ones(1, 2, 4)" or "gpu.ones(1, 2, 4, 4)", "{ padding = 1 }")
end
pad_layer("ZeroPad1d", 1, "constant")
pad_layer("ZeroPad2d", 2, "constant")
pad_layer("ConstantPad1d", 1, "constant", true)
pad_layer("ConstantPad2d", 2, "constant", true)
pad_layer("ReflectionPad1d", 1, "reflect")
pad_layer("ReflectionPad2d", 2, "reflect")
pad_layer("ReplicationPad1d", 1, "replicate")
pad_layer("ReplicationPad2d", 2, "replicate")

-- ---- InstanceNorm1d/2d/3d, LocalResponseNorm ---------------------------------------------------

local INSTANCE = module.with_placement { eps = { type = "number", min = 0, min_open = true, default = 1e-5 },
  momentum = { type = "number", min = 0, max = 1, default = 0.1 }, affine = { type = "boolean", default = false },
  track_running_stats = { type = "boolean", default = false } }
for _, d in ipairs({ { "InstanceNorm1d", 1 }, { "InstanceNorm2d", 2 }, { "InstanceNorm3d", 3 } }) do
  local cname, spatial = d[1], d[2]
  local decl = declare("nn." .. cname, INSTANCE, ("gpu.nn.%s(2, %%s)"):format(cname))
  local cls = class(cname)
  function cls:init(C, opts)
    size_arg("nn." .. cname, 1, C, "num_features")
    local o = decl:check(opts, 2)
    self.num_features, self.eps, self.momentum, self.affine = C, o.eps, o.momentum, o.affine
    local p = module.placement(o)
    if o.affine then module.register_affine(self, { C }, p) end
    if o.track_running_stats then
      self:register_buffer("running_mean", gpu.zeros({ C }, p))
      self:register_buffer("running_var", gpu.ones({ C }, p))
    end
  end
  -- x (N, C, *spatial) or (C, *spatial): each (sample, channel) normalised over its
  -- spatial axes (with running statistics in eval when tracked)
  function cls:forward(x)
    local fname = "nn." .. cname
    check_array(x, fname, 1, "input")
    local batched = x.ndim == spatial + 2
    if not batched and x.ndim ~= spatial + 1 then
      raise("%s: expected an input of %d or %d dimensions, got %s", fname, spatial + 1, spatial + 2, shape_str(x.shape))
    end
    if not batched then x = x:unsqueeze(1) end
    local C = x.shape[2]
    if C ~= self.num_features then raise("%s: expected %d channels, got %d", fname, self.num_features, C) end
    local axes = {}
    for a = 3, x.ndim do axes[#axes + 1] = a end
    local cshape = { 1, C }
    for _ = 3, x.ndim do cshape[#cshape + 1] = 1 end
    local y
    if self.running_mean ~= nil and not self.training then
      y = (x - self.running_mean:reshape(table.unpack(cshape))) /
        (self.running_var:reshape(table.unpack(cshape)) + self.eps):sqrt()
    else
      local mean = x:mean(axes, { keepdims = true })
      local var = (x - mean):square():mean(axes, { keepdims = true })
      y = (x - mean) / (var + self.eps):sqrt()
      if self.running_mean ~= nil then
        gpu.no_grad(function()
          local n = 1
          for _, a in ipairs(axes) do n = n * x.shape[a] end
          local m = mean:detach():mean(1):reshape(C)
          local v = (var:detach() * (n / math.max(n - 1, 1))):mean(1):reshape(C)
          self.running_mean[{}] = self.running_mean * (1 - self.momentum) + m * self.momentum
          self.running_var[{}] = self.running_var * (1 - self.momentum) + v * self.momentum
        end)
      end
    end
    if self.affine then y = y * self.weight:reshape(table.unpack(cshape)) + self.bias:reshape(table.unpack(cshape)) end
    return batched and y or y:squeeze(1)
  end
  function cls:repr() return ("%s(%d, eps=%g, affine=%s)"):format(cname, self.num_features, self.eps, self.affine) end
  P[cname] = cls
end

-- LocalResponseNorm(size [, alpha = 1e-4, beta = 0.75, k = 1]): x / (k + alpha/size * the sum
-- of squares over size neighbouring channels)^beta, PyTorch's (zero-padded channel window)
simple("LocalResponseNorm", { size = { type = "integer", min = 1 }, alpha = { type = "number", default = 1e-4 },
  beta = { type = "number", default = 0.75 }, k = { type = "number", default = 1.0 } }, { "size", "alpha", "beta", "k" },
  function(_, o, x)
    local fname = "nn.LocalResponseNorm"
    if o.size == nil then raise("%s: size is required", fname) end
    check_array(x, fname, 1, "input")
    if x.ndim < 3 then raise("%s: expected (N, C, ...) of 3 or more dimensions, got %s", fname, shape_str(x.shape)) end
    local C = x.shape[2]
    local sq = x:square()
    local width = {}
    for d = 1, x.ndim do width[d] = { 0, 0 } end
    width[2] = { o.size // 2, (o.size - 1) // 2 }
    local padded = gpu.pad(sq, width)
    local acc = nil
    for i = 1, o.size do
      local part = padded[{ ":", { i, i + C - 1 } }]
      acc = acc and acc + part or part
    end
    return x / (acc * (o.alpha / o.size) + o.k) ^ o.beta
  end, "gpu.ones(1, 4, 2, 2)", "{ size = 2 }")

-- ---- Bilinear, cells ------------------------------------------------------------------------

local BILINEAR = declare("nn.Bilinear", module.with_placement { bias = { type = "boolean", default = true } },
  "gpu.nn.Bilinear(2, 3, 4, %s)")
-- Bilinear(in1, in2, out [, {bias = true}]): y = x1^T A_k x2 + b_k, weight (out, in1, in2),
-- PyTorch's uniform(-1/sqrt(in1), 1/sqrt(in1)) initialisation
local Bilinear = class("Bilinear")
function Bilinear:init(in1, in2, out, opts)
  size_arg("nn.Bilinear", 1, in1, "in1_features")
  size_arg("nn.Bilinear", 2, in2, "in2_features")
  size_arg("nn.Bilinear", 3, out, "out_features")
  if type(opts) == "boolean" then opts = { bias = opts } end
  local o = BILINEAR:check(opts, 4)
  local p = module.placement(o)
  local bound = 1 / math.sqrt(in1)
  self.in1_features, self.in2_features, self.out_features = in1, in2, out
  self:register_parameter("weight", gpu.random.uniform(-bound, bound, { out, in1, in2 }, p))
  if o.bias then self:register_parameter("bias", gpu.random.uniform(-bound, bound, { out }, p)) end
end
function Bilinear:forward(x1, x2)
  local fname = "nn.Bilinear"
  check_array(x1, fname, 1, "input1")
  check_array(x2, fname, 2, "input2")
  if x1.ndim < 1 or x1.shape[x1.ndim] ~= self.in1_features or x2.ndim < 1 or x2.shape[x2.ndim] ~= self.in2_features then
    raise("%s: expected inputs (..., %d) and (..., %d), got %s and %s", fname, self.in1_features, self.in2_features,
      shape_str(x1.shape), shape_str(x2.shape))
  end
  local y = gpu.einsum("...i,kij,...j->...k", x1, self.weight, x2)
  if self.bias ~= nil then y = y + self.bias end
  return y
end
P.Bilinear = Bilinear

local CELL = module.with_placement { bias = { type = "boolean", default = true },
  nonlinearity = { choices = { "tanh", "relu" }, default = "tanh" } }
-- RNNCell / LSTMCell / GRUCell(input_size, hidden_size [, {bias = true}]): one step of the
-- recurrent layers, PyTorch's weights (weight_ih (G H, in), weight_hh (G H, H), bias_ih,
-- bias_hh) and gate order (LSTM i, f, g, o; GRU r, z, n), uniform(-1/sqrt(H), 1/sqrt(H))
local function cell_class(cname, gates)
  local decl = declare("nn." .. cname, CELL, ("gpu.nn.%s(2, 3, %%s)"):format(cname))
  local cls = class(cname)
  function cls:init(insize, hsize, opts)
    size_arg("nn." .. cname, 1, insize, "input_size")
    size_arg("nn." .. cname, 2, hsize, "hidden_size")
    if type(opts) == "boolean" then opts = { bias = opts } end
    local o = decl:check(opts, 3)
    if cname ~= "RNNCell" and opts and opts.nonlinearity then raise("nn.%s: takes no nonlinearity", cname) end
    local p = module.placement(o)
    local k = 1 / math.sqrt(hsize)
    self.input_size, self.hidden_size, self.nonlinearity = insize, hsize, o.nonlinearity
    self:register_parameter("weight_ih", gpu.random.uniform(-k, k, { gates * hsize, insize }, p))
    self:register_parameter("weight_hh", gpu.random.uniform(-k, k, { gates * hsize, hsize }, p))
    if o.bias then
      self:register_parameter("bias_ih", gpu.random.uniform(-k, k, { gates * hsize }, p))
      self:register_parameter("bias_hh", gpu.random.uniform(-k, k, { gates * hsize }, p))
    end
  end
  function cls:linear(x, h)
    local gi = x:matmul(self.weight_ih:transpose(1, 2))
    local gh = h:matmul(self.weight_hh:transpose(1, 2))
    if self.bias_ih ~= nil then gi, gh = gi + self.bias_ih, gh + self.bias_hh end
    return gi, gh
  end
  function cls:state(fname, x, hx)
    check_array(x, fname, 1, "input")
    if x.ndim < 1 or x.ndim > 2 or x.shape[x.ndim] ~= self.input_size then
      raise("%s: expected input (N, %d) or (%d), got %s", fname, self.input_size, self.input_size, shape_str(x.shape))
    end
    local batched = x.ndim == 2
    if not batched then x = x:unsqueeze(1) end
    local zeros = gpu.zeros({ x.shape[1], self.hidden_size }, { dtype = x.dtype, device = x.device })
    local function check(h, what)
      if h == nil then return zeros end
      check_array(h, fname, 2, what)
      if not batched then h = h:unsqueeze(1) end
      if shape_str(h.shape) ~= shape_str(zeros.shape) then
        raise("%s: %s must be %s, got %s", fname, what, shape_str(zeros.shape), shape_str(h.shape))
      end
      return h
    end
    return x, batched, check
  end
  P[cname] = cls
  return cls
end

local RNNCell = cell_class("RNNCell", 1)
function RNNCell:forward(x, hx)
  local xb, batched, check = self:state("nn.RNNCell", x, hx)
  local gi, gh = self:linear(xb, check(hx, "hx"))
  local h = gi + gh
  h = self.nonlinearity == "relu" and h:relu() or h:tanh()
  return batched and h or h:squeeze(1)
end
local LSTMCell = cell_class("LSTMCell", 4)
-- forward(x [, {h, c}]) -> h, c
function LSTMCell:forward(x, hc)
  if hc ~= nil and (type(hc) ~= "table" or options.is_array(hc)) then
    argerror("nn.LSTMCell", 2, "{h, c} expected, got %s", type_name(hc))
  end
  local xb, batched, check = self:state("nn.LSTMCell", x)
  local h0, c0 = check(hc and hc[1], "h"), check(hc and hc[2], "c")
  local gi, gh = self:linear(xb, h0)
  local i, f, g, o = table.unpack(gpu.split(gi + gh, 4, 2))
  local c = f:sigmoid() * c0 + i:sigmoid() * g:tanh()
  local h = o:sigmoid() * c:tanh()
  if batched then return h, c end
  return h:squeeze(1), c:squeeze(1)
end
local GRUCell = cell_class("GRUCell", 3)
function GRUCell:forward(x, hx)
  local xb, batched, check = self:state("nn.GRUCell", x, hx)
  local h0 = check(hx, "hx")
  local gi, gh = self:linear(xb, h0)
  local ir, iz, inn = table.unpack(gpu.split(gi, 3, 2))
  local hr, hz, hn = table.unpack(gpu.split(gh, 3, 2))
  local r, z = (ir + hr):sigmoid(), (iz + hz):sigmoid()
  local n = (inn + r * hn):tanh()
  local h = (1 - z) * n + z * h0
  return batched and h or h:squeeze(1)
end

-- ---- ParameterList, ParameterDict -------------------------------------------------------------

-- ParameterList([arrays]): parameters named "0", "1", ... (PyTorch's state_dict names),
-- p[i] 1-based, #p, p:append(x)
local ParameterList = class("ParameterList")
function ParameterList:init(list)
  if list ~= nil and (type(list) ~= "table" or options.is_array(list)) then
    argerror("nn.ParameterList", 1, "a list of arrays expected, got %s", type_name(list))
  end
  rawset(self, "_n", 0)
  for _, x in ipairs(list or {}) do self:append(x) end
end
function ParameterList:append(x)
  check_array(x, "ParameterList:append", 1, "parameter")
  self:register_parameter(tostring(rawget(self, "_n")), x)
  rawset(self, "_n", rawget(self, "_n") + 1)
  return self
end
function ParameterList:get(i)
  local n = rawget(self, "_n")
  if math.type(i) ~= "integer" or i < 1 or i > n then raise("ParameterList: index %s out of 1..%d", tostring(i), n) end
  return self._params[tostring(i - 1)]
end
ParameterList.__len = function(self) return rawget(self, "_n") end
local plist_index = ParameterList.__index
ParameterList.__index = function(self, k)
  if math.type(k) == "integer" then return ParameterList.get(self, k) end
  return type(plist_index) == "function" and plist_index(self, k) or plist_index[k]
end
function ParameterList:forward() raise("nn.ParameterList is not callable (it holds parameters)") end
P.ParameterList = ParameterList

-- ParameterDict([{name = array}]): parameters by name, d[name], d:update(t)
local ParameterDict = class("ParameterDict")
function ParameterDict:init(t)
  if t ~= nil and (type(t) ~= "table" or options.is_array(t)) then
    argerror("nn.ParameterDict", 1, "a table of arrays by name expected, got %s", type_name(t))
  end
  self:update(t or {})
end
function ParameterDict:update(t)
  local names = {}
  for k in pairs(t) do
    if type(k) ~= "string" then argerror("ParameterDict:update", 1, "names must be strings, got %s", type_name(k)) end
    names[#names + 1] = k
  end
  table.sort(names)
  for _, k in ipairs(names) do
    check_array(t[k], "ParameterDict:update", 1, "parameter '" .. k .. "'")
    self:register_parameter(k, t[k])
  end
  return self
end
function ParameterDict:forward() raise("nn.ParameterDict is not callable (it holds parameters)") end
P.ParameterDict = ParameterDict

-- Errors from the ops inside name the function or layer the user called, at the user's line
local guarded = options.guarded
for name, f in pairs(Fn) do Fn[name] = guarded("nn." .. name, f) end
for cname, cls in pairs(P) do
  if cname ~= "functional" and rawget(cls, "forward") then rawset(cls, "forward", guarded("nn." .. cname, rawget(cls, "forward"))) end
end

return P
