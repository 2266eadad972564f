-- spec/matrix_more_spec.lua — PyTorch's addmm, baddbmm, addmv, matrix_exp, solve_triangular,
-- cholesky_solve, lu, lu_factor, lu_factor_ex and lu_solve against PyTorch's results
-- (spec/fixtures/matrix_more/cases.lua, made by spec/fixtures/gen_matrix_more_fixtures.py),
-- on every device, in float64 and float32; their gradients (gradcheck in float64, and
-- matrix_exp's against PyTorch's); every misuse's error.
local h = require "spec.helper"
local gpu = h.gpu
local L = gpu.linalg
local ag = require "gpu.autograd"

local CASES = dofile("spec/fixtures/matrix_more/cases.lua")
local TOL = { float32 = 2e-4, float64 = 1e-10 }

local function A(t, dt, dev)
  local x = gpu.array(t.data, { dtype = "float64", device = dev }):reshape(t.shape)
  return x:astype(dt)
end
local function I(t, dev) return gpu.array(t.data, { dtype = "int32", device = dev }):reshape(t.shape) end
local function cases(op)
  local out = {}
  for _, c in ipairs(CASES) do if c.op == op then out[#out + 1] = c end end
  assert(#out > 0, "no fixture for " .. op)
  return out
end
local function close(x, t, tol, dt, dev)
  assert.equal(dt, x.dtype)
  h.assert_close(x:astype("float64"), A(t, "float64", dev), tol)
end
local function args(c, dt, dev)
  local r = {}
  for i, t in ipairs(c.args) do r[i] = A(t, dt, dev) end
  return table.unpack(r)
end

for _, dev in ipairs(h.devices()) do
  for _, dt in ipairs { "float64", "float32" } do
    local tol = TOL[dt]
    describe(("matrix routines on %s, %s"):format(dev, dt), function()
      it("addmm, baddbmm, addmv: beta * input + alpha * product, as torch (gpu.f and x:f)", function()
        for _, op in ipairs { "addmm", "baddbmm", "addmv" } do
          for _, c in ipairs(cases(op)) do
            local i, a, b = args(c, dt, dev)
            close(gpu[op](i, a, b, { beta = c.beta, alpha = c.alpha }), c.out, tol, dt, dev)
            close(i[op](i, a, b, { beta = c.beta, alpha = c.alpha }), c.out, tol, dt, dev)
          end
        end
        -- defaults beta = alpha = 1; beta = 0 ignores a NaN input, as torch
        local a, b = gpu.ones(2, 3, { dtype = dt, device = dev }), gpu.ones(3, 2, { dtype = dt, device = dev })
        h.assert_close(gpu.addmm(gpu.ones(2, 2, { dtype = dt, device = dev }), a, b), { { 4, 4 }, { 4, 4 } })
        h.assert_close(gpu.addmm(gpu.full({ 2, 2 }, 0 / 0, { dtype = dt, device = dev }), a, b, { beta = 0 }),
          { { 3, 3 }, { 3, 3 } })
      end)

      it("matrix_exp: every Pade degree, squarings, batches, as torch.linalg.matrix_exp", function()
        for _, c in ipairs(cases("matrix_exp")) do
          local a = args(c, dt, dev)
          -- float32 carries its relative error through the squarings of large norms
          local t = dt == "float32" and 2e-3 or 1e-9
          close(L.matrix_exp(a), c.out, t, dt, dev)
          close(gpu.matrix_exp(a), c.out, t, dt, dev)
          close(a:matrix_exp(), c.out, t, dt, dev)
        end
        -- a NaN anywhere: all NaN, as torch
        local nan = L.matrix_exp(gpu.array({ { 0 / 0, 1 }, { 0, 1 } }, { dtype = dt, device = dev }))
        for _, v in ipairs(h.flat(nan)) do assert.is_true(v ~= v) end
        local mixed = L.matrix_exp(gpu.array({ { { 0 / 0, 1 }, { 0, 1 } }, { { 0, 0 }, { 0, 0 } } }, { dtype = dt, device = dev }))
        for _, v in ipairs(h.flat(mixed[1])) do assert.is_true(v ~= v) end
        h.assert_close(mixed[2], gpu.eye(2, { dtype = dt }))                -- the others as they are
        local z = gpu.zeros(0, 0, { dtype = dt, device = dev })
        assert.same({ 0, 0 }, L.matrix_exp(z).shape)
        h.assert_close(L.matrix_exp(gpu.zeros(2, 3, 3, { dtype = dt, device = dev })),
          gpu.eye(3, { dtype = dt }):expand(2, 3, 3))
      end)

      it("solve_triangular: upper and lower, left and right, unitriangular, broadcast batches", function()
        for _, c in ipairs(cases("solve_triangular")) do
          local a, b = args(c, dt, dev)
          -- a singular triangle gives non-finite values where PyTorch's do (getrs's unit L
          -- step may turn an inf into NaN: 0 * inf), finite ones equal to PyTorch's
          local finite = true
          for _, v in ipairs(c.out.data) do finite = finite and v == v and math.abs(v) ~= math.huge end
          local x = L.solve_triangular(a, b, { upper = c.upper, left = c.left, unitriangular = c.unitriangular })
          if not finite then
            local got = h.flat(x)
            for i, v in ipairs(c.out.data) do
              local fin = v == v and math.abs(v) ~= math.huge
              assert.equal(fin, got[i] == got[i] and math.abs(got[i]) ~= math.huge)
              if fin then h.assert_close(got[i], v, tol) end
            end
          else
            close(x, c.out, tol * 10, dt, dev)
          end
        end
      end)

      it("cholesky_solve: lower and upper factors, batched (gpu.cholesky_solve and x:cholesky_solve)", function()
        for _, c in ipairs(cases("cholesky_solve")) do
          local b, f = args(c, dt, dev)
          close(gpu.cholesky_solve(b, f, c.upper), c.out, tol * 10, dt, dev)
          close(b:cholesky_solve(f, c.upper), c.out, tol * 10, dt, dev)
        end
      end)

      it("lu_factor, lu_factor_ex, lu: torch's factors and 1-based int32 pivots, A = P L U", function()
        for _, c in ipairs(cases("lu")) do
          local a = args(c, dt, dev)
          local lu, piv = L.lu_factor(a)
          close(lu, c.lu, tol, dt, dev)
          assert.equal("int32", piv.dtype)
          assert.same(h.flat(I(c.pivots, "cpu")), h.flat(piv))
          local lu2, piv2, info = L.lu_factor_ex(a)
          close(lu2, c.lu, tol, dt, dev)
          assert.same(h.flat(piv), h.flat(piv2))
          assert.equal("int32", info.dtype)
          assert.same(h.flat(gpu.zeros(info.shape, { dtype = "int32" })), h.flat(info))
          local p, l, u = L.lu(a)
          close(p, c.P, 0, dt, dev)
          close(l, c.L, tol, dt, dev)
          close(u, c.U, tol, dt, dev)
          h.assert_close(p:matmul(l):matmul(u), a, tol * 10)
        end
        -- a singular matrix: lu and lu_factor_ex take it, lu_factor refuses it as torch
        local s = gpu.array({ { 1, 2 }, { 2, 4 } }, { dtype = dt, device = dev })
        local _, _, info = L.lu_factor_ex(s)
        assert.equal(2, info:item())
        local p, l, u = L.lu(s)
        h.assert_close(p:matmul(l):matmul(u), s)
        h.fails({ "gpu.linalg.lu_factor: U[2,2] is zero" }, L.lu_factor, s)
        h.fails({ "(batch 2)" }, L.lu_factor, gpu.stack({ gpu.eye(2, { dtype = dt, device = dev }), s }))
        h.fails({ "gpu.linalg.lu_factor_ex", "zero on its diagonal" }, L.lu_factor_ex, s, { check_errors = true })
        local e, pe = L.lu_factor(gpu.zeros(2, 0, 3, { dtype = dt, device = dev }))
        assert.same({ 2, 0, 3 }, e.shape)
        assert.same({ 2, 0 }, pe.shape)
        -- empty matrices, as torch: lu of (3, 0) is P (3, 3), L (3, 0), U (0, 0)
        local p0, l0, u0 = L.lu(gpu.zeros(3, 0, { dtype = dt, device = dev }))
        assert.same({ { 3, 3 }, { 3, 0 }, { 0, 0 } }, { p0.shape, l0.shape, u0.shape })
        local pe2, le2, ue2 = L.lu(gpu.zeros(2, 0, 4, { dtype = dt, device = dev }))
        assert.same({ { 2, 0, 0 }, { 2, 0, 0 }, { 2, 0, 4 } }, { pe2.shape, le2.shape, ue2.shape })
        assert.same({ 0, 2, 1 }, L.lu_solve(gpu.zeros(0, 2, 2, { dtype = dt, device = dev }),
          gpu.zeros(0, 2, { dtype = "int32", device = dev }), gpu.zeros(0, 2, 1, { dtype = dt, device = dev })).shape)
      end)

      it("lu_solve: left and right, adjoint, broadcast batches, as torch.linalg.lu_solve", function()
        for _, c in ipairs(cases("lu_solve")) do
          local lu, b = A(c.args[1], dt, dev), A(c.args[3], dt, dev)
          local piv = I(c.args[2], dev)
          close(L.lu_solve(lu, piv, b, { left = c.left, adjoint = c.adjoint }), c.out, tol * 10, dt, dev)
        end
        -- through lu_factor: A X = B
        local G = gpu.random.Generator(5)
        local a = G:uniform(-1, 1, { 3, 5, 5 }, { dtype = dt, device = dev }) + gpu.eye(5, { dtype = dt, device = dev }) * 3
        local b = G:uniform(-1, 1, { 3, 5, 2 }, { dtype = dt, device = dev })
        local lu, piv = L.lu_factor(a)
        h.assert_close(a:matmul(L.lu_solve(lu, piv, b)), b, tol * 10)
      end)
    end)
  end

  describe("matrix routines in complex128 on " .. dev, function()
    -- (re, im) pairs as a complex array, and back
    local function CX(t) return gpu.view_as_complex(A(t, "float64", dev)) end
    local function cclose(x, t, tol)
      assert.equal("complex128", x.dtype)
      h.assert_close(gpu.view_as_real(x), A(t, "float64", dev), tol or 1e-10)
    end
    it("matrix_exp, solve_triangular, cholesky_solve, lu_factor, lu_solve: PyTorch's values", function()
      for _, c in ipairs(cases("c_matrix_exp")) do cclose(L.matrix_exp(CX(c.args[1])), c.out, 1e-9) end
      for _, c in ipairs(cases("c_solve_triangular")) do
        cclose(L.solve_triangular(CX(c.args[1]), CX(c.args[2]), { upper = c.upper, left = c.left }), c.out)
      end
      for _, c in ipairs(cases("c_cholesky_solve")) do
        cclose(gpu.cholesky_solve(CX(c.args[1]), CX(c.args[2]), c.upper), c.out)
      end
      for _, c in ipairs(cases("c_lu")) do
        local lu, piv = L.lu_factor(CX(c.args[1]))
        cclose(lu, c.lu)
        assert.same(h.flat(I(c.pivots, "cpu")), h.flat(piv))
        local p, l, u = L.lu(CX(c.args[1]))
        assert.equal("complex128", p.dtype)                          -- as torch: A's dtype
        cclose(p:matmul(l):matmul(u), c.args[1])
      end
      for _, c in ipairs(cases("c_lu_solve")) do
        cclose(L.lu_solve(CX(c.args[1]), I(c.args[2], dev), CX(c.args[3]), { adjoint = c.adjoint }), c.out)
      end
    end)
  end)

  describe("matrix routines' gradients on " .. dev, function()
    local G = gpu.random.Generator(11)
    local function S(...) return G:uniform(-1, 1, { ... }, { dtype = "float64", device = dev }) end
    local function W(n, ...) local x = S(...); return x + gpu.eye(n, { dtype = "float64", device = dev }) * 3 end
    local function check(fn, inputs) assert(ag.gradcheck(fn, inputs)) end

    it("addmm, baddbmm, addmv (every operand)", function()
      check(function(i, a, b) return gpu.addmm(i, a, b, { beta = 0.5, alpha = 2 }) end, { S(3), S(2, 4), S(4, 3) })
      check(function(i, a, b) return gpu.baddbmm(i, a, b, { beta = -1 }) end, { S(2, 1, 3), S(2, 2, 4), S(2, 4, 3) })
      check(function(i, a, b) return gpu.addmv(i, a, b, { alpha = 0.5 }) end, { S(2), S(2, 3), S(3) })
    end)

    it("matrix_exp: gradcheck, and PyTorch's gradients", function()
      check(function(a) return L.matrix_exp(a) end, { S(3, 3) })
      check(function(a) return L.matrix_exp(a * 4) end, { S(2, 3, 3) })
      for _, c in ipairs(cases("matrix_exp")) do
        local a = A(c.args[1], "float64", dev):requires_grad()
        local y = (L.matrix_exp(a) * A(c.w, "float64", dev)):sum()
        y:backward()
        h.assert_close(a.grad, A(c.grad, "float64", dev), 1e-8)
      end
    end)

    it("lu_factor and lu: PyTorch's gradients of LU, L and U", function()
      for _, c in ipairs(cases("lu_grad")) do
        local a = A(c.args[1], "float64", dev):requires_grad()
        local lu = L.lu_factor(a)
        local _, l, u = L.lu(a)
        local y = (lu * A(c.w[1], "float64", dev)):sum() + (l * A(c.w[2], "float64", dev)):sum()
          + (u * A(c.w[3], "float64", dev)):sum()
        y:backward()
        h.assert_close(a.grad, A(c.grad, "float64", dev), 1e-9)
      end
      h.fails({ "gradient needs square matrices" }, function()
        local x = S(2, 3):requires_grad()
        L.lu_factor(x):sum():backward()
      end)
    end)

    it("complex128: matrix_exp, lu, lu_factor + lu_solve, solve_triangular, addmm", function()
      local function C(...)
        local s = { ... }
        s[#s + 1] = 2
        return gpu.view_as_complex(G:uniform(-1, 1, s, { dtype = "float64", device = dev }))
      end
      local a = C(3, 3) + gpu.eye(3, { dtype = "complex128", device = dev }) * 3
      check(function(x) return L.matrix_exp(x) end, { C(3, 3) })
      check(function(x) local _, l, u = L.lu(x); return gpu.concat({ l:reshape(-1), u:reshape(-1) }) end, { a })
      check(function(x, y) local lu, piv = L.lu_factor(x); return L.lu_solve(lu, piv, y, { adjoint = true }) end,
        { a, C(3, 2) })
      check(function(x, y) return L.solve_triangular(x, y, { upper = false, left = false }) end, { a, C(2, 3) })
      check(function(i, x, y) return gpu.addmm(i, x, y, { alpha = 0.5 }) end, { C(3), C(2, 3), C(3, 3) })
    end)

    it("solve_triangular, cholesky_solve, lu_solve (A and B)", function()
      check(function(a, b) return L.solve_triangular(a, b, { upper = true }) end, { W(3, 3, 3), S(3, 2) })
      check(function(a, b) return L.solve_triangular(a, b, { upper = false, left = false, unitriangular = true }) end,
        { S(3, 3), S(2, 3) })
      check(function(f, b) return gpu.cholesky_solve(b, gpu.tril(f)) end, { W(3, 3, 3), S(3, 2) })
      check(function(lu, b)
        local piv = gpu.array({ 2, 3, 3 }, { dtype = "int32", device = dev })
        return L.lu_solve(lu, piv, b, { adjoint = true })
      end, { W(3, 3, 3), S(3, 2) })
      check(function(lu, b)
        local piv = gpu.array({ { 3, 2, 3 }, { 1, 3, 3 } }, { dtype = "int32", device = dev })
        return L.lu_solve(lu, piv, b)
      end, { W(3, 2, 3, 3), S(3, 2) })
      check(function(lu, b)
        local piv = gpu.array({ 2, 2, 3 }, { dtype = "int32", device = dev })
        return L.lu_solve(lu, piv, b, { left = false }) + L.lu_solve(lu, piv, b, { left = false, adjoint = true })
      end, { W(3, 3, 3), S(2, 3) })
      -- through lu_factor: the gradient of A's solution, as solve's
      local a, b = W(4, 4, 4), S(4, 2)
      check(function(x, y) local lu, piv = L.lu_factor(x); return L.lu_solve(lu, piv, y) end, { a, b })
    end)
  end)
end

describe("matrix routines' misuse", function()
  local a = gpu.eye(3)
  it("addmm, baddbmm, addmv: dimensions, shapes, options, extra arguments", function()
    h.fails({ "bad argument #2 to 'addmm'", "mat1 must be 2-D, got 3-D" }, gpu.addmm, gpu.zeros(3), gpu.zeros(1, 3, 3), a)
    h.fails({ "addmm: mat1 and mat2 shapes cannot be multiplied ((3, 3) and (2, 3))" }, gpu.addmm, a, a, gpu.zeros(2, 3))
    h.fails({ "addmm: input of shape (2) does not broadcast" }, gpu.addmm, gpu.zeros(2), a, a)
    h.fails({ "bad argument #1 to 'addmm'", "gpu.array expected" }, gpu.addmm, 1, a, a)
    h.fails({ "bad argument #4 to 'addmm'", "gamma" }, gpu.addmm, a, a, a, { gamma = 1 })
    h.fails({ "bad argument #4 to 'addmm'", "beta" }, gpu.addmm, a, a, a, { beta = "x" })
    h.fails({ "bad argument #5 to 'addmm'" }, gpu.addmm, a, a, a, {}, 1)
    h.fails({ "baddbmm: batch1 and batch2 must have the same batch size, got 2 and 3" }, gpu.baddbmm,
      gpu.zeros(1), gpu.zeros(2, 3, 3), gpu.zeros(3, 3, 3))
    h.fails({ "bad argument #3 to 'baddbmm'", "batch2 must be 3-D, got 2-D" }, gpu.baddbmm, gpu.zeros(1), gpu.zeros(2, 3, 3), a)
    h.fails({ "bad argument #3 to 'addmv'", "vec must be 1-D, got 2-D" }, gpu.addmv, gpu.zeros(3), a, a)
    h.fails({ "addmv: mat and vec shapes cannot be multiplied" }, gpu.addmv, gpu.zeros(3), a, gpu.zeros(2))
  end)

  it("matrix_exp, solve_triangular, cholesky_solve: types, shapes, options", function()
    h.fails({ "bad argument #1 to 'gpu.linalg.matrix_exp'", "float or complex", "int64" }, L.matrix_exp,
      gpu.array({ { 1, 2 }, { 3, 4 } }, { dtype = "int64" }))
    h.fails({ "gpu.linalg.matrix_exp: A must be batches of square matrices" }, L.matrix_exp, gpu.zeros(2, 3))
    h.fails({ "gpu.linalg.matrix_exp: A must be at least two-dimensional" }, L.matrix_exp, gpu.zeros(3))
    h.fails({ "matrix_exp", "gpu.array expected" }, gpu.matrix_exp, "x")
    h.fails({ "option 'upper' is required" }, L.solve_triangular, a, a)
    h.fails({ "option 'upper' is required" }, L.solve_triangular, a, a, {})
    h.fails({ "bad argument #3 to 'gpu.linalg.solve_triangular'", "lower" }, L.solve_triangular, a, a, { lower = true })
    h.fails({ "gpu.linalg.solve_triangular: incompatible shapes of A (3,3) and B (2,3)" }, L.solve_triangular, a,
      gpu.zeros(2, 3), { upper = true })
    h.fails({ "gpu.linalg.solve_triangular: B must be at least two-dimensional" }, L.solve_triangular, a, gpu.zeros(3),
      { upper = true })
    h.fails({ "bad argument #4 to 'gpu.linalg.solve_triangular'" }, L.solve_triangular, a, a, { upper = true }, 1)
    h.fails({ "bad argument #3 to 'gpu.linalg.cholesky_solve'", "boolean" }, L.cholesky_solve, a, a, "yes")
    h.fails({ "gpu.linalg.cholesky_solve: incompatible shapes of B (2,3) and L (3,3)" }, L.cholesky_solve,
      gpu.zeros(2, 3), a)
  end)

  it("lu, lu_factor, lu_solve: types, shapes, pivots, options", function()
    h.fails({ "gpu.linalg.lu_factor: A must be at least two-dimensional" }, L.lu_factor, gpu.zeros(3))
    h.fails({ "bad argument #1 to 'gpu.linalg.lu'", "gpu.array expected" }, L.lu, {})
    h.fails({ "bad argument #1 to 'gpu.linalg.lu_factor'", "float or complex" }, L.lu_factor, gpu.array({ { 1 } }, { dtype = "int32" }))
    h.fails({ "gpu.linalg.lu: LU without pivoting is not implemented" }, L.lu, a, { pivot = false })
    h.fails({ "bad argument #2 to 'gpu.linalg.lu_factor'", "pivoting" }, L.lu_factor, a, { pivoting = true })
    local lu, piv = L.lu_factor(a)
    h.fails({ "bad argument #2 to 'gpu.linalg.lu_solve'", "integer array" }, L.lu_solve, lu, piv:astype("float32"), a)
    h.fails({ "gpu.linalg.lu_solve: pivots of shape (2) do not match LU of shape (3,3)" }, L.lu_solve, lu,
      gpu.array({ 1, 2 }, { dtype = "int32" }), a)
    h.fails({ "gpu.linalg.lu_solve: pivots must be between 1 and 3, got 0" }, L.lu_solve, lu,
      gpu.array({ 0, 2, 3 }, { dtype = "int32" }), a)
    h.fails({ "gpu.linalg.lu_solve: pivots must be between 1 and 3, got 4" }, L.lu_solve, lu,
      gpu.array({ 1, 4, 3 }, { dtype = "int64" }), a)
    h.fails({ "gpu.linalg.lu_solve: incompatible shapes of LU (3,3) and B (2,2)" }, L.lu_solve, lu, piv, gpu.zeros(2, 2))
    h.fails({ "gpu.linalg.lu_solve: shapes (2,3,3) and (3,3,1) do not match: their batch dimensions cannot be broadcast" }, L.lu_solve,
      gpu.zeros(2, 3, 3), gpu.ones(2, 3, { dtype = "int32" }), gpu.zeros(3, 3, 1))
    h.fails({ "bad argument #4 to 'gpu.linalg.lu_solve'", "adjoin" }, L.lu_solve, lu, piv, a, { adjoin = true })
  end)
end)
