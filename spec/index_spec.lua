-- index_spec.lua — element access, slicing, views sharing memory, assignment.
local h = require "spec.helper"
local gpu = h.gpu

local function shape(x) return table.concat(x.shape, ",") end
local function m34() return gpu.arange(1, 13):reshape(3, 4) end   -- {{1..4},{5..8},{9..12}}

describe("reading", function()
  it("x[i] of a 1-D array is a Lua value of the dtype's kind", function()
    local x = gpu.arange(10, 15)
    assert.equal(10, x[1]); assert.equal(14, x[5]); assert.equal("integer", math.type(x[1]))
    assert.equal(14, x[-1]); assert.equal(10, x[-5])
    local f = gpu.array{1.5, 2.5}
    assert.equal(2.5, f[2]); assert.equal("float", math.type(f[1]))
    local b = gpu.array{true, false}
    assert.equal(true, b[1]); assert.equal(false, b[-1])
  end)

  it("x[i] of an N-D array is a view of the i-th sub-array", function()
    local m = m34()
    local r = m[2]
    assert.equal("userdata", type(r)); assert.equal("4", shape(r))
    assert.same({5, 6, 7, 8}, r:totable())
    assert.same({9, 10, 11, 12}, m[-1]:totable())
  end)

  it("x[{i, j}] is a number; partial integer keys are views", function()
    local m = m34()
    assert.equal(7, m[{2, 3}]); assert.equal(12, m[{-1, -1}]); assert.equal(1, m[{1, 1}])
    assert.equal(9, m[{-1, 1}])
    assert.same({5, 6, 7, 8}, m[{2}]:totable())
  end)

  it("ranges are inclusive, with steps, clamped like string.sub", function()
    local x = gpu.arange(1, 11)                       -- 1..10
    assert.same({2, 3, 4}, x[{{2, 4}}]:totable())
    assert.same({1, 3, 5, 7, 9}, x[{{1, 10, 2}}]:totable())
    assert.same({2, 5, 8}, x[{{2, -1, 3}}]:totable())
    assert.same({8, 9, 10}, x[{{-3, -1}}]:totable())
    assert.same({8, 9, 10}, x[{{8}}]:totable())        -- open end
    assert.same({1, 2, 3}, x[{{nil, 3}}]:totable())   -- open start
    assert.same({1, 2, 3}, x[{{-20, 3}}]:totable())
    assert.same({9, 10}, x[{{9, 30}}]:totable())
    assert.equal(0, x[{{3, 2}}].size)
    assert.equal(0, x[{{20, 30}}].size)
    assert.same({5}, x[{{5, 5}}]:totable())
  end)

  it("negative steps walk backwards", function()
    local x = gpu.arange(1, 11)
    assert.same({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, x[{{nil, nil, -1}}]:totable())
    assert.same({10, 8, 6, 4, 2}, x[{{-1, 1, -2}}]:totable())
    assert.same({10, 7, 4, 1}, x[{{10, 1, -3}}]:totable())
    assert.same({5, 4, 3}, x[{{5, 3, -1}}]:totable())
    assert.same({10, 9}, x[{{30, 9, -1}}]:totable())
    assert.equal(0, x[{{3, 5, -1}}].size)
  end)

  it('":" keeps an axis; mixed keys on 2-D', function()
    local m = m34()
    assert.same({2, 6, 10}, m[{":", 2}]:totable())
    assert.same({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}, m[{":", ":"}]:totable())
    assert.same({{2, 4}, {10, 12}}, m[{{1, 3, 2}, {2, 4, 2}}]:totable())
    assert.same({{4, 3, 2, 1}, {12, 11, 10, 9}}, m[{{1, 3, 2}, {-1, 1, -1}}]:totable())
    assert.same({{9, 10, 11, 12}, {5, 6, 7, 8}, {1, 2, 3, 4}}, m[{{nil, nil, -1}}]:totable())
    assert.same({7, 8}, m[{2, {3, 4}}]:totable())
    assert.equal("3,4", shape(m[":"]))
  end)

  it("3-D cases", function()
    local t = gpu.arange(24):reshape(2, 3, 4)
    assert.equal(23, t[{2, 3, 4}]); assert.equal(0, t[{1, 1, 1}]); assert.equal(17, t[{-1, 2, 2}])
    assert.equal("3,4", shape(t[2])); assert.equal("4", shape(t[{2, 1}]))
    assert.same({{1, 5, 9}, {13, 17, 21}}, t[{":", ":", 2}]:totable())
    assert.same({{4, 6}, {16, 18}}, t[{":", 2, {1, 3, 2}}]:totable())
    assert.same({{{20, 21, 22, 23}}, {{8, 9, 10, 11}}}, t[{{nil, nil, -1}, {3, 3}}]:totable())
    assert.same({13, 17}, t[2][{{1, 2}, 2}]:totable())
  end)

  it("#x is the length of the first axis", function()
    assert.equal(3, #m34()); assert.equal(5, #gpu.zeros(5)); assert.equal(0, #gpu.zeros(0, 3))
    assert.equal(4, #m34().T)
  end)

  it("0-d arrays compare with numbers through < and <=, and give item()", function()
    local s = gpu.array(5)
    assert.is_true(s < 6); assert.is_false(s < 5); assert.is_true(s <= 5); assert.is_false(s <= 4.5)
    assert.is_true(4 < s); assert.is_true(5 <= s); assert.is_false(6 <= s)
    assert.is_true(gpu.array(2) < gpu.array(3))
    assert.equal(5, s:item()); assert.equal(5, gpu.array(5, {dtype = "int64"}):item())
    assert.equal("integer", math.type(gpu.array(5, {dtype = "int32"}):item()))
    assert.equal(7, m34()[{2, {3, 3}}]:item())
    assert.is_true(m34()[{2, {3, 3}}] < 8)
    assert.equal(true, gpu.array(true):item())
  end)
end)

describe("views share memory", function()
  it("writes through a slice show in the base and the other way round", function()
    local m = m34()
    local col = m[{":", 2}]
    col[1] = 100
    assert.equal(100, m[{1, 2}])
    m[{3, 2}] = -1
    assert.equal(-1, col[3])
    local row = m[2]
    row[{{1, 4, 3}}] = 0
    assert.same({0, 6, 7, 0}, m[2]:totable())
    local rev = m[{{nil, nil, -1}, {nil, nil, -1}}]
    rev[{1, 1}] = 42
    assert.equal(42, m[{3, 4}])
  end)

  it("views keep the storage alive after the base is dropped", function()
    local v
    do local base = gpu.arange(6); v = base[{{2, 4}}] end
    collectgarbage(); collectgarbage()
    assert.same({1, 2, 3}, v:totable())
  end)
end)

describe("assignment", function()
  it("numbers and booleans, converted to the dtype", function()
    local x = gpu.zeros(4, {dtype = "int32"})
    x[1] = 7; x[-1] = 2.9; x[2] = true
    assert.same({7, 1, 0, 2}, x:totable())
    local b = gpu.zeros(3, {dtype = "bool"})
    b[2] = true; b[3] = 5
    assert.same({false, true, true}, b:totable())
    local f = gpu.zeros(2, 2)
    f[{2, 1}] = 1.5
    assert.same({{0, 0}, {1.5, 0}}, f:totable())
    f[1] = 3                                          -- a whole row
    assert.same({{3, 3}, {1.5, 0}}, f:totable())
    f[{":", 2}] = -1
    assert.same({{3, -1}, {1.5, -1}}, f:totable())
    f[":"] = 0
    assert.same({{0, 0}, {0, 0}}, f:totable())
  end)

  it("arrays with broadcasting and dtype conversion", function()
    local m = gpu.zeros(3, 4)
    m[{":", ":"}] = gpu.array{1, 2, 3, 4}
    assert.same({{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}}, m:totable())
    m[{":", {1, 2}}] = gpu.array{{10}, {20}, {30}}
    assert.same({{10, 10, 3, 4}, {20, 20, 3, 4}, {30, 30, 3, 4}}, m:totable())
    m[2] = gpu.arange(4)                             -- int64 into float32
    assert.same({0, 1, 2, 3}, m[2]:totable())
    m[{{1, 3, 2}, 4}] = gpu.array(9)                 -- 0-d broadcasts
    assert.same({9, 3, 9}, m[{":", 4}]:totable())
    local i = gpu.zeros(2, {dtype = "int32"}); i[":"] = gpu.array{1.9, -1.9}
    assert.same({1, -1}, i:totable())
  end)

  it("errors on shapes that do not broadcast and leaves the target intact", function()
    local m = m34()
    local ok, err = pcall(function() m[{":", ":"}] = gpu.array{1, 2, 3} end)
    assert.is_false(ok); assert.matches("broadcast", err)
    assert.same({1, 2, 3, 4}, m[1]:totable())
    ok = pcall(function() m[1] = gpu.zeros(2, 4) end)
    assert.is_false(ok)
    assert.same({5, 6, 7, 8}, m[2]:totable())
  end)

  it("overlapping self-assignment gives NumPy's result", function()
    local x = gpu.arange(1, 7)
    x[{{2, 5}}] = x[{{1, 4}}]
    assert.same({1, 1, 2, 3, 4, 6}, x:totable())
    x = gpu.arange(1, 7)
    x[{{1, 4}}] = x[{{2, 5}}]
    assert.same({2, 3, 4, 5, 5, 6}, x:totable())
    x = gpu.arange(1, 7)
    x[":"] = x[{{nil, nil, -1}}]
    assert.same({6, 5, 4, 3, 2, 1}, x:totable())
    local m = gpu.arange(1, 10):reshape(3, 3)
    m[":"] = m.T
    assert.same({{1, 4, 7}, {2, 5, 8}, {3, 6, 9}}, m:totable())
    local r = gpu.arange(1, 10):reshape(3, 3)
    r[{{2, 3}}] = r[{{1, 2}}]
    assert.same({{1, 2, 3}, {1, 2, 3}, {4, 5, 6}}, r:totable())
    local s = gpu.arange(1, 5)
    s[":"] = s[1]                                      -- a number read first
    assert.same({1, 1, 1, 1}, s:totable())
    local t = gpu.arange(1, 5)
    t[":"] = t[{{1, 1}}]                             -- a view of one element, broadcast
    assert.same({1, 1, 1, 1}, t:totable())
  end)

  it("3-D assignment through mixed keys", function()
    local t = gpu.zeros(2, 3, 4, {dtype = "int64"})
    t[{2, ":", {2, 4, 2}}] = 5
    t[{1, -1}] = gpu.arange(4)
    assert.same({{0, 5, 0, 5}, {0, 5, 0, 5}, {0, 5, 0, 5}}, t[2]:totable())
    assert.same({0, 1, 2, 3}, t[{1, 3}]:totable())
    assert.same({0, 0, 0, 0}, t[{1, 1}]:totable())
  end)

  it("empty selections are no-ops", function()
    local x = gpu.arange(3)
    x[{{3, 2}}] = 9
    x[{{3, 2}}] = gpu.zeros(0, {dtype = "int64"})
    assert.same({0, 1, 2}, x:totable())
  end)
end)
