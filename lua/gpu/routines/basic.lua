-- gpu.routines.basic — diagonals and triangles (diagonal, trace, diag, triu, tril) and the
-- comparisons isclose, allclose, array_equal, written over dispatched ops (take/index,
-- where, the elementwise ops), so they run on both devices and are differentiable.
local gpu = require "gpu"
local options = require "gpu.options"

local M = {}

local function is_float(dtype) return gpu._dtypes[dtype].kind == "float" end
M.is_float = is_float

local function int_arg(fname, v, argn, what, default)
  if v == nil then return default end
  if math.type(v) ~= "integer" then
    options.argerror(fname, argn, "%s must be an integer, got %s", what, options.type_name(v))
  end
  return v
end
M.int_arg = int_arg

-- norm_axis(fname, axis, ndim, argn [, what]): a 1-based axis (negatives from the end),
-- checked; what: the wording of the integer check ("axis must be an integer").
local function norm_axis(fname, axis, ndim, argn, what)
  if math.type(axis) ~= "integer" then
    options.argerror(fname, argn, "%s, got %s", what or "axis must be an integer", options.type_name(axis))
  end
  local a = axis < 0 and ndim + axis + 1 or axis
  if a < 1 or a > ndim then
    options.argerror(fname, argn, "axis %d is out of range for an array of %d axes", axis, ndim)
  end
  return a
end
M.norm_axis = norm_axis

local function arange(n, dev) return gpu.arange(n, { device = dev }) end

-- ---- diagonals and triangles --------------------------------------------------------------

