-- gpu.autograd.rules_structure: the rules of the ops that move, pick, join and combine
-- elements (sorting, indexing and joining, linear algebra, fused kernels, convolution,
-- pooling, batch norm), a table by op name that gpu.autograd.rules takes into its own; the
-- conventions are rules.lua's header.

local gpu = require "gpu"
local G = gpu._grad
local is_array = require("gpu.options").is_array
local H = require "gpu.autograd.rule_helpers"
local tracked, unbroadcast, norm_axis, no_grad = H.tracked, H.unbroadcast, H.norm_axis, H.no_grad
local op_node, scatter_add, put_key, scatter_along = H.op_node, H.scatter_add, H.put_key, H.scatter_along
local cj = H.conj    -- (the conjugate of a complex array; real ones as they are)

local R = {}

-- ---- sorting --------------------------------------------------------------------------------------------

R.sort = { saves = {}, backward = function(g, node)
  local x, a2, a3 = node[1], node[2], node[3]
  local axis = type(a2) == "number" and a2 or -1
  local o = type(a2) == "table" and a2 or a3
  local idx = no_grad(function() return x:argsort(axis, o) end)
  if x.ndim == 0 then return g end
  return scatter_along(x, idx, g, axis)
end }
R.partition = { saves = {}, backward = function(g, node)       -- (x, kth [, axis])
  local x, kth, axis = node[1], node[2], node[3] or -1
  local idx = no_grad(function() return x:argpartition(kth, axis) end)   -- the same order
  return scatter_along(x, idx, g, axis)
end }
R.topk = { saves = {}, backward = function(g, node)
  local x = node[1]
  local axis = type(node[3]) == "number" and node[3] or -1
  return scatter_along(x, node.extra[1], g, axis)
end }

-- ---- indexing and joining ----------------------------------------------------------------------------------

-- The positions take read under its option mode ("wrap", "clip"; src/lua/lindexing.c's
-- take_positions): idx remapped onto an axis of n elements.
local function take_positions(idx, n, opts)
  local mode = type(opts) == "table" and not is_array(opts) and opts.mode
  if n == 0 or (mode ~= "wrap" and mode ~= "clip") then return idx end
  if mode == "wrap" then return gpu.mod(idx - idx:gt(0), n) + 1 end
  return idx:clip(1, n)
end

