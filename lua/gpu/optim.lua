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

local optim = {}
local fused = gpu.fused
local fusable_dtype = { float32 = true, float64 = true }
-- p can take the fused step: a float contiguous array whose gradient matches it.
local function fusable(p, g)
  return fusable_dtype[p.dtype] and g.dtype == p.dtype and g.device == p.device and p:is_contiguous()
end

local Optimizer = {}
Optimizer.__index = Optimizer
optim.Optimizer = Optimizer

local function class(name, defaults)
  local cls = setmetatable({}, { __index = Optimizer })
  cls.__index = cls
  cls.__name = name
  cls.defaults = defaults
  setmetatable(cls, {
    __index = Optimizer,
    __call = function(c, params, opts) return c.new(c, params, opts) end,
  })
  return cls
end

-- params: a list of arrays or a module (anything with :parameters()).
function Optimizer.new(cls, params, opts)
  local name = cls.__name
  if type(params) == "table" and type(params.parameters) == "function" then params = params:parameters() end
  if type(params) ~= "table" then
    error(("%s: a list of parameters expected, got %s"):format(name, type(params)), 3)
  end
  if #params == 0 then
    error(("%s: the optimizer was given no parameters (an empty list; build or call the model first)"):format(name), 3)
  end
  for i, p in ipairs(params) do
    if type(p) ~= "userdata" then error(("%s: parameter #%d is a %s, expected gpu.array"):format(name, i, type(p)), 3) end
  end
  opts = opts or {}
  local self = setmetatable({ params = params, state = {}, step_count = 0 }, cls)
  for k, v in pairs(cls.defaults) do self[k] = v end
  for k, v in pairs(opts) do
    if cls.defaults[k] == nil then
      local keys = {}
      for d in pairs(cls.defaults) do keys[#keys + 1] = d end
      table.sort(keys)
      error(("%s: unknown option '%s' (expected %s)"):format(name, tostring(k), table.concat(keys, ", ")), 3)
    end
    self[k] = v
  end
  if type(self.lr) ~= "number" or self.lr < 0 then error(("%s: lr must be a non-negative number"):format(name), 3) end
  self.initial_lr = self.lr
  return self
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
  for k in pairs(getmetatable(self).defaults) do hp[k] = self[k] end
  local st = {}
  for i, s in pairs(self.state) do
    local c = {}
    for k, v in pairs(s) do c[k] = v end
    st[i] = c
  end
  return { step = self.step_count, param_groups = { hp }, state = st }
end

function Optimizer:load_state_dict(sd)
  if type(sd) ~= "table" or type(sd.state) ~= "table" then error("load_state_dict: an optimizer state dict expected", 2) end
  for k, v in pairs(sd.param_groups and sd.param_groups[1] or {}) do self[k] = v end
  self.step_count = sd.step or 0
  self.state = {}
  for i, s in pairs(sd.state) do
    if self.params[i] == nil then error(("load_state_dict: state for parameter #%d, which does not exist"):format(i), 2) end
    local c = {}
    local dev = self.params[i].device            -- state lives where its parameter does
    for k, v in pairs(s) do
      if type(v) == "userdata" then c[k] = v.device == dev and v:copy() or v:to(dev) else c[k] = v end
    end
    self.state[i] = c
  end
  return self
end

-- SGD(params, {lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false})
local SGD = class("SGD", { lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false })
optim.SGD = SGD
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

local Adam = class("Adam", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, amsgrad = false })
optim.Adam = Adam
function Adam:update(p, g, st) adam_update(self, p, g, st, false) end

local AdamW = class("AdamW", { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 1e-2, amsgrad = false })
optim.AdamW = AdamW
function AdamW:update(p, g, st) adam_update(self, p, g, st, true) end

-- RMSprop(params, {lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false})
local RMSprop = class("RMSprop", { lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false })
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
function optim.by_name(name)
  local f = keras_defaults[string.lower(name)]
  return f and function(params) return f(params) end
end

-- ---- learning-rate schedules: call sched:step() once per epoch -----------------------------------

