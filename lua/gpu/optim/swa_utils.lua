-- gpu.optim.swa_utils: stochastic weight averaging and exponential moving averages of a
-- model's weights, as torch.optim.swa_utils:
--
--   local swa = gpu.optim.swa_utils.AveragedModel(model)
--   local sched = gpu.optim.swa_utils.SWALR(opt, 0.05)
--   for epoch = 1, 100 do
--     train_one_epoch()
--     if epoch > 75 then swa:update_parameters(model); sched:step() end
--   end
--   gpu.optim.swa_utils.update_bn(loader, swa)
--
-- AveragedModel keeps a deep copy of the model (its `module`; state_dict names start with
-- "module.", plus "n_averaged", as PyTorch's) whose parameters are the running average
-- of the model's at each update_parameters call (or an average of the caller's: avg_fn,
-- multi_avg_fn, e.g. get_ema_multi_avg_fn(0.999)); calling it runs the copy.
local gpu = require "gpu"
local options = require "gpu.options"

local raise, argerror, type_name = options.raise, options.argerror, options.type_name
local is_array = options.is_array

local S = {}

local function decay_arg(fname, decay)
  return options.value(decay, { type = "number", min = 0, max = 1, default = 0.999 }, fname, 1, "decay")
end

-- get_ema_multi_avg_fn([decay = 0.999]): a multi_avg_fn for AveragedModel: each average
-- becomes decay * average + (1 - decay) * current, in place
function S.get_ema_multi_avg_fn(decay)
  decay = decay_arg("optim.swa_utils.get_ema_multi_avg_fn", decay)
  return function(avgs, currents)
    for i, a in ipairs(avgs) do a:mul_(decay):add_(currents[i] * (1 - decay)) end
  end
end

-- get_ema_avg_fn([decay = 0.999]): an avg_fn (one array at a time, returning the new average)
function S.get_ema_avg_fn(decay)
  decay = decay_arg("optim.swa_utils.get_ema_avg_fn", decay)
  return function(avg, current) return avg * decay + current * (1 - decay) end
end

-- get_swa_avg_fn(): the default average, avg + (current - avg) / (n + 1)
function S.get_swa_avg_fn()
  return function(avg, current, n) return avg + (current - avg) / (n + 1) end
end

local AMODEL = options.declare("optim.swa_utils.AveragedModel", {
  device = { type = "device" }, avg_fn = { type = "callable" }, multi_avg_fn = { type = "callable" },
  use_buffers = { type = "boolean", default = false },
}, { example = "gpu.optim.swa_utils.AveragedModel(gpu.nn.Linear(2, 2), %s)" })

local nn = gpu.nn
local is_module = require("gpu.nn.module").is_module
local AveragedModel = nn.class("AveragedModel")
S.AveragedModel = AveragedModel

function AveragedModel:init(model, opts)
  if not is_module(model) then
    argerror("optim.swa_utils.AveragedModel", 1, "a module expected, got %s", type_name(model))
  end
  local o = AMODEL:check(opts, 2)
  if o.avg_fn ~= nil and o.multi_avg_fn ~= nil then
    raise("optim.swa_utils.AveragedModel: give avg_fn or multi_avg_fn, not both")
  end
  local copy = nn.clone_module(model)
  if o.device ~= nil then copy:to(o.device) end
  self.module = copy
  local first = copy:parameters()[1]
  self:register_buffer("n_averaged", gpu.array(0, { dtype = "int64", device = first and first.device or nil }))
  self.avg_fn, self.multi_avg_fn, self.use_buffers = o.avg_fn, o.multi_avg_fn, o.use_buffers
end

function AveragedModel:forward(...) return self.module(...) end

