-- bench/porters.lua — the special functions, random laws and scatters of the NumPy, SciPy
-- and PyTorch ports against those libraries: erfinv, gammaln and digamma of 1e7 float32
-- (SciPy's scipy.special, PyTorch's torch.special); 1e7 draws of poisson, gamma, binomial
-- and multinomial (NumPy's Generator, PyTorch's samplers where it has one); index_add and
-- scatter_reduce ("sum", "amax") of 1e7 float32 into 1e4 (PyTorch; NumPy's ufunc.at).
-- Target for each: at least as fast as every library beside it (time ratio <= 1).
-- Twin: bench/porters.py (same case names). Wall-clock, best and median of repeats of
-- >= 0.2 s (B.once).
package.path = "bench/lib/?.lua;" .. package.path
local gpu = require "gpu"
local B = require "bench"
local device, quick = B.device, os.getenv("BENCH_QUICK") == "1"
local R = gpu.random

local N = quick and 1000000 or 10000000
local opts = { device = device }
local NAME = quick and "1e6" or "1e7"

-- case(name, fn, note, bases): fn() runs the op once; a target of ratio 1 against each base
local function case(name, fn, note, bases)
  for _, base in ipairs(bases) do B.target(name, 1.0, base) end
  B.once(name, fn, { note = note })
end
local SPECIAL = { "scipy", "pypi scipy", "pypi torch" }
local RANDOM = { "numpy", "pypi numpy", "pypi torch" }
local NUMPY_ONLY = { "numpy", "pypi numpy" }
local SCATTER = { "numpy", "pypi numpy", "pypi torch" }

-- special functions: erfinv on (-1, 1), gammaln and digamma on (0.1, 20.1)
local g = R.Generator(1)
local u = g:uniform(-1, 1, N, opts)
local x = g:uniform(0.1, 20.1, N, opts)
case("erfinv " .. NAME .. " f32", function() return gpu.erfinv(u) end, "gpu.erfinv", SPECIAL)
case("gammaln " .. NAME .. " f32", function() return gpu.special.gammaln(x) end, "gpu.special.gammaln", SPECIAL)
case("digamma " .. NAME .. " f32", function() return gpu.special.digamma(x) end, "gpu.special.digamma", SPECIAL)

-- random laws, NumPy's names (int64 counts; gamma float32, NumPy's standard_gamma asked
-- for float32 too)
case("poisson(4) " .. NAME, function() return g:poisson(4, N, opts) end, "multiplication", RANDOM)
case("poisson(100) " .. NAME, function() return g:poisson(100, N, opts) end, "PTRS", RANDOM)
case("gamma(2.5) " .. NAME .. " f32", function() return g:gamma(2.5, 1, N, opts) end, "Marsaglia-Tsang", RANDOM)
case("binomial(20, 0.3) " .. NAME, function() return g:binomial(20, 0.3, N, opts) end, "inversion", RANDOM)
case("binomial(1000, 0.4) " .. NAME, function() return g:binomial(1000, 0.4, N, opts) end, "BTRS", RANDOM)
case("multinomial(10, pvals[4]) " .. NAME, function() return g:multinomial(10, { 0.1, 0.2, 0.3, 0.4 }, N, opts) end,
  "NumPy's: size x 4 counts", NUMPY_ONLY)
local w = gpu.arange(1, 101, { dtype = "float32", device = device })
case("multinomial(w[100], " .. NAME .. ", replacement)", function() return gpu.multinomial(w, N, true) end,
  "PyTorch's: 1-D weights (NumPy: choice(100, N, p))", RANDOM)

-- scatters: 1e7 float32 sources into 1e4 at int64 positions drawn uniformly
local M = 10000
local dst = gpu.zeros(M, opts)
local src = g:rand(N, opts)
local idx = g:randint(1, M, N, { dtype = "int64", device = device })
case("index_add " .. NAME .. " -> 1e4 f32", function() return gpu.index_add(dst, 1, idx, src) end, "gpu.index_add",
  SCATTER)
case("scatter_reduce sum " .. NAME .. " -> 1e4 f32", function() return gpu.scatter_reduce(dst, 1, idx, src, "sum") end,
  "include_self", SCATTER)
case("scatter_reduce amax " .. NAME .. " -> 1e4 f32", function() return gpu.scatter_reduce(dst, 1, idx, src, "amax") end,
  "include_self", SCATTER)
