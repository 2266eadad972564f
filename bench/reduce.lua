-- bench/reduce.lua — reductions and scans on a 4096 x 4096 float32 array (64 MiB).
-- Issue 3: sum over everything and along each axis must be at least as fast as
-- PyTorch's CPU sum in the same run (target: time ratio <= 1 against torch).
-- Twin: bench/reduce.py (NumPy, PyTorch; same case names).
--
-- Times are wall-clock (lua-system's monotonic clock, installed with busted): the
-- reductions run on every core, and bench/lib/bench.lua's os.clock is process CPU time,
-- which counts every thread. Without lua-system the figures fall back to os.clock and
-- say so. Each repeat runs >= MIN_TIME seconds; best and median per call.
package.path = "bench/lib/?.lua;" .. package.path
local gpu = require "gpu"

local ok, system = pcall(require, "system")
local now = ok and system.monotime or os.clock
local clock_note = ok and "" or " (CPU time: lua-system missing)"

local device = os.getenv("GPULUA_BENCH_DEVICE") or "cpu"
local impl = os.getenv("GPULUA_BENCH_IMPL") or (_G.gpu and "gpulua" or "lua5.4+gpu.so")
local quick = os.getenv("BENCH_QUICK") == "1"
local MIN_TIME = quick and 0.05 or 0.2
local REPEATS = quick and 3 or 7
local GROUP = "reduce"

local function emit(...) io.write(table.concat({ ... }, "\t"), "\n"); io.flush() end

-- case(name, fn [, {target_vs = "torch", note = ...}]): fn() runs the op once
local function case(name, fn, opts)
  opts = opts or {}
  if opts.target_vs then emit("target", GROUP, name, "max_ratio", "1.0", opts.target_vs) end
  local okc, err = pcall(fn)
  if not okc then
    emit("result", GROUP, name, impl, "-", "-", "error: " .. tostring(err):gsub("[\t\n]", " "))
    return
  end
  gpu.synchronize()
  local t0 = now()
  fn(); gpu.synchronize()
  local iters = math.max(1, math.ceil(MIN_TIME / math.max(now() - t0, 1e-7)))
  local ts = {}
  for r = 1, REPEATS do
    collectgarbage()
    local t = now()
    for _ = 1, iters do fn() end
    gpu.synchronize()
    ts[r] = (now() - t) / iters
  end
  table.sort(ts)
  emit("result", GROUP, name, impl, ("%.1f"):format(ts[1] * 1e9),
       ("%.1f"):format(ts[(REPEATS + 1) // 2] * 1e9), (opts.note or "") .. clock_note)
end

local n = 4096
local x = gpu.random and gpu.random.rand and gpu.random.rand(n, n)
          or (gpu.arange(n * n, { dtype = "float32" }) % 1000):reshape(n, n) / 1000
if device ~= "cpu" then x = x:to(device) end
local xt = x.T
local x64 = x:astype("float64")
local small = gpu.ones(1000)

case("sum, all 4096x4096 f32", function() return x:sum() end, { target_vs = "torch", note = "x:sum()" })
case("sum, axis 1 (down columns)", function() return x:sum(1) end, { target_vs = "torch", note = "x:sum(1)" })
case("sum, axis 2 (along rows)", function() return x:sum(2) end, { target_vs = "torch", note = "x:sum(2)" })
case("sum, axis 2 of the transpose", function() return xt:sum(2) end, { note = "x.T:sum(2)" })
case("sum, all f64", function() return x64:sum() end, { note = "float64" })
case("mean, axis 2", function() return x:mean(2) end, { note = "x:mean(2)" })
case("var, axis 1", function() return x:var(1) end, { note = "two passes" })
case("max, all", function() return x:max() end, { note = "NaN-propagating" })
case("argmax, axis 2", function() return x:argmax(2) end, { note = "int64 positions" })
case("logsumexp, axis 2", function() return x:logsumexp(2) end, { note = "max-shifted" })
case("norm, all", function() return x:norm() end, { note = "Frobenius" })
case("cumsum, axis 1", function() return x:cumsum(1) end, { note = "x:cumsum(1)" })
case("sum of 1000 (call overhead)", function() return small:sum() end, { note = "returns a 0-d array" })
