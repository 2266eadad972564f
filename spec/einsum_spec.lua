-- gpu.einsum, gpu.tensordot, gpu.kron, gpu.inner, gpu.vdot (lua/gpu/routines/einsum.lua)
-- against NumPy (spec/fixtures/routines/*.lua, made by tools/gen_routines_fixtures.py), in
-- float32 and float64 on every device, non-contiguous operands, errors, gradients, and the
-- contraction through matmul (no elementwise loop over a contracted index).
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"
local E = require "spec.fixtures.routines.einsum"
local T = require "spec.fixtures.routines.tensordot"
local P = require "spec.fixtures.routines.products"

local function arr(t, dtype, dev)
  return gpu.array(#t.data > 0 and t.data or {}, { dtype = dtype, device = dev }):reshape(t.shape)
end

local function expect(got, want, tol)
  local w = gpu.array(#want.data > 0 and want.data or {}, { dtype = "float64" }):reshape(want.shape)
  h.assert_close(got:to("cpu"), w, tol)
end

local TOL = { float32 = 1e-4, float64 = 1e-12 }

for _, dev in ipairs(h.devices()) do
  describe("gpu.einsum on " .. dev, function()
    for _, dtype in ipairs({ "float32", "float64" }) do
      it("matches NumPy in " .. dtype, function()
        for _, c in ipairs(E) do
          local xs = {}
          for k, t in ipairs(c.inputs) do xs[k] = arr(t, dtype, dev) end
          local ok, err = pcall(function() expect(gpu.einsum(c.subs, table.unpack(xs)), c.out, TOL[dtype]) end)
          assert(ok, c.subs .. ": " .. tostring(err))
        end
      end)
    end

    it("takes non-contiguous operands (transposes, steps)", function()
      local a = gpu.random.randn(4, 3, { dtype = "float64", device = dev })
      local b = gpu.random.randn(8, 5, { dtype = "float64", device = dev })
      local at, bs = a.T, b[{ { 1, 8, 2 }, ":" }]
      assert.is_false(at:is_contiguous())
      h.assert_close(gpu.einsum("ij,jk->ik", at, bs), gpu.matmul(at:contiguous(), bs:contiguous()), 1e-12)
      h.assert_close(gpu.einsum("ji->", at), a:sum(), 1e-12)
    end)

    it("takes Lua numbers as 0-d operands of the first array's dtype", function()
      local x = gpu.arange(3, { dtype = "float64", device = dev })
      h.assert_close(gpu.einsum(",i->i", 2, x), x * 2)
      h.assert_close(gpu.einsum("i,->", x, 0.5), gpu.array(1.5))
      assert.equal("float64", gpu.einsum("i,->i", x, 3).dtype)
    end)

    it("keeps the operand's dtype and gives a new array for a single operand", function()
      local x = gpu.ones(2, 3, { dtype = "float32", device = dev })
      local y = gpu.einsum("ij->ij", x)
      assert.equal("float32", y.dtype)
      assert.is_false(rawequal(x, y))
      assert.equal("int64", gpu.einsum("ij,j->i", gpu.arange(6, { device = dev }):reshape(2, 3),
        gpu.arange(3, { device = dev })).dtype)
    end)

    it("contracts through one batched matmul, not an elementwise loop", function()
      local a = gpu.ones(3, 4, 5, { device = dev })
      local b = gpu.ones(3, 5, 2, { device = dev })
      local matmul, calls = gpu.matmul, {}
      gpu.matmul = function(x, y) calls[#calls + 1] = { x.shape, y.shape }; return matmul(x, y) end
      local ok, y = pcall(gpu.einsum, "bij,bjk->bik", a, b)
      gpu.matmul = matmul
      assert(ok, y)
      assert.same({ { { 3, 4, 5 }, { 3, 5, 2 } } }, calls)
      h.assert_close(y, gpu.full({ 3, 4, 2 }, 5, { device = dev }))
    end)

    it("orders three or more operands greedily (smallest intermediate first)", function()
      -- (1000, 2) (2, 1000) (1000, 1): a @ b first would make a (1000, 1000) intermediate
      local a = gpu.ones(1000, 2, { device = dev })
      local b = gpu.ones(2, 1000, { device = dev })
      local c = gpu.ones(1000, 1, { device = dev })
      local matmul, sizes = gpu.matmul, {}
      gpu.matmul = function(x, y) local z = matmul(x, y); sizes[#sizes + 1] = z.size; return z end
      local ok, y = pcall(gpu.einsum, "ij,jk,kl->il", a, b, c)
      gpu.matmul = matmul
      assert(ok, y)
      h.assert_close(y, gpu.full({ 1000, 1 }, 2000, { device = dev }))
      assert.same({ 2, 1000 }, sizes)
    end)

    it("raises naming einsum and the fault", function()
      local x = gpu.ones(2, 3, { device = dev })
      h.fails({ "einsum", "2 operands" }, gpu.einsum, "ij,jk->ik", x)
      h.fails({ "einsum", "operand 1 has 2 axes", "'ijk'" }, gpu.einsum, "ijk", x)
      h.fails({ "einsum", "invalid character '1'" }, gpu.einsum, "i1", x)
      h.fails({ "einsum", "'k' is not in any input" }, gpu.einsum, "ij->k", x)
      h.fails({ "einsum", "more than once" }, gpu.einsum, "ij->ii", x)
      h.fails({ "einsum", "subscript 'j' has size 2" }, gpu.einsum, "ij,jk", x, gpu.ones(2, 2, { device = dev }))
      h.fails({ "einsum", "no '...'" }, gpu.einsum, "...j->j", gpu.ones(2, 2, 3, { device = dev }))
      h.fails({ "einsum", "ellipsis" }, gpu.einsum, "i..j", x)
      h.fails({ "bad argument #1 to 'einsum'", "subscripts string" }, gpu.einsum, x, x)
      h.fails({ "bad argument #3 to 'einsum'", "gpu.array expected" }, gpu.einsum, "ij,jk", x, "3")
      h.fails({ "bad argument #2 to 'einsum'", "gpu.array expected" }, gpu.einsum, ",", 2, 3)
      local w = gpu.ones(1, 2, 1, 2, 1, { device = dev })
      h.fails({ "einsum: the output would have 10 axes, more than the 8 an array can have" },
        gpu.einsum, "abcde,fghij->abcdefghij", w, w)
      h.fails({ "einsum: the output would have 10 axes" }, gpu.einsum, "abcde,fghij", w, w)
      h.fails({ "einsum: the output would have 9 axes" }, gpu.einsum, "...,fghij", gpu.ones(1, 1, 1, 1), w)
    end)
  end)

  describe("gpu.tensordot, kron, inner, vdot on " .. dev, function()
    for _, dtype in ipairs({ "float32", "float64" }) do
      it("match NumPy in " .. dtype, function()
        for i, c in ipairs(T) do
          local ok, err = pcall(function()
            expect(gpu.tensordot(arr(c.a, dtype, dev), arr(c.b, dtype, dev), c.axes), c.out, TOL[dtype])
          end)
          assert(ok, "tensordot case " .. i .. ": " .. tostring(err))
        end
        for i, c in ipairs(P) do
          local ok, err = pcall(function()
            expect(gpu[c.fn](arr(c.a, dtype, dev), arr(c.b, dtype, dev)), c.out, TOL[dtype])
          end)
          assert(ok, c.fn .. " case " .. i .. ": " .. tostring(err))
        end
      end)
    end

    it("raise naming the function and the fault", function()
      local a, b = gpu.ones(2, 3, { device = dev }), gpu.ones(4, 2, { device = dev })
      h.fails({ "tensordot", "shape mismatch", "axis 2 of a has 3", "axis 1 of b has 4" }, gpu.tensordot, a, b, 1)
      h.fails({ "tensordot", "axis 3 is out of range" }, gpu.tensordot, a, b, { { 3 }, { 1 } })
      h.fails({ "tensordot", "must be in 0..2" }, gpu.tensordot, a, b, 3)
      h.fails({ "tensordot", "equal lengths" }, gpu.tensordot, a, b, { { 1, 2 }, { 1 } })
      h.fails({ "inner", "last axes differ" }, gpu.inner, a, b)
      h.fails({ "vdot", "6 and 8 elements" }, gpu.vdot, a, b)
      h.fails({ "kron", "gpu.array expected" }, gpu.kron, a, 2)
    end)
  end)
end

describe("einsum gradients (float64)", function()
  local function r(...) return gpu.random.randn({ ... }, { dtype = "float64", device = "cpu" }) end
  local function check(fn, inputs)
    local ok, msg = ag.gradcheck(fn, inputs)
    assert(ok, msg)
  end
  it("flow through matmul, diagonals and sums", function()
    check(function(a, b) return gpu.einsum("ij,jk->ik", a, b) end, { r(2, 3), r(3, 2) })
    check(function(a) return gpu.einsum("ii->i", a) end, { r(3, 3) })
    check(function(a, b, c) return gpu.einsum("ij,jk,k->i", a, b, c) end, { r(2, 3), r(3, 4), r(4) })
    check(function(a, b) return gpu.einsum("bij,bjk->bik", a, b) end, { r(2, 2, 3), r(2, 3, 2) })
    check(function(a, b) return gpu.tensordot(a, b, 1) end, { r(2, 3), r(3, 2) })
    check(function(a, b) return gpu.kron(a, b) end, { r(2, 2), r(2, 1) })
    check(function(a, b) return gpu.vdot(a, b) end, { r(2, 3), r(3, 2) })
  end)
end)
