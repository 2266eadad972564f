-- spec/complex_elem_spec.lua — elementwise math on complex64 and complex128 against NumPy
-- (spec/fixtures/complex_elem.lua, made by tools/gen_complex_elem_fixtures.py): every unary and
-- binary op on special values (signed zeros on the branch cuts, infinities, NaN, huge, tiny
-- and subnormal parts) and on values of every magnitude; mixed real and complex operands,
-- Lua numbers, broadcasting, non-contiguous operands, in-place forms, isclose/allclose; the
-- ops NumPy refuses for complex and the ordering ones (lt, maximum, ...) refused with an
-- error naming the op and the dtype.
local h = require "spec.helper"
local gpu = h.gpu
local F = require "spec.fixtures.complex_elem"

local huge = math.huge
local REAL_OF = { complex64 = "float32", complex128 = "float64" }
-- relative to |w|: the double result rounded once (complex64) or a few ulps (complex128)
local RTOL = { complex64 = 1e-6, complex128 = 2e-13, float32 = 1e-6, float64 = 2e-13 }

local function cx(pairs, dt, dev)
  return gpu.view_as_complex(gpu.array(pairs, { dtype = REAL_OF[dt], device = dev }))
end

local function values(r)
  if REAL_OF[r.dtype] then return gpu.view_as_real(r):totable() end
  return r:totable()
end

