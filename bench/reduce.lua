-- bench/reduce.lua — reductions and scans on a 4096 x 4096 float32 array (64 MiB).
-- Target: sum over everything and along each axis must be at least as fast as
-- PyTorch's CPU sum in the same run (target: time ratio <= 1 against torch).
-- Twin: bench/reduce.py (NumPy, PyTorch; same case names).
--
-- Times are wall-clock (gpu.clock: the reductions run on every core, and CPU time would
-- count every thread); each repeat runs >= 0.2 s (B.once); best and median per call.
package.path = "bench/lib/?.lua;" .. package.path
local gpu = require "gpu"
local B = require "bench"
local device = B.device

-- case(name, fn [, {target_vs = "torch", note = ...}]): fn() runs the op once
local case = B.once

local n = 4096
local x = gpu.random and gpu.random.rand and gpu.random.rand(n, n)
          or (gpu.arange(n * n, { dtype = "float32" }) % 1000):reshape(n, n) / 1000
if device ~= "cpu" then x = x:to(device) end
local xt = x.T
local x64 = x:astype("float64")
local small = gpu.ones(1000)

case("sum, all 4096x4096 f32", function() return x:sum() end, { target_vs = "torch", note = "x:sum()" })
case("sum, axis 1 (down columns)", function() return x:sum(1) end, { target_vs = "torch", note = "x:sum(1)" })
case("sum, axis 2 (along rows)", function() return x:sum(2) end, { target_vs = "torch", note = "x:sum(2)" })
case("sum, axis 2 of the transpose", function() return xt:sum(2) end, { note = "x.T:sum(2)" })
case("sum, all f64", function() return x64:sum() end, { note = "float64" })
case("mean, axis 2", function() return x:mean(2) end, { note = "x:mean(2)" })
case("var, axis 1", function() return x:var(1) end, { note = "two passes" })
case("max, all", function() return x:max() end, { note = "NaN-propagating" })
case("argmax, axis 2", function() return x:argmax(2) end, { note = "int64 positions" })
case("logsumexp, axis 2", function() return x:logsumexp(2) end, { note = "max-shifted" })
case("norm, all", function() return x:norm() end, { note = "Frobenius" })
case("cumsum, axis 1", function() return x:cumsum(1) end, { note = "x:cumsum(1)" })
case("sum of 1000 (call overhead)", function() return small:sum() end, { note = "returns a 0-d array" })
