-- gpu.routines.stats — quantile, percentile, median, nanmedian, cov, corrcoef, diff,
-- gradient, convolve, correlate, interp, trapz: over the existing sort, index/take,
-- im2col + matmul and elementwise ops, so both devices run them and they are
-- differentiable where NumPy's are smooth. Axes are 1-based.
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"
local bins = require "gpu.routines.bins"
local shape_part = require "gpu.routines.shape"

local M = {}

local norm_axis, is_float = basic.norm_axis, basic.is_float
local function floated(x) return is_float(x.dtype) and x or x:astype("float64") end

-- x[..., lo..hi (on axis), ...]: a view, inclusive range
local function slice(x, axis, lo, hi)
  local key = {}
  for d = 1, x.ndim do key[d] = ":" end
  key[axis] = { lo, hi }
  return x[key]
end

-- ---- quantiles ------------------------------------------------------------------------------

local QUANT_KEYS = {
  method = { type = "string", default = "linear", choices = { "linear", "lower", "higher", "midpoint", "nearest" } },
  keepdims = { type = "boolean", default = false },
}
local QUANTILE = options.declare("quantile", QUANT_KEYS, { example = "gpu.quantile(gpu.ones(3), 0.5, %s)" })
local PERCENTILE = options.declare("percentile", QUANT_KEYS, { example = "gpu.percentile(gpu.ones(3), 50, %s)" })
local MEDIAN = options.declare("median", { keepdims = QUANT_KEYS.keepdims }, { example = "gpu.median(gpu.ones(3), %s)" })
local NANMEDIAN = options.declare("nanmedian", { keepdims = QUANT_KEYS.keepdims },
  { example = "gpu.nanmedian(gpu.ones(3), %s)" })

