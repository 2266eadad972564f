-- gpu.optim: SGD (momentum, Nesterov, weight decay), Adam, AdamW, RMSprop, and the
-- learning-rate schedules StepLR and CosineAnnealingLR.
--
--   local opt = gpu.optim.Adam(model:parameters(), {lr = 1e-3})
--   opt:zero_grad(); loss:backward(); opt:step()
--
-- The update rules are PyTorch's (torch.optim). A float32/float64 contiguous parameter
-- is updated by one fused kernel (gpu.fused.sgd_/adam_/rmsprop_: one pass over p, its
-- gradient and state); any other goes through in-place array ops (p:sub_, m:mul_ ...),
-- which compute the same rule. A parameter without a .grad is skipped. Steps record
-- nothing on the autograd tape.

local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"

local is_array, raise, argerror, type_name = options.is_array, options.raise, options.argerror, options.type_name

local optim = {}
local fused = gpu.fused
local fusable_dtype = { float32 = true, float64 = true }
-- p can take the fused step: a float contiguous array whose gradient matches it.
local function fusable(p, g)
  return fusable_dtype[p.dtype] and g.dtype == p.dtype and g.device == p.device and p:is_contiguous()
end

local Optimizer = {}
Optimizer.__index = Optimizer
Optimizer.__name = "Optimizer"
optim.Optimizer = Optimizer

-- is_optimizer(v): v is an optimizer made by one of the classes here
local function is_optimizer(v) return type(v) == "table" and rawget(v, "params") ~= nil and rawget(v, "state") ~= nil end
optim.is_optimizer = is_optimizer
options.guard_methods(Optimizer, "Optimizer", "opt", is_optimizer)

-- The parameter list of params: a list of arrays, a module (anything with :parameters()),
-- or the {name, array} pairs of named_parameters().
local function param_list(fname, params)
  if type(params) == "table" and type(params.parameters) == "function" then params = params:parameters() end
  if type(params) ~= "table" or is_array(params) then
    argerror(fname, 1, "a list of parameters (or a module, or named_parameters()) expected, got %s",
      type_name(params))
  end
  local list, seen = {}, {}
  for i, p in ipairs(params) do
    if type(p) == "table" and p.params ~= nil then
      argerror(fname, 1, "parameter groups ({params = ..., lr = ...}) are not supported: one list, one set of options")
    end
    if type(p) == "table" and is_array(p[2]) then p = p[2] end           -- {name, p} from named_parameters()
    if not is_array(p) then argerror(fname, 1, "parameter #%d is %s, expected gpu.array", i, type_name(p)) end
    if p:is_closed() then argerror(fname, 1, "parameter #%d is a closed array", i) end
    if seen[p] then argerror(fname, 1, "parameter #%d appears twice in the list", i) end
    seen[p], list[i] = true, p
  end
  if #list == 0 then
    raise("%s: the optimizer was given no parameters (%s; build or call the model first)", fname,
      next(params) == nil and "an empty list" or "a table with no list part")
  end
  return list
end

-- The options of a construction: PyTorch's positional learning rate Opt(params, 1e-3 [, opts])
-- or an options table; checked against the class's declaration.
local function construction_options(cls, fname, lr, opts)
  if type(lr) == "table" and opts == nil then return cls.decl:check(lr, 2) end
  if lr ~= nil then
    options.value(lr, cls.decl.keys.lr, fname, 2, "lr")
    if type(opts) == "table" and opts.lr ~= nil then argerror(fname, 3, "lr given twice") end
    local o = cls.decl:check(opts, 3)
    o.lr = lr
    return o
  end
  return cls.decl:check(opts, 3)
end

