-- spec/linalg_lapack_spec.lua — gpu.linalg's factorizations (LAPACK on the cpu) against
-- NumPy's results (spec/fixtures/linalg/*.npy, made by tools/gen_linalg_fixtures.py):
-- values where they do not depend on LAPACK's sign choices, properties (Q orthonormal,
-- R upper triangular, U S Vh = A, A V = V diag(w)) for the decompositions; float32 and
-- float64, batched and not, views, empty batches, NumPy's promotions and the LinAlgErrors.
local h = require "spec.helper"
local gpu = h.gpu
local L = gpu.linalg

local FIX = "spec/fixtures/linalg/"
local TOL = { float32 = 3e-4, float64 = 1e-9 }
local DTYPES = { "float32", "float64" }

local function F(name, dt, dev) return gpu.load(FIX .. name .. ".npy"):astype(dt):to(dev) end
local close = h.assert_close
local function mT(x) return x:transpose(-1, -2) end
-- the same values through a transposed (non-contiguous) view
local function strided(x) return mT(mT(x):contiguous()) end
local function eye_like(n, x) return gpu.eye(n, { dtype = x.dtype, device = x.device }) end
local function shape(x) return table.concat(x.shape, ",") end
-- max |x| as a Lua number
local function amax(x) return x.size == 0 and 0 or x:abs():max():item() end

