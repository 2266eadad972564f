-- spec/linalg_spec.lua — matmul, dot, outer. Expected values computed with NumPy 1.24
-- (np.matmul / np.dot / np.outer on the same inputs) and written out here.
local h = require "spec.helper"
local gpu = h.gpu

local function shape(x) return table.concat(x.shape, ",") end

-- arange(n) as dtype dt (default float32), reshaped, minus 'sub', on device d
local function ar(d, dims, dt, sub)
  local n = 1
  for _, v in ipairs(dims) do n = n * v end
  local x = gpu.arange(n):reshape(table.unpack(dims))
  if sub then x = x - sub end
  return x:astype(dt or "float32"):to(d)
end

for _, dev in ipairs(h.devices()) do
  describe("matmul on " .. dev, function()
    local A, B
    before_each(function()
      A = ar(dev, { 3, 4 })             -- 0..11
      B = ar(dev, { 4, 2 }, nil, 3)     -- -3..4
    end)

    it("2-D @ 2-D", function()
      local c = gpu.matmul(A, B)
      assert.are.equal("3,2", shape(c))
      assert.are.equal("float32", c.dtype)
      h.assert_close(c, { { 10, 16 }, { 10, 32 }, { 10, 48 } })
      h.assert_close(A:matmul(B), c)
    end)

    it("1-D @ 1-D gives a 0-d array", function()
      local c = gpu.matmul(gpu.array({ 1, 2, 3 }):to(dev), gpu.array({ 4, 5, 6 }):to(dev))
      assert.are.equal(0, c.ndim)
      assert.are.equal(32, c:item())
    end)

    it("1-D @ 2-D and 2-D @ 1-D drop the added axis", function()
      local v = gpu.array({ 1, 2, 3 }):to(dev)
      local c = gpu.matmul(v, A)
      assert.are.equal("4", shape(c))
      h.assert_close(c, { 32, 38, 44, 50 })
      local w = gpu.array({ 1, -1, 2, 0 }):to(dev)
      local r = A:matmul(w)
      assert.are.equal("3", shape(r))
      h.assert_close(r, { 3, 11, 19 })
      -- a 1-D operand against a batch
      local s = gpu.matmul(v, ar(dev, { 2, 3, 4 }))
      assert.are.equal("2,4", shape(s))
      h.assert_close(s[1], c)
    end)

    it("broadcasts batch axes (NumPy)", function()
      local x = ar(dev, { 2, 1, 2, 3 })
      local y = ar(dev, { 3, 3, 2 }, nil, 5)
      local c = gpu.matmul(x, y)
      assert.are.equal("2,3,2,2", shape(c))
      h.assert_close(c, {
        { { { -5, -2 }, { -32, -20 } }, { { 13, 16 }, { 40, 52 } }, { { 31, 34 }, { 112, 124 } } },
        { { { -59, -38 }, { -86, -56 } }, { { 67, 88 }, { 94, 124 } }, { { 193, 214 }, { 274, 304 } } },
      })
      assert.are.equal("2,5,3,6", shape(gpu.matmul(gpu.ones(2, 1, 3, 4):to(dev), gpu.ones(5, 4, 6):to(dev))))
      -- a 2-D operand broadcast against a batch equals each batch's own product
      local bb = gpu.matmul(ar(dev, { 4, 3, 4 }), B)
      assert.are.equal("4,3,2", shape(bb))
      for i = 1, 4 do h.assert_close(bb[i], gpu.matmul(ar(dev, { 4, 3, 4 })[i], B)) end
    end)

    it("handles many small batches and large matrices like the exact integer result", function()
      -- values small enough that float32 sums are exact
      local a = ar(dev, { 256, 8, 9 }, "int64") % 7 - 3   -- enough work for the threaded paths
      local b = ar(dev, { 256, 9, 8 }, "int64") % 5 - 2
      local ref = gpu.matmul(a, b)
      assert.are.equal("int64", ref.dtype)
      h.assert_close(gpu.matmul(a:astype("float32"), b:astype("float32")), ref, 0)
      h.assert_close(gpu.matmul(a:astype("float64"), b:astype("float64")), ref, 0)
      local p = ar(dev, { 70, 130 }, "int64") % 11 - 5
      local q = ar(dev, { 130, 90 }, "int64") % 13 - 6
      local r = gpu.matmul(p, q)
      h.assert_close(gpu.matmul(p:astype("float32"), q:astype("float32")), r, 0)
      h.assert_close(gpu.matmul(p:astype("float64").T:contiguous().T, q:astype("float64")), r, 0)
    end)

    it("works with zero-size dimensions", function()
      local k0 = gpu.matmul(gpu.ones(3, 0):to(dev), gpu.ones(0, 4):to(dev))
      assert.are.equal("3,4", shape(k0))
      h.assert_close(k0, gpu.zeros(3, 4))
      local k0i = gpu.matmul(gpu.ones({ 2, 0 }, { dtype = "int32" }):to(dev), gpu.ones({ 0, 2 }, { dtype = "int32" }):to(dev))
      h.assert_close(k0i, { { 0, 0 }, { 0, 0 } }, 0)
      assert.are.equal("0,4", shape(gpu.matmul(gpu.ones(0, 3):to(dev), gpu.ones(3, 4):to(dev))))
      assert.are.equal("3,0", shape(gpu.matmul(gpu.ones(3, 4):to(dev), gpu.ones(4, 0):to(dev))))
      assert.are.equal("0,2,4", shape(gpu.matmul(gpu.ones(0, 2, 3):to(dev), gpu.ones(3, 4):to(dev))))
      local v0 = gpu.matmul(gpu.ones(0):to(dev), gpu.ones(0):to(dev))
      assert.are.equal(0, v0.ndim)
      assert.are.equal(0, v0:item())
    end)

    describe("dtypes", function()
      it("float64", function()
        local c = gpu.matmul(A:astype("float64"), B:astype("float64"))
        assert.are.equal("float64", c.dtype)
        h.assert_close(c, { { 10, 16 }, { 10, 32 }, { 10, 48 } }, 1e-12)
        local x = gpu.array({ { 0.1, 0.2 } }, { dtype = "float64" }):to(dev)
        local y = gpu.array({ { 0.3 }, { 0.7 } }, { dtype = "float64" }):to(dev)
        h.assert_close(gpu.matmul(x, y), { { 0.1 * 0.3 + 0.2 * 0.7 } }, 1e-15)
      end)

      it("float16 and bfloat16 keep their dtype", function()
        for _, dt in ipairs({ "float16", "bfloat16" }) do
          local m = gpu.array({ { 0.5, 1.25 }, { 2, -3 } }, { dtype = dt }):to(dev)
          local c = gpu.matmul(m, m)
          assert.are.equal(dt, c.dtype)
          h.assert_close(c, { { 2.75, -3.125 }, { -5, 11.5 } }, 1e-2)
          local big = gpu.matmul(ar(dev, { 3, 4 }, dt), ar(dev, { 4, 2 }, dt, 3))
          h.assert_close(big, { { 10, 16 }, { 10, 32 }, { 10, 48 } }, 1e-2)
        end
      end)

      it("int32, int64 and uint8 are exact and wrap like NumPy", function()
        for _, dt in ipairs({ "int32", "int64", "uint8" }) do
          local c = gpu.matmul(ar(dev, { 3, 4 }, dt), ar(dev, { 4, 2 }, dt))
          assert.are.equal(dt, c.dtype)
          h.assert_close(c, { { 28, 34 }, { 76, 98 }, { 124, 162 } }, 0)
        end
        local i32 = gpu.matmul(gpu.array({ { 65536, 3 } }, { dtype = "int32" }):to(dev),
                               gpu.array({ { 65536 }, { 2 } }, { dtype = "int32" }):to(dev))
        h.assert_close(i32, { { 6 } }, 0)
        local u8 = gpu.matmul(gpu.array({ { 16, 3 } }, { dtype = "uint8" }):to(dev),
                              gpu.array({ { 16 }, { 2 } }, { dtype = "uint8" }):to(dev))
        h.assert_close(u8, { { 6 } }, 0)
        local i64 = gpu.matmul(gpu.array({ { 1 << 62, 1 } }, { dtype = "int64" }):to(dev),
                               gpu.array({ { 4 }, { 5 } }, { dtype = "int64" }):to(dev))
        h.assert_close(i64, { { 5 } }, 0)
      end)

      it("bool is NumPy's logical matmul", function()
        local c = gpu.matmul(gpu.array({ { true, false }, { false, false } }):to(dev),
                             gpu.array({ { true, true }, { true, false } }):to(dev))
        assert.are.equal("bool", c.dtype)
        assert.are.same({ { true, true }, { false, false } }, c:totable())
      end)

      it("mixed dtypes promote (NumPy 2)", function()
        local f = gpu.ones({ 2 }, { dtype = "float32" }):to(dev)
        local i = gpu.ones({ 2 }, { dtype = "int32" }):to(dev)
        local u = gpu.ones({ 2 }, { dtype = "uint8" }):to(dev)
        assert.are.equal("float64", gpu.matmul(i, f).dtype)
        assert.are.equal("int32", gpu.matmul(u, i).dtype)
        assert.are.equal("float32", gpu.matmul(gpu.ones({ 2 }, { dtype = "float16" }):to(dev),
                                               gpu.ones({ 2 }, { dtype = "bfloat16" }):to(dev)).dtype)
        h.assert_close(gpu.matmul(A:astype("int32"), B), { { 10, 16 }, { 10, 32 }, { 10, 48 } })
      end)
    end)

    describe("strided operands equal their contiguous copies", function()
      local cases = {
        { "a transposed", function(dt) return ar(dev, { 4, 3 }, dt).T, ar(dev, { 4, 5 }, dt) end },
        { "b transposed", function(dt) return ar(dev, { 3, 4 }, dt), ar(dev, { 5, 4 }, dt, 9).T end },
        { "both transposed", function(dt) return ar(dev, { 4, 3 }, dt).T, ar(dev, { 5, 4 }, dt).T end },
        { "column slices", function(dt) return ar(dev, { 3, 8 }, dt)[{ ":", { 1, 8, 2 } }], ar(dev, { 4, 6 }, dt)[{ ":", { 2, 5 } }] end },
        { "transposed slices (ld > rows)", function(dt) return ar(dev, { 4, 6 }, dt)[{ ":", { 1, 3 } }].T, ar(dev, { 3, 6 }, dt)[{ ":", { 1, 4 } }].T end },
        { "row slices (lda > cols)", function(dt) return ar(dev, { 6, 4 }, dt)[{ { 2, 4 }, ":" }], ar(dev, { 4, 7 }, dt)[{ ":", { 1, 5 } }] end },
        { "negative strides", function(dt) return ar(dev, { 3, 4 }, dt)[{ ":", { 4, 1, -1 } }], ar(dev, { 4, 2 }, dt)[{ { 4, 1, -1 }, ":" }] end },
        { "broadcast (0-stride) matrix axes", function(dt)
            return gpu.array({ 1, 2, 3 }, { dtype = dt }):to(dev):reshape(3, 1):expand(3, 4), ar(dev, { 4, 2 }, dt) end },
        { "both broadcast along K (0 strides: one product times K)", function(dt)
            return gpu.array({ 1, 2, 3 }, { dtype = dt }):to(dev):reshape(3, 1):expand(3, 50),
              gpu.array({ { 1, 2 } }, { dtype = dt }):to(dev):expand(50, 2) end },
        { "batched, permuted", function(dt) return ar(dev, { 3, 4, 2 }, dt):permute(3, 1, 2), ar(dev, { 2, 4, 5 }, dt):permute(1, 2, 3) end },
        { "batched, transposed last axes", function(dt) return ar(dev, { 2, 4, 3 }, dt):transpose(2, 3), ar(dev, { 1, 5, 4 }, dt):transpose(2, 3) end },
      }
      for _, c in ipairs(cases) do
        it(c[1], function()
          for _, dt in ipairs({ "float32", "float64", "int64", "float16" }) do
            local a, b = c[2](dt)
            assert.are.equal(dt, a.dtype)
            local a0, b0 = a:copy(), b:copy()
            local want = gpu.matmul(a:contiguous(), b:contiguous())
            h.assert_close(gpu.matmul(a, b), want, dt == "float16" and 1e-2 or 1e-6)
            h.assert_close(a, a0, 0)   -- inputs unchanged
            h.assert_close(b, b0, 0)
          end
        end)
      end
    end)

    it("a K of 2^40 broadcast in both operands is one product times K, at once", function()
      for _, dt in ipairs({ "int64", "int32", "uint8", "float64", "float32", "float16", "bool" }) do
        local t0 = gpu.clock()
        local a = gpu.full(1, 3, { dtype = dt, device = dev }):expand(1 << 40)
        local b = gpu.arange(3, { device = dev }):astype(dt):reshape(1, 3):expand(1 << 40, 3)
        local r = gpu.matmul(a, b)
        assert.are.equal(dt, r.dtype)
        local k3 = 3 * (1 << 40)                 -- integers wrap as the sum would
        local want = ({ int64 = { 0, k3, 2 * k3 }, int32 = { 0, 0, 0 }, uint8 = { 0, 0, 0 },
          float64 = { 0, k3, 2 * k3 }, float32 = { 0, k3, 2 * k3 }, bool = { false, true, true },
          float16 = { 0, math.huge, math.huge } })[dt]
        assert.are.same(want, r:totable(), dt)   -- float16: 0 stays 0 (not 0 * inf)
        assert.are.equal(({ int64 = 9 * (1 << 40), bool = true, int32 = 0, uint8 = 0,
          float64 = 9 * 2 ^ 40, float32 = 9 * 2 ^ 40, float16 = math.huge })[dt], gpu.dot(a, a):item(), dt)
        assert.is_true(gpu.clock() - t0 < 1, dt)
      end
      local odd = gpu.full(1, 3, { dtype = "int32", device = dev }):expand((1 << 40) + 5)
      assert.are.equal(45, gpu.dot(odd, odd):item())   -- 9 * (2^40 + 5) mod 2^32
    end)

    describe("errors", function()
      it("names both shapes when the inner dimensions differ", function()
        local a, b = gpu.ones(3, 4):to(dev), gpu.ones(5, 6):to(dev)
        local ok, err = pcall(gpu.matmul, a, b)
        assert.is_false(ok)
        assert.matches("bad argument #2 to '[%w.]*matmul'", err)
        assert.matches("shapes %(3,4%) and %(5,6%) do not align: 4 %(dim 2%) != 5 %(dim 1%)", err)
        ok, err = pcall(function() return a:matmul(b) end)
        assert.is_false(ok)
        assert.matches("matmul", err)
        assert.matches("%(3,4%) and %(5,6%)", err)
        ok, err = pcall(gpu.matmul, gpu.ones(3):to(dev), gpu.ones(4):to(dev))
        assert.is_false(ok)
        assert.matches("shapes %(3,%) and %(4,%) do not align", err)
        h.assert_close(a, gpu.ones(3, 4))
        h.assert_close(b, gpu.ones(5, 6))
      end)

      it("refuses batch axes that do not broadcast", function()
        local ok, err = pcall(gpu.matmul, gpu.ones(2, 3, 4):to(dev), gpu.ones(3, 4, 5):to(dev))
        assert.is_false(ok)
        assert.matches("matmul", err)
        assert.matches("%(2,3,4%) and %(3,4,5%)", err)
      end)

      it("refuses 0-d operands", function()
        local ok, err = pcall(gpu.matmul, gpu.array(2):to(dev), gpu.ones(3):to(dev))
        assert.is_false(ok)
        assert.matches("bad argument #1 to '[%w.]*matmul'", err)
        assert.matches("0%-d", err)
        ok, err = pcall(gpu.matmul, gpu.ones(3):to(dev), gpu.array(2):to(dev))
        assert.is_false(ok)
        assert.matches("bad argument #2 to '[%w.]*matmul'.*0%-d", err)
      end)

      it("refuses non-arrays", function()
        local ok, err = pcall(gpu.matmul, 3, gpu.ones(3):to(dev))
        assert.is_false(ok)
        assert.matches("bad argument #1 to '[%w.]*matmul' %(gpu.array expected, got number%)", err)
        ok, err = pcall(gpu.matmul, gpu.ones(3):to(dev), { 1, 2, 3 })
        assert.is_false(ok)
        assert.matches("bad argument #2 to '[%w.]*matmul'.*got table", err)
        ok, err = pcall(gpu.outer, gpu.ones(3):to(dev), "x")
        assert.is_false(ok)
        assert.matches("bad argument #2 to '[%w.]*outer'", err)
        ok, err = pcall(gpu.dot, "x", gpu.ones(3):to(dev))
        assert.is_false(ok)
        assert.matches("bad argument #1 to '[%w.]*dot'.*got string", err)
      end)
    end)
  end)

  describe("dot on " .. dev, function()
    it("1-D . 1-D, 2-D . 2-D and mixed are matmul", function()
      local d = gpu.dot(gpu.array({ 1, 2 }):to(dev), gpu.array({ 3, 4 }):to(dev))
      assert.are.equal(0, d.ndim)
      assert.are.equal(11, d:item())
      local A, B = ar(dev, { 3, 4 }), ar(dev, { 4, 2 }, nil, 3)
      h.assert_close(A:dot(B), { { 10, 16 }, { 10, 32 }, { 10, 48 } })
      h.assert_close(gpu.dot(A, gpu.array({ 1, -1, 2, 0 }):to(dev)), { 3, 11, 19 })
    end)

    it("a number or a 0-d array multiplies", function()
      local A = ar(dev, { 2, 2 })
      h.assert_close(gpu.dot(A, 2), { { 0, 2 }, { 4, 6 } })
      h.assert_close(gpu.dot(3, A), { { 0, 3 }, { 6, 9 } })
      h.assert_close(gpu.dot(gpu.array(2):to(dev), A), { { 0, 2 }, { 4, 6 } })
    end)

    it("N-D sums over a's last axis and b's second-to-last (NumPy's dot, not matmul)", function()
      local d = gpu.dot(ar(dev, { 2, 3, 4 }), ar(dev, { 5, 4, 2 }, nil, 7))
      assert.are.equal("2,3,5,2", shape(d))
      h.assert_close(d, {
        { { { -14, -8 }, { 34, 40 }, { 82, 88 }, { 130, 136 }, { 178, 184 } },
          { { -78, -56 }, { 98, 120 }, { 274, 296 }, { 450, 472 }, { 626, 648 } },
          { { -142, -104 }, { 162, 200 }, { 466, 504 }, { 770, 808 }, { 1074, 1112 } } },
        { { { -206, -152 }, { 226, 280 }, { 658, 712 }, { 1090, 1144 }, { 1522, 1576 } },
          { { -270, -200 }, { 290, 360 }, { 850, 920 }, { 1410, 1480 }, { 1970, 2040 } },
          { { -334, -248 }, { 354, 440 }, { 1042, 1128 }, { 1730, 1816 }, { 2418, 2504 } } },
      })
      local e = gpu.dot(ar(dev, { 2, 3 }), ar(dev, { 2, 3, 4 }))
      assert.are.equal("2,2,4", shape(e))
      h.assert_close(e, { { { 20, 23, 26, 29 }, { 56, 59, 62, 65 } },
                          { { 56, 68, 80, 92 }, { 200, 212, 224, 236 } } })
    end)

    it("names both shapes when they do not align", function()
      local ok, err = pcall(gpu.dot, gpu.ones(2, 3):to(dev), gpu.ones(2, 4, 5):to(dev))
      assert.is_false(ok)
      assert.matches("bad argument #2 to '[%w.]*dot' %(shapes %(2,3%) and %(2,4,5%) do not align", err)
    end)
  end)

  describe("outer on " .. dev, function()
    it("multiplies the flattened operands", function()
      local o = gpu.outer(ar(dev, { 2, 2 }), gpu.array({ 1, -1, 2 }):to(dev))
      assert.are.equal("4,3", shape(o))
      h.assert_close(o, { { 0, 0, 0 }, { 1, -1, 2 }, { 2, -2, 4 }, { 3, -3, 6 } })
      local t = ar(dev, { 2, 2 }).T
      h.assert_close(t:outer(gpu.array({ 1, 2 }):to(dev)), { { 0, 0 }, { 2, 4 }, { 1, 2 }, { 3, 6 } })
      assert.are.equal("int32", gpu.outer(gpu.ones({ 2 }, { dtype = "int32" }):to(dev),
                                          gpu.ones({ 3 }, { dtype = "uint8" }):to(dev)).dtype)
    end)
  end)
end

describe("BLAS", function()
  it("is reported by gpu.config()", function()
    local v = gpu.config().versions
    assert.is_string(v.blas)
    assert.matches("OpenBLAS", v.blas)
  end)
end)