-- class -> function(fname, o): the rules between options (SGD's nesterov), raising
local rules = {}

local function construct(cls, params, lr, opts)
  local fname = "optim." .. cls.__name
  local list = param_list(fname, params)
  local o = construction_options(cls, fname, lr, opts)
  if rules[cls] then rules[cls](fname, o) end
  local self = setmetatable({ params = list, state = {}, step_count = 0 }, cls)
  for k, v in pairs(o) do self[k] = type(v) == "table" and { table.unpack(v) } or v end   -- (betas: a copy)
  self.initial_lr = self.lr
  return self
end

-- The option keys every optimizer shares.
local nonneg = { type = "number", min = 0, default = 0 }
local function betas_ok(v)
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  local ok = n == 2
  for i = 1, 2 do
    local b = v[i]
    ok = ok and type(b) == "number" and b >= 0 and b < 1
  end
  return ok, "must be a table of two numbers in [0, 1)"
end

-- class(name, keys): an optimizer class, called as Opt(params [, lr] [, opts]); keys
-- declares its hyper-parameters with their defaults (what state_dict saves).
local function class(name, keys)
  local cls = { __name = name }
  cls.__index = cls
  cls.decl = options.declare("optim." .. name, keys,
    { example = ("gpu.optim.%s({gpu.ones(2):requires_grad()}, %%s)"):format(name) })
  cls.hyper = {}
  for k, spec in pairs(keys) do if not spec.unsupported then cls.hyper[#cls.hyper + 1] = k end end
  table.sort(cls.hyper)
  setmetatable(cls, { __index = Optimizer, __call = construct })
  return options.guard_methods(cls, name, "opt", is_optimizer)
end

function Optimizer:zero_grad()
  for _, p in ipairs(self.params) do p:set_grad(nil) end
end

function Optimizer:step()
  self.step_count = self.step_count + 1
  local was = autograd.set_grad_enabled(false)
  local ok, err = pcall(function()
    for i, p in ipairs(self.params) do
      local g = p.grad
      if g ~= nil then
        local st = self.state[i]
        if st == nil then st = {}; self.state[i] = st end
        self:update(p, g, st)
      end
    end
  end)
  autograd.set_grad_enabled(was)
  if not ok then error(err, 0) end
end

-- state_dict(): hyper-parameters, the step count, and per-parameter state (arrays).
function Optimizer:state_dict()
  local hp = {}
  for _, k in ipairs(getmetatable(self).hyper) do hp[k] = self[k] end
  local st = {}
  for i, s in pairs(self.state) do
    local c = {}
    for k, v in pairs(s) do c[k] = v end
    st[i] = c
  end
  return { step = self.step_count, param_groups = { hp }, state = st }
end

-- The state of parameter i from a checkpoint, its arrays copied or moved where the
-- parameter is (nil and why when it does not fit).
local function loaded_state(p, i, s)
  if type(s) ~= "table" then return nil, ("the state of parameter #%d is %s, not a table"):format(i, type_name(s)) end
  local c = {}
  for k, v in pairs(s) do
    if is_array(v) then
      if options.shape_str(v.shape) ~= options.shape_str(p.shape) then
        return nil, ("%s of parameter #%d has shape %s, the parameter %s"):format(k, i, options.shape_str(v.shape),
          options.shape_str(p.shape))
      end
      c[k] = v.device == p.device and v:copy() or v:to(p.device)
    else
      c[k] = v
    end
  end
  return c
end

-- load_state_dict(sd): hyper-parameters, step count and state from state_dict(); all of it
-- is checked and copied before any is taken, so a bad one leaves the optimizer as it was.
function Optimizer:load_state_dict(sd)
  local cls = getmetatable(self)
  local fname = cls.__name .. ":load_state_dict"
  if type(sd) ~= "table" or type(sd.state) ~= "table" then
    argerror(fname, 1, "an optimizer state dict ({step =, param_groups =, state =}) expected, got %s", type_name(sd))
  end
  local hp = sd.param_groups and sd.param_groups[1] or {}
  local o = cls.decl:check(hp, 1, fname)
  if rules[cls] then rules[cls](fname, o) end
  local step = options.value(sd.step, { type = "integer", min = 0, default = 0 }, fname, 1, "step")
  local state = {}
  for i, s in pairs(sd.state) do
    local p = self.params[i]
    if p == nil then raise("%s: state for parameter #%s, which does not exist", fname, tostring(i)) end
    local c, why = loaded_state(p, i, s)
    if c == nil then raise("%s: %s", fname, why) end
    state[i] = c
  end
  for _, k in ipairs(cls.hyper) do
    local v = o[k]
    if hp[k] ~= nil then self[k] = type(v) == "table" and { table.unpack(v) } or v end
  end
  self.step_count, self.state = step, state
  return self
end

-- SGD(params, {lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false})
local SGD = class("SGD", { lr = { type = "number", min = 0, default = 0.01 }, momentum = nonneg,
  dampening = { type = "number", default = 0 }, weight_decay = nonneg,
  nesterov = { type = "boolean", default = false }, maximize = { type = "boolean", default = false } })
optim.SGD = SGD
rules[SGD] = function(fname, o)
  if o.nesterov and (o.momentum <= 0 or o.dampening ~= 0) then
    raise("%s: nesterov momentum needs momentum > 0 and dampening = 0", fname)
  end
end
function SGD:update(p, g, st)
  if fusable(p, g) then
    local first = false
    if self.momentum ~= 0 and st.momentum_buffer == nil then
      st.momentum_buffer = gpu.zeros_like(p)
      first = true
    end
    fused.sgd_(p, g, st.momentum_buffer, { lr = self.lr, momentum = self.momentum, dampening = self.dampening,
      weight_decay = self.weight_decay, nesterov = self.nesterov, maximize = self.maximize, first = first })
    return
  end
  if self.maximize then g = -g end
  if self.weight_decay ~= 0 then g = g + p * self.weight_decay end
  if self.momentum ~= 0 then
    local buf = st.momentum_buffer
    if buf == nil then
      buf = g:copy()
      st.momentum_buffer = buf
    else
      buf:mul_(self.momentum):add_(g * (1 - self.dampening))
    end
    if self.nesterov then g = g + buf * self.momentum else g = buf end
  end
  p:sub_(g * self.lr)
end

-- Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, amsgrad = false})
local function adam_update(self, p, g, st, decoupled)
  local b1, b2 = self.betas[1], self.betas[2]
  if fusable(p, g) then
    if st.exp_avg == nil then
      st.exp_avg, st.exp_avg_sq, st.step = gpu.zeros_like(p), gpu.zeros_like(p), 0
    end
    st.step = st.step + 1
    if self.amsgrad and st.max_exp_avg_sq == nil then st.max_exp_avg_sq = gpu.zeros_like(p) end
    fused.adam_(p, g, st.exp_avg, st.exp_avg_sq, self.amsgrad and st.max_exp_avg_sq or nil, { lr = self.lr,
      beta1 = b1, beta2 = b2, eps = self.eps, weight_decay = self.weight_decay, step = st.step,
      decoupled = decoupled, amsgrad = self.amsgrad, maximize = self.maximize })
    return
  end
  if self.maximize then g = -g end
  if self.weight_decay ~= 0 then
    if decoupled then p:mul_(1 - self.lr * self.weight_decay)
    else g = g + p * self.weight_decay end
  end
  local m, v = st.exp_avg, st.exp_avg_sq
  if m == nil then
    m = gpu.zeros_like(p)
    v = gpu.zeros_like(p)
    st.exp_avg, st.exp_avg_sq, st.step = m, v, 0
  end
  st.step = st.step + 1
  local t = st.step
  m:mul_(b1):add_(g * (1 - b1))
  v:mul_(b2):add_(g:square():mul_(1 - b2))
  local bc1 = 1 - b1 ^ t
  local bc2 = 1 - b2 ^ t
  local vv = v
  if self.amsgrad then
    if st.max_exp_avg_sq == nil then st.max_exp_avg_sq = v:copy() else st.max_exp_avg_sq:maximum_(v) end
    vv = st.max_exp_avg_sq
  end
  local denom = vv:sqrt():mul_(1 / math.sqrt(bc2)):add_(self.eps)
  p:sub_(m:div(denom):mul_(self.lr / bc1))
