-- gpu.linalg: numpy.linalg. The factorizations are C ops over LAPACK (src/lua/llinalg.c,
-- registered in gpu._linalg under the rules names "linalg.<f>": solve inv det slogdet
-- cholesky qr svd svdvals eigh eigvalsh eig eigvals lstsq); this file gathers them and adds
-- the functions NumPy builds from them (pinv, matrix_rank, matrix_power, norm, cond, cross,
-- multi_dot), written in array ops, so they are differentiable through those ops' rules.
-- Complex arrays go through the same code: where NumPy transposes a factor it takes the
-- conjugate transpose (mH). Axes are 1-based, negatives from the end.
local gpu = require "gpu"
local options = require "gpu.options"
local is_array = options.is_array

local M = {}
for k, f in pairs(gpu._linalg) do M[k] = f end

local function fail(fname, fmt, ...) error(("gpu.linalg.%s: " .. fmt):format(fname, ...), 3) end
local function check_array(fname, x, argn)
  if not is_array(x) then
    error(("bad argument #%d to 'gpu.linalg.%s' (gpu.array expected, got %s)"):format(argn, fname, type(x)), 3)
  end
end
local function check_matrix(fname, x)
  check_array(fname, x, 1)
  if x.ndim < 2 then fail(fname, "%d-dimensional array given; the array must be at least two-dimensional", x.ndim) end
