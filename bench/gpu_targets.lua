-- bench/gpu_targets.lua — the issue-4 figures on a GPU, printed as lines:
--   add 2^28 float32 (GB/s), sum 2^28 (GB/s), copy 2^28 (GB/s), 1-element add per op (us),
--   matmul 8192 float32 / bfloat16 (TFLOP/s).  Twin: bench/gpu_targets.py (CuPy, PyTorch).
local gpu = require "gpu"
local dev = os.getenv("GPULUA_BENCH_DEVICE") or "cuda"
local function best(n, f)
  local e0, e1, b = gpu.event(dev), gpu.event(dev), math.huge
  f()
  for _ = 1, n do
    e0:record(); f(); e1:record()
    b = math.min(b, e0:elapsed(e1))
  end
  return b / 1e3          -- seconds
end
local N = 2 ^ 28
local a, b = gpu.ones(N, { device = dev }), gpu.ones(N, { device = dev })
local c
local t = best(10, function() c = a:copy() end)
print(("gpulua copy 2^28 f32: %.0f GB/s"):format(2 * 4 * N / t / 1e9))
t = best(10, function() c = a + b end)
print(("gpulua add 2^28 f32: %.0f GB/s"):format(3 * 4 * N / t / 1e9))
t = best(10, function() c = a:sum() end)
print(("gpulua sum 2^28 f32: %.0f GB/s (value %s)"):format(4 * N / t / 1e9, tostring(c:item())))
a, b, c = nil, nil, nil
collectgarbage()
local x, y = gpu.ones(1, { device = dev }), gpu.ones(1, { device = dev })
local n = 20000
gpu.synchronize(dev)
local t0 = gpu.clock()
for _ = 1, n do c = x + y end
gpu.synchronize(dev)
print(("gpulua 1-element add: %.2f us/op (wall, Lua loop)"):format((gpu.clock() - t0) / n * 1e6))
for _, dt in ipairs { "float32", "bfloat16" } do
  local m1 = gpu.random.rand(8192, 8192, { device = dev, dtype = dt })
  local m2 = gpu.random.rand(8192, 8192, { device = dev, dtype = dt })
  t = best(5, function() c = m1:matmul(m2) end)
  print(("gpulua matmul 8192 %s: %.1f TFLOP/s"):format(dt, 2 * 8192 ^ 3 / t / 1e12))
end
