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
  local keep = s:gt(s:max(-1, { keepdims = true }) * rcond)
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
    tol = s.size == 0 and 0 or s:max(-1, { keepdims = true }) * rtol
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
    if p == -2 then r = s:min(-1) / s:max(-1) else r = s:max(-1) / s:min(-1) end
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

-- the functions written here refuse arguments they do not take, as the C ops do
for k, f in pairs(M) do
  if gpu._arity(f) == nil then M[k] = options.counted("gpu.linalg." .. k, f) end
end

return M
