-- bench/routines.lua — einsum and the NumPy routines of lua/gpu/routines:
-- einsum("bij,bjk->bik") beside gpulua's own matmul of the same operands (target:
-- within 5%, compare the two gpulua rows), and sort, argsort, unique, median and
-- histogram of 1e7 float32, isin and intersect1d of 1e6 int64 against NumPy (target: time
-- ratio <= 1). Twin: bench/routines.py (same case
-- names). Wall-clock (gpu.clock), best and median of repeats of >= 0.2 s (B.once).
package.path = "bench/lib/?.lua;" .. package.path
local gpu = require "gpu"
local B = require "bench"
local device, quick = B.device, os.getenv("BENCH_QUICK") == "1"

-- case(name, fn [, {target_vs = "numpy", note = ...}]): fn() runs the op once
local case = B.once

local opts = { device = device }
local a = gpu.random.rand({ 64, 128, 128 }, opts)
local b = gpu.random.rand({ 64, 128, 128 }, opts)
local n = quick and 1000000 or 10000000
local x = gpu.random.randn(n, opts)

case("matmul bij,bjk 64x128x128", function() return gpu.matmul(a, b) end, { note = "gpu.matmul (einsum's reference)" })
case("einsum bij,bjk->bik 64x128x128", function() return gpu.einsum("bij,bjk->bik", a, b) end,
  { note = "within 5% of the matmul row" })
case("einsum ij,jk,kl->il 128", function()
  return gpu.einsum("ij,jk,kl->il", a[1], a[2], a[3])
end, { note = "greedy pairwise" })
case(("sort %g f32"):format(n), function() return gpu.sort(x) end, { target_vs = "numpy", note = "radix sort" })
case(("argsort %g f32"):format(n), function() return gpu.argsort(x) end,
  { target_vs = "numpy", note = "stable radix sort (NumPy: kind='stable')" })
case(("unique %g f32"):format(n), function() return gpu.unique(x) end, { target_vs = "numpy", note = "sort-based" })
case(("median %g f32"):format(n), function() return gpu.median(x) end, { target_vs = "numpy", note = "partition" })
case(("histogram %g f32"):format(n), function() return gpu.histogram(x, { bins = 100 }) end,
  { target_vs = "numpy", note = "100 equal bins" })

-- the set functions on 1e6 int64 drawn from 0 .. 2e6 - 1 (the same draws in bench/routines.py)
local ga, gb = gpu.random.Generator(1), gpu.random.Generator(2)
local sa = ga:randint(0, 1999999, { 1000000 }, { dtype = "int64", device = device })
local sb = gb:randint(0, 1999999, { 1000000 }, { dtype = "int64", device = device })
case("isin 1e6 int64", function() return gpu.isin(sa, sb) end, { target_vs = "numpy", note = "lookup table" })
case("intersect1d 1e6 int64", function() return gpu.intersect1d(sa, sb) end, { target_vs = "numpy", note = "sort-based" })