local function sched_class(name)
  local cls = {}
  cls.__index = cls
  cls.__name = name
  setmetatable(cls, { __call = function(c, opt, opts)
    if type(opt) ~= "table" or opt.params == nil then error(name .. ": an optimizer expected", 2) end
    local self = setmetatable({ optimizer = opt, last_epoch = 0, base_lr = opt.initial_lr or opt.lr }, c)
    c.init(self, opts or {})
    return self
  end })
  function cls:get_last_lr() return self.optimizer.lr end
  function cls:step()
    self.last_epoch = self.last_epoch + 1
    self.optimizer.lr = self:lr_at(self.last_epoch)
    return self.optimizer.lr
  end
  return cls
end

-- StepLR(opt, {step_size =, gamma = 0.1}): lr = base * gamma^floor(epoch / step_size)
local StepLR = sched_class("StepLR")
optim.StepLR = StepLR
optim.lr_scheduler = { StepLR = StepLR }
function StepLR:init(o)
  if math.type(o.step_size) ~= "integer" or o.step_size < 1 then error("StepLR: step_size must be a positive integer", 3) end
  self.step_size, self.gamma = o.step_size, o.gamma or 0.1
end
function StepLR:lr_at(e) return self.base_lr * self.gamma ^ (e // self.step_size) end

-- CosineAnnealingLR(opt, {T_max =, eta_min = 0})
local Cosine = sched_class("CosineAnnealingLR")
optim.CosineAnnealingLR = Cosine
optim.lr_scheduler.CosineAnnealingLR = Cosine
function Cosine:init(o)
  if type(o.T_max) ~= "number" or o.T_max <= 0 then error("CosineAnnealingLR: T_max must be a positive number", 3) end
  self.T_max, self.eta_min = o.T_max, o.eta_min or 0
end
function Cosine:lr_at(e)
  return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * e / self.T_max)) / 2
end

-- ---- GradScaler: dynamic loss scaling for float16 mixed precision (torch.cuda.amp) ---------------
--
--   local scaler = gpu.optim.GradScaler{init_scale = 2^16, growth_factor = 2,
--                                       backoff_factor = 0.5, growth_interval = 2000}
--   opt:zero_grad(); scaler:scale(loss):backward()
--   scaler:step(opt)      -- unscales the grads; skips opt:step() if any is inf/NaN
--   scaler:update()       -- backs the scale off after a skipped step, grows it after
--                         -- growth_interval clean steps in a row
-- scaler.skipped counts the skipped steps. {enabled = false} makes every call a pass-through.
local GradScaler = {}
GradScaler.__index = GradScaler
GradScaler.__name = "GradScaler"
local scaler_defaults = { init_scale = 2.0 ^ 16, growth_factor = 2.0, backoff_factor = 0.5, growth_interval = 2000,
                          enabled = true }
