-- gpu.optim.grad_scaler: GradScaler, dynamic loss scaling for float16 mixed precision
-- (torch.cuda.amp.GradScaler); also gpu.optim.GradScaler and gpu.amp.GradScaler.
--
--   local scaler = gpu.optim.GradScaler{init_scale = 2^16, growth_factor = 2,
--                                       backoff_factor = 0.5, growth_interval = 2000}
--   opt:zero_grad(); scaler:scale(loss):backward()
--   scaler:step(opt)      -- unscales the grads; skips opt:step() if any is inf/NaN
--   scaler:update()       -- backs the scale off after a skipped step, grows it after
--                         -- growth_interval clean steps in a row
-- scaler.skipped counts the skipped steps. {enabled = false} makes every call a pass-through.
local autograd = require "gpu.autograd"
local options = require "gpu.options"

local is_array, argerror, type_name = options.is_array, options.argerror, options.type_name

local GradScaler = {}
GradScaler.__index = GradScaler
GradScaler.__name = "GradScaler"

local function is_grad_scaler(v) return getmetatable(v) == GradScaler end

local SCALER = options.declare("optim.GradScaler", {
  init_scale = { type = "number", min = 0, min_open = true, max = math.huge, max_open = true, default = 2.0 ^ 16 },
  growth_factor = { type = "number", min = 1, min_open = true, default = 2.0 },
  backoff_factor = { type = "number", min = 0, max = 1, min_open = true, max_open = true, default = 0.5 },
  growth_interval = { type = "integer", min = 1, default = 2000 },
  enabled = { type = "boolean", default = true },
}, { example = "gpu.optim.GradScaler(%s)" })

setmetatable(GradScaler, { __call = function(_, opts)
  local self = setmetatable(SCALER:check(opts, 1), GradScaler)
  self.scale_value = self.init_scale
  self.growth_tracker = 0   -- clean steps since the last change of scale
  self.skipped = 0          -- steps skipped for inf/NaN gradients
  self.steps = 0            -- step() calls
  self.found_inf = false    -- in the current iteration
  self.unscaled = false
  return self
end })
options.guard_methods(GradScaler, "GradScaler", "scaler", is_grad_scaler)

function GradScaler:is_enabled() return self.enabled end
function GradScaler:get_scale() return self.enabled and self.scale_value or 1.0 end

-- scale(loss): loss * scale (recorded, so backward yields scaled gradients)
function GradScaler:scale(loss)
  options.check_array(loss, "GradScaler:scale", 1, "loss")
  if not self.enabled then return loss end
  return loss * self.scale_value
end

local function check_opt(fname, opt)
  if type(opt) ~= "table" or type(opt.params) ~= "table" or type(opt.step) ~= "function" then
    argerror("GradScaler:" .. fname, 1, "an optimizer expected, got %s", type_name(opt))
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
    self.scale_value = options.value(new_scale, SCALER.keys.init_scale, "GradScaler:update", 1, "new_scale")
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
-- load_state_dict(sd): every entry is checked before any is taken.
local count = { type = "integer", min = 0, optional = true }
local scaler_state = { scale = { type = "number", min = 0, min_open = true, max = math.huge, max_open = true },
  growth_factor = SCALER.keys.growth_factor, backoff_factor = SCALER.keys.backoff_factor,
  growth_interval = SCALER.keys.growth_interval, growth_tracker = count, skipped = count }
function GradScaler:load_state_dict(sd)
  local fname = "GradScaler:load_state_dict"
  if type(sd) ~= "table" then argerror(fname, 1, "a scaler state dict expected, got %s", type_name(sd)) end
  local new = {}
  for k, spec in pairs(scaler_state) do
    if k == "scale" or sd[k] ~= nil then new[k] = options.value(sd[k], spec, fname, 1, k) end
  end
  self.scale_value, new.scale = new.scale, nil
  for k, v in pairs(new) do self[k] = v end
  return self
end
function GradScaler:__tostring()
  return ("GradScaler(scale=%g, skipped=%d)"):format(self:get_scale(), self.skipped)
end

return GradScaler
