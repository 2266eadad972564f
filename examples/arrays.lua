-- arrays.lua — the CuPy tour's first steps in gpulua: make an array on the default device
-- (the GPU when there is one, else the CPU), add it to itself, move it, read it back.
--
--   import cupy as cp                      local gpu = require "gpu"
--   a = cp.array([1, 2, 3, 4, 5])          local a = gpu.array({1, 2, 3, 4, 5})
--   b = a + a                              local b = a + a
--
-- Run: ./gpulua examples/arrays.lua [--small]
local gpu = require "gpu"
local small = arg and arg[1] == "--small"

print("device: " .. gpu.device())

-- the seed's example
local a = gpu.array({1, 2, 3, 4, 5})
local b = a + a
print("a     = " .. tostring(a))
print("a + a = " .. tostring(b))
print("b as a Lua table: {" .. table.concat(b:totable(), ", ") .. "}")

-- the same with other constructors and dtypes; arrays stay on the device they were made on
local n = small and 1000 or 1000000
local x = gpu.arange(1, n + 1, {dtype = "float64"})   -- 1..n
local y = x * 2 + 1                                   -- broadcast with Lua numbers
print(("sum of 2x+1 over 1..%d = %.0f (expected %.0f)"):format(n, (y:sum()):item(), n * (n + 1) + n))
local m = gpu.ones({2, 3}, {dtype = "int32"})
print("ones(2, 3) + row {10, 20, 30}:")
print(m + gpu.array({10, 20, 30}, {dtype = "int32"}))
print("float32 * 2.5 stays float32: " .. (gpu.ones(3) * 2.5).dtype)
print("int32 / 2 gives float64: " .. (m / 2).dtype)

-- moving data: explicit, never hidden
local host = b:to("cpu")
print("b on the cpu: " .. tostring(host) .. " (device " .. host.device .. ")")
print("arrays ok")
