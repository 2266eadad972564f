-- indexing_spec.lua — x[mask], x[idx], take/index/index_put_, concat/stack/split, tile,
-- repeat, flip, roll. Expected values are worked out by hand from NumPy's definitions.
local h = require "spec.helper"
local gpu = h.gpu

local function shape(x) return table.concat(x.shape, ",") end
local function errmsg(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end

for _, dev in ipairs(h.devices()) do
  local function A(t, dt) return gpu.array(t, { dtype = dt or "float32", device = dev }) end
  local function I(t, dt) return A(t, dt or "int64") end
  local function m34(dt) return gpu.arange(1, 13, 1, { dtype = dt or "int64", device = dev }):reshape(3, 4) end

  describe("boolean masks on " .. dev, function()
    it("x[mask] selects in C order as a 1-D copy, for every dtype", function()
      for _, dt in ipairs(h.dtypes_except("bool")) do
        local x = m34(dt)
        -- complex numbers have no order (as in NumPy 2's array API): their mask compares |x|
        local cplx = gpu._dtypes[dt].kind == "complex"
        local s = x[(cplx and x:abs() or x):gt(6)]
        assert.equal(dt, s.dtype); assert.equal("6", shape(s))
        local re = cplx and gpu.view_as_real(s)[{ ":", 1 }] or s
        assert.same({ 7, 8, 9, 10, 11, 12 }, h.flat(re))
        if cplx then assert.same({ 0, 0, 0, 0, 0, 0 }, h.flat(gpu.view_as_real(s)[{ ":", 2 }])) end
        s[1] = 0                                       -- a copy: x is unchanged
        assert.equal(7, (cplx and gpu.view_as_real(x)[{ 2, 3, 1 }] or x[{ 2, 3 }]))
      end
      local b = A({ true, false, true }, "bool")
      assert.same({ true, true }, h.flat(b[b]))
    end)

    it("a mask over the leading axes selects sub-arrays", function()
      local x = m34()
      local s = x[A({ true, false, true }, "bool")]
      assert.equal("2,4", shape(s))
      assert.same({ { 1, 2, 3, 4 }, { 9, 10, 11, 12 } }, s:totable())
    end)

    it("works on non-contiguous arrays and empty selections", function()
      local t = m34().T                                -- (4,3)
      assert.same({ 9, 6, 10, 7, 11, 8, 12 }, h.flat(t[t:gt(5)]))
      local none = t[t:gt(100)]
      assert.equal("0", shape(none))
      local z = gpu.zeros({ 0, 3 }, { device = dev })
      assert.equal("0", shape(z[z:gt(0)]))
    end)

    it("x[mask] = number writes through, views included", function()
      local x = m34()
      x[x:gt(10)] = 0
      assert.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 0, 0 } }, x:totable())
      local v = x.T                                    -- a view: writes reach x
      v[v:eq(1)] = -1
      assert.equal(-1, x[{ 1, 1 }])
    end)

    it("x[mask] = array broadcasts against the selection, or reads a same-shape array", function()
      local x = m34()
      x[x:gt(8)] = I{ 90, 100, 110, 120 }
      assert.same({ 90, 100, 110, 120 }, x[3]:totable())
      local y = m34()
      y[y:le(2)] = y * 10                              -- same shape: y[mask] = (y*10)[mask]
      assert.same({ 10, 20, 3, 4 }, y[1]:totable())
      local r = m34()
      r[A({ false, true, false }, "bool")] = I{ 0, 0, 0, 1 }   -- broadcast over the row
      assert.same({ 0, 0, 0, 1 }, r[2]:totable())
      local f = A{ 1, 2, 3 }
      f[f:gt(1)] = A({ 7, 8 }, "float64")              -- converted to the array's dtype
      assert.same({ 1, 7, 8 }, f:totable()); assert.equal("float32", f.dtype)
    end)

    it("rejects masks of the wrong dtype or shape, leaving x unchanged", function()
      local x = m34()
      local e = errmsg(function() return x[gpu.ones(3, 4, { device = dev })] end)
      assert.matches("bool", e); assert.matches("float32", e)
      e = errmsg(function() return x[A({ true, false }, "bool")] end)
      assert.matches("%(2,%)", e); assert.matches("%(3,4%)", e)
      e = errmsg(function() x[x:gt(5)] = I{ 1, 2 } end)
      assert.matches("%(2,%)", e)
      e = errmsg(function() return x[A{ 1.5 }] end)
      assert.matches("int32/int64", e)
      assert.same(m34():totable(), x:totable())
    end)
  end)

  describe("integer-array indexing on " .. dev, function()
    it("x[idx] selects along the first axis, 1-based, negatives from the end", function()
      local x = m34()
      assert.same({ { 9, 10, 11, 12 }, { 1, 2, 3, 4 }, { 9, 10, 11, 12 } }, x[I{ -1, 1, 3 }]:totable())
      assert.same({ 20, 10 }, A{ 10, 20, 30 }[I({ 2, 1 }, "int32")]:totable())
    end)

    it("take follows NumPy: out = x.shape[:axis] + idx.shape + x.shape[axis+1:]", function()
      local x = m34()
      local t = gpu.take(x, I{ { 1, 3 }, { 2, 2 } }, 2)
      assert.equal("3,2,2", shape(t))
      assert.same({ { { 1, 3 }, { 2, 2 } }, { { 5, 7 }, { 6, 6 } }, { { 9, 11 }, { 10, 10 } } }, t:totable())
      assert.same({ 12, 1 }, gpu.take(x, I{ -1, 1 }):totable())        -- flattened
      assert.same({ { 4, 1 }, { 8, 5 }, { 12, 9 } }, x:index(-1, I({ 4, 1 }, "int32")):totable())
      assert.same({ { 2, 6, 10 } }, x.T:index(1, I{ 2 }):totable())   -- non-contiguous
      assert.equal("3,0", shape(x:index(2, I{})))
      for _, dt in ipairs{ "float16", "bfloat16", "float64", "uint8", "bool" } do
        local y = A({ 1, 0, 1 }, dt)
        assert.same(h.flat(A({ 0, 1 }, dt)), h.flat(y:take(I{ 2, 3 })))
      end
    end)

    it("bounds are checked before anything runs, with a 1-based message", function()
      local x = m34()
      local e = errmsg(gpu.take, x, I{ 1, 0 }, 1)
      assert.matches("index 0 is out of range", e); assert.matches("1%-based", e); assert.matches("take", e)
      e = errmsg(gpu.take, x, I{ 5 }, 2)
      assert.matches("index 5", e); assert.matches("size 4", e)
      e = errmsg(gpu.take, x, I{ -5 }, 2)
      assert.matches("index %-5", e)
      e = errmsg(gpu.take, x, A{ 1 }, 1)
      assert.matches("int32 or int64", e)
      e = errmsg(gpu.take, x, I{ 1 }, 3)
      assert.matches("axis 3", e)
      e = errmsg(function() x[I{ 1, 4 }] = 0 end)
      assert.matches("index 4", e)
      assert.same(m34():totable(), x:totable())
      -- a long index into a short axis, the bad position late, in spans of several
      -- thousand: still nothing written (the cpu puts x back)
      for _, acc in ipairs{ true, false } do
        local c = gpu.arange(1, 4, 1, { device = dev })
        local pos = gpu.full(20000, 2, { dtype = "int64", device = dev })
        pos[19999] = -4
        local version = c._version
        e = errmsg(c.index_put_, c, 1, pos, gpu.ones(20000, { device = dev }), { accumulate = acc })
        assert.matches("index %-4 is out of range for axis 1 with size 3", e)
        assert.same({ 1, 2, 3 }, c:totable())
        assert.equal(version, c._version)
      end
    end)

    it("index_put_ scatters in place, with broadcasting and accumulate", function()
      local x = gpu.zeros(3, 4, { dtype = "int64", device = dev })
      assert.equal(x, x:index_put_(2, I{ 1, -1 }, I{ { 1, 2 }, { 3, 4 }, { 5, 6 } }))
      assert.same({ { 1, 0, 0, 2 }, { 3, 0, 0, 4 }, { 5, 0, 0, 6 } }, x:totable())
      x:index_put_(1, I{ 2 }, 7)
      assert.same({ 7, 7, 7, 7 }, x[2]:totable())
      local c = gpu.zeros(3, { device = dev })
      c:index_put_(1, I{ 1, 1, 3, 1 }, A{ 1, 2, 3, 4 }, { accumulate = true })
      assert.same({ 7, 0, 3 }, c:totable())
      c:index_put_(1, I{ 2, 2 }, A{ 5, 6 })            -- repeated position: the last wins
      assert.equal(6, c[2])
      local y = m34()
      y[I{ 1, 3 }] = I{ 0, 0, 0, 0 }
      assert.same({ { 0, 0, 0, 0 }, { 5, 6, 7, 8 }, { 0, 0, 0, 0 } }, y:totable())
      local e = errmsg(function() y:index_put_(2, I{ 1 }, I{ 1, 2 }) end)
      assert.matches("%(3,1%)", e)
      e = errmsg(function() y:index_put_(1, I{ 1 }, 1, { accumulat = true }) end)
      assert.matches("unknown option", e)
    end)

    it("index_put_ accumulate wraps int32/int64 on overflow as + does", function()
      for _, dt in ipairs{ "int32", "int64" } do
        local big = dt == "int32" and 2147483647 or math.maxinteger
        local x = gpu.array({ big, 1 }, { dtype = dt, device = dev })
        local want = (x + gpu.array({ 1, 0 }, { dtype = dt, device = dev })):totable()
        x:index_put_(1, I{ 1 }, gpu.array({ 1 }, { dtype = dt, device = dev }), { accumulate = true })
        assert.same(want, x:totable())
        assert.equal(dt == "int32" and -2147483648 or math.mininteger, x[1])
      end
    end)
  end)

  describe("concat, stack, split on " .. dev, function()
    it("concat joins along an axis and promotes dtypes", function()
      local a, b = m34(), A{ { 0.5, 0.5 }, { 1, 1 }, { 2, 2 } }
      local c = gpu.concat({ a, b }, 2)
      assert.equal("3,6", shape(c)); assert.equal("float64", c.dtype)   -- int64 + float32
      assert.same({ 1, 2, 3, 4, 0.5, 0.5 }, c[1]:totable())
      local r = gpu.concatenate({ a[{ { 1, 1 } }], a.T.T }, -2)
      assert.equal("4,4", shape(r))
      assert.same({ 1, 2, 3, 4 }, r[2]:totable())
      assert.equal("3,4", shape(gpu.concat({ a, gpu.zeros({ 0, 4 }, { dtype = "int64", device = dev }) })))
      assert.same({ 1, 2 }, gpu.concat{ I{ 1 }, I{ 2 } }:totable())
    end)

    it("concat errors name the array and the shapes", function()
      local a = m34()
      local e = errmsg(gpu.concat, { a, a, gpu.zeros(2, 3, { device = dev }) }, 1)
      assert.matches("array #3", e); assert.matches("%(2,3%)", e); assert.matches("%(3,4%)", e)
      assert.matches("concat", errmsg(gpu.concat, {}, 1))
      assert.matches("non%-empty", errmsg(gpu.concat, {}, 1))
      assert.matches("element #2", errmsg(gpu.concat, { a, 3 }))
      assert.matches("axis 3", errmsg(gpu.concat, { a, a }, 3))
      assert.matches("0%-d", errmsg(gpu.concat, { gpu.array(1), gpu.array(2) }))
      assert.same(m34():totable(), a:totable())
    end)

    it("stack adds an axis", function()
      local a, b = I{ 1, 2, 3 }, I{ 4, 5, 6 }
      assert.same({ { 1, 2, 3 }, { 4, 5, 6 } }, gpu.stack{ a, b }:totable())
      assert.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, gpu.stack({ a, b }, -1):totable())
      assert.matches("array #2", errmsg(gpu.stack, { a, I{ 1, 2 } }))
    end)

    it("split returns views, equal parts or section sizes", function()
      local x = m34()
      local p = gpu.split(x, 2, 2)
      assert.equal(2, #p); assert.same({ { 3, 4 }, { 7, 8 }, { 11, 12 } }, p[2]:totable())
      p[1][{ 1, 1 }] = 100                              -- views share memory
      assert.equal(100, x[{ 1, 1 }])
      local q = x:split({ 1, 0, 2 })
      assert.equal("1,4", shape(q[1])); assert.equal("0,4", shape(q[2])); assert.equal("2,4", shape(q[3]))
      assert.same({ 9, 10, 11, 12 }, q[3][2]:totable())
      assert.matches("3 equal parts", errmsg(gpu.split, x, 3, 2))
      assert.matches("add up to 2", errmsg(gpu.split, x, { 1, 1 }))
    end)
  end)

  describe("tile, repeat, flip, roll on " .. dev, function()
    it("tile follows NumPy", function()
      local x = I{ { 1, 2 }, { 3, 4 } }
      local t = gpu.tile(x, { 2, 1, 2 })
      assert.equal("2,2,4", shape(t))
      assert.same({ { { 1, 2, 1, 2 }, { 3, 4, 3, 4 } }, { { 1, 2, 1, 2 }, { 3, 4, 3, 4 } } }, t:totable())
      assert.same({ { 1, 2, 1, 2 }, { 3, 4, 3, 4 } }, x:tile(2):totable())
      assert.same({ 1, 2, 1, 2 }, I{ 1, 2 }:tile(2):totable())
      assert.same({ { 1, 3 }, { 2, 4 }, { 1, 3 }, { 2, 4 } }, x.T:tile({ 2, 1 }):totable())
      assert.equal("2,0", shape(x:tile({ 1, 0 })))
      assert.matches("negative", errmsg(gpu.tile, x, -1))
    end)

    it("repeat repeats each element (np.repeat)", function()
      local x = I{ { 1, 2 }, { 3, 4 } }
      assert.same({ 1, 1, 2, 2, 3, 3, 4, 4 }, gpu["repeat"](x, 2):totable())
      assert.same({ { 1, 1, 2, 2 }, { 3, 3, 4, 4 } }, x:repeat_interleave(2, -1):totable())
      assert.same({ { 1, 2 }, { 3, 4 }, { 3, 4 } }, gpu["repeat"](x, I{ 1, 2 }, 1):totable())
      assert.same({ { 1, 3 }, { 1, 3 }, { 2, 4 } }, x.T:repeat_interleave(I({ 2, 1 }, "int32"), 1):totable())
      assert.equal("0,2", shape(x:repeat_interleave(0, 1)))
      assert.matches("negative", errmsg(gpu.repeat_interleave, x, -1))
      assert.matches("3 repeat counts", errmsg(gpu.repeat_interleave, x, I{ 1, 2, 3 }, 1))
    end)

    it("flip is a view with negative strides", function()
      local x = m34()
      local f = x:flip(2)
      assert.same({ 4, 3, 2, 1 }, f[1]:totable())
      f[{ 1, 1 }] = 40                                   -- writes show through
      assert.equal(40, x[{ 1, 4 }])
      assert.same({ { 12, 11, 10, 9 }, { 8, 7, 6, 5 }, { 40, 3, 2, 1 } }, gpu.flip(x):totable())
      assert.same({ 9, 10, 11, 12 }, x:flip{ 1 }[1]:totable())
      assert.same({ 3, 2, 1 }, gpu.flip(A{ 1, 2, 3 }):totable())
      assert.same({ 3, 2, 1 }, (gpu.flip(A{ 1, 2, 3 }) + 0):totable())
      assert.same({ 12, 8, 40 }, x:flip(1).T[4]:totable())
      assert.same({ 12, 8, 40 }, x.T:flip(2)[4]:totable())
      assert.equal("0", shape(gpu.zeros(0, { device = dev }):flip()))
      assert.matches("repeated", errmsg(gpu.flip, x, { 1, -2 }))
      assert.matches("axis 3", errmsg(gpu.flip, x, 3))
    end)

    it("roll follows NumPy (no axis: flattened, shape kept)", function()
      local x = m34()
      assert.same({ { 12, 1, 2, 3 }, { 4, 5, 6, 7 }, { 8, 9, 10, 11 } }, x:roll(1):totable())
      assert.same({ { 5, 6, 7, 8 }, { 9, 10, 11, 12 }, { 1, 2, 3, 4 } }, x:roll(-1, 1):totable())
      assert.same({ { 11, 12, 9, 10 }, { 3, 4, 1, 2 }, { 7, 8, 5, 6 } }, gpu.roll(x, { 1, 2 }, { 1, 2 }):totable())
      assert.same({ { 4, 1, 2, 3 }, { 8, 5, 6, 7 }, { 12, 9, 10, 11 } }, x:roll(9, -1):totable())
      assert.same({ { 9, 1, 5 }, { 10, 2, 6 }, { 11, 3, 7 }, { 12, 4, 8 } }, x.T:roll(1, 2):totable())
      assert.equal("0,3", shape(gpu.zeros(0, 3, { device = dev }):roll(1, 1)))
      assert.matches("both", errmsg(gpu.roll, x, { 1 }, 1))
      assert.same(m34():totable(), x:totable())
    end)
  end)