-- The arrays averaged: parameters (and buffers with use_buffers), by name, of both models
local function pairs_of(self, model, buffers)
  local function list(m)
    local out = m:named_parameters()
    local t = {}
    for _, e in ipairs(out) do t[#t + 1] = e end
    if buffers then for _, e in ipairs(m:named_buffers()) do t[#t + 1] = e end end
    return t
  end
  local mine, theirs = list(self.module), list(model)
  local by_name = {}
  for _, e in ipairs(theirs) do by_name[e[1]] = e[2] end
  local a, b = {}, {}
  for _, e in ipairs(mine) do
    local v = by_name[e[1]]
    if v == nil then raise("AveragedModel:update_parameters: the model has no %s (not the model this one averages)", e[1]) end
    local sa, sb = options.shape_str(e[2].shape), options.shape_str(v.shape)
    if sa ~= sb then raise("AveragedModel:update_parameters: %s has shape %s, the average %s", e[1], sb, sa) end
    a[#a + 1], b[#b + 1] = e[2], v:detach():to(e[2].device):astype(e[2].dtype)
  end
  if #mine ~= #theirs then
    raise("AveragedModel:update_parameters: the model has %d arrays, the average %d", #theirs, #mine)
  end
  return a, b
end

-- update_parameters(model): the average moved towards model's parameters (the first call
-- copies them); without use_buffers the buffers are copied from model as they are
function AveragedModel:update_parameters(model)
  if not is_module(model) then
    argerror("AveragedModel:update_parameters", 1, "a module expected, got %s", type_name(model))
  end
  local avgs, cur = pairs_of(self, model, self.use_buffers)
  local n = self.n_averaged:item()
  gpu.no_grad(function()
    if n == 0 then
      for i, a in ipairs(avgs) do a[{}] = cur[i] end
    elseif self.multi_avg_fn then
      self.multi_avg_fn(avgs, cur, self.n_averaged)
    else
      local f = self.avg_fn or S.get_swa_avg_fn()
      for i, a in ipairs(avgs) do
        local v = f(a, cur[i], n)
        if not is_array(v) then raise("AveragedModel:update_parameters: avg_fn returned %s, not an array", type_name(v)) end
        a[{}] = v
      end
    end
    if not self.use_buffers then
      local mine, theirs = self.module:named_buffers(), {}
      for _, e in ipairs(model:named_buffers()) do theirs[e[1]] = e[2] end
      for _, e in ipairs(mine) do
        local v = theirs[e[1]]
        if v ~= nil then e[2][{}] = v:detach():to(e[2].device):astype(e[2].dtype) end
      end
    end
    self.n_averaged:add_(1)
  end)
end

function AveragedModel:repr() return "AveragedModel(" .. tostring(self.module) .. ")" end

S.SWALR = require("gpu.optim.lr_scheduler").SWALR

-- update_bn(loader, model [, device]): the batch norms' running statistics recomputed over
-- the loader's inputs (a DataLoader, or a list of arrays or of {x, ...} batches: x is the
-- input), as a plain average over the batches (PyTorch's momentum = None); the model's
-- mode and the norms' momentum are restored after.
function S.update_bn(loader, model, device)
  local fname = "optim.swa_utils.update_bn"
  if not is_module(model) then argerror(fname, 2, "a module expected, got %s", type_name(model)) end
  local norms = {}
  for _, m in ipairs(model:modules()) do
    local name = getmetatable(m).__name or ""
    if name:match("^BatchNorm") and is_array(m.running_mean) and is_array(m.running_var) then norms[#norms + 1] = m end
  end
  if #norms == 0 then return end
  local each
  if type(loader) == "table" and getmetatable(loader) == nil then
    each = function(f) for _, b in ipairs(loader) do f(b) end end
  elseif (getmetatable(loader) or {}).__call then
    each = function(f) for b in loader do f(b) end end
  else
    argerror(fname, 1, "a DataLoader or a list of batches expected, got %s", type_name(loader))
  end
  local saved = {}
  for i, m in ipairs(norms) do
    saved[i] = m.momentum
    m.running_mean[{}] = 0
    m.running_var[{}] = 1
  end
  local was = model.training
  model:train()
  local n = 0
  local ok, err = pcall(gpu.no_grad, function()
    each(function(b)
      local x = b
      if not is_array(x) then
        x = type(b) == "table" and b[1] or nil
        if not is_array(x) then raise("%s: a batch is %s, not an array or a list starting with one", fname, type_name(b)) end
      end
      if device ~= nil then x = x:to(device) end
      n = n + 1
      for _, m in ipairs(norms) do m.momentum = 1 / n end
      model(x)
    end)
  end)
  for i, m in ipairs(norms) do m.momentum = saved[i] end
  model:train(was)
  if not ok then error(err, 0) end
end

return options.count_all("optim.swa_utils.", S)
