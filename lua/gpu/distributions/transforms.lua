-- gpu.distributions' transforms (torch.distributions.transforms): invertible maps y = t(x)
-- with t.inv (the inverse, itself a transform), t:log_abs_det_jacobian(x, y) (log |dy/dx|,
-- summed over the transform's event_dim rightmost axes) and t.sign (+1 or -1 for a monotone
-- map of one variable, what cdf and icdf of a TransformedDistribution need). Written in array
-- ops: differentiable.
local gpu = require "gpu"
local options = require "gpu.options"
local C = require "gpu.distributions.core"

local is_array, raise, argerror, type_name = options.is_array, options.raise, options.argerror, options.type_name

local T = {}
local Transform = { _transform = true }
Transform.__index = function(t, k)
  if k == "inv" then return t:_inv() end
  return getmetatable(t)._methods[k]
end
Transform.__call = function(t, x) return t:_call(x) end
Transform.__tostring = function(t) return t._name .. "()" end

local function is_transform(v) return type(v) == "table" and rawget(v, "_transform") == true end
T.is_transform = is_transform

local function sum_rightmost(x, n)
  if n <= 0 then return x end
  local axes = {}
  for i = 1, n do axes[i] = -i end
  return x:sum(axes)
end
T.sum_rightmost = sum_rightmost

-- define(name, methods): a transform class; methods: call(t, x), inverse(t, y), ladj(t, x, y),
-- and fields event_dim (default 0), sign (default +1)
local function define(name, m)
  local meta = { _methods = {}, __index = Transform.__index, __call = Transform.__call, __tostring = Transform.__tostring,
    __name = "gpu.distributions." .. name }
  local methods = meta._methods
  methods._call = m.call
  methods._inverse = m.inverse
  methods._ladj = m.ladj
  methods.bijective = m.bijective ~= false
  function methods._inv(t)
    return setmetatable({ _transform = true, _name = "Inverse" .. t._name, _base = t, event_dim = t.event_dim, sign = t.sign },
      T._Inverse)
  end
  function methods.log_abs_det_jacobian(t, x, y)
    if not is_array(x) then argerror(t._name .. ":log_abs_det_jacobian", 1, "x: a gpu.array expected, got %s", type_name(x)) end
    if not is_array(y) then argerror(t._name .. ":log_abs_det_jacobian", 2, "y: a gpu.array expected, got %s", type_name(y)) end
    return t:_ladj(x, y)
  end
  return meta
end

-- the inverse of a transform: swaps call and inverse, negates the Jacobian term
T._Inverse = { _methods = {}, __index = Transform.__index, __call = Transform.__call, __tostring = Transform.__tostring,
  __name = "gpu.distributions.Inverse" }
do
  local m = T._Inverse._methods
  m.bijective = true
  function m._call(t, x) return t._base:_inverse(x) end
  function m._inverse(t, y) return t._base:_call(y) end
  function m._ladj(t, x, y) return -t._base:_ladj(y, x) end
  function m._inv(t) return t._base end
  function m.log_abs_det_jacobian(t, x, y) return t:_ladj(x, y) end
end

local function new(meta, fields)
  fields._transform = true
  fields.event_dim = fields.event_dim or 0
  fields.sign = fields.sign or 1
  return setmetatable(fields, meta)
end

local Exp = define("ExpTransform", {
  call = function(_, x) return x:exp() end,
  inverse = function(_, y) return y:log() end,
  ladj = function(_, x, _) return x end,
})
function T.ExpTransform() return new(Exp, { _name = "ExpTransform" }) end

local function check_float(fname, v, argn, what)
  if type(v) == "number" then return v end
  if not is_array(v) then argerror(fname, argn, "%s: a number or a gpu.array expected, got %s", what, type_name(v)) end
  if v:is_closed() then argerror(fname, argn, "%s: the gpu.array is closed", what) end
  return v
end

local Affine = define("AffineTransform", {
  call = function(t, x) return x * t.scale + t.loc end,
  inverse = function(t, y) return (y - t.loc) / t.scale end,
  ladj = function(t, x, _)
    local s = t.scale
    local l = type(s) == "number" and gpu.full(x.shape, math.log(math.abs(s)), { dtype = x.dtype, device = x.device })
      or gpu.broadcast_to(s:abs():log(), C.broadcast("AffineTransform", { x.shape, s.shape }))
    return sum_rightmost(l, t.event_dim)
  end,
})
local AFFINE = options.declare("distributions.AffineTransform", { event_dim = { type = "integer", min = 0, default = 0 } },
  { example = "gpu.distributions.AffineTransform(0, 1, %s)" })