-- diagonal(x [, offset = 0 [, axis1 = 1 [, axis2 = 2]]]): NumPy's; the two axes removed and
-- the diagonal appended as the last axis (a copy, not a view). Gathered with one index op
-- over the two axes merged.
function M.diagonal(x, offset, axis1, axis2)
  local fname = "diagonal"
  options.check_array(x, fname, 1, "x")
  offset = int_arg(fname, offset, 2, "offset", 0)
  if x.ndim < 2 then options.argerror(fname, 1, "x must have at least 2 axes, got %d", x.ndim) end
  local a1 = norm_axis(fname, axis1 == nil and 1 or axis1, x.ndim, 3)
  local a2 = norm_axis(fname, axis2 == nil and 2 or axis2, x.ndim, 4)
  if a1 == a2 then options.argerror(fname, 4, "axis1 and axis2 are the same axis (%d)", a1) end
  local shape, perm, rest = x.shape, {}, {}
  for i = 1, x.ndim do
    if i ~= a1 and i ~= a2 then perm[#perm + 1] = i; rest[#rest + 1] = shape[i] end
  end
  perm[#perm + 1], perm[#perm + 2] = a1, a2
  local n, m = shape[a1], shape[a2]
  local len = offset >= 0 and math.min(n, m - offset) or math.min(n + offset, m)
  len = math.max(len, 0)
  local start = offset >= 0 and offset or -offset * m      -- 0-based flat position of the first
  local idx = arange(len, x.device) * (m + 1) + (start + 1)
  rest[#rest + 1] = n * m
  return x:permute(perm):reshape(rest):index(-1, idx)
end

-- trace(x [, offset = 0 [, axis1 = 1 [, axis2 = 2]]] [, {dtype}]): the diagonal's sum.
local TRACE = options.declare("trace", { dtype = { type = "dtype" } }, { example = "gpu.trace(gpu.eye(3), %s)" })
function M.trace(x, offset, axis1, axis2, opts)
  if type(offset) == "table" and not options.is_array(offset) then offset, opts = nil, offset end
  local o = TRACE:check(opts, 5)
  return M.diagonal(x, offset, axis1, axis2):sum(-1, { dtype = o.dtype })
end

-- diag(v [, k = 0]): a 1-D v on the k-th diagonal of a square matrix (zeros elsewhere), or
-- a 2-D v's k-th diagonal. The matrix is a take from {0, v...}, so it is differentiable.
function M.diag(v, k)
  local fname = "diag"
  options.check_array(v, fname, 1, "v")
  k = int_arg(fname, k, 2, "k", 0)
  if v.ndim == 2 then return M.diagonal(v, k) end
  if v.ndim ~= 1 then options.argerror(fname, 1, "v must be 1-D or 2-D, got %d axes", v.ndim) end
  local n = v.shape[1] + math.abs(k)
  local i = arange(n, v.device):reshape(n, 1)
  local j = arange(n, v.device):reshape(1, n)
  local src = (k >= 0 and i or j) + 2                       -- position of v's element in {0, v...}
  local idx = gpu.where((j - i):eq(k), src, 1)
  local padded = gpu.concat({ gpu.zeros(1, { dtype = v.dtype, device = v.device }), v })
  return gpu.take(padded, idx)
end

local function triangle(fname, keep)
  return function(x, k)
    options.check_array(x, fname, 1, "x")
    k = int_arg(fname, k, 2, "k", 0)
    if x.ndim == 0 then options.argerror(fname, 1, "x must have at least 1 axis, got a 0-d array") end
    if x.ndim == 1 then x = x:reshape(1, x.shape[1]):expand(x.shape[1], x.shape[1]) end
    local r, c = x.shape[x.ndim - 1], x.shape[x.ndim]
    local d = arange(c, x.device):reshape(1, c) - arange(r, x.device):reshape(r, 1)
    return gpu.where(keep(d, k), x, gpu.zeros({}, { dtype = x.dtype, device = x.device }))
  end
end

-- triu(x [, k = 0]) / tril(x [, k = 0]): zeros below / above the k-th diagonal of the last
-- two axes; a 1-D x is taken as the rows of a square matrix, as NumPy.
M.triu = triangle("triu", function(d, k) return d:ge(k) end)
M.tril = triangle("tril", function(d, k) return d:le(k) end)

-- ---- comparisons -----------------------------------------------------------------------------

local CLOSE = {
  rtol = { type = "number", default = 1e-5, min = 0 },
  atol = { type = "number", default = 1e-8, min = 0 },
  equal_nan = { type = "boolean", default = false },
}
local ISCLOSE = options.declare("isclose", CLOSE, { example = "gpu.isclose(gpu.ones(2), gpu.ones(2), %s)" })
local ALLCLOSE = options.declare("allclose", CLOSE, { example = "gpu.allclose(gpu.ones(2), gpu.ones(2), %s)" })
local EQUAL = options.declare("array_equal", { equal_nan = { type = "boolean", default = false } },
  { example = "gpu.array_equal(gpu.ones(2), gpu.ones(2), %s)" })

-- Two operands, one of them may be a Lua number (it takes the other's dtype and device);
-- integer and bool arrays are compared in float64, as NumPy.
local function operands(fname, a, b)
  local na, nb = type(a) == "number", type(b) == "number"
  if na and nb then options.argerror(fname, 1, "at least one operand must be a gpu.array") end
  if not na then options.check_array(a, fname, 1, "a") end
  if not nb then options.check_array(b, fname, 2, "b") end
  local ref = na and b or a
  local dtype = is_float(ref.dtype) and ref.dtype or "float64"
  local function conv(v)
    if type(v) == "number" then return gpu.full({}, v, { dtype = dtype, device = ref.device }) end
    return is_float(v.dtype) and v or v:astype("float64")
  end
  return conv(a), conv(b)
end

local function close(a, b, o)
  -- |a - b| <= atol + rtol |b| for finite pairs; equal infinities; NaN pairs with equal_nan
  local near = gpu.le(gpu.abs(a - b), gpu.abs(b) * o.rtol + o.atol)
  local r = gpu.logical_or(gpu.logical_and(near, gpu.logical_and(gpu.isfinite(a), gpu.isfinite(b))), gpu.eq(a, b))
  if o.equal_nan then r = gpu.logical_or(r, gpu.logical_and(gpu.isnan(a), gpu.isnan(b))) end
  return r
end

-- isclose(a, b [, {rtol = 1e-5, atol = 1e-8, equal_nan = false}]): NumPy's, elementwise (bool).
function M.isclose(a, b, opts)
  local o = ISCLOSE:check(opts, 3)
  a, b = operands("isclose", a, b)
  return close(a, b, o)
end

-- allclose(...): whether every pair is close (a Lua boolean).
function M.allclose(a, b, opts)
  local o = ALLCLOSE:check(opts, 3)
  a, b = operands("allclose", a, b)
  return close(a, b, o):all():item()
end

-- array_equal(a, b [, {equal_nan = false}]): the same shape and equal elements (a Lua boolean).
function M.array_equal(a, b, opts)
  local fname = "array_equal"
  local o = EQUAL:check(opts, 3)
  options.check_array(a, fname, 1, "a")
  options.check_array(b, fname, 2, "b")
  if a.ndim ~= b.ndim then return false end
  for i = 1, a.ndim do if a.shape[i] ~= b.shape[i] then return false end end
  local r = gpu.eq(a, b)
  if o.equal_nan and (is_float(a.dtype) or is_float(b.dtype)) then
    r = gpu.logical_or(r, gpu.logical_and(gpu.isnan(a), gpu.isnan(b)))
  end
  return r:all():item()
end

return M