for _, dev in ipairs(h.devices()) do
  for _, dt in ipairs(DTYPES) do
    local tol = TOL[dt]
    describe(("gpu.linalg on %s, %s"):format(dev, dt), function()
      it("solve: a matrix and a vector right-hand side, batched with broadcasting, views", function()
        local a = F("a4", dt, dev)
        close(L.solve(a, F("b4", dt, dev)), F("a4_solve_b4", dt, dev), tol)
        local x = L.solve(a, F("v4", dt, dev))
        assert.equal("4", shape(x))
        close(x, F("a4_solve_v4", dt, dev), tol)
        close(L.solve(strided(a), strided(F("b4", dt, dev))), F("a4_solve_b4", dt, dev), tol)
        local xb = L.solve(F("ab", dt, dev), F("bb", dt, dev))           -- (2,3,3,3) and (3,3,2)
        assert.equal("2,3,3,2", shape(xb))
        close(xb, F("ab_solve_bb", dt, dev), tol)
        assert.equal(dt, xb.dtype)
      end)

      it("solve: systems past the small-matrix path go through getrf/getrs (a x = b)", function()
        local G = gpu.random.Generator(7)
        for _, n in ipairs { 8, 9, 40 } do
          local a = G:uniform(-1, 1, { 2, n, n }, { dtype = dt, device = dev }) + gpu.eye(n, { dtype = dt, device = dev }) * n
          local b = G:uniform(-1, 1, { 2, n, 3 }, { dtype = dt, device = dev })
          close(a:matmul(L.solve(a, b)), b, tol * 10)
          close(a:matmul(L.solve(strided(a), b)), b, tol * 10)
          local z = gpu.stack({ a[1], gpu.zeros(n, n, { dtype = dt, device = dev }) })
          h.fails({ "gpu.linalg.solve: matrix is singular (batch 2)" }, L.solve, z, b)
        end
      end)

      it("inv: NumPy's values, a @ inv(a) = I, batched and through a view", function()
        for _, tag in ipairs { "a4", "ab" } do
          local a = F(tag, dt, dev)
          local x = L.inv(a)
          close(x, F(tag .. "_inv", dt, dev), tol)
          close(a:matmul(x), eye_like(a.shape[a.ndim], a):expand(a.shape), tol * 10)
          close(L.inv(strided(a)), x, tol)
        end
      end)

      it("det and slogdet: NumPy's values, a negative determinant, a singular matrix", function()
        for _, tag in ipairs { "a4", "ab" } do
          local a = F(tag, dt, dev)
          close(L.det(a), F(tag .. "_det", dt, dev), tol)
          local s, l = L.slogdet(a)
          close(s, F(tag .. "_sign", dt, dev), 0)
          close(l, F(tag .. "_logdet", dt, dev), tol)
        end
        local n = F("neg", dt, dev)
        close(L.det(n), -6, tol)
        local s, l = L.slogdet(n)
        assert.equal(-1, s:item())
        close(l, math.log(6), tol)
        local s0, l0 = L.slogdet(gpu.array({ { 1, 2 }, { 2, 4 } }, { dtype = dt, device = dev }))
        assert.equal(0, s0:item())
        assert.equal(-math.huge, l0:item())
        assert.equal(0, L.det(gpu.zeros(3, 3, { dtype = dt, device = dev })):item())
      end)

      it("cholesky: NumPy's lower factor, the upper one, only one triangle read", function()
        for _, tag in ipairs { "s4", "sb" } do
          local a = F(tag, dt, dev)
          local l = L.cholesky(a)
          close(l, F(tag .. "_chol", dt, dev), tol)
          close(L.cholesky(a, { upper = true }), mT(l), tol)
          local g = F(tag .. "_g", dt, dev)                       -- upper triangle of a, junk below
          close(L.cholesky(g, { upper = true }), mT(l), tol)
          close(L.cholesky(mT(g)), l, tol)                        -- a view: junk above
        end
      end)

      it("qr: Q orthonormal, R upper triangular, Q R = A, reduced, complete and r", function()
        for _, tag in ipairs { "a4", "t53", "w35", "rb" } do
          local a = F(tag, dt, dev)
          local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
          local k = math.min(m, n)
          for _, mode in ipairs { "reduced", "complete" } do
            local q, r = L.qr(a, { mode = mode })
            local kq = mode == "complete" and m or k
            assert.equal(kq, q.shape[q.ndim])
            assert.equal(kq, r.shape[r.ndim - 1])
            close(mT(q):matmul(q), eye_like(kq, q):expand(q.shape[1] and #q.shape > 2 and { q.shape[1], kq, kq } or { kq, kq }), tol * 10)
            close(q:matmul(r), a, tol * 10)
            local lower = gpu.arange(1, kq + 1, { device = dev }):reshape(kq, 1):gt(gpu.arange(1, n + 1, { device = dev }))
            assert.equal(0, amax(r * lower:astype(dt)))
          end
          local r = L.qr(a, { mode = "r" })
          local _, r2 = L.qr(a)
          close(r, r2, 0)
        end
        close(select(2, L.qr(strided(F("a4", dt, dev)))), select(2, L.qr(F("a4", dt, dev))), tol)
      end)

      it("svd: U S Vh = A, NumPy's singular values, orthonormal factors, full and reduced", function()
        for _, tag in ipairs { "a4", "t53", "w35", "rb", "ab" } do
          local a = F(tag, dt, dev)
          local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
          local k = math.min(m, n)
          local u, s, vh = L.svd(a, { full_matrices = false })
          close(s, F(tag .. "_svdvals", dt, dev), tol)
          close((u * s:unsqueeze(-2)):matmul(vh), a, tol * 10)
          close(mT(u):matmul(u), eye_like(k, u):expand((function() local t = u.shape; t[#t - 1] = k; return t end)()), tol * 10)
          local uf, sf, vf = L.svd(a)                                      -- full_matrices = true
          assert.equal(m, uf.shape[uf.ndim])
          assert.equal(n, vf.shape[vf.ndim - 1])
          close(sf, s, tol)
          close(vf:matmul(mT(vf)), eye_like(n, vf):expand(vf.shape), tol * 10)
          close(L.svd(a, { compute_uv = false }), s, tol)
          close(L.svdvals(strided(a)), s, tol)
        end
      end)

      it("eigh and eigvalsh: ascending NumPy eigenvalues, A V = V diag(w), V orthonormal, UPLO", function()
        for _, tag in ipairs { "s4", "sb" } do
          local a = F(tag, dt, dev)
          local n = a.shape[a.ndim]
          local w, v = L.eigh(a)
          close(w, F(tag .. "_eigvalsh", dt, dev), tol)
          close(a:matmul(v), v * w:unsqueeze(-2), tol * 100)
          close(mT(v):matmul(v), eye_like(n, v):expand(v.shape), tol * 10)
          close(L.eigvalsh(a), w, tol)
          local g = F(tag .. "_g", dt, dev)
          close(L.eigvalsh(g, { UPLO = "U" }), F(tag .. "_eigvalsh_U", dt, dev), tol)
          close(L.eigh(mT(g)), F(tag .. "_eigvalsh_U", dt, dev), tol)   -- a view; lower read
        end
      end)

      it("lstsq: NumPy's solution, residuals, rank and singular values", function()
        local x, res, rank, s = L.lstsq(F("t53", dt, dev), F("ls_b", dt, dev))
        close(x, F("ls_x", dt, dev), tol * 10)
        close(res, F("ls_res", dt, dev), tol * 10)
        assert.equal(3, rank)
        close(s, F("ls_s", dt, dev), tol)
        local xw, rw, rankw = L.lstsq(F("w35", dt, dev), F("lsw_b", dt, dev))  -- minimum norm
        close(xw, F("lsw_x", dt, dev), tol * 10)
        assert.equal("0", shape(rw))
        assert.equal(3, rankw)
        local xd, rd, rankd = L.lstsq(F("lsd_a", dt, dev), gpu.array({ 1, 2, 3.5 }, { dtype = dt, device = dev }))
        close(xd, F("lsd_x", dt, dev), tol * 10)
        assert.equal("0", shape(rd))
        assert.equal(1, rankd)
      end)

      it("pinv, matrix_rank, matrix_power: NumPy's values, batched", function()
        close(L.pinv(F("t53", dt, dev)), F("t53_pinv", dt, dev), tol * 10)
        close(L.pinv(F("rb", dt, dev)), F("rb_pinv", dt, dev), tol * 10)
        close(L.pinv(strided(F("t53", dt, dev))), F("t53_pinv", dt, dev), tol * 10)
        local a = F("a4", dt, dev)
        close(L.matrix_power(a, 3), F("a4_pow3", dt, dev), tol * 10)
        close(L.matrix_power(a, -2), F("a4_powm2", dt, dev), tol * 10)
        close(L.matrix_power(a, 0), F("a4_pow0", dt, dev), 0)
        close(L.matrix_power(a, 1), a, 0)
        local r = L.matrix_rank(F("ab", dt, dev))
        assert.equal("int64", r.dtype)
        close(r, F("ab_rank", "int64", dev), 0)
        assert.equal(1, L.matrix_rank(F("lsd_a", dt, dev)):item())
        assert.equal(0, L.matrix_rank(gpu.zeros(3, { dtype = dt, device = dev })):item())
      end)

      it("norm (and gpu.norm) with vector and matrix orders, cond", function()
        local a, rb = F("t53", dt, dev), F("rb", dt, dev)
        local ords = { ["2"] = 2, m2 = -2, nuc = "nuc", fro = "fro", ["1"] = 1, inf = math.huge }
        for name, o in pairs(ords) do
          close(L.norm(a, o), F("t53_norm_" .. name, dt, dev), tol)
          close(L.norm(rb, o, { 2, 3 }), F("rb_norm_" .. name, dt, dev), tol)
          close(gpu.norm(rb, { 2, 3 }, { ord = o }), F("rb_norm_" .. name, dt, dev), tol)
        end
        close(L.norm(rb, 2, { 3, 1 }), F("rb_norm_2_ax20", dt, dev), tol)
        close(L.norm(rb, "nuc", { 3, 1 }), F("rb_norm_nuc_ax20", dt, dev), tol)
        assert.equal("2,1,1", shape(L.norm(rb, 2, { 2, 3 }, { keepdims = true })))
        close(L.norm(gpu.array({ 3, 4 }, { dtype = dt, device = dev })), 5, tol)
        h.fails({ "gpu.linalg.norm", "improper number of dimensions" }, L.norm, rb, 2)
        local c = F("a4", dt, dev)
        local conds = { none = nil, m2 = -2, ["1"] = 1, fro = "fro", inf = math.huge }
        for name, p in pairs(conds) do close(L.cond(c, p), F("a4_cond_" .. name, dt, dev), tol * 10) end
        close(L.cond(c), F("a4_cond_none", dt, dev), tol * 10)
        close(L.cond(F("ab", dt, dev)), F("ab_cond", dt, dev), tol * 10)
      end)

      it("cross and multi_dot: NumPy's values, broadcasting, an axis, vector ends", function()
        close(L.cross(F("cr_u", dt, dev), F("cr_v", dt, dev)), F("cr_uv", dt, dev), tol)
        local u0 = F("cr_u0", dt, dev)
        close(L.cross(u0, u0:flip(1) * 2 + 1, 1), F("cr_u0v0", dt, dev), tol)
        h.fails({ "gpu.linalg.cross", "dimension must be 2 or 3, got 4" }, L.cross, gpu.ones(4), gpu.ones(4))
        local ms = {}
        for i = 0, 3 do ms[#ms + 1] = F("md_" .. i, dt, dev) end
        close(L.multi_dot(ms), F("md", dt, dev), tol * 10)
        close(L.multi_dot({ ms[2], ms[3] }), ms[2]:matmul(ms[3]), tol)
        h.fails({ "gpu.linalg.multi_dot", "do not align" }, L.multi_dot, { ms[2], ms[4] })
      end)

      it("empty batches and empty matrices", function()
        local z = gpu.zeros(0, 3, 3, { dtype = dt, device = dev })
        assert.equal("0,3,3", shape(L.inv(z)))
        assert.equal("0", shape(L.det(z)))
        assert.equal("0,3,2", shape(L.solve(z, gpu.zeros(0, 3, 2, { dtype = dt, device = dev }))))
        assert.equal("0,3,3", shape(L.cholesky(z)))
        local w, v = L.eigh(z)
        assert.equal("0,3", shape(w)); assert.equal("0,3,3", shape(v))
        local u, s, vh = L.svd(gpu.zeros(2, 0, 4, 3, { dtype = dt, device = dev }))
        assert.equal("2,0,4,4", shape(u)); assert.equal("2,0,3", shape(s)); assert.equal("2,0,3,3", shape(vh))
        local e = gpu.zeros(0, 0, { dtype = dt, device = dev })
        assert.equal("0,0", shape(L.inv(e)))
        assert.equal(1, L.det(e):item())
        local u0, s0, v0 = L.svd(gpu.zeros(3, 0, { dtype = dt, device = dev }))
        close(u0, gpu.eye(3), 0); assert.equal("0", shape(s0)); assert.equal("0,0", shape(v0))
        local q, r = L.qr(gpu.zeros(3, 0, { dtype = dt, device = dev }), { mode = "complete" })
        close(q, gpu.eye(3), 0); assert.equal("3,0", shape(r))
      end)
    end)
  end

  describe("gpu.linalg on " .. dev .. ": dtypes and errors", function()
    it("promotes integers and bool to float64 and computes half dtypes in float32", function()
      local i = gpu.array({ { 2, 1 }, { 1, 3 } }, { dtype = "int32", device = dev })
      assert.equal("float64", L.inv(i).dtype)
      assert.equal("float64", L.det(gpu.eye(2, { dtype = "bool", device = dev })).dtype)
      close(L.det(i), 5, 1e-12)
      for _, hd in ipairs { "float16", "bfloat16" } do
        local x = L.inv(i:astype(hd))
        assert.equal(hd, x.dtype)
        close(x:astype("float64"), L.inv(i), 1e-2)
      end
      assert.equal("float64", L.solve(i, gpu.ones(2, { dtype = "float64", device = dev })).dtype)
      local d = L.det(gpu.array({ { 30, 1 }, { 2, 40 } }, { dtype = "float16", device = dev }))
      assert.equal("float16", d.dtype)
      assert.equal(1198, d:item())            -- exact in float16; exp(log 1198) rounded first is not
      local s, l = L.slogdet(gpu.eye(2, { dtype = "bfloat16", device = dev }) * 3)
      assert.equal("bfloat16", s.dtype); assert.equal("bfloat16", l.dtype)
    end)

    it("names the function and the 1-based batch element of a failed matrix", function()
      local a = gpu.stack({ gpu.eye(2), gpu.eye(2), gpu.zeros(2, 2) }):to(dev)
      h.fails({ "gpu.linalg.solve: matrix is singular (batch 3)" }, L.solve, a, gpu.ones(3, 2, 1):to(dev))
      h.fails({ "gpu.linalg.inv: matrix is singular (batch 3)" }, L.inv, a)
      h.fails({ "gpu.linalg.inv: matrix is singular" }, L.inv, gpu.zeros(2, 2, { device = dev }))
      local p = gpu.stack({ gpu.eye(2), -gpu.eye(2) }):to(dev)
      h.fails({ "gpu.linalg.cholesky: matrix is not positive definite (batch 2)" }, L.cholesky, p)
      local x = gpu.ones(2, 2, { device = dev })
      local before = x:totable()
      pcall(L.inv, x)
      assert.same(before, x:totable())
    end)

    it("fails an infinity in the iterative drivers as 'did not converge' instead of looping", function()
      local x = gpu.array({ { 1, 2 }, { 3, math.huge } }, { dtype = "float64", device = dev })
      h.fails({ "gpu.linalg.svd: SVD did not converge" }, L.svd, x)
      h.fails({ "gpu.linalg.svdvals: SVD did not converge (batch 2)" }, L.svdvals, gpu.stack({ gpu.eye(2, { dtype = "float64", device = dev }), x }))
      h.fails({ "gpu.linalg.eigh: eigenvalues did not converge" }, L.eigh, x)
      h.fails({ "gpu.linalg.lstsq", "did not converge" }, L.lstsq, x, gpu.ones(2, { device = dev }))
      local y = gpu.array({ { 1, math.huge }, { 0, 1 } }, { device = dev })     -- junk in the unread triangle
      close(L.eigvalsh(y), { 1, 1 }, 1e-6)
      assert.is_true(L.det(gpu.array({ { 0 / 0, 1 }, { 1, 1 } }, { device = dev })):item() ~= L.det(gpu.eye(2)):item())
    end)

    it("cholesky of a matrix holding NaN: a factor of NaN in every float dtype, the other triangle 0", function()
      for _, dt in ipairs({ "float64", "float32", "float16", "bfloat16" }) do
        for _, pos in ipairs({ { 1, 1 }, { 2, 1 }, { 2, 2 } }) do
          local a = gpu.array({ { 4, 1 }, { 1, 3 } }, { dtype = dt, device = dev })
          a[pos] = 0 / 0
          for _, upper in ipairs({ false, true }) do
            local b = upper and mT(a):contiguous() or a
            local l = L.cholesky(gpu.stack({ gpu.eye(2, { dtype = dt, device = dev }), b }), { upper = upper })
            assert.equal(dt, l.dtype)
            close(l[1], gpu.eye(2), 0)
            for r = 1, 2 do
              for c = 1, 2 do
                local v = l[{ 2, r, c }]
                if (upper and r > c) or (not upper and r < c) then assert.equal(0, v)
                else assert.is_true(v ~= v, ("%s %s (%d,%d) at (%d,%d): %s"):format(dt, upper, pos[1], pos[2], r, c, v)) end
              end
            end
          end
        end
      end
      local junk = gpu.array({ { 4, 0 / 0 }, { 2, 5 } }, { device = dev })    -- NaN in the unread triangle
      close(L.cholesky(junk), { { 2, 0 }, { 1, 2 } }, 1e-6)
    end)

    it("matrix_power with math.mininteger: the inverse's power 2^63, not nil", function()
      local r = gpu.array({ { 0, 1 }, { -1, 0 } }, { dtype = "float64", device = dev })    -- r^4 = I
      close(L.matrix_power(r, math.mininteger), gpu.eye(2, { dtype = "float64" }), 0)
      close(L.matrix_power(r, math.mininteger + 1), r, 0)
      close(L.matrix_power(gpu.eye(3, { device = dev }) * 2, math.mininteger), gpu.zeros(3, 3), 0)
    end)

    it("differentiates the composed functions through the factorizations' rules (float64)", function()
      local ag = require "gpu.autograd"
      local G = gpu.random.Generator(11)
      local function R(...) return G:uniform(-1, 1, { ... }, { dtype = "float64", device = dev }) end
      local sq = R(3, 3) + gpu.eye(3, { dtype = "float64", device = dev }) * 3
      local cases = {
        { function(x) return L.pinv(x) end, R(4, 3) },
        { function(x) return L.matrix_power(x, -2) end, sq },
        { function(x) return L.cond(x) end, sq },
        { function(x) return L.norm(x, "nuc", { 2, 3 }) end, R(2, 3, 4) },
        { function(x, y) return L.cross(x, y) end, R(2, 3), R(3) },
        { function(x, y) return L.multi_dot({ x, y, x }) end, R(3, 3), R(3, 3) },
      }
      for i, c in ipairs(cases) do
        local ok, msg = ag.gradcheck(c[1], { table.unpack(c, 2) })
        assert(ok, ("case %d: %s"):format(i, tostring(msg)))
      end
    end)

    it("refuses shapes NumPy refuses", function()
      local v = gpu.ones(3, { device = dev })
      h.fails({ "gpu.linalg.inv", "1-dimensional array given", "at least two-dimensional" }, L.inv, v)
      h.fails({ "gpu.linalg.det", "must be square", "(2,3)" }, L.det, gpu.ones(2, 3, { device = dev }))
      h.fails({ "gpu.linalg.cholesky", "must be square" }, L.cholesky, gpu.ones(2, 3, { device = dev }))
      h.fails({ "gpu.linalg.eigh", "must be square" }, L.eigh, gpu.ones(2, 3, { device = dev }))
      h.fails({ "gpu.linalg.solve", "do not match" }, L.solve, gpu.eye(3, { device = dev }), gpu.ones(2, { device = dev }))
      h.fails({ "gpu.linalg.solve", "cannot be broadcast" }, L.solve, gpu.ones(2, 3, 3, { device = dev }),
              gpu.ones(4, 3, 1, { device = dev }))
      h.fails({ "gpu.linalg.solve", "0-d" }, L.solve, gpu.eye(1, { device = dev }), gpu.ones({}, { device = dev }))
      h.fails({ "gpu.linalg.lstsq", "two-dimensional" }, L.lstsq, gpu.ones(2, 2, 2, { device = dev }), gpu.ones(2, { device = dev }))
      h.fails({ "gpu.linalg.lstsq", "do not match" }, L.lstsq, gpu.ones(3, 2, { device = dev }), gpu.ones(2, { device = dev }))
      h.fails({ "bad argument #1", "gpu.array expected" }, L.inv, 3)
    end)

    it("checks its options", function()
      local a = gpu.eye(2, { device = dev })
      h.fails({ "option 'mode' must be one of reduced, complete, r", "'full'" }, L.qr, a, { mode = "full" })
      h.fails({ "option 'UPLO' must be one of L, U" }, L.eigh, a, { UPLO = "X" })
      h.fails({ "rcond" }, L.lstsq, a, gpu.ones(2, { device = dev }), { rcond = -1 })
      h.fails({ "upper" }, L.cholesky, a, { upper = 1 })
    end)
  end)
end
