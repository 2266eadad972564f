-- view_spec.lua — reshape/view/transpose/permute/squeeze/unsqueeze/expand/flatten and
-- the copies: contiguous, copy, clone, astype, to, totable, item.
local h = require "spec.helper"
local gpu = h.gpu

local function shape(x) return table.concat(x.shape, ",") end
local DTYPES = { "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool" }

describe("reshape", function()
  it("is a view of a contiguous array (writes show in the base)", function()
    local x = gpu.arange(6)
    local r = x:reshape(2, 3)
    assert.equal("2,3", shape(r)); assert.same({{0, 1, 2}, {3, 4, 5}}, r:totable())
    r[{2, 1}] = 30
    assert.equal(30, x[4])
    local r2 = gpu.reshape(x, {3, 2}); r2[{1, 2}] = 10
    assert.equal(10, x[2])
  end)

  it("infers one -1", function()
    local x = gpu.arange(12)
    assert.equal("3,4", shape(x:reshape(3, -1)))
    assert.equal("2,2,3", shape(x:reshape(2, -1, 3)))
    assert.equal("12", shape(x:reshape(-1)))
    assert.equal("0,5", shape(gpu.zeros(0):reshape(-1, 5)))
  end)

  it("copies when the strides do not allow a view", function()
    local m = gpu.arange(6):reshape(2, 3)
    local flat = m.T:reshape(6)
    assert.same({0, 3, 1, 4, 2, 5}, flat:totable())
    flat[1] = 99
    assert.equal(0, m[{1, 1}])
  end)

  it("views a sliced array when the sliced axes stay whole", function()
    local m = gpu.arange(24):reshape(4, 6)
    local rows = m[{{2, 3}}]                          -- contiguous block
    local r = rows:reshape(3, 4); r[{1, 1}] = -1
    assert.equal(-1, m[{2, 1}])
    local cols = m[{":", {1, 6, 2}}]                  -- strided columns: splitting is fine
    local c = cols:reshape(4, 3, 1); c[{2, 1, 1}] = -2
    assert.equal(-2, m[{2, 1}])
  end)

  it("to and from 0-d", function()
    local s = gpu.array({7}):reshape({})
    assert.equal(0, s.ndim); assert.equal(7, s:item())
    assert.equal("1,1", shape(gpu.array(3):reshape(1, 1)))
  end)
end)

describe("view", function()
  it("never copies", function()
    local x = gpu.arange(6)
    local v = x:view(3, 2); v[{3, 2}] = 50
    assert.equal(50, x[6])
    local ok, err = pcall(function() return x:reshape(2, 3).T:view(6) end)
    assert.is_false(ok); assert.matches("copy", err)
  end)
end)

describe("transpose, permute, T", function()
  it("swap axes as views", function()
    local m = gpu.arange(6):reshape(2, 3)
    local t = m.T
    assert.equal("3,2", shape(t)); assert.same({{0, 3}, {1, 4}, {2, 5}}, t:totable())
    assert.is_false(t:is_contiguous())
    t[{3, 1}] = 20
    assert.equal(20, m[{1, 3}])
    assert.same(t:totable(), m:transpose():totable())
    assert.same(t:totable(), gpu.transpose(m, 1, 2):totable())
    local c = gpu.arange(24):reshape(2, 3, 4)
    assert.equal("4,3,2", shape(c.T))
    assert.equal("2,4,3", shape(c:transpose(2, 3)))
    assert.equal("4,3,2", shape(c:transpose(-1, 1):transpose(2, 3):transpose(2, 3)))
    assert.equal(c[{2, 3, 4}], c:transpose(1, 3)[{4, 3, 2}])
    assert.equal("3", shape(gpu.arange(3).T))
  end)

  it("permute takes varargs or a table, negatives allowed", function()
    local c = gpu.arange(24):reshape(2, 3, 4)
    local p = c:permute(3, 1, 2)
    assert.equal("4,2,3", shape(p))
    assert.equal(c[{2, 1, 3}], p[{3, 2, 1}])
    assert.equal("4,2,3", shape(c:permute({-1, 1, 2})))
    p[{1, 1, 1}] = -5
    assert.equal(-5, c[{1, 1, 1}])
  end)
end)

