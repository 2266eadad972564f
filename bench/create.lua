-- bench/create.lua — the cost of the smallest arrays: making and dropping one, and
-- reading its element (each <= 300 ns).  Twin: bench/create.py.
package.path = "bench/lib/?.lua;" .. package.path
local B = require "bench"
local gpu = require "gpu"

local dev = B.device
local zeros = gpu.zeros

if dev == "cpu" then
  B.case("zeros(1): create + drop", function(n)
    for _ = 1, n do local _ = zeros(1) end
  end, { target_ns = 300, note = "gpu.zeros(1)" })
else
  local opts = { device = dev }
  B.case("zeros(1): create + drop", function(n)
    for _ = 1, n do local _ = zeros(1, opts) end
  end, { target_ns = 300, note = "gpu.zeros(1, {device = '" .. dev .. "'})" })
end

B.case("zeros(1, opts): create + drop", function(n)
  local opts = { dtype = "float32", device = dev }
  for _ = 1, n do local _ = zeros(1, opts) end
end, { note = "gpu.zeros(1, {dtype = 'float32', device = '" .. dev .. "'})" })

B.case("zeros(1000): create + drop", function(n)
  local opts = { device = dev }
  for _ = 1, n do local _ = zeros(1000, opts) end
end, { note = "4 KB, filled" })

-- arrays the cases read: made here, but a device that cannot make them fails only the
-- cases that use them (B.case reports the error)
local function made(ok, v) return function() assert(ok, v) return v end end
local get_x = made(pcall(zeros, 1, { device = dev }))
local get_m = made(pcall(zeros, 4, 4, { device = dev }))

B.case("x[1]: read, 1-element vector", function(n)
  local s, x = nil, get_x()
  for _ = 1, n do s = x[1] end
  return s
end, { target_ns = 300, note = "x[1]" })

B.case("x[{i, j}]: read, 4x4 matrix", function(n)
  local s, key, m = nil, { 2, 3 }, get_m()
  for _ = 1, n do s = m[key] end
  return s
end, { note = "m[{2, 3}], key table reused" })

B.case("x[i] = v: write, 1-element vector", function(n)
  local x = get_x()
  for _ = 1, n do x[1] = 1.5 end
end, { note = "x[1] = 1.5" })

B.case("x.shape: property", function(n)
  local s, m = nil, get_m()
  for _ = 1, n do s = m.shape end
  return s
end, { note = "a fresh table each time" })