-- q as a list of numbers in [0, scale] (divided by scale) and its shape (nil: a number)
local function read_q(fname, q, scale)
  local list, shape = {}, nil
  if type(q) == "number" then
    list[1] = q
  elseif options.is_array(q) then
    shape = q.shape
    list = q:reshape(q.size):to("cpu"):astype("float64"):totable()
  elseif type(q) == "table" then
    shape = { #q }
    for i, v in ipairs(q) do list[i] = v end
  else
    options.argerror(fname, 2, "q must be a number, a list or a gpu.array, got %s", options.type_name(q))
  end
  for i, v in ipairs(list) do
    if type(v) ~= "number" or v ~= v or v < 0 or v > scale then
      options.argerror(fname, 2, "q must be in [0, %s], got %s", tostring(scale), tostring(v))
    end
    list[i] = v / scale
  end
  return list, shape
end

-- For position pos (0-based, in [0, n - 1]) the 0-based lower and upper neighbours and the
-- weight of the upper one, by method.
local function neighbours(method, pos, n)
  local lo = math.floor(pos)
  local hi = math.min(lo + 1, n - 1)
  local t = pos - lo
  if method == "lower" then return lo, lo, 0
  elseif method == "higher" then local c = math.min(math.ceil(pos), n - 1); return c, c, 0
  elseif method == "midpoint" then return lo, hi, t > 0 and 0.5 or 0
  elseif method == "nearest" then
    local r = (t == 0.5) and (lo % 2 == 0 and lo or lo + 1) or math.floor(pos + 0.5)   -- half to even
    return r, r, 0
  end
  return lo, hi, t
end

-- NumPy's lerp: a + (b - a) t, from b's side where t >= 1/2 (exact at both ends)
local function lerp(a, b, t, tge)
  local d = b - a
  return gpu.where(tge, b - d * (1 - t), a + d * t)
end

-- The move of axis to the front and the shape of the result around it.
local function front(x, axis)
  local perm = { axis }
  for d = 1, x.ndim do if d ~= axis then perm[#perm + 1] = d end end
  return x:permute(perm)
end

-- x along axis with the order statistics at the 1-based positions of the list kth in
-- place (each where a sort would put it, NaN largest): a partition on the cpu, where the
-- selection kernel is, else a sort.
local function select_sorted(x, axis, kth)
  if x.device ~= "cpu" then return (x:sort(axis)) end
  return x:partition(kth, axis)
end

-- The 1-based positions that quantiles_sorted reads for qs along an axis of n.
local function quantile_positions(qs, method, n)
  local kth = { n }                         -- the largest: NaN there means a NaN in the slice
  for _, q in ipairs(qs) do
    local a, b = neighbours(method, q * (n - 1), n)
    kth[#kth + 1], kth[#kth + 2] = a + 1, b + 1
  end
  return kth
end

-- quantiles of the sorted s along axis (its last elements NaN where the slice has any,
-- as the sort puts them): (Q, other axes...) with q's list
local function quantiles_sorted(s, axis, qs, method)
  local n = s.shape[axis]
  local lo, hi, t = {}, {}, {}
  for i, q in ipairs(qs) do
    local a, b, w = neighbours(method, q * (n - 1), n)
    lo[i], hi[i], t[i] = a + 1, b + 1, w
  end
  local dev = s.device
  local A = front(s:index(axis, gpu.array(lo, { dtype = "int64", device = dev })), axis)
  local B = front(s:index(axis, gpu.array(hi, { dtype = "int64", device = dev })), axis)
  local shape = { #qs }
  for d = 2, A.ndim do shape[d] = 1 end
  local T = gpu.array(t, { dtype = s.dtype, device = dev }):reshape(shape)
  local r = lerp(A, B, T, T:ge(0.5))
  local last = front(s:index(axis, gpu.array({ n }, { dtype = "int64", device = dev })), axis)
  return gpu.where(gpu.isnan(last), 0 / 0, r)         -- any NaN in the slice: NaN, as NumPy
end

-- Arguments (x, q, [axis], [opts]) -> x floated, the axis (x flattened when nil), options
local function quantile_args(fname, decl, x, axis, opts, argn)
  options.check_array(x, fname, 1, "x")
  if type(axis) == "table" and opts == nil then axis, opts = nil, axis end
  local o = decl:check(opts, argn)
  x = floated(x)
  local flat = axis == nil
  if flat then x, axis = x:reshape(x.size), 1
  else axis = norm_axis(fname, axis, x.ndim, argn - 1) end
  if x.shape[axis] == 0 then options.raise("%s: the axis is empty (0 elements)", fname) end
  return x, axis, flat, o
end

local function finish(r, x, axis, qshape, flat, keepdims, orig)
  -- r: (Q, other axes...); keepdims puts a 1 at axis (every axis when flattened)
  local shape = {}
  for _, n in ipairs(qshape or {}) do shape[#shape + 1] = n end
  if keepdims then
    if flat then for _ = 1, orig.ndim do shape[#shape + 1] = 1 end
    else
      for d = 1, x.ndim do shape[#shape + 1] = d == axis and 1 or x.shape[d] end
    end
  else
    for d = 1, x.ndim do if d ~= axis then shape[#shape + 1] = x.shape[d] end end
  end
  return r:reshape(shape)
end

-- A quantile function of x, q [, axis] [, opts]: compute(xx, ax, qs, method) gives the
-- quantiles qs (read from q and divided by scale) along ax of the x that quantile_args
-- prepared, (Q, other axes...), which finish shapes.
local function quantile_fn(fname, decl, scale, compute)
  return function(x, q, axis, opts)
    local qs, qshape = read_q(fname, q, scale)
    local xx, ax, flat, o = quantile_args(fname, decl, x, axis, opts, 4)
    return finish(compute(xx, ax, qs, o.method), xx, ax, qshape, flat, o.keepdims, x)
  end
end

-- The median function of x [, axis] [, {keepdims}] over the same compute.
local function median_fn(fname, decl, compute)
  return function(x, axis, opts)
    if type(axis) == "table" and opts == nil then axis, opts = nil, axis end
    local o = decl:check(opts, axis == nil and 2 or 3)
    local xx, ax, flat = quantile_args(fname, decl, x, axis, nil, 3)
    return finish(compute(xx, ax, { 0.5 }, "linear"), xx, ax, nil, flat, o.keepdims, x)
  end
end

-- the quantiles qs along ax of xx: the elements they read selected, then interpolated
local function sorted_quantiles(xx, ax, qs, method)
  local s = select_sorted(xx, ax, quantile_positions(qs, method, xx.shape[ax]))
  return quantiles_sorted(s, ax, qs, method)
end

-- quantile(x, q [, axis] [, {method = "linear", keepdims}]) (q in [0, 1], a number, list or
-- array: its shape leads the result's), percentile (q in [0, 100]), median (q = 0.5)
M.quantile = quantile_fn("quantile", QUANTILE, 1, sorted_quantiles)
M.percentile = quantile_fn("percentile", PERCENTILE, 100, sorted_quantiles)
M.median = median_fn("median", MEDIAN, sorted_quantiles)

-- The q-quantile of each slice's non-NaN elements along ax of the sorted s (NaNs last),
-- c their counts (keepdims): the neighbours are picked at each slice's own count, so the
-- positions are arrays; an all-NaN slice gives NaN.
local function nan_quantile(s, c, ax, q, method)
  local last = (c - 1):clip(0, nil)
  local pos = last:astype(s.dtype) * q
  local lo = gpu.floor(pos):astype("int64")
  local frac = pos - lo:astype(s.dtype)
  local hi, t
  if method == "lower" then hi, t = lo, frac * 0
  elseif method == "higher" then lo = gpu.ceil(pos):astype("int64"); hi, t = lo, frac * 0
  elseif method == "nearest" then
    local odd = gpu.mod(lo, 2):eq(1)
    local up = gpu.logical_or(frac:gt(0.5), gpu.logical_and(frac:eq(0.5), odd))
    lo = lo + up:astype("int64"); hi, t = lo, frac * 0
  else
    hi = gpu.minimum(lo + 1, last)
    t = method == "midpoint" and gpu.where(frac:gt(0), 0.5, frac * 0) or frac
  end
  local A = shape_part.take_along_axis(s, lo + 1, ax)
  local B = shape_part.take_along_axis(s, hi + 1, ax)
  return gpu.where(c:eq(0), 0 / 0, lerp(A, B, t, t:ge(0.5)))
end

-- x along ax with what nan_quantile reads in place, c the counts of non-NaN elements: when
-- every slice has the same count m, the positions around (m - 1) q (one more each way than
-- the float arithmetic there can move them) are selected; else x is sorted.
local function nan_sorted(x, ax, c, qs)
  local m = c:min():item()
  if c:max():item() ~= m then return (x:sort(ax)) end
  if m == 0 then return x end                  -- every slice all NaN: nothing is read
  local kth = {}
  for _, q in ipairs(qs) do
    local p = math.floor((m - 1) * q)
    for k = p - 1, p + 2 do kth[#kth + 1] = math.max(1, math.min(m, k + 1)) end
  end
  return select_sorted(x, ax, kth)
end

-- the quantiles qs of the non-NaN elements along ax of xx
local function nan_quantiles(xx, ax, qs, method)
  local c = gpu.logical_not(gpu.isnan(xx)):sum(ax, { keepdims = true })       -- int64 counts
  local s = nan_sorted(xx, ax, c, qs)
  local rs = {}
  for i, qi in ipairs(qs) do rs[i] = front(nan_quantile(s, c, ax, qi, method), ax) end
  return #rs == 1 and rs[1] or gpu.concat(rs, 1)
end

local NANQUANTILE = options.declare("nanquantile", QUANT_KEYS, { example = "gpu.nanquantile(gpu.ones(3), 0.5, %s)" })
local NANPERCENTILE = options.declare("nanpercentile", QUANT_KEYS,
  { example = "gpu.nanpercentile(gpu.ones(3), 50, %s)" })

-- nanquantile / nanpercentile / nanmedian: the quantiles of each slice's non-NaN elements
M.nanquantile = quantile_fn("nanquantile", NANQUANTILE, 1, nan_quantiles)
M.nanpercentile = quantile_fn("nanpercentile", NANPERCENTILE, 100, nan_quantiles)
M.nanmedian = median_fn("nanmedian", NANMEDIAN, nan_quantiles)

-- ---- covariance -------------------------------------------------------------------------------

local COV = options.declare("cov", {
  rowvar = { type = "boolean", default = true },
  bias = { type = "boolean", default = false },
  ddof = { type = "integer" },
}, { example = "gpu.cov(gpu.ones(2, 3), %s)" })
local CORR = options.declare("corrcoef", { rowvar = { type = "boolean", default = true } },
  { example = "gpu.corrcoef(gpu.ones(2, 3), %s)" })

-- The observations as rows of variables (vars, n), x's float dtype (integers in float64)
local function variables(fname, x, y, rowvar)
  options.check_array(x, fname, 1, "x")
  if x.ndim > 2 then options.argerror(fname, 1, "x must be 1-D or 2-D, got %d axes", x.ndim) end
  x = floated(x)
  if x.ndim < 2 then x = x:reshape(1, x.size) elseif not rowvar then x = x.T end
  if y ~= nil then
    options.check_array(y, fname, 2, "y")
    y = floated(y)
    if y.ndim < 2 then y = y:reshape(1, y.size) elseif not rowvar then y = y.T end
    if y.shape[2] ~= x.shape[2] then
      options.argerror(fname, 2, "y has %d observations, x %d", y.shape[2], x.shape[2])
    end
    x = gpu.concat({ x, y }, 1)
  end
  return x
end

local function covariance(x, ddof)
  local n = x.shape[2]
  local d = x - x:mean(2, { keepdims = true })
  return gpu.matmul(d, d.T) / (n - ddof)
end

-- cov(x [, y] [, {rowvar = true, bias = false, ddof}]): NumPy's (rows are variables;
-- ddof 1, 0 with bias); one variable gives a 0-d array. In x's float dtype (NumPy: float64).
function M.cov(x, y, opts)
  if type(y) == "table" and not options.is_array(y) and opts == nil then y, opts = nil, y end
  local o = COV:check(opts, y == nil and 2 or 3)
  local v = variables("cov", x, y, o.rowvar)
  local c = covariance(v, o.ddof or (o.bias and 0 or 1))
  if c.size == 1 then return c:reshape({}) end
  return c
end

-- corrcoef(x [, y] [, {rowvar = true}]): the covariance over the products of the standard
-- deviations, clipped to [-1, 1]
function M.corrcoef(x, y, opts)
  if type(y) == "table" and not options.is_array(y) and opts == nil then y, opts = nil, y end
  local o = CORR:check(opts, y == nil and 2 or 3)
  local c = covariance(variables("corrcoef", x, y, o.rowvar), 1)
  local d = gpu.sqrt(basic.diagonal(c))
  local r = (c / d:reshape(-1, 1) / d:reshape(1, -1)):clip(-1, 1)
  if r.size == 1 then return r:reshape({}) end
  return r
end

-- ---- differences ------------------------------------------------------------------------------

local DIFF = options.declare("diff", { prepend = { type = "number|array" }, append = { type = "number|array" } },
  { example = "gpu.diff(gpu.ones(3), 1, -1, %s)" })

-- diff(x [, n = 1 [, axis = -1]] [, {prepend, append}]): the n-th differences along axis
-- (bool: not-equal, as NumPy)
function M.diff(x, n, axis, opts)
  local fname = "diff"
  options.check_array(x, fname, 1, "x")
  if type(n) == "table" and axis == nil and opts == nil then n, opts = nil, n end
  if type(axis) == "table" and opts == nil then axis, opts = nil, axis end
  n = basic.int_arg(fname, n, 2, "n", 1)
  if n < 0 then options.argerror(fname, 2, "n must be >= 0, got %d", n) end
  local o = DIFF:check(opts, 4)
  if x.ndim == 0 then options.argerror(fname, 1, "x must have at least 1 axis") end
  axis = norm_axis(fname, axis == nil and -1 or axis, x.ndim, 3)
  local function side(v)
    if type(v) == "number" then
      local s = x.shape
      s[axis] = 1
      return gpu.full(s, v, { dtype = x.dtype, device = x.device })
    end
    if v.ndim == 0 then
      local s = x.shape
      s[axis] = 1
      return v:reshape({}):expand(s)
    end
    return v
  end
  if o.prepend ~= nil or o.append ~= nil then
    local parts = {}
    if o.prepend ~= nil then parts[#parts + 1] = side(o.prepend) end
    parts[#parts + 1] = x
    if o.append ~= nil then parts[#parts + 1] = side(o.append) end
    x = gpu.concat(parts, axis)
  end
  if x.size == 0 or n >= x.shape[axis] then      -- nothing to subtract: the empty result at once
    local s = x.shape
    s[axis] = math.max(0, s[axis] - n)
    return gpu.zeros(s, { dtype = x.dtype, device = x.device })
  end
  for _ = 1, n do
    local m = x.shape[axis]
    if m <= 1 then
      local s = x.shape
      s[axis] = 0
      return gpu.zeros(s, { dtype = x.dtype, device = x.device })
    end
    local a, b = slice(x, axis, 2, m), slice(x, axis, 1, m - 1)
    x = x.dtype == "bool" and gpu.ne(a, b) or a - b
  end
  return x
end

local GRADIENT = options.declare("gradient", {
  axis = { type = "integer|table" },
  edge_order = { type = "integer", default = 1, min = 1, max = 1 },
}, { example = "gpu.gradient(gpu.ones(3), %s)" })

-- gradient(f [, spacing ...] [, {axis, edge_order = 1}]): NumPy's second-order central
-- differences inside, one-sided at the ends; spacing a number per axis (or one for all).
-- One axis: one array; several: one array per axis (multiple results).
function M.gradient(f, ...)
  local fname = "gradient"
  options.check_array(f, fname, 1, "f")
  local args = table.pack(...)
  while args.n > 0 and args[args.n] == nil do args.n = args.n - 1 end
  local opts
  if args.n > 0 and type(args[args.n]) == "table" then opts = args[args.n]; args.n = args.n - 1 end
  local o = GRADIENT:check(opts, args.n + 2)
  local axes = {}
  if o.axis == nil then for d = 1, f.ndim do axes[d] = d end
  elseif type(o.axis) == "table" then for i, a in ipairs(o.axis) do axes[i] = norm_axis(fname, a, f.ndim, args.n + 2) end
  else axes[1] = norm_axis(fname, o.axis, f.ndim, args.n + 2) end
  if args.n ~= 0 and args.n ~= 1 and args.n ~= #axes then
    options.argerror(fname, 2, "give one spacing, or one per axis (%d), got %d", #axes, args.n)
  end
  f = floated(f)
  local out = {}
  for i, ax in ipairs(axes) do
    local h = args.n == 0 and 1 or args[args.n == 1 and 1 or i]
    if type(h) ~= "number" then
      options.argerror(fname, i + 1, "spacing must be a number (coordinate arrays are not supported), got %s",
        options.type_name(h))
    end
    local m = f.shape[ax]
    if m < 2 then options.raise("%s: axis %d has %d elements; at least 2 are needed", fname, ax, m) end
    local first = (slice(f, ax, 2, 2) - slice(f, ax, 1, 1)) / h
    local last = (slice(f, ax, m, m) - slice(f, ax, m - 1, m - 1)) / h
    local parts = { first }
    if m > 2 then parts[2] = (slice(f, ax, 3, m) - slice(f, ax, 1, m - 2)) / (2 * h) end
    parts[#parts + 1] = last
    out[i] = gpu.concat(parts, ax)
  end
  return table.unpack(out, 1, #axes)
end

-- ---- convolution ------------------------------------------------------------------------------
-- Two methods, as scipy.signal.convolve: "direct" (the windows of a times v: im2col and one
-- matmul; memory grows as len(a) * len(v)) and "fft" (the product of the transforms over a
-- length >= n + m - 1 with small prime factors: rfft/irfft for real operands, fft/ifft for
-- complex ones); "auto" chooses by a cost model, as scipy.signal.choose_conv_method. Both compute the full result, of which
-- the mode keeps NumPy's part. Complex operands run the direct method on their real parts.

local MODES = { "full", "same", "valid" }

local function mode_arg(fname, mode, default)
  if mode == nil then return default end
  if type(mode) ~= "string" then options.argerror(fname, 3, "mode must be a string, got %s", options.type_name(mode)) end
  for _, m in ipairs(MODES) do if m == mode then return mode end end
  local near = options.nearest(mode, MODES)
  options.argerror(fname, 3, "mode must be one of full, same, valid, got '%s'%s", mode,
    near and ("; did you mean '" .. near .. "'?") or "")
end

local METHOD = { method = { type = "string", choices = { "direct", "fft", "auto" }, default = "direct" } }
local CONVOLVE = options.declare("convolve", METHOD, { example = "gpu.convolve(gpu.ones(3), gpu.ones(2), 'full', %s)" })
local CORRELATE = options.declare("correlate", METHOD,
  { example = "gpu.correlate(gpu.ones(3), gpu.ones(2), 'valid', %s)" })

local function is_complex(dtype) return dtype == "complex64" or dtype == "complex128" end
local narrow = { float16 = true, bfloat16 = true, float32 = true, complex64 = true }

-- the operands in one inexact dtype: integers and bool as float64, two different real
-- dtypes as float64; a complex one makes both complex (complex64 when both are at most
-- single precision, else complex128)
local function operands(fname, a, v)
  options.check_array(a, fname, 1, "a")
  options.check_array(v, fname, 2, "v")
  if a.ndim ~= 1 or v.ndim ~= 1 then options.argerror(fname, a.ndim ~= 1 and 1 or 2, "a and v must be 1-D") end
  if a.size == 0 or v.size == 0 then options.argerror(fname, a.size == 0 and 1 or 2, "a and v must not be empty") end
  if is_complex(a.dtype) or is_complex(v.dtype) then
    local dt = (narrow[a.dtype] and narrow[v.dtype]) and "complex64" or "complex128"
    if a.dtype ~= dt then a = a:astype(dt) end
    if v.dtype ~= dt then v = v:astype(dt) end
    return a, v
  end
  a, v = floated(a), floated(v)
  if a.dtype ~= v.dtype then a, v = a:astype("float64"), v:astype("float64") end
  return a, v
end

-- the pieces of x (n) padded with m - 1 zeros each side that each output sees: im2col's
-- (m, n + m - 1) windows of a (1, C, 1, n + 2 (m - 1)) image, C rows of x at once
local function windows(x, m)                                 -- x (C, n) -> (C, m, n + m - 1)
  local C, n = x.shape[1], x.shape[2]
  local p = x
  if m > 1 then
    local z = gpu.zeros({ C, m - 1 }, { dtype = x.dtype, device = x.device })
    p = gpu.concat({ z, x, z }, 2)
  end
  return gpu.im2col(p:reshape(1, C, 1, n + 2 * (m - 1)), { kernel = { 1, m } }):reshape(C, m, n + m - 1)
end

-- c[k] = sum_j a[j + k] v[j] for every overlap (k from -(m - 1) to n - 1): the windows of a
-- times v, one matmul. Complex operands as their parts, (ar vr - ai vi) + i (ar vi + ai vr):
-- the windows of both parts of a times both parts of v, one batched matmul.
local function direct_correlation(a, v)
  local n, m = a.size, v.size
  if not is_complex(a.dtype) then
    return gpu.matmul(v:reshape(1, m), windows(a:reshape(1, n), m):reshape(m, n + m - 1)):reshape(n + m - 1)
  end
  local ap, vp = gpu.view_as_real(a):transpose(), gpu.view_as_real(v):transpose()        -- (2, n), (2, m)
  local p = vp:matmul(windows(ap, m))                        -- (a's part, v's part, n + m - 1)
  local re = p[{ 1, 1 }] - p[{ 2, 2 }]
  local im = p[{ 1, 2 }] + p[{ 2, 1 }]
  return gpu.view_as_complex(gpu.stack({ re, im }, 2))
end

-- the least L >= n whose prime factors are 2, 3 and 5 (scipy.fft.next_fast_len for real
-- transforms: FFTW's codelets make these the fast sizes)
local function fast_len(n)
  local best = math.huge
  local p5 = 1
  while p5 < best do
    local p35 = p5
    while p35 < best do
      local q = p35
      while q < n do q = q * 2 end
      if q < best then best = q end
      if p35 >= n then break end
      p35 = p35 * 3
    end
    if p5 >= n then break end
    p5 = p5 * 5
  end
  return best
end
M.fast_len = fast_len

-- the full linear convolution (length n + m - 1) through the transforms of both operands
-- zero-padded to a fast length L: the circular convolution of length L >= n + m - 1 wraps
-- nothing; the real transforms for real operands
local function fft_convolution(a, v)
  local N = a.size + v.size - 1
  local L = fast_len(N)
  local F = gpu.fft
  local c
  if is_complex(a.dtype) then c = F.ifft(F.fft(a, L) * F.fft(v, L))
  else c = F.irfft(F.rfft(a, L) * F.rfft(v, L), L) end
  if L > N then c = c[{ { 1, N } }] end
  if c.dtype ~= a.dtype then c = c:astype(a.dtype) end     -- float16 and bfloat16 transform in float32
  return c
end

-- "auto": scipy.signal.choose_conv_method's way, a cost model per method with constants
-- measured, here on gpulua's own two methods (float64 on the cpu, one thread): both compute
-- the full result, the direct one as min(n, m) (n + m - 1) windowed products (im2col's
-- writes and a matrix-vector product: 1e-9 s each), the transforms as SciPy counts them,
-- 3 N log N (2.7e-10 s each), and the transforms' calls cost 1e-5 s more. SciPy's own
-- constants, measured on its direct loops (which need no memory), choose the direct method
-- up to about 300 times longer operands. Past 2^25 windowed elements the transforms, for
-- memory's sake.
local WINDOWS_MAX = 1 << 25
local function auto_method(n, m)
  local N = n + m - 1
  local windows = math.min(n, m) * N
  if windows > WINDOWS_MAX then return "fft" end
  return 2.7e-10 * 3 * N * math.log(N) < 1e-9 * windows - 1e-5 and "fft" or "direct"
end
M.auto_method = auto_method

-- integer operands stay exact through the transforms only while every sum of products fits
-- the 53 bits of a float64 (scipy's guard; it reads the operands' largest magnitudes); bool
-- operands take the direct method
local function fft_exact(a0, v0, n, m)
  if a0.dtype == "bool" or v0.dtype == "bool" then return false end
  local function amax(x) return x:abs():max():astype("float64"):item() end
  return amax(a0) * amax(v0) * math.min(n, m) <= 2 ^ 52 - 1
end

local function integral(dtype) return not is_float(dtype) and not is_complex(dtype) end

-- convolve and correlate: (a, v [, mode] [, {method}]); the options table may come third
local function conv_args(fname, decl, a, v, mode, opts, default)
  local argn = 4
  if type(mode) == "table" and not options.is_array(mode) then
    if opts ~= nil then options.argerror(fname, 4, "no argument expected after the options table") end
    mode, opts, argn = nil, mode, 3
  end
  mode = mode_arg(fname, mode, default)
  local method = decl:check(opts, argn).method
  local a0, v0 = a, v
  a, v = operands(fname, a, v)
  local n, m = a.size, v.size
  local ints = integral(a0.dtype) and integral(v0.dtype)
  if method == "auto" then
    method = auto_method(n, m)
    if method == "fft" and ints and not fft_exact(a0, v0, n, m) then method = "direct" end
  end
  return a, v, mode, method, ints
end

-- The mode's part of the full result (length n + m - 1), NumPy's centring for "same".
local function mode_slice(c, n, m, mode)
  if mode == "full" then return c end
  local long, short = math.max(n, m), math.min(n, m)
  local start, len
  if mode == "valid" then start, len = short - 1, long - short + 1
  else start, len = (short - 1) // 2, long end
  return c[{ { start + 1, start + len } }]
end

-- the full correlation sum_j x[j + k] y[j] by either method (the transforms: the convolution
-- with y reversed); integer operands' transforms rounded back to the integers they are
local function full_correlation(x, y, method, ints)
  if method == "direct" then return direct_correlation(x, y) end
  local c = fft_convolution(x, y:flip(1))
  return ints and c:round() or c
end

-- correlate(a, v [, mode = "valid"] [, {method = "direct"}]): NumPy's
-- c[k] = sum_j a[j + k] conj(v[j])
function M.correlate(a, v, mode, opts)
  local method, ints
  a, v, mode, method, ints = conv_args("correlate", CORRELATE, a, v, mode, opts, "valid")
  local n, m = a.size, v.size
  local w = is_complex(v.dtype) and v:conj() or v
  if n >= m then return mode_slice(full_correlation(a, w, method, ints), n, m, mode) end
  -- NumPy swaps the operands and reverses; the full result reversed is sum_j w[j + k] a[j]
  -- (and the windows are then of the longer operand)
  return mode_slice(full_correlation(w, a, method, ints), m, n, mode):flip(1):contiguous()
end

-- convolve(a, v [, mode = "full"] [, {method = "direct"}]): NumPy's (1-D); the windows
-- are of the longer operand, the shorter one reversed
function M.convolve(a, v, mode, opts)
  local method, ints
  a, v, mode, method, ints = conv_args("convolve", CONVOLVE, a, v, mode, opts, "full")
  local n, m = a.size, v.size
  local c
  if method == "fft" then
    c = fft_convolution(a, v)
    if ints then c = c:round() end
  elseif m > n then
    c = direct_correlation(v, a:flip(1))
  else
    c = direct_correlation(a, v:flip(1))
  end
  return mode_slice(c, n, m, mode)
end

-- ---- interp, trapz ------------------------------------------------------------------------------

local INTERP = options.declare("interp", { left = { type = "number" }, right = { type = "number" },
  period = { type = "number", unsupported = true } }, { example = "gpu.interp(gpu.ones(2), gpu.arange(3), gpu.arange(3), %s)" })

-- interp(x, xp, fp [, {left, right}]): NumPy's piecewise-linear interpolation (xp increasing);
-- fp[1] / fp[n] (or left / right) outside
function M.interp(x, xp, fp, opts)
  local fname = "interp"
  options.check_array(x, fname, 1, "x")
  options.check_array(xp, fname, 2, "xp")
  options.check_array(fp, fname, 3, "fp")
  local o = INTERP:check(opts, 4)
  if xp.ndim ~= 1 or fp.ndim ~= 1 or xp.size ~= fp.size then
    options.argerror(fname, 3, "xp and fp must be 1-D of one length, got %s and %s", options.shape_str(xp.shape),
      options.shape_str(fp.shape))
  end
  if xp.size == 0 then options.argerror(fname, 2, "xp must not be empty") end
  local n = xp.size
  x, xp, fp = floated(x), floated(xp), floated(fp)
  local flat = x:reshape(x.size)
  local y
  if n == 1 then
    y = fp:expand(flat.size) * 1
  else
    local j = (bins.searchsorted(xp, flat, { side = "right" }) - 1):clip(1, n - 1)   -- left point, 1-based
    local x0, x1 = gpu.take(xp, j), gpu.take(xp, j + 1)
    local y0, y1 = gpu.take(fp, j), gpu.take(fp, j + 1)
    y = y0 + (flat - x0) * ((y1 - y0) / (x1 - x0))
    y = gpu.where(flat:eq(xp[n]), fp[n], y)
  end
  y = gpu.where(flat:lt(xp[1]), o.left or fp[1], y)
  y = gpu.where(flat:gt(xp[n]), o.right or fp[n], y)
  y = gpu.where(gpu.isnan(flat), 0 / 0, y)
  return y:reshape(x.shape)
end

local TRAPZ = options.declare("trapz", { dx = { type = "number", default = 1 }, axis = { type = "integer", default = -1 } },
  { example = "gpu.trapz(gpu.ones(3), %s)" })

-- trapz(y [, x] [, {dx = 1, axis = -1}]): the trapezoidal rule along axis (x: the sample
-- points, 1-D or y's shape)
function M.trapz(y, x, opts)
  local fname = "trapz"
  options.check_array(y, fname, 1, "y")
  if type(x) == "table" and not options.is_array(x) and opts == nil then x, opts = nil, x end
  local o = TRAPZ:check(opts, x == nil and 2 or 3)
  if y.ndim == 0 then options.argerror(fname, 1, "y must have at least 1 axis") end
  local ax = norm_axis(fname, o.axis, y.ndim, x == nil and 2 or 3)
  y = floated(y)
  local m = y.shape[ax]
  if m < 2 then
    local s = y.shape
    table.remove(s, ax)
    return gpu.zeros(s, { dtype = y.dtype, device = y.device })
  end
  local d
  if x ~= nil then
    options.check_array(x, fname, 2, "x")
    if x.ndim == 1 then
      if x.size ~= m then options.argerror(fname, 2, "x has %d points, y %d along axis %d", x.size, m, ax) end
      local s = {}
      for k = 1, y.ndim do s[k] = 1 end
      s[ax] = m - 1
      d = M.diff(floated(x)):reshape(s)
    else
      d = M.diff(floated(x), 1, ax)
    end
  else
    d = o.dx
  end
  return ((slice(y, ax, 2, m) + slice(y, ax, 1, m - 1)) * d / 2):sum(ax)
end

-- ---- more reductions and scans: NumPy's ptp, average, nanprod, nancumsum, nancumprod,
-- ediff1d; PyTorch's std_mean, var_mean, aminmax, cummax, cummin, logcumsumexp, mode,
-- kthvalue, unique_consecutive, cdist, dist --------------------------------------------------

local no_grad = gpu.no_grad

-- The arguments (x [, axis] [, opts]) of a reduction: axis nil, an integer or a list of them;
-- a table with other keys is the options.
local function red_args(fname, decl, x, axis, opts)
  options.check_array(x, fname, 1, "x")
  if type(axis) == "table" and opts == nil then
    local k = next(axis)
    if k ~= nil and math.type(k) ~= "integer" then axis, opts = nil, axis end
  end
  if axis ~= nil and math.type(axis) ~= "integer" and (type(axis) ~= "table" or options.is_array(axis)) then
    options.argerror(fname, 2, "axis must be an integer or a table of integers, got %s", options.type_name(axis))
  end
  if math.type(axis) == "integer" then norm_axis(fname, axis, math.max(x.ndim, 1), 2) end
  return axis, decl:check(opts, axis == nil and 2 or 3)
end

-- The arguments (x [, dim] [, opts]) of a function along one axis: PyTorch's dim (1-based,
-- checked; default default_dim, which may be nil), the options read; argn: dim's position.
local function dim_args(fname, decl, x, dim, opts, default_dim, argn)
  argn = argn or 2
  options.check_array(x, fname, 1, "x")
  if type(dim) == "table" and opts == nil and not options.is_array(dim) then dim, opts = nil, dim end
  if dim == nil then dim = default_dim end
  if dim ~= nil then dim = norm_axis(fname, dim, math.max(x.ndim, 1), argn, "dim must be an integer") end
  return dim, decl:check(opts, argn + 1)
end

local function check_float(fname, x)
  if not is_float(x.dtype) then
    options.argerror(fname, 1, "x must be a float array, got %s", x.dtype)
  end
end

local KEEP = { keepdims = { type = "boolean", default = false } }
local PTP = options.declare("ptp", KEEP, { example = "gpu.ptp(gpu.ones(2, 3), 1, %s)" })
local AMAX = options.declare("amax", KEEP, { example = "gpu.amax(gpu.ones(2, 3), 1, %s)" })
local AMIN = options.declare("amin", KEEP, { example = "gpu.amin(gpu.ones(2, 3), 1, %s)" })

-- amax / amin(x [, axis] [, {keepdims}]): NumPy's and PyTorch's: max / min, the values only
-- (one axis given as a number passed on as a list, the form of max that computes no
-- positions)
local function values_only(fname, decl, method)
  return function(x, axis, opts)
    local o
    axis, o = red_args(fname, decl, x, axis, opts)
    return (gpu[method](x, math.type(axis) == "integer" and { axis } or axis, { keepdims = o.keepdims }))
  end
end
M.amax = values_only("amax", AMAX, "max")
M.amin = values_only("amin", AMIN, "min")

-- ptp(x [, axis] [, {keepdims}]): max - min (NumPy's; integers wrap as theirs)
function M.ptp(x, axis, opts)
  local o
  axis, o = red_args("ptp", PTP, x, axis, opts)
  if x.size == 0 then options.raise("ptp: zero-size array to reduction 'max' which has no identity") end
  local ax = math.type(axis) == "integer" and { axis } or axis          -- (a list: values only)
  local hi = gpu.max(x, ax, { keepdims = o.keepdims })
  local lo = gpu.min(x, ax, { keepdims = o.keepdims })
  return hi - lo
end

local AVERAGE = options.declare("average", {
  weights = { type = "array" }, returned = { type = "boolean", default = false },
  keepdims = { type = "boolean", default = false },
}, { example = "gpu.average(gpu.ones(2, 3), 1, %s)" })

-- average(a [, axis] [, {weights, returned, keepdims}]): NumPy's weighted mean; weights of a's
-- shape or, with one axis, 1-D along it; returned: also the sum of the weights (a's shape).
function M.average(a, axis, opts)
  local fname = "average"
  local o
  axis, o = red_args(fname, AVERAGE, a, axis, opts)
  local x = floated(a)
  local w = o.weights
  if w == nil then
    local avg = x:mean(axis, { keepdims = o.keepdims })
    if not o.returned then return avg end
    local n = avg.size > 0 and a.size // avg.size or 0             -- the count per average
    return avg, gpu.full(avg.shape, n, { dtype = avg.dtype, device = avg.device })
  end
  if w.device ~= a.device then options.argerror(fname, 3, "option 'weights' is on %s, a on %s", w.device, a.device) end
  local same = #w.shape == #a.shape
  for d = 1, math.min(#w.shape, #a.shape) do same = same and w.shape[d] == a.shape[d] end
  if not same then
    if axis == nil then
      options.argerror(fname, 3, "option 'weights' differs from a's shape %s: give an axis", options.shape_str(a.shape))
    end
    local ax = math.type(axis) == "integer" and norm_axis(fname, axis, a.ndim, 2)
    if not ax or w.ndim ~= 1 or w.shape[1] ~= a.shape[ax] then
      options.argerror(fname, 3, "option 'weights' must have a's shape or be 1-D of the axis' length")
    end
    local shape = {}
    for d = 1, a.ndim do shape[d] = d == ax and w.shape[1] or 1 end
    w = w:reshape(shape)
  end
  if not is_float(w.dtype) then w = w:astype(x.dtype) end
  local wsum = gpu.broadcast_to(w, a.shape):sum(axis, { keepdims = o.keepdims })
  if gpu.eq(wsum, 0):any():item() then options.raise("average: the weights sum to zero, can't be normalized") end
  local avg = (x * w):sum(axis, { keepdims = o.keepdims }) / wsum
  if not o.returned then return avg end
  return avg, gpu.broadcast_to(wsum:astype(avg.dtype), avg.shape):contiguous()
end

local NANPROD = options.declare("nanprod", { keepdims = KEEP.keepdims, dtype = { type = "dtype" } },
  { example = "gpu.nanprod(gpu.ones(2, 3), 1, %s)" })
local NANCUMSUM = options.declare("nancumsum", { dtype = { type = "dtype" } },
  { example = "gpu.nancumsum(gpu.ones(2, 3), 1, %s)" })
local NANCUMPROD = options.declare("nancumprod", { dtype = { type = "dtype" } },
  { example = "gpu.nancumprod(gpu.ones(2, 3), 1, %s)" })

local function nan_filled(x, v) return is_float(x.dtype) and gpu.where(gpu.isnan(x), v, x) or x end

-- nanprod(x [, axis] [, {keepdims, dtype}]): the product with NaNs taken as 1
function M.nanprod(x, axis, opts)
  local o
  axis, o = red_args("nanprod", NANPROD, x, axis, opts)
  return nan_filled(x, 1):prod(axis, { keepdims = o.keepdims, dtype = o.dtype })
end

local function scan_args(fname, decl, x, axis, opts)
  options.check_array(x, fname, 1, "x")
  if type(axis) == "table" and opts == nil and not options.is_array(axis) then axis, opts = nil, axis end
  if axis ~= nil then norm_axis(fname, axis, math.max(x.ndim, 1), 2) end
  return axis, decl:check(opts, axis == nil and 2 or 3)
end

-- nancumsum / nancumprod(x [, axis] [, {dtype}]): the scans with NaNs taken as 0 / 1 (no
-- axis: over x flattened)
function M.nancumsum(x, axis, opts)
  local o
  axis, o = scan_args("nancumsum", NANCUMSUM, x, axis, opts)
  return nan_filled(x, 0):cumsum(axis, { dtype = o.dtype })
end
function M.nancumprod(x, axis, opts)
  local o
  axis, o = scan_args("nancumprod", NANCUMPROD, x, axis, opts)
  return nan_filled(x, 1):cumprod(axis, { dtype = o.dtype })
end

local EDIFF = options.declare("ediff1d", { to_end = { type = "number|table|array" }, to_begin = { type = "number|table|array" } },
  { example = "gpu.ediff1d(gpu.ones(3), %s)" })

-- ediff1d(x [, {to_end, to_begin}]): the differences of x flattened, with to_begin's and
-- to_end's values (numbers, lists or arrays, flattened) before and after, in x's dtype
function M.ediff1d(x, opts)
  local fname = "ediff1d"
  options.check_array(x, fname, 1, "x")
  local o = EDIFF:check(opts, 2)
  local flat = x:reshape(x.size)
  local n = x.size
  local d = n > 1 and flat[{ { 2, n } }] - flat[{ { 1, n - 1 } }] or gpu.zeros(0, { dtype = x.dtype, device = x.device })
  if d.dtype ~= x.dtype then d = d:astype(x.dtype) end
  local function part(v, key)
    if v == nil then return nil end
    if type(v) == "number" then v = { v } end
    if not options.is_array(v) then
      for i = 1, #v do
        if type(v[i]) ~= "number" then options.argerror(fname, 2, "option '%s' must hold numbers", key) end
      end
      return gpu.array(v, { dtype = x.dtype, device = x.device })
    end
    if v.device ~= x.device then options.argerror(fname, 2, "option '%s' is on %s, x on %s", key, v.device, x.device) end
    return v:reshape(v.size):astype(x.dtype)
  end
  local parts = {}
  parts[#parts + 1] = part(o.to_begin, "to_begin")
  parts[#parts + 1] = d
  parts[#parts + 1] = part(o.to_end, "to_end")
  return #parts == 1 and d or gpu.concat(parts)
end

local VAR_MEAN_KEYS = {
  correction = { type = "number", min = 0 },
  unbiased = { type = "boolean" },
  keepdim = { type = "boolean", default = false },
}
local STD_MEAN = options.declare("std_mean", VAR_MEAN_KEYS, { example = "gpu.std_mean(gpu.ones(2, 3), 1, %s)" })
local VAR_MEAN = options.declare("var_mean", VAR_MEAN_KEYS, { example = "gpu.var_mean(gpu.ones(2, 3), 1, %s)" })

local function moments(fname, decl, method, x, dim, opts)
  local o
  dim, o = red_args(fname, decl, x, dim, opts)
  if not is_float(x.dtype) and gpu._dtypes[x.dtype].kind ~= "complex" then
    options.argerror(fname, 1, "x must be a float or complex array, got %s", x.dtype)
  end
  if o.correction ~= nil and o.unbiased ~= nil then
    options.argerror(fname, dim == nil and 2 or 3, "give 'correction' or 'unbiased', not both")
  end
  local ddof = o.correction or (o.unbiased == false and 0 or 1)
  return x[method](x, dim, { ddof = ddof, keepdims = o.keepdim }), x:mean(dim, { keepdims = o.keepdim })
end

-- std_mean / var_mean(x [, dim] [, {correction = 1, unbiased, keepdim}]): PyTorch's
-- (standard deviation or variance, mean), the Bessel correction by default
function M.std_mean(x, dim, opts) return moments("std_mean", STD_MEAN, "std", x, dim, opts) end
function M.var_mean(x, dim, opts) return moments("var_mean", VAR_MEAN, "var", x, dim, opts) end

local AMINMAX = options.declare("aminmax", { keepdim = { type = "boolean", default = false } },
  { example = "gpu.aminmax(gpu.ones(2, 3), 1, %s)" })

-- aminmax(x [, dim] [, {keepdim}]) -> min, max (PyTorch's; dim positional here)
function M.aminmax(x, dim, opts)
  local o
  dim, o = dim_args("aminmax", AMINMAX, x, dim, opts, nil)
  if x.size == 0 then options.argerror("aminmax", 1, "x is empty: the reduction has no identity") end
  local keep = { keepdims = o.keepdim }
  if dim and x.ndim == 0 then dim = nil end
  local axes = dim and { dim } or nil                  -- (a list: values only, one pass each)
  return gpu.min(x, axes, keep), gpu.max(x, axes, keep)
end

-- positions 1..n along axis (int64), in x's shape
local function positions(x, axis)
  local shape = {}
  for d = 1, x.ndim do shape[d] = d == axis and x.shape[d] or 1 end
  local p = (gpu.arange(x.shape[axis], { device = x.device }) + 1):reshape(shape)
  return gpu.broadcast_to(p, x.shape):contiguous()
end

-- An inclusive scan along axis by doubling (Hillis and Steele: ceil(log2 n) rounds of one
-- elementwise combine over the shifted array), for the scans with no kernel. combine(l, r)
-- takes and returns a list of arrays (the running state), l the earlier elements.
local function doubling_scan(state, axis, combine)
  local n = state[1].shape[axis]
  local s = 1
  while s < n do
    local l, r = {}, {}
    for k, v in ipairs(state) do l[k], r[k] = slice(v, axis, 1, n - s), slice(v, axis, s + 1, n) end
    local c = combine(l, r)
    for k, v in ipairs(state) do state[k] = gpu.concat({ slice(v, axis, 1, s), c[k] }, axis) end
    s = s * 2
  end
  return state
end

local CUMMAX = options.declare("cummax", {}, { example = "gpu.cummax(gpu.ones(3), 1, %s)" })
local CUMMIN = options.declare("cummin", {}, { example = "gpu.cummin(gpu.ones(3), 1, %s)" })

-- The running extreme's positions along axis: the last of equal values, and from a NaN on
-- the last NaN (PyTorch's).
local function running_extreme_positions(x, axis, larger)
  local float = is_float(x.dtype)
  local state = doubling_scan({ x, positions(x, axis) }, axis, function(l, r)
    local better = larger and gpu.ge(r[1], l[1]) or gpu.le(r[1], l[1])
    if float then better = gpu.logical_or(gpu.isnan(r[1]), better) end
    return { gpu.where(better, r[1], l[1]), gpu.where(better, r[2], l[2]) }
  end)
  return state[2]
end

local function cum_extreme(fname, decl, larger)
  return function(x, dim, opts)
    options.check_array(x, fname, 1, "x")
    if dim == nil then options.argerror(fname, 2, "dim must be an integer, got no value") end
    local o
    dim, o = dim_args(fname, decl, x, dim, opts, nil)
    if gpu._dtypes[x.dtype].kind == "complex" then options.argerror(fname, 1, "x must be real, got %s", x.dtype) end
    local xx = x.ndim == 0 and x:reshape(1) or x
    if xx.size == 0 then
      return x:copy(), gpu.zeros(x.shape, { dtype = "int64", device = x.device })
    end
    local idx = no_grad(function() return running_extreme_positions(xx:detach(), dim, larger) end)
    local v = gpu.take_along_axis(xx, idx, dim)
    if x.ndim == 0 then return v:reshape({}), idx:reshape({}) end
    return v, idx
  end
end

-- cummax / cummin(x, dim) -> values, 1-based positions (PyTorch's); differentiable (the
-- gradient goes to the positions)
M.cummax = cum_extreme("cummax", CUMMAX, true)
M.cummin = cum_extreme("cummin", CUMMIN, false)

local LOGCUMSUMEXP = options.declare("logcumsumexp", {}, { example = "gpu.logcumsumexp(gpu.ones(3), 1, %s)" })
local LN2 = math.log(2)

-- log(exp(a) + exp(b)), stable: equal arguments (the infinities too) give a + log 2
local function logaddexp(a, b)
  local m = gpu.maximum(a, b)
  return gpu.where(gpu.eq(a, b), a + LN2, m + gpu.log1p(gpu.exp(-gpu.abs(a - b))))
end

-- logcumsumexp(x, dim): log of the running sum of exp(x), PyTorch's; float arrays; by
-- doubling over logaddexp, so it is stable and differentiable
function M.logcumsumexp(x, dim, opts)
  local fname = "logcumsumexp"
  options.check_array(x, fname, 1, "x")
  if dim == nil then options.argerror(fname, 2, "dim must be an integer, got no value") end
  dim = dim_args(fname, LOGCUMSUMEXP, x, dim, opts, nil)
  check_float(fname, x)
  local xx = x.ndim == 0 and x:reshape(1) or x
  if xx.size == 0 then return x:copy() end
  local r = doubling_scan({ xx }, dim, function(l, r) return { logaddexp(l[1], r[1]) } end)[1]
  return x.ndim == 0 and r:reshape({}) or r
end

local MODE = options.declare("mode", { keepdim = { type = "boolean", default = false } },
  { example = "gpu.mode(gpu.ones(2, 3), 1, %s)" })

-- drop axis from x (unless keep)
local function squeeze_axis(x, axis, keep)
  if keep then return x end
  local shape = {}
  for d = 1, x.ndim do if d ~= axis then shape[#shape + 1] = x.shape[d] end end
  return x:reshape(shape)
end

-- mode(x [, dim = -1] [, {keepdim}]) -> values, positions: PyTorch's: the most frequent value
-- of each slice (the smallest among equally frequent ones) and the position of its last
-- occurrence. From one stable sort: each run's length, the longest run's end.
function M.mode(x, dim, opts)
  local fname = "mode"
  local o
  dim, o = dim_args(fname, MODE, x, dim, opts, -1)
  if gpu._dtypes[x.dtype].kind == "complex" then options.argerror(fname, 1, "x must be real, got %s", x.dtype) end
  local xx = x.ndim == 0 and x:reshape(1) or x
  if xx.shape[dim] == 0 then options.argerror(fname, 1, "the dim %d is empty", dim) end
  local idx = no_grad(function()
    local s, perm = xx:detach():sort(dim)
    local n = xx.shape[dim]
    local pos = positions(s, dim)
    local start = gpu.ones(pos.shape, { dtype = "bool", device = x.device })
    if n > 1 then
      local differ = gpu.ne(slice(s, dim, 2, n), slice(s, dim, 1, n - 1))
      start = gpu.concat({ slice(start, dim, 1, 1), differ }, dim)
    end
    local run_start = gpu.cummax(gpu.where(start, pos, 1), dim)
    local len = pos - run_start + 1
    local k = gpu.argmax(len, dim, { keepdims = true })          -- first longest: smallest value
    return gpu.take_along_axis(perm, k, dim)
  end)
  local v = gpu.take_along_axis(xx, idx, dim)
  if x.ndim == 0 then return v:reshape({}), idx:reshape({}) end
  return squeeze_axis(v, dim, o.keepdim), squeeze_axis(idx, dim, o.keepdim)
end

local KTH = options.declare("kthvalue", { keepdim = { type = "boolean", default = false } },
  { example = "gpu.kthvalue(gpu.ones(2, 3), 1, 1, %s)" })

-- kthvalue(x, k [, dim = -1] [, {keepdim}]) -> values, positions: the k-th smallest (1-based
-- k, PyTorch's) along dim, through one stable sort (NaN the largest)
function M.kthvalue(x, k, dim, opts)
  local fname = "kthvalue"
  options.check_array(x, fname, 1, "x")
  if math.type(k) ~= "integer" then options.argerror(fname, 2, "k must be an integer, got %s", options.type_name(k)) end
  local o
  dim, o = dim_args(fname, KTH, x, dim, opts, -1, 3)
  if gpu._dtypes[x.dtype].kind == "complex" then options.argerror(fname, 1, "x must be real, got %s", x.dtype) end
  local xx = x.ndim == 0 and x:reshape(1) or x
  local n = xx.shape[dim]
  if k < 1 or k > n then options.argerror(fname, 2, "k = %d is out of range for dim %d of size %d", k, dim, n) end
  local _, perm = no_grad(function() return xx:detach():sort(dim) end)
  local at = gpu.array({ k }, { dtype = "int64", device = x.device })
  local idx = perm:index(dim, at)
  local v = gpu.take_along_axis(xx, idx, dim)
  if x.ndim == 0 then return v:reshape({}), idx:reshape({}) end
  return squeeze_axis(v, dim, o.keepdim), squeeze_axis(idx, dim, o.keepdim)
end

local UCONSEC = options.declare("unique_consecutive", {
  return_inverse = { type = "boolean", default = false },
  return_counts = { type = "boolean", default = false },
  dim = { type = "integer" },
}, { example = "gpu.unique_consecutive(gpu.ones(3), %s)" })

-- unique_consecutive(x [, {return_inverse, return_counts, dim}]) -> values [, inverse]
-- [, counts]: PyTorch's: each run of equal consecutive elements (x flattened) or slices
-- along dim kept once; inverse (x's shape, or dim's length) 1-based
function M.unique_consecutive(x, opts)
  local fname = "unique_consecutive"
  options.check_array(x, fname, 1, "x")
  local o = UCONSEC:check(opts, 2)
  local dim = o.dim and norm_axis(fname, o.dim, math.max(x.ndim, 1), 2) or nil
  local rows, moved
  if dim then
    moved = front(x.ndim == 0 and x:reshape(1) or x, dim)
    rows = moved:reshape(moved.shape[1], -1)
  end
  local flat = rows or x:reshape(x.size)
  local n = flat.shape[1]
  local dev = x.device
  local values, inverse, counts
  if n == 0 then
    values = dim and x or flat
    inverse = gpu.zeros(dim and { 0 } or x.shape, { dtype = "int64", device = dev })
    counts = gpu.zeros(0, { dtype = "int64", device = dev })
  else
    local start = gpu.ones(1, { dtype = "bool", device = dev })
    if n > 1 then
      local differ = gpu.ne(flat[{ { 2, n } }], flat[{ { 1, n - 1 } }])
      if rows then differ = differ:reshape(n - 1, -1):any(2) end
      start = gpu.concat({ start, differ })
    end
    local at = gpu.masked_select(gpu.arange(n, { device = dev }), start)   -- 0-based run starts
    if rows then
      local shape = moved.shape
      shape[1] = at.shape[1]
      values = moved:index(1, at + 1)
      local back = {}
      for i = 2, moved.ndim do back[i <= dim and i - 1 or i] = i end
      back[dim] = 1
      values = values:permute(back):contiguous()
    else
      values = gpu.take(flat, at + 1)
    end
    if o.return_inverse then
      inverse = gpu.cumsum(start:astype("int64"))
      if not rows then inverse = inverse:reshape(x.shape) end
    end
    if o.return_counts then
      counts = gpu.concat({ at[{ { 2, at.shape[1] } }], gpu.full(1, n, { dtype = "int64", device = dev }) }) - at
    end
  end
  local out = { values }
  if o.return_inverse then out[#out + 1] = inverse end
  if o.return_counts then out[#out + 1] = counts end
  return table.unpack(out)
end

-- The norm of order p over the last axis of d (p a number >= 0 or math.huge)
local function p_norm(fname, d, p, argn)
  if type(p) ~= "number" or p ~= p or p < 0 then
    options.argerror(fname, argn, "p must be a number >= 0, got %s", tostring(p))
  end
  if p == 0 then return gpu.ne(d, 0):astype(d.dtype):sum(-1) end
  if p == math.huge then return (gpu.abs(d):max({ -1 })) end
  if p == 1 then return gpu.abs(d):sum(-1) end
  -- the root of a zero sum is taken of 1 and replaced: its gradient is 0 there, as
  -- PyTorch's (the gradient of the root itself would be 0 * inf)
  local s = p == 2 and (d * d):sum(-1) or (gpu.abs(d) ^ p):sum(-1)
  local zero = gpu.eq(s, 0)
  local root = p == 2 and gpu.sqrt(gpu.where(zero, 1, s)) or gpu.where(zero, 1, s) ^ (1 / p)
  return gpu.where(zero, 0, root)
end

local function float_pair(fname, a, b)
  options.check_array(a, fname, 1, "x1")
  options.check_array(b, fname, 2, "x2")
  check_float(fname, a)
  if not is_float(b.dtype) then options.argerror(fname, 2, "x2 must be a float array, got %s", b.dtype) end
  if a.device ~= b.device then options.argerror(fname, 2, "x2 is on %s, x1 on %s", b.device, a.device) end
end

-- cdist(x1, x2 [, p = 2]): PyTorch's: the p-norm distances between the rows of x1 (..., P, M)
-- and x2 (..., R, M), (..., P, R), batch axes broadcast; from the differences, directly
-- (PyTorch's compute_mode "donot_use_mm")
function M.cdist(x1, x2, p)
  local fname = "cdist"
  float_pair(fname, x1, x2)
  if p == nil then p = 2 end
  if x1.ndim < 2 or x2.ndim < 2 then options.argerror(fname, x1.ndim < 2 and 1 or 2, "x1 and x2 must have at least 2 axes") end
  local M1, M2 = x1.shape[x1.ndim], x2.shape[x2.ndim]
  if M1 ~= M2 then options.argerror(fname, 2, "x1 has %d columns, x2 %d", M1, M2) end
  local s1, s2 = x1.shape, x2.shape
  table.insert(s1, #s1, 1)          -- (..., P, 1, M)
  table.insert(s2, #s2 - 1, 1)      -- (..., 1, R, M)
  return p_norm(fname, x1:reshape(s1) - x2:reshape(s2), p, 3)
end

-- dist(a, b [, p = 2]): PyTorch's: the p-norm of a - b (broadcast, flattened), 0-d
function M.dist(a, b, p)
  local fname = "dist"
  float_pair(fname, a, b)
  if p == nil then p = 2 end
  local d = a - b
  return p_norm(fname, d:reshape(d.size), p, 3)
end

return M
