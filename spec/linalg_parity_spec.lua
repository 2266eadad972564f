-- linalg_parity_spec.lua — every gpu.linalg function, every routine of gpu._routines and
-- the tensor products (einsum tensordot kron inner vdot) on the cpu and on cuda from the
-- same host-made inputs: 2-D and batched, float32 and float64, a non-contiguous view.
-- Values are compared with a tolerance set by the dtype; decompositions by what does not
-- depend on the library's sign choices (|Q|, |R|, |U|, |Vh|, |V| for distinct values) and
-- by their properties on each device (Q R = A, U S Vh = A, A V = V diag(w)). A failure
-- must be the same LinAlgError (same message, same batch element) on both; gradients of
-- the differentiable functions must agree too.
--
-- Complex matrices (complex64, complex128) go through the same functions, their results
-- compared through their real views; eig / eigvals (real and complex inputs) by their
-- eigenvalues as sorted sets and A V = V diag(w) on each device.
--
-- It needs a GPU and is pending without one. GPULUA_PARITY_SELFTEST=1 runs the whole
-- harness with the cpu on both sides (`make test-parity-self`), so that it is known to load,
-- call every function as the API has it and compare, before a GPU ever runs it.
local h = require "spec.helper"
local gpu = h.gpu
local L = gpu.linalg
local ag = require "gpu.autograd"

local SELF = os.getenv("GPULUA_PARITY_SELFTEST") == "1"
local OTHER = SELF and "cpu" or "cuda"

if not SELF and not gpu.is_available() then
  describe("linalg cpu/cuda parity", function()
    pending("no usable CUDA device here (GPULUA_PARITY_SELFTEST=1 runs it cpu against cpu)")
  end)
  return
end

-- tolerances by dtype: cuSOLVER and LAPACK take other paths (blocking, Jacobi vs QR
-- iterations), so a few hundred ulps of the matrix's scale, not bit equality
local TOL = { float32 = 2e-3, float64 = 1e-8, int64 = 0, bool = 0 }
local DTYPES = { "float32", "float64" }

-- deterministic host-made values (an LCG, as parity_spec.lua)
local function values(n, seed)
  local out, s = {}, seed
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = (s / 2147483648 - 0.5) * 4
  end
  return out
end
local function prod(shape) local p = 1 for _, d in ipairs(shape) do p = p * d end return p end
local function rnd(shape, dt, seed)
  return gpu.array(values(prod(shape), seed), { dtype = dt, device = "cpu" }):reshape(shape)
