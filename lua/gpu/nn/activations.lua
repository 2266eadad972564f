-- gpu.nn.activations: PyTorch's further activation layers (SiLU, ELU, SELU, PReLU, Mish,
-- Hardswish, Hardsigmoid, Hardtanh, LogSigmoid, Softsign, Tanhshrink) with their functional
-- forms, and the containers ModuleList, ModuleDict and Unflatten.
--
-- The activations are compositions of dispatched elementwise ops (their rules give the
-- gradients, on every device and dtype the ops take); the branches that are not taken
-- are kept finite (exp of min(x, 0), not of x) so that a where() never mixes an inf or a
-- NaN into a gradient.

local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"

local raise, argerror, check_array, shape_str, type_name = options.raise, options.argerror, options.check_array,
  options.shape_str, options.type_name
local class, is_module = module.class, module.is_module

local A = { functional = {} }
local Fn = A.functional

-- ---- functional forms ------------------------------------------------------------------------

local SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

-- elu's negative branch alpha * (exp(min(x, 0)) - 1), finite for every x
local function elu_neg(x, alpha) return x:minimum(0):expm1() * alpha end

local forms = {
  silu = function(x) return x * x:sigmoid() end,
  elu = function(x, o) return gpu.where(x:gt(0), x, elu_neg(x, o.alpha)) end,
  selu = function(x) return gpu.where(x:gt(0), x, elu_neg(x, SELU_ALPHA)) * SELU_SCALE end,
  celu = function(x, o) return gpu.where(x:gt(0), x, elu_neg(x / o.alpha, o.alpha)) end,
  mish = function(x) return x * x:softplus():tanh() end,
  hardswish = function(x) return x * (x + 3):clip(0, 6) * (1 / 6) end,
  hardsigmoid = function(x) return (x * (1 / 6) + 0.5):clip(0, 1) end,
  hardtanh = function(x, o) return x:clip(o.min_val, o.max_val) end,
  relu6 = function(x) return x:clip(0, 6) end,
  logsigmoid = function(x) return -(-x):softplus() end,
  softsign = function(x) return x / (x:abs() + 1) end,
  tanhshrink = function(x) return x - x:tanh() end,
}

-- name -> { module name, option keys (the first may also be given positionally) }
local layers = {
  silu = { "SiLU" }, selu = { "SELU" }, mish = { "Mish" }, hardswish = { "Hardswish" },
  hardsigmoid = { "Hardsigmoid" }, relu6 = { "ReLU6" }, logsigmoid = { "LogSigmoid" }, softsign = { "Softsign" },
  tanhshrink = { "Tanhshrink" },
  elu = { "ELU", { { "alpha", { type = "number", default = 1.0 } } } },
  celu = { "CELU", { { "alpha", { type = "number", default = 1.0, check = function(v) return v ~= 0,
    "must not be 0" end } } } },
  hardtanh = { "Hardtanh", { { "min_val", { type = "number", default = -1.0 } },
                             { "max_val", { type = "number", default = 1.0 } } } },
}

-- ignored PyTorch key: inplace (the result is always a new array)
local inplace = { type = "boolean", default = false }

for name, def in pairs(layers) do
  local cname, keys = def[1], def[2] or {}
  local kt = { inplace = inplace }
  for _, k in ipairs(keys) do kt[k[1]] = k[2] end
  local fdecl = options.declare("nn." .. name, kt, { example = ("gpu.nn.%s(gpu.ones(2, 3), %%s)"):format(name) })
  local mdecl = options.declare("nn." .. cname, kt, { example = ("gpu.nn.%s(%%s)(gpu.ones(2, 3))"):format(cname) })
  local form = forms[name]
  local function check_range(fname, o)
    if o.min_val and o.max_val and o.min_val > o.max_val then
      raise("%s: min_val (%g) must not exceed max_val (%g)", fname, o.min_val, o.max_val)
    end
  end
  -- nn.<name>(x [, opts]) or, as PyTorch, the options positionally: nn.elu(x, 0.5)
  Fn[name] = function(x, ...)
    local fname = "nn." .. name
    check_array(x, fname, 1, "x")
    local first = ...
    local opts = first
    if first ~= nil and type(first) ~= "table" then
      opts = {}
      for i, k in ipairs(keys) do opts[k[1]] = select(i, ...) end
    end
    local o = fdecl:check(opts, 2)
    check_range(fname, o)
    return form(x, o)
  end
  local cls = class(cname)
  function cls:init(first, ...)
    local opts = first
    if first ~= nil and (type(first) ~= "table" or getmetatable(first) ~= nil) then
      opts = {}
      for i, k in ipairs(keys) do opts[k[1]] = (select(i, first, ...)) end
    end
    self.opts = mdecl:check(opts, 1)
    check_range("nn." .. cname, self.opts)
  end
  function cls:forward(x) return form(check_array(x, "nn." .. cname, 1, "input"), self.opts) end
  function cls:repr()
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = ("%s=%g"):format(k[1], self.opts[k[1]]) end
    return cname .. "(" .. table.concat(parts, ", ") .. ")"
  end
  A[cname] = cls
