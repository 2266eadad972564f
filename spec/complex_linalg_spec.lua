-- spec/complex_linalg_spec.lua — gpu.linalg on complex64 and complex128, and eig / eigvals
-- on real and complex matrices, against NumPy's results (spec/fixtures/complex_linalg/*.npy,
-- made by tools/gen_complex_linalg_fixtures.py): values where they do not depend on
-- LAPACK's phase choices, moduli and defining properties (Q^H Q = I, Q R = A, U S Vh = A,
-- A V = V diag(w), unit eigenvectors with their largest component real) where they do;
-- eigenvalues compared as sorted sets. Results real by nature (singular values, eigh's
-- eigenvalues, log|det|, norms, residuals) must be of the part dtype.
--
-- Complex arrays are compared and multiplied through their real views (gpu.view_as_real):
-- (Ar + i Ai)(Br + i Bi) = (Ar Br - Ai Bi) + i (Ar Bi + Ai Br) with real matmuls, so these
-- checks stand on the real operations alone. The functions that gpu.linalg writes in array
-- ops (pinv, matrix_power, norm's sums, cond, svd's hermitian path) use complex matmul,
-- multiplication, conj and reductions.
local h = require "spec.helper"
local gpu = h.gpu
local L = gpu.linalg

local FIX = "spec/fixtures/complex_linalg/"
local TOL = { complex64 = 3e-4, complex128 = 1e-9 }
local PART = { complex64 = "float32", complex128 = "float64" }
local CPLX = { float32 = "complex64", float64 = "complex128" }
local DTYPES = { "complex64", "complex128" }

local function F(name, dt, dev) return gpu.load(FIX .. name .. ".npy"):astype(dt):to(dev) end
local function is_complex(x) return x.dtype:match("^complex") ~= nil end
local function mT(x) return x:transpose(-1, -2) end
local function strided(x) return mT(mT(x):contiguous()) end
local function shape(x) return table.concat(x.shape, ",") end
-- the real view of a complex array (a real one as it is), on the cpu
local function R(x) return (is_complex(x) and gpu.view_as_real(x) or x):to("cpu") end
-- the real (k = 1) or imaginary (k = 2) part of x as a real array
local function part(x, k)
  local r = gpu.view_as_real(x)
  return r:take(gpu.array({ k }, { dtype = "int64", device = r.device }), r.ndim):squeeze(r.ndim)
end
-- a complex array from its real and imaginary parts (real arrays of one shape)
local function cx(re, im) return gpu.view_as_complex(gpu.stack({ re, im }, re.ndim + 1)) end
-- close(a, b, tol): b an array of a's shape (complex or real), a real array of a's real
-- view's shape ((..., 2): re, im pairs), or a number
local function close(a, b, tol)
  if type(b) ~= "userdata" then return h.assert_close(R(a), b, tol) end
  if is_complex(a) and not is_complex(b) and b.ndim == a.ndim + 1 then return h.assert_close(R(a), R(b), tol) end
  assert.equal(shape(b), shape(a))
  h.assert_close(R(a), R(is_complex(a) and b:astype(a.dtype) or b), tol)
end
-- fn(a, tag, m, n) for each fixture matrix named in tags, a (..., m, n) in dtype dt on dev
local function each(tags, dt, dev, fn)
  for _, tag in ipairs(tags) do
    local a = F(tag, dt, dev)
    fn(a, tag, a.shape[a.ndim - 1], a.shape[a.ndim])
  end
end
-- largest |element| of a real array, as a Lua number
local function amax(x) return x.size == 0 and 0 or x:abs():max():item() end

-- complex products in real arithmetic: a pair {re, im} of real arrays
local function P(x) return { part(x, 1), part(x, 2) } end
local function PH(x) local p = P(x) return { mT(p[1]), -mT(p[2]) } end       -- conjugate transpose
local function cmm(a, b)
  return { a[1]:matmul(b[1]) - a[2]:matmul(b[2]), a[1]:matmul(b[2]) + a[2]:matmul(b[1]) }
