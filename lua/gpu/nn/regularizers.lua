-- gpu.nn.regularizers and gpu.nn.constraints: Keras's weight penalties and weight
-- constraints, the layer options that take them (kernel_regularizer, bias_regularizer,
-- activity_regularizer, kernel_constraint, bias_constraint) and ActivityRegularization.
--
--   nn.Dense(64, { activation = "relu", kernel_regularizer = nn.regularizers.L2(1e-4),
--                  kernel_constraint = nn.constraints.MaxNorm(3) })
--
-- A layer keeps what it was given in self._regs / self._cons; model:losses() lists the
-- penalties of its layers now (kernel and bias) and the activity penalties of their last
-- call (Keras 3's: the penalty of the output divided by the batch size); fit and evaluate
-- add their sum to the loss, and fit applies the constraints to the weights after each
-- optimizer step, as Keras's optimizer does. Axes are 1-based (Keras's axis = 0 is 1).
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"

local raise, argerror, type_name = options.raise, options.argerror, options.type_name

local M = { regularizers = {}, constraints = {} }
local R, C = M.regularizers, M.constraints

-- ---- regularizers ------------------------------------------------------------------------------

local Reg = options.class_table("Regularizer")
Reg.__index = Reg
Reg.__call = function(self, x)
  options.check_array(x, "regularizers." .. self.kind, 1, "x")
  return self.penalty(x)
end
function Reg.__tostring(self) return ("regularizers.%s(%s)"):format(self.kind, self.config) end
local function is_regularizer(v) return getmetatable(v) == Reg end
M.is_regularizer = is_regularizer

local FACTOR = { type = "number", min = 0 }
local function decl(name, keys)
  return options.declare("regularizers." .. name, keys, { example = ("gpu.nn.regularizers.%s(%%s)(gpu.ones(2, 2))"):format(name) })
end
local L1_KEYS, L2_KEYS = decl("L1", { l1 = FACTOR }), decl("L2", { l2 = FACTOR })
local L1L2_KEYS = decl("L1L2", { l1 = FACTOR, l2 = FACTOR })
local ORTHO_KEYS = decl("OrthogonalRegularizer", { factor = FACTOR, mode = { choices = { "rows", "columns" } } })
local function factor(fname, argn, v, default)
  if v == nil then return default end
  return options.value(v, FACTOR, fname, argn, "factor")
end