-- AffineTransform(loc, scale [, {event_dim = 0}]): y = loc + scale x
function T.AffineTransform(loc, scale, opts)
  local fname = "gpu.distributions.AffineTransform"
  local o = AFFINE:check(opts, 3)
  loc, scale = check_float(fname, loc, 1, "loc"), check_float(fname, scale, 2, "scale")
  local sign
  if type(scale) == "number" then
    if scale == 0 then raise("%s: scale must not be 0", fname) end
    sign = scale > 0 and 1 or -1
  end
  return new(Affine, { _name = "AffineTransform", loc = loc, scale = scale, event_dim = o.event_dim, sign = sign,
    _sign_unknown = sign == nil })
end

local Sigmoid = define("SigmoidTransform", {
  call = function(_, x)
    local fi = gpu.finfo(x.dtype)
    return gpu.clip(x:sigmoid(), fi.tiny, 1 - fi.eps)
  end,
  inverse = function(_, y)
    local fi = gpu.finfo(y.dtype)
    y = gpu.clip(y, fi.tiny, 1 - fi.eps)
    return y:log() - (-y):log1p()
  end,
  ladj = function(_, x, _) return -gpu.softplus(-x) - gpu.softplus(x) end,
})
function T.SigmoidTransform() return new(Sigmoid, { _name = "SigmoidTransform" }) end

local LOG2 = math.log(2)
local Tanh = define("TanhTransform", {
  call = function(_, x) return x:tanh() end,
  inverse = function(_, y)
    local fi = gpu.finfo(y.dtype)
    return gpu.clip(y, -1 + fi.eps, 1 - fi.eps):atanh()
  end,
  ladj = function(_, x, _) return (LOG2 - x - gpu.softplus(x * -2)) * 2 end,
})
function T.TanhTransform() return new(Tanh, { _name = "TanhTransform" }) end

local Abs = define("AbsTransform", {
  call = function(_, x) return x:abs() end,
  inverse = function(_, y) return y end,
  ladj = function(_, x, _) return gpu.zeros_like(x) end,
  bijective = false,
})
function T.AbsTransform() return new(Abs, { _name = "AbsTransform" }) end

local Power = define("PowerTransform", {
  call = function(t, x) return x ^ t.exponent end,
  inverse = function(t, y) return y ^ (type(t.exponent) == "number" and 1 / t.exponent or t.exponent:reciprocal()) end,
  ladj = function(t, x, y) return (y * t.exponent / x):abs():log() end,
})
-- PowerTransform(exponent): y = x ^ exponent on the positive numbers
function T.PowerTransform(exponent)
  exponent = check_float("gpu.distributions.PowerTransform", exponent, 1, "exponent")
  local sign
  if type(exponent) == "number" then
    if exponent == 0 then raise("gpu.distributions.PowerTransform: exponent must not be 0") end
    sign = exponent > 0 and 1 or -1
  end
  return new(Power, { _name = "PowerTransform", exponent = exponent, sign = sign, _sign_unknown = sign == nil })
end

-- ComposeTransform(list): list[1] first, then list[2]...
local Compose = define("ComposeTransform", {
  call = function(t, x)
    for _, p in ipairs(t.parts) do x = p(x) end
    return x
  end,
  inverse = function(t, y)
    for i = #t.parts, 1, -1 do y = t.parts[i].inv(y) end
    return y
  end,
  ladj = function(t, x, y)
    if #t.parts == 0 then return gpu.zeros_like(x) end
    local total
    for _, p in ipairs(t.parts) do
      local nx = p(x)
      local l = sum_rightmost(p:log_abs_det_jacobian(x, nx), t.event_dim - p.event_dim)
      total = total and total + l or l
      x = nx
    end
    return total
  end,
})
function T.ComposeTransform(list)
  if type(list) ~= "table" or is_array(list) or is_transform(list) then
    argerror("gpu.distributions.ComposeTransform", 1, "a list of transforms expected, got %s", type_name(list))
  end
  local ed, sign = 0, 1
  for i, p in ipairs(list) do
    if not is_transform(p) then
      argerror("gpu.distributions.ComposeTransform", 1, "entry %d: a transform expected, got %s", i, type_name(p))
    end
    ed = math.max(ed, p.event_dim)
    if p.sign == nil or p._sign_unknown then sign = nil elseif sign then sign = sign * p.sign end
  end
  return new(Compose, { _name = "ComposeTransform", parts = { table.unpack(list) }, event_dim = ed, sign = sign,
    _sign_unknown = sign == nil })
end

-- same(a, b): two transforms that map alike (what the KL of two TransformedDistributions asks)
function T.same(a, b)
  if a._name ~= b._name then return false end
  if a._name == "AffineTransform" then return rawequal(a.loc, b.loc) and rawequal(a.scale, b.scale) and a.event_dim == b.event_dim end
  if a._name == "PowerTransform" then return rawequal(a.exponent, b.exponent) end
  if a._base then return T.same(a._base, b._base) end
  if a.parts then
    if #a.parts ~= #b.parts then return false end
    for i = 1, #a.parts do if not T.same(a.parts[i], b.parts[i]) then return false end end
  end
  return true
end

return T
