-- bench/linalg.lua — gpu.linalg (OpenBLAS's LAPACK) beside NumPy (the same LAPACK):
-- solve, inv, cholesky, qr, svd and eigh of n x n float64 matrices (n = 256, 1024), and a
-- batched solve of 10,000 3x3 systems. Target: >= 0.9x NumPy's speed for the former
-- (time ratio <= 1/0.9: the rest is overhead), >= 2x for the batch (<= 0.5). Twin:
-- bench/linalg.py. Wall-clock (gpu.clock), best and median of repeats of
-- >= 0.2 s (bench/lib's B.once).
package.path = "bench/lib/?.lua;" .. package.path
local gpu = require "gpu"

local B = require "bench"

local sizes = { 256, 1024 }
if os.getenv("BENCH_LINALG_SIZES") then
  sizes = {}
  for n in os.getenv("BENCH_LINALG_SIZES"):gmatch("%d+") do sizes[#sizes + 1] = tonumber(n) end
end
local L = gpu.linalg

-- run(name, max_ratio, fn): fn() runs the op once (B.once: wall time per call, warmed up)
local function run(name, max_ratio, fn)
  B.once(name, fn, { target_vs = "numpy", ratio = ("%.4f"):format(max_ratio) })
end

for _, n in ipairs(sizes) do
  local g = gpu.random.Generator(n)
  local a = g:uniform(0, 1, { n, n }, { dtype = "float64" }) + gpu.eye(n, { dtype = "float64" }) * n
  local spd = a:matmul(a.T) + gpu.eye(n, { dtype = "float64" }) * n
  local b = g:uniform(0, 1, { n, 1 }, { dtype = "float64" })
  local tag = (" n=%d float64"):format(n)
  run("solve" .. tag, 1 / 0.9, function() return L.solve(a, b) end)
  run("inv" .. tag, 1 / 0.9, function() return L.inv(a) end)
  run("cholesky" .. tag, 1 / 0.9, function() return L.cholesky(spd) end)
  run("qr" .. tag, 1 / 0.9, function() return L.qr(a) end)
  run("svd" .. tag, 1 / 0.9, function() return L.svd(a) end)
  run("eigh" .. tag, 1 / 0.9, function() return L.eigh(spd) end)
end

local g = gpu.random.Generator(3)
local a3 = g:uniform(0, 1, { 10000, 3, 3 }, { dtype = "float64" }) + gpu.eye(3, { dtype = "float64" }) * 3
local b3 = g:uniform(0, 1, { 10000, 3, 1 }, { dtype = "float64" })
run("solve batch 10000x3x3 float64", 0.5, function() return L.solve(a3, b3) end)
