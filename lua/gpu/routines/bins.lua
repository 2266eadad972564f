-- gpu.routines.bins — searchsorted, digitize, bincount, histogram: a vectorised binary
-- search (take and compare, log2 n rounds), arithmetic bins and index_put_'s accumulation,
-- so both devices run them with no element loop in Lua. Not differentiable (the results
-- are counts and positions).
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"

local M = {}

local function arange(n, dev) return gpu.arange(n, { device = dev }) end

-- integer or bool (the kinds bincount counts, searched as int64)
local function is_int(dtype)
  local kind = gpu._dtypes[dtype].kind
  return kind == "int" or kind == "uint" or kind == "bool"
end
local function is_complex(dtype) return gpu._dtypes[dtype].kind == "complex" end

-- One dtype for comparing a and v: theirs when they agree, int64 for two integer dtypes,
-- else float64 (complex numbers have no order here).
local function common(a, v)
  if is_complex(a.dtype) or is_complex(v.dtype) then
    error(("complex arrays are not ordered (got %s and %s)"):format(a.dtype, v.dtype), 0)
  end
  if a.dtype == v.dtype then return a, v end
  local t = (is_int(a.dtype) and is_int(v.dtype)) and "int64" or "float64"
  return a:astype(t), v:astype(t)
end

-- counts_below(a, v, right): for each element of the 1-D v, how many elements of the sorted
-- 1-D a are < v (right: <= v), NaN larger than every number as the sort puts it. A binary
-- search run on all of v at once: ceil(log2(n + 1)) rounds of one take and a compare on
-- v's m elements, so O(m log n), with no sort of a.
local function counts_below(a, v, right)
  local n, m = a.shape[1], v.shape[1]
  if m == 0 then return gpu.zeros(0, { dtype = "int64", device = v.device }) end
  if n == 0 then return gpu.zeros(m, { dtype = "int64", device = v.device }) end
  a, v = common(a, v)
  local float = basic.is_float(a.dtype)
  local vnan = float and gpu.isnan(v) or nil
  local lo = gpu.zeros(m, { dtype = "int64", device = v.device })
  local hi = gpu.full(m, n, { dtype = "int64", device = v.device })
  local rounds = 0
  while (1 << rounds) <= n do rounds = rounds + 1 end
  for _ = 1, rounds do
    local open = gpu.lt(lo, hi)
    local mid = gpu.floordiv(lo + hi, 2)
    local am = gpu.take(a, gpu.minimum(mid, n - 1) + 1)
    local before                                            -- a[mid] goes before v
    if right then
      before = gpu.le(am, v)
      if float then before = gpu.logical_or(gpu.logical_and(before, gpu.logical_not(gpu.isnan(am))), vnan) end
    else
      before = gpu.lt(am, v)
      if float then before = gpu.logical_and(gpu.logical_or(before, vnan), gpu.logical_not(gpu.isnan(am))) end
    end
    local up = gpu.logical_and(open, before)
    local down = gpu.logical_and(open, gpu.logical_not(before))
    lo = gpu.where(up, mid + 1, lo)
    hi = gpu.where(down, mid, hi)
  end
  return lo
end

local SEARCH = options.declare("searchsorted", {
  side = { type = "string", default = "left", choices = { "left", "right" } },
  sorter = { type = "table", unsupported = "sort a first, or use gpu.take(a, sorter)" },
}, { example = "gpu.searchsorted(gpu.arange(3), gpu.ones(2), %s)" })