end

-- Adam's and AdamW's keys, with AdamW's weight decay default
local function adam_keys(weight_decay)
  return { lr = { type = "number", min = 0, default = 1e-3 },
           betas = { type = "table", default = { 0.9, 0.999 }, check = betas_ok },
           eps = { type = "number", min = 0, default = 1e-8 },
           weight_decay = { type = "number", min = 0, default = weight_decay },
           amsgrad = { type = "boolean", default = false }, maximize = { type = "boolean", default = false } }
end
local Adam = class("Adam", adam_keys(0))
optim.Adam = Adam
function Adam:update(p, g, st) adam_update(self, p, g, st, false) end

local AdamW = class("AdamW", adam_keys(1e-2))
optim.AdamW = AdamW
function AdamW:update(p, g, st) adam_update(self, p, g, st, true) end

-- RMSprop(params, {lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false})
local RMSprop = class("RMSprop", { lr = { type = "number", min = 0, default = 0.01 },
  alpha = { type = "number", min = 0, default = 0.99 }, eps = { type = "number", min = 0, default = 1e-8 },
  weight_decay = nonneg, momentum = nonneg, centered = { type = "boolean", default = false },
  maximize = { unsupported = "RMSprop has no maximize here" } })
optim.RMSprop = RMSprop
function RMSprop:update(p, g, st)
  local sq = st.square_avg
  if sq == nil then
    sq = gpu.zeros_like(p)
    st.square_avg = sq
    if self.momentum > 0 then st.momentum_buffer = gpu.zeros_like(p) end
    if self.centered then st.grad_avg = gpu.zeros_like(p) end
  end
  if fusable(p, g) then
    fused.rmsprop_(p, g, sq, st.momentum_buffer, st.grad_avg, { lr = self.lr, alpha = self.alpha, eps = self.eps,
      weight_decay = self.weight_decay, momentum = self.momentum, centered = self.centered })
    return
  end
  if self.weight_decay ~= 0 then g = g + p * self.weight_decay end
  sq:mul_(self.alpha):add_(g:square():mul_(1 - self.alpha))
  local avg
  if self.centered then
    st.grad_avg:mul_(self.alpha):add_(g * (1 - self.alpha))
    avg = (sq - st.grad_avg:square()):sqrt():add_(self.eps)
  else
    avg = sq:sqrt():add_(self.eps)
  end
  if self.momentum > 0 then
    local buf = st.momentum_buffer
    buf:mul_(self.momentum):add_(g / avg)
    p:sub_(buf * self.lr)
  else
    p:sub_((g / avg):mul_(self.lr))
  end
