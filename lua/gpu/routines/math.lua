-- gpu.routines.math: elementwise functions NumPy and PyTorch define, written over the dispatched ops.
-- (The elementwise math that needs a kernel of its own, exp2 ... lcm, is kernels/elem_ops.h's
-- rows; these are the ones that compose them: several results, another dtype, an axis.)
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"

local M = {}

local norm_axis = basic.norm_axis

local function kind(x) return gpu._dtypes[x.dtype].kind end

-- the float dtype NumPy's float loops (and gpulua's float math) give an array of x's dtype
local FLOAT_FOR = { bool = "float16", uint8 = "float16", int8 = "float16", int16 = "float32", uint16 = "float32",
                    int32 = "float64", uint32 = "float64", int64 = "float64", uint64 = "float64" }
local function float_of(x) return FLOAT_FOR[x.dtype] and x:astype(FLOAT_FOR[x.dtype]) or x end

local function real_array(fname, x, argn, what)
  options.check_array(x, fname, argn, what)
  if kind(x) == "complex" then options.argerror(fname, argn, "%s must be real, got %s", what, x.dtype) end
end

-- v * 2^k in float64 for float64 v and integer-valued float64 (or Lua integer) k, exact but
-- for the final rounding: 2^k in two halves, so that neither overflows before v scales it
local function scale2(v, k)
  if type(k) == "number" then
    k = math.max(-2300, math.min(2300, k))
    local k1 = k // 2
    return v * 2.0 ^ k1 * 2.0 ^ (k - k1)
  end
  k = k:clip(-2300, 2300)
  local k1 = (k * 0.5):floor()
  return v * gpu.exp2(k1) * gpu.exp2(k - k1)
end

-- ldexp(x, e): x * 2^e, e integers (an array or a Lua integer); the result has x's float
-- dtype (integer x: NumPy's float loop), computed in float64 so that it rounds once
function M.ldexp(x, e)
  local fname = "ldexp"
  real_array(fname, x, 1, "x1")
  if type(e) == "number" then
    if math.type(e) ~= "integer" then options.argerror(fname, 2, "x2 must be an integer, got %s", tostring(e)) end
  else
    options.check_array(e, fname, 2, "x2")
    local k = kind(e)
    if k ~= "int" and k ~= "uint" then options.argerror(fname, 2, "x2 must be an integer array, got %s", e.dtype) end
    e = e:astype("float64")
  end
  local xf = float_of(x)
  return scale2(xf:astype("float64"), e):astype(xf.dtype)
end

-- frexp(x): mantissa m (|m| in [0.5, 1), x's float dtype) and exponent e (int32) with
-- x = m 2^e; 0, ±inf and NaN give (x, 0), as NumPy's
function M.frexp(x)
  local fname = "frexp"
  real_array(fname, x, 1, "x")
  local xf = float_of(x)
  local w = xf:astype("float64")
  local a = w:abs()
  local regular = gpu.logical_and(a:gt(0), a:isfinite())
  local safe = gpu.where(regular, a, 1)
  local e = safe:log2():floor() + 1                 -- within one of the exponent: set right below
  local m = scale2(safe, -e)
  e = gpu.where(m:ge(1), e + 1, gpu.where(m:lt(0.5), e - 1, e))
  local mant = gpu.where(regular, scale2(w, -e), w)
  return mant:astype(xf.dtype), gpu.where(regular, e, 0):astype("int32")
end

-- modf(x): the fractional and integral parts, both with x's sign and x's float dtype
-- (modf(±inf) = (±0, ±inf), as C's)
function M.modf(x)
  local fname = "modf"
  real_array(fname, x, 1, "x")
  local xf = float_of(x)
  local i = xf:trunc()
  return gpu.copysign(gpu.where(xf:isinf(), 0, xf - i), xf), i
end

-- divmod(x1, x2): floor_divide and remainder (Python's divmod, elementwise)
function M.divmod(a, b)
  if not options.is_array(a) and not options.is_array(b) then
    options.argerror("divmod", 1, "x1 or x2 must be a gpu.array, got %s and %s", options.type_name(a), options.type_name(b))
  end
  return gpu.floordiv(a, b), gpu.mod(a, b)
end

-- float_power(x1, x2): x1 ^ x2 in float64 (complex128 for complex operands), whatever the
-- operands' dtypes, as NumPy's and PyTorch's
function M.float_power(a, b)
  local fname = "float_power"
  local function up(v, argn, what)
    if type(v) == "number" then return v end
    options.check_array(v, fname, argn, what)
    return v:astype(kind(v) == "complex" and "complex128" or "float64")
  end
  local x, y = up(a, 1, "x1"), up(b, 2, "x2")
  if type(x) == "number" and type(y) == "number" then
    options.argerror(fname, 1, "x1 or x2 must be a gpu.array, got two numbers")
  end
  return gpu.pow(x, y)
end

-- unwrap(p [, discont [, axis = -1]] [, {period = 2 pi}]): p with its jumps along axis
-- larger than max(discont, period / 2) replaced by their complements modulo period
-- (NumPy's algorithm); integer p is unwrapped in float64
local UNWRAP = options.declare("unwrap", { period = { type = "number" } },
  { example = "gpu.unwrap(gpu.ones(3), nil, -1, %s)" })
function M.unwrap(p, discont, axis, opts)
  local fname = "unwrap"
  real_array(fname, p, 1, "p")
  if type(discont) == "table" and axis == nil and opts == nil then discont, opts = nil, discont end
  if type(axis) == "table" and opts == nil then axis, opts = nil, axis end
  local o = UNWRAP:check(opts, 4)
  local period = o.period or 2 * math.pi
  if not (period > 0 and period < math.huge) then
    options.argerror(fname, 4, "period must be positive and finite, got %s", tostring(period))
  end
  if discont ~= nil and type(discont) ~= "number" then
    options.argerror(fname, 2, "discont must be a number, got %s", options.type_name(discont))
  end
  if p.ndim == 0 then options.argerror(fname, 1, "p must have at least 1 axis") end
  axis = norm_axis(fname, axis == nil and -1 or axis, p.ndim, 3)
  p = kind(p) == "float" and p or p:astype("float64")
  local n = p.shape[axis]
  if n < 2 then return p:copy() end
  local high = period / 2
  local dd = gpu.diff(p, 1, axis)
  local ddmod = gpu.mod(dd + high, period) - high
  ddmod = gpu.where(gpu.logical_and(ddmod:eq(-high), dd:gt(0)), high, ddmod)
  local fix = gpu.where(dd:abs():lt(discont or high), 0, ddmod - dd)
  local function part(lo, hi)            -- a key of its own each: autograd keeps the key
    local key = {}
    for d = 1, p.ndim do key[d] = ":" end
    key[axis] = { lo, hi }
    return p[key]
  end
  return gpu.concat({ part(1, 1), part(2, n) + fix:cumsum(axis) }, axis)
end

return M
