-- bench/routines.lua — einsum and the NumPy routines of lua/gpu/routines (issue 13, item
-- 4): einsum("bij,bjk->bik") beside gpulua's own matmul of the same operands (target:
-- within 5%, compare the two gpulua rows), and unique, median and histogram of 1e7
-- float32 against NumPy (target: time ratio <= 1). Twin: bench/routines.py (same case
-- names). Wall-clock (lua-system's monotonic clock when installed), best and median of
-- repeats of >= MIN_TIME seconds, as bench/reduce.lua.
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
local GROUP = "routines"

local function emit(...) io.write(table.concat({ ... }, "\t"), "\n"); io.flush() end

-- case(name, fn [, {target_vs = "numpy", note = ...}]): fn() runs the op once
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

local opts = { device = device }
local a = gpu.random.rand({ 64, 128, 128 }, opts)
local b = gpu.random.rand({ 64, 128, 128 }, opts)
local n = quick and 1000000 or 10000000
local x = gpu.random.randn(n, opts)

case("matmul bij,bjk 64x128x128", function() return gpu.matmul(a, b) end, { note = "gpu.matmul (einsum's reference)" })
case("einsum bij,bjk->bik 64x128x128", function() return gpu.einsum("bij,bjk->bik", a, b) end,
  { note = "within 5% of the matmul row" })
case("einsum ij,jk,kl->il 128", function()
  return gpu.einsum("ij,jk,kl->il", a[1], a[2], a[3])
end, { note = "greedy pairwise" })
case(("unique %g f32"):format(n), function() return gpu.unique(x) end, { target_vs = "numpy", note = "sort-based" })
case(("median %g f32"):format(n), function() return gpu.median(x) end, { target_vs = "numpy", note = "full sort" })
case(("histogram %g f32"):format(n), function() return gpu.histogram(x, { bins = 100 }) end,
  { target_vs = "numpy", note = "100 equal bins" })