-- unsigned: an infinity beside a NaN part, whose sign Annex G leaves open (sqrt(-inf + NaN i)
-- = NaN +- inf i, exp(inf + inf i) = +-inf + NaN i, ...; a NaN's own sign differs too: the
-- fixtures' 0/0 is a negative NaN on x86)
local function part_ok(g, w, rtol, scale, unsigned)
  if w ~= w then return g ~= g end
  if w == huge or w == -huge then return g == w or (unsigned and math.abs(g) == huge) end
  return g == g and math.abs(g - w) <= rtol * scale + 1e-300
end

-- nil, or where got (the values of an array of dtype dt) and want differ: NaN in the same
-- parts, infinities equal, finite parts within RTOL[dt] of |w| (over w's finite parts)
local function differs(got, want, dt, label)
  local rtol = RTOL[dt]
  for i, w in ipairs(want) do
    local g = got[i]
    if type(w) == "table" then
      local scale = 0
      for _, p in ipairs(w) do if p == p and p ~= huge and p ~= -huge then scale = scale + p * p end end
      scale = math.sqrt(scale)
      if not (part_ok(g[1], w[1], rtol, scale, w[2] ~= w[2]) and part_ok(g[2], w[2], rtol, scale, w[1] ~= w[1])) then
        return ("%s element %d: got %.17g%+.17gi, want %.17g%+.17gi"):format(label, i, g[1], g[2], w[1], w[2])
      end
    elseif type(w) == "boolean" then
      if g ~= w then return ("%s element %d: got %s, want %s"):format(label, i, tostring(g), tostring(w)) end
    elseif not part_ok(g, w, rtol, math.abs(w)) then
      return ("%s element %d: got %.17g, want %.17g"):format(label, i, g, w)
    end
  end
end

local function check(r, want, label)
  assert.equal(want.dtype, r.dtype, label)
  local d = differs(values(r), want.v, want.dtype, label)
  assert(d == nil, d)
end

local function refuses(f, op, dt)
  local ok, err = pcall(f)
  assert(not ok, op .. " on " .. dt .. ": expected an error")
  assert(type(err) == "string" and err:find(op, 1, true) and err:find(dt, 1, true), tostring(err))
  return err
end

-- every op the refused list names errors (call(op) runs it), and every op of C's list
-- (gpu._jit's table) is either checked (in checked) or refused
local function refuses_all(refused, checked, ops, dt, call)
  local listed = {}
  for _, op in ipairs(refused) do
    refuses(function() return call(op) end, op, dt)
    listed[op] = true
  end
  for op in pairs(ops) do assert(checked[op] or listed[op], op .. " is neither in the fixture nor refused") end
end

for _, dev in ipairs(h.devices()) do
  for _, dt in ipairs({ "complex64", "complex128" }) do
    local P = F[dt]
    describe(dt .. " elementwise math on " .. dev, function()
      it("every unary op on special values (Annex G, branch cuts) and every magnitude, as NumPy", function()
        local z, acc = cx(P.z, dt, dev), cx(P.acc, dt, dev)
        local n = 0
        for op, want in pairs(P.unary) do
          check(gpu[op](z), want, op .. "(z)")
          check(acc[op](acc), P.unary_acc[op], op .. "(acc)")
          n = n + 1
        end
        assert.truthy(n >= 30)
        assert.is_nil(differs(values(z), P.z, dt, "operand"))   -- the operand is unchanged
      end)

      it("refuses the unary ops NumPy has no complex form of, naming the op and the dtype", function()
        local z = cx(P.z, dt, dev)
        refuses_all(P.refused, P.unary, gpu._jit.unary, dt, function(op) return gpu[op](z) end)
      end)

      it("every binary op on pairs of special and regular values, as NumPy", function()
        local a, b = cx(P.a, dt, dev), cx(P.b, dt, dev)
        for op, want in pairs(P.binary) do
          check(gpu[op](a, b), want, op)
        end
        check(a + b, P.binary.add, "+")
        check(a - b, P.binary.sub, "-")
        check(a * b, P.binary.mul, "*")
        check(a / b, P.binary.div, "/")
        check(a ^ b, P.binary.pow, "^")
      end)

      it("refuses ordering, floor division, modulo, bit ops and real-only math on complex", function()
        local a = cx(P.a, dt, dev)
        refuses_all(P.binary_refused, P.binary, gpu._jit.binary, dt, function(op) return gpu[op](a, a) end)
        refuses(function() return a // 2 end, "floordiv", dt)
        refuses(function() return a % 2 end, "mod", dt)
        refuses(function() return a & a end, "bitwise_and", dt)
        refuses(function() return ~a end, "bitwise_not", dt)
        refuses(function() return a:clip(0, 1) end, "maximum", dt)
        refuses(function() return gpu.maximum(a, gpu.ones({ 1 }, { device = dev })) end, "maximum", dt)
      end)

      it("gives the same values for non-contiguous operands (transposed, stepped, broadcast)", function()
        local m = cx(P.acc, dt, dev)
        local n = m.shape[1] - m.shape[1] % 6
        local x = m[{ { 1, n } }]:reshape(n // 6, 6)
        local y = x:flip(2) + 1
        for _, f in ipairs({
          function(p, q) return p * q end, function(p, q) return p / q end, function(p, q) return p - q end,
          function(p, q) return p:eq(q) end, function(p) return p:exp() end, function(p) return p:abs() end,
          function(p) return p:sqrt() end, function(p) return p:atanh() end,
        }) do
          for _, pq in ipairs({ { x.T, y.T }, { x[{ ":", { 1, 6, 2 } }], y[{ ":", { 2, 6, 2 } }] },
                                { x[{ { 1, 1 } }]:expand(x.shape[1], 6), y } }) do
            local p, q = pq[1], pq[2]
            local want = f(p:contiguous(), q:contiguous())
            local got = f(p, q)
            assert.same(want.shape, got.shape)
            local d = differs(values(got:reshape(-1)), values(want:reshape(-1)), want.dtype, "strided")
            assert(d == nil, d)
          end
        end
      end)

      it("broadcasts (3, 1) with (4,) as NumPy", function()
        local B = F.broadcast
        local a, b = cx(B.a, "complex128", dev):reshape(3, 1), cx(B.b, "complex128", dev)
        for _, op in ipairs({ "add", "mul", "div" }) do
          local r = gpu[op](a, b)
          assert.same({ 3, 4 }, r.shape)
          local d = differs(values(r:reshape(-1)), B[op], "complex128", op)
          assert(d == nil, d)
        end
      end)

      it("conj, abs and angle give NumPy's dtypes; in-place forms keep the dtype", function()
        local z = cx({ { 3, 4 }, { -1, 0 }, { 0, -2 } }, dt, dev)
        assert.equal(dt, z:conj().dtype)
        assert.same({ { 3, -4 }, { -1, -0.0 }, { 0, 2 } }, values(gpu.conj(z)))
        assert.equal(REAL_OF[dt], z:abs().dtype)
        assert.same({ 5, 1, 2 }, z:abs():totable())
        assert.equal(REAL_OF[dt], gpu.angle(z).dtype)
        local w = z:astype(dt)
        assert.is_true(rawequal(w, w:mul_(w)))
        assert.same({ { -7, 24 }, { 1, -0.0 }, { -4, -0.0 } }, values(w))
        w:add_(1.5):conj_()
        assert.same({ { -5.5, -24 }, { 2.5, 0 }, { -2.5, 0 } }, values(w))
        refuses(function() return w:abs_() end, "abs_", dt)
        local f = gpu.ones({ 3 }, { dtype = REAL_OF[dt], device = dev })
        refuses(function() return f:add_(z) end, "add_", dt)
        assert.same({ 1, 1, 1 }, f:totable())
      end)
    end)
  end

  describe("complex with real operands and Lua numbers on " .. dev, function()
    it("a real array with a complex one promotes as NumPy, either side", function()
      for _, c in ipairs(F.mixed) do
        local r = gpu.array(c.rv, { dtype = c.real, device = dev })
        local z = cx(c.z, c.cplx, dev)
        local got = c.order == "rz" and gpu[c.op](r, z) or gpu[c.op](z, r)
        local label = ("%s(%s %s)"):format(c.op, c.order == "rz" and c.real or c.cplx, c.order == "rz" and c.cplx or c.real)
        check(got, c, label)
      end
    end)

    it("a Lua number with a complex array keeps the array's dtype, either side", function()
      for _, c in ipairs(F.scalars) do
        local z = cx(c.z, c.cplx, dev)
        local label = ("%s(%s, %s)"):format(c.op, c.cplx, tostring(c.s))
        check(gpu[c.op](z, c.s), { dtype = c.dtype, v = c.zs }, label)
        check(gpu[c.op](c.s, z), { dtype = c.dtype, v = c.sz }, label .. " reversed")
      end
      local z = cx({ { 1, 1 } }, "complex64", dev)
      assert.equal("complex64", (z * true).dtype)
      assert.same({ { 2, 1 } }, values(z + z:abs():astype("bool")))
    end)

    it("isclose and allclose compare |a - b| <= atol + rtol |b| with the complex abs", function()
      local a = cx({ { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1 / 0, 0 }, { 0 / 0, 0 } }, "complex128", dev)
      local b = cx({ { 1, 1 + 1e-9 }, { 1.1, 1 }, { 1e-9, 0 }, { 1 / 0, 0 }, { 0 / 0, 0 } }, "complex128", dev)
      assert.same({ true, false, true, true, false }, gpu.isclose(a, b):totable())
      assert.same({ true, false, true, true, true }, gpu.isclose(a, b, { equal_nan = true }):totable())
      assert.is_false(gpu.allclose(a, b))
      assert.is_true(gpu.allclose(a[{ { 1, 1 } }], b[{ { 1, 1 } }]))
      assert.same({ false, true }, gpu.isclose(cx({ { 1, 0 }, { 2, 0 } }, "complex64", dev), 2):totable())
      local r = gpu.array({ 1, 1.1 }, { dtype = "float64", device = dev })
      assert.same({ true, false }, gpu.isclose(cx({ { 1, 0 }, { 1, 1 } }, "complex128", dev), r):totable())
    end)

    it("where, masks and logic take complex operands", function()
      local z = cx({ { 1, 0 }, { 0, 0 }, { 0, -2 }, { 0 / 0, 0 } }, "complex64", dev)
      assert.same({ false, true, false, false }, z:logical_not():totable())
      local w = gpu.where(z:isnan(), 0, z)
      assert.equal("complex64", w.dtype)
      assert.same({ { 1, 0 }, { 0, 0 }, { 0, -2 }, { 0, 0 } }, values(w))
      local picked = z[z:abs():gt(0.5)]
      assert.same({ { 1, 0 }, { 0, -2 } }, values(picked))
    end)
  end)
end
