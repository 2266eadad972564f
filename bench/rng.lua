-- bench/rng.lua — filling 1e7 float32 with uniforms and normals (uniforms at
-- least as fast as NumPy's default_rng().random, normals at least 2x its standard_normal).
-- Twin: bench/rng.py (NumPy's Generator/PCG64 in the same run).
package.path = "bench/lib/?.lua;" .. package.path
local B = require "bench"
local gpu = require "gpu"

local R = gpu.random
local N = 10000000
local opts = { device = B.device }
local opts64 = { device = B.device, dtype = "float64" }
R.seed(1)

B.target("rand(1e7) float32", 1.0, "numpy")
B.case("rand(1e7) float32", function(n)
  for _ = 1, n do local _ = R.rand(N, opts) end
end, { note = "gpu.random.rand(1e7)" })

B.target("randn(1e7) float32", 0.5, "numpy")
B.case("randn(1e7) float32", function(n)
  for _ = 1, n do local _ = R.randn(N, opts) end
end, { note = "gpu.random.randn(1e7)" })

B.case("rand(1e7) float64", function(n)
  for _ = 1, n do local _ = R.rand(N, opts64) end
end, { note = "dtype float64" })

B.case("randn(1e7) float64", function(n)
  for _ = 1, n do local _ = R.randn(N, opts64) end
end, { note = "dtype float64" })

B.case("randint(1, 100, 1e7) int64", function(n)
  for _ = 1, n do local _ = R.randint(1, 100, N, opts) end
end, { note = "inclusive bounds" })