end
local function cmul(a, b) return { a[1] * b[1] - a[2] * b[2], a[1] * b[2] + a[2] * b[1] } end
-- pairs a and b equal within tol times the scale of b
local function pclose(a, b, tol, what)
  local scale = math.max(1, amax(b[1]), amax(b[2]))
  for k = 1, 2 do
    local ok, msg = h.close(a[k]:to("cpu"), b[k]:to("cpu"), tol * scale)
    assert(ok, what .. ": " .. tostring(msg))
  end
end
local function eye_pair(n, x, batch)
  local e = gpu.eye(n, { dtype = x[1].dtype, device = x[1].device })
  if batch then e = e:expand(batch) end
  return { e, gpu.zeros_like(e) }
end
local function batch_of(x, n, m)
  local s = {}
  for i = 1, x.ndim - 2 do s[i] = x.shape[i] end
  s[#s + 1] = n
  s[#s + 1] = m
  return s
end

-- columns of v (..., n, n) have unit 2-norm and their largest component is real
local function unit_real_max(v, tol)
  local re, im = part(v, 1), part(v, 2)
  local abs2 = re * re + im * im
  local norms = abs2:sum(-2)
  h.assert_close(norms:to("cpu"), gpu.ones_like(norms):to("cpu"), tol * 10)
  -- some component of the largest modulus is real (two may share it)
  local ok, msg = h.close((re * re):max(-2):to("cpu"), abs2:max(-2):to("cpu"), tol * 10)
  assert(ok, "largest component not real: " .. tostring(msg))
end

-- the eigenvalues of each matrix, sorted by real part then imaginary part (parts within
-- 'eps' of each other count as equal): a list (one per matrix) of lists of {re, im}
local function sorted_w(w, eps)
  local n = w.shape[w.ndim]
  local t = R(w):reshape(-1, n, 2):totable()
  for _, list in ipairs(t) do
    table.sort(list, function(p, q)
      if math.abs(p[1] - q[1]) > eps * (1 + math.abs(q[1])) then return p[1] < q[1] end
      return p[2] < q[2]
    end)
  end
  return t
end
local function same_w(a, b, tol, eps)
  local sa, sb = sorted_w(a, eps), sorted_w(b, eps)
  assert.equal(#sb, #sa)
  for i = 1, #sa do h.assert_close(sa[i], sb[i], tol) end
end

for _, dev in ipairs(h.devices()) do
  for _, dt in ipairs(DTYPES) do
    local tol, pt = TOL[dt], PART[dt]
    describe(("gpu.linalg on %s, %s"):format(dev, dt), function()
      it("solve: a matrix, a vector and a real right-hand side, batched with broadcasting, views", function()
        local a = F("a4", dt, dev)
        local x = L.solve(a, F("b4", dt, dev))
        assert.equal(dt, x.dtype)
        close(x, F("a4_solve_b4", dt, dev), tol)
        local xv = L.solve(a, F("v4", dt, dev))
        assert.equal("4", shape(xv))
        close(xv, F("a4_solve_v4", dt, dev), tol)
        local xr = L.solve(a, F("r4", pt, dev))                 -- complex a, real b: complex x
        assert.equal(dt, xr.dtype)
        close(xr, F("a4_solve_r4", dt, dev), tol)
        close(L.solve(strided(a), strided(F("b4", dt, dev))), F("a4_solve_b4", dt, dev), tol)
        local xb = L.solve(F("ab", dt, dev), F("bb", dt, dev))
        assert.equal("2,3,3,2", shape(xb))
        close(xb, F("ab_solve_bb", dt, dev), tol)
        -- systems past the small real path, against A X = B in real arithmetic
        local G = gpu.random.Generator(11)
        for _, n in ipairs { 9, 40 } do
          local function u(...) return G:uniform(-1, 1, { ... }, { dtype = pt, device = dev }) end
          local A = cx(u(2, n, n) + gpu.eye(n, { dtype = pt, device = dev }) * n, u(2, n, n))
          local B = cx(u(2, n, 3), u(2, n, 3))
          pclose(cmm(P(A), P(L.solve(A, B))), P(B), tol * 10, "A X = B")
        end
      end)

      it("inv: NumPy's values, A inv(A) = I, batched and through a view", function()
        each({ "a4", "ab" }, dt, dev, function(a, tag, _, n)
          local x = L.inv(a)
          assert.equal(dt, x.dtype)
          close(x, F(tag .. "_inv", dt, dev), tol)
          pclose(cmm(P(a), P(x)), eye_pair(n, P(a), a.shape), tol * 10, "A inv(A) = I")
          close(L.inv(strided(a)), x, tol)
        end)
      end)

      it("det and slogdet: complex sign, real log|det| (NumPy's dtypes), a known phase, singular", function()
        each({ "a4", "ab" }, dt, dev, function(a, tag)
          local d = L.det(a)
          local s, l = L.slogdet(a)
          assert.same({ dt, dt, pt }, { d.dtype, s.dtype, l.dtype })
          close(d, F(tag .. "_det", dt, dev), tol)
          close(s, F(tag .. "_sign", dt, dev), tol)
          close(l, F(tag .. "_logdet", pt, dev), tol)
        end)
        local p = F("dph", dt, dev)                             -- diag(i, 2, -1): det -2i
        close(L.det(p), gpu.array({ 0, -2 }, { dtype = pt }), tol)
        local s, l = L.slogdet(p)
        close(s, gpu.array({ 0, -1 }, { dtype = pt }), tol)
        close(l, math.log(2), tol)
        local s0, l0 = L.slogdet(gpu.zeros(3, 3, { dtype = dt, device = dev }))
        close(s0, gpu.array({ 0, 0 }, { dtype = pt }), 0)
        assert.equal(-math.huge, l0:item())
        close(L.det(gpu.zeros(2, 3, 3, { dtype = dt, device = dev })), gpu.zeros(2, 2, { dtype = pt }), 0)
        local se, le = L.slogdet(gpu.zeros(0, 0, { dtype = dt, device = dev }))   -- det of 0 x 0 is 1
        close(se, gpu.array({ 1, 0 }, { dtype = pt }), 0)
        assert.equal(0, le:item())
      end)

      it("cholesky: NumPy's lower factor, the upper one (L^H), only one triangle read", function()
        each({ "h4", "hb" }, dt, dev, function(a, tag)
          local l = L.cholesky(a)
          assert.equal(dt, l.dtype)
          close(l, F(tag .. "_chol", dt, dev), tol)
          local lh = PH(l)
          pclose(cmm(P(l), lh), P(a), tol * 10, "L L^H = A")
          local u = L.cholesky(a, { upper = true })
          pclose(P(u), lh, tol, "U = L^H")
          local g = F(tag .. "_g", dt, dev)                        -- upper triangle of a, junk below
          pclose(P(L.cholesky(g, { upper = true })), lh, tol, "upper read")
        end)
      end)

      it("qr: Q^H Q = I, Q R = A, R upper triangular with NumPy's |R|, reduced, complete and r", function()
        each({ "a4", "t53", "w35", "rb" }, dt, dev, function(a, tag, m, n)
          for _, complete in ipairs { false, true } do
            local q, r = L.qr(a, { mode = complete and "complete" or "reduced" })
            assert.same({ dt, dt }, { q.dtype, r.dtype })
            local kq = complete and m or math.min(m, n)
            assert.equal(kq, q.shape[q.ndim])
            pclose(cmm(PH(q), P(q)), eye_pair(kq, P(q), batch_of(q, kq, kq)), tol * 10, "Q^H Q = I")
            pclose(cmm(P(q), P(r)), P(a), tol * 10, "Q R = A")
            local lower = gpu.arange(1, kq + 1, { device = dev }):reshape(kq, 1):gt(gpu.arange(1, n + 1, { device = dev }))
            local rr, ri = part(r, 1), part(r, 2)
            assert.equal(0, amax(rr * lower:astype(pt)) + amax(ri * lower:astype(pt)))
          end
          local r = L.qr(a, { mode = "r" })
          local rr, ri = part(r, 1), part(r, 2)
          h.assert_close(gpu.sqrt(rr * rr + ri * ri):to("cpu"), F(tag .. "_absr", pt, "cpu"), tol * 10)
        end)
      end)

      it("svd: real singular values, U S Vh = A, NumPy's |U| and |Vh|, unitary factors, full and reduced", function()
        each({ "a4", "t53", "w35", "rb", "ab" }, dt, dev, function(a, tag, m, n)
          local k = math.min(m, n)
          local u, s, vh = L.svd(a, { full_matrices = false })
          assert.same({ dt, pt, dt }, { u.dtype, s.dtype, vh.dtype })
          close(s, F(tag .. "_svdvals", pt, dev), tol)
          local su = { s:unsqueeze(-2), gpu.zeros_like(s:unsqueeze(-2)) }
          pclose(cmm(cmul(P(u), su), P(vh)), P(a), tol * 10, "U S Vh = A")
          pclose(cmm(PH(u), P(u)), eye_pair(k, P(u), batch_of(u, k, k)), tol * 10, "U^H U = I")
          if tag ~= "ab" then
            local ur, ui = part(u, 1), part(u, 2)
            h.assert_close(gpu.sqrt(ur * ur + ui * ui):to("cpu"), F(tag .. "_absu", pt, "cpu"), tol * 10)
            local vr, vi = part(vh, 1), part(vh, 2)
            h.assert_close(gpu.sqrt(vr * vr + vi * vi):to("cpu"), F(tag .. "_absvh", pt, "cpu"), tol * 10)
          end
          local uf, sf, vf = L.svd(a)                                      -- full_matrices = true
          assert.equal(m, uf.shape[uf.ndim])
          assert.equal(n, vf.shape[vf.ndim - 1])
          close(sf, s, tol)
          pclose(cmm(P(vf), PH(vf)), eye_pair(n, P(vf), batch_of(vf, n, n)), tol * 10, "Vh Vh^H = I")
          pclose(cmm(PH(uf), P(uf)), eye_pair(m, P(uf), batch_of(uf, m, m)), tol * 10, "U^H U = I (full)")
          close(L.svd(a, { compute_uv = false }), s, tol)
          close(L.svdvals(strided(a)), s, tol)
          assert.equal(pt, L.svdvals(a).dtype)
        end)
      end)

      it("eigh and eigvalsh: real ascending eigenvalues, A V = V diag(w), V unitary, NumPy's |V|, UPLO", function()
        each({ "h4", "hb" }, dt, dev, function(a, tag, _, n)
          local w, v = L.eigh(a)
          assert.same({ pt, dt }, { w.dtype, v.dtype })
          close(w, F(tag .. "_eigvalsh", pt, dev), tol)
          local wd = { w:unsqueeze(-2), gpu.zeros_like(w:unsqueeze(-2)) }
          pclose(cmm(P(a), P(v)), cmul(P(v), wd), tol * 10, "A V = V diag(w)")
          pclose(cmm(PH(v), P(v)), eye_pair(n, P(v), v.shape), tol * 10, "V^H V = I")
          local vr, vi = part(v, 1), part(v, 2)
          h.assert_close(gpu.sqrt(vr * vr + vi * vi):to("cpu"), F(tag .. "_eigh_absv", pt, "cpu"), tol * 100)
          close(L.eigvalsh(a), w, tol)
          assert.equal(pt, L.eigvalsh(a).dtype)
          local g = F(tag .. "_g", dt, dev)
          close(L.eigvalsh(g, { UPLO = "U" }), F(tag .. "_eigvalsh_U", pt, dev), tol)
          close((L.eigh(g, { UPLO = "U" })), F(tag .. "_eigvalsh_U", pt, dev), tol)
        end)
      end)

      it("lstsq: NumPy's solution, real residuals and singular values, rank; min norm; rank deficient", function()
        local x, res, rank, s = L.lstsq(F("t53", dt, dev), F("ls_b", dt, dev))
        assert.equal(dt, x.dtype)
        assert.equal(pt, res.dtype)
        assert.equal(pt, s.dtype)
        close(x, F("ls_x", dt, dev), tol * 10)
        close(res, F("ls_res", pt, dev), tol * 10)
        assert.equal(3, rank)
        close(s, F("ls_s", pt, dev), tol)
        local xw, rw, rankw = L.lstsq(F("w35", dt, dev), F("lsw_b", dt, dev))
        close(xw, F("lsw_x", dt, dev), tol * 10)
        assert.equal("0", shape(rw))
        assert.equal(pt, rw.dtype)
        assert.equal(3, rankw)
        local bd = gpu.view_as_complex(gpu.array({ { 1, 0 }, { 0, 2 }, { 3.5, 0 } }, { dtype = pt, device = dev }))
        local xd, rd, rankd = L.lstsq(F("lsd_a", dt, dev), bd)
        close(xd, F("lsd_x", dt, dev), tol * 10)
        assert.equal("0", shape(rd))
        assert.equal(1, rankd)
      end)

      it("matrix_rank and the matrix 2-norms from the singular values", function()
        local r = L.matrix_rank(F("ab", dt, dev))
        assert.equal("int64", r.dtype)
        close(r, F("ab_rank", "int64", dev), 0)
        assert.equal(1, L.matrix_rank(F("lsd_a", dt, dev)):item())
        local a, rb = F("t53", dt, dev), F("rb", dt, dev)
        for name, o in pairs({ ["2"] = 2, m2 = -2, nuc = "nuc" }) do
          local v = L.norm(a, o)
          assert.equal(pt, v.dtype)
          close(v, F("t53_norm_" .. name, pt, dev), tol)
          close(L.norm(rb, o, { 2, 3 }), F("rb_norm_" .. name, pt, dev), tol)
        end
      end)

      it("norm: vector orders and the matrix orders that sum moduli, real results", function()
        local a, rb, v = F("t53", dt, dev), F("rb", dt, dev), F("vec", dt, dev)
        for name, o in pairs({ fro = "fro", ["1"] = 1, inf = math.huge, m1 = -1, minf = -math.huge }) do
          local r = L.norm(a, o)
          assert.equal(pt, r.dtype)
          close(r, F("t53_norm_" .. name, pt, dev), tol)
          close(L.norm(rb, o, { 2, 3 }), F("rb_norm_" .. name, pt, dev), tol)
        end
        for name, o in pairs({ ["1"] = 1, inf = math.huge, minf = -math.huge, ["0"] = 0, ["3"] = 3 }) do
          close(L.norm(v, o), F("vec_norm_" .. name, pt, dev), tol)
        end
        close(L.norm(v), F("vec_norm_none", pt, dev), tol)
        close(L.norm(rb, nil, 3), F("rb_norm_ax2", pt, dev), tol)
      end)

      it("pinv, matrix_power: NumPy's values, batched, hermitian", function()
        close(L.pinv(F("t53", dt, dev)), F("t53_pinv", dt, dev), tol * 10)
        close(L.pinv(F("rb", dt, dev)), F("rb_pinv", dt, dev), tol * 10)
        close(L.pinv(strided(F("t53", dt, dev))), F("t53_pinv", dt, dev), tol * 10)
        close(L.pinv(F("hi", dt, dev), { hermitian = true }), F("hi_pinv", dt, dev), tol * 10)
        close(L.svd(F("hi", dt, dev), { hermitian = true, compute_uv = false }), F("hi_svdvals", pt, dev), tol)
        local a = F("a4", dt, dev)
        close(L.matrix_power(a, 3), F("a4_pow3", dt, dev), tol * 10)
        close(L.matrix_power(a, -2), F("a4_powm2", dt, dev), tol * 10)
        close(L.matrix_power(a, 0), F("a4_pow0", dt, dev), 0)
      end)

      it("cond: NumPy's values for every order", function()
        local c = F("a4", dt, dev)
        for name, p in pairs({ m2 = -2, ["1"] = 1, fro = "fro", inf = math.huge }) do
          close(L.cond(c, p), F("a4_cond_" .. name, pt, dev), tol * 10)
        end
        close(L.cond(c), F("a4_cond_none", pt, dev), tol * 10)
      end)

      it("LinAlgErrors as the real path names them: singular, not positive definite, not finite", function()
        local e = gpu.eye(3, { dtype = dt, device = dev })
        local e3 = gpu.eye(3, { dtype = pt, device = dev })
        local sing = gpu.stack({ e, e, gpu.zeros(3, 3, { dtype = dt, device = dev }) })
        h.fails({ "gpu.linalg.inv: matrix is singular (batch 3)" }, L.inv, sing)
        h.fails({ "gpu.linalg.solve: matrix is singular (batch 3)" }, L.solve, sing, gpu.ones(3, 3, 1, { dtype = dt, device = dev }))
        h.fails({ "gpu.linalg.inv: matrix is singular" }, L.inv, gpu.zeros(4, 4, { dtype = dt, device = dev }))
        h.fails({ "gpu.linalg.cholesky: matrix is not positive definite (batch 2)" }, L.cholesky, gpu.stack({ e, cx(-e3, e3 * 0) }))
        local inf = gpu.view_as_complex(gpu.array({ { { 1, 0 }, { 2, 0 } }, { { 3, 0 }, { 0, math.huge } } }, { dtype = pt, device = dev }))
        h.fails({ "gpu.linalg.svd: SVD did not converge" }, L.svd, inf)
        h.fails({ "gpu.linalg.svdvals: SVD did not converge (batch 2)" }, L.svdvals, gpu.stack({ e[{ { 1, 2 }, { 1, 2 } }], inf }))
        h.fails({ "gpu.linalg.eigh: eigenvalues did not converge" }, L.eigh, inf)
        h.fails({ "gpu.linalg.lstsq: SVD did not converge" }, L.lstsq, inf, gpu.ones(2, { dtype = dt, device = dev }))
        h.fails({ "gpu.linalg.eig: eigenvalues did not converge (batch 2)" }, L.eig, gpu.stack({ e[{ { 1, 2 }, { 1, 2 } }], inf }))
        h.fails({ "gpu.linalg.eigvals: eigenvalues did not converge" }, L.eigvals, inf)
        h.fails({ "gpu.linalg.inv", "must be square" }, L.inv, gpu.zeros(2, 3, { dtype = dt, device = dev }))
      end)
    end)
  end

  -- eig / eigvals: real inputs (float32, float64) and complex ones
  for _, dt in ipairs({ "float32", "float64", "complex64", "complex128" }) do
    local cdt = CPLX[dt] or dt
    local tol = TOL[cdt]
    local real_in = CPLX[dt] ~= nil
    describe(("gpu.linalg.eig on %s, %s"):format(dev, dt), function()
      local tags = real_in and { "er_real", "er_pair", "er_rot", "er_defect", "er_repeat", "er_batch" }
                            or { "ec", "ec_batch", "ec_defect", "er_pair", "er_batch" }
      it("complex results, A V = V diag(w), unit eigenvectors with their largest component real", function()
        for _, tag in ipairs(tags) do
          local a = F(tag, dt, dev)
          local w, v = L.eig(a)
          assert.equal(cdt, w.dtype)
          assert.equal(cdt, v.dtype)
          local n = a.shape[a.ndim]
          assert.equal(shape(a):gsub(",%d+$", ""), shape(w))
          assert.equal(shape(a), shape(v))
          local pa = is_complex(a) and P(a) or { a, gpu.zeros_like(a) }
          local wd = P(w:unsqueeze(-2))
          pclose(cmm(pa, P(v)), cmul(P(v), wd), tol * 10 * n, tag .. ": A V = V diag(w)")
          unit_real_max(v, tol)
          close(L.eigvals(a), w, 0)
        end
      end)

      it("NumPy's eigenvalues (as sorted sets) and |eigenvectors| for distinct eigenvalues", function()
        for _, tag in ipairs(tags) do
          local defective = tag:match("defect") ~= nil
          local a = F(tag, dt, dev)
          local w = L.eigvals(a)
          local want = F(tag .. "_w", "complex128", "cpu")
          -- a defective eigenvalue of multiplicity k moves by eps^(1/k): compared loosely
          same_w(w:to("cpu"), want:astype(cdt), defective and math.sqrt(tol) * 10 or tol * 10, 1e-3)
        end
        for _, tag in ipairs(real_in and { "er_real", "er_pair" } or { "ec", "er_pair" }) do
          local a = F(tag, dt, dev)
          local w, v = L.eig(a)
          -- match columns through the sorted eigenvalues (distinct here)
          local function order(x)
            local t = R(x):totable()
            local idx = {}
            for i = 1, #t do idx[i] = i end
            table.sort(idx, function(i, j)
              if math.abs(t[i][1] - t[j][1]) > 1e-3 then return t[i][1] < t[j][1] end
              return t[i][2] < t[j][2]
            end)
            return gpu.array(idx, { dtype = "int64" })
          end
          local vr, vi = part(v:to("cpu"), 1), part(v:to("cpu"), 2)
          local mine = gpu.sqrt(vr * vr + vi * vi):take(order(w), 2)
          local want = F(tag .. "_absv", CPLX[dt] and dt or PART[dt], "cpu"):take(order(F(tag .. "_w", "complex128", "cpu")), 2)
          h.assert_close(mine, want, tol * 100)
        end
      end)

      if real_in then
        it("a real matrix: real eigenvalues exactly real, complex ones in conjugate pairs (positive first)", function()
          for _, tag in ipairs { "er_real", "er_defect", "er_repeat" } do
            local w, v = L.eig(F(tag, dt, dev))
            assert.equal(0, amax(part(w, 2)))
            assert.equal(0, amax(part(v, 2)))
          end
          local w = R(L.eigvals(F("er_pair", dt, dev))):totable()
          local pairs_seen = 0
          for i = 1, #w do
            if w[i][2] > 0 then
              assert.equal(w[i][1], w[i + 1][1])
              assert.equal(-w[i][2], w[i + 1][2])
              pairs_seen = pairs_seen + 1
            end
          end
          assert.equal(1, pairs_seen)
          local i2 = gpu.eye(2, { dtype = dt, device = dev })            -- 2 I: eigenvectors e1, e2
          local w2, v2 = L.eig(i2 * 2)
          close(w2, gpu.array({ { 2, 0 }, { 2, 0 } }, { dtype = PART[cdt] }), 0)
          close(v2, gpu.array({ { { 1, 0 }, { 0, 0 } }, { { 0, 0 }, { 1, 0 } } }, { dtype = PART[cdt] }), 0)
        end)
      end

      it("views, empty matrices and batches, NumPy's promotions, misuse", function()
        local a = F(real_in and "er_batch" or "ec_batch", dt, dev)
        close(L.eigvals(strided(a)), L.eigvals(a:contiguous()), tol)
        local w0, v0 = L.eig(gpu.zeros(2, 0, 0, { dtype = dt, device = dev }))
        assert.equal("2,0", shape(w0))
        assert.equal("2,0,0", shape(v0))
        assert.equal(cdt, w0.dtype)
        assert.equal("0,3", shape(L.eigvals(gpu.zeros(0, 3, 3, { dtype = dt, device = dev }))))
        h.fails({ "gpu.linalg.eig", "the array must be at least two-dimensional" }, L.eig, gpu.ones(3, { dtype = dt, device = dev }))
        h.fails({ "gpu.linalg.eigvals", "must be square, got (2,3)" }, L.eigvals, gpu.ones(2, 3, { dtype = dt, device = dev }))
        h.fails({ "bad argument #1 to '", "gpu.array expected, got number" }, gpu.linalg.eig, 3)
        h.fails({ "bad argument #2 to '", "at most 1 argument expected, got 2" }, gpu.linalg.eigvals, a, 1)
      end)
    end)
  end

  describe("gpu.linalg.eig on " .. dev .. ": dtypes as torch.linalg.eig (always complex)", function()
    it("integers and bool give complex128, float16 complex64", function()
      local i = gpu.array({ { 2, 0 }, { 0, 3 } }, { dtype = "int64", device = dev })
      local w, v = L.eig(i)
      assert.equal("complex128", w.dtype)
      assert.equal("complex128", v.dtype)
      close(w, gpu.array({ { 2, 0 }, { 3, 0 } }, { dtype = "float64" }), 0)
      assert.equal("complex128", L.eigvals(gpu.eye(2, { dtype = "bool", device = dev })).dtype)
      assert.equal("complex64", L.eigvals(gpu.eye(2, { dtype = "float16", device = dev })).dtype)
    end)
  end)
end
