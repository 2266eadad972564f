-- gpu.linalg: numpy.linalg. The factorizations are C ops over LAPACK (src/lua/llinalg.c,
-- registered in gpu._linalg under the rules names "linalg.<f>": solve inv det slogdet
-- cholesky qr svd svdvals eigh eigvalsh lstsq); this file gathers them and adds the
-- functions NumPy builds from them (pinv, matrix_rank, matrix_power, norm, cond, cross,
-- multi_dot), written in array ops, so they are differentiable through those ops' rules.
-- Axes are 1-based, negatives from the end.
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
-- float64 for integers and bool (NumPy's promotion), floats as they are
local function floated(x) return x.dtype:match("float") and x or x:astype("float64") end
local EPS = { float64 = 2.220446049250313e-16, float32 = 1.1920929e-07, float16 = 1.1920929e-07, bfloat16 = 1.1920929e-07 }

local PINV = options.declare("linalg.pinv", { rcond = { type = "number", min = 0, default = 1e-15 } },
  { example = "gpu.linalg.pinv(gpu.eye(2), %s)" })
-- pinv(a [, {rcond = 1e-15}]): the pseudo-inverse from the SVD, singular values at most
-- rcond times the largest counting as zero
function M.pinv(a, opts)
  check_matrix("pinv", a)
  local o = PINV:check(opts, 2, "gpu.linalg.pinv")
  local u, s, vh = M.svd(a, { full_matrices = false })
  if s.size == 0 then return gpu.zeros(mT(a).shape, { dtype = s.dtype, device = a.device }) end
  local keep = s:gt(s:max(-1, { keepdims = true }) * o.rcond)
  local sinv = gpu.where(keep, 1 / gpu.where(keep, s, 1), 0)
  return (mT(vh) * sinv:unsqueeze(-2)):matmul(mT(u))
end

local RANK = options.declare("linalg.matrix_rank", { tol = { type = "number", min = 0 } },
  { example = "gpu.linalg.matrix_rank(gpu.eye(2), %s)" })
-- matrix_rank(a [, {tol =}]): how many singular values exceed tol (default: the largest
-- times max(m, n) times the dtype's epsilon), an int64 array of the batch's shape (0-d
-- for one matrix); a vector's rank is 1 unless it is all zeros
function M.matrix_rank(a, opts)
  check_array("matrix_rank", a, 1)
  local o = RANK:check(opts, 2, "gpu.linalg.matrix_rank")
  if a.ndim < 2 then return a:ne(0):any():astype("int64") end
  local s = M.svdvals(a)
  local tol = o.tol
  if tol == nil then
    local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
    tol = s.size == 0 and 0 or s:max(-1, { keepdims = true }) * (math.max(m, n) * EPS[s.dtype])
  end
  return s:gt(tol):astype("int64"):sum(-1)
end

-- matrix_power(a, n): a^n by repeated squaring (n an integer; 0: the identity, negative:
-- the inverse's power)
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
  while e > 0 do
    if e % 2 == 1 then result = result and result:matmul(base) or base end
    e = e // 2
    if e > 0 then base = base:matmul(base) end
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
-- norm(x, p) * norm(inv(x), p) (p in 1, -1, math.huge, -math.huge, "fro", "nuc")
function M.cond(x, p)
  check_matrix("cond", x)
  if p == nil or p == 2 or p == -2 then
    local s = M.svdvals(x)
    if p == -2 then return s:min(-1) / s:max(-1) end
    return s:max(-1) / s:min(-1)
  end
  return M.norm(x, p, { -2, -1 }) * M.norm(M.inv(x), p, { -2, -1 })
end

-- cross(a, b [, axis = -1]): the cross product of 3-vectors along axis (a and b broadcast)
function M.cross(a, b, axis)
  check_array("cross", a, 1)
  check_array("cross", b, 2)
  axis = axis or -1
  local function comp(x, i)
    local ax = axis < 0 and x.ndim + axis + 1 or axis
    if ax < 1 or ax > x.ndim then fail("cross", "axis %d is out of range for a %d-dimensional array", axis, x.ndim) end
    if x.shape[ax] ~= 3 then
      fail("cross", "incompatible dimensions for cross product (dimension must be 3, got %d)", x.shape[ax])
    end
    return x:take(gpu.array({ i }, { dtype = "int64", device = x.device }), ax)
  end
  local a1, a2, a3 = comp(a, 1), comp(a, 2), comp(a, 3)
  local b1, b2, b3 = comp(b, 1), comp(b, 2), comp(b, 3)
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

return M