-- searchsorted(a, v [, {side = "left"}]): the 1-based insertion positions (NumPy's + 1) of v
-- in the sorted 1-D a; v a number gives a Lua integer, an array an int64 array of its shape.
function M.searchsorted(a, v, opts)
  local fname = "searchsorted"
  options.check_array(a, fname, 1, "a")
  local o = SEARCH:check(opts, 3)
  if a.ndim ~= 1 then options.argerror(fname, 1, "a must be 1-D, got %d axes", a.ndim) end
  local number = type(v) == "number"
  if number then v = gpu.full({ 1 }, v, { dtype = basic.is_float(a.dtype) and a.dtype or "float64", device = a.device })
  else options.check_array(v, fname, 2, "v") end
  if v.device ~= a.device then options.argerror(fname, 2, "v is on %s, a on %s", v.device, a.device) end
  local r = counts_below(a, v:reshape(v.size), o.side == "right") + 1
  if number then return r:item() end
  return r:reshape(v.shape)
end

local DIGITIZE = options.declare("digitize", { right = { type = "boolean", default = false } },
  { example = "gpu.digitize(gpu.ones(2), gpu.arange(3), %s)" })

-- digitize(x, bins [, {right = false}]): NumPy's values unchanged: for increasing bins the
-- number of edges <= x (right: < x), i.e. the 1-based index of x's bin's left edge, 0 below
-- the first edge; decreasing bins count from the other end, as NumPy.
function M.digitize(x, bins, opts)
  local fname = "digitize"
  options.check_array(x, fname, 1, "x")
  options.check_array(bins, fname, 2, "bins")
  local o = DIGITIZE:check(opts, 3)
  if bins.ndim ~= 1 then options.argerror(fname, 2, "bins must be 1-D, got %d axes", bins.ndim) end
  local n, flat = bins.shape[1], x:reshape(x.size)
  local r
  if n >= 2 and bins[1] > bins[n] then
    r = n - counts_below(bins:flip(), flat, o.right == false)    -- decreasing: mirrored
  else
    r = counts_below(bins, flat, not o.right)
  end
  return r:reshape(x.shape)
end

local BINCOUNT = options.declare("bincount", {
  minlength = { type = "integer", default = 0, min = 0 },
  weights = { type = "array" },
}, { example = "gpu.bincount(gpu.arange(3), %s)" })

-- bincount(x [, {minlength = 0, weights}]): element k of the result counts (or sums the
-- weights of) the value k - 1 of the non-negative integer 1-D x, as NumPy: int64 counts,
-- float64 sums.
function M.bincount(x, opts)
  local fname = "bincount"
  options.check_array(x, fname, 1, "x")
  local o = BINCOUNT:check(opts, 2)
  if x.ndim ~= 1 then options.argerror(fname, 1, "x must be 1-D, got %d axes", x.ndim) end
  if not is_int(x.dtype) then options.argerror(fname, 1, "x must be an integer array, got %s", x.dtype) end
  if x.dtype == "bool" then x = x:astype("uint8") end         -- NumPy counts false and true
  local w = o.weights
  if w and (w.ndim ~= 1 or w.shape[1] ~= x.shape[1]) then
    options.argerror(fname, 2, "option 'weights' must have x's shape (%d), got %s", x.shape[1], options.shape_str(w.shape))
  end
  local len = o.minlength
  if x.shape[1] > 0 then
    if x:min():item() < 0 then options.argerror(fname, 1, "x has negative values") end
    len = math.max(len, math.tointeger(x:max():item()) + 1)
  end
  if x.device == "cpu" then                   -- one pass (cuda: no histcounts kernel yet)
    return gpu.histcounts(x, len, { weights = w })
  end
  local out = gpu.zeros(len, { dtype = w and "float64" or "int64", device = x.device })
  if x.shape[1] > 0 then
    local vals = w and w:astype("float64") or gpu.ones(x.shape[1], { dtype = "int64", device = x.device })
    gpu.no_grad(function() out:index_put_(1, x:astype("int64") + 1, vals, { accumulate = true }) end)
  end
  return out
end

local HIST = options.declare("histogram", {
  bins = { type = "integer|array", default = 10 },
  range = { type = "table" },
  density = { type = "boolean", default = false },
  weights = { type = "array" },
}, { example = "gpu.histogram(gpu.ones(3), %s)" })

local function float_dtype(x) return basic.is_float(x.dtype) and x.dtype or "float64" end

-- The edges of `bins` equal bins over range (or x's min and max; an empty range widened
-- by 0.5 each way, as NumPy), in x's float dtype.
local function uniform_edges(fname, x, bins, range)
  local lo, hi
  if range then
    lo, hi = range[1], range[2]
    if type(lo) ~= "number" or type(hi) ~= "number" or #range ~= 2 then
      options.argerror(fname, 2, "option 'range' must be {lo, hi}")
    end
    if lo > hi then options.argerror(fname, 2, "option 'range': max must be larger than min") end
  elseif x.size == 0 then
    lo, hi = 0, 1
  else
    lo, hi = x:min():item(), x:max():item()
  end
  if lo ~= lo or hi ~= hi or lo == math.huge or hi == math.huge or lo == -math.huge or hi == -math.huge then
    options.raise("%s: the range [%s, %s] is not finite", fname, tostring(lo), tostring(hi))
  end
  if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
  return gpu.linspace(lo, hi, bins + 1, { dtype = float_dtype(x), device = x.device })
end

-- The 0-based bin of each value among nb equal bins (edges e), as NumPy computes it: from
-- the scaled offset, then moved by one where rounding put it beside the edge it crosses.
local function uniform_bin(e, v, nb)
  local lo, hi = e[1], e[nb + 1]
  local k = gpu.floor((v - lo) * (nb / (hi - lo))):clip(0, nb - 1):astype("int64")
  k = k - gpu.lt(v, gpu.take(e, k + 1)):astype("int64")
  k = k:clip(0, nb - 1)
  local up = gpu.logical_and(gpu.ge(v, gpu.take(e, k + 2)), gpu.ne(k, nb - 1))
  return k + up:astype("int64")
end

-- histogram(x [, {bins = 10, range = {lo, hi}, density, weights}]) -> counts, edges: NumPy's
-- (every bin half-open but the last; values outside the range are left out; bins an array
-- of increasing edges). counts int64, or float64 with weights or density.
function M.histogram(x, opts)
  local fname = "histogram"
  options.check_array(x, fname, 1, "x")
  if is_complex(x.dtype) then      -- NumPy bins the real parts (with a warning)
    options.argerror(fname, 1, "x must be real, got %s (bin x.real)", x.dtype)
  end
  if x.dtype == "bool" then x = x:astype("uint8") end         -- NumPy bins bools as uint8
  local o = HIST:check(opts, 2)
  local edges
  if options.is_array(o.bins) then
    edges = o.bins
    if edges.ndim ~= 1 or edges.shape[1] < 2 then options.argerror(fname, 2, "option 'bins' as edges must be 1-D with at least 2") end
  else
    if o.bins < 1 then options.argerror(fname, 2, "option 'bins' must be >= 1, got %d", o.bins) end
    edges = uniform_edges(fname, x, o.bins, o.range)
  end
  local nb = edges.shape[1] - 1
  local flat = x:reshape(x.size)
  local w = o.weights
  if w and w.size ~= x.size then options.argerror(fname, 2, "option 'weights' must have x's %d elements", x.size) end
  if options.is_array(o.bins) and gpu.lt(edges[{ { 2, nb + 1 } }], edges[{ { 1, nb } }]):any():item() then
    options.argerror(fname, 2, "option 'bins' must increase monotonically")
  end
  if x.device == "cpu" then                   -- one pass (cuda: no histcounts kernel yet)
    local counts = gpu.histcounts(flat, edges, { weights = w, uniform = not options.is_array(o.bins) })
    if o.density then
      local e64 = edges:astype("float64")
      local widths = e64[{ { 2, nb + 1 } }] - e64[{ { 1, nb } }]
      counts = counts:astype("float64") / widths / counts:sum():astype("float64")
    end
    return counts, edges
  end
  -- bin k (0-based) of v: edges <= v, less one; v equal to the last edge is in the last bin
  local e64, f64 = edges:astype("float64"), flat:astype("float64")
  local inside = gpu.logical_and(f64:ge(e64[1]), f64:le(e64[nb + 1]))
  local k
  if options.is_array(o.bins) then
    k = counts_below(e64, f64, true) - 1                       -- a search: any edges
  else
    k = uniform_bin(e64, f64, nb)                              -- arithmetic: equal bins
  end
  k = gpu.minimum(k, nb - 1)
  local keep = gpu.masked_select(k, inside)
  local counts = M.bincount(keep, { minlength = nb,
    weights = w and gpu.masked_select(w:reshape(w.size), inside) or nil })
  counts = counts[{ { 1, nb } }]
  if o.density then
    local widths = e64[{ { 2, nb + 1 } }] - e64[{ { 1, nb } }]
    counts = counts:astype("float64") / widths / counts:sum():astype("float64")
  end
  return counts, edges
end

return M