end

-- A 1-D selection on the cpu is counted per thread and compacted without a branch per
-- element (cpu_index.c's mask_select_row): every element width, masks that end selected or
-- not, all or none selected, a strided source, one and two threads (child processes),
-- against the selection worked out in Lua.
describe("the cpu's 1-D mask selection", function()
  it("keeps the selected elements in order, with one and two threads", function()
    local ran = h.threads_ok([[
      local fails = {}
      local n = 70001
      local g = gpu.random.Generator(3)
      local masks = {
        random = g:rand({ n }):lt(0.5),
        runs = (gpu.arange(n, { dtype = "int64" }) // 1000 % 2):eq(0),
        none = gpu.zeros(n, { dtype = "bool" }),
        all = gpu.ones(n, { dtype = "bool" }),
        last = gpu.arange(n, { dtype = "int64" }):eq(n - 1),
      }
      for _, dt in ipairs({ "uint8", "int16", "float32", "float64", "complex128" }) do
        local base = gpu.arange(2 * n, { dtype = "int64" }) % 251
        local x = (dt == "complex128" and base:astype("float64") or base):astype(dt)
        for name, m in pairs(masks) do
          for _, strided in ipairs({ false, true }) do
            local src = strided and x[{ { 1, 2 * n, 2 } }] or x[{ { 1, n } }]
            local got = gpu.masked_select(src, m)
            local want, mt = {}, m:totable()
            local st = (dt == "complex128" and gpu.real(src) or src):astype("float64"):totable()
            for i = 1, n do if mt[i] then want[#want + 1] = st[i] end end
            local gt = (dt == "complex128" and gpu.real(got) or got):astype("float64"):totable()
            local ok = #gt == #want
            for i = 1, #want do ok = ok and gt[i] == want[i] end
            if not ok then fails[#fails + 1] = ("%s %s strided=%s"):format(dt, name, tostring(strided)) end
          end
        end
      end
      io.write(#fails == 0 and "ok" or table.concat(fails, "\n"))
    ]])
    if not ran then return pending("needs GPULUA_BIN (set by make test)") end
  end)
end)
