-- flat_spec.lua — the flat elementwise path (src/ops/elementwise.c's flat plans): a small
-- call on C-contiguous arrays of one shape and dtype skips the general rules and walk and
-- runs the backend's row kernel directly. It must give the same bits, dtype and shape as
-- the general path, which the same values take when one operand is a strided view; and
-- every case it does not take (promotion, broadcasting, bool logic, integer division,
-- casts, sizes past GL_FLAT_MAX) must still go the general way.
local h = require "spec.helper"
local gpu = h.gpu

local values = h.values

-- the same values as a strided (non-contiguous) view: the general path's operand
local function strided(x)
  local s = gpu.stack({ x, x }, x.ndim + 1)
  local key = {}
  for i = 1, x.ndim do key[i] = ":" end
  key[x.ndim + 1] = 1
  local v = s[key]
  assert(not v:is_contiguous())
  return v
end

-- fn(x, ...) by the general path: x strided; an array of one element is contiguous in any
-- layout, so it runs doubled and the first element of the result is kept
local function general(fn, x, ...)
  if x.size ~= 1 then return fn(strided(x), ...) end
  local rest = table.pack(...)
  for i = 1, rest.n do
    if type(rest[i]) == "userdata" then rest[i] = gpu.concat({ rest[i]:reshape(-1), rest[i]:reshape(-1) }) end
  end
  local r = fn(strided(gpu.concat({ x:reshape(-1), x:reshape(-1) })), table.unpack(rest, 1, rest.n))
  return r[{ { 1, 1 } }]:reshape(x.shape)
end

local function same_bits(what, got, want)
  assert.equal(want.dtype, got.dtype, what .. ": dtype")
  assert.same(want.shape, got.shape, what .. ": shape")
  local g, w = got:reshape(-1):totable(), want:reshape(-1):totable()
  for i = 1, #w do
    local a, b = g[i], w[i]
    local ok = a == b or (a ~= a and b ~= b)
    if type(a) == "number" and a == 0 and b == 0 then ok = 1 / a == 1 / b end   -- signed zeros
    assert(ok, what .. ": element " .. i .. ": " .. tostring(a) .. " against " .. tostring(b))
  end
end

-- every elementwise op and dtype C has (kernels/elem_ops.h, kernels/dtypes.h)
local unops, binops = gpu._ops.unary, gpu._ops.binary
local dtypes = {}
for _, d in ipairs(gpu._dtypes) do dtypes[#dtypes + 1] = d.name end

describe("flat elementwise path", function()
  -- fn(...) by the flat path and by the general one: both fail alike, or agree bit for bit
  local function check(w, fn, ...)
    local ok1, flat = pcall(fn, ...)
    local ok2, gen = pcall(general, fn, ...)
    assert(ok1 == ok2, w .. ": " .. tostring(flat) .. " / " .. tostring(gen))
    if ok1 then same_bits(w, flat, gen)
    else assert.equal(tostring(gen):match("([^:]*)$"), tostring(flat):match("([^:]*)$"), w) end
  end

  it("binary ops: the same bits, dtype and shape as the general path, or the same refusal", function()
    for _, dt in ipairs(dtypes) do
      for _, n in ipairs{ 1, 7, 100, 4096 } do
        local a, b = values(dt, n, 1), values(dt, n, 2)
        if dt:match("int") and dt ~= "uint8" then b = b + (b:eq(0)):astype(dt) end   -- no 0 divisors
        for _, op in ipairs(binops) do check(op .. " " .. dt .. " n=" .. n, gpu[op], a, b) end
      end
    end
  end)

  it("unary ops: the same bits, dtype and shape as the general path, or the same refusal", function()
    for _, dt in ipairs(dtypes) do
      for _, n in ipairs{ 1, 100, 4096 } do
        local x = values(dt, n, 3)
        for _, op in ipairs(unops) do check(op .. " " .. dt .. " n=" .. n, gpu[op], x) end
      end
    end
  end)

  it("operators and shapes: 0-d, empty, 2-d, an array with itself, views with an offset", function()
    local m = values("float32", 12, 1):reshape(3, 4)
    same_bits("2-d", m + m * 2, strided(m) + m * 2)
    same_bits("itself", m * m, strided(m) * m)
    local s = gpu.array(2.5, { dtype = "float64" })
    same_bits("0-d", s / s, general(gpu.div, s, s))
    local e = gpu.zeros(0, 3)
    assert.same({ 0, 3 }, (e - e).shape)
    local big = values("float64", 200, 4)
    local v = big[{ { 11, 110 } }]                      -- contiguous, offset 10
    assert(v:is_contiguous())
    same_bits("offset view", v - big[{ { 51, 150 } }], strided(v) - big[{ { 51, 150 } }])
    same_bits("operators", -(v ^ 2) % 3, -(strided(v) ^ 2) % 3)
  end)

  it("cases it must not take still follow the general rules", function()
    local f32, f64 = gpu.ones(4), gpu.ones(4, { dtype = "float64" })
    assert.equal("float64", (f32 + f64).dtype)                      -- promotion
    local i = gpu.arange(1, 5, { dtype = "int32" })
    assert.equal("float64", (i / i).dtype)                          -- integer true division
    local t = gpu.array({ true, false, true, false })
    assert.equal("bool", (t + t).dtype)                             -- bool arithmetic is logic
    assert.same({ true, false, true, false }, (t + t):totable())
    assert.same({ true, false, true, false }, (t * gpu.array({ true, true, true, false })):totable())
    assert.equal("float32", i:exp():astype("float32").dtype)
    assert.equal("float64", i:exp().dtype)                          -- int math casts
    assert.same({ 2, 3 }, (gpu.ones(2, 3) + gpu.ones(3)).shape)    -- broadcasting
    h.fails({ "add", "shapes (2,3) and (3,2)" }, function() return gpu.ones(2, 3) + gpu.ones(3, 2) end)
    h.fails({ "add", "shapes (6,) and (2,3)" }, function() return gpu.ones(6) + gpu.ones(2, 3) end)
    h.fails({ "negation of a bool array" }, function() return -t end)
    h.fails({ "bitwise_and", "integer or bool" }, function() return gpu.bitwise_and(f32, f32) end)
    local c = gpu.ones(4)
    c:close()
    h.fails({ "closed" }, function() return c + f32 end)
    h.fails({ "closed" }, function() return f32 + c end)
    -- past GL_FLAT_MAX the general (threaded) path runs: same values
    local big, bigb = values("float32", 4097, 1), values("float32", 4097, 2)
    same_bits("4097", big * bigb, strided(big) * bigb)
  end)

  it("records autograd through the flat path", function()
    local w = gpu.array({ 1, 2, 3 }, { dtype = "float64" }):requires_grad()
    local b = gpu.array({ 4, 5, 6 }, { dtype = "float64" })
    local y = (w * b + w):sum()
    y:backward()
    assert.same({ 5, 6, 7 }, w.grad:totable())
  end)
end)