end
local function mT(x) return x:transpose(-1, -2) end
local function is_complex(x) return x.dtype:match("^complex") ~= nil end
-- the conjugate transpose (a real x's transpose)
local function mH(x) return is_complex(x) and mT(x):conj() or mT(x) end
-- float64 for integers and bool (NumPy's promotion), floats and complex as they are
local function floated(x) return (x.dtype:match("float") or is_complex(x)) and x or x:astype("float64") end
-- the part dtype of a complex dtype (a real one as it is)
local function real_dtype(dt) return dt == "complex64" and "float32" or dt == "complex128" and "float64" or dt end
local EPS = { float64 = 2.220446049250313e-16, float32 = 1.1920929e-07, float16 = 1.1920929e-07, bfloat16 = 1.1920929e-07 }

-- NumPy's svd(a, hermitian = true): from eigh, the singular values |w| in descending order
-- (NumPy's argsort reversed), u the eigenvectors in that order, vh = (u * sign(w))^H;
-- values only: |eigvalsh| sorted descending
local function svd_hermitian(a, uv)
  if not uv then return M.eigvalsh(a):abs():sort({ descending = true }) end
  local w, u = M.eigh(a)
  local s = w:abs()
  local sidx = s:argsort(-1):flip(-1)
  local sgn = gpu.take_along_axis(gpu.sign(w), sidx, -1)
  s = gpu.take_along_axis(s, sidx, -1)
  u = gpu.take_along_axis(u, sidx:unsqueeze(-2), -1)
  return u, s, mH(u * sgn:unsqueeze(-2))
end

local svd_c = M.svd
-- the C op's results, its errors raised at the caller's line under the public name
local function call_svd(...)
  local r = table.pack(pcall(svd_c, ...))
  if r[1] then return table.unpack(r, 2, r.n) end
  local msg = tostring(r[2]):gsub("^[^\n]-linalg%.lua:%d+: ", ""):gsub("^(bad argument #%d+ to )'[^']*'", "%1'gpu.linalg.svd'")
  error(msg, 3)
end
-- svd(a [, {full_matrices, compute_uv, hermitian}]): the C op, or through eigh when
-- hermitian (a square symmetric matrix; full_matrices then changes nothing, as NumPy)
function M.svd(a, opts)
  if type(opts) == "table" and opts.hermitian == true then
    check_matrix("svd", a)
    local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
    if m ~= n then fail("svd", "the last 2 dimensions of the array must be square, got (%s)", table.concat(a.shape, ",")) end
    call_svd(gpu.zeros(0, 0, { dtype = "float64" }), opts)      -- the other options' own checks
    return svd_hermitian(floated(a), opts.compute_uv ~= false)
  end
  return call_svd(a, opts)
end

local PINV = options.declare("linalg.pinv", {
  rcond = { type = "number", min = 0 }, rtol = { type = "number", min = 0 },
  hermitian = { type = "boolean", default = false } },
  { example = "gpu.linalg.pinv(gpu.eye(2), %s)" })
-- pinv(a [, {rcond = 1e-15, rtol, hermitian = false}]): the pseudo-inverse from the SVD,
-- singular values at most rcond times the largest counting as zero; rtol is NumPy 2's
-- name for rcond (only one of them); hermitian: the SVD through eigh
function M.pinv(a, opts)
  check_matrix("pinv", a)
  local o = PINV:check(opts, 2, "gpu.linalg.pinv")
  if o.rcond ~= nil and o.rtol ~= nil then fail("pinv", "rtol and rcond can't be both set") end
  local rcond = o.rcond or o.rtol or 1e-15
  local u, s, vh = M.svd(a, { full_matrices = false, hermitian = o.hermitian })
  if s.size == 0 then return gpu.zeros(mT(a).shape, { dtype = u.dtype, device = a.device }) end
  local keep = s:gt(s:max({ -1 }, { keepdims = true }) * rcond)
  local sinv = gpu.where(keep, 1 / gpu.where(keep, s, 1), 0)
  return (mH(vh) * sinv:unsqueeze(-2)):matmul(mH(u))
end

local RANK = options.declare("linalg.matrix_rank", {
  tol = { type = "number", min = 0 }, rtol = { type = "number", min = 0 },
  hermitian = { type = "boolean", default = false } },
  { example = "gpu.linalg.matrix_rank(gpu.eye(2), %s)" })
-- matrix_rank(a [, {tol, rtol, hermitian = false}]): how many singular values exceed tol
-- (absolute), else rtol times the largest (NumPy 2; default max(m, n) times the dtype's
-- epsilon); tol wins when both are given, as NumPy. An int64 array of the batch's shape
-- (0-d for one matrix); a vector's rank is 1 unless it is all zeros. hermitian: the
-- singular values from eigvalsh
function M.matrix_rank(a, opts)
  check_array("matrix_rank", a, 1)
  local o = RANK:check(opts, 2, "gpu.linalg.matrix_rank")
  if a.ndim < 2 then return a:ne(0):any():astype("int64") end
  local s = o.hermitian and M.svd(a, { hermitian = true, compute_uv = false }) or M.svdvals(a)
  local tol = o.tol
  if tol == nil then
    local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
    local rtol = o.rtol or math.max(m, n) * EPS[s.dtype]
    tol = s.size == 0 and 0 or s:max({ -1 }, { keepdims = true }) * rtol
  end
  return s:gt(tol):astype("int64"):sum(-1)
end

-- matrix_power(a, n): a^n by repeated squaring (n an integer; 0: the identity, negative:
-- the inverse's power). The exponent's bits are read as unsigned, so |math.mininteger|
-- (2^63, which -n cannot hold) is squared up to like any other.
function M.matrix_power(a, n)
  check_matrix("matrix_power", a)
  if math.type(n) ~= "integer" then
    if type(n) == "number" and n == math.floor(n) and math.abs(n) < 2^53 then n = math.tointeger(n)
    else error(("bad argument #2 to 'gpu.linalg.matrix_power' (an integer exponent expected, got %s)"):format(tostring(n)), 2) end
  end
  local sq = a.shape[a.ndim]
  if a.shape[a.ndim - 1] ~= sq then
    fail("matrix_power", "the last 2 dimensions of the array must be square, got (%s)", table.concat(a.shape, ","))
  end
  if n == 0 then return gpu.eye(sq, { dtype = a.dtype, device = a.device }):expand(a.shape):contiguous() end
  local base = n < 0 and M.inv(a) or a
  local e = n < 0 and -n or n
  local result
  while e ~= 0 do
    if e & 1 == 1 then result = result and result:matmul(base) or base end
    e = e >> 1
    if e ~= 0 then base = base:matmul(base) end
  end
  return result == a and a:copy() or result
end

-- norm(x [, ord [, axis [, {keepdims = false}]]]): numpy.linalg.norm, i.e. gpu.norm(x,
-- axis, {ord =, keepdims =}): vector orders over one axis (2, 1, math.huge, -math.huge, 0,
-- any p), matrix orders over two (1, -1, 2, -2, math.huge, -math.huge, "fro", "nuc"); with
-- ord and no axis, x must be 1-D or 2-D (NumPy's rule)
local NORM = options.declare("linalg.norm", { keepdims = { type = "boolean", default = false } },
  { example = "gpu.linalg.norm(gpu.eye(2), nil, nil, %s)" })
function M.norm(x, ord, axis, opts)
  check_array("norm", x, 1)
  local o = NORM:check(opts, 4, "gpu.linalg.norm")
  if ord ~= nil and axis == nil and x.ndim > 2 then
    fail("norm", "improper number of dimensions to norm: an order needs a 1-D or 2-D array, or an axis")
  end
  if ord ~= nil and type(ord) ~= "number" and ord ~= "fro" and ord ~= "nuc" then
    error(("bad argument #2 to 'gpu.linalg.norm' (a number, 'fro' or 'nuc' expected, got %s)"):format(tostring(ord)), 2)
  end
  return gpu.norm(x, axis, { ord = ord, keepdims = o.keepdims })
end

-- cond(x [, p]): the condition number, from the singular values for p nil/2/-2, else
-- norm(x, p) * norm(inv(x), p) (p in 1, -1, math.huge, -math.huge, "fro", "nuc"). As
-- NumPy, a singular matrix gives inf, not an error (a NaN result becomes inf unless x
-- holds a NaN)
function M.cond(x, p)
  check_matrix("cond", x)
  local r
  if p == nil or p == 2 or p == -2 then
    local s = M.svdvals(x)
    if p == -2 then r = s:min({ -1 }) / s:max({ -1 }) else r = s:max({ -1 }) / s:min({ -1 }) end
  else
    local ok, inv = pcall(M.inv, x)
    if not ok then
      if not tostring(inv):find("matrix is singular", 1, true) then error(inv, 0) end
      -- as NumPy's inv with errors ignored: NaN where a matrix is singular. slogdet's
      -- sign is 0 exactly where inv's factorization finds a zero pivot; those matrices
      -- are inverted as the identity and their inverse replaced by NaN
      local bad = M.slogdet(x):eq(0):unsqueeze(-1):unsqueeze(-1)
      local xf = floated(x)
      local I = gpu.eye(x.shape[x.ndim], { dtype = xf.dtype, device = x.device })
      inv = gpu.where(bad, 0 / 0, M.inv(gpu.where(bad, I, xf)))
    end
    local ok, nx = pcall(M.norm, x, p, { -2, -1 })
    local ok2, ni = pcall(M.norm, inv, p, { -2, -1 })
    if not (ok and ok2) then
      local e = ok and ni or nx
      if tostring(e):find("did not converge", 1, true) then fail("cond", "SVD did not converge") end
      error(e, 0)
    end
    r = nx * ni
  end
  local xnan = floated(x):isnan():any(-1):any(-1)
  return gpu.where(r:isnan():logical_and(xnan:logical_not()), math.huge, r)
end

-- cross(a, b [, axis = -1]): the cross product of 3-vectors along axis (a and b
-- broadcast); a 2-vector is one with a zero third component, and two 2-vectors give the
-- z component alone, the axis removed (NumPy's result, deprecated in NumPy 2)
function M.cross(a, b, axis)
  check_array("cross", a, 1)
  check_array("cross", b, 2)
  axis = axis or -1
  local function dim(x)
    local ax = axis < 0 and x.ndim + axis + 1 or axis
    if ax < 1 or ax > x.ndim then fail("cross", "axis %d is out of range for a %d-dimensional array", axis, x.ndim) end
    if x.shape[ax] ~= 3 and x.shape[ax] ~= 2 then
      fail("cross", "incompatible dimensions for cross product (dimension must be 2 or 3, got %d)", x.shape[ax])
    end
    return ax, x.shape[ax]
  end
  local axa, da = dim(a)
  local axb, db = dim(b)
  local function comp(x, ax, d, i)
    if i > d then return gpu.zeros_like(comp(x, ax, d, 1)) end
    return x:take(gpu.array({ i }, { dtype = "int64", device = x.device }), ax)
  end
  local a1, a2, a3 = comp(a, axa, da, 1), comp(a, axa, da, 2), comp(a, axa, da, 3)
  local b1, b2, b3 = comp(b, axb, db, 1), comp(b, axb, db, 2), comp(b, axb, db, 3)
  if da == 2 and db == 2 then
    local z = a1 * b2 - a2 * b1
    return z:squeeze(axis < 0 and z.ndim + axis + 1 or axis)
  end
  return gpu.concat({ a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1 }, axis)
end

-- multi_dot(list): the product of 2-D arrays (the first may be 1-D: a row; the last 1-D:
-- a column) in the cheapest order (the classic matrix-chain dynamic programme)
function M.multi_dot(list)
  if type(list) ~= "table" or is_array(list) then
    error("bad argument #1 to 'gpu.linalg.multi_dot' (a table of arrays expected)", 2)
  end
  local n = #list
  if n < 2 then fail("multi_dot", "expecting at least two arrays, got %d", n) end
  local xs = {}
  for i = 1, n do
    check_array("multi_dot", list[i], 1)
    local x = list[i]
    if i == 1 and x.ndim == 1 then x = x:reshape(1, x.shape[1])
    elseif i == n and x.ndim == 1 then x = x:reshape(x.shape[1], 1) end
    if x.ndim ~= 2 then fail("multi_dot", "array %d is %d-dimensional, 2 expected", i, list[i].ndim) end
    xs[i] = x
  end
  local d = { xs[1].shape[1] }
  for i = 1, n do
    if xs[i].shape[1] ~= d[i] then
      fail("multi_dot", "shapes of arrays %d and %d do not align (%d vs %d)", i - 1, i, d[i], xs[i].shape[1])
    end
    d[i + 1] = xs[i].shape[2]
  end
  -- cost[i][j]: cheapest product of xs[i..j]; split[i][j]: where it splits
  local cost, split = {}, {}
  for i = 1, n do cost[i] = { [i] = 0 }; split[i] = {} end
  for len = 2, n do
    for i = 1, n - len + 1 do
      local j = i + len - 1
      cost[i][j] = math.huge
      for k = i, j - 1 do
        local c = cost[i][k] + cost[k + 1][j] + d[i] * d[k + 1] * d[j + 1]
        if c < cost[i][j] then cost[i][j], split[i][j] = c, k end
      end
    end
  end
  local function product(i, j)
    if i == j then return xs[i] end
    local k = split[i][j]
    return product(i, k):matmul(product(k + 1, j))
  end
  local r = product(1, n)
  local first, last = list[1].ndim == 1, list[n].ndim == 1
  if first and last then return r:reshape({}) end
  if first then return r:reshape(r.shape[2]) end
  if last then return r:reshape(r.shape[1]) end
  return r
end

-- ---- PyTorch's torch.linalg additions -------------------------------------------------------

local function is_float_or_complex(x) return x.dtype:match("float") ~= nil or is_complex(x) end
local function check_floating(fname, x, argn, what)
  check_array(fname, x, argn)
  if not is_float_or_complex(x) then
    error(("bad argument #%d to 'gpu.linalg.%s' (%s must be a float or complex array, got %s)"):format(
      argn, fname, what, x.dtype), 3)
  end
end
local function check_square(fname, x, what)
  if x.ndim < 2 then fail(fname, "%s must be at least two-dimensional, got %d dimensions", what, x.ndim) end
  if x.shape[x.ndim - 1] ~= x.shape[x.ndim] then
    fail(fname, "%s must be batches of square matrices, got (%s)", what, table.concat(x.shape, ","))
  end
end

-- matrix_exp(A (..., n, n)): e^A by scaling and squaring with a Pade approximant (Higham
-- 2005): the degree chosen from the largest 1-norm in the batch, the number of squarings
-- from each matrix's own (the norms read on the host), against the thresholds of the
-- dtype's precision; the approximant r = (V - U)^-1 (V + U) through solve. Written in
-- array ops: differentiable.
local PADE = {
  [3] = { 120, 60, 12, 1 },
  [5] = { 30240, 15120, 3360, 420, 30, 1 },
  [7] = { 17297280, 8648640, 1995840, 277200, 25200, 1512, 56, 1 },
  [9] = { 17643225600, 8821612800, 2075673600, 302702400, 30270240, 2162160, 110880, 3960, 90, 1 },
  [13] = { 64764752532480000, 32382376266240000, 7771770303897600, 1187353796428800, 129060195264000,
           10559470521600, 670442572800, 33522128640, 1323241920, 40840800, 960960, 16380, 182, 1 },
}
-- (degree, largest 1-norm it takes) in increasing degree: Higham's table for double, and
-- for single precision (float32, the halves, complex64)
local THETA = {
  double = { { 3, 1.495585217958292e-2 }, { 5, 2.539398330063230e-1 }, { 7, 9.504178996162932e-1 },
             { 9, 2.097847961257068 }, { 13, 5.371920351148152 } },
  single = { { 3, 4.258730016922831e-1 }, { 5, 1.880152677804762 }, { 7, 3.925724783138660 } },
}
function M.matrix_exp(a)
  check_floating("matrix_exp", a, 1, "A")
  check_square("matrix_exp", a, "A")
  local n = a.shape[a.ndim]
  if a.size == 0 then return a:copy() end
  local half = a.dtype == "float16" or a.dtype == "bfloat16"
  local x = half and a:astype("float32") or a
  local theta = (x.dtype == "float64" or x.dtype == "complex128") and THETA.double or THETA.single
  -- each matrix's 1-norm, read on the host (a matrix holding NaN or inf is computed as
  -- zeros and given NaN at the end, as torch)
  local bshape = {}
  for i = 1, x.ndim - 2 do bshape[i] = x.shape[i] end
  local norms = gpu.no_grad(function()
    return x:abs():sum(-2):max({ -1 }):reshape(-1):astype("float64"):cpu():totable()
  end)
  local bad, anybad, norm1 = {}, false, 0
  for i, v in ipairs(norms) do
    bad[i] = not (v == v and v < math.huge)
    anybad = anybad or bad[i]
    if bad[i] then norms[i] = 0 end
    if norms[i] > norm1 then norm1 = norms[i] end
  end
  local badmask
  if anybad then
    badmask = gpu.array(bad, { device = x.device }):reshape(bshape):unsqueeze(-1):unsqueeze(-1)
    x = gpu.where(badmask, 0, x)
  end
  -- the degree from the largest norm; past the table's last, the squarings per matrix
  -- (2^-s exact, so the scaling adds no rounding)
  local m
  for _, row in ipairs(theta) do
    if norm1 <= row[2] then m = row[1]; break end
  end
  local squarings, smax = nil, 0
  if m == nil then
    local top = theta[#theta]
    m = top[1]
    local sc, ss = {}, {}
    for i, v in ipairs(norms) do
      ss[i] = v > top[2] and math.max(0, math.ceil(math.log(v / top[2], 2))) or 0
      sc[i] = 2.0 ^ -ss[i]
      if ss[i] > smax then smax = ss[i] end
    end
    local rdt = real_dtype(x.dtype)
    x = x * gpu.array(sc, { dtype = rdt, device = x.device }):reshape(bshape):unsqueeze(-1):unsqueeze(-1)
    squarings = gpu.array(ss, { dtype = "int64", device = x.device }):reshape(bshape):unsqueeze(-1):unsqueeze(-1)
  end
  local I = gpu.eye(n, { dtype = x.dtype, device = x.device })
  local b = PADE[m]
  local x2 = x:matmul(x)
  local u, v
  if m == 13 then
    local x4 = x2:matmul(x2)
    local x6 = x4:matmul(x2)
    u = x:matmul(x6:matmul(x6 * b[14] + x4 * b[12] + x2 * b[10]) + x6 * b[8] + x4 * b[6] + x2 * b[4] + I * b[2])
    v = x6:matmul(x6 * b[13] + x4 * b[11] + x2 * b[9]) + x6 * b[7] + x4 * b[5] + x2 * b[3] + I * b[1]
  else
    -- powers x^0, x^2, x^4 ... up to x^(m-1); u = x sum b[2k+2] x^2k, v = sum b[2k+1] x^2k
    local pw = { I, x2 }
    for k = 3, (m - 1) // 2 + 1 do pw[k] = pw[k - 1]:matmul(x2) end
    local su, sv = I * b[2], I * b[1]
    for k = 2, (m - 1) // 2 + 1 do
      su = su + pw[k] * b[2 * k]
      sv = sv + pw[k] * b[2 * k - 1]
    end
    u, v = x:matmul(su), sv
  end
  local r = M.solve(v - u, v + u)
  for i = 1, smax do r = gpu.where(squarings:ge(i), r:matmul(r), r) end
  if anybad then r = gpu.where(badmask, 0 / 0, r) end
  return half and r:astype(a.dtype) or r
end

local SOLVE_TRI = options.declare("linalg.solve_triangular", {
  upper = { type = "boolean" }, left = { type = "boolean", default = true },
  unitriangular = { type = "boolean", default = false } },
  { example = "(function(o) o.upper = true; return gpu.linalg.solve_triangular(gpu.eye(2), gpu.eye(2), o) end)(%s)" })

-- The triangle of a that a triangular solve reads (upper or lower), its diagonal taken as
-- ones when unit.
local function triangle(a, upper, unit)
  local n = a.shape[a.ndim]
  if unit then
    local I = gpu.eye(n, { dtype = a.dtype, device = a.device })
    return (upper and gpu.triu(a, 1) or gpu.tril(a, -1)) + I
  end
  return upper and gpu.triu(a) or gpu.tril(a)
end

-- The solution X of T X = B (left) or X T = B, T the triangle of a (both at least 2-D,
-- their batch axes broadcast): getrs (the op under lu_solve) with the identity for pivots
-- and an upper triangle for U (L the identity): T itself when upper, else T^H solved with
-- the adjoint. O(n^2 k), and a zero on the diagonal gives inf/NaN, as PyTorch's trsm.
-- X T = B is T^H X^H = B^H.
local function tri_solve(fname, a, b, upper, left, unit)
  if not left then return mH(tri_solve(fname, mH(a), mH(b), not upper, true, unit)) end
  local t = triangle(a, upper, unit)
  local n = t.shape[t.ndim]
  local pshape = {}
  for i = 1, t.ndim - 1 do pshape[i] = t.shape[i] end
  local piv = gpu.arange(1, n + 1, { dtype = "int32", device = t.device }):expand(pshape)
  local ok, x = pcall(gpu._linalg._lu_solve, upper and t or mH(t), piv, b, not upper)
  if not ok then
    error((tostring(x):gsub("^[^\n]-linalg%.lua:%d+: ", ""):gsub("gpu%.linalg%.lu_solve", "gpu.linalg." .. fname)), 0)
  end
  return x
end

-- solve_triangular(A (..., n, n), B (..., n, k) [or (..., k, n) with left = false],
-- {upper = required, left = true, unitriangular = false}): torch.linalg.solve_triangular;
-- only A's upper (or lower) triangle is read (unitriangular: its diagonal taken as ones).
function M.solve_triangular(a, b, opts)
  local fname = "solve_triangular"
  check_floating(fname, a, 1, "A")
  check_floating(fname, b, 2, "B")
  local o = SOLVE_TRI:check(opts, 3, "gpu.linalg.solve_triangular")
  if o.upper == nil then
    error("bad argument #3 to 'gpu.linalg.solve_triangular' (option 'upper' is required: true or false)", 2)
  end
  check_square(fname, a, "A")
  if b.ndim < 2 then fail(fname, "B must be at least two-dimensional, got %d dimensions", b.ndim) end
  local n = a.shape[a.ndim]
  local nb = o.left and b.shape[b.ndim - 1] or b.shape[b.ndim]
  if nb ~= n then
    fail(fname, "incompatible shapes of A (%s) and B (%s) for the system %s", table.concat(a.shape, ","),
      table.concat(b.shape, ","), o.left and "A X = B" or "X A = B")
  end
  return tri_solve(fname, a, b, o.upper, o.left, o.unitriangular)
end

-- cholesky_solve(B (..., n, k), L (..., n, n) [, upper = false]): torch.cholesky_solve:
-- X with A X = B where A = L L^H (upper: A = U^H U), by two triangular solves
function M.cholesky_solve(b, l, upper)
  local fname = "cholesky_solve"
  check_floating(fname, b, 1, "B")
  check_floating(fname, l, 2, "L")
  if upper ~= nil and type(upper) ~= "boolean" then
    error(("bad argument #3 to 'gpu.linalg.cholesky_solve' (upper must be a boolean, got %s)"):format(type(upper)), 2)
  end
  check_square(fname, l, "L")
  if b.ndim < 2 then fail(fname, "B must be at least two-dimensional, got %d dimensions", b.ndim) end
  if b.shape[b.ndim - 1] ~= l.shape[l.ndim] then
    fail(fname, "incompatible shapes of B (%s) and L (%s): B needs %d rows", table.concat(b.shape, ","),
      table.concat(l.shape, ","), l.shape[l.ndim])
  end
  upper = upper == true
  -- lower: L y = b, L^H x = y; upper: U^H y = b, U x = y
  local y = tri_solve(fname, upper and mH(l) or l, b, false, true, false)
  return tri_solve(fname, upper and l or mH(l), y, true, true, false)
end

local lu_c, lu_solve_c = gpu._linalg.lu_factor_ex, gpu._linalg._lu_solve
local LU_DECL = options.declare("linalg.lu_factor", { pivot = { type = "boolean", default = true } },
  { example = "gpu.linalg.lu_factor(gpu.eye(2), %s)" })
local LU_EX_DECL = options.declare("linalg.lu_factor_ex", { pivot = { type = "boolean", default = true },
  check_errors = { type = "boolean", default = false } },
  { example = "gpu.linalg.lu_factor_ex(gpu.eye(2), %s)" })
local LU_FULL_DECL = options.declare("linalg.lu", { pivot = { type = "boolean", default = true } },
  { example = "gpu.linalg.lu(gpu.eye(2), %s)" })

-- the C op's factors, its errors raised under the public name; pivot = false is refused
-- (PyTorch computes it only on CUDA)
local function lu_factors(fname, a, pivot)
  check_floating(fname, a, 1, "A")
  if a.ndim < 2 then fail(fname, "A must be at least two-dimensional, got %d dimensions", a.ndim) end
  if not pivot then fail(fname, "LU without pivoting is not implemented (pivot = false)") end
  local ok, lu, piv = pcall(lu_c, a)
  if not ok then error((tostring(lu):gsub("^[^\n]-linalg%.lua:%d+: ", ""):gsub("lu_factor", fname)), 3) end
  return lu, piv
end

-- info (...) int32: 0, or the 1-based index of U's first zero diagonal element (getrf's)
local function lu_info(lu)
  local m, n = lu.shape[lu.ndim - 1], lu.shape[lu.ndim]
  local k = math.min(m, n)
  local bshape = {}
  for i = 1, lu.ndim - 2 do bshape[i] = lu.shape[i] end
  if k == 0 then return gpu.zeros(bshape, { dtype = "int32", device = lu.device }) end
  local d = gpu.diagonal(lu, 0, -2, -1):eq(0)
  local pos = gpu.arange(1, k + 1, { dtype = "int32", device = lu.device })
  -- the first zero: the smallest position where d holds, k + 1 where none
  local first = gpu.where(d, pos, k + 1):min({ -1 })
  return gpu.where(first:gt(k), 0, first):astype("int32")
end

-- lu_factor_ex(A (..., m, n) [, {pivot = true, check_errors = false}]) -> LU, pivots, info:
-- torch.linalg.lu_factor_ex (info: 0, or i where U[i, i] is exactly zero)
function M.lu_factor_ex(a, opts)
  local o = LU_EX_DECL:check(opts, 2, "gpu.linalg.lu_factor_ex")
  local lu, piv = lu_factors("lu_factor_ex", a, o.pivot)
  local info = lu_info(lu)
  if o.check_errors and info.size > 0 and info:max():item() > 0 then
    fail("lu_factor_ex", "U has a zero on its diagonal (info %d)", info:max():item())
  end
  return lu, piv, info
end

-- lu_factor(A (..., m, n) [, {pivot = true}]) -> LU, pivots (int32, 1-based as LAPACK's):
-- torch.linalg.lu_factor; a U with an exact zero on its diagonal is an error, as PyTorch's
-- (lu and lu_factor_ex take such matrices)
function M.lu_factor(a, opts)
  local o = LU_DECL:check(opts, 2, "gpu.linalg.lu_factor")
  local lu, piv = lu_factors("lu_factor", a, o.pivot)
  local info = lu_info(lu)
  if info.size > 0 and info:max():item() > 0 then
    local flat = info:reshape(-1):totable()
    for i, v in ipairs(flat) do
      if v > 0 then
        fail("lu_factor", "U[%d,%d] is zero and using it on lu_solve would result in a division by zero%s", v, v,
          lu.ndim > 2 and (" (batch %d)"):format(i) or "")
      end
    end
  end
  return lu, piv
end

-- the row permutation of each matrix as an int64 array (..., m), 1-based: row i of L U is
-- row perm[i] of A; made on the host from the pivots' row swaps
local function lu_perm(piv, m)
  local k = piv.shape[piv.ndim]
  local bshape = {}
  for i = 1, piv.ndim - 1 do bshape[i] = piv.shape[i] end
  if k == 0 then         -- no swaps: 1..m for every matrix (an error, not a loop, when that is too big)
    bshape[#bshape + 1] = m
    return gpu.arange(1, m + 1, { dtype = "int64", device = piv.device }):broadcast_to(bshape):copy()
  end
  local flat = piv:reshape(-1, k):cpu():totable()
  local nb = 1
  for _, d in ipairs(bshape) do nb = nb * d end
  local out = {}
  for b = 1, nb do
    local perm = {}
    for i = 1, m do perm[i] = i end
    local row = flat[b] or {}
    for i = 1, k do
      local p = row[i]
      if p == nil or p < 1 or p > m then
        fail("lu_solve", "pivots must be between 1 and %d, got %s", m, tostring(p))
      end
      perm[i], perm[p] = perm[p], perm[i]
    end
    for i = 1, m do out[#out + 1] = perm[i] end
  end
  bshape[#bshape + 1] = m
  if #out == 0 then return gpu.zeros(bshape, { dtype = "int64", device = piv.device }) end
  return gpu.array(out, { dtype = "int64", device = piv.device }):reshape(bshape)
end

-- lu(A (..., m, n) [, {pivot = true}]) -> P (..., m, m), L (..., m, k), U (..., k, n),
-- k = min(m, n): torch.linalg.lu, A = P L U
function M.lu(a, opts)
  local o = LU_FULL_DECL:check(opts, 2, "gpu.linalg.lu")
  local lu, piv = lu_factors("lu", a, o.pivot)
  local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
  local k = math.min(m, n)
  -- the first c columns (the first r rows) of each matrix (none: an empty array)
  local function none(x, axis)
    local sh = x.shape
    sh[axis] = 0
    return gpu.zeros(sh, { dtype = x.dtype, device = x.device })
  end
  local function cols(x, c)
    if c == 0 then return none(x, x.ndim) end
    local ix = {}
    for i = 1, x.ndim - 1 do ix[i] = ":" end
    ix[x.ndim] = { 1, c }
    return x[ix]
  end
  local function rows(x, r)
    if r == 0 then return none(x, x.ndim - 1) end
    local ix = {}
    for i = 1, x.ndim do ix[i] = ":" end
    ix[x.ndim - 1] = { 1, r }
    return x[ix]
  end
  local l = gpu.tril(cols(lu, k), -1) + gpu.eye(m, k, { dtype = lu.dtype, device = lu.device })
  local u = gpu.triu(rows(lu, k))
  local perm = lu_perm(piv, m)
  -- P[perm[i], i] = 1: the identity's columns taken in perm's order
  local eye = gpu.eye(m, { dtype = lu.dtype, device = lu.device })
  local pshape = {}
  for i = 1, perm.ndim - 1 do pshape[i] = perm.shape[i] end
  pshape[#pshape + 1], pshape[#pshape + 2] = m, m
  local p = gpu.take_along_axis(eye:expand(pshape), perm:unsqueeze(-2):expand(pshape), -1)
  return p, l, u
end

local LU_SOLVE = options.declare("linalg.lu_solve", {
  left = { type = "boolean", default = true }, adjoint = { type = "boolean", default = false } },
  { example = "gpu.linalg.lu_solve(gpu.eye(2), gpu.array({1, 2}, {dtype = 'int32'}), gpu.eye(2), %s)" })

-- lu_solve(LU (..., n, n), pivots (..., n), B (..., n, k) [, {left = true, adjoint = false}]):
-- torch.linalg.lu_solve: X with A X = B (adjoint: A^H X = B; left = false: X A = B or
-- X A^H = B) for A = P L U as lu_factor gives it; the batch axes broadcast. getrs (the C
-- op linalg._lu_solve, differentiable by its rule; it checks the pivots' range first)
function M.lu_solve(lu, piv, b, opts)
  local fname = "lu_solve"
  check_floating(fname, lu, 1, "LU")
  check_array(fname, piv, 2)
  check_floating(fname, b, 3, "B")
  local o = LU_SOLVE:check(opts, 4, "gpu.linalg.lu_solve")
  check_square(fname, lu, "LU")
  local n = lu.shape[lu.ndim]
  if piv.dtype:match("int") == nil then
    error(("bad argument #2 to 'gpu.linalg.lu_solve' (pivots must be an integer array, got %s)"):format(piv.dtype), 2)
  end
  if piv.ndim ~= lu.ndim - 1 or piv.shape[piv.ndim] ~= n then
    fail(fname, "pivots of shape (%s) do not match LU of shape (%s): (..., %d) expected", table.concat(piv.shape, ","),
      table.concat(lu.shape, ","), n)
  end
  if b.ndim < 2 then fail(fname, "B must be at least two-dimensional, got %d dimensions", b.ndim) end
  local nb = o.left and b.shape[b.ndim - 1] or b.shape[b.ndim]
  if nb ~= n then
    fail(fname, "incompatible shapes of LU (%s) and B (%s)", table.concat(lu.shape, ","), table.concat(b.shape, ","))
  end
  if not o.left then
    -- X A = B is A^H X^H = B^H; X A^H = B is A X^H = B^H
    return mH(M.lu_solve(lu, piv, mH(b), { adjoint = not o.adjoint }))
  end
  local ok, x = pcall(lu_solve_c, lu, piv, b, o.adjoint)
  if not ok then error((tostring(x):gsub("^[^\n]-linalg%.lua:%d+: ", "")), 2) end
  return x
end
M._lu_perm = lu_perm

-- the functions written here refuse arguments they do not take, as the C ops do
for k, f in pairs(M) do
  if gpu._arity(f) == nil then M[k] = options.counted("gpu.linalg." .. k, f) end
end

return M
