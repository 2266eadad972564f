-- gpu.nn.initializers (nn.init): parameter initialisers, from gpu.random's seeded generator.
local gpu = require "gpu"
local options = require "gpu.options"

local init = {}

function init.fans(shape)
  options.value(shape, { type = "table" }, "nn.init.fans", 1, "shape")
  if #shape == 2 then return shape[2], shape[1] end     -- (out, in) for Linear's weight
  return shape[1], shape[1]
end

-- A fan size argument: a positive number.
local function fan(fname, argn, v, what)
  return options.value(v, { type = "number", min = 0, min_open = true }, "nn.init." .. fname, argn, what)
end

function init.uniform(shape, lim, opts)
  options.value(lim, { type = "number", min = 0 }, "nn.init.uniform", 2, "lim")
  return options.call("nn.init.uniform", gpu.random.uniform, -lim, lim, shape, opts)
end

function init.glorot_uniform(fan_in, fan_out, shape, opts)
  fan("glorot_uniform", 1, fan_in, "fan_in"); fan("glorot_uniform", 2, fan_out, "fan_out")
  return init.uniform(shape, math.sqrt(6 / (fan_in + fan_out)), opts)
end

function init.glorot_normal(fan_in, fan_out, shape, opts)
  fan("glorot_normal", 1, fan_in, "fan_in"); fan("glorot_normal", 2, fan_out, "fan_out")
  return options.call("nn.init.glorot_normal", gpu.random.normal, 0, math.sqrt(2 / (fan_in + fan_out)), shape, opts)
end

function init.he_normal(fan_in, shape, opts)
  fan("he_normal", 1, fan_in, "fan_in")
  return options.call("nn.init.he_normal", gpu.random.normal, 0, math.sqrt(2 / fan_in), shape, opts)
end

function init.he_uniform(fan_in, shape, opts)
  fan("he_uniform", 1, fan_in, "fan_in")
  return init.uniform(shape, math.sqrt(6 / fan_in), opts)
end

return options.count_all("nn.init.", init)
