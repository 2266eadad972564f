-- spec/linalg_corners_spec.lua — NumPy's corners of gpu.linalg against NumPy's results
-- (spec/fixtures/linalg_corners/*.npy, made by tools/gen_linalg_corner_fixtures.py):
-- hermitian svd/pinv/matrix_rank (through eigh), NumPy 2's rtol beside rcond/tol, cond
-- of a singular matrix (inf, not an error), 2-vector cross products; each error case.
local h = require "spec.helper"
local gpu = h.gpu
local L = gpu.linalg

local FIX = "spec/fixtures/linalg_corners/"
local TOL = { float32 = 3e-4, float64 = 1e-9 }

local function F(name, dt, dev) return gpu.load(FIX .. name .. ".npy"):astype(dt):to(dev) end
local close = h.assert_close
local function mT(x) return x:transpose(-1, -2) end

for _, dev in ipairs(h.devices()) do
  for _, dt in ipairs({ "float32", "float64" }) do
    local tol = TOL[dt]
    describe(("gpu.linalg corners on %s, %s"):format(dev, dt), function()
      it("svd, pinv and matrix_rank with hermitian = true: NumPy's values, U S Vh = A", function()
        for _, tag in ipairs({ "h4", "hb", "hd" }) do
          local a = F(tag, dt, dev)
          close(L.svd(a, { hermitian = true, compute_uv = false }), F(tag .. "_svals", dt, dev), tol * 10)
          local u, s, vh = L.svd(a, { hermitian = true })
          close(s, F(tag .. "_svals", dt, dev), tol * 10)
          close((u * s:unsqueeze(-2)):matmul(vh), a, tol * 10)
          close(mT(u):matmul(u), gpu.eye(a.shape[a.ndim], { dtype = dt, device = dev }):expand(u.shape), tol * 10)
          if tag ~= "hd" or dt == "float64" then    -- rank-deficient: rcond 1e-15 is below float32's noise
            close(L.pinv(a, { hermitian = true }), F(tag .. "_pinv", dt, dev), tol * 100)
          end
          local r = L.matrix_rank(a, { hermitian = true })
          assert.same(F(tag .. "_rank", "int64", dev):totable(), r:totable())
          assert.equal("int64", r.dtype)
        end
      end)

      it("hermitian: a non-square matrix and a bad option are refused", function()
        h.fails({ "gpu.linalg.svd", "must be square" }, L.svd, gpu.ones(2, 3, { device = dev }), { hermitian = true })
        h.fails({ "gpu.linalg.svd", "hermitian" }, L.svd, gpu.eye(2, { device = dev }), { hermitian = "yes" })
        h.fails({ "gpu.linalg.pinv", "hermitian" }, L.pinv, gpu.eye(2, { device = dev }), { hermitian = 1 })
        h.fails({ "gpu.linalg.matrix_rank", "hermitian" }, L.matrix_rank, gpu.eye(2, { device = dev }), { hermitian = 1 })
      end)

      it("rtol (NumPy 2) beside rcond and tol", function()
        local a = F("r64", dt, dev)
        if dt == "float64" then
          for _, t in ipairs({ "0.001", "1e-05" }) do
            local rtol = tonumber(t)
            close(L.pinv(a, { rtol = rtol }), F("r64_pinv_rtol_" .. t, dt, dev), 1e-6)
            close(L.pinv(a, { rcond = rtol }), F("r64_pinv_rtol_" .. t, dt, dev), 1e-6)
            assert.equal(F("r64_rank_rtol_" .. t, "int64", "cpu"):item(), L.matrix_rank(a, { rtol = rtol }):item())
          end
        end
        assert.equal(F("r64_rank_tol", "int64", "cpu"):item(), L.matrix_rank(a, { tol = 1e-3 }):item())
        assert.equal(L.matrix_rank(a, { tol = 1e-3 }):item(), L.matrix_rank(a, { tol = 1e-3, rtol = 0.5 }):item())
        h.fails({ "gpu.linalg.pinv: rtol and rcond can't be both set" }, L.pinv, a, { rtol = 1e-3, rcond = 1e-3 })
        h.fails({ "gpu.linalg.pinv", "rtol" }, L.pinv, a, { rtol = -1 })
        h.fails({ "gpu.linalg.matrix_rank", "rtol" }, L.matrix_rank, a, { rtol = "x" })
      end)

      it("cond of a singular matrix is inf as NumPy's, for every p", function()
        local s = F("sing", dt, dev)
        for _, p in ipairs({ { nil, "none" }, { 2, "2" }, { -2, "m2" }, { 1, "1" }, { math.huge, "inf" }, { "fro", "fro" } }) do
          local want = F("sing_cond_" .. p[2], "float64", "cpu"):item()
          local got = L.cond(s, p[1]):item()
          if want == math.huge or want > 1e14 then
            assert(got == math.huge or got > 1e6, ("cond(sing, %s) = %s"):format(p[2], tostring(got)))
          else
            assert.near(want, got, 1e-5 * math.max(1, math.abs(want)))
          end
        end
        local b = F("sbatch", dt, dev)
        for _, p in ipairs({ { nil, "none" }, { 1, "1" }, { "fro", "fro" } }) do
          local want, got = F("sbatch_cond_" .. p[2], "float64", "cpu"):totable(), L.cond(b, p[1]):totable()
          assert.near(want[1], got[1], 1e-5)
          assert(got[2] == math.huge or got[2] > 1e6)
          assert.equal(math.huge, got[3])
        end
        -- a NaN in x stays NaN; nuc of a singular matrix is NumPy's SVD error
        local nan = gpu.array({ { 0 / 0, 1 }, { 1, 1 } }, { dtype = dt, device = dev })
        local c = L.cond(nan, 1):item()
        assert.is_true(c ~= c)
        h.fails({ "gpu.linalg.cond: SVD did not converge" }, L.cond, s, "nuc")
      end)

      it("qr gradients: m < n and mode complete with m <= n; complete with m > n refused", function()
        if dt == "float64" then
          local ag = require "gpu.autograd"
          local G = gpu.random.Generator(5)
          local w = G:uniform(-1, 1, { 2, 3, 5 }, { dtype = dt, device = dev })
          local ok, msg = ag.gradcheck(function(x) local q, r = L.qr(x) return q:sum() + (r * r):sum() end, { w })
          assert(ok, msg)
          ok, msg = ag.gradcheck(function(x) local q, r = L.qr(x, { mode = "complete" }) return (q * 2):sum() + r:sum() end, { G:uniform(-1, 1, { 3, 5 }, { dtype = dt, device = dev }) })
          assert(ok, msg)
          ok, msg = ag.gradcheck(function(x) return (L.qr(x, { mode = "r" })):abs():sum() end, { w })
          assert(ok, msg)
        end
        local t = gpu.ones(4, 2, { dtype = dt, device = dev }):requires_grad()
        local q = L.qr(t + gpu.eye(4, 2, { dtype = dt, device = dev }), { mode = "complete" })
        h.fails({ "gpu.linalg.qr", "mode 'complete' needs m <= n", "4x2" }, function() q:sum():backward() end)
      end)

      it("cross of 2-vectors: the z component, or a zero third component", function()
        local a2, b2, b3 = F("c_a2", dt, dev), F("c_b2", dt, dev), F("c_b3", dt, dev)
        local z = L.cross(a2, b2)
        assert.equal("4", table.concat(z.shape, ","))
        close(z, F("c_a2_b2", dt, dev), tol)
        close(L.cross(a2, b3), F("c_a2_b3", dt, dev), tol)
        close(L.cross(b3, a2), F("c_b3_a2", dt, dev), tol)
        close(L.cross(mT(a2), mT(b2), 1), F("c_col", dt, dev), tol)
        h.fails({ "gpu.linalg.cross", "dimension must be 2 or 3, got 4" }, L.cross, gpu.ones(4, { device = dev }), b3[1])
        h.fails({ "gpu.linalg.cross", "axis 3 is out of range" }, L.cross, a2, b2, 3)
      end)
    end)
  end
end
