-- quickstart.lua — a short tour of the gpu module: devices, making arrays, properties,
-- indexing and views, dtype conversion, printing.  Run it with `make run` or
-- `./gpulua examples/quickstart.lua` (or lua5.4 with gpu.so on LUA_CPATH).
local gpu = require "gpu"

local function section(title) print(("\n-- %s "):format(title) .. ("-"):rep(60 - #title)) end
local function show(label, a) print(label); print(a) end

section("devices")
print("gpulua " .. gpu.version .. ", new arrays go to: " .. gpu.device())
local ok, why = gpu.is_available()
print("CUDA available:", ok, why or "")
for i, d in ipairs(gpu.devices()) do
  print(("  %d  %-7s %s, %.1f GiB"):format(i, d.device, d.name, d.total_memory / 2^30))
end

section("making arrays")
print(gpu.zeros(2, 3))                                   -- float32 by default
print(gpu.ones({2, 2}, {dtype = "int32"}))               -- shape as a table, options
print(gpu.full({2, 3}, 7.5, {dtype = "float64"}))
print(gpu.arange(1, 11))                                 -- integers give int64, [1, 11)
print(gpu.linspace(0, 1, 5))
print(gpu.eye(3, {dtype = "uint8"}))
print(gpu.array({{1, 2, 3}, {4, 5, 6}}))                 -- from nested tables

section("properties")
local x = gpu.arange(1, 13):reshape(3, 4)
print(x)
print("shape:", table.concat(x.shape, "x"), "ndim:", x.ndim, "size:", x.size,
      "dtype:", x.dtype, "device:", x.device, "#x:", #x)

section("indexing: 1-based, negatives from the end, inclusive ranges")
print("x[{2, 3}]  =", x[{2, 3}])                         -- one element: a Lua number
print("x[{-1, -1}] =", x[{-1, -1}])
show("x[2], a view of row 2:", x[2])
show("x[{ {1, 2}, \":\" }], rows 1..2:", x[{ {1, 2}, ":" }])
show("x[{ \":\", {1, 4, 2} }], every other column:", x[{ ":", {1, 4, 2} }])
show("x.T, the transpose (a view):", x.T)

section("views share memory")
local v = x[{ {1, 2}, {2, 3} }]                          -- a 2x2 window into x
v:fill_(0)                                               -- writes through to x
x[{3, 4}] = -1                                           -- assignment by index
x[{ 3, {1, 2} }] = 100                                   -- ... or by range
print(x)
print("reshape is a view too:", x:reshape(2, 6)[{1, 2}], "contiguous:", x.T:is_contiguous())

section("dtypes")
local f = gpu.array({1.5, -2.7, 3.9})
print(f)
print(f:astype("int32"))                                  -- truncates toward zero
print(f:astype("float16"))
print(f:astype("bool"))
print("x:copy() owns its memory; x:totable() gives Lua tables:", x:copy():totable()[1][1])
print("a one-element array as a number:", gpu.full({1}, 2.5):item())

section("freeing early")
do
  local big <close> = gpu.zeros(1000, 1000)             -- freed at the end of the block
  print(("a %dx%d %s array, %d bytes"):format(big.shape[1], big.shape[2], big.dtype, big.nbytes))
end
print("done")
