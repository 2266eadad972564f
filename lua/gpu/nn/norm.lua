-- gpu.nn.norm: LayerNorm, GroupNorm and RMSNorm (PyTorch's constructors, parameter names
-- and numbers) with their functional forms layer_norm, group_norm and rms_norm.
--
-- LayerNorm of float32/float64 goes through the fused op gpu.fused.layer_norm (one pass per
-- row on the CPU, one warp per row on the GPU; its rule in autograd.rules_structure); the
-- rest is composed of dispatched ops (mean, subtract, rsqrt, multiply), so autograd,
-- create_graph and both devices come from the ops' rules. The statistics are taken in
-- float32 for a half-precision input (PyTorch's autocast runs the norms in float32) and the
-- result is cast back to the input's dtype.

local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"

local raise, argerror, check_array, shape_str = options.raise, options.argerror, options.check_array,
  options.shape_str
local class = module.class

local N = { functional = {} }
local Fn = N.functional
local half = { float16 = true, bfloat16 = true }

-- A normalized_shape argument: a positive integer or a non-empty list of them -> a list.
local function norm_shape(fname, argn, s)
  if math.type(s) == "integer" then s = { s } end
  local ok = type(s) == "table" and not options.is_array(s) and #s > 0
  for _, d in ipairs(ok and s or {}) do if math.type(d) ~= "integer" or d < 1 then ok = false end end
  if not ok then argerror(fname, argn, "normalized_shape must be a positive integer or a list of them") end
  return { table.unpack(s) }
end

-- x's trailing axes must be s; returns the list of those axes (negative, from the end).
local function trailing_axes(fname, x, s)
  local k = #s
  local ok = x.ndim >= k
  for i = 1, k do if ok and x.shape[x.ndim - k + i] ~= s[i] then ok = false end end
  if not ok then
    raise("%s: expected an input whose trailing shape is %s, got shape %s", fname, shape_str(s), shape_str(x.shape))
  end
  local axes = {}
  for i = 1, k do axes[i] = -i end
  return axes
end

local function check_param(fname, argn, p, s, what, x)
  if p == nil then return end
  check_array(p, fname, argn, what)
  if shape_str(p.shape) ~= shape_str(s) then
    raise("%s: %s must have shape %s, got %s", fname, what, shape_str(s), shape_str(p.shape))
  end
  if p.device ~= x.device then
    raise("%s: %s is on %s but the input on %s (use :to())", fname, what, p.device, x.device)
  end
end

-- (x - mean) / sqrt(var + eps) over axes, the statistics of a half x in float32
local function standardise(x, axes, eps)
  local xf = half[x.dtype] and x:astype("float32") or x
  local mean = xf:mean(axes, { keepdims = true })
  local xc = xf - mean
  local var = (xc * xc):mean(axes, { keepdims = true })
  return xc * (var + eps):rsqrt()
end

-- LayerNorm through gpu.fused.layer_norm (one pass per row, a fused backward) for a
-- float32/float64 x with parameters of its dtype: the trailing axes flattened into one.
-- A float32 x on a device whose gpu.dnn has layer norm (oneDNN on the cpu) takes
-- gpu.dnn.layer_norm: forward and backward measured faster than the own kernels, or as fast.
local fused_dtypes = { float32 = true, float64 = true }
local function ln_op(x)
  if x.dtype == "float32" and gpu.dnn.enabled and gpu.dnn.available(x.device, "float32", "layer_norm") == true then
    return gpu.dnn.layer_norm
  end
  return gpu.fused.layer_norm
end
local function fused_layer_norm(x, k, w, b, eps)
  if not fused_dtypes[x.dtype] or (w and w.dtype ~= x.dtype) or (b and b.dtype ~= x.dtype) then return nil end
  local D = 1
  for i = x.ndim - k + 1, x.ndim do D = D * x.shape[i] end
  local op = ln_op(x)
  if k == 1 then return (op(x, w, b, { eps = eps })) end
  local y = op(x:reshape(-1, D), w and w:reshape(D), b and b:reshape(D), { eps = eps })
  return y:reshape(x.shape)
end

local function affine(y, w, b, dtype)
  if w ~= nil then y = y * w end
  if b ~= nil then y = y + b end
  return y.dtype ~= dtype and y:astype(dtype) or y
end

local EPS = { type = "number", min = 0, default = 1e-5 }
local LN_F = options.declare("nn.layer_norm", { eps = EPS },
  { example = "gpu.nn.layer_norm(gpu.ones(2, 3), 3, nil, nil, %s)" })

-- A functional norm's checked x (argument 1), normalized_shape (argument 2) and options
-- (a table or the number eps, argument argn): the shape and the options.
local function norm_args(fname, decl, x, s, opts, argn)
  check_array(x, fname, 1, "input")
  s = norm_shape(fname, 2, s)
  if type(opts) == "number" then opts = { eps = opts } end
  return s, decl:check(opts, argn)
end

-- layer_norm(x, normalized_shape, weight, bias [, {eps = 1e-5}] or [, eps])
function Fn.layer_norm(x, s, w, b, opts)
  local fname = "nn.layer_norm"
  local o
  s, o = norm_args(fname, LN_F, x, s, opts, 5)
  check_param(fname, 3, w, s, "weight", x)
  check_param(fname, 4, b, s, "bias", x)
  local axes = trailing_axes(fname, x, s)
  return fused_layer_norm(x, #s, w, b, o.eps) or affine(standardise(x, axes, o.eps), w, b, x.dtype)
end

local RMS_F = options.declare("nn.rms_norm", { eps = { type = "number", min = 0 } },
  { example = "gpu.nn.rms_norm(gpu.ones(2, 3), 3, nil, %s)" })

-- rms_norm(x, normalized_shape, weight [, {eps}] or [, eps]): x / sqrt(mean(x^2) + eps) *
-- weight over the trailing axes; eps defaults to the machine epsilon of x's dtype
-- (PyTorch's torch.finfo(dtype).eps).
local machine_eps = { float64 = 2.220446049250313e-16, float32 = 1.1920928955078125e-07,
                      float16 = 0.0009765625, bfloat16 = 0.0078125 }
local function rms(x, axes, eps, w)
  local xf = half[x.dtype] and x:astype("float32") or x
  local y = xf * ((xf * xf):mean(axes, { keepdims = true }) + (eps or machine_eps[x.dtype] or 1e-6)):rsqrt()
  return affine(y, w, nil, x.dtype)
end
function Fn.rms_norm(x, s, w, opts)
  local fname = "nn.rms_norm"
  local o
  s, o = norm_args(fname, RMS_F, x, s, opts, 4)
  check_param(fname, 3, w, s, "weight", x)
  return rms(x, trailing_axes(fname, x, s), o.eps, w)
end

local GN_F = options.declare("nn.group_norm", { eps = EPS },
  { example = "gpu.nn.group_norm(gpu.ones(2, 4, 3), 2, nil, nil, %s)" })

-- group_norm(x (N, C, ...), groups, weight (C), bias (C) [, {eps = 1e-5}] or [, eps])
local function group_norm(fname, x, G, w, b, eps)
  if x.ndim < 2 then raise("%s: expected an input (N, C, ...), got shape %s", fname, shape_str(x.shape)) end
  local n, C = x.shape[1], x.shape[2]
  if C % G ~= 0 then raise("%s: %d channels do not divide into %d groups", fname, C, G) end
  local y = standardise(x:reshape(n, G, -1), { 3 }, eps):reshape(x.shape)
  local s = { 1, C }
  for i = 3, x.ndim do s[i] = 1 end
  return affine(y, w and w:reshape(s), b and b:reshape(s), x.dtype)
end
function Fn.group_norm(x, G, w, b, opts)
  local fname = "nn.group_norm"
  check_array(x, fname, 1, "input")
  options.value(G, { type = "integer", min = 1 }, fname, 2, "num_groups")
  if type(opts) == "number" then opts = { eps = opts } end
  local o = GN_F:check(opts, 5)
  if x.ndim >= 2 then
    check_param(fname, 3, w, { x.shape[2] }, "weight", x)
    check_param(fname, 4, b, { x.shape[2] }, "bias", x)
  end
  return group_norm(fname, x, G, w, b, o.eps)
end

-- ---- modules ---------------------------------------------------------------------------------

-- A LayerNorm's or RMSNorm's normalized_shape and eps, and with elementwise_affine its
-- weight (ones); the checked options
local function init_norm(self, fname, decl, s, opts)
  self.normalized_shape = norm_shape(fname, 1, s)
  local o = decl:check(opts, 2)
  self.eps = o.eps
  if o.elementwise_affine then
    self:register_parameter("weight", gpu.ones(self.normalized_shape, module.placement(o)))
  end
  return o
end

local LAYER_NORM = options.declare("nn.LayerNorm", module.with_placement {
  eps = EPS, elementwise_affine = { type = "boolean", default = true }, bias = { type = "boolean", default = true },
}, { example = "gpu.nn.LayerNorm(3, %s)(gpu.ones(2, 3))" })

-- LayerNorm(normalized_shape [, {eps = 1e-5, elementwise_affine = true, bias = true, dtype, device}])
local LayerNorm = class("LayerNorm")
function LayerNorm:init(s, opts)
  local o = init_norm(self, "nn.LayerNorm", LAYER_NORM, s, opts)
  if o.elementwise_affine and o.bias then
    self:register_parameter("bias", gpu.zeros(self.normalized_shape, module.placement(o)))
  end
end
function LayerNorm:forward(x)
  local fname = "nn.LayerNorm"
  check_array(x, fname, 1, "input")
  local s = self.normalized_shape
  local axes = trailing_axes(fname, x, s)
  return fused_layer_norm(x, #s, self.weight, self.bias, self.eps)
    or affine(standardise(x, axes, self.eps), self.weight, self.bias, x.dtype)
end
function LayerNorm:repr() return ("LayerNorm(%s, eps=%g)"):format(shape_str(self.normalized_shape), self.eps) end
N.LayerNorm = LayerNorm

local RMS_NORM = options.declare("nn.RMSNorm", module.with_placement {
  eps = { type = "number", min = 0 }, elementwise_affine = { type = "boolean", default = true },
}, { example = "gpu.nn.RMSNorm(3, %s)(gpu.ones(2, 3))" })

-- RMSNorm(normalized_shape [, {eps = machine epsilon of the input dtype, elementwise_affine = true}])
local RMSNorm = class("RMSNorm")
function RMSNorm:init(s, opts)
  init_norm(self, "nn.RMSNorm", RMS_NORM, s, opts)
end
function RMSNorm:forward(x)
  local fname = "nn.RMSNorm"
  check_array(x, fname, 1, "input")
  return rms(x, trailing_axes(fname, x, self.normalized_shape), self.eps, self.weight)
end
function RMSNorm:repr() return ("RMSNorm(%s)"):format(shape_str(self.normalized_shape)) end
N.RMSNorm = RMSNorm

local GROUP_NORM = options.declare("nn.GroupNorm", module.with_placement {
  eps = EPS, affine = { type = "boolean", default = true },
}, { example = "gpu.nn.GroupNorm(2, 4, %s)(gpu.ones(2, 4, 3))" })

-- GroupNorm(num_groups, num_channels [, {eps = 1e-5, affine = true, dtype, device}])
local GroupNorm = class("GroupNorm")
function GroupNorm:init(G, C, opts)
  options.value(G, { type = "integer", min = 1 }, "nn.GroupNorm", 1, "num_groups")
  options.value(C, { type = "integer", min = 1 }, "nn.GroupNorm", 2, "num_channels")
  if C % G ~= 0 then argerror("nn.GroupNorm", 2, "num_channels (%d) must be divisible by num_groups (%d)", C, G) end
  local o = GROUP_NORM:check(opts, 3)
  self.num_groups, self.num_channels, self.eps = G, C, o.eps
  if o.affine then module.register_affine(self, { C }, module.placement(o)) end
end
function GroupNorm:forward(x)
  local fname = "nn.GroupNorm"
  check_array(x, fname, 1, "input")
  if x.ndim < 2 or x.shape[2] ~= self.num_channels then
    raise("%s: expected an input (N, %d, ...), got shape %s", fname, self.num_channels, shape_str(x.shape))
  end
  return group_norm(fname, x, self.num_groups, self.weight, self.bias, self.eps)
end
function GroupNorm:repr() return ("GroupNorm(%d, %d, eps=%g)"):format(self.num_groups, self.num_channels, self.eps) end
N.GroupNorm = GroupNorm

return N