end

-- prelu(x, weight): max(0, x) + weight * min(0, x), weight (1) or (C) over axis 2 of x
-- (the channel axis; axis 1 of a 1-D x), PyTorch's.
function Fn.prelu(x, w)
  check_array(x, "nn.prelu", 1, "x")
  check_array(w, "nn.prelu", 2, "weight")
  if w.ndim ~= 1 then raise("nn.prelu: weight must be 1-D, got shape %s", shape_str(w.shape)) end
  local C = w.shape[1]
  if C ~= 1 then
    local ch = x.ndim >= 2 and 2 or 1
    if x.ndim == 0 or x.shape[ch] ~= C then
      raise("nn.prelu: weight has %d values but the input of shape %s has %d channels", C, shape_str(x.shape),
        x.ndim > 0 and x.shape[ch] or 0)
    end
    local s = {}
    for i = 1, x.ndim do s[i] = i == ch and C or 1 end
    w = w:reshape(s)
  end
  return gpu.where(x:gt(0), x, x * w)
end

local PRELU = options.declare("nn.PReLU", module.with_placement {
  num_parameters = { type = "integer", min = 1, default = 1 },
  init = { type = "number", default = 0.25 },
}, { example = "gpu.nn.PReLU(%s)(gpu.ones(2, 3))" })

-- PReLU([num_parameters = 1 [, init = 0.25]] or [{num_parameters, init, dtype, device}])
local PReLU = class("PReLU")
function PReLU:init(n, init)
  local opts = n
  if type(init) == "table" then      -- PReLU(n, {init =, dtype =, device =})
    opts = {}
    for k, v in pairs(init) do opts[k] = v end
    opts.num_parameters = n
  elseif type(n) ~= "table" then opts = { num_parameters = n, init = init } end
  local o = PRELU:check(opts, 1)
  self.num_parameters = o.num_parameters
  self:register_parameter("weight", gpu.full({ o.num_parameters }, o.init, module.placement(o)))
end
function PReLU:forward(x) return Fn.prelu(check_array(x, "nn.PReLU", 1, "input"), self.weight) end
function PReLU:repr() return ("PReLU(num_parameters=%d)"):format(self.num_parameters) end
A.PReLU = PReLU

-- ---- containers ------------------------------------------------------------------------------

-- ModuleList{m1, m2, ...}: a list of sub-modules. l[i] is 1-based as every Lua sequence;
-- the names in state_dict are PyTorch's, 0-based ("layers.0.weight" is l[1]'s), so a
-- PyTorch state_dict loads as it is. Not callable: iterate it in the parent's forward.
local ModuleList = class("ModuleList")
function ModuleList:init(list)
  rawset(self, "_list", {})
  if list ~= nil then
    if type(list) ~= "table" or is_module(list) then
      argerror("nn.ModuleList", 1, "a list of modules expected, got %s", type_name(list))
    end
    for i, m in ipairs(list) do
      if not is_module(m) then argerror("nn.ModuleList", 1, "element #%d: a module expected, got %s", i, type_name(m)) end
    end
    for _, m in ipairs(list) do self:append(m) end
  end
