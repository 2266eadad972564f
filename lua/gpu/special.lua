-- gpu.special: torch.special and cupyx.scipy.special (SciPy's names). The element math is
-- kernels/special.h, reached through elementwise ops (kernels/elem_ops.h: gpu.erfinv,
-- x:erfinv(), both devices, the flat and fused paths, autograd in rules_special.lua); this
-- file is the namespace over them, with PyTorch's promotion, and the functions written over
-- the ops: multigammaln, logit's eps, expit, sinc, betainc.
--
--   gpu.special.erfinv(x)            and the other unary functions
--   gpu.special.xlogy(x, y)          x, y: arrays or numbers (one an array)
--   gpu.special.polygamma(n, x)      n a non-negative integer
--   gpu.special.multigammaln(a, p)   p a positive integer, every a > (p - 1)/2
--   gpu.special.logit(x [, eps])     x clamped to [eps, 1 - eps] first when eps is given
--   gpu.special.betainc(a, b, x)     the regularised incomplete beta I_x(a, b) (arrays or numbers)
--
-- Dtypes as PyTorch: integer and bool inputs compute in the default float dtype (float32;
-- gpu.get_default_dtype() where it exists) or, beside a float array, in that array's dtype;
-- float16/bfloat16 compute in float32 and round back; complex inputs are refused. The ops
-- themselves (gpu.erfinv on an int64 array) follow NumPy/SciPy instead: int64 -> float64.
local gpu = require "gpu"
local options = require "gpu.options"

local is_array, argerror, type_name = options.is_array, options.argerror, options.type_name

local M = {}

local FLOAT = { float16 = true, bfloat16 = true, float32 = true, float64 = true }
local COMPLEX = { complex64 = true, complex128 = true }

local function default_float()
  local f = gpu.get_default_dtype
  local d = type(f) == "function" and f() or nil
  return type(d) == "string" and d or "float32"
end

-- the argument v of fname (position argn) as the op takes it: an array of an integer or
-- bool dtype in 'float' (PyTorch's promotion), a number or a float/complex array as it is
local function operand(fname, argn, v, float, number_ok)
  if is_array(v) then
    options.check_array(v, fname, argn, "x")
    local dt = v.dtype
    if FLOAT[dt] or COMPLEX[dt] then return v end
    return v:astype(float)
  end
  if number_ok and type(v) == "number" then return v end
  argerror(fname, argn, "gpu.array%s expected, got %s", number_ok and " or number" or "", type_name(v))
end

-- the float dtype integer operands take: the first float array's among args, else the default
local function float_of(...)
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if is_array(v) and FLOAT[v.dtype] then return v.dtype end
  end
  return default_float()
end

local function unary(name, op)
  local fname = "gpu.special." .. name
  M[name] = function(x)
    x = operand(fname, 1, x, default_float(), false)
    return options.call(fname, gpu[op], x)
  end
end
local function binary(name, op)
  local fname = "gpu.special." .. name
  M[name] = function(a, b)
    local float = float_of(a, b)
    a, b = operand(fname, 1, a, float, true), operand(fname, 2, b, float, true)
    if not is_array(a) and not is_array(b) then argerror(fname, 1, "at least one operand must be a gpu.array") end
    return options.call(fname, gpu[op], a, b)
  end
end

for _, n in ipairs { "erf", "erfc", "erfcx", "erfinv", "erfcinv", "digamma", "ndtr", "ndtri", "log_ndtr", "i0",
                     "i0e", "i1", "i1e", "entr", "bessel_j0", "bessel_j1", "exp1", "expi", "expm1", "log1p" } do
  unary(n, n)
end
unary("gammaln", "lgamma")
unary("lgamma", "lgamma")
unary("psi", "digamma")
unary("expit", "sigmoid")
unary("j0", "bessel_j0")
unary("j1", "bessel_j1")
for _, n in ipairs { "xlogy", "xlog1py", "betaln", "beta", "zeta", "gammainc", "gammaincc", "rel_entr" } do
  binary(n, n)
end

-- sinc(x) = sin(pi x) / (pi x), 1 at 0: gpu.sinc (an elementwise op of its own)
function M.sinc(x)
  x = operand("gpu.special.sinc", 1, x, default_float(), false)
  local f = gpu.sinc
  if f == nil then options.raise("gpu.special.sinc: gpu.sinc is not in this build") end
  return options.call("gpu.special.sinc", f, x)
end

local function check_int(fname, argn, v, what, min)
  if type(v) ~= "number" or v ~= math.floor(v) or v < min or v ~= v or v == math.huge then
    argerror(fname, argn, "%s: an integer >= %d expected, got %s", what, min, type_name(v))
  end
  return math.tointeger(v) or v
end

-- polygamma(n, x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x) (the op computes it)
function M.polygamma(n, x)
  local fname = "gpu.special.polygamma"
  n = check_int(fname, 1, n, "n", 0)
  x = operand(fname, 2, x, default_float(), false)
  return options.call(fname, gpu.polygamma, n, x)
end

-- multigammaln(a, p) = p(p-1)/4 log(pi) + sum_{j=0}^{p-1} lgamma(a - j/2), defined for
-- every a > (p - 1)/2 (PyTorch and SciPy refuse the rest: so does this)
function M.multigammaln(a, p)
  local fname = "gpu.special.multigammaln"
  a = operand(fname, 1, a, default_float(), false)
  p = check_int(fname, 2, p, "p", 1)
  if COMPLEX[a.dtype] then argerror(fname, 1, "x: complex dtype %s is not supported", a.dtype) end
  if p > 1 << 20 then argerror(fname, 2, "p must be at most 2^20 (the sum has p terms), got %s", tostring(p)) end
  if a.size == 0 then return a:lgamma() end
  if not (a:min():item() > (p - 1) / 2) then
    options.raise("%s: all elements of a must be greater than (p - 1)/2 = %s", fname, tostring((p - 1) / 2))
  end
  local r = a:lgamma()
  for j = 1, p - 1 do r = r + (a - j / 2):lgamma() end
  return r + p * (p - 1) / 4 * math.log(math.pi)
end

-- logit(x [, eps]): log(x / (1 - x)), x clamped to [eps, 1 - eps] first when eps is given
function M.logit(x, eps)
  local fname = "gpu.special.logit"
  x = operand(fname, 1, x, default_float(), false)
  if eps ~= nil then
    if type(eps) ~= "number" or not (eps >= 0 and eps <= 0.5) then
      argerror(fname, 2, "eps: a number in [0, 0.5] expected, got %s", type_name(eps))
    end
    x = x:clip(eps, 1 - eps)
  end
  return options.call(fname, gpu.logit, x)
end

-- betainc(a, b, x) = I_x(a, b), the regularised incomplete beta (SciPy's; PyTorch has none):
-- x^a (1-x)^b / (a B(a, b)) times the continued fraction 1/(1+ d1/(1+ d2/(1+ ...))),
-- d_2m = m(b-m)x / ((a+2m-1)(a+2m)), d_2m+1 = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)), by
-- Lentz's method over whole arrays, with I_x(a, b) = 1 - I_(1-x)(b, a) where x > (a+1)/(a+b+2)
-- (so the fraction converges fast); 20 + 4 sqrt(max(a + b)) levels (it needs O(sqrt)), at
-- most 420: beyond a + b = 1e4 the fraction may stop short of full precision.
-- Computed in float64 (a float32 result rounds it); NaN for a <= 0, b <= 0 or x outside
-- [0, 1]; 0 at x = 0 and 1 at x = 1.
function M.betainc(a, b, x)
  local fname = "gpu.special.betainc"
  local float = float_of(a, b, x)
  a, b, x = operand(fname, 1, a, float, true), operand(fname, 2, b, float, true), operand(fname, 3, x, float, true)
  local like
  for _, v in ipairs { a, b, x } do if is_array(v) then like = like or v end end
  if like == nil then argerror(fname, 1, "at least one operand must be a gpu.array") end
  for i, v in ipairs { a, b, x } do
    if is_array(v) and COMPLEX[v.dtype] then argerror(fname, i, "complex dtype %s is not supported", v.dtype) end
  end
  local function arr(v)
    if is_array(v) then return v:astype("float64") end
    return gpu.full({ 1 }, v, { dtype = "float64", device = like.device })
  end
  local out_dtype = options.call(fname, gpu.result_type, a, b, x)
  local A, B, X = arr(a), arr(b), arr(x)
  A, B, X = options.call(fname, gpu.broadcast_arrays, A, B, X)
  local swap = X:gt((A + 1) / (A + B + 2))
  local aa, bb = gpu.where(swap, B, A), gpu.where(swap, A, B)
  local xx = gpu.where(swap, 1 - X, X)
  local top = X.size > 0 and (A + B):max():item() or 0
  local levels = 20 + 4 * math.ceil(math.sqrt(top == top and math.min(top, 1e4) or 0))
  local tiny = 1e-300
  local function nz(v) return gpu.where(v:abs():lt(tiny), tiny, v) end
  local qab, qap, qam = aa + bb, aa + 1, aa - 1
  local c = gpu.ones_like(xx)
  local d = 1 / nz(1 - qab * xx / qap)
  local hh = d
  for m = 1, levels do
    local m2 = 2 * m
    local e = xx * (bb - m) * m / ((qam + m2) * (aa + m2))
    d = 1 / nz(1 + e * d)
    c = nz(1 + e / c)
    hh = hh * d * c
    e = -xx * (aa + m) * (qab + m) / ((aa + m2) * (qap + m2))
    d = 1 / nz(1 + e * d)
    c = nz(1 + e / c)
    hh = hh * d * c
  end
  local front = (aa * xx:log() + bb * (-xx):log1p() - gpu.betaln(aa, bb)):exp() / aa
  local r = front * hh
  r = gpu.where(swap, 1 - r, r)
  r = gpu.where(X:eq(0), 0, gpu.where(X:eq(1), 1, r))
  local bad = gpu.logical_or(gpu.logical_or(A:le(0), B:le(0)), gpu.logical_or(X:lt(0), X:gt(1)))
  r = gpu.where(bad, 0 / 0, r)
  return r:astype(out_dtype)
end

return options.count_all("gpu.special.", M)