optim.GradScaler = setmetatable(GradScaler, { __call = function(_, opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("GradScaler: an options table expected, got " .. type(opts), 2) end
  local self = setmetatable({}, GradScaler)
  for k, v in pairs(scaler_defaults) do self[k] = v end
  for k, v in pairs(opts) do
    if scaler_defaults[k] == nil then
      error(("GradScaler: unknown option '%s' (expected backoff_factor, enabled, growth_factor, growth_interval, init_scale)")
        :format(tostring(k)), 2)
    end
    self[k] = v
  end
  local function num(k, ok) if type(self[k]) ~= "number" or not ok(self[k]) then
    error(("GradScaler: %s must be a %s"):format(k, k == "growth_interval" and "positive integer"
      or k == "backoff_factor" and "number in (0, 1)" or k == "growth_factor" and "number > 1" or "positive number"), 3) end end
  num("init_scale", function(v) return v > 0 and v < math.huge end)
  num("growth_factor", function(v) return v > 1 end)
  num("backoff_factor", function(v) return v > 0 and v < 1 end)
  num("growth_interval", function(v) return math.type(v) == "integer" and v >= 1 end)
  self.scale_value = self.init_scale
  self.growth_tracker = 0   -- clean steps since the last change of scale
  self.skipped = 0          -- steps skipped for inf/NaN gradients
  self.steps = 0            -- step() calls
  self.found_inf = false    -- in the current iteration
  self.unscaled = false
  return self
end })

function GradScaler:is_enabled() return self.enabled end
function GradScaler:get_scale() return self.enabled and self.scale_value or 1.0 end

-- scale(loss): loss * scale (recorded, so backward yields scaled gradients)
function GradScaler:scale(loss)
  if type(loss) ~= "userdata" then error("GradScaler:scale: a gpu.array loss expected, got " .. type(loss), 2) end
  if not self.enabled then return loss end
  return loss * self.scale_value
end

local function check_opt(fname, opt)
  if type(opt) ~= "table" or type(opt.params) ~= "table" or type(opt.step) ~= "function" then
    error(("GradScaler:%s: an optimizer expected, got %s"):format(fname, type(opt)), 3)
  end
end

-- unscale_(opt): divides the optimizer's gradients by the scale (once per iteration) and
-- notes whether any is inf/NaN. Call it before clipping gradients.
function GradScaler:unscale_(opt)
  check_opt("unscale_", opt)
  if not self.enabled or self.unscaled then return end
  local inv = 1.0 / self.scale_value
  local was = autograd.set_grad_enabled(false)
  local ok, err = pcall(function()
    -- one 0-d "all finite" flag per device, read once: a sync per device, not per parameter
    local flags, devs = {}, {}
    for _, p in ipairs(opt.params) do
      local g = p.grad
      if g ~= nil then
        g:mul_(inv)
        local f, d = g:isfinite():all(), g.device
        if flags[d] == nil then devs[#devs + 1] = d; flags[d] = f else flags[d] = flags[d] & f end
      end
    end
    for _, d in ipairs(devs) do
      if not flags[d]:item() then self.found_inf = true end
    end
  end)
  autograd.set_grad_enabled(was)
  if not ok then error(err, 0) end
  self.unscaled = true
end

-- step(opt): unscales (unless unscale_ ran) and runs opt:step() unless a gradient is
-- inf/NaN; returns true when the step ran, false when it was skipped.
function GradScaler:step(opt)
  check_opt("step", opt)
  if not self.enabled then opt:step(); return true end
  self:unscale_(opt)
  self.steps = self.steps + 1
  if self.found_inf then
    self.skipped = self.skipped + 1
    return false
  end
  opt:step()
  return true
end

-- update([new_scale]): adjusts the scale for the next iteration.
function GradScaler:update(new_scale)
  if not self.enabled then return end
  if new_scale ~= nil then
    if type(new_scale) ~= "number" or new_scale <= 0 then error("GradScaler:update: new_scale must be a positive number", 2) end
    self.scale_value = new_scale
    self.growth_tracker = 0
  elseif self.found_inf then
    self.scale_value = self.scale_value * self.backoff_factor
    self.growth_tracker = 0
  else
    self.growth_tracker = self.growth_tracker + 1
    if self.growth_tracker >= self.growth_interval then
      local s = self.scale_value * self.growth_factor
      if s < math.huge then self.scale_value = s end
      self.growth_tracker = 0
    end
  end
  self.found_inf, self.unscaled = false, false
end

function GradScaler:state_dict()
  return { scale = self.scale_value, growth_factor = self.growth_factor, backoff_factor = self.backoff_factor,
           growth_interval = self.growth_interval, growth_tracker = self.growth_tracker, skipped = self.skipped }
end
function GradScaler:load_state_dict(sd)
  if type(sd) ~= "table" or type(sd.scale) ~= "number" then error("GradScaler:load_state_dict: a scaler state dict expected", 2) end
  self.scale_value = sd.scale
  for _, k in ipairs { "growth_factor", "backoff_factor", "growth_interval", "growth_tracker", "skipped" } do
    if sd[k] ~= nil then self[k] = sd[k] end
  end
  return self
end
function GradScaler:__tostring()
  return ("GradScaler(scale=%g, skipped=%d)"):format(self:get_scale(), self.skipped)
end

return optim