describe("squeeze, unsqueeze, expand, flatten", function()
  it("squeeze drops size-1 axes (all or one)", function()
    local x = gpu.zeros(1, 3, 1, 2)
    assert.equal("3,2", shape(x:squeeze()))
    assert.equal("3,1,2", shape(x:squeeze(1)))
    assert.equal("1,3,2", shape(x:squeeze(-2)))
    assert.equal(0, gpu.zeros(1, 1):squeeze().ndim)
    local b = gpu.arange(3):reshape(1, 3); local s = b:squeeze(); s[1] = 9
    assert.equal(9, b[{1, 1}])
  end)

  it("unsqueeze adds an axis at the given position of the result", function()
    local x = gpu.arange(6):reshape(2, 3)
    assert.equal("1,2,3", shape(x:unsqueeze(1)))
    assert.equal("2,1,3", shape(x:unsqueeze(2)))
    assert.equal("2,3,1", shape(x:unsqueeze(3)))
    assert.equal("2,3,1", shape(x:unsqueeze(-1)))
    assert.equal("1,2,3", shape(x:unsqueeze(-3)))
    assert.equal("1", shape(gpu.array(5):unsqueeze(1)))
    local u = x:unsqueeze(2); u[{2, 1, 3}] = 77
    assert.equal(77, x[{2, 3}])
    assert.same({{{0, 1, 2}}, {{3, 4, 77}}}, u:totable())
  end)

  it("expand broadcasts with zero strides", function()
    local x = gpu.arange(3)
    local e = x:expand(2, 3)
    assert.same({{0, 1, 2}, {0, 1, 2}}, e:totable())
    local col = gpu.arange(2):reshape(2, 1)
    assert.same({{0, 0, 0}, {1, 1, 1}}, col:expand(2, 3):totable())
    assert.same({{0, 0}, {1, 1}}, col:expand({-1, 2}):totable())
    assert.equal("4,2,3", shape(col:expand(4, 2, 3)))
    assert.same({{5, 5}}, gpu.array(5):expand(1, 2):totable())
    x[2] = 10
    assert.equal(10, e[{2, 2}])
    assert.is_false(e:is_contiguous())
    assert.equal("2,0", shape(gpu.zeros(2, 1):expand(2, 0)))
  end)

  it("flatten is 1-D, a view when possible", function()
    local m = gpu.arange(6):reshape(2, 3)
    local f = m:flatten(); f[6] = 60
    assert.equal(60, m[{2, 3}])
    assert.same({0, 3, 1, 4, 2, 60}, m.T:flatten():totable())
    assert.equal("1", shape(gpu.array(4):flatten()))
  end)
end)

describe("contiguous, copy, clone", function()
  it("contiguous returns the array itself when already contiguous, else a copy", function()
    local m = gpu.arange(6):reshape(2, 3)
    assert.equal(m, m:contiguous())
    local c = m.T:contiguous()
    assert.is_true(c:is_contiguous()); assert.same({{0, 3}, {1, 4}, {2, 5}}, c:totable())
    c[{1, 1}] = 9; assert.equal(0, m[{1, 1}])
  end)

  it("copy and clone never share", function()
    local m = gpu.arange(6):reshape(2, 3)
    for _, c in ipairs{ m:copy(), m:clone(), gpu.copy(m), m[{":", {1, 3, 2}}]:copy() } do
      c[{1, 1}] = 42
      assert.equal(0, m[{1, 1}])
      assert.is_true(c:is_contiguous())
    end
    assert.same({{0, 2}, {3, 5}}, m[{":", {1, 3, 2}}]:copy():totable())
  end)
end)

describe("astype", function()
  local vals = { 0, 1, 2, 3 }
  it("every dtype pair on small values", function()
    for _, from in ipairs(DTYPES) do
      for _, to in ipairs(DTYPES) do
        local x = gpu.array(vals, {dtype = from})
        local y = x:astype(to)
        assert.equal(to, y.dtype)
        local want
        if from == "bool" then want = to == "bool" and {false, true, true, true} or {0, 1, 1, 1}
        elseif to == "bool" then want = {false, true, true, true}
        else want = vals end
        assert.same(want, y:totable(), from .. "->" .. to)
      end
    end
  end)

  it("is always a new array", function()
    local x = gpu.arange(3)
    local y = x:astype("int64"); y[1] = 5
    assert.equal(0, x[1])
  end)

  it("float to int truncates toward zero and saturates; NaN gives 0", function()
    local f = gpu.array({0/0, 1e20, -1e20, -5, 2.7, -2.7, 300, 1/0}, {dtype = "float64"})
    assert.same({0, 2147483647, -2147483648, -5, 2, -2, 300, 2147483647}, f:astype("int32"):totable())
    assert.same({0, math.maxinteger, math.mininteger, -5, 2, -2, 300, math.maxinteger}, f:astype("int64"):totable())
    assert.same({0, 255, 0, 0, 2, 0, 255, 255}, f:astype("uint8"):totable())
    assert.same({true, true, true, true, true, true, true, true}, f:astype("bool"):totable())
    assert.same({false}, gpu.array({0.0}):astype("bool"):totable())
    for _, from in ipairs{ "float32", "float16", "bfloat16" } do
      local g = gpu.array({0/0, -5, 2.5, 1e30}, {dtype = from})
      assert.same({0, 0, 2, 255}, g:astype("uint8"):totable(), from)
      assert.same({0, -5, 2, 2147483647}, g:astype("int32"):totable(), from)
    end
  end)

  it("int to narrower int wraps, as NumPy's astype", function()
    local x = gpu.array({300, -1, 2^40}, {dtype = "int64"})
    assert.same({44, 255, 0}, x:astype("uint8"):totable())
    assert.same({300, -1, 0}, x:astype("int32"):totable())
  end)

  it("works on views and 0-d arrays", function()
    local m = gpu.arange(6):reshape(2, 3)
    assert.same({{0, 3}, {1, 4}, {2, 5}}, m.T:astype("float64"):totable())
    assert.equal(2.0, gpu.array(2, {dtype = "int32"}):astype("float16"):item())
  end)
end)