end
local function eye(n, dt) return gpu.eye(n, { dtype = dt, device = "cpu" }) end
-- well conditioned square matrices: random plus n on the diagonal
local function sq(shape, dt, seed) return rnd(shape, dt, seed) + eye(shape[#shape], dt) * shape[#shape] end
-- symmetric positive definite
local function spd(shape, dt, seed)
  local a = rnd(shape, dt, seed)
  return a:matmul(a:transpose(-1, -2)) + eye(shape[#shape], dt) * shape[#shape]
end
-- the same values through a transposed (non-contiguous) view
local function strided(x) return x:transpose(-1, -2):contiguous():transpose(-1, -2) end

-- flattens a function's results: arrays (to the cpu; complex ones as their real views
-- (..., 2)), numbers, booleans, tables of them
local function collect(r, out)
  if type(r) == "userdata" then
    local x = r:to("cpu")
    out[#out + 1] = x.dtype:match("^complex") and gpu.view_as_real(x) or x
  elseif type(r) == "table" then for _, v in ipairs(r) do collect(v, out) end
  else out[#out + 1] = r end
  return out
end

local function to(dev, x)
  if type(x) == "userdata" then return x:to(dev) end
  if type(x) == "table" then
    local t = {}
    for k, v in pairs(x) do t[k] = to(dev, v) end
    return t
  end
  return x
end

local function tol_of(x, dt)
  if type(x) == "userdata" then return TOL[x.dtype] or TOL[dt] or 1e-6 end
  return TOL[dt] or 1e-6
end

-- runs fn(inputs...) on both devices; post (optional) maps each device's result list to
-- what is compared (e.g. absolute values of sign-ambiguous factors). Both must succeed and
-- agree, or (expect_error) both fail with the same message.
local function both(fn, inputs, dt, opts)
  opts = opts or {}
  local res, errs = {}, {}
  for i, dev in ipairs({ "cpu", OTHER }) do
    local args = to(dev, inputs)
    local ok, r = pcall(function() return table.pack(fn(table.unpack(args, 1, #inputs))) end)
    if ok then
      local list = {}
      for j = 1, r.n do collect(r[j], list) end
      if opts.check then opts.check(dev, args, list) end
      res[i] = opts.post and opts.post(list) or list
    else
      errs[i] = tostring(r)
    end
  end
  if opts.error then
    assert(errs[1] and errs[2], "expected both devices to fail")
    assert.equal(errs[1]:gsub("^[^:]*:%d+: ", ""), (errs[2]:gsub("^[^:]*:%d+: ", "")))
    for _, p in ipairs(opts.error) do assert(errs[1]:find(p, 1, true), errs[1] .. " lacks " .. p) end
    return
  end
  assert(errs[1] == nil, "cpu: " .. tostring(errs[1]))
  assert(errs[2] == nil, OTHER .. ": " .. tostring(errs[2]))
  assert.equal(#res[1], #res[2])
  for j = 1, #res[1] do
    local a, b = res[2][j], res[1][j]
    local t = opts.tol or tol_of(b, dt)
    if type(b) == "userdata" then
      assert.equal(b.dtype, a.dtype)
      local scale = b.size > 0 and b.dtype:match("float") and b:abs():max():item() or 1
      if scale ~= scale or scale == math.huge then scale = 1 end
      local ok, msg = h.close(a, b, t * math.max(1, scale))
      assert(ok, ("result %d: %s"):format(j, msg or ""))
    else
      local ok, msg = h.close(a, b, t)
      assert(ok, ("result %d: %s"):format(j, msg or ""))
    end
  end
end

local function abs_all(list)
  local out = {}
  for i, x in ipairs(list) do out[i] = type(x) == "userdata" and x.dtype:match("float") and x:abs() or x end
  return out
end
local function mT(x) return x:transpose(-1, -2) end
-- positions i..j (1-based) of axis ax
local function span(x, ax, i, j)
  return x:take(gpu.arange(j - i + 1, { dtype = "int64", device = x.device }) + i, ax)
end
local function eye_as(x) return eye(x.shape[x.ndim], x.dtype):expand(x.shape) end
local function props_close(a, b, dt, what)
  local ok, msg = h.close(a, b, TOL[dt] * 10 * math.max(1, b.size > 0 and b:abs():max():item() or 1))
  assert(ok, what .. ": " .. tostring(msg))
end

-- gradient parity: d sum(fn(x) * w) / dx on both devices (w fixed, host-made)
local function grad_both(fn, inputs, dt)
  local gs = {}
  for i, dev in ipairs({ "cpu", OTHER }) do
    local args = {}
    for k, x in ipairs(inputs) do args[k] = x:to(dev):copy():requires_grad() end
    local y = fn(table.unpack(args))
    local w = rnd(y.shape, y.dtype, 99):to(dev)
    gs[i] = collect(ag.grad((y * w):sum(), args), {})
  end
  for k = 1, #gs[1] do
    local ok, msg = h.close(gs[2][k], gs[1][k], TOL[dt] * 10 * math.max(1, gs[1][k]:abs():max():item()))
    assert(ok, ("gradient %d: %s"):format(k, msg or ""))
  end
end

describe(("gpu.linalg parity, cpu and %s%s"):format(OTHER, SELF and " (self-test)" or ""), function()
  for _, dt in ipairs(DTYPES) do
    local A2, Ab = sq({ 5, 5 }, dt, 1), sq({ 3, 4, 4 }, dt, 2)          -- 2-D and batched
    local S2, Sb = spd({ 5, 5 }, dt, 3), spd({ 2, 3, 6, 6 }, dt, 4)
    local R2, Rb, Rw = rnd({ 7, 4 }, dt, 5), rnd({ 3, 4, 6 }, dt, 6), rnd({ 4, 9 }, dt, 7)
    local Big = sq({ 40, 40 }, dt, 8)                                    -- past the batched Jacobi sizes
    local Bigs = spd({ 40, 40 }, dt, 9)
    local Tall = rnd({ 50, 36 }, dt, 10)

    describe(dt, function()
      it("solve, inv, det, slogdet (2-D, batched, views, vector b, broadcast batch)", function()
        for _, a in ipairs({ A2, Ab, strided(Ab), Big }) do
          local n = a.shape[a.ndim]
          both(L.inv, { a }, dt)
          both(L.det, { a }, dt)
          both(L.slogdet, { a }, dt)
          both(L.solve, { a, rnd({ n, 3 }, dt, 11) }, dt)
          both(L.solve, { a, rnd({ n }, dt, 12) }, dt)
          both(L.solve, { strided(a), strided(rnd({ n, 2 }, dt, 13)) }, dt)
        end
        both(L.solve, { Ab, rnd({ 2, 1, 4, 3 }, dt, 14) }, dt)
        both(L.slogdet, { gpu.zeros(3, 3, { dtype = dt }) }, dt)            -- singular: sign 0, -inf
        both(L.det, { -eye(4, dt) }, dt)
      end)

      it("cholesky (lower, upper), eigh/eigvalsh (UPLO) by values and |eigenvectors|", function()
        for _, a in ipairs({ S2, Sb, strided(Sb), Bigs }) do
          both(L.cholesky, { a }, dt)
          both(function(x) return L.cholesky(x, { upper = true }) end, { a }, dt)
          both(L.eigvalsh, { a }, dt)
          both(function(x) return L.eigvalsh(x, { UPLO = "U" }) end, { a }, dt)
          both(L.eigh, { a }, dt, {
            post = abs_all,
            check = function(_, args, r)
              local x, w, v = args[1]:to("cpu"), r[1], r[2]
              props_close(x:matmul(v), v * w:unsqueeze(-2), dt, "A V = V diag(w)")
            end })
        end
      end)

      it("qr (reduced, complete, r) by |Q|, |R| and Q R = A", function()
        for _, a in ipairs({ R2, Rb, Rw, strided(Rb), A2, Tall }) do
          for _, mode in ipairs({ "reduced", "complete" }) do
            both(function(x) return L.qr(x, { mode = mode }) end, { a }, dt, {
              -- complete: Q's columns past min(m, n) span the complement in the library's
              -- own way, so only the first min(m, n) are compared across devices
              post = function(r)
                local k = math.min(a.shape[a.ndim - 1], a.shape[a.ndim])
                return abs_all({ span(r[1], r[1].ndim, 1, k), r[2] })
              end,
              check = function(_, args, r)
                local x, q, rr = args[1]:to("cpu"), r[1], r[2]
                props_close(q:matmul(rr), x, dt, "Q R = A")
                local qq = mT(q):matmul(q)
                props_close(qq, eye_as(qq), dt, "Q^T Q = I")
                props_close(gpu.triu(rr), rr, dt, "R upper")
              end })
          end
          both(function(x) return L.qr(x, { mode = "r" }) end, { a }, dt, { post = abs_all })
        end
      end)

      it("svd (full, reduced, values only), svdvals by values, |U|, |Vh| and U S Vh = A", function()
        for _, a in ipairs({ R2, Rb, Rw, strided(Rb), A2, Tall, Big }) do
          both(L.svdvals, { a }, dt)
          both(function(x) return L.svd(x, { compute_uv = false }) end, { a }, dt)
          for _, full in ipairs({ false, true }) do
            both(function(x) return L.svd(x, { full_matrices = full }) end, { a }, dt, {
              post = function(r)
                if not full then return abs_all(r) end
                return { r[2] }     -- the full factors' extra columns are any basis
              end,
              check = function(_, args, r)
                local x, u, s, vh = args[1]:to("cpu"), r[1], r[2], r[3]
                local k = s.shape[s.ndim]
                local uk = span(u, u.ndim, 1, k)
                local vk = span(vh, vh.ndim - 1, 1, k)
                props_close((uk * s:unsqueeze(-2)):matmul(vk), x, dt, "U S Vh = A")
                local uu = mT(u):matmul(u)
                props_close(uu, eye_as(uu), dt, "U orthonormal")
              end })
          end
        end
      end)

      it("lstsq (over- and underdetermined, rank-deficient, vector b), pinv, matrix_rank", function()
        local def = rnd({ 6, 3 }, dt, 21)
        def = gpu.concat({ def, def[{ ":", { 1, 1 } }] * 2 }, 2)           -- rank 3 of 4 columns
        -- a rank-deficient matrix's tiny singular values are rounding noise, which differs
        -- between libraries: there a cut-off well above the noise (rcond, rtol 1e-4)
        for _, a in ipairs({ R2, Rw, def, strided(R2) }) do
          local m, cut = a.shape[1], a == def and 1e-4 or nil
          both(function(x, y) return L.lstsq(x, y, { rcond = cut }) end, { a, rnd({ m, 2 }, dt, 22) }, dt)
          both(function(x, y) return L.lstsq(x, y, { rcond = cut }) end, { a, rnd({ m }, dt, 23) }, dt)
          both(function(x, y) return L.lstsq(x, y, { rcond = 1e-3 }) end, { a, rnd({ m, 1 }, dt, 24) }, dt)
          both(function(x) return L.pinv(x, { rcond = cut }) end, { a }, dt)
          both(function(x) return L.matrix_rank(x, { rtol = cut }) end, { a }, dt)
        end
        both(L.pinv, { Rb }, dt)
        both(L.matrix_rank, { Rb }, dt)
      end)

      it("matrix_power, norm, cond, cross, multi_dot", function()
        for _, p in ipairs({ 0, 1, 3, -2 }) do both(function(x) return L.matrix_power(x, p) end, { Ab }, dt) end
        for _, ord in ipairs({ 1, -1, 2, -2, math.huge, -math.huge, "fro", "nuc" }) do
          both(function(x) return L.norm(x, ord, { 2, 3 }) end, { Ab }, dt)
        end
        both(function(x) return L.norm(x) end, { R2 }, dt)
        for _, p in ipairs({ nil, 2, -2, 1, -1, math.huge, "fro", "nuc" }) do
          both(function(x) return L.cond(x, p) end, { Ab }, dt)
        end
        both(L.cross, { rnd({ 4, 3 }, dt, 31), rnd({ 3 }, dt, 32) }, dt)
        both(function(x, y) return L.cross(x, y, 1) end, { rnd({ 3, 5 }, dt, 33), rnd({ 3, 5 }, dt, 34) }, dt)
        both(function(x, y, z) return L.multi_dot({ x, y, z }) end, { R2, Rw:transpose(1, 2):contiguous()[{ { 1, 4 }, ":" }], rnd({ 4, 2 }, dt, 35) }, dt)
      end)

      it("LinAlgErrors: same message, same batch element", function()
        local sing = gpu.stack({ eye(3, dt), eye(3, dt), gpu.zeros(3, 3, { dtype = dt }) })
        both(L.inv, { sing }, dt, { error = { "gpu.linalg.inv: matrix is singular (batch 3)" } })
        both(L.solve, { sing, rnd({ 3, 3, 1 }, dt, 41) }, dt, { error = { "matrix is singular (batch 3)" } })
        both(L.inv, { gpu.zeros(4, 4, { dtype = dt }) }, dt, { error = { "gpu.linalg.inv: matrix is singular" } })
        local notpd = gpu.stack({ eye(3, dt), -eye(3, dt) })
        both(L.cholesky, { notpd }, dt, { error = { "matrix is not positive definite (batch 2)" } })
        local inf = gpu.array({ { 1, 2 }, { 3, math.huge } }, { dtype = dt, device = "cpu" })
        both(L.svd, { inf }, dt, { error = { "gpu.linalg.svd: SVD did not converge" } })
        both(L.svdvals, { gpu.stack({ eye(2, dt), inf }) }, dt, { error = { "SVD did not converge (batch 2)" } })
        both(L.eigh, { gpu.stack({ eye(2, dt), eye(2, dt), inf }) }, dt, { error = { "did not converge (batch 3)" } })
        both(L.lstsq, { inf, rnd({ 2 }, dt, 42) }, dt, { error = { "did not converge" } })
        both(L.inv, { rnd({ 2, 3 }, dt, 43) }, dt, { error = { "must be square" } })
        -- junk in the unread triangle is not an error
        both(L.eigvalsh, { gpu.array({ { 1, math.huge }, { 0, 1 } }, { dtype = dt, device = "cpu" }) }, dt)
      end)

      if dt == "float64" then
        it("gradients agree (float64)", function()
          grad_both(L.inv, { Ab }, dt)
          grad_both(L.det, { Ab }, dt)
          grad_both(function(x, y) return L.solve(x, y) end, { Ab, rnd({ 3, 4, 2 }, dt, 51) }, dt)
          grad_both(function(x) return L.cholesky(x) end, { Sb }, dt)
          grad_both(function(x) return select(2, L.slogdet(x)) end, { Ab }, dt)
          grad_both(function(x) local q, r = L.qr(x) return q:abs() + 0 * r:sum() end, { R2 }, dt)
          grad_both(function(x) local _, r = L.qr(x) return r:abs() end, { Rb:transpose(-1, -2) }, dt)
          grad_both(L.svdvals, { Rb }, dt)
          grad_both(L.eigvalsh, { Sb }, dt)
          grad_both(function(x) local _, v = L.eigh(x) return v:abs() end, { S2 }, dt)
          grad_both(function(x, y) return (L.lstsq(x, y)) end, { R2, rnd({ 7, 2 }, dt, 52) }, dt)
          grad_both(L.pinv, { R2 }, dt)
          grad_both(function(x) return L.norm(x, "nuc", { 2, 3 }) end, { Rb }, dt)
          grad_both(function(x) return L.cond(x) end, { A2 }, dt)
          grad_both(function(x) return L.matrix_power(x, -2) end, { A2 }, dt)
        end)
      end
    end)
  end
end)

-- complex matrices, and eig / eigvals of real and complex ones. Complex inputs are made of
-- real parts (view_as_complex), their products in real arithmetic on (re, im) pairs, so
-- the harness stands on the real operations
local CTOL = { complex64 = TOL.float32, complex128 = TOL.float64 }
local PART = { complex64 = "float32", complex128 = "float64" }
local function cx(re, im) return gpu.view_as_complex(gpu.stack({ re, im }, re.ndim + 1)) end
-- the real view (..., 2) collect makes of a complex result as {re, im}
local function vpair(r)
  local function part(k) return r:take(gpu.array({ k }, { dtype = "int64", device = r.device }), r.ndim):squeeze(r.ndim) end
  return { part(1), part(2) }
end
-- a complex array as {re, im}, a real one as {x, 0}
local function pair(x)
  if x.dtype:match("^complex") then return vpair(gpu.view_as_real(x)) end
  return { x, gpu.zeros_like(x) }
end
local function pmm(a, b) return { a[1]:matmul(b[1]) - a[2]:matmul(b[2]), a[1]:matmul(b[2]) + a[2]:matmul(b[1]) } end
local function pmul(a, b) return { a[1] * b[1] - a[2] * b[2], a[1] * b[2] + a[2] * b[1] } end
local function pH(p) return { mT(p[1]), -mT(p[2]) } end
local function pclose(a, b, dt, what)
  for k = 1, 2 do props_close(a[k], b[k], dt, what) end
end
-- |x| of a real view (..., 2), elementwise: the moduli of phase-ambiguous factors
local function modulus(rv) local p = vpair(rv) return gpu.sqrt(p[1] * p[1] + p[2] * p[2]) end
local function crnd(shape, dt, seed) return cx(rnd(shape, PART[dt], seed), rnd(shape, PART[dt], seed + 500)) end
local function csq(shape, dt, seed)
  local n = shape[#shape]
  return cx(rnd(shape, PART[dt], seed) + eye(n, PART[dt]) * n, rnd(shape, PART[dt], seed + 500))
end
-- Hermitian positive definite: x x^H + n I
local function hpd(shape, dt, seed)
  local x = pair(crnd(shape, dt, seed))
  local p = pmm(x, pH(x))
  return cx(p[1] + eye(shape[#shape], PART[dt]) * shape[#shape], p[2])
end
-- eigenvalues (a real view (..., n, 2)) sorted per matrix by real part, then imaginary
local function sorted_eigs(rv)
  local n = rv.shape[rv.ndim - 1]
  local t = rv:reshape(-1, n, 2):totable()
  for _, list in ipairs(t) do
    table.sort(list, function(p, q)
      if math.abs(p[1] - q[1]) > 1e-3 * (1 + math.abs(q[1])) then return p[1] < q[1] end
      return p[2] < q[2]
    end)
  end
  return gpu.array(t, { dtype = rv.dtype }):reshape(rv.shape)
end
local function eig_check(dt)
  return function(_, args, r)
    local a, w, v = pair(args[1]:to("cpu")), vpair(r[1]), vpair(r[2])
    pclose(pmm(a, v), pmul(v, { w[1]:unsqueeze(-2), w[2]:unsqueeze(-2) }), dt, "A V = V diag(w)")
  end
end
-- whether complex array arithmetic beyond the real views is here (pinv, matrix_power,
-- norm's sums); else those cases are pending
local function can(f) return (pcall(f)) end
local z2 = gpu.zeros(2, 2, { dtype = "complex128" })
local CARITH = can(function() return z2:matmul(z2):conj() * gpu.ones(2) end) and can(function() return gpu.norm(z2) end)

describe(("gpu.linalg parity in complex and eig, cpu and %s%s"):format(OTHER, SELF and " (self-test)" or ""), function()
  for _, dt in ipairs({ "float32", "float64" }) do
    it("eig, eigvals of real matrices (" .. dt .. "): sorted eigenvalues, A V = V diag(w)", function()
      local pairs_ = gpu.array({ { 0, -2, 1 }, { 2, 0, 0.5 }, { 0, 0, 3 } }, { dtype = dt, device = "cpu" })
      for _, a in ipairs({ rnd({ 5, 5 }, dt, 81), rnd({ 2, 3, 4, 4 }, dt, 82), strided(rnd({ 3, 6, 6 }, dt, 83)),
                           rnd({ 40, 40 }, dt, 84), pairs_ }) do
        both(L.eigvals, { a }, dt, { post = function(r) return { sorted_eigs(r[1]) } end })
        both(L.eig, { a }, dt, { post = function(r) return { sorted_eigs(r[1]) } end, check = eig_check(dt) })
      end
    end)
  end

  for _, dt in ipairs({ "complex64", "complex128" }) do
    local pt = PART[dt]
    local A2, Ab, Big = csq({ 5, 5 }, dt, 101), csq({ 3, 4, 4 }, dt, 102), csq({ 40, 40 }, dt, 103)
    local H2, Hb, Bigh = hpd({ 5, 5 }, dt, 104), hpd({ 2, 3, 6, 6 }, dt, 105), hpd({ 40, 40 }, dt, 106)
    local R2, Rb, Rw, Tall = crnd({ 7, 4 }, dt, 107), crnd({ 3, 4, 6 }, dt, 108), crnd({ 4, 9 }, dt, 109), crnd({ 50, 36 }, dt, 110)

    describe(dt, function()
      it("solve, inv, det, slogdet (2-D, batched, views, vector b, Jacobi sizes and past them)", function()
        for _, a in ipairs({ A2, Ab, strided(Ab), Big }) do
          local n = a.shape[a.ndim]
          both(L.inv, { a }, pt)
          both(L.det, { a }, pt)
          both(L.slogdet, { a }, pt)
          both(L.solve, { a, crnd({ n, 3 }, dt, 111) }, pt)
          both(L.solve, { a, crnd({ n }, dt, 112) }, pt)
          both(L.solve, { strided(a), rnd({ n, 2 }, pt, 113) }, pt)          -- a real b
        end
        both(L.slogdet, { gpu.zeros(3, 3, { dtype = dt }) }, pt)
      end)

      it("cholesky (lower, upper), eigh/eigvalsh (UPLO) by values and |eigenvectors|", function()
        for _, a in ipairs({ H2, Hb, strided(Hb), Bigh }) do
          both(L.cholesky, { a }, pt)
          both(function(x) return L.cholesky(x, { upper = true }) end, { a }, pt)
          both(L.eigvalsh, { a }, pt)
          both(function(x) return L.eigvalsh(x, { UPLO = "U" }) end, { a }, pt)
          both(L.eigh, { a }, pt, {
            post = function(r) return { r[1], modulus(r[2]) } end,
            check = function(_, args, r)
              local w, v = r[1], vpair(r[2])
              local wd = { w:unsqueeze(-2), gpu.zeros_like(w:unsqueeze(-2)) }
              pclose(pmm(pair(args[1]:to("cpu")), v), pmul(v, wd), pt, "A V = V diag(w)")
            end })
        end
      end)

      it("qr (reduced, complete, r) by |Q|, |R|, Q R = A and Q^H Q = I", function()
        for _, a in ipairs({ R2, Rb, Rw, strided(Rb), A2, Tall }) do
          for _, mode in ipairs({ "reduced", "complete" }) do
            both(function(x) return L.qr(x, { mode = mode }) end, { a }, pt, {
              post = function(r)
                local k = math.min(a.shape[a.ndim - 1], a.shape[a.ndim])
                return { modulus(span(r[1], r[1].ndim - 1, 1, k)), modulus(r[2]) }
              end,
              check = function(_, args, r)
                local q, rr = vpair(r[1]), vpair(r[2])
                pclose(pmm(q, rr), pair(args[1]:to("cpu")), pt, "Q R = A")
                local qq = pmm(pH(q), q)
                pclose(qq, { eye_as(qq[1]), gpu.zeros_like(qq[2]) }, pt, "Q^H Q = I")
              end })
          end
          both(function(x) return L.qr(x, { mode = "r" }) end, { a }, pt, { post = function(r) return { modulus(r[1]) } end })
        end
      end)

      it("svd (full, reduced, values only), svdvals by values, |U|, |Vh| and U S Vh = A", function()
        for _, a in ipairs({ R2, Rb, Rw, strided(Rb), A2, Tall, Big }) do
          both(L.svdvals, { a }, pt)
          both(function(x) return L.svd(x, { compute_uv = false }) end, { a }, pt)
          for _, full in ipairs({ false, true }) do
            both(function(x) return L.svd(x, { full_matrices = full }) end, { a }, pt, {
              post = function(r)
                if full then return { r[2] } end
                return { modulus(r[1]), r[2], modulus(r[3]) }
              end,
              check = function(_, args, r)
                local u, s, vh = vpair(r[1]), r[2], vpair(r[3])
                local k = s.shape[s.ndim]
                local uk = { span(u[1], u[1].ndim, 1, k), span(u[2], u[2].ndim, 1, k) }
                local vk = { span(vh[1], vh[1].ndim - 1, 1, k), span(vh[2], vh[2].ndim - 1, 1, k) }
                local sd = { s:unsqueeze(-2), gpu.zeros_like(s:unsqueeze(-2)) }
                pclose(pmm(pmul(uk, sd), vk), pair(args[1]:to("cpu")), pt, "U S Vh = A")
                local uu = pmm(pH(u), u)
                pclose(uu, { eye_as(uu[1]), gpu.zeros_like(uu[2]) }, pt, "U unitary")
              end })
          end
        end
      end)

      it("lstsq (over- and underdetermined, rank-deficient, vector b), matrix_rank, the 2-norms", function()
        local d = crnd({ 6, 3 }, dt, 121)
        d = gpu.concat({ d, d[{ ":", { 1, 1 } }] }, 2)              -- rank 3 of 4 columns
        for _, a in ipairs({ R2, Rw, d, strided(R2) }) do
          local m, cut = a.shape[1], a == d and 1e-4 or nil
          both(function(x, y) return L.lstsq(x, y, { rcond = cut }) end, { a, crnd({ m, 2 }, dt, 122) }, pt)
          both(function(x, y) return L.lstsq(x, y, { rcond = cut }) end, { a, crnd({ m }, dt, 123) }, pt)
          both(function(x) return L.matrix_rank(x, { rtol = cut }) end, { a }, pt)
        end
        both(L.matrix_rank, { Rb }, pt)
        for _, ord in ipairs({ 2, -2, "nuc" }) do both(function(x) return L.norm(x, ord, { 2, 3 }) end, { Rb }, pt) end
      end)

      if CARITH then
        it("pinv, matrix_power, norm (every order), cond", function()
          both(L.pinv, { R2 }, pt)
          both(L.pinv, { Rb }, pt)
          both(function(x) return L.pinv(x, { hermitian = true }) end, { H2 }, pt)
          for _, p in ipairs({ 0, 3, -2 }) do both(function(x) return L.matrix_power(x, p) end, { Ab }, pt) end
          for _, ord in ipairs({ 1, -1, math.huge, -math.huge, "fro" }) do
            both(function(x) return L.norm(x, ord, { 2, 3 }) end, { Ab }, pt)
          end
          both(L.norm, { R2 }, pt)
          for _, p in ipairs({ nil, 2, 1, "fro" }) do both(function(x) return L.cond(x, p) end, { Ab }, pt) end
        end)
      else
        pending("pinv, matrix_power, norm (every order), cond (needs complex matmul, conj, mul and norm)")
      end

      it("eig, eigvals: sorted eigenvalues, A V = V diag(w)", function()
        for _, a in ipairs({ crnd({ 5, 5 }, dt, 131), crnd({ 2, 3, 4, 4 }, dt, 132), strided(crnd({ 3, 6, 6 }, dt, 133)),
                             crnd({ 40, 40 }, dt, 134) }) do
          both(L.eigvals, { a }, pt, { post = function(r) return { sorted_eigs(r[1]) } end })
          both(L.eig, { a }, pt, { post = function(r) return { sorted_eigs(r[1]) } end, check = eig_check(pt) })
        end
      end)

      it("LinAlgErrors: same message, same batch element", function()
        local e, z = cx(eye(3, pt), eye(3, pt) * 0), gpu.zeros(3, 3, { dtype = dt })
        local sing = gpu.stack({ e, e, z })
        both(L.inv, { sing }, pt, { error = { "gpu.linalg.inv: matrix is singular (batch 3)" } })
        both(L.solve, { sing, crnd({ 3, 3, 1 }, dt, 141) }, pt, { error = { "matrix is singular (batch 3)" } })
        both(L.cholesky, { gpu.stack({ e, cx(-eye(3, pt), eye(3, pt) * 0) }) }, pt,
          { error = { "matrix is not positive definite (batch 2)" } })
        local inf = cx(gpu.array({ { 1, 2 }, { 3, math.huge } }, { dtype = pt, device = "cpu" }), gpu.zeros(2, 2, { dtype = pt }))
        both(L.svd, { inf }, pt, { error = { "gpu.linalg.svd: SVD did not converge" } })
        both(L.eigh, { gpu.stack({ e[{ { 1, 2 }, { 1, 2 } }], inf }) }, pt, { error = { "did not converge (batch 2)" } })
        both(L.eig, { gpu.stack({ e[{ { 1, 2 }, { 1, 2 } }], inf }) }, pt, { error = { "gpu.linalg.eig: eigenvalues did not converge (batch 2)" } })
        both(L.eigvals, { inf }, pt, { error = { "did not converge" } })
        both(L.lstsq, { inf, crnd({ 2 }, dt, 142) }, pt, { error = { "did not converge" } })
      end)
    end)
  end
end)

-- the tensor products and the NumPy routines: each called as the API has it, on both
-- devices, over a 2-D, a batched and a strided operand where they take one
describe(("routines parity, cpu and %s%s"):format(OTHER, SELF and " (self-test)" or ""), function()
  local cases = {}
  local function case(name, fn, inputs, opts) cases[#cases + 1] = { name, fn, inputs, opts } end
  for _, dt in ipairs(DTYPES) do
    local x, xb, xs = rnd({ 4, 5 }, dt, 61), rnd({ 2, 4, 5 }, dt, 62), strided(rnd({ 5, 4 }, dt, 63))
    local v = rnd({ 7 }, dt, 64)
    local nanx = gpu.where(x:gt(1), 0 / 0, x)
    local sorted = gpu.sort(rnd({ 9 }, dt, 65))
    local ints = gpu.array({ 0, 3, 1, 1, 4, 0, 2 }, { dtype = "int64", device = "cpu" })
    local idx = gpu.array({ { 1, 2, 1, 3, 5 }, { 4, 4, 1, 2, 3 } }, { dtype = "int64", device = "cpu" })
    case("einsum", function(a, b) return gpu.einsum("bij,bjk->bik", a, b) end, { xb, xb:transpose(-1, -2) }, dt)
    case("einsum", function(a) return gpu.einsum("ii->i", a) end, { x[{ ":", { 1, 4 } }] }, dt)
    case("einsum", function(a, b) return gpu.einsum("ij,jk", a, b) end, { xs, x }, dt)
    case("tensordot", function(a, b) return gpu.tensordot(a, b) end, { xb, rnd({ 4, 5, 3 }, dt, 66) }, dt)
    case("tensordot", function(a, b) return gpu.tensordot(a, b, { { 3 }, { 1 } }) end, { xb, rnd({ 5, 2 }, dt, 67) }, dt)
    case("kron", gpu.kron, { x, xs }, dt)
    case("inner", gpu.inner, { xb, x }, dt)
    case("vdot", gpu.vdot, { x, xs:transpose(1, 2) }, dt)
    case("isclose", gpu.isclose, { x, x + 1e-6 }, dt)
    case("allclose", gpu.allclose, { x, xs:transpose(1, 2) }, dt)
    case("array_equal", gpu.array_equal, { x, x:copy() }, dt)
    case("diagonal", function(a) return gpu.diagonal(a, 1, 2, 3) end, { xb }, dt)
    case("trace", gpu.trace, { xs }, dt)
    case("diag", gpu.diag, { v }, dt)
    case("diag", function(a) return gpu.diag(a, -1) end, { x }, dt)
    case("triu", function(a) return gpu.triu(a, 1) end, { xb }, dt)
    case("tril", gpu.tril, { xs }, dt)
    for _, f in ipairs({ "nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "nanargmax", "nanargmin" }) do
      case(f, function(a) return gpu[f](a, 2) end, { nanx }, dt)
    end
    case("unique", function(a) return gpu.unique(a, { return_index = true, return_inverse = true, return_counts = true }) end,
      { gpu.round(x) }, dt)
    case("nonzero", gpu.nonzero, { gpu.round(xs) }, dt)
    case("argwhere", gpu.argwhere, { gpu.round(x) }, dt)
    case("flatnonzero", gpu.flatnonzero, { gpu.round(x) }, dt)
    case("count_nonzero", function(a) return gpu.count_nonzero(a, 1) end, { gpu.round(xb) }, dt)
    case("searchsorted", gpu.searchsorted, { sorted, v }, dt)
    case("digitize", gpu.digitize, { v, sorted }, dt)
    case("bincount", gpu.bincount, { ints }, dt)
    case("histogram", function(a) return gpu.histogram(a, { bins = 5 }) end, { x }, dt)
    case("pad", function(a) return gpu.pad(a, 2, { mode = "reflect" }) end, { xs }, dt)
    case("meshgrid", gpu.meshgrid, { v, x[1] }, dt)
    case("take_along_axis", function(a, i) return gpu.take_along_axis(a, i, 2) end, { x[{ { 1, 2 }, ":" }], idx }, dt)
    case("put_along_axis", function(a, i) return gpu.put_along_axis(a:copy(), i, 7, 2) end, { x[{ { 1, 2 }, ":" }], idx }, dt)
    case("gather", function(a, i) return gpu.gather(a, 2, i) end, { x, idx }, dt)
    case("scatter", function(a, i) return gpu.scatter(a, 2, i, 5) end, { x, idx }, dt)
    case("scatter_add", function(a, i, s) return gpu.scatter_add(a, 2, i, s) end, { x, idx, rnd({ 2, 5 }, dt, 68) }, dt)
    case("atleast_1d", gpu.atleast_1d, { v }, dt)
    case("atleast_2d", gpu.atleast_2d, { v }, dt)
    case("atleast_3d", gpu.atleast_3d, { x }, dt)
    case("broadcast_to", function(a) return gpu.broadcast_to(a, { 3, 7 }) end, { v }, dt)
    case("broadcast_arrays", gpu.broadcast_arrays, { v, x[{ ":", { 1, 1 } }] }, dt)
    case("swapaxes", function(a) return gpu.swapaxes(a, 1, 3) end, { xb }, dt)
    case("moveaxis", function(a) return gpu.moveaxis(a, 1, -1) end, { xb }, dt)
    case("rot90", gpu.rot90, { xs }, dt)
    case("nan_to_num", gpu.nan_to_num, { nanx / 0 }, dt)
    case("quantile", function(a) return gpu.quantile(a, { 0.1, 0.5, 0.9 }, 2) end, { xs }, dt)
    case("percentile", function(a) return gpu.percentile(a, 30, 1) end, { x }, dt)
    case("median", function(a) return gpu.median(a, 2) end, { xb }, dt)
    case("nanmedian", function(a) return gpu.nanmedian(a, 2) end, { nanx }, dt)
    case("nanquantile", function(a) return gpu.nanquantile(a, 0.25, 2) end, { nanx }, dt)
    case("nanpercentile", function(a) return gpu.nanpercentile(a, 75, 2) end, { nanx }, dt)
    case("cov", gpu.cov, { xs }, dt)
    case("corrcoef", gpu.corrcoef, { x }, dt)
    case("diff", function(a) return gpu.diff(a, 2, 1) end, { xs }, dt)
    case("gradient", gpu.gradient, { x }, dt)
    case("convolve", gpu.convolve, { v, v[{ { 1, 3 } }] }, dt)
    case("correlate", function(a, b) return gpu.correlate(a, b, "same") end, { v, v[{ { 2, 4 } }] }, dt)
    case("interp", gpu.interp, { v, sorted, rnd({ 9 }, dt, 69) }, dt)
    case("trapz", gpu.trapz, { xs }, dt)
    -- joining, splitting, building and indexing (gpu.routines.manip)
    local y = rnd({ 4, 5 }, dt, 81)
    local i64 = function(t) return gpu.array(t, { dtype = "int64", device = "cpu" }) end
    local mask = x:gt(0.5)
    case("vstack", function(a, b) return gpu.vstack({ a, b }) end, { x, y }, dt)
    case("hstack", function(a, b) return gpu.hstack({ a, b }) end, { x, y }, dt)
    case("dstack", function(a, b) return gpu.dstack({ a, b }) end, { x, y }, dt)
    case("column_stack", function(a, b) return gpu.column_stack({ a, b }) end, { v, v }, dt)
    case("row_stack", function(a, b) return gpu.row_stack({ a, b }) end, { x, y }, dt)
    case("block", function(a, b) return gpu.block({ { a, b } }) end, { x, y }, dt)
    case("array_split", function(a) return gpu.array_split(a, 3) end, { v }, dt)
    case("hsplit", function(a) return gpu.hsplit(a, { 2, 4 }) end, { x }, dt)
    case("vsplit", function(a) return gpu.vsplit(a, 2) end, { x }, dt)
    case("dsplit", function(a) return gpu.dsplit(a, 5) end, { xb }, dt)
    case("append", function(a, b) return gpu.append(a, b) end, { x, v }, dt)
    case("insert", function(a) return gpu.insert(a, 2, 9) end, { v }, dt)
    case("delete", function(a) return gpu.delete(a, { 1, 3 }) end, { v }, dt)
    case("resize", function(a) return gpu.resize(a, { 3, 6 }) end, { x }, dt)
    case("trim_zeros", gpu.trim_zeros, { gpu.concat({ gpu.zeros(2, { dtype = dt }), v, gpu.zeros(1, { dtype = dt }) }) }, dt)
    case("fliplr", gpu.fliplr, { x }, dt)
    case("flipud", gpu.flipud, { x }, dt)
    case("rollaxis", function(a) return gpu.rollaxis(a, 3) end, { xb }, dt)
    case("broadcast_shapes", function() return gpu.array(gpu.broadcast_shapes({ 4, 1 }, { 3 })) end, {}, dt)
    case("logspace", function() return gpu.logspace(0, 2, 5, { dtype = dt }) end, {}, dt)
    case("geomspace", function() return gpu.geomspace(1, 100, 5, { dtype = dt }) end, {}, dt)
    case("tri", function() return gpu.tri(3, 4, { dtype = dt }) end, {}, dt)
    case("diagflat", gpu.diagflat, { v }, dt)
    case("indices", function() return gpu.indices({ 2, 3 }) end, {}, dt)
    case("mgrid", function() return gpu.mgrid({ 1, 3 }, { 1, 4 }) end, {}, dt)
    case("ogrid", function() return gpu.ogrid({ 1, 3 }, { 1, 4 }) end, {}, dt)
    case("fromfunction", function() return gpu.fromfunction(function(i, j) return i * 10 + j end, { 2, 3 }) end, {}, dt)
    case("unravel_index", function(a) return gpu.unravel_index(a, { 3, 4 }) end, { i64({ 1, 5, 12 }) }, dt)
    case("ravel_multi_index", function(a, b) return gpu.ravel_multi_index({ a, b }, { 3, 4 }) end, { i64({ 1, 2 }), i64({ 3, 4 }) }, dt)
    case("tril_indices", function() return gpu.tril_indices(4) end, {}, dt)
    case("triu_indices", function() return gpu.triu_indices(4, 1) end, {}, dt)
    case("diag_indices", function() return gpu.diag_indices(3) end, {}, dt)
    case("fill_diagonal", function(a) local c = a:copy(); gpu.fill_diagonal(c, 5); return c end, { x }, dt)
    case("ix_", function(a, b) return gpu.ix_(a, b) end, { i64({ 1, 3 }), i64({ 2, 4 }) }, dt)
    case("put", function(a) local c = a:copy(); gpu.put(c, i64({ 1, 7 }), 3); return c end, { x }, dt)
    case("putmask", function(a, m) local c = a:copy(); gpu.putmask(c, m, 0); return c end, { x, mask }, dt)
    case("place", function(a, m) local c = a:copy(); gpu.place(c, m, { 8, 9 }); return c end, { x, mask }, dt)
    case("compress", function(a) return gpu.compress(gpu.array({ true, false, true, true }), a, 1) end, { x }, dt)
    case("choose", function(a, b) return gpu.choose(i64({ 1, 2, 1, 2, 1 }), { a, b }) end, { x[1], y[1] }, dt)
    case("select", function(a) return gpu.select({ a:lt(0.3), a:gt(0.7) }, { a, a * 2 }, -1) end, { x }, dt)
    -- elementwise helpers (gpu.routines.math)
    case("ldexp", function(a) return gpu.ldexp(a, i64({ 1, 2, 3, 0, -1 })) end, { x }, dt)
    case("frexp", gpu.frexp, { x }, dt)
    case("modf", gpu.modf, { x * 3 }, dt)
    case("divmod", function(a, b) return gpu.divmod(a, b + 0.5) end, { x, y }, dt)
    case("float_power", function(a) return gpu.float_power(a, 2.5) end, { x }, dt)
    case("unwrap", gpu.unwrap, { v * 7 }, dt)
    -- reductions, scans, sets and histograms
    case("amax", function(a) return gpu.amax(a, 2) end, { x }, dt)
    case("amin", function(a) return gpu.amin(a, 1) end, { x }, dt)
    case("aminmax", function(a) return gpu.aminmax(a, 2) end, { x }, dt)
    case("ptp", function(a) return gpu.ptp(a, 2) end, { x }, dt)
    case("average", function(a, w) return gpu.average(a, 2, { weights = w }) end, { x, y }, dt)
    case("nanprod", function(a) return gpu.nanprod(a, 2) end, { nanx }, dt)
    case("nancumsum", function(a) return gpu.nancumsum(a, 2) end, { nanx }, dt)
    case("nancumprod", function(a) return gpu.nancumprod(a, 2) end, { nanx }, dt)
    case("ediff1d", gpu.ediff1d, { v }, dt)
    case("std_mean", function(a) return gpu.std_mean(a, 2) end, { x }, dt)
    case("var_mean", function(a) return gpu.var_mean(a, 2) end, { x }, dt)
    case("cummax", function(a) return gpu.cummax(a, 2) end, { x }, dt)
    case("cummin", function(a) return gpu.cummin(a, 2) end, { x }, dt)
    case("logcumsumexp", function(a) return gpu.logcumsumexp(a, 2) end, { x }, dt)
    case("mode", function(a) return gpu.mode(gpu.round(a * 2), 2) end, { x }, dt)
    case("kthvalue", function(a) return gpu.kthvalue(a, 2, 2) end, { x }, dt)
    case("unique_consecutive", function(a) return gpu.unique_consecutive(gpu.round(a * 2)) end, { v }, dt)
    case("cdist", gpu.cdist, { x, y }, dt)
    case("dist", gpu.dist, { x, y }, dt)
    case("isin", function(a, b) return gpu.isin(gpu.round(a * 4), gpu.round(b * 4)) end, { x, y }, dt)
    case("in1d", function(a, b) return gpu.in1d(gpu.round(a * 4), gpu.round(b * 4)) end, { v, v }, dt)
    case("intersect1d", function(a, b) return gpu.intersect1d(gpu.round(a * 4), gpu.round(b * 4)) end, { x, y }, dt)
    case("union1d", function(a, b) return gpu.union1d(gpu.round(a * 4), gpu.round(b * 4)) end, { x, y }, dt)
    case("setdiff1d", function(a, b) return gpu.setdiff1d(gpu.round(a * 4), gpu.round(b * 4)) end, { x, y }, dt)
    case("setxor1d", function(a, b) return gpu.setxor1d(gpu.round(a * 4), gpu.round(b * 4)) end, { x, y }, dt)
    case("unique_values", function(a) return gpu.unique_values(gpu.round(a * 4)) end, { x }, dt)
    case("unique_counts", function(a) return gpu.unique_counts(gpu.round(a * 4)) end, { x }, dt)
    case("unique_inverse", function(a) return gpu.unique_inverse(gpu.round(a * 4)) end, { x }, dt)
    case("lexsort", function(a, b) return gpu.lexsort({ gpu.round(a * 2), b }) end, { v, v }, dt)
    case("histogram2d", function(a, b) return gpu.histogram2d(a, b, { bins = 3 }) end, { v, v * 2 }, dt)
    case("histogramdd", function(a) return gpu.histogramdd(a, { bins = 2 }) end, { x }, dt)
    case("histogram_bin_edges", function(a) return gpu.histogram_bin_edges(a, { bins = 4 }) end, { v }, dt)
    -- PyTorch's tensor helpers (gpu.routines.tensor)
    case("masked_fill", function(a, m) return gpu.masked_fill(a, m, 7) end, { x, mask }, dt)
    case("masked_fill_", function(a, m) return a:copy():masked_fill_(m, 7) end, { x, mask }, dt)
    case("index_add", function(a, b) return gpu.index_add(a, 1, i64({ 1, 3 }), b[{ { 1, 2 } }]) end, { x, y }, dt)
    case("index_add_", function(a, b) return a:copy():index_add_(1, i64({ 2, 2 }), b[{ { 1, 2 } }]) end, { x, y }, dt)
    case("index_copy", function(a, b) return gpu.index_copy(a, 1, i64({ 4, 1 }), b[{ { 1, 2 } }]) end, { x, y }, dt)
    case("index_copy_", function(a, b) return a:copy():index_copy_(1, i64({ 4, 1 }), b[{ { 1, 2 } }]) end, { x, y }, dt)
    case("index_fill", function(a) return gpu.index_fill(a, 2, i64({ 1, 5 }), -1) end, { x }, dt)
    case("index_fill_", function(a) return a:copy():index_fill_(2, i64({ 2 }), -1) end, { x }, dt)
    case("scatter_reduce", function(a, b) return gpu.scatter_reduce(a, 2, idx, b[{ { 1, 2 } }], "amax") end, { x[{ { 1, 2 } }], y }, dt)
    case("scatter_reduce_", function(a, b) return a:copy():scatter_reduce_(2, idx, b[{ { 1, 2 } }], "sum") end, { x[{ { 1, 2 } }], y }, dt)
    case("tensor_split", function(a) return gpu.tensor_split(a, 3, 2) end, { x }, dt)
    case("chunk", function(a) return gpu.chunk(a, 2, 1) end, { x }, dt)
    case("unbind", function(a) return gpu.unbind(a, 1) end, { x }, dt)
    case("narrow", function(a) return gpu.narrow(a, 2, 2, 3) end, { x }, dt)
    case("unflatten", function(a) return gpu.unflatten(a, 1, { 2, 2 }) end, { x }, dt)
    case("diag_embed", gpu.diag_embed, { x }, dt)
    case("block_diag", function(a, b) return gpu.block_diag(a, b) end, { x, y }, dt)
    case("cartesian_prod", function(a, b) return gpu.cartesian_prod(a, b) end, { v[{ { 1, 3 } }], v[{ { 4, 5 } }] }, dt)
    case("combinations", function(a) return gpu.combinations(a, 2) end, { v }, dt)
    case("type_as", function(a) return gpu.type_as(a, gpu.zeros(1, { dtype = "float64" })) end, { x }, dt)
    case("view_as", function(a, b) return gpu.view_as(a, b) end, { x, y }, dt)
    case("reshape_as", function(a) return gpu.reshape_as(a, gpu.zeros(5, 4)) end, { x }, dt)
    case("expand_as", function(a) return gpu.expand_as(a, gpu.zeros(3, 7)) end, { v }, dt)
    case("zero_", function(a) return a:copy():zero_() end, { x }, dt)
    case("copy_", function(a, b) return a:copy():copy_(b) end, { x, y }, dt)
    case("clamp", function(a) return gpu.clamp(a, 0.2, 0.8) end, { x }, dt)
    case("clamp_", function(a) return a:copy():clamp_(0.2, 0.8) end, { x }, dt)
    case("clip_", function(a) return a:copy():clip_(nil, 0.5) end, { x }, dt)
    case("new_zeros", function(a) return a:new_zeros({ 2, 3 }) end, { x }, dt)
    case("new_ones", function(a) return a:new_ones({ 2, 3 }) end, { x }, dt)
    case("new_full", function(a) return a:new_full({ 2, 3 }, 4) end, { x }, dt)
    case("new_empty", function(a) return a:new_empty({ 2, 3 }):zero_() end, { x }, dt)
    case("normal_", function(a) gpu.random.seed(9); return a:copy():normal_(1, 2) end, { x }, dt)
    case("uniform_", function(a) gpu.random.seed(9); return a:copy():uniform_(-1, 1) end, { x }, dt)
    case("bernoulli_", function(a) gpu.random.seed(9); return a:copy():bernoulli_(0.3) end, { x }, dt)
    case("exponential_", function(a) gpu.random.seed(9); return a:copy():exponential_(2) end, { x }, dt)
    case("rand_like", function(a) gpu.random.seed(9); return gpu.rand_like(a) end, { x }, dt)
    case("randn_like", function(a) gpu.random.seed(9); return gpu.randn_like(a) end, { x }, dt)
    case("randint_like", function(a) gpu.random.seed(9); return gpu.randint_like(a, 0, 10) end, { x }, dt)
    -- matrix products and factorisations (gpu.routines.matrix)
    case("addmm", function(a, b, c) return gpu.addmm(a, b, c, { beta = 0.5, alpha = 2 }) end, { x[{ { 1, 4 }, { 1, 4 } }], x, y:transpose(1, 2) }, dt)
    case("addmv", function(a, m, w) return gpu.addmv(a, m, w) end, { v[{ { 1, 4 } }], x, v[{ { 1, 5 } }] }, dt)
    case("baddbmm", function(a, b, c) return gpu.baddbmm(a, b, c) end, { rnd({ 2, 4, 4 }, dt, 82), xb, xb:transpose(2, 3) }, dt)
    case("matrix_exp", gpu.matrix_exp, { x[{ { 1, 4 }, { 1, 4 } }] * 0.3 }, dt)
    case("cholesky_solve", function(b, a) return gpu.cholesky_solve(b, gpu.linalg.cholesky(a)) end, { x, spd({ 4, 4 }, dt, 83) }, dt)
  end

  it("covers every routine of gpu._routines", function()
    local seen = {}
    for _, c in ipairs(cases) do seen[c[1]] = true end
    local missing = {}
    for name in pairs(gpu._routines) do if not seen[name] then missing[#missing + 1] = name end end
    table.sort(missing)
    assert(#missing == 0, "no parity case for " .. table.concat(missing, ", "))
  end)

  for _, c in ipairs(cases) do
    it(("%s (%s)"):format(c[1], c[4]), function() both(c[2], c[3], c[4]) end)
  end

  it("gradients agree for the differentiable routines (float64)", function()
    local dt = "float64"
    local x, xb = rnd({ 4, 5 }, dt, 71), rnd({ 2, 4, 5 }, dt, 72)
    grad_both(function(a, b) return gpu.einsum("bij,bkj->bik", a, b) end, { xb, xb }, dt)
    grad_both(function(a, b) return gpu.tensordot(a, b, 1) end, { x, rnd({ 5, 3 }, dt, 73) }, dt)
    grad_both(function(a) return gpu.pad(a, 1, { mode = "reflect" }) end, { x }, dt)
    grad_both(function(a) return gpu.quantile(a, 0.3, 2) end, { x }, dt)
    grad_both(function(a) return gpu.cov(a) end, { x }, dt)
    grad_both(function(a) return gpu.trace(a) end, { x }, dt)
    grad_both(function(a) return gpu.nansum(a, 1) end, { x }, dt)
    grad_both(function(a, b) return gpu.convolve(a, b) end, { x[1], x[2][{ { 1, 3 } }] }, dt)
  end)
end)
