-- bench/matmul.lua — float32 matmul throughput for n x n matrices, n = 256 .. 4096.
-- Target: gpulua's GFLOP/s >= 0.95x NumPy's in the same run (both call OpenBLAS's
-- sgemm here), i.e. time ratio <= 1/0.95. Twin: bench/matmul.py.
--
-- Times are wall-clock: OpenBLAS runs on all cores, and bench/lib/bench.lua's os.clock
-- is process CPU time, which counts every thread. The monotonic clock comes from
-- lua-system (installed with busted); without it the figures fall back to os.clock
-- and say so. Each size runs whole matmuls only (a 4096 one takes ~0.5 s), so the loop
-- here is its own: repeats of >= MIN_TIME seconds, best and median per matmul.
package.path = "bench/lib/?.lua;" .. package.path
local gpu = require "gpu"

local ok, system = pcall(require, "system")
local now = ok and system.monotime or os.clock
local clock_note = ok and "" or " (CPU time: lua-system missing)"

local device = os.getenv("GPULUA_BENCH_DEVICE") or "cpu"
local impl = os.getenv("GPULUA_BENCH_IMPL") or (_G.gpu and "gpulua" or "lua5.4+gpu.so")
local quick = os.getenv("BENCH_QUICK") == "1"
local MIN_TIME = quick and 0.05 or 0.25
local REPEATS = quick and 3 or 7
local sizes = { 256, 512, 1024, 2048, 4096 }
if os.getenv("BENCH_MATMUL_SIZES") then
  sizes = {}
  for n in os.getenv("BENCH_MATMUL_SIZES"):gmatch("%d+") do sizes[#sizes + 1] = tonumber(n) end
end

local function emit(...) io.write(table.concat({ ... }, "\t"), "\n"); io.flush() end

for _, n in ipairs(sizes) do
  local name = ("float32 matmul n=%d"):format(n)
  emit("target", "matmul", name, "max_ratio", ("%.4f"):format(1 / 0.95), "numpy")
  local a = gpu.random and gpu.random.rand and gpu.random.rand(n, n) or gpu.ones(n, n)
  local b = gpu.ones(n, n)
  if device ~= "cpu" then a, b = a:to(device), b:to(device) end
  local c = gpu.matmul(a, b)                          -- warm-up: loads BLAS, starts threads
  gpu.synchronize()
  local t0 = now()
  c = gpu.matmul(a, b); gpu.synchronize()
  local iters = math.max(1, math.ceil(MIN_TIME / math.max(now() - t0, 1e-9)))
  local ts = {}
  for r = 1, REPEATS do
    c = nil
    local t = now()
    for _ = 1, iters do c = gpu.matmul(a, b) end
    gpu.synchronize()
    ts[r] = (now() - t) / iters
  end
  table.sort(ts)
  local best, med = ts[1], ts[(REPEATS + 1) // 2]
  emit("result", "matmul", name, impl, ("%.1f"):format(best * 1e9), ("%.1f"):format(med * 1e9),
       ("%.1f GFLOP/s%s"):format(2 * n ^ 3 / best / 1e9, clock_note))
  a, b, c = nil, nil, nil
  collectgarbage()
end
