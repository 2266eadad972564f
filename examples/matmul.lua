-- matmul.lua — two random 1000x1000 matrices and their product, timed (the CuPy tour's
--   A = cp.random.rand(1000, 1000); B = cp.random.rand(1000, 1000); C = cp.dot(A, B)).
-- On a GPU the product goes through cuBLAS, on the CPU through OpenBLAS.
--
-- Run: ./gpulua examples/matmul.lua [--small]      (--small: 100x100)
local gpu = require "gpu"
local small = arg and arg[1] == "--small"
local n = small and 100 or 1000

local dev = gpu.device()
print(("device: %s, n = %d"):format(dev, n))
gpu.random.seed(42)                     -- the same numbers on the CPU and the GPU
local A = gpu.random.rand(n, n)
local B = gpu.random.rand(n, n)
local C = gpu.dot(A, B)                 -- as cp.dot; also gpu.matmul(A, B), A:matmul(B)
print(("C = A . B: shape %s, dtype %s, device %s"):format(table.concat(C.shape, "x"), C.dtype, C.device))

-- check one element against a Lua loop (rand is uniform on [0, 1), so each is ~ n/4)
local i, j = 1, n
local row, col = A[i]:totable(), B[{":", j}]:totable()   -- one copy each, not n
local s = 0
for k = 1, n do s = s + row[k] * col[k] end
print(("C[1][%d] = %.4f, Lua loop: %.4f"):format(n, C[{i, j}], s))
assert(math.abs(C[{i, j}] - s) <= 1e-4 * math.abs(s), "matmul disagrees with the loop")

-- timing: gpu.bench synchronises the device and reports host and (on a GPU) device time
local r = gpu.bench(function() return A:matmul(B) end, {n = small and 5 or 20, warmup = 2, name = "matmul", quiet = true})
local us = r.device and r.device.median or r.host.median
print(("%dx%d matmul: %.3f ms (median, %s), %.1f GFLOP/s"):format(n, n, us / 1e3,
      r.device and "device time" or "host time", 2 * n ^ 3 / (us * 1e-6) / 1e9))
print("matmul ok")
