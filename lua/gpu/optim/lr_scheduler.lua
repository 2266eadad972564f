-- gpu.optim.lr_scheduler: learning-rate schedules (torch.optim.lr_scheduler); also
-- gpu.optim.StepLR and gpu.optim.CosineAnnealingLR.
--
--   local sched = gpu.optim.StepLR(opt, 30, {gamma = 0.1})
--   for epoch = 1, 90 do train(); sched:step() end
local options = require "gpu.options"

-- (gpu.optim loads this file: it is asked for at a schedule's construction, not before)
local function is_optimizer(v) return require("gpu.optim").is_optimizer(v) end
local argerror, type_name = options.argerror, options.type_name
local lr_scheduler = {}

local function is_scheduler(v)
  return type(v) == "table" and rawget(v, "optimizer") ~= nil and rawget(v, "last_epoch") ~= nil
end

-- sched_class(name, key, keys, example_arg): a schedule Sched(opt, <key> | {<key> =, ...}
-- [, opts]), PyTorch's positional first hyper-parameter or an options table.
local function sched_class(name, key, keys, arg)
  local cls = { __name = name }
  cls.__index = cls
  local fname = "optim." .. name
  local decl = options.declare(fname, keys,
    { example = ("gpu.optim.%s(gpu.optim.SGD({gpu.ones(1):requires_grad()}), %s, %%s)"):format(name, arg) })
  setmetatable(cls, { __call = function(c, opt, first, opts)
    if not is_optimizer(opt) then argerror(fname, 1, "an optimizer expected, got %s", type_name(opt)) end
    local o
    if type(first) == "table" and opts == nil then o = decl:check(first, 2)
    else
      o = decl:check(opts, 3)
      if type(opts) == "table" and opts[key] ~= nil then argerror(fname, 3, "%s given twice", key) end
      o[key] = first
    end
    o[key] = options.value(o[key], keys[key], fname, 2, key)
    local self = setmetatable({ optimizer = opt, last_epoch = 0, base_lr = opt.initial_lr or opt.lr }, c)
    for k, v in pairs(o) do self[k] = v end
    return self
  end })
  options.guard_methods(cls, name, "scheduler", is_scheduler)
  function cls:get_last_lr() return self.optimizer.lr end
  function cls:step()
    self.last_epoch = self.last_epoch + 1
    self.optimizer.lr = self:lr_at(self.last_epoch)
    return self.optimizer.lr
  end
  return cls
end

-- StepLR(opt, step_size [, {gamma = 0.1}]) or StepLR(opt, {step_size =, gamma = 0.1}):
-- lr = base * gamma^floor(epoch / step_size)
local StepLR = sched_class("StepLR", "step_size", {
  step_size = { type = "integer", min = 1 }, gamma = { type = "number", min = 0, default = 0.1 },
}, "2")
lr_scheduler.StepLR = StepLR
function StepLR:lr_at(e) return self.base_lr * self.gamma ^ (e // self.step_size) end

-- CosineAnnealingLR(opt, T_max [, {eta_min = 0}]) or CosineAnnealingLR(opt, {T_max =, eta_min = 0})
local Cosine = sched_class("CosineAnnealingLR", "T_max", {
  T_max = { type = "number", min = 0, min_open = true }, eta_min = { type = "number", min = 0, default = 0 },
}, "4")
lr_scheduler.CosineAnnealingLR = Cosine
function Cosine:lr_at(e)
  return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * e / self.T_max)) / 2
end

return lr_scheduler
