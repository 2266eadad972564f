-- profiling.lua — where does the time go? (the seeds' "use NVIDIA Nsight to analyse
-- performance"). Two tools:
--
-- * gpu.profile(fn): runs fn once and prints a per-op table (calls, host time, device
--   time, bytes copied), busiest first; returns it as a table, then fn's results.
-- * gpu.range(name, fn, ...): runs fn(...) inside an NVTX range, so Nsight Systems shows
--   the span named on its timeline above the kernels it launched:
--     nsys profile --trace=cuda,nvtx -o prof ./gpulua examples/profiling.lua
--   Without a profiler attached (or without CUDA) a range is just a call of fn.
--
-- Run: ./gpulua examples/profiling.lua [--small]
local gpu = require "gpu"
local small = arg and arg[1] == "--small"
local n = small and 64 or 1024
local steps = small and 3 or 10

print(("device: %s, a %dx%d two-layer forward pass, %d steps"):format(gpu.device(), n, n, steps))
gpu.random.seed(1)
local x = gpu.random.randn(n, n)
local w1 = gpu.random.randn(n, n) * (1 / math.sqrt(n))
local w2 = gpu.random.randn(n, n) * (1 / math.sqrt(n))

local function forward(input)
  local h = gpu.range("layer 1", function() return input:matmul(w1):relu() end)
  return gpu.range("layer 2", function() return h:matmul(w2):tanh() end)
end

local report, loss = gpu.profile(function()
  local out
  for _ = 1, steps do
    out = gpu.range("step", forward, x)
  end
  return (out * out):mean():item()          -- one value back to the host
end)

print(("loss = %.6f"):format(loss))
local top = report.rows[1]
print(("busiest op: %s, %d calls, %.3f ms on the host"):format(top.name, top.calls, top.host_ms))
print(("matmul: %d calls; bytes copied in all: %d"):format(report.ops.matmul.calls, report.total.bytes))
print("profiling ok")