R.take = { saves = { 2 }, backward = function(g, node)
  local x, idx, axis = node[1], node[2], node[3]
  local opts = node[4]
  if type(axis) == "table" then axis, opts = nil, axis end
  idx = take_positions(idx, axis == nil and x.size or x.shape[norm_axis(axis, x.ndim)], opts)
  if axis == nil then
    local flat = scatter_add(gpu.zeros(x.size, { device = x.device }), 1, idx:reshape(idx.size), g:reshape(g.size))
    return flat:reshape(x.shape)
  end
  axis = norm_axis(axis, x.ndim)
  local s = {}
  local xs = x.shape
  for i = 1, axis - 1 do s[#s + 1] = xs[i] end
  s[#s + 1] = idx.size
  for i = axis + 1, #xs do s[#s + 1] = xs[i] end
  return scatter_add(x, axis, idx:reshape(idx.size), g:reshape(s))
end }
R.index = { saves = { 3 }, backward = function(g, node)
  local x, axis, idx = node[1], node[2], node[3]
  return R.take.backward(g, { x, idx, axis, n = 3 })
end }
R.masked_select = { saves = { 2 }, backward = function(g, node) return put_key(node[1], node[2], g) end }
-- x[key]: slices, x.T (mT, H, mH), integer and mask arrays (recorded by larray.c's __index)
R.getindex = { saves = {}, backward = function(g, node)
  local x, key = node[1], node[2]
  if key == "T" then return g:transpose() end
  if key == "mT" or key == "H" or key == "mH" then      -- (the conjugate of H and mH is an op of its own)
    return x.ndim < 2 and g or g:transpose(-1, -2)
  end
  if is_array(key) and key.dtype ~= "bool" then
    local s = { key.size }
    local xs = x.shape
    for d = 2, #xs do s[d] = xs[d] end
    return scatter_add(x, 1, key:reshape(key.size), g:reshape(s))
  end
  return put_key(x, key, g)
end }

-- x:unfold(dim, size, step) (a view of overlapping windows): each window's gradient added
-- back at its elements, the windows' axis and the new last axis merged into one list of
-- 1-based positions along dim
R.unfold = { saves = {}, backward = function(g, node)
  local x, dim, size, step = node[1], node[2], node[3], node[4]
  if x.ndim == 0 then return g:sum() end
  local d = norm_axis(dim, x.ndim)
  local nw, nd = g.shape[d], g.ndim
  local pos = (gpu.arange(nw, { device = g.device }) * step):reshape(nw, 1) +
    gpu.arange(1, size + 1, { device = g.device }):reshape(1, size)
  local perm = {}
  for i = 1, d do perm[#perm + 1] = i end
  perm[#perm + 1] = nd
  for i = d + 1, nd - 1 do perm[#perm + 1] = i end
  local s = x.shape
  s[d] = nw * size
  return scatter_add(x, d, pos:reshape(nw * size), g:permute(perm):reshape(s))
end }

local function join(stacking)
  return { saves = {}, backward = function(g, node)
    local list, axis = node[1], node[2] or 1
    axis = norm_axis(axis, g.ndim)
    local sizes = {}
    for i = 1, #list do sizes[i] = stacking and 1 or list[i].shape[axis] end
    local parts = g:split(sizes, axis)
    if stacking then
      for i = 1, #parts do parts[i] = parts[i]:reshape(list[i].shape) end
    end
    return parts          -- a list: one gradient per array of the list argument
  end, list = true }
end
R.concat = join(false)
R.concatenate = R.concat
R.stack = join(true)

-- split: each piece is its own node, whose gradient lands in its slice of x
R.split = { saves = {}, record = function(node, pieces)
  local a = H.node_args(node)
  local x, axis = a[1], a[3] or 1
  axis = norm_axis(axis, x.ndim)
  local start = 1
  for i = 1, #pieces do
    local len = pieces[i].shape[axis]
    local key = {}
    for d = 1, x.ndim do key[d] = ":" end
    key[axis] = { start, start + len - 1 }
    start = start + len
    G.set_node(pieces[i], op_node(R.getindex, pieces[i], x, key))
  end
end }

R["repeat"] = { saves = {}, backward = function(g, node)
  local x, reps, axis = node[1], node[2], node[3]
  if is_array(reps) then
    local ax = axis and norm_axis(axis, x.ndim) or 1
    local src = axis and x or x:reshape(x.size)
    local n = src.shape[ax]
    local pos = gpu.arange(1, n + 1, { device = x.device }):repeat_interleave(reps)
    local z = scatter_add(src, ax, pos, axis and g or g:reshape(g.size))
    return z:reshape(x.shape)
  end
  if axis == nil then return g:reshape(x.size, reps):sum(2):reshape(x.shape) end
  axis = norm_axis(axis, x.ndim)
  local s = {}
  local xs = x.shape
  for i = 1, #xs do
    s[#s + 1] = xs[i]
    if i == axis then s[#s + 1] = reps end
  end
  return g:reshape(s):sum(axis + 1)
end }
R.repeat_interleave = R["repeat"]

-- ---- linear algebra ----------------------------------------------------------------------------------------

-- a @ b: g @ b^H and a^H @ g (the conjugates are no-ops for real operands)
local function matmul_grads(g, a, b)
  local an, bn = a.ndim, b.ndim
  if an == 1 and bn == 1 then return g * cj(b), g * cj(a) end
  local a2 = an == 1 and a:reshape(1, a.shape[1]) or a
  local b2 = bn == 1 and b:reshape(b.shape[1], 1) or b
  local g2 = g
  if an == 1 then g2 = g2:unsqueeze(-2) end
  if bn == 1 then g2 = g2:unsqueeze(-1) end
  local ga, gb
  if tracked(a) then
    ga = unbroadcast(g2:matmul(cj(b2:transpose(-1, -2))), a2.shape)
    if an == 1 then ga = ga:reshape(a.shape) end
  end
  if tracked(b) then
    gb = unbroadcast(cj(a2:transpose(-1, -2)):matmul(g2), b2.shape)
    if bn == 1 then gb = gb:reshape(b.shape) end
  end
  return ga, gb
end
R.matmul = { backward = function(g, node) return matmul_grads(g, node[1], node[2]) end }
R.dot = { backward = function(g, node)
  local a, b = node[1], node[2]
  if a.ndim == 0 or b.ndim == 0 then return g * cj(b), g * cj(a) end
  if b.ndim <= 2 then return matmul_grads(g, a, b) end
  error("dot: the gradient of N-D dot with a >2-D second operand is not implemented (use matmul)")
end }
R.outer = { backward = function(g, node)
  local a, b = node[1], node[2]
  return g:matmul(cj(b:reshape(b.size))):reshape(a.shape), g:transpose():matmul(cj(a:reshape(a.size))):reshape(b.shape)
end }

-- ---- gpu.linalg (numpy.linalg over LAPACK) ------------------------------------------------------------------
-- The formulas are PyTorch's and TensorFlow's, in dispatched ops, written with the conjugate
-- transpose mT (the transpose for real arrays), so they hold for complex matrices too
-- (PyTorch's complex forms; svd's and eig's gauge terms below). Ops with several results
-- (slogdet, qr, svd, eigh, eig) give each differentiable result a node of its own
-- (per_result): the gradient of a is linear in the results' gradients, so the engine's sum
-- over those nodes is the whole gradient. A symmetric (Hermitian) input (cholesky, eigh)
-- gets the symmetric gradient, which is the gradient of any function of such an argument.
local function mT(x) return cj(x:transpose(-1, -2)) end
local function eye_of(n, x) return gpu.eye(n, { dtype = x.dtype, device = x.device }) end
-- (n, n) masks: 1 on and below the diagonal (lower), the diagonal halved (phi)
local function tril_mask(n, x, half_diag)
  local i = gpu.arange(n, { device = x.device }):reshape(n, 1)
  local m = i:ge(gpu.arange(n, { device = x.device })):astype(x.dtype)
  return half_diag and m - eye_of(n, x) * 0.5 or m
end
local function ix(g) return g:unsqueeze(-1):unsqueeze(-1) end          -- (...) -> (..., 1, 1)
local function rsolve(x, r) return mT(gpu.linalg.solve(r, mT(x))) end  -- x r^-T

-- record: gives results[i] (for i in 'which') a node whose backward is
-- grad(a, results, i, g, opts) -> the gradient of a
local function per_result(grad, which)
  return function(node, ...)
    local args, res = H.node_args(node), table.pack(...)
    for _, i in ipairs(which) do
      if is_array(res[i]) then
        local rule = { backward = function(g, nd) return grad(nd[1], res, i, g, nd[2]) end }
        G.set_node(res[i], op_node(rule, res[i], args[1], args[2]))
      end
    end
  end
end

-- solve(a, b): x = a^-1 b; gb = a^-H g, ga = -gb x^H (b a vector when 1-D)
R["linalg.solve"] = { uses_y = true, backward = function(g, node, x)
  local a, b = node[1], node[2]
  local gb = gpu.linalg.solve(mT(a), b.ndim == 1 and g:unsqueeze(-1) or g)
  local xm = b.ndim == 1 and x:unsqueeze(-1) or x
  local ga = tracked(a) and -gb:matmul(mT(xm)) or nil
  if b.ndim == 1 then gb = gb:squeeze(-1) end
  return ga, tracked(b) and gb or nil
end }
R["linalg.inv"] = { uses_y = true, backward = function(g, node, y)
  local yt = mT(y)
  return -yt:matmul(g):matmul(yt)
end }
R["linalg.det"] = { uses_y = true, backward = function(g, node, y)
  return ix(g * cj(y)) * mT(gpu.linalg.inv(node[1]))
end }
R["linalg.slogdet"] = { record = per_result(function(a, _, _, g) return ix(g) * mT(gpu.linalg.inv(a)) end, { 2 }) }

-- cholesky: a = L L^H; ga = L^-H Phi(L^H gL) L^-1 made Hermitian, Phi the lower triangle
-- with the diagonal halved (upper: U = L^H)
R["linalg.cholesky"] = { uses_y = true, backward = function(g, node, y)
  local upper = type(node[2]) == "table" and node[2].upper
  local l, gl = upper and mT(y) or y, upper and mT(g) or g
  local n = l.shape[l.ndim]
  local phi = mT(l):matmul(gl) * tril_mask(n, l, true)
  local ga = mT(gpu.linalg.solve(mT(l), mT(gpu.linalg.solve(mT(l), phi))))
  return (ga + mT(ga)) * 0.5
end }

-- the square and tall case (m >= n, reduced)
local function qr_square_grad(a, q, r, gq, gr)
  local n = a.shape[a.ndim]
  local M, inner = nil, nil
  if gq then local qg = mT(q):matmul(gq); M = qg - mT(qg) end
  if gr then local rg = r:matmul(mT(gr)); M = M and M + rg - mT(rg) or rg - mT(rg) end
  inner = rsolve(M * tril_mask(n, a, true), r)                 -- M's diagonal: 0 for reals
  if gr then inner = inner + gr end
  local ga = q:matmul(inner)
  if gq then ga = ga + rsolve(gq - q:matmul(mT(q):matmul(gq)), r) end
  return ga
end
-- columns i..j (1-based) of x's last axis
local function cols(x, i, j)
  return x:take(gpu.arange(j - i + 1, { dtype = "int64", device = x.device }) + i, x.ndim)
end
-- qr (TensorFlow's QrGrad). m >= n, reduced: with M = q^H gq - (q^H gq)^H + r gr^H - (r gr^H)^H,
-- ga = q (gr + Phi(M) r^-H) + (gq - q q^H gq) r^-H, Phi the lower triangle with the diagonal
-- halved (zero for reals; for complex, r's real diagonal leaves i Im(q^H gq - gr r^H) there).
-- m < n (reduced and complete are one): a = [x | y], r = [u | v]: x's gradient is the square
-- case's with gq + y gv^H and gu, y's is q gv. Mode "complete" with m > n has none (as PyTorch).
local function qr_grad(a, q, r, gq, gr)
  local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
  if q.shape[q.ndim] ~= math.min(m, n) then
    error("gpu.linalg.qr: the gradient of mode 'complete' needs m <= n (got a " .. m .. "x" .. n .. " matrix)", 0)
  end
  if m < n then
    local y, u = cols(a, m + 1, n), cols(r, 1, m)
    local gv = gr and cols(gr, m + 1, n)
    local gq2 = gv and y:matmul(mT(gv)) or nil
    if gq then gq2 = gq2 and gq2 + gq or gq end
    local gx = qr_square_grad(cols(a, 1, m), q, u, gq2, gr and cols(gr, 1, m))
    local gy = gv and q:matmul(gv) or gpu.zeros_like(cols(a, m + 1, n))
    return gpu.concat({ gx, gy }, a.ndim)
  end
  return qr_square_grad(a, q, r, gq, gr)
end
R["linalg.qr"] = {
  record = per_result(function(a, res, i, g) return qr_grad(a, res[1], res[2], i == 1 and g or nil, i == 2 and g or nil) end, { 1, 2 }),
  backward = function(g, node)           -- mode "r": r alone (one result, no record)
    local q, r = gpu.linalg.qr(node[1])
    return qr_grad(node[1], q, r, nil, g)
  end }

-- svd (PyTorch's svd_backward; distinct singular values for gu, gvh):
-- ga = u [ (skew(u^H gu) S + S skew(v^H gv)) / E + diag(gs) ] vh
--      + (I - u u^H) gu S^-1 vh + u S^-1 gv^H (I - v v^H),  E_ij = s_j^2 - s_i^2
-- and for complex u, the phase of each pair of singular vectors: + i diag(Im(u^H gu)) / S
local function svd_grad(u, s, vh, gu, gs, gvh)
  local k = s.shape[s.ndim]
  local m, n = u.shape[u.ndim - 1], vh.shape[vh.ndim]
  if (gu and u.shape[u.ndim] ~= k) or (gvh and vh.shape[vh.ndim - 1] ~= k) then
    error("gpu.linalg.svd: the gradient of u or vh needs full_matrices = false", 0)
  end
  local inner = gs and gs:unsqueeze(-1) * eye_of(k, s) or nil
  local function add(x) inner = inner and inner + x or x end
  local v = mT(vh)
  if gu or gvh then
    local s2 = s * s
    local E = s2:unsqueeze(-2) - s2:unsqueeze(-1) + eye_of(k, s)
    local off = 1 - eye_of(k, s)
    if gu then
      local x = mT(u):matmul(gu)
      add((x - mT(x)) * s:unsqueeze(-2) / E * off)
      if H.is_complex(x) then
        local im = (H.part(x, 2) * eye_of(k, s)):sum(-2) / s           -- Im(u_j^H gu_j) / s_j
        add(H.from_parts(gpu.zeros_like(im), im):unsqueeze(-1) * eye_of(k, s))
      end
    end
    if gvh then local x = mT(v):matmul(mT(gvh)); add(s:unsqueeze(-1) * (x - mT(x)) / E * off) end
  end
  local ga = u:matmul(inner):matmul(vh)
  if gu and m > k then ga = ga + ((gu - u:matmul(mT(u):matmul(gu))) / s:unsqueeze(-2)):matmul(vh) end
  if gvh and n > k then
    local gv = mT(gvh)
    ga = ga + u:matmul(mT((gv - v:matmul(mT(v):matmul(gv))) / s:unsqueeze(-2)))
  end
  return ga
end
R["linalg.svd"] = {
  record = per_result(function(_, res, i, g)
    return svd_grad(res[1], res[2], res[3], i == 1 and g or nil, i == 2 and g or nil, i == 3 and g or nil)
  end, { 1, 2, 3 }),
  backward = function(g, node)           -- compute_uv = false
    local u, s, vh = gpu.linalg.svd(node[1], { full_matrices = false })
    return svd_grad(u, s, vh, nil, g, nil)
  end }
R["linalg.svdvals"] = { backward = R["linalg.svd"].backward }

-- eigh: ga = v (diag(gw) + (v^H gv) / E) v^H made Hermitian, E_ij = w_j - w_i (distinct w)
local function eigh_grad(w, v, gw, gv)
  local n = w.shape[w.ndim]
  local inner = gw and gw:unsqueeze(-1) * eye_of(n, w) or nil
  if gv then
    local E = w:unsqueeze(-2) - w:unsqueeze(-1) + eye_of(n, w)
    local x = mT(v):matmul(gv) / E * (1 - eye_of(n, w))
    inner = inner and inner + x or x
  end
  local ga = v:matmul(inner):matmul(mT(v))
  return (ga + mT(ga)) * 0.5
end
R["linalg.eigh"] = { record = per_result(function(_, res, i, g)
  return eigh_grad(res[1], res[2], i == 1 and g or nil, i == 2 and g or nil)
end, { 1, 2 }) }
R["linalg.eigvalsh"] = { backward = function(g, node)
  local w, v = gpu.linalg.eigh(node[1], node[2])
  return eigh_grad(w, v, g, nil)
end }

-- eig (PyTorch's linalg_eig_backward; distinct eigenvalues for gv): a = v diag(w) v^-1 with
-- unit columns v_j, so ga = v^-H (diag(gw) + P / conj(E)) v^H, E_ij = w_j - w_i (1 on the
-- diagonal) and P = v^H gv - v^H v diag(Re(v^H gv)), the part of v^H gv that moves the
-- columns' directions, not their norms; a real a takes the real part (the engine's cast)
local function eig_grad(w, v, gw, gv)
  local n = w.shape[w.ndim]
  local eye = eye_of(n, H.part(w, 1))
  local inner
  if gv then
    local vh = mT(v)
    local x = vh:matmul(gv)
    x = x - vh:matmul(v * (H.part(x, 1) * eye):sum(-2):unsqueeze(-2))
    inner = x / (cj(w:unsqueeze(-2) - w:unsqueeze(-1)) + eye)
  end
  if gw then
    local d = gw:unsqueeze(-1) * eye
    inner = inner and inner + d or d
  end
  return gpu.linalg.solve(mT(v), inner:matmul(mT(v)))
end
R["linalg.eig"] = { record = per_result(function(_, res, i, g)
  return eig_grad(res[1], res[2], i == 1 and g or nil, i == 2 and g or nil)
end, { 1, 2 }) }
R["linalg.eigvals"] = { backward = function(g, node)
  local w, v = gpu.linalg.eig(node[1])
  return eig_grad(w, v, g, nil)
end }

-- lu_factor_ex (square a = P L U, PyTorch's linalg_lu_backward; the packed LU's gradient g
-- split into gL (below the diagonal) and gU (on and above it)):
-- ga = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H; the pivots have none
R["linalg.lu_factor_ex"] = { record = per_result(function(a, res, _, g)
  local lu = res[1]
  local m, n = lu.shape[lu.ndim - 1], lu.shape[lu.ndim]
  if m ~= n then error("gpu.linalg.lu_factor: the gradient needs square matrices", 0) end
  local eye = eye_of(n, lu)
  local lower = tril_mask(n, lu) - eye
  local l, u = lu * lower + eye, lu * (1 - lower)
  local phi = (mT(l):matmul(g * lower)) * lower + (g * (1 - lower)):matmul(mT(u)) * (1 - lower)
  local y = rsolve(gpu.linalg.solve(mT(l), phi), u)
  local p = no_grad(function() return (gpu.linalg.lu(a)) end)
  return p:astype(y.dtype):matmul(y)
end, { 1 }) }

-- _lu_solve (lu_solve's getrs; A = P L U packed in lu): gb = A^-H g (adjoint: A^-1 g) and
-- ga = -gb x^H (adjoint: -x gb^H), then ga taken to the packed factors through
-- dA = P (dL U + L dU): gL = tril(P^T ga U^H, -1), gU = triu(L^H P^T ga)
R["linalg._lu_solve"] = { uses_y = true, backward = function(g, node, x)
  local lu, piv, b, adjoint = node[1], node[2], node[3], node[4] == true
  local gb = gpu.linalg._lu_solve(lu, piv, g, not adjoint)
  if not tracked(lu) then return nil, nil, gb end
  local n = lu.shape[lu.ndim]
  local ga = adjoint and -x:matmul(mT(gb)) or -gb:matmul(mT(x))
  local perm = no_grad(function() return gpu.linalg._lu_perm(piv, n) end)
  local pga = gpu.take_along_axis(ga, perm:unsqueeze(-1):expand(ga.shape), -2)
  local eye = eye_of(n, lu)
  local lower = tril_mask(n, lu) - eye
  local l, u = lu * lower + eye, lu * (1 - lower)
  local glu = pga:matmul(mT(u)) * lower + mT(l):matmul(pga) * (1 - lower)
  return glu, nil, tracked(b) and gb or nil
end }

-- lstsq (full column rank, m >= n): x = (a^H a)^-1 a^H b; with z = (a^H a)^-1 gx and the
-- residual r = b - a x: ga = r z^H - a z x^H, gb = a z
R["linalg.lstsq"] = { record = per_result(function(a, res, _, g, b)
  local m, n = a.shape[1], a.shape[2]
  if m < n or res[3] < n then
    error("gpu.linalg.lstsq: the gradient needs a of full column rank with m >= n", 0)
  end
  local x = res[1]
  local vec = b.ndim == 1
  local xm, gm, bm = vec and x:unsqueeze(-1) or x, vec and g:unsqueeze(-1) or g, vec and b:unsqueeze(-1) or b
  local z = gpu.linalg.solve(mT(a):matmul(a), gm)
  local r = bm - a:matmul(xm)
  local gb = a:matmul(z)
  return r:matmul(mT(z)) - gb:matmul(mT(xm)), vec and gb:squeeze(-1) or gb
end, { 1 }) }

-- ---- fused kernels ---------------------------------------------------------------------------------------------

-- fused.linear(x (..., in), w (out, in) [, b (out)]) = x w^T + b
R["fused.linear"] = { backward = function(g, node)
  local x, w, b = node[1], node[2], node[3]
  local gx, gw, gb
  local g2 = g.ndim == 2 and g or g:reshape(-1, g.shape[g.ndim])
  if tracked(x) then gx = g:matmul(w) end
  if tracked(w) then
    local x2 = x.ndim == 2 and x or x:reshape(-1, x.shape[x.ndim])
    gw = g2:transpose():matmul(x2)
  end
  if b ~= nil and tracked(b) then gb = g2:sum(1) end
  return gx, gw, gb
end }

-- fused.cross_entropy(z (N, C), labels (N) | target (N, C) [, opts]) -> loss (N), probs
-- (N, C): d loss_i / d z = probs_i - t_i. The fused backward when grad is off; with
-- create_graph the same formula in array ops, so it is differentiable again.
-- fused.lstm(xp, w_hh, h0, c0 [, {reverse}]) -> hc (L, N, 2, H), gates (node.extra): one
-- layer's time loop (nn.LSTM); backward through time in one C op (first order only)
R["fused.lstm"] = { saves = { 2, 3, 4, 5 }, uses_y = true, backward = function(g, node, y)
  local w, h0, c0, o = node[2], node[3], node[4], node[5]
  if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
  return gpu.fused.lstm_backward(g, node.extra[1], y, w, h0, c0, o)
end }
-- fused.gru(xp, w_hh, b_hh | nil, h0 [, {reverse}]) -> hs (L, N, H), gates (node.extra) and
-- fused.rnn(xp, w_hh, h0 [, {reverse, nonlinearity}]) -> hs: nn.GRU's and nn.RNN's loops, the
-- same way (first order only)
R["fused.gru"] = { saves = { 2, 4, 5 }, uses_y = true, backward = function(g, node, y)
  local w, b, h0, o = node[2], node[3], node[4], node[5]
  if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
  local dxp, dw, db, dh0 = gpu.fused.gru_backward(g, node.extra[1], y, w, h0, o)
  return dxp, dw, b ~= nil and db or nil, dh0
end }
-- dnn.lstm(x, w_ih, w_hh, b, h0, c0 [, {reverse}]) -> y (L + 1, N, H) (the steps' h, then the
-- last c), ws (node.extra) and dnn.gru(x, w_ih, w_hh, b, h0 [, opts]) -> y (L, N, H), ws: a
-- layer and direction through the device's library (oneDNN on the cpu), first order only
R["dnn.lstm"] = { uses_y = true, backward = function(g, node, y)
  if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
  return gpu.dnn.lstm_backward(g, y, node.extra[1], node[1], node[2], node[3], node[4], node[5], node[6], node[7])
end }
R["dnn.gru"] = { uses_y = true, backward = function(g, node, y)
  if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
  return gpu.dnn.gru_backward(g, y, node.extra[1], node[1], node[2], node[3], node[4], node[5], node[6])
end }
R["fused.rnn"] = { saves = { 2, 3, 4 }, uses_y = true, backward = function(g, node, y)
  local w, h0, o = node[2], node[3], node[4]
  if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
  return gpu.fused.rnn_backward(g, y, w, h0, o)
end }

R["fused.cross_entropy"] = { saves = { 2 }, backward = function(g, node)
  local z, lt, o = node[1], node[2], node[3]
  local eps = o and o.label_smoothing or 0
  local labels = lt.dtype:match("int") ~= nil
  if not G.grad_enabled() then
    local p = node.extra[1]
    local gz = gpu.fused.cross_entropy_backward(p, lt, g, { label_smoothing = eps, scale = 1 })
    local gt = (not labels and tracked(lt)) and (-(z - z:logsumexp(2, { keepdims = true })) * g:reshape(-1, 1)) or nil
    return gz, gt
  end
  local C = z.shape[2]
  local lse = z:logsumexp(2, { keepdims = true })
  local p = (z - lse):exp()
  local t
  if labels then
    t = lt:reshape(-1, 1):eq(gpu.arange(1, C + 1, { device = z.device })):astype(z.dtype)
    if eps > 0 then t = t * (1 - eps) + eps / C end
  else
    t = lt
  end
  local gg = g:reshape(-1, 1)
  return (p - t) * gg, (not labels) and (-(z - lse) * gg) or nil
end }

-- fused.layer_norm(x (..., D), w (D) | nil, b (D) | nil [, {eps}]) -> y, mean, rstd: the
-- fused backward (from the saved mean and rstd) when grad is off; with create_graph the
-- same formulas in array ops, the statistics recomputed from x so they differentiate too.
R["fused.layer_norm"] = { saves = { 1, 2 }, backward = function(g, node)
  local x, w, b, o = node[1], node[2], node[3], node[4]
  w, b = is_array(w) and w or nil, is_array(b) and b or nil
  if not G.grad_enabled() then
    local gx, gw, gb = gpu.fused.layer_norm_backward(g, x, node.extra[1], node.extra[2], w)
    return gx, w and gw or nil, b and gb or nil
  end
  local eps = type(o) == "table" and o.eps or 1e-5
  local D = x.shape[x.ndim]
  local keep = { keepdims = true }
  local xc = x - x:mean(-1, keep)
  local rstd = ((xc * xc):mean(-1, keep) + eps):rsqrt()
  local xh = xc * rstd
  local gh = w and g * w or g
  local gx = (gh - gh:mean(-1, keep) - xh * (gh * xh):mean(-1, keep)) * rstd
  return gx, w and (g * xh):reshape(-1, D):sum(1) or nil, b and g:reshape(-1, D):sum(1) or nil
end }

-- dnn.layer_norm: the same results and saved statistics as fused.layer_norm (oneDNN on the
-- cpu): gpu.dnn.layer_norm_backward (oneDNN's, about 2x the own kernel at 2 threads; on one
-- thread it runs the own kernel), or the fused rule's array-op formulas
-- under create_graph
R["dnn.layer_norm"] = { saves = { 1, 2 }, backward = function(g, node)
  if G.grad_enabled() then return R["fused.layer_norm"].backward(g, node) end
  local x, w, b, o = node[1], node[2], node[3], node[4]
  w, b = is_array(w) and w or nil, is_array(b) and b or nil
  local eps = type(o) == "table" and o.eps or 1e-5
  if g.dtype ~= x.dtype then g = g:astype(x.dtype) end
  local gx, gw, gb = gpu.dnn.layer_norm_backward(x, g, w, node.extra[1], node.extra[2], { eps = eps })
  return gx, w and gw or nil, b and gb or nil
end }

-- dnn.rnn(x, w, h0, c0 | nil [, opts]) -> out (flat: y, h_n [, c_n]), reserve (node.extra):
-- cuDNN's backward (data, then weights) from the forward's out and reserve; first order only
R["dnn.rnn"] = { saves = { 1, 2, 3, 4 }, uses_y = true, backward = function(g, node, y)
  local x, w, h0, c0, o = node[1], node[2], node[3], node[4], node[5]
  if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
  return gpu.dnn.rnn_backward(g, y, node.extra[1], x, w, h0, c0, o)
end }

-- fused.attention(q (..., L, E), k (..., S, E), v (..., S, Ev) [, {scale, is_causal}]) ->
-- out, lse. First order (grad off during the backward): gpu.fused.attention_backward,
-- FlashAttention-2's tiled backward from the saved out and logsumexp (no (L, S) matrix; the
-- same options table, so the same scale and mask). Under create_graph the same formulas in
-- array ops, the probabilities recomputed from a logsumexp in array ops so that they
-- differentiate again: gv = p^T g, gs = p (g v^T - rowsum(p g v^T)), gq = gs k scale,
-- gk = gs^T q scale.
R["fused.attention"] = { uses_y = true, backward = function(g, node, y)
  local q, k, v, o = node[1], node[2], node[3], node[4]
  if not G.grad_enabled() then
    if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
    return gpu.fused.attention_backward(g, q, k, v, y, node.extra[1], o)
  end
  local E = q.shape[q.ndim]
  local scale = type(o) == "table" and o.scale or 1 / math.sqrt(E)
  local s = q:matmul(k:swapaxes(-1, -2)) * scale
  if type(o) == "table" and o.is_causal then
    local L, S = q.shape[q.ndim - 1], k.shape[k.ndim - 1]
    local i64 = { dtype = "int64", device = q.device }
    local keep = gpu.arange(0, S, i64):reshape(1, S):le(gpu.arange(0, L, i64):reshape(L, 1))
    s = gpu.where(keep, s, -math.huge)
  end
  local lse = s:logsumexp(-1, { keepdims = true })
  local p = (s - lse):exp()
  local gp = g:matmul(v:swapaxes(-1, -2))
  local gs = p * (gp - (gp * p):sum(-1, { keepdims = true }))
  return gs:matmul(k) * scale, gs:swapaxes(-1, -2):matmul(q) * scale, p:swapaxes(-1, -2):matmul(g)
end }

-- ---- convolution, pooling, batch norm, softmax -----------------------------------------------------------------

local function window_opts(o)
  local w = {}
  for _, k in ipairs { "kernel", "stride", "padding", "dilation" } do w[k] = o and o[k] end
  return w
end
R.im2col = { saves = {}, backward = function(g, node)
  local x = node[1]
  return gpu.col2im(g, x.shape, window_opts(node[2]))
end }
R.col2im = { saves = {}, backward = function(g, node)
  return gpu.im2col(g, window_opts(node[3]))
end }
R["dnn.conv2d"] = { backward = function(g, node)
  local x, w, o = node[1], node[2], node[3]
  local gx = tracked(x) and gpu.dnn.conv2d_backward_data(g, w, x.shape, o) or nil
  local gw = tracked(w) and gpu.dnn.conv2d_backward_filter(x, g, w.shape, o) or nil
  return gx, gw
end }
local function pool(name)
  return { uses_y = true, backward = function(g, node, y)
    return gpu.dnn[name .. "_backward"](node[1], y, g, node[2])
  end }
end
R["dnn.max_pool2d"] = pool("max_pool2d")
R["dnn.avg_pool2d"] = pool("avg_pool2d")
R["dnn.softmax"] = { saves = {}, uses_y = true, backward = function(g, node, y)
  if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
  return gpu.dnn.softmax_backward(y, g, node[2])
end }
-- batch_norm(x, w, b, running_mean, running_var [, {training, momentum, eps}]): training
-- returns y, save_mean, save_invstd (node.extra); eval uses the running statistics
R["dnn.batch_norm"] = { saves = { 1, 2, 4, 5 }, backward = function(g, node)
  local x, w, b, rm, rv, o = node[1], node[2], node[3], node[4], node[5], node[6]
  local eps = o and o.eps or 1e-5
  if o == nil or o.training ~= false then
    local sm, si = node.extra[1], node.extra[2]
    local dx, dw, db = gpu.dnn.batch_norm_backward(x, g, w, sm, si, { eps = eps })
    return dx, dw, db
  end
  local shape = { 1, x.shape[2] }
  for _ = 3, x.ndim do shape[#shape + 1] = 1 end
  local axes = { 1 }
  for d = 3, x.ndim do axes[#axes + 1] = d end
  local invstd = (rv + eps):rsqrt()
  local xhat = (x - rm:reshape(shape)) * invstd:reshape(shape)
  return g * (invstd * w):reshape(shape), (g * xhat):sum(axes), g:sum(axes)
end }


return R
