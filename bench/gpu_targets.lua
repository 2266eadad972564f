-- bench/gpu_targets.lua — the GPU target figures on a GPU, one line each,
--   RESULT gpulua <figure> <value>
-- figures: copy, add, sum, uniform, normal (GB/s over 2^28 float32, device time from CUDA
-- events, best of 10) and add1 (us per op, wall time of a 20000-op Lua loop of a
-- 1-element add). GPU_TARGETS_LOG2N sets the size (default 28). GPU_TARGETS_MATMUL=1 adds matmul_f32 / matmul_bf16 (TFLOP/s at 8192).
-- Twin: bench/gpu_targets.py (PyTorch, CuPy), which also prints the table of all three.
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

local function result(figure, value)
  print(("RESULT gpulua %s %.4f"):format(figure, value))
  io.stdout:flush()
end

local N = 2 ^ (tonumber(os.getenv("GPU_TARGETS_LOG2N")) or 28)   -- smaller for a dry run on the cpu
local GB = 4 * N / 1e9    -- one pass over 2^28 float32, in GB
local a, b = gpu.ones(N, { device = dev }), gpu.ones(N, { device = dev })
local c
result("copy", 2 * GB / best(10, function() c = a:copy() end))
result("add", 3 * GB / best(10, function() c = a + b end))
c = nil
result("sum", GB / best(10, function() c = a:sum() end))
a, b, c = nil, nil, nil
collectgarbage()
result("uniform", GB / best(10, function() c = gpu.random.rand(N, { device = dev }) end))
c = nil
result("normal", GB / best(10, function() c = gpu.random.randn(N, { device = dev }) end))
c = nil
collectgarbage()
gpu.empty_cache(dev)

local x, y = gpu.ones(1, { device = dev }), gpu.ones(1, { device = dev })
for _ = 1, 1000 do c = x + y end           -- warm: allocator cache, the kernel's module
local n = 20000
gpu.synchronize(dev)
local t0 = gpu.clock()
for _ = 1, n do c = x + y end
gpu.synchronize(dev)
result("add1", (gpu.clock() - t0) / n * 1e6)

if os.getenv("GPU_TARGETS_MATMUL") == "1" then
  for _, dt in ipairs { "float32", "bfloat16" } do
    local m1 = gpu.random.rand(8192, 8192, { device = dev, dtype = dt })
    local m2 = gpu.random.rand(8192, 8192, { device = dev, dtype = dt })
    local t = best(5, function() c = m1:matmul(m2) end)
    result(dt == "float32" and "matmul_f32" or "matmul_bf16", 2 * 8192 ^ 3 / t / 1e12)
  end
end
