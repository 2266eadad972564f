-- spec/fuse_spec.lua — gpu.fuse: for every dtype, every fusable elementwise op
-- (elem_ops.h's list, as gpu._jit.unary / binary name them), with arrays, broadcasting and
-- Lua numbers, the fused function's results equal the unfused ops' bit for bit (dtype,
-- values, NaN in the same places); the final reductions; and what runs unfused (never
-- wrongly): unknown ops, a reduction used again, tracked inputs (autograd per op).
local h = require "spec.helper"
local gpu = h.gpu

local DTYPES = h.dtypes()

-- the same array: dtype, shape, values (NaN where the other has NaN), bit for bit unless
-- rel (the float math of the transcendental ops: the kernel's compiler may contract the
-- polynomials into fma where gpulua's build did not, or the reverse: a last-bit difference)
local function same(a, b, what, rel)
  assert(a.dtype == b.dtype, ("%s: dtype %s, unfused %s"):format(what, a.dtype, b.dtype))
  assert.same(b.shape, a.shape, what)
  if gpu._dtypes[a.dtype].kind == "complex" then a, b = gpu.view_as_real(a), gpu.view_as_real(b) end
  local fa, fb = h.flat(a), h.flat(b)
  for i = 1, #fb do
    local u, v = fa[i], fb[i]
    local near = rel and type(u) == "number" and math.abs(u - v) <= rel * math.abs(v)
    if not (u == v or (u ~= u and v ~= v) or near) then
      error(("%s: element %d is %s, unfused %s"):format(what, i, tostring(u), tostring(v)), 2)
    end
  end
end

local function sample(dt, shape)
  gpu.random.seed(7)
  local kind = gpu._dtypes[dt].kind
  if dt == "bool" then return gpu.rand(shape):lt(0.5) end
  if kind == "uint" then return gpu.random.randint(0, dt == "uint8" and 255 or 100, shape, { dtype = dt }) end
  if kind == "int" then return gpu.random.randint(-50, 50, shape, { dtype = dt }) end
  if kind == "complex" then                        -- parts as a float sample's, NaN and inf among them
    local part = sample(dt == "complex64" and "float32" or "float64", { 2, table.unpack(shape) })
    return gpu.view_as_complex(part:moveaxis(1, -1):contiguous())
  end
  local x = (gpu.randn(shape) * 3):astype(dt)
  local flat = x:reshape(-1)                     -- a view: NaN, inf and 0 among the values
  flat[1] = 0 / 0
  flat[2] = 1 / 0
  flat[3] = 0
  return x
end

-- the ops that run unfused on these operands (the others are refusals of gpulua's own)
local function working(names, args)
  local list = {}
  for _, name in ipairs(names) do
    if pcall(gpu[name], table.unpack(args)) then list[#list + 1] = name end
  end
  return list
end

local function sorted_keys(t)
  local k = {}
  for name in pairs(t) do k[#k + 1] = name end
  table.sort(k)
  return k
end

-- fused f over batches of at most 12 ops: each batch one kernel, each result compared
local ULP = { float32 = 3e-7, float64 = 5e-16, float16 = 1e-3, bfloat16 = 8e-3, complex64 = 3e-7, complex128 = 5e-16 }
local function check_batches(names, call, args, what)
  for first = 1, #names, 12 do
    local batch = { table.unpack(names, first, math.min(first + 11, #names)) }
    local fn = function(...)
      local out = {}
      for i, name in ipairs(batch) do out[i] = call(name, ...) end
      return table.unpack(out, 1, #batch)
    end
    local f = gpu.fuse(fn)
    local got = table.pack(f(table.unpack(args)))
    assert(f.stats.fused == 1, ("%s: ran unfused (%s)"):format(what, tostring(f.why)))
    local want = table.pack(fn(table.unpack(args)))
    for i, name in ipairs(batch) do
      local kind = gpu._jit.unary[name] or gpu._jit.binary[name]
      local rel = (kind == "UF" or kind == "BD" or name == "pow") and ULP[got[i].dtype] or nil
      same(got[i], want[i], ("%s %s"):format(what, name), rel)
    end
  end
end

describe("gpu.fuse on cpu", function()
  it("has a tolerance for every float and complex dtype", function()
    h.assert_covers_dtypes(ULP, "ULP", "float")
    h.assert_covers_dtypes(ULP, "ULP", "complex")
  end)
  for _, dt in ipairs(DTYPES) do
    it("fuses every unary op of " .. dt .. " with the unfused results", function()
      local x = sample(dt, { 3, 7 })
      local names = working(sorted_keys(gpu._jit.unary), { x })
      if dt == "bool" then   -- on bool only the predicates and logical_not fuse
        local keep = {}
        for _, n in ipairs(names) do
          if gpu._jit.unary[n] == "UP" or gpu._jit.unary[n] == "UL" then keep[#keep + 1] = n end
        end
        names = keep
      end
      assert(#names > 0)
      check_batches(names, function(name, a) return a[name](a) end, { x }, dt)
    end)

    it("fuses every binary op of " .. dt .. " (broadcast operands, Lua numbers) with the unfused results", function()
      local x, y = sample(dt, { 2, 3, 4 }), sample(dt, { 4 }):flip(1)
      local names = working(sorted_keys(gpu._jit.binary), { x, y })
      if dt == "bool" then
        local keep = {}
        for _, n in ipairs(names) do
          local k = gpu._jit.binary[n]
          if k == "BC" or k == "BL" then keep[#keep + 1] = n end
        end
        names = keep
      end
      check_batches(names, function(name, a, b) return gpu[name](a, b) end, { x, y }, dt)
      if dt ~= "bool" then
        local s = dt:find("float") and 2.5 or 3
        local with = working(names, { x, s })
        check_batches(with, function(name, a) return gpu[name](a, s) end, { x }, dt .. " with " .. s)
        check_batches(with, function(name, a) return gpu[name](s, a) end, { x }, s .. " with " .. dt)
      end
    end)
  end

  it("fuses operators, where, astype and mixed dtypes as the unfused ops promote", function()
    local a, b = sample("float32", { 4, 5 }), sample("float16", { 5 })
    local i, j = sample("int32", { 4, 5 }), sample("uint8", { 4, 1 })
    local fn = function(p, q, r, s)
      return (p * q + r) / 3 - s, -p % 2 ^ q, r // (s + 1), gpu.where(p:gt(q), p, r), (p + 1):astype("int32"),
        (r & 12) | (s ~ 3), r << 2, p:half() * 0.1, (p + q:sigmoid()):double()
    end
    local f = gpu.fuse(fn)
    local got = table.pack(f(a, b, i, j))
    assert.equal(1, f.stats.fused, f.why)
    local want = table.pack(fn(a, b, i, j))
    assert.equal(want.n, got.n)
    for k = 1, want.n do same(got[k], want[k], "result " .. k) end
  end)

  it("fuses a final reduction: sum, mean, prod, max, min over all, one axis, keepdims", function()
    for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
      local x, y = sample(dt, { 6, 50 }), sample(dt, { 50 })
      if dt:find("float") then x, y = x:nan_to_num():tanh():abs() * 3, y:nan_to_num():tanh() * 2 end
      for _, op in ipairs({ "sum", "mean", "prod", "max", "min" }) do
        for _, axis in ipairs({ false, 1, -1 }) do
          local fn = function(p, q)
            local e = p * 0.5 + q
            if op == "prod" then e = (p * 0 + 1) + q:tanh() * 0.001 end
            if axis then return e[op](e, axis, { keepdims = axis == -1 }) end
            return e[op](e)
          end
          if dt:find("int") then
            fn = function(p, q)
              local e = p * 2 + q
              if op == "prod" then e = p % 2 + 1 end
              if axis then return e[op](e, axis, { keepdims = axis == -1 }) end
              return e[op](e)
            end
          end
          local f = gpu.fuse(fn)
          local got, want = f(x, y), fn(x, y)
          local what = ("%s %s axis %s"):format(dt, op, tostring(axis))
          assert(f.stats.fused == 1, what .. ": " .. tostring(f.why))
          assert.equal(want.dtype, got.dtype, what)
          assert.same(want.shape, got.shape, what)
          if dt:find("int") and op ~= "mean" then same(got, want, what)
          else h.assert_close(got, want, dt == "float32" and 1e-4 or 1e-10) end
        end
      end
    end
  end)

  it("sees a changed upvalue (tracing runs at every call; Lua numbers are parameters)", function()
    local scale = 2
    local f = gpu.fuse(function(x) return x * scale + 1 end)
    local x = gpu.arange(4, { dtype = "float32" })
    assert.same({ 1, 3, 5, 7 }, f(x):totable())
    scale = 10
    assert.same({ 1, 11, 21, 31 }, f(x):totable())
    assert.equal(2, f.stats.fused)
  end)

  it("returns an argument returned as is, and keeps the unfused result of a closed-over array", function()
    local f = gpu.fuse(function(x, y) return x, x + y end)
    local a, b = gpu.ones(3), gpu.ones(3)
    local r1, r2 = f(a, b)
    assert.equal(a, r1)
    assert.same({ 2, 2, 2 }, r2:totable())
  end)

  it("runs unfused, with the unfused results, whatever it cannot fuse", function()
    local x, y = sample("float64", { 3, 3 }):nan_to_num(), sample("float64", { 3, 3 }):nan_to_num()
    local cases = {
      function(a, b) return a:matmul(b) + 1 end,                      -- not elementwise
      function(a) return a - a:mean() end,                            -- a reduction used again
      function(a, b) return (a + b):sum({ 1, 2 }) end,               -- several axes
      function(a) return a:sum():item() end,                          -- not an array result
      function(a, b) return a + 1, (a * b):sum() end,                 -- a reduction among several results
      function(a, b) return a + y end,                                -- an array that is not an argument
    }
    for k, fn in ipairs(cases) do
      local f = gpu.fuse(fn)
      local got, want = f(x, y), fn(x, y)
      assert.equal(0, f.stats.fused, "case " .. k)
      assert.equal(1, f.stats.unfused, "case " .. k)
      assert.is_string(f.why, "case " .. k)
      if type(want) == "number" then assert.equal(want, got) else same(got, want, "case " .. k) end
    end
    -- an error of the function itself is the unfused function's error
    local f = gpu.fuse(function(a) return a + gpu.ones(7) end)
    h.fails({ "(3,3)" }, f, x)
    -- gpu's module functions are restored after a trace
    local before = gpu.exp
    gpu.fuse(function(a) return gpu.exp(a):sum():item() end)(x)
    assert.equal(before, gpu.exp)
  end)

  it("runs unfused a function needing more kernel parameters than a kernel takes", function()
    local max = gpu._jit.max_args
    local x = sample("float64", { 3 }):nan_to_num()
    local function adds(n, tail)
      return function(a)
        local y = a
        for i = 1, n do y = y + i * 0.5 end
        return tail and y[tail](y) or y
      end
    end
    -- parameters: x, the Lua numbers, the result, and a mean's element count
    for tail, extra in pairs({ [false] = 2, sum = 2, mean = 3 }) do
      local over, fits = adds(max - extra + 1, tail), adds(max - extra, tail)
      local f, g = gpu.fuse(over), gpu.fuse(fits)
      same(f(x), over(x), "over " .. tostring(tail))
      assert.equal(0, f.stats.fused)
      assert.matches("more than " .. max .. " kernel parameters", f.why)
      same(g(x), fits(x), "fits " .. tostring(tail), 1e-15)
      assert.equal(1, g.stats.fused, g.why)
    end
  end)

  it("runs tracked inputs unfused, so autograd records each op", function()
    local x = gpu.array({ 1, 2, 3 }, { dtype = "float64" }):requires_grad()
    local f = gpu.fuse(function(a) return (a * a + a):sum() end)
    local y = f(x)
    assert.equal(0, f.stats.fused)
    y:backward()
    assert.same({ 3, 5, 7 }, x.grad:totable())
    gpu.no_grad(function()
      f(x)
    end)
    assert.equal(1, f.stats.fused)
  end)

  it("refuses what is not a function", function()
    h.fails({ "gpu.fuse", "function expected, got integer" }, gpu.fuse, 3)
    h.fails({ "gpu.fuse", "options table expected" }, gpu.fuse, function() end, 3)
  end)
end)
