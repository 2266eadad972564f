-- bench/elementwise.lua — elementwise ops: per-op overhead on tiny arrays,
-- memory-bound adds against the machine's STREAM bandwidth, vectorised exp, and a
-- blocked transpose copy.  Twin: bench/elementwise.py; STREAM: bench/stream.c.
package.path = "bench/lib/?.lua;" .. package.path
local B = require "bench"
local gpu = require "gpu"
local dev = B.device
local opts = { device = dev }

local a1, b1 = gpu.ones(1, opts), gpu.ones(1, opts)
local a100, b100 = gpu.ones(100, opts), gpu.ones(100, opts)
B.target("a + b: 1 float32", 0.5, "numpy")
B.target("a + b: 1 float32", 0.5, "cupy", "cuda")     -- <= 0.5x CuPy, <= PyTorch
B.target("a + b: 1 float32", 1.0, "torch", "cuda")
B.case("a + b: 1 float32", function(n) local c for _ = 1, n do c = a1 + b1 end return c end)
B.target("a + b: 100 float32", 0.5, "numpy")
B.case("a + b: 100 float32", function(n) local c for _ = 1, n do c = a100 + b100 end return c end)
B.case("a * 2.5: 100 float32", function(n) local c for _ = 1, n do c = a100 * 2.5 end return c end)

local big_a, big_b = gpu.ones(1e7, opts), gpu.ones(1e7, opts)
B.target("c = a + b: 1e7 float32", 1 / 1.5, "numpy")
B.target("c = a + b: 1e7 float32", 1 / 0.75, "STREAM")
B.case("c = a + b: 1e7 float32", function(n) local c for _ = 1, n do c = big_a + big_b end return c end,
       { note = "result allocated each time" })
B.target("exp: 1e7 float32", 1 / 3, "numpy")
B.case("exp: 1e7 float32", function(n) local c for _ = 1, n do c = big_a:exp() end return c end)
B.case("tanh: 1e7 float32", function(n) local c for _ = 1, n do c = big_a:tanh() end return c end)

local m = gpu.ones(4096, 4096, opts)
B.target("transpose copy: 4096x4096 float32", 0.5, "numpy")
B.case("transpose copy: 4096x4096 float32", function(n) local c for _ = 1, n do c = m.T:contiguous() end return c end,
       { note = "x.T:contiguous()" })
