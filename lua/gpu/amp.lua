-- gpu.amp: automatic mixed precision (the torch.cuda.amp pattern).
--
--   local scaler = gpu.optim.GradScaler()            -- dynamic loss scaling, for float16
--   local loss = gpu.autocast("float16", function()
--     return nn.cross_entropy(model(x), y)           -- matmuls in float16, the loss float32
--   end)
--   opt:zero_grad(); scaler:scale(loss):backward()
--   scaler:step(opt); scaler:update()                -- skips the step on inf/NaN gradients
--
-- Inside gpu.autocast(dtype, fn, ...), the matmul-like ops (gpu.matmul / x:matmul, dot,
-- nn.Linear and nn.Dense, and their backward passes) cast float32/float64 operands to
-- the half dtype, compute in it (cuBLAS tensor cores on a GPU; on the CPU the half
-- matmul accumulates in float32 and rounds: the emulation), and return float32: the
-- product carries half-precision rounding, everything downstream (elementwise ops,
-- reductions, losses) stays float32, and the parameters stay float32 master weights.
-- The casts are recorded by autograd, so gradients reach the float32 parameters as
-- float32. Autocast nests (the innermost dtype applies; "float32" or false turns it
-- off inside) and is restored when fn returns or raises.

local autograd = require "gpu.autograd"

local amp = {}

local names = {
  bfloat16 = "bfloat16", bf16 = "bfloat16",
  float16 = "float16", fp16 = "float16", half = "float16",
  float32 = false, fp32 = false,
}

-- amp.dtype_name(fname, s): "float16" / "bfloat16", false for float32/false (off), or an error.
function amp.dtype_name(fname, s, level)
  if s == false then return false end
  if type(s) == "string" then
    local d = names[string.lower(s)]
    if d ~= nil then return d end
  end
  error(("%s: unknown precision %s (expected \"bfloat16\"/\"bf16\", \"float16\"/\"fp16\" or \"float32\")")
    :format(fname, type(s) == "string" and ("'" .. s .. "'") or ("of type " .. type(s))), (level or 1) + 1)
end

-- gpu.autocast(dtype, fn, ...) -> fn's results
function amp.autocast(dtype, fn, ...)
  local d = amp.dtype_name("autocast", dtype, 2)
  if type(fn) ~= "function" then error("autocast: a function expected as argument #2, got " .. type(fn), 2) end
  local was = autograd.set_autocast_dtype(d or nil)
  local res = table.pack(pcall(fn, ...))
  autograd.set_autocast_dtype(was)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end
require("gpu.options").counted("autocast", amp.autocast)   -- declares it: fn takes the rest

-- the autocast dtype in effect ("float16", "bfloat16"), or nil
function amp.get_autocast_dtype() return autograd.autocast_dtype() end
function amp.is_autocast_enabled() return autograd.autocast_dtype() ~= nil end

-- amp.GradScaler is gpu.optim.GradScaler
setmetatable(amp, { __index = function(t, k)
  if k == "GradScaler" then
    local v = require("gpu.optim").GradScaler
    rawset(t, k, v)
    return v
  end
end })

return require("gpu.options").count_all("amp.", amp)
