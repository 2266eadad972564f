-- sort_spec.lua — sort, argsort, topk: stable, any axis, every dtype; NaN is larger than
-- every number (PyTorch's rule, the one max and argmax follow): last ascending, first
-- descending and in topk. Expected values worked out by hand (NumPy's stable sort
-- ascending; descending is PyTorch's stable descending sort).
local h = require "spec.helper"
local gpu = h.gpu

local function shape(x) return table.concat(x.shape, ",") end
local function errmsg(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end
local nan = 0 / 0

-- NaN compares unequal to itself: tables with "nan" in its places, for assert.same.
local function N(x)
  if type(x) == "userdata" then x = x:totable() end
  if type(x) == "table" then
    local t = {}
    for k, v in pairs(x) do t[k] = N(v) end
    return t
  end
  if x ~= x then return "nan" end
  return x
end

for _, dev in ipairs(h.devices()) do
  local function A(t, dt) return gpu.array(t, { dtype = dt or "float32", device = dev }) end

  describe("sort and argsort on " .. dev, function()
    it("sorts every dtype ascending and descending", function()
      for _, dt in ipairs(h.dtypes("uint", "int", "float")) do
        local x = A({ 3, 1, 2, 5, 0, 2 }, dt)
        local s = x:sort()
        assert.equal(dt, s.dtype)
        assert.same({ 0, 1, 2, 2, 3, 5 }, h.flat(s))
        assert.same({ 5, 3, 2, 2, 1, 0 }, h.flat(gpu.sort(x, { descending = true })))
        assert.same({ 5, 2, 3, 6, 1, 4 }, h.flat(x:argsort()))
        assert.same({ 4, 1, 3, 6, 2, 5 }, h.flat(x:argsort(-1, { descending = true })))   -- ties keep order
        assert.same({ 3, 1, 2, 5, 0, 2 }, h.flat(x))                                      -- input untouched
      end
      local b = A({ true, false, true, false }, "bool")
      assert.same({ false, false, true, true }, h.flat(b:sort()))
      assert.same({ 2, 4, 1, 3 }, h.flat(b:argsort()))
    end)

    it("sorts complex numbers in NumPy's order: NaN groups last, each by its parts", function()
      -- np.argsort(x, kind="stable") + 1 of these (NumPy 1.24): [R+Rj, R+nanj, nan+Rj, nan+nanj],
      -- each group by its real parts then its imaginary ones; -0 equals 0
      local t = { { 3, 1 }, { 1, nan }, { nan, 2 }, { 1, 2 }, { nan, nan }, { -0.0, 5 }, { 0, -1 }, { 1, -3 },
                  { nan, -7 }, { 2, nan }, { 1, 2 } }
      for _, dt in ipairs{ "float32", "float64" } do
        local x = gpu.view_as_complex(A(t, dt))
        local want = { 7, 6, 8, 4, 11, 1, 2, 10, 9, 3, 5 }
        assert.same(want, x:argsort():totable())
        local s = gpu.view_as_real(x:sort())
        for k, i in ipairs(want) do assert.same(N(t[i]), N(s[k])) end
        -- descending: the reverse order, ties still in their first order (PyTorch's stable sort)
        assert.same({ 5, 3, 9, 10, 2, 1, 4, 11, 8, 6, 7 }, x:argsort({ descending = true }):totable())
        -- along an axis of a 2-D array and a transposed view
        local m = gpu.view_as_complex(A({ { { 2, 1 }, { 1, 5 }, { 2, 0 } }, { { 0, 0 }, { nan, 1 }, { -1, 9 } } }, dt))
        assert.same({ { 2, 3, 1 }, { 3, 1, 2 } }, m:argsort():totable())
        assert.same({ { 2, 1 }, { 1, 2 }, { 2, 1 } }, m.T:argsort():totable())
        local v, i = gpu.topk(x, 2)
        assert.same({ 5, 3 }, i:totable())
        assert.same(2, #gpu.view_as_real(v):totable())
      end
    end)

    it("argsort is int64 and 1-based", function()
      local i = A{ 2, 1 }:argsort()
      assert.equal("int64", i.dtype); assert.same({ 2, 1 }, i:totable())
    end)

    it("puts NaN last ascending and first descending, stably", function()
      for _, dt in ipairs{ "float32", "float64", "float16", "bfloat16" } do
        local x = A({ 2, nan, -1, 2, 0, nan, 5 }, dt)
        assert.same({ 3, 5, 1, 4, 7, 2, 6 }, x:argsort():totable())
        assert.same({ 2, 6, 7, 1, 4, 5, 3 }, x:argsort({ descending = true }):totable())
        assert.same({ -1, 0, 2, 2, 5, "nan", "nan" }, N(x:sort()))
        assert.same({ "nan", "nan", 5, 2, 2, 0, -1 }, N(x:sort({ descending = true })))
      end
      local f = A({ nan, 1, -math.huge, math.huge }, "float16")
      assert.same({ -math.huge, 1, math.huge, "nan" }, N(f:sort()))
      assert.same({ "nan", math.huge, 1, -math.huge }, N(f:sort({ descending = true })))
      assert.same({ "nan", "nan" }, N(A{ nan, nan }:sort({ descending = true })))
      assert.same({ 1, 2 }, A{ nan, nan }:argsort({ descending = true }):totable())
    end)

    it("orders NaN the same way along any axis", function()
      local m = A({ { 3, nan, 1 }, { nan, 2, nan }, { 0, 5, 4 } }, "float64")
      assert.same({ { 1, 3, "nan" }, { 2, "nan", "nan" }, { 0, 4, 5 } }, N(m:sort(2)))
      assert.same({ { 3, 1, 2 }, { 2, 1, 3 }, { 1, 3, 2 } }, m:argsort(2):totable())
      assert.same({ { "nan", "nan", "nan" }, { 3, 5, 4 }, { 0, 2, 1 } }, N(m:sort(1, { descending = true })))
      assert.same({ { 2, 1, 2 }, { 1, 3, 3 }, { 3, 2, 1 } }, m:argsort(1, { descending = true }):totable())
      assert.same({ { 2, 1, 3 }, { 1, 3, 2 }, { 2, 3, 1 } }, m.T:argsort(-1, { descending = true }):totable())   -- strided lanes
    end)

    it("sorts along any axis, negative axes and non-contiguous inputs", function()
      local m = A({ { 3, 1, 2 }, { 0, 5, 4 } }, "int64")
      assert.same({ { 0, 1, 2 }, { 3, 5, 4 } }, m:sort(1):totable())
      assert.same({ { 2, 1, 1 }, { 1, 2, 2 } }, m:argsort(1):totable())
      assert.same({ { 1, 2, 3 }, { 0, 4, 5 } }, m:sort(-1):totable())
      assert.same({ { 2, 3, 1 }, { 1, 3, 2 } }, m:argsort(2):totable())
      assert.same({ { 0, 3 }, { 1, 5 }, { 2, 4 } }, m.T:sort():totable())       -- lanes are strided
      assert.same({ { 3, 0 }, { 5, 1 }, { 4, 2 } }, m.T:sort(-1, { descending = true }):totable())
      assert.same({ { 1, 2, 3 }, { 0, 4, 5 } }, m:flip(2):sort(2):totable())       -- negative strides
      assert.same({ { 2, 1, 3 }, { 3, 1, 2 } }, m:flip(2):argsort(2):totable())
      assert.same({ { 3, 1, 2 }, { 0, 5, 4 } }, m:totable())
    end)

    it("handles 0-size axes, 0-d arrays and long lanes", function()
      assert.equal("0,3", shape(gpu.zeros(0, 3, { device = dev }):sort(1)))
      assert.equal("3,0", shape(gpu.zeros(3, 0, { device = dev }):argsort()))
      assert.equal(7, gpu.array(7, { device = dev }):sort():item())
      -- a lane long enough to merge many runs, several lanes (threads)
      local n = 5000
      local x = gpu.arange(n, 0, -1, { dtype = "int32", device = dev }) % 7        -- n..1 mod 7
      local s = x:sort()
      local t = s:totable()
      for i = 2, n do assert(t[i - 1] <= t[i]) end
      local i = x:argsort():totable()
      local xt = x:totable()
      for k = 2, n do                                  -- stable: equal keys in increasing position
        assert(xt[i[k - 1]] < xt[i[k]] or (xt[i[k - 1]] == xt[i[k]] and i[k - 1] < i[k]))
      end
      local big = gpu.arange(40000, { dtype = "float32", device = dev }):reshape(40, 1000):flip(2)
      local bs = big:sort()
      assert.equal(2000, bs[{ 3, 1 }]); assert.equal(2999, bs[{ 3, -1 }])
    end)

    it("rejects bad axes and options", function()
      local x = A{ 1, 2 }
      assert.matches("axis 2", errmsg(gpu.sort, x, 2))
      assert.matches("sort", errmsg(gpu.sort, x, 2))
      assert.matches("unknown option 'desc'", errmsg(gpu.argsort, x, { desc = true }))
      assert.matches("boolean", errmsg(gpu.sort, x, -1, { descending = 1 }))
      assert.same({ 1, 2 }, x:totable())
    end)
  end)

  describe("max, min, argmax, argmin with NaN on " .. dev, function()
    it("give the NaN, and the position of the first one, as sort and topk rank it", function()
      for _, dt in ipairs{ "float32", "float64", "float16" } do
        local x = A({ 1, nan, 3, nan }, dt)
        assert.same({ "nan", "nan" }, N({ x:max():item(), x:min():item() }))
        assert.equal(2, x:argmax():item()); assert.equal(2, x:argmin():item())
        local m = A({ { 3, nan, 1 }, { nan, 2, nan }, { 0, 5, 4 } }, dt)
        assert.same({ "nan", "nan", 5 }, N(m:max(2))); assert.same({ "nan", "nan", 0 }, N(m:min(2)))
        assert.same({ "nan", "nan", "nan" }, N(m:max(1)))
        assert.same({ 2, 1, 2 }, m:argmax(2):totable()); assert.same({ 2, 1, 1 }, m:argmin(2):totable())
        assert.same({ 2, 1, 2 }, m:argmin(1):totable())
        local _, ti = m:topk(1, 2)
        assert.same(m:argmax(2):totable(), ti:reshape(3):totable())     -- one rule
      end
    end)
  end)

  describe("topk on " .. dev, function()
    it("returns the k largest (or smallest) with 1-based positions", function()
      local x = A{ 3, 1, 4, 1, 5, 9, 2, 6 }
      local v, i = x:topk(3)
      assert.same({ 9, 6, 5 }, v:totable()); assert.same({ 6, 8, 5 }, i:totable())
      assert.equal("int64", i.dtype); assert.equal("float32", v.dtype)
      v, i = gpu.topk(x, 2, { largest = false })
      assert.same({ 1, 1 }, v:totable()); assert.same({ 2, 4 }, i:totable())
      local m = A({ { 1, 8, 3 }, { 7, 2, 9 } }, "int32")
      v, i = m:topk(1, 1)
      assert.same({ { 7, 8, 9 } }, v:totable()); assert.same({ { 2, 1, 2 } }, i:totable())
      v, i = m:topk(0)
      assert.equal("2,0", shape(v)); assert.equal("2,0", shape(i))
      v, i = A{ 1, nan, 3 }:topk(1)
      assert.same({ "nan" }, N(v)); assert.same({ 2 }, i:totable())   -- NaN is the largest, as in max
    end)

    it("counts NaN as the largest, in 1-D and along an axis", function()
      for _, dt in ipairs{ "float32", "float64" } do
        local x = A({ 2, nan, -1, 2, 0, nan, 5 }, dt)
        local v, i = x:topk(3)
        assert.same({ "nan", "nan", 5 }, N(v)); assert.same({ 2, 6, 7 }, i:totable())
        v, i = x:topk(3, -1, { largest = false })
        assert.same({ -1, 0, 2 }, N(v)); assert.same({ 3, 5, 1 }, i:totable())
        v, i = x:topk(7, -1, { largest = false })
        assert.same({ -1, 0, 2, 2, 5, "nan", "nan" }, N(v)); assert.same({ 3, 5, 1, 4, 7, 2, 6 }, i:totable())
        local m = A({ { 3, nan, 1 }, { nan, 2, nan }, { 0, 5, 4 } }, dt)
        v, i = m:topk(2, 2)
        assert.same({ { "nan", 3 }, { "nan", "nan" }, { 5, 4 } }, N(v))
        assert.same({ { 2, 1 }, { 1, 3 }, { 2, 3 } }, i:totable())
        v, i = m:topk(2, 2, { largest = false })
        assert.same({ { 1, 3 }, { 2, "nan" }, { 0, 4 } }, N(v))
        assert.same({ { 3, 1 }, { 2, 1 }, { 1, 3 } }, i:totable())
        v, i = m:topk(1, 1)
        assert.same({ { "nan", "nan", "nan" } }, N(v)); assert.same({ { 2, 1, 2 } }, i:totable())
      end
    end)

    it("rejects k out of range and bad axes", function()
      local x = A{ 1, 2, 3 }
      local e = errmsg(gpu.topk, x, 4)
      assert.matches("k = 4", e); assert.matches("size 3", e); assert.matches("topk", e)
      assert.matches("k = %-1", errmsg(gpu.topk, x, -1))
      assert.matches("axis 2", errmsg(gpu.topk, x, 1, 2))
      assert.matches("unknown option", errmsg(gpu.topk, x, 1, { biggest = true }))
      assert.same({ 1, 2, 3 }, x:totable())
    end)
  end)
end

-- Long float32, int32 and uint32 lanes of values alone sort by buckets (cpu_sort.c: a
-- sample of the top 16 bits, one scatter, each bucket in cache); argsort keeps the radix
-- sort with positions, so x:take(x:argsort()) is the reference, bit for bit where it shows
-- (NaN last or first, the sign of zero). Lanes around the bucketed sort's least length, data
-- the sample misreads (the regions fill up: exact counts), data that stays with the radix
-- sort (few distinct values), strided lanes; one and two threads (child processes).
describe("the cpu's bucketed sort of long lanes", function()
  it("agrees with argsort's order, with one and two threads", function()
    local ran = h.threads_ok([[
      local fails = {}
      local function same(a, b, what)
        local an, bn = gpu.isnan(a), gpu.isnan(b)
        local ok = gpu.all(an:eq(bn)):item()
        local num = an:logical_not()
        ok = ok and gpu.all(gpu.where(num, a, 0):eq(gpu.where(num, b, 0))):item()
        if a.dtype == "float32" then ok = ok and gpu.all(gpu.signbit(a):eq(gpu.signbit(b))):item() end
        if not ok then fails[#fails + 1] = what end
      end
      local g = gpu.random.Generator(7)
      local f32 = { dtype = "float32" }
      for _, n in ipairs({ 65535, 65536, 65537, 100003, 300000 }) do
        local pats = {
          randn = function() return g:randn({ n }, f32) end,
          specials = function()      -- NaN, -0.0, +0.0, inf, -inf among numbers
            local x = g:randn({ n }, f32)
            local m = g:randint(0, 7, { n }, { dtype = "int64" })
            for v, s in pairs({ [0] = 0 / 0, [1] = -0.0, [2] = 0.0, [3] = math.huge, [4] = -math.huge }) do
              x = gpu.where(m:eq(v), s, x)
            end
            return x
          end,
          negnan = function()
            return gpu.where(g:randint(0, 2, { n }, { dtype = "int64" }):eq(0), -(0 / 0), g:randn({ n }, f32))
          end,
          unsampled = function()     -- every 32nd key near 0, the rest near 100
            local j = gpu.arange(n, { dtype = "int64" })
            return gpu.where((j % 32):eq(0), g:randn({ n }, f32), g:randn({ n }, f32) + 100)
          end,
          halves = function()        -- the threads' shares differ
            local x = g:randn({ n }, f32):abs()
            return gpu.concat({ -x[{ { 1, n // 2 } }], x[{ { n // 2 + 1, n } }] })
          end,
          sorted = function() return gpu.arange(n, f32) / 3 - 100 end,
          reversed = function() return gpu.arange(n, 0, -1, f32) end,
          equal = function() return gpu.full({ n }, 2.5, f32) end,
          few = function() return g:randint(0, 4, { n }, { dtype = "int64" }):astype("float32") end,
          wide = function() return g:rand({ n }, f32) * 1e6 end,
          i32 = function() return g:randint(-2000000000, 1999999999, { n }, { dtype = "int64" }):astype("int32") end,
          i32small = function() return g:randint(-50, 49, { n }, { dtype = "int64" }):astype("int32") end,
          u32 = function() return g:randint(0, 3999999999, { n }, { dtype = "int64" }):astype("uint32") end,
        }
        for name, make in pairs(pats) do
          local x = make()
          for _, desc in ipairs({ false, true }) do
            same(gpu.sort(x, { descending = desc }), x:take(x:argsort(-1, { descending = desc })),
              ("%s n=%d descending=%s"):format(name, n, tostring(desc)))
          end
        end
        local x2 = g:randn({ n, 2 }, f32)
        local c = x2[{ ":", 1 }]                   -- a strided lane
        same(c:sort(), c:take(c:argsort()), "strided n=" .. n)
        same(x2:sort(1), gpu.take_along_axis(x2, x2:argsort(1), 1), "two lanes n=" .. n)
      end
      io.write(#fails == 0 and "ok" or table.concat(fails, "\n"))
    ]])
    if not ran then return pending("needs GPULUA_BIN (set by make test)") end
  end)
end)
