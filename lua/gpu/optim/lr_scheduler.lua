-- gpu.optim.lr_scheduler: learning-rate schedules (torch.optim.lr_scheduler); each is
-- also gpu.optim.<Name>.
--
--   local sched = gpu.optim.StepLR(opt, 30, {gamma = 0.1})
--   for epoch = 1, 90 do train(); sched:step() end
--
-- As PyTorch: a schedule notes each parameter group's initial_lr (its lr when the first
-- schedule is made) and sets every group's lr from it at construction (epoch 0) and at
-- each step(); get_last_lr() returns the lrs, one per group. The formulas are PyTorch's
-- closed forms (one schedule per optimizer, SequentialLR over several one after another, or
-- ChainedScheduler over multiplicative ones at once: two schedules that both step one
-- optimizer's lr outside a chain are not supported). state_dict() holds the plain fields
-- (no functions, no optimizer); load_state_dict(sd) takes them back.
local options = require "gpu.options"

-- (gpu.optim loads this file: it is asked for at a schedule's construction, not before)
local function is_optimizer(v) return require("gpu.optim").is_optimizer(v) end
local raise, argerror, type_name = options.raise, options.argerror, options.type_name
local lr_scheduler = {}

local function is_scheduler(v)
  return type(v) == "table" and rawget(v, "optimizer") ~= nil and rawget(v, "last_epoch") ~= nil
end
lr_scheduler.is_scheduler = is_scheduler

-- The base every schedule shares.
local Scheduler = {}

local function groups(self) return self.optimizer.param_groups end

-- apply(self): every group's lr from the schedule at self.last_epoch
local function apply(self)
  for i, g in ipairs(groups(self)) do g.lr = self:lr_at(self.last_epoch, i, self.base_lrs[i]) end
end

function Scheduler:get_last_lr()
  local out = {}
  for i, g in ipairs(groups(self)) do out[i] = g.lr end
  return table.unpack(out)
end

-- step(): the next epoch's lrs set; returns the first group's
function Scheduler:step()
  self.last_epoch = self.last_epoch + 1
  apply(self)
  return groups(self)[1].lr
end

local function copy_plain(v)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do if type(x) ~= "function" then c[k] = copy_plain(x) end end
  return c
end

-- The fields state_dict leaves out: the optimizer, functions, sub-schedules.
local skip = { optimizer = true, lr_lambdas = true, schedulers = true }

function Scheduler:state_dict()
  local sd = {}
  for k, v in pairs(self) do
    if not skip[k] and type(v) ~= "function" then sd[k] = copy_plain(v) end
  end
  if self.schedulers then
    sd.schedulers = {}
    for i, s in ipairs(self.schedulers) do sd.schedulers[i] = s:state_dict() end
  end
  return sd
end

-- load_state_dict(sd): each field the schedule has, of the same type; checked first
function Scheduler:load_state_dict(sd)
  local fname = getmetatable(self).__name .. ":load_state_dict"
  if type(sd) ~= "table" or math.type(sd.last_epoch) ~= "integer" then
    argerror(fname, 1, "a schedule state dict (from state_dict()) expected, got %s", type_name(sd))
  end
  for k, v in pairs(sd) do
    if not skip[k] then
      local mine = rawget(self, k)
      if mine == nil or (type(mine) ~= type(v) and not (type(mine) == "number" and type(v) == "number")) then
        raise("%s: the state dict's '%s' (%s) does not belong to a %s", fname, tostring(k), type_name(v),
          getmetatable(self).__name)
      end
    end
  end
  if self.schedulers then
    if type(sd.schedulers) ~= "table" or #sd.schedulers ~= #self.schedulers then
      raise("%s: the state dict holds %s schedules, this one %d", fname,
        type(sd.schedulers) == "table" and tostring(#sd.schedulers) or "no", #self.schedulers)
    end
    for i, s in ipairs(self.schedulers) do s:load_state_dict(sd.schedulers[i]) end
  end
  for k, v in pairs(sd) do if not skip[k] then self[k] = copy_plain(v) end end
  return self
end

-- sched_class(name, key, keys, example_args [, init]): a schedule Sched(opt, <key> |
-- {<key> =, ...} [, opts]) (PyTorch's positional first argument or an options table; key
-- nil: Sched(opt [, opts])). init(self, o, fname) completes a new one before its first
-- lrs are set (nothing is changed when it raises).
local function sched_class(name, key, keys, arg, init)
  local cls = { __name = name }
  cls.__index = cls
  local fname = "optim." .. name
  local opt = "gpu.optim.SGD({gpu.ones(1):requires_grad()}, {momentum = 0.9})"
  local example = arg and arg:find("%s", 1, true) and ("local o = %s; " .. arg):format(opt)
    or ("gpu.optim.%s(%s, %s%%s)"):format(name, opt, arg and arg .. ", " or "")
  local decl = options.declare(fname, keys, { example = example })
  setmetatable(cls, { __call = function(c, opt, first, opts)
    if not is_optimizer(opt) then argerror(fname, 1, "an optimizer expected, got %s", type_name(opt)) end
    local o
    if key == "schedulers" and type(opts) == "table" and (opts[1] ~= nil or next(opts) == nil) then
      opts = { milestones = opts }                          -- SequentialLR(opt, schedulers, milestones)
    end
    if key == nil then o = decl:check(first, 2); if opts ~= nil then argerror(fname, 3, "no third argument expected") end
    elseif type(first) == "table" and opts == nil and first[1] == nil and next(first) ~= nil
        and not (getmetatable(first) or {}).__call then
      o = decl:check(first, 2)
    else
      o = decl:check(opts, 3)
      if type(opts) == "table" and opts[key] ~= nil then argerror(fname, 3, "%s given twice", key) end
      o[key] = first
    end
    if key ~= nil then o[key] = options.value(o[key], keys[key], fname, 2, key) end
    local self = setmetatable({ optimizer = opt, last_epoch = 0 }, c)
    for k, v in pairs(o) do self[k] = v end
    if init then init(self, o, fname) end
    for _, g in ipairs(opt.param_groups) do if g.initial_lr == nil then g.initial_lr = g.lr end end
    self.base_lrs = {}
    for i, g in ipairs(opt.param_groups) do self.base_lrs[i] = g.initial_lr end
    if cls.initial_step then cls.initial_step(self) else apply(self) end
    return self
  end })
  for k, f in pairs(Scheduler) do cls[k] = f end          -- (each class's own, so errors name it)
  options.guard_methods(cls, name, "scheduler", is_scheduler)
  lr_scheduler[name] = cls
  return cls
end

local function positive_int(v) return math.type(v) == "integer" and v > 0 end
local LambdaLR_init
local per_group = { type = "number|table", what = "a number or a list (one per parameter group)" }

-- v (a number, or a list of n: one per parameter group) as a list of n numbers
local function per_group_list(fname, n, v, what)
  if type(v) == "table" and #v ~= n then raise("%s: %s has %d entries for %d parameter groups", fname, what, #v, n) end
  local out = {}
  for i = 1, n do
    out[i] = type(v) == "table" and v[i] or v
    if type(out[i]) ~= "number" then
      raise("%s: %s must be a number or a list of %d numbers (one per parameter group)", fname, what, n)
    end
  end
  return out
end

-- StepLR(opt, step_size [, {gamma = 0.1}]): lr = base * gamma^floor(epoch / step_size)
local StepLR = sched_class("StepLR", "step_size", {
  step_size = { type = "integer", min = 1 }, gamma = { type = "number", min = 0, default = 0.1 },
}, "2")
function StepLR:lr_at(e, _, base) return base * self.gamma ^ (e // self.step_size) end

-- CosineAnnealingLR(opt, T_max [, {eta_min = 0}])
local Cosine = sched_class("CosineAnnealingLR", "T_max", {
  T_max = { type = "number", min = 0, min_open = true }, eta_min = { type = "number", min = 0, default = 0 },
}, "4")
function Cosine:lr_at(e, _, base)
  return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * e / self.T_max)) / 2
end

-- self.lr_lambdas: o.lr_lambda (a function, or a list of them) as one per group
LambdaLR_init = function(self, o, fname)
  local f, n = o.lr_lambda, #self.optimizer.param_groups
  local list = {}
  if type(f) == "table" and not (getmetatable(f) or {}).__call then
    if #f ~= n then raise("%s: %d lr_lambda functions for %d parameter groups", fname, #f, n) end
    for i = 1, n do
      if not options.value(f[i], { type = "callable" }, fname, 2, "lr_lambda[" .. i .. "]") then end
      list[i] = f[i]
    end
  else
    for i = 1, n do list[i] = f end
  end
  self.lr_lambda, self.lr_lambdas = nil, list
end

-- LambdaLR(opt, lr_lambda): lr = base * lr_lambda(epoch); lr_lambda a function or a list
-- of functions, one per group (epochs count from 0, as PyTorch's).
local LambdaLR = sched_class("LambdaLR", "lr_lambda", {
  lr_lambda = { type = "callable|table", what = "a function or a list of functions (one per parameter group)" },
}, "function(e) return 0.5 ^ e end", function(self, o, fname) LambdaLR_init(self, o, fname) end)
function LambdaLR:lr_at(e, i, base)
  local v = self.lr_lambdas[i](e)
  if type(v) ~= "number" then raise("LambdaLR: lr_lambda(%d) returned %s, not a number", e, type_name(v)) end
  return base * v
end

-- MultiStepLR(opt, milestones [, {gamma = 0.1}]): lr = base * gamma^(the milestones <= epoch)
local MultiStepLR = sched_class("MultiStepLR", "milestones", {
  milestones = { type = "table", what = "a list of epochs", check = function(v)
    for i, m in ipairs(v) do
      if not positive_int(m) and m ~= 0 then return false, "must hold integers >= 0" end
      if i > 1 and m < v[i - 1] then return false, "must be increasing" end
    end
    return true
  end },
  gamma = { type = "number", min = 0, default = 0.1 },
}, "{2, 4}", function(self, o) self.milestones = { table.unpack(o.milestones) } end)
function MultiStepLR:lr_at(e, _, base)
  local n = 0
  for _, m in ipairs(self.milestones) do if m <= e then n = n + 1 end end
  return base * self.gamma ^ n
end

-- ExponentialLR(opt, gamma): lr = base * gamma^epoch
local ExponentialLR = sched_class("ExponentialLR", "gamma", { gamma = { type = "number", min = 0 } }, "0.9")
function ExponentialLR:lr_at(e, _, base) return base * self.gamma ^ e end

-- LinearLR(opt [, {start_factor = 1/3, end_factor = 1, total_iters = 5}]): a linear warm-up
-- (or decay) of the factor over total_iters epochs, then constant
local LinearLR = sched_class("LinearLR", nil, {
  start_factor = { type = "number", min = 0, max = 1, min_open = true, default = 1 / 3 },
  end_factor = { type = "number", min = 0, max = 1, default = 1.0 },
  total_iters = { type = "integer", min = 1, default = 5 },
}, nil)
function LinearLR:lr_at(e, _, base)
  return base * (self.start_factor + (self.end_factor - self.start_factor) * math.min(self.total_iters, e) /
    self.total_iters)
end

-- CosineAnnealingWarmRestarts(opt, T_0 [, {T_mult = 1, eta_min = 0}]); step([epoch]) (a
-- fractional epoch allowed, as PyTorch's)
local Warm = sched_class("CosineAnnealingWarmRestarts", "T_0", {
  T_0 = { type = "integer", min = 1 }, T_mult = { type = "integer", min = 1, default = 1 },
  eta_min = { type = "number", min = 0, default = 0 },
}, "3", function(self) self.T_i, self.T_cur = self.T_0, 0 end)
function Warm:lr_at(_, _, base)
  return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
end
function Warm:step(epoch)
  if epoch == nil then
    self.last_epoch = self.last_epoch + 1
    self.T_cur = self.T_cur + 1
    if self.T_cur >= self.T_i then self.T_cur, self.T_i = self.T_cur - self.T_i, self.T_i * self.T_mult end
  else
    epoch = options.value(epoch, { type = "number", min = 0 }, "CosineAnnealingWarmRestarts:step", 1, "epoch")
    if epoch >= self.T_0 then
      if self.T_mult == 1 then self.T_cur = math.fmod(epoch, self.T_0)
      else
        local n = math.floor(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
        self.T_cur = epoch - self.T_0 * (self.T_mult ^ n - 1) / (self.T_mult - 1)
        self.T_i = self.T_0 * self.T_mult ^ n
      end
    else
      self.T_i, self.T_cur = self.T_0, epoch
    end
    self.last_epoch = math.floor(epoch)
  end
  apply(self)
  return groups(self)[1].lr
end

-- OneCycleLR(opt, max_lr, {total_steps | epochs and steps_per_epoch, pct_start = 0.3,
-- anneal_strategy = "cos", cycle_momentum = true, base_momentum = 0.85, max_momentum = 0.95,
-- div_factor = 25, final_div_factor = 1e4, three_phase = false}): step() once per batch.
-- max_lr (and the momenta) a number or a list, one per group. With cycle_momentum, the
-- momentum (SGD, RMSprop) or betas[1] (the Adams) cycles between the two.
local OneCycleLR = sched_class("OneCycleLR", "max_lr", {
  max_lr = per_group, total_steps = { type = "integer", min = 1 }, epochs = { type = "integer", min = 1 },
  steps_per_epoch = { type = "integer", min = 1 },
  pct_start = { type = "number", min = 0, max = 1, default = 0.3 },
  anneal_strategy = { choices = { "cos", "linear" }, default = "cos" },
  cycle_momentum = { type = "boolean", default = true },
  base_momentum = { type = "number|table", default = 0.85 }, max_momentum = { type = "number|table", default = 0.95 },
  div_factor = { type = "number", min = 0, min_open = true, default = 25.0 },
  final_div_factor = { type = "number", min = 0, min_open = true, default = 1e4 },
  three_phase = { type = "boolean", default = false },
}, "(function(t) t.total_steps = t.total_steps or 10; return gpu.optim.OneCycleLR(o, 0.1, t) end)(%%s)",
function(self, o, fname)
  local gs = self.optimizer.param_groups
  local function list(v, what) return per_group_list(fname, #gs, v, what) end
  if o.total_steps == nil then
    if o.epochs == nil or o.steps_per_epoch == nil then
      raise("%s: give total_steps, or epochs and steps_per_epoch", fname)
    end
    self.total_steps = o.epochs * o.steps_per_epoch
  end
  local T, p = self.total_steps, o.pct_start
  if o.three_phase then
    self.phases = { { p * T - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum" },
                    { 2 * p * T - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum" },
                    { T - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum" } }
  else
    self.phases = { { p * T - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum" },
                    { T - 1, "max_lr", "min_lr", "base_momentum", "max_momentum" } }
  end
  local maxl = list(o.max_lr, "max_lr")
  local use_beta1
  if o.cycle_momentum then
    local g1 = gs[1]
    if g1.momentum == nil and g1.betas == nil then
      raise("%s: the optimizer has no momentum nor betas to cycle (give cycle_momentum = false)", fname)
    end
    use_beta1 = g1.betas ~= nil
  end
  local basem, maxm = list(o.base_momentum, "base_momentum"), list(o.max_momentum, "max_momentum")
  self.use_beta1 = use_beta1 or false
  self.max_lrs, self.initial_lrs, self.min_lrs, self.base_momenta, self.max_momenta = maxl, {}, {}, basem, maxm
  for i, g in ipairs(gs) do
    self.initial_lrs[i] = maxl[i] / o.div_factor
    self.min_lrs[i] = self.initial_lrs[i] / o.final_div_factor
    g.initial_lr = self.initial_lrs[i]          -- PyTorch overwrites it too
  end
  self.max_lr, self.base_momentum, self.max_momentum = nil, nil, nil
end)
local function anneal(self, a, b, pct)
  if self.anneal_strategy == "cos" then return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1) end
  return (b - a) * pct + a
end
local function onecycle_values(self, e, i)
  if e > self.total_steps then
    raise("OneCycleLR:step: stepped %d times, past total_steps = %d", e, self.total_steps)
  end
  local vals = { initial_lr = self.initial_lrs[i], max_lr = self.max_lrs[i], min_lr = self.min_lrs[i],
                 base_momentum = self.base_momenta[i], max_momentum = self.max_momenta[i] }
  local start = 0
  for k, ph in ipairs(self.phases) do
    if e <= ph[1] or k == #self.phases then
      local pct = (e - start) / (ph[1] - start)
      return anneal(self, vals[ph[2]], vals[ph[3]], pct), anneal(self, vals[ph[4]], vals[ph[5]], pct)
    end
    start = ph[1]
  end
end
function OneCycleLR:lr_at(e, i) return (onecycle_values(self, e, i)) end
function OneCycleLR:step()
  if self.last_epoch + 1 > self.total_steps then
    raise("OneCycleLR:step: stepped %d times, past total_steps = %d", self.last_epoch + 1, self.total_steps)
  end
  self.last_epoch = self.last_epoch + 1
  OneCycleLR.initial_step(self)
  return groups(self)[1].lr
end
function OneCycleLR.initial_step(self)
  for i, g in ipairs(groups(self)) do
    local lr, m = onecycle_values(self, self.last_epoch, i)
    g.lr = lr
    if self.cycle_momentum then
      if self.use_beta1 then g.betas = { m, g.betas[2] } else g.momentum = m end
    end
  end
end

-- ReduceLROnPlateau(opt [, {mode = "min", factor = 0.1, patience = 10, threshold = 1e-4,
-- threshold_mode = "rel", cooldown = 0, min_lr = 0, eps = 1e-8}]); step(metric) after
-- each validation: after more than patience epochs without improvement, lr = max(lr *
-- factor, min_lr) (a change smaller than eps is not made), then cooldown epochs of rest.
local Plateau = sched_class("ReduceLROnPlateau", nil, {
  mode = { choices = { "min", "max" }, default = "min" },
  factor = { type = "number", min = 0, max = 1, max_open = true, default = 0.1 },
  patience = { type = "integer", min = 0, default = 10 },
  threshold = { type = "number", min = 0, default = 1e-4 },
  threshold_mode = { choices = { "rel", "abs" }, default = "rel" },
  cooldown = { type = "integer", min = 0, default = 0 },
  min_lr = per_group, eps = { type = "number", min = 0, default = 1e-8 },
  verbose = { type = "boolean", default = false },
}, nil, function(self, o, fname)
  local n = #self.optimizer.param_groups
  local m = o.min_lr or 0
  self.min_lrs = {}
  for i = 1, n do
    self.min_lrs[i] = type(m) == "table" and m[i] or m
    if type(self.min_lrs[i]) ~= "number" then
      raise("%s: min_lr must be a number or a list of %d numbers (one per parameter group)", fname, n)
    end
  end
  self.min_lr = nil
  self.best = o.mode == "min" and math.huge or -math.huge
  self.num_bad_epochs, self.cooldown_counter = 0, 0
end)
Plateau.initial_step = function() end          -- the lrs stay as they are
function Plateau:is_better(a)
  local best, th = self.best, self.threshold
  if self.mode == "min" then
    if self.threshold_mode == "rel" then return a < best * (1 - th) end
    return a < best - th
  end
  if self.threshold_mode == "rel" then return a > best * (th + 1) end
  return a > best + th
end
-- step(metric): metric a number or a one-element array; returns the first group's lr
function Plateau:step(metric)
  if require("gpu.options").is_array(metric) then metric = metric:item() end
  metric = options.value(metric, { type = "number" }, "ReduceLROnPlateau:step", 1, "metric")
  self.last_epoch = self.last_epoch + 1
  if self:is_better(metric) then self.best, self.num_bad_epochs = metric, 0
  else self.num_bad_epochs = self.num_bad_epochs + 1 end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.num_bad_epochs = 0
  end
  if self.num_bad_epochs > self.patience then
    for i, g in ipairs(groups(self)) do
      local new = math.max(g.lr * self.factor, self.min_lrs[i])
      if g.lr - new > self.eps then
        g.lr = new
        if self.verbose then print(("Epoch %d: reducing learning rate of group %d to %.4e."):format(self.last_epoch, i, new)) end
      end
    end
    self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
  end
  return groups(self)[1].lr
end

-- ConstantLR(opt [, {factor = 1/3, total_iters = 5}]): lr = base * factor for the first
-- total_iters epochs, then base
local ConstantLR = sched_class("ConstantLR", nil, {
  factor = { type = "number", min = 0, max = 1, default = 1 / 3 },
  total_iters = { type = "integer", min = 0, default = 5 },
}, nil)
function ConstantLR:lr_at(e, _, base) return e < self.total_iters and base * self.factor or base end

-- PolynomialLR(opt [, {total_iters = 5, power = 1}]): lr = base * (1 - min(e, total_iters) /
-- total_iters)^power
local PolynomialLR = sched_class("PolynomialLR", nil, {
  total_iters = { type = "integer", min = 1, default = 5 }, power = { type = "number", default = 1.0 },
}, nil)
function PolynomialLR:lr_at(e, _, base)
  return base * (1 - math.min(e, self.total_iters) / self.total_iters) ^ self.power
end

-- MultiplicativeLR(opt, lr_lambda): each step multiplies every group's lr by
-- lr_lambda(epoch) (a function, or a list of them, one per group); as PyTorch's, from the
-- lr the group has then. factors[i]: the product so far, for ChainedScheduler.
local MultiplicativeLR = sched_class("MultiplicativeLR", "lr_lambda", {
  lr_lambda = { type = "callable|table", what = "a function or a list of functions (one per parameter group)" },
}, "function(e) return 0.9 end", function(self, o, fname)
  LambdaLR_init(self, o, fname)
  self.factors = {}
  for i = 1, #self.lr_lambdas do self.factors[i] = 1.0 end
end)
MultiplicativeLR.initial_step = function() end          -- epoch 0 leaves the lrs as they are
function MultiplicativeLR:lr_at(_, i, base) return base * self.factors[i] end
-- advance(self, e): the factors of epoch e (each lambda called once)
function MultiplicativeLR.advance(self, e)
  local out = {}
  for i, f in ipairs(self.lr_lambdas) do
    local v = f(e)
    if type(v) ~= "number" then raise("MultiplicativeLR: lr_lambda(%d) returned %s, not a number", e, type_name(v)) end
    out[i] = v
    self.factors[i] = self.factors[i] * v
  end
  return out
end
function MultiplicativeLR:step()
  self.last_epoch = self.last_epoch + 1
  local f = MultiplicativeLR.advance(self, self.last_epoch)
  for i, g in ipairs(groups(self)) do g.lr = g.lr * f[i] end
  return groups(self)[1].lr
end

-- CyclicLR(opt, {base_lr, max_lr, step_size_up = 2000, step_size_down = step_size_up,
-- mode = "triangular" | "triangular2" | "exp_range", gamma = 1, scale_fn, scale_mode,
-- cycle_momentum = true, base_momentum = 0.8, max_momentum = 0.9}): step() once per batch.
-- The lr climbs from base_lr to max_lr in step_size_up steps and back in step_size_down;
-- triangular2 halves the height each cycle, exp_range scales it by gamma^step; scale_fn(x)
-- replaces the mode's (x the cycle, or the step with scale_mode = "iterations"). With
-- cycle_momentum, the momentum (or betas[1]) moves the other way, max to base. base_lr,
-- max_lr and the momenta: a number or a list (one per group).
local CyclicLR = sched_class("CyclicLR", nil, {
  base_lr = per_group, max_lr = per_group,
  step_size_up = { type = "integer", min = 1, default = 2000 }, step_size_down = { type = "integer", min = 1 },
  mode = { choices = { "triangular", "triangular2", "exp_range" }, default = "triangular" },
  gamma = { type = "number", min = 0, default = 1.0 },
  scale_fn = { type = "callable" }, scale_mode = { choices = { "cycle", "iterations" } },
  cycle_momentum = { type = "boolean", default = true },
  base_momentum = { type = "number|table", default = 0.8 }, max_momentum = { type = "number|table", default = 0.9 },
}, "(function(t) t.base_lr = t.base_lr or 0.01; t.max_lr = t.max_lr or 0.1; return gpu.optim.CyclicLR(o, t) end)(%%s)",
function(self, o, fname)
  local gs = self.optimizer.param_groups
  local function list(v, what)
    if v == nil then raise("%s: %s is required", fname, what) end
    return per_group_list(fname, #gs, v, what)
  end
  self.base_lrs_c, self.max_lrs = list(o.base_lr, "base_lr"), list(o.max_lr, "max_lr")
  local up = o.step_size_up
  local down = o.step_size_down or up
  self.total_size = up + down
  self.step_ratio = up / self.total_size
  if o.scale_fn == nil then
    self.scale_mode = o.mode == "exp_range" and "iterations" or "cycle"
  else
    self.scale_mode = o.scale_mode or "cycle"
  end
  if o.cycle_momentum then
    local g1 = gs[1]
    if g1.momentum == nil and g1.betas == nil then
      raise("%s: the optimizer has no momentum nor betas to cycle (give cycle_momentum = false)", fname)
    end
    self.use_beta1 = g1.betas ~= nil
    self.base_momenta, self.max_momenta = list(o.base_momentum, "base_momentum"), list(o.max_momentum, "max_momentum")
  end
  self.base_lr, self.max_lr, self.base_momentum, self.max_momentum = nil, nil, nil, nil
  for i, g in ipairs(gs) do g.initial_lr = self.base_lrs_c[i] end   -- PyTorch sets them too
end)
local function cyclic_scale(self, x)
  if self.scale_fn then
    local v = self.scale_fn(x)
    if type(v) ~= "number" then raise("CyclicLR: scale_fn(%s) returned %s, not a number", tostring(x), type_name(v)) end
    return v
  end
  if self.mode == "triangular" then return 1.0 end
  if self.mode == "triangular2" then return 1 / 2.0 ^ (x - 1) end
  return self.gamma ^ x
end
function CyclicLR.initial_step(self)
  local e = self.last_epoch
  local cycle = math.floor(1 + e / self.total_size)
  local x = 1.0 + e / self.total_size - cycle
  local scale = x <= self.step_ratio and x / self.step_ratio or (x - 1) / (self.step_ratio - 1)
  local s = cyclic_scale(self, self.scale_mode == "cycle" and cycle or e)
  for i, g in ipairs(groups(self)) do
    g.lr = self.base_lrs_c[i] + (self.max_lrs[i] - self.base_lrs_c[i]) * scale * s
    if self.cycle_momentum then
      local m = self.max_momenta[i] - (self.max_momenta[i] - self.base_momenta[i]) * scale * s
      if self.use_beta1 then g.betas = { m, g.betas[2] } else g.momentum = m end
    end
  end
end
function CyclicLR:lr_at(e, i)
  local saved = self.last_epoch
  self.last_epoch = e
  CyclicLR.initial_step(self)
  self.last_epoch = saved
  return groups(self)[i].lr
end
function CyclicLR:step()
  self.last_epoch = self.last_epoch + 1
  CyclicLR.initial_step(self)
  return groups(self)[1].lr
end

-- SWALR(opt, swa_lr [, {anneal_epochs = 10, anneal_strategy = "cos" | "linear"}])
-- (torch.optim.swa_utils.SWALR; also gpu.optim.swa_utils.SWALR): each step anneals every
-- group's lr from where it is towards swa_lr (a number or one per group), reaching it after
-- anneal_epochs steps, by PyTorch's recursive rule
local SWALR = sched_class("SWALR", "swa_lr", {
  swa_lr = per_group, anneal_epochs = { type = "integer", min = 0, default = 10 },
  anneal_strategy = { choices = { "cos", "linear" }, default = "cos" },
}, "0.05", function(self, o, fname)
  local gs = self.optimizer.param_groups
  local v = o.swa_lr
  if type(v) == "table" and #v ~= #gs then raise("%s: swa_lr has %d entries for %d parameter groups", fname, #v, #gs) end
  self.swa_lrs = {}
  for i = 1, #gs do
    self.swa_lrs[i] = type(v) == "table" and v[i] or v
    if type(self.swa_lrs[i]) ~= "number" then
      raise("%s: swa_lr must be a number or a list of %d numbers (one per parameter group)", fname, #gs)
    end
  end
  self.swa_lr = nil
end)
local function swa_anneal(self, t)
  if self.anneal_strategy == "cos" then return (1 - math.cos(math.pi * t)) / 2 end
  return t
end
function SWALR.initial_step(self)
  local step, a = self.last_epoch, self.anneal_epochs
  if a == 0 then step = math.max(1, step) end
  local prev_alpha = swa_anneal(self, math.max(0, math.min(1, (step - 1) / math.max(1, a))))
  local alpha = swa_anneal(self, math.max(0, math.min(1, step / math.max(1, a))))
  for i, g in ipairs(groups(self)) do
    local swa = self.swa_lrs[i]
    local prev = prev_alpha == 1 and swa or (g.lr - prev_alpha * swa) / (1 - prev_alpha)
    g.lr = swa * alpha + prev * (1 - alpha)
  end
end
function SWALR:lr_at(_, i) return groups(self)[i].lr end
function SWALR:step()
  self.last_epoch = self.last_epoch + 1
  SWALR.initial_step(self)
  return groups(self)[1].lr
end

-- The schedules whose lr is base * a factor of the epoch: what ChainedScheduler multiplies.
local MULTIPLICATIVE = { StepLR = true, MultiStepLR = true, ExponentialLR = true, LinearLR = true, LambdaLR = true,
  ConstantLR = true, PolynomialLR = true, MultiplicativeLR = true }

-- ChainedScheduler(schedulers [, optimizer]): several schedules at once, each step()
-- stepping them all: every group's lr is its initial lr times the product of their factors
-- (PyTorch's chain of multiplicative schedules). The schedules must scale the lr by a
-- factor of the epoch (StepLR, MultiStepLR, ExponentialLR, LinearLR, LambdaLR, ConstantLR,
-- PolynomialLR, MultiplicativeLR) and share one optimizer.
local Chained = options.class_table("ChainedScheduler")
Chained.__index = Chained
for k, f in pairs(Scheduler) do Chained[k] = f end
local function chained_apply(self)
  for i, g in ipairs(groups(self)) do
    local lr = self.base_lrs[i]
    for _, s in ipairs(self.schedulers) do lr = lr * s:lr_at(s.last_epoch, i, 1.0) end
    g.lr = lr
  end
end
function Chained:step()
  self.last_epoch = self.last_epoch + 1
  for _, s in ipairs(self.schedulers) do
    s.last_epoch = s.last_epoch + 1
    local adv = getmetatable(s).advance
    if adv then adv(s, s.last_epoch) end
  end
  chained_apply(self)
  return groups(self)[1].lr
end
setmetatable(Chained, { __call = function(_, schedulers, optimizer, ...)
  local fname = "optim.ChainedScheduler"
  if select("#", ...) > 0 then argerror(fname, 3, "at most 2 arguments expected") end
  if type(schedulers) ~= "table" or is_scheduler(schedulers) or #schedulers == 0 then
    argerror(fname, 1, "a list of schedules expected, got %s", type_name(schedulers))
  end
  local opt = optimizer or schedulers[1].optimizer
  if optimizer ~= nil and not is_optimizer(optimizer) then
    argerror(fname, 2, "an optimizer expected, got %s", type_name(optimizer))
  end
  for i, s in ipairs(schedulers) do
    if not is_scheduler(s) then raise("%s: schedulers[%d] is %s, not a schedule", fname, i, type_name(s)) end
    local name = getmetatable(s).__name
    if not MULTIPLICATIVE[name] then
      raise("%s: schedulers[%d] is a %s, which does not scale the lr by a factor of the epoch (gpulua chains " ..
        "StepLR, MultiStepLR, ExponentialLR, LinearLR, LambdaLR, ConstantLR, PolynomialLR and MultiplicativeLR)",
        fname, i, name)
    end
    if s.optimizer ~= opt then
      raise("%s: schedulers[%d] belongs to another optimizer (all must be made on one)", fname, i)
    end
  end
  local self = setmetatable({ optimizer = opt, last_epoch = 0, schedulers = { table.unpack(schedulers) } }, Chained)
  self.base_lrs = {}
  for i, g in ipairs(opt.param_groups) do self.base_lrs[i] = g.initial_lr end
  chained_apply(self)                       -- each schedule set the lrs alone: all of them now
  return self
end })
options.guard_methods(Chained, "ChainedScheduler", "scheduler", is_scheduler)
lr_scheduler.ChainedScheduler = Chained

-- SequentialLR(opt, schedulers, milestones): schedulers[k] runs from milestones[k - 1]
-- (its epoch counted from there); #milestones = #schedulers - 1
local SequentialLR = sched_class("SequentialLR", "schedulers", {
  schedulers = { type = "table", what = "a list of schedules" },
  milestones = { type = "table", what = "a list of epochs" },
}, "gpu.optim.SequentialLR(o, {gpu.optim.ExponentialLR(o, 0.5)}, %%s)", function(self, o, fname)
  local s, m = o.schedulers, o.milestones or {}
  if #s == 0 then raise("%s: no schedules given", fname) end
  for i, x in ipairs(s) do
    if not is_scheduler(x) then raise("%s: schedulers[%d] is %s, not a schedule", fname, i, type_name(x)) end
    if x.optimizer ~= self.optimizer then
      raise("%s: schedulers[%d] belongs to another optimizer (all must be made on this one)", fname, i)
    end
  end
  if #m ~= #s - 1 then
    raise("%s: %d milestones for %d schedules (expected one fewer milestone than schedules)", fname, #m, #s)
  end
  for i, x in ipairs(m) do
    if math.type(x) ~= "integer" or x < 1 or (i > 1 and x <= m[i - 1]) then
      raise("%s: milestones must be increasing integers >= 1, got %s at %d", fname, tostring(x), i)
    end
  end
  self.schedulers, self.milestones = { table.unpack(s) }, { table.unpack(m) }
  -- the schedules were made on this optimizer, which they have each changed: back to
  -- the initial lrs, the first one at its epoch 0
  for _, g in ipairs(self.optimizer.param_groups) do g.lr = g.initial_lr or g.lr end
end)
function SequentialLR.initial_step(self)
  local first = self.schedulers[1]
  first.last_epoch = 0
  if getmetatable(first).initial_step then getmetatable(first).initial_step(first) else apply(first) end
end
function SequentialLR:step()
  self.last_epoch = self.last_epoch + 1
  local idx = 1
  for _, m in ipairs(self.milestones) do if m <= self.last_epoch then idx = idx + 1 end end
  local s = self.schedulers[idx]
  if idx > 1 and self.milestones[idx - 1] == self.last_epoch then
    s.last_epoch = 0
    if getmetatable(s).initial_step then getmetatable(s).initial_step(s) else apply(s) end
  else
    s:step()
  end
  return groups(self)[1].lr
end

return lr_scheduler