end

-- Keras names (compile{optimizer = "adam"}), with Keras's default learning rates.
local keras_defaults = {
  sgd = function(params) return SGD(params, { lr = 0.01 }) end,
  adam = function(params) return Adam(params, { lr = 1e-3, eps = 1e-7 }) end,
  adamw = function(params) return AdamW(params, { lr = 1e-3, eps = 1e-7, weight_decay = 4e-3 }) end,
  rmsprop = function(params) return RMSprop(params, { lr = 1e-3, alpha = 0.9, eps = 1e-7 }) end,
}
optim.names = { "adam", "adamw", "rmsprop", "sgd" }
-- by_name(name): a function params -> the optimizer Keras's name stands for, or nil
function optim.by_name(name)
  return type(name) == "string" and keras_defaults[string.lower(name)] or nil
end

-- ---- schedules and loss scaling (lua/gpu/optim/) -------------------------------------------------

optim.lr_scheduler = require "gpu.optim.lr_scheduler"
optim.StepLR, optim.CosineAnnealingLR = optim.lr_scheduler.StepLR, optim.lr_scheduler.CosineAnnealingLR
optim.GradScaler = require "gpu.optim.grad_scaler"
function optim.is_grad_scaler(v) return getmetatable(v) == optim.GradScaler end

return optim
