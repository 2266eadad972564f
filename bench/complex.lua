-- bench/complex.lua — complex64 arithmetic beside NumPy: the elementwise product of two
-- 1e7-element arrays (memory-bound: target <= 0.5x NumPy's time) and an n = 1024 matmul
-- (OpenBLAS's cgemm on the cpu, cuBLAS's on cuda; NumPy calls the same cgemm: target
-- <= 1.05x). Targets against Debian's NumPy and PyPI's newest. Twin: bench/complex.py.
package.path = "bench/lib/?.lua;" .. package.path
local gpu = require "gpu"
local B = require "bench"

local opts = { device = B.device }
local g = gpu.random.Generator(0)
-- complex64 with real and imaginary parts uniform in [0, 1): float32 pairs viewed as complex
local function cplx(...)
  local shape = { ... }
  shape[#shape + 1] = 2
  return gpu.view_as_complex(g:uniform(0, 1, shape, opts))
end
-- a build without complex dtypes reports each case's error and goes on
local n = 1024
local a, b, x, y
local ok, why = pcall(function() a, b, x, y = cplx(1e7), cplx(1e7), cplx(n, n), cplx(n, n) end)
local function guard(fn) return ok and fn or function() error(why, 0) end end

for _, base in ipairs { "numpy", "pypi numpy" } do B.target("a * b: 1e7 complex64", 0.5, base) end
B.case("a * b: 1e7 complex64", guard(function(k) local c for _ = 1, k do c = a * b end return c end),
       { note = "result allocated each time" })

for _, base in ipairs { "numpy", "pypi numpy" } do B.target("complex64 matmul n=1024", 1.05, base) end
B.once("complex64 matmul n=1024", guard(function() return x:matmul(y) end))