describe("to, cpu, totable, item, is_contiguous", function()
  it("to('cpu') and cpu() of a cpu array return it", function()
    local x = gpu.arange(3, {device = "cpu"})
    assert.equal(x, x:to("cpu")); assert.equal(x, x:cpu())
    local y = x:to({dtype = "float64"})
    assert.equal("float64", y.dtype); assert.same({0, 1, 2}, y:totable())
    assert.equal("cpu", x:to({device = "cpu"}).device)
  end)

  it("totable gives nested tables; a 0-d array its value", function()
    assert.same({{{0, 1}}, {{2, 3}}}, gpu.arange(4):reshape(2, 1, 2):totable())
    assert.equal(3, gpu.array(3, {dtype = "int64"}):totable())
    assert.same({{0, 2}, {1, 3}}, gpu.arange(4):reshape(2, 2).T:totable())
    assert.same({3, 2, 1}, gpu.arange(1, 4)[{{nil, nil, -1}}]:totable())
    assert.same({}, gpu.zeros(0):totable())
  end)

  it("item of one-element arrays of any shape", function()
    assert.equal(4, gpu.full({1, 1, 1}, 4):item())
    assert.equal(2, gpu.arange(3)[{{3, 3}}]:item())
  end)

  it("is_contiguous follows the strides", function()
    local m = gpu.arange(12):reshape(3, 4)
    assert.is_true(m:is_contiguous())
    assert.is_true(m[{{2, 3}}]:is_contiguous())
    assert.is_false(m[{":", {1, 2}}]:is_contiguous())
    assert.is_false(m[{{nil, nil, -1}}]:is_contiguous())
    assert.is_false(m[{":", 2}]:is_contiguous())
    assert.is_true(gpu.zeros(3, 1).T:is_contiguous())      -- size-1 axes do not count
    assert.is_true(gpu.zeros(0, 3).T:is_contiguous())      -- nor do empty arrays
  end)
end)

describe("large strided copies (tiled transpose path)", function()
  it("copies transposed 2-D and 3-D arrays of awkward sizes exactly, converting dtypes", function()
    local m = gpu.arange(70 * 45):reshape(70, 45)           -- int64, not multiples of 32
    local t = m.T:contiguous()
    assert.same({ 45, 70 }, t.shape)
    for _, ij in ipairs { { 1, 1 }, { 45, 70 }, { 33, 2 }, { 2, 33 }, { 45, 1 }, { 17, 69 } } do
      assert.equal(m[{ ij[2], ij[1] }], t[{ ij[1], ij[2] }])
    end
    local f = m.T:astype("float32")                         -- conversion on the tiled path
    assert.equal("float32", f.dtype)
    assert.equal((33 - 1) + (2 - 1) * 45 + 0.0, f[{ 33, 2 }])
    local c = gpu.arange(3 * 40 * 50):reshape(3, 40, 50)
    local p = c:permute(1, 3, 2):contiguous()               -- outer axis kept, last two swapped
    assert.same({ 3, 50, 40 }, p.shape)
    assert.equal(c[{ 3, 40, 50 }], p[{ 3, 50, 40 }])
    assert.equal(c[{ 2, 7, 33 }], p[{ 2, 33, 7 }])
  end)

  it("copies a large contiguous block on both threads", function()
    local x = gpu.arange(3000000, { dtype = "int32" })
    local y = x:copy()
    assert.equal(1, y[2]); assert.equal(2999999, y[-1]); assert.equal(1500000, y[1500001])
  end)
end)
