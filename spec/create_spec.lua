-- create_spec.lua — every creation function, every dtype, shapes and options.
local h = require "spec.helper"
local gpu = h.gpu

local DTYPES = h.dtypes()
local function shape(x) return table.concat(x.shape, ",") end

describe("zeros/ones/empty/full", function()
  it("take shapes as varargs or a table", function()
    for _, f in ipairs{ gpu.zeros, gpu.ones, gpu.empty } do
      assert.equal("2,3", shape(f(2, 3)))
      assert.equal("2,3", shape(f({2, 3})))
      assert.equal("4", shape(f(4)))
      assert.equal("2,1,3,1", shape(f(2, 1, 3, 1)))
    end
    assert.equal("2,3", shape(gpu.full({2, 3}, 7)))
    assert.equal("5", shape(gpu.full(5, 7)))
  end)

  it("fill with the right values in every dtype", function()
    for _, dt in ipairs(DTYPES) do
      local z, o, f = gpu.zeros(2, 2, {dtype = dt}), gpu.ones({2, 2}, {dtype = dt}), gpu.full({3}, 1, {dtype = dt})
      assert.equal(dt, z.dtype); assert.equal(dt, o.dtype); assert.equal(dt, f.dtype)
      local zero, one = 0, 1
      if dt == "bool" then zero, one = false, true end
      if dt:find("^complex") then zero, one = gpu.complex(0, 0), gpu.complex(1, 0) end
      for _, v in ipairs(h.flat(z)) do assert.equal(zero, v) end
      for _, v in ipairs(h.flat(o)) do assert.equal(one, v) end
      for _, v in ipairs(h.flat(f)) do assert.equal(one, v) end
      local e = gpu.empty(3, {dtype = dt})
      assert.equal(dt, e.dtype); assert.equal(3, e.size)
    end
  end)

  it("default to float32 on the default device", function()
    local x = gpu.zeros(2)
    assert.equal("float32", x.dtype)
    assert.equal(gpu.device(), x.device)
    assert.equal("cpu", gpu.zeros(2, {device = "cpu"}).device)
  end)

  it("return Lua integers for int dtypes and floats for float dtypes", function()
    assert.equal("integer", math.type(gpu.ones(1, {dtype = "int32"})[1]))
    assert.equal("integer", math.type(gpu.ones(1, {dtype = "uint8"})[1]))
    assert.equal("float", math.type(gpu.ones(1)[1]))
  end)

  it("accept dtype aliases", function()
    local map = { float = "float32", double = "float64", half = "float16", int = "int32", long = "int64",
                  byte = "uint8", bf16 = "bfloat16", fp16 = "float16", fp32 = "float32", fp64 = "float64" }
    for alias, name in pairs(map) do assert.equal(name, gpu.zeros(1, {dtype = alias}).dtype) end
  end)

  it("make 0-d arrays from an empty shape", function()
    for _, x in ipairs{ gpu.zeros(), gpu.zeros({}), gpu.ones({}), gpu.full({}, 4) } do
      assert.equal(0, x.ndim); assert.equal(1, x.size); assert.equal("", shape(x))
    end
    assert.equal(4, gpu.full({}, 4):item())
    assert.equal(1, gpu.ones({}, {dtype = "int64"}):item())
  end)

  it("make arrays with size-0 axes", function()
    local x = gpu.zeros(3, 0, 2)
    assert.equal("3,0,2", shape(x)); assert.equal(0, x.size); assert.equal(3, #x)
    assert.equal(0, gpu.ones(0).size)
    assert.same({}, gpu.zeros(0):totable())
    assert.same({{}, {}}, gpu.zeros(2, 0):totable())
  end)

  it("full: the value decides bool; a float value keeps float32; dtype converts", function()
    assert.equal("bool", gpu.full(2, true).dtype)
    assert.same({true, true}, gpu.full(2, true):totable())
    assert.same({false}, gpu.full(1, false):totable())
    assert.equal("float32", gpu.full(2, 7).dtype)
    assert.same({2.5, 2.5}, gpu.full(2, 2.5):totable())
    assert.same({2, 2}, gpu.full(2, 2.9, {dtype = "int32"}):totable())
    assert.same({1, 1}, gpu.full(2, true, {dtype = "int64"}):totable())
    assert.same({-7}, gpu.full({1}, -7, {dtype = "int64"}):totable())
  end)
end)

describe("*_like", function()
  it("copy shape, dtype and device, and take options", function()
    local x = gpu.arange(6):reshape(2, 3)
    local z = gpu.zeros_like(x)
    assert.equal("2,3", shape(z)); assert.equal("int64", z.dtype); assert.equal(x.device, z.device)
    assert.same({{0, 0, 0}, {0, 0, 0}}, z:totable())
    assert.same({{1, 1, 1}, {1, 1, 1}}, gpu.ones_like(x):totable())
    assert.same({{9, 9, 9}, {9, 9, 9}}, gpu.full_like(x, 9):totable())
    assert.equal("int64", gpu.empty_like(x).dtype)
    assert.equal("float64", gpu.zeros_like(x, {dtype = "float64"}).dtype)
    assert.same({{2.5, 2.5, 2.5}, {2.5, 2.5, 2.5}}, gpu.full_like(x, 2.5, {dtype = "float32"}):totable())
    assert.same({2, 2}, gpu.full_like(gpu.zeros(2, {dtype = "int32"}), 2.7):totable())   -- truncates, as NumPy
  end)

  it("work on views, 0-d and empty arrays, and leave the source alone", function()
    local x = gpu.arange(6):reshape(2, 3).T
    local o = gpu.ones_like(x)
    assert.equal("3,2", shape(o)); assert.is_true(o:is_contiguous())
    assert.same({{0, 3}, {1, 4}, {2, 5}}, x:totable())
    assert.equal(0, gpu.zeros_like(gpu.full({}, 3)).ndim)
    assert.equal("0,4", shape(gpu.ones_like(gpu.zeros(0, 4))))
  end)
end)

describe("arange", function()
  it("follows NumPy: half-open, integer args give int64", function()
    local x = gpu.arange(5)
    assert.equal("int64", x.dtype); assert.same({0, 1, 2, 3, 4}, x:totable())
    assert.same({2, 3, 4}, gpu.arange(2, 5):totable())
    assert.same({1, 4, 7}, gpu.arange(1, 10, 3):totable())
    assert.same({1, 4, 7, 10}, gpu.arange(1, 11, 3):totable())
  end)

  it("float arguments give float32", function()
    local x = gpu.arange(0, 1, 0.25)
    assert.equal("float32", x.dtype); assert.same({0, 0.25, 0.5, 0.75}, x:totable())
    assert.equal("float32", gpu.arange(3.0).dtype)
    assert.equal(3, gpu.arange(3.0).size)
    h.assert_close(gpu.arange(0, 1, 0.1), {0, .1, .2, .3, .4, .5, .6, .7, .8, .9}, 1e-6)
    assert.equal(10, gpu.arange(0, 1, 0.1).size)
  end)

  it("handles negative steps and empty ranges", function()
    assert.same({10, 7, 4, 1}, gpu.arange(10, 0, -3):totable())
    assert.same({5, 4, 3, 2, 1}, gpu.arange(5, 0, -1):totable())
    assert.equal(0, gpu.arange(0).size)
    assert.equal(0, gpu.arange(5, 1).size)
    assert.equal(0, gpu.arange(1, 5, -1).size)
    assert.equal(0, gpu.arange(-3).size)
    assert.same({-3, -2, -1}, gpu.arange(-3, 0):totable())
    h.assert_close(gpu.arange(1, 0, -0.5), {1, 0.5})
  end)

  it("takes options", function()
    local x = gpu.arange(4, {dtype = "float64"})
    assert.equal("float64", x.dtype); assert.same({0, 1, 2, 3}, x:totable())
    assert.same({0, 2, 4}, gpu.arange(0, 5, 2, {dtype = "int32"}):totable())
    assert.same({false, true, true}, gpu.arange(3, {dtype = "bool"}):totable())
    assert.same({0, 0.5, 1, 1.5}, gpu.arange(0, 2, 0.5, {dtype = "float16"}):totable())
  end)

  it("keeps large int64 values exact", function()
    local big = (1 << 53)
    local x = gpu.arange(big, big + 3)
    assert.same({big, big + 1, big + 2}, x:totable())
  end)
end)

describe("linspace", function()
  it("includes the end point exactly", function()
    assert.same({0, 0.25, 0.5, 0.75, 1}, gpu.linspace(0, 1, 5):totable())
    local x = gpu.linspace(0, 0.3, 7, {dtype = "float64"})
    assert.equal(0.3, x[7]); assert.equal(0, x[1])
    local y = gpu.linspace(1, 0.1, 4, {dtype = "float64"})
    assert.equal(0.1, y[4])
    h.assert_close(y, {1, 0.7, 0.4, 0.1}, 1e-12)
  end)

  it("defaults to 50 float32 samples; handles 0 and 1", function()
    local x = gpu.linspace(0, 49)
    assert.equal(50, x.size); assert.equal("float32", x.dtype); assert.equal(49, x[50]); assert.equal(1, x[2])
    assert.equal(0, gpu.linspace(0, 1, 0).size)
    assert.same({3}, gpu.linspace(3, 7, 1):totable())
    assert.same({3, 7}, gpu.linspace(3, 7, 2):totable())
    assert.same({5, 4, 3}, gpu.linspace(5, 3, 3):totable())
    assert.same({0, 2, 5}, gpu.linspace(0, 5, 3, {dtype = "int32"}):totable())
  end)
end)

describe("eye", function()
  it("square, rectangular and offset diagonals", function()
    assert.same({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, gpu.eye(3):totable())
    assert.equal("float32", gpu.eye(2).dtype)
    assert.same({{1, 0, 0, 0}, {0, 1, 0, 0}}, gpu.eye(2, 4):totable())
    assert.same({{1, 0}, {0, 1}, {0, 0}}, gpu.eye(3, 2):totable())
    assert.same({{0, 1, 0}, {0, 0, 1}, {0, 0, 0}}, gpu.eye(3, {k = 1}):totable())
    assert.same({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}, gpu.eye(3, 3, {k = -1}):totable())
    assert.same({{0, 0}, {0, 0}}, gpu.eye(2, {k = 5}):totable())
    assert.same({{0, 0}, {0, 0}}, gpu.eye(2, {k = -2}):totable())
    assert.same({{true, false}, {false, true}}, gpu.eye(2, {dtype = "bool"}):totable())
    assert.equal("int64", gpu.eye(2, {dtype = "int64"}).dtype)
    assert.equal("0,0", shape(gpu.eye(0)))
    assert.equal("2,0", shape(gpu.eye(2, 0)))
  end)
end)

describe("gpu.array", function()
  it("from nested tables of numbers: float32", function()
    local x = gpu.array{{1, 2, 3}, {4, 5, 6}}
    assert.equal("float32", x.dtype); assert.equal("2,3", shape(x))
    assert.same({{1, 2, 3}, {4, 5, 6}}, x:totable())
    local y = gpu.array{{{1}, {2}}, {{3}, {4}}}
    assert.equal("2,2,1", shape(y)); assert.equal(4, y[{2, 2, 1}])
    assert.equal("float32", gpu.array{1.5, 2}.dtype)
  end)

  it("from booleans: bool", function()
    local x = gpu.array{{true, false}, {false, true}}
    assert.equal("bool", x.dtype)
    assert.same({{true, false}, {false, true}}, x:totable())
    assert.equal(true, x[{1, 1}]); assert.equal(false, x[{1, 2}])
  end)

  it("with a dtype converts; mixes of numbers and booleans are allowed", function()
    assert.same({1, 0, 3}, gpu.array({true, false, 3}, {dtype = "int32"}):totable())
    assert.same({true, false, true}, gpu.array({1, 0, -2.5}, {dtype = "bool"}):totable())
    for _, dt in ipairs(DTYPES) do
      local x = gpu.array({0, 1}, {dtype = dt})
      assert.equal(dt, x.dtype)
      if dt == "bool" then assert.same({false, true}, x:totable())
      elseif dt:find("^complex") then assert.same({gpu.complex(0, 0), gpu.complex(1, 0)}, x:totable())
      else assert.same({0, 1}, x:totable()) end
    end
  end)

  it("from a number or a boolean: 0-d", function()
    local x = gpu.array(3.5)
    assert.equal(0, x.ndim); assert.equal("float32", x.dtype); assert.equal(3.5, x:item())
    assert.equal(7, gpu.array(7, {dtype = "int32"}):item())
    assert.equal("bool", gpu.array(true).dtype); assert.equal(true, gpu.array(true):item())
  end)

  it("from an empty table: shape (0,)", function()
    local x = gpu.array{}
    assert.equal("0", shape(x)); assert.equal("float32", x.dtype)
  end)

  it("from an array: a copy that does not share memory", function()
    local a = gpu.arange(4)
    local b = gpu.array(a)
    assert.equal("int64", b.dtype); assert.same({0, 1, 2, 3}, b:totable())
    b[1] = 99
    assert.equal(0, a[1])
    local c = gpu.array(a, {dtype = "float64"})
    assert.equal("float64", c.dtype); assert.same({0, 1, 2, 3}, c:totable())
    local t = gpu.array(gpu.arange(6):reshape(2, 3).T)
    assert.same({{0, 3}, {1, 4}, {2, 5}}, t:totable()); assert.is_true(t:is_contiguous())
  end)
end)

describe("float16 / bfloat16 round trips", function()
  it("float16 values", function()
    local x = gpu.array({0.1, 65504, 1e-8, 6e-8, 1/0, -1/0, 0/0, 65520, 1/3, -2}, {dtype = "float16"})
    local t = x:totable()
    assert.equal(0.0999755859375, t[1])
    assert.equal(65504, t[2])
    assert.equal(0, t[3])                     -- below half the smallest subnormal
    assert.equal(2^-24, t[4])                 -- rounds to the smallest subnormal
    assert.equal(math.huge, t[5]); assert.equal(-math.huge, t[6])
    assert.is_true(t[7] ~= t[7])
    assert.equal(math.huge, t[8])             -- overflows
    assert.equal(0.333251953125, t[9])
    assert.equal(-2, t[10])
  end)

  it("bfloat16 values", function()
    local x = gpu.array({0.1, 65504, 1e-8, 1/0, 0/0, 1/3, 3e38}, {dtype = "bfloat16"})
    local t = x:totable()
    assert.equal(0.10009765625, t[1])
    assert.equal(65536, t[2])
    h.assert_close(t[3], 1e-8, 1e-2); assert.is_true(t[3] > 0)
    assert.equal(math.huge, t[4])
    assert.is_true(t[5] ~= t[5])
    assert.equal(0.333984375, t[6])
    h.assert_close(t[7], 3e38, 1e-2)
  end)

  it("through astype from float32 and back", function()
    local f = gpu.array({0.1, 1/3, 1e-8})
    assert.equal(0.0999755859375, f:astype("float16")[1])
    assert.equal(0.333984375, f:astype("bfloat16")[2])
    assert.equal(0.333251953125, f:astype("float16"):astype("float64")[2])
  end)
end)

describe("int64 precision", function()
  it("keeps 2^53+1 exact", function()
    local v = (1 << 53) + 1
    local x = gpu.array({v, -v, math.maxinteger, math.mininteger}, {dtype = "int64"})
    assert.equal(v, x[1]); assert.equal(-v, x[2])
    assert.equal(math.maxinteger, x[3]); assert.equal(math.mininteger, x[4])
    assert.equal(v, gpu.full(1, v, {dtype = "int64"})[1])
    assert.equal(v, x:copy()[1])
    assert.equal(v, x:totable()[1])
    local y = gpu.zeros(1, {dtype = "int64"}); y[1] = v
    assert.equal(v, y[1])
    assert.equal(v, gpu.array(v, {dtype = "int64"}):item())
  end)
end)