-- L1(l1 = 0.01): l1 * sum(|x|); L2(l2 = 0.01): l2 * sum(x^2); L1L2(l1 = 0, l2 = 0): both
-- (a number, or Keras's keyword table {l1 =, l2 =})
local function keyword(t, key) if type(t) == "table" and getmetatable(t) == nil then return t[key], true end return t, false end

function R.L1(l1)
  local v, kw = keyword(l1, "l1")
  if kw then L1_KEYS:check(l1, 1) end
  local a = factor("regularizers.L1", 1, v, 0.01)
  return setmetatable({ kind = "L1", l1 = a, config = ("l1=%g"):format(a), args = { a },
                        penalty = function(x) return x:abs():sum() * a end }, Reg)
end
function R.L2(l2)
  local v, kw = keyword(l2, "l2")
  if kw then L2_KEYS:check(l2, 1) end
  local a = factor("regularizers.L2", 1, v, 0.01)
  return setmetatable({ kind = "L2", l2 = a, config = ("l2=%g"):format(a), args = { a },
                        penalty = function(x) return x:square():sum() * a end }, Reg)
end
function R.L1L2(l1, l2)
  if type(l1) == "table" and getmetatable(l1) == nil then
    if l2 ~= nil then argerror("regularizers.L1L2", 2, "give the factors as numbers or as one table, not both") end
    local o = L1L2_KEYS:check(l1, 1)
    l1, l2 = o.l1, o.l2
  end
  local a, b = factor("regularizers.L1L2", 1, l1, 0), factor("regularizers.L1L2", 2, l2, 0)
  return setmetatable({ kind = "L1L2", l1 = a, l2 = b, config = ("l1=%g, l2=%g"):format(a, b), args = { a, b },
                        penalty = function(x) return x:abs():sum() * a + x:square():sum() * b end }, Reg)
end
-- OrthogonalRegularizer(factor = 0.01, mode = "rows"): factor * mean of |off-diagonal| of the
-- normalized rows' (or columns') Gram matrix, as Keras 3 (a 2-D weight)
function R.OrthogonalRegularizer(f, mode)
  if type(f) == "table" and getmetatable(f) == nil then
    local o = ORTHO_KEYS:check(f, 1)
    f, mode = o.factor, o.mode
  end
  local a = factor("regularizers.OrthogonalRegularizer", 1, f, 0.01)
  mode = options.value(mode, { choices = { "rows", "columns" }, default = "rows" }, "regularizers.OrthogonalRegularizer", 2, "mode")
  return setmetatable({ kind = "OrthogonalRegularizer", factor = a, mode = mode, config = ("factor=%g, mode=%s"):format(a, mode),
    args = { a, mode },
    penalty = function(x)
      if x.ndim ~= 2 then raise("regularizers.OrthogonalRegularizer: a 2-D weight expected, got %d-D", x.ndim) end
      local w = mode == "columns" and x:transpose(1, 2) or x
      local n = w.shape[1]
      if n < 2 then return gpu.zeros({}, { dtype = x.dtype, device = x.device }) end
      local norm = w:square():sum(2, { keepdims = true }):sqrt():clip(1e-7, nil)   -- (Keras's l2_normalize)
      local u = w / norm
      local prod = u:matmul(u:transpose(1, 2))
      local off = prod:abs() - gpu.eye(n, { dtype = x.dtype, device = x.device })
      return off:sum() / (n * (n - 1)) * a
    end }, Reg)
end
R.l1, R.l2, R.l1_l2, R.orthogonal_regularizer = R.L1, R.L2, R.L1L2, R.OrthogonalRegularizer

-- By Keras's identifiers (regularizers.get)
local reg_names = { l1 = R.L1, l2 = R.L2, l1l2 = R.L1L2, l1_l2 = R.L1L2, L1 = R.L1, L2 = R.L2, L1L2 = R.L1L2,
                    orthogonal_regularizer = R.OrthogonalRegularizer, OrthogonalRegularizer = R.OrthogonalRegularizer }

-- ---- constraints -------------------------------------------------------------------------------

local Con = options.class_table("Constraint")
Con.__index = Con
Con.__call = function(self, w)
  options.check_array(w, "constraints." .. self.kind, 1, "w")
  return self.apply(w)
end
function Con.__tostring(self) return ("constraints.%s(%s)"):format(self.kind, self.config) end
local function is_constraint(v) return getmetatable(v) == Con end
M.is_constraint = is_constraint

local EPS = 1e-7                  -- Keras's backend epsilon

-- axis: an integer (1-based, negatives from the end) or a list of them; Keras's default 0 is 1
local AXIS = { type = "integer|table", check = function(v)
  if type(v) == "number" then return true end
  if #v == 0 then return false, "must list at least one axis" end
  for _, a in ipairs(v) do if math.type(a) ~= "integer" then return false, "must hold integers" end end
  return true
end }
local function axes_of(w, axis)
  local list = type(axis) == "table" and axis or { axis }
  local out = {}
  for i, a in ipairs(list) do
    local d = a < 0 and w.ndim + 1 + a or a
    if d < 1 or d > w.ndim then
      raise("constraints: axis %d is out of range for a %d-D weight", a, w.ndim)
    end
    out[i] = d
  end
  return out
end
local function norms(w, axis) return w:square():sum(axes_of(w, axis), { keepdims = true }):sqrt() end

local MAXNORM = options.declare("constraints.MaxNorm", { max_value = { type = "number", min = 0, default = 2 }, axis = AXIS },
  { example = "gpu.nn.constraints.MaxNorm(%s)(gpu.ones(2, 2))" })
-- MaxNorm(max_value = 2, axis = 1): each slice along the other axes scaled to a norm of at most max_value
function C.MaxNorm(max_value, axis)
  local o
  if type(max_value) == "table" and getmetatable(max_value) == nil then o = MAXNORM:check(max_value, 1)
  else o = MAXNORM:check({ max_value = max_value, axis = axis }, 1) end
  local m, ax = o.max_value, o.axis or 1
  return setmetatable({ kind = "MaxNorm", max_value = m, axis = ax, config = ("max_value=%g"):format(m),
    args = { { max_value = m, axis = ax } },
    apply = function(w)
      local n = norms(w, ax)
      return w * (n:clip(0, m) / (n + EPS))
    end }, Con)
end
local MINMAX = options.declare("constraints.MinMaxNorm", { min_value = { type = "number", min = 0, default = 0 },
  max_value = { type = "number", min = 0, default = 1 }, rate = { type = "number", min = 0, max = 1, default = 1 }, axis = AXIS },
  { example = "gpu.nn.constraints.MinMaxNorm(%s)(gpu.ones(2, 2))" })
-- MinMaxNorm(min_value = 0, max_value = 1, rate = 1, axis = 1)
function C.MinMaxNorm(min_value, max_value, rate, axis)
  local o
  if type(min_value) == "table" and getmetatable(min_value) == nil then o = MINMAX:check(min_value, 1)
  else o = MINMAX:check({ min_value = min_value, max_value = max_value, rate = rate, axis = axis }, 1) end
  if o.min_value > o.max_value then raise("constraints.MinMaxNorm: min_value (%g) is above max_value (%g)", o.min_value, o.max_value) end
  local lo, hi, r, ax = o.min_value, o.max_value, o.rate, o.axis or 1
  return setmetatable({ kind = "MinMaxNorm", min_value = lo, max_value = hi, rate = r, axis = ax,
    args = { { min_value = lo, max_value = hi, rate = r, axis = ax } },
    config = ("min_value=%g, max_value=%g, rate=%g"):format(lo, hi, r),
    apply = function(w)
      local n = norms(w, ax)
      local desired = n:clip(lo, hi) * r + n * (1 - r)
      return w * (desired / (n + EPS))
    end }, Con)
end
-- NonNeg(): negative weights set to zero
function C.NonNeg()
  return setmetatable({ kind = "NonNeg", config = "", args = {}, apply = function(w) return w * w:ge(0):astype(w.dtype) end }, Con)
end
local UNIT = options.declare("constraints.UnitNorm", { axis = AXIS }, { example = "gpu.nn.constraints.UnitNorm(%s)(gpu.ones(2, 2))" })
-- UnitNorm(axis = 1): each slice scaled to a norm of 1
function C.UnitNorm(axis)
  local o = type(axis) == "table" and getmetatable(axis) == nil and #axis == 0 and UNIT:check(axis, 1)
    or UNIT:check({ axis = axis }, 1)
  local ax = o.axis or 1
  return setmetatable({ kind = "UnitNorm", axis = ax, config = "", args = { { axis = ax } },
    apply = function(w) return w / (norms(w, ax) + EPS) end }, Con)
end
C.max_norm, C.min_max_norm, C.non_neg, C.unit_norm = C.MaxNorm, C.MinMaxNorm, C.NonNeg, C.UnitNorm
local con_names = { max_norm = C.MaxNorm, min_max_norm = C.MinMaxNorm, non_neg = C.NonNeg, unit_norm = C.UnitNorm,
                    MaxNorm = C.MaxNorm, MinMaxNorm = C.MinMaxNorm, NonNeg = C.NonNeg, UnitNorm = C.UnitNorm }

-- What a saved model's architecture keeps of a regularizer or a constraint (nn/saving.lua):
-- its kind and constructor arguments, and the maker that rebuilds it from them.
function M.config_of(v)
  if is_regularizer(v) then return "regularizers." .. v.kind, v.args end
  if is_constraint(v) then return "constraints." .. v.kind, v.args end
end
function M.maker(kind)
  local part, name = tostring(kind):match("^(%a+)%.([%w_]+)$")
  local t = part == "regularizers" and R or part == "constraints" and C or nil
  return t and t[name]
end

-- ---- the layer options ------------------------------------------------------------------------

-- A regularizer option: a regularizer, Keras's identifier ("l2" ...), or a function of the
-- weight returning a 0-d array; a constraint option: a constraint, its identifier, or a
-- function of the weight returning the new weight.
local function choice_check(names, is_obj, what)
  return function(v)
    if type(v) == "string" then
      if names[v] == nil then
        return false, ("must be a %s or one of %s"):format(what, table.concat(options.sorted_keys(names), ", "))
      end
      return true
    end
    return is_obj(v) or type(v) == "function" or (getmetatable(v) ~= nil and getmetatable(v).__call ~= nil),
      ("must be a %s, its name or a function"):format(what)
  end
end
local REG_KEY = { type = "string|callable", what = "a regularizer", check = choice_check(reg_names, is_regularizer, "regularizer") }
local CON_KEY = { type = "string|callable", what = "a constraint", check = choice_check(con_names, is_constraint, "constraint") }

-- The option keys of a weighted Keras layer (merged into its declaration).
function M.keys(t, weights)
  weights = weights or { "kernel", "bias" }
  for _, entry in ipairs(weights) do
    local w = type(entry) == "table" and entry[1] or entry
    t[w .. "_regularizer"], t[w .. "_constraint"] = REG_KEY, CON_KEY
  end
  t.activity_regularizer = REG_KEY
  return t
end

local function resolve(v, names)
  if type(v) == "string" then return names[v]() end
  return v
end

-- attach(layer, o [, weights]): the layer keeps the regularizers and constraints of its
-- checked options o (nothing when it has none). The options of weight w act on the
-- parameter w ("kernel", "bias") or w_kernel (Keras's "depthwise" is depthwise_kernel).
-- (an entry {w, name} names the parameter itself)
local function param_of(w) return (w == "kernel" or w == "bias") and w or w .. "_kernel" end
function M.attach(layer, o, weights)
  weights = weights or { "kernel", "bias" }
  local regs, cons
  for _, entry in ipairs(weights) do
    local w = type(entry) == "table" and entry[1] or entry
    local function param_of_entry() return type(entry) == "table" and entry[2] or param_of(w) end
    local r, c = o[w .. "_regularizer"], o[w .. "_constraint"]
    if r ~= nil then regs = regs or {}; regs[#regs + 1] = { param_of_entry(), resolve(r, reg_names) } end
    if c ~= nil then cons = cons or {}; cons[#cons + 1] = { param_of_entry(), resolve(c, con_names) } end
  end
  if o.activity_regularizer ~= nil then rawset(layer, "_activity", resolve(o.activity_regularizer, reg_names)) end
  rawset(layer, "_regs", regs)
  rawset(layer, "_cons", cons)
end

-- activity(layer, y) -> y: keeps the layer's activity penalty of y (Keras 3's: divided by
-- the batch size) for model:losses().
function M.activity(layer, y)
  local r = rawget(layer, "_activity")
  if r ~= nil then
    local p = r(y)
    if y.ndim > 0 and y.shape[1] > 0 then p = p / y.shape[1] end
    rawset(layer, "_activity_loss", p)
  end
  return y
end

local function is_scalar(v) return options.is_array(v) and v.size == 1 end

-- model:losses(): Keras's model.losses, 0-d arrays: the activity penalties of the layers'
-- last calls, then the penalties of their weights now (kernel, bias), layer by layer; empty
-- when no layer has a regularizer.
local function one_value(p, what, m)
  if not is_scalar(p) then
    raise("Module:losses: the %s regularizer of %s returned %s, not one value", what, m:repr(),
      options.is_array(p) and ("shape " .. options.shape_str(p.shape)) or type_name(p))
  end
  return p:reshape({})
end
function module.Module:losses()
  local out, mods = {}, self:modules()
  for _, m in ipairs(mods) do
    local a = rawget(m, "_activity_loss")
    if a ~= nil then out[#out + 1] = one_value(a, "activity", m) end
  end
  for _, m in ipairs(mods) do
    for _, e in ipairs(rawget(m, "_regs") or {}) do
      local w = m[e[1]]
      if w ~= nil then out[#out + 1] = one_value(e[2](w), e[1], m) end
    end
  end
  return out
end

-- has(m): whether a layer of m has a regularizer (what = "regularizer") or a constraint.
function M.has(m, what)
  local key = what == "constraint" and "_cons" or "_regs"
  for _, sub in ipairs(m:modules()) do
    if rawget(sub, key) ~= nil or (what ~= "constraint" and rawget(sub, "_activity") ~= nil) then return true end
  end
  return false
end

-- total(m): the sum of m:losses() (nil when there are none).
function M.total(m)
  local t
  for _, p in ipairs(m:losses()) do t = t and t + p or p end
  return t
end

-- constrain(m): each constrained weight of m's layers replaced in place (no tape) by its
-- constraint's result.
function M.constrain(m)
  gpu.no_grad(function()
    for _, sub in ipairs(m:modules()) do
      for _, e in ipairs(rawget(sub, "_cons") or {}) do
        local w = sub[e[1]]
        if w ~= nil then
          local v = e[2](w)
          if not options.is_array(v) or options.shape_str(v.shape) ~= options.shape_str(w.shape) then
            raise("Module:fit: the %s constraint of %s returned %s, not an array of the weight's shape %s", e[1], sub:repr(),
              options.is_array(v) and ("shape " .. options.shape_str(v.shape)) or type_name(v), options.shape_str(w.shape))
          end
          w[{}] = v
        end
      end
    end
  end)
end

-- ---- ActivityRegularization ------------------------------------------------------------------------

-- ActivityRegularization([l1 = 0 [, l2 = 0]] or {l1 =, l2 =}): the identity, with the penalty
-- l1 sum|x| + l2 sum x^2 of its input (divided by the batch size) among model:losses()
M.ActivityRegularization = module.options_class("ActivityRegularization",
  { l1 = { type = "number", min = 0, default = 0 }, l2 = { type = "number", min = 0, default = 0 }, name = { type = "string" } },
  { "l1", "l2" },
  function(self, o) rawset(self, "_activity", R.L1L2(o.l1, o.l2)) end,
  function(self, x)
    options.check_array(x, "nn.ActivityRegularization", 1, "input")
    return M.activity(self, x)
  end, "gpu.ones(2, 3)")

return M