end
function ModuleList:append(m)
  if not is_module(m) then argerror("ModuleList:append", 1, "a module expected, got %s", type_name(m)) end
  local list = rawget(self, "_list")
  self:add_module(tostring(#list), m)
  list[#list + 1] = m
  return self
end
function ModuleList:extend(ms)
  if type(ms) ~= "table" then argerror("ModuleList:extend", 1, "a list of modules expected, got %s", type_name(ms)) end
  for i, m in ipairs(ms) do
    if not is_module(m) then argerror("ModuleList:extend", 1, "element #%d: a module expected, got %s", i, type_name(m)) end
  end
  for _, m in ipairs(ms) do self:append(m) end
  return self
end
function ModuleList.__index(self, k)
  if type(k) == "number" then return rawget(self, "_list")[k] end
  return ModuleList[k]
end
function ModuleList.__len(self) return #rawget(self, "_list") end
function ModuleList.__pairs(self) return ipairs(rawget(self, "_list")) end
function ModuleList:forward(...) raise("nn.ModuleList is not callable (iterate it: for i = 1, #list do ... end)") end
function ModuleList:repr()
  local parts = {}
  for i, m in ipairs(rawget(self, "_list")) do parts[i] = "  (" .. (i - 1) .. "): " .. m:repr() end
  return "ModuleList(\n" .. table.concat(parts, "\n") .. "\n)"
end
A.ModuleList = ModuleList

-- ModuleDict{name = module, ...} (registered in sorted name order) or a list of
-- {name, module} pairs (in that order): d[name] is the module, names are state_dict's.
local ModuleDict = class("ModuleDict")
local function dict_pairs(fname, t)
  if type(t) ~= "table" or is_module(t) then argerror(fname, 1, "a table of modules expected, got %s", type_name(t)) end
  local out = {}
  if #t > 0 then
    for i, e in ipairs(t) do
      if type(e) ~= "table" or type(e[1]) ~= "string" or not is_module(e[2]) then
        argerror(fname, 1, "element #%d: a {name, module} pair expected", i)
      end
      out[i] = { e[1], e[2] }
    end
  else
    local names = {}
    for k in pairs(t) do
      if type(k) ~= "string" then argerror(fname, 1, "module names must be strings, got %s", type_name(k)) end
      names[#names + 1] = k
    end
    table.sort(names)
    for i, k in ipairs(names) do
      if not is_module(t[k]) then argerror(fname, 1, "entry '%s': a module expected, got %s", k, type_name(t[k])) end
      out[i] = { k, t[k] }
    end
  end
  for _, e in ipairs(out) do
    if e[1] == "" or e[1]:find(".", 1, true) or ModuleDict[e[1]] ~= nil or e[1]:sub(1, 1) == "_" then
      argerror(fname, 1, "'%s' cannot name a module here (empty, has '.', starts with '_' or is a method)", e[1])
    end
  end
  return out
end
function ModuleDict:init(t)
  if t ~= nil then self:update(t) end
end
function ModuleDict:update(t)
  for _, e in ipairs(dict_pairs("ModuleDict:update", t)) do
    self:add_module(e[1], e[2])
    self[e[1]] = e[2]
  end
  return self
end
function ModuleDict:keys()
  local out = {}
  for i, n in ipairs(self._mnames) do out[i] = n end
  return out
end
function ModuleDict:forward(...) raise("nn.ModuleDict is not callable (call its modules: d.name(x))") end
A.ModuleDict = ModuleDict

-- Unflatten(dim, sizes): axis dim (1-based, negative from the end) -> sizes (one may be -1)
local Unflatten = class("Unflatten")
function Unflatten:init(dim, sizes)
  options.value(dim, { type = "integer" }, "nn.Unflatten", 1, "dim")
  if dim == 0 then argerror("nn.Unflatten", 1, "dim is 1-based (or negative from the end), got 0") end
  if type(sizes) ~= "table" or #sizes == 0 then
    argerror("nn.Unflatten", 2, "a list of sizes expected, got %s", type_name(sizes))
  end
  local free = 0
  for i, s in ipairs(sizes) do
    if math.type(s) ~= "integer" or (s < 0 and s ~= -1) then
      argerror("nn.Unflatten", 2, "size #%d must be a non-negative integer or -1, got %s", i, tostring(s))
    end
    if s == -1 then free = free + 1 end
  end
  if free > 1 then argerror("nn.Unflatten", 2, "at most one size may be -1") end
  self.dim, self.sizes = dim, { table.unpack(sizes) }
end
function Unflatten:forward(x)
  check_array(x, "nn.Unflatten", 1, "input")
  local d = self.dim < 0 and x.ndim + 1 + self.dim or self.dim
  if d < 1 or d > x.ndim then raise("nn.Unflatten: dim %d is out of range for shape %s", self.dim, shape_str(x.shape)) end
  local known, s = 1, {}
  for _, v in ipairs(self.sizes) do if v ~= -1 then known = known * v end end
  for i = 1, d - 1 do s[#s + 1] = x.shape[i] end
  for _, v in ipairs(self.sizes) do
    if v == -1 then v = known > 0 and x.shape[d] // known or 0 end
    s[#s + 1] = v
  end
  for i = d + 1, x.ndim do s[#s + 1] = x.shape[i] end
  local prod = 1
  for i = d, d + #self.sizes - 1 do prod = prod * s[i] end
  if prod ~= x.shape[d] then
    raise("nn.Unflatten: sizes %s do not make axis %d of size %d (input shape %s)", shape_str(self.sizes), d,
      x.shape[d], shape_str(x.shape))
  end
  return x:reshape(s)
end
function Unflatten:repr() return ("Unflatten(%d, %s)"):format(self.dim, shape_str(self.sizes)) end
A.Unflatten = Unflatten

return A
