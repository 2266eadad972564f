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
-- 1-D a are < v (right: <= v), NaN larger than every number as the sort puts it. On the cpu
-- a binary search per element (gpu._searchsorted); elsewhere the same search run on all of
-- v at once: ceil(log2(n + 1)) rounds of one take and a compare on v's m elements, so
-- O(m log n), with no sort of a.
local function counts_below(a, v, right)
  local n, m = a.shape[1], v.shape[1]
  if m == 0 then return gpu.zeros(0, { dtype = "int64", device = v.device }) end
  if n == 0 then return gpu.zeros(m, { dtype = "int64", device = v.device }) end
  a, v = common(a, v)
  if a.device == "cpu" then return gpu._searchsorted(a, v, right) end     -- cuda: no kernel yet
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

-- ---- histogram_bin_edges, histogramdd, histogram2d -------------------------------------------

local EDGES = options.declare("histogram_bin_edges", {
  bins = { type = "integer|array|string", default = 10,
    check = function(v)
      if type(v) ~= "string" then return true end
      for _, e in ipairs({ "auto", "fd", "doane", "scott", "rice", "sturges", "sqrt" }) do if v == e then return true end end
      return false, "an integer, an array of edges or one of auto, fd, doane, scott, rice, sturges, sqrt"
    end },
  range = { type = "table" },
  weights = { type = "array" },
}, { example = "gpu.histogram_bin_edges(gpu.ones(3), %s)" })

-- The bin width an estimator gives for the n values of x (float64, 1-D) over ptp; 0: none.
local function estimated_width(name, x, ptp)
  local n = x.shape[1]
  if n == 0 then return 0 end
  local function sturges() return ptp / (math.log(n, 2) + 1) end
  local function fd()
    local q = gpu.quantile(x, { 0.25, 0.75 }):totable()
    return 2 * (q[2] - q[1]) * n ^ (-1 / 3)
  end
  if name == "sqrt" then return ptp / math.sqrt(n)
  elseif name == "sturges" then return sturges()
  elseif name == "rice" then return ptp / (2 * n ^ (1 / 3))
  elseif name == "scott" then return (24 * math.pi ^ 0.5 / n) ^ (1 / 3) * x:std():item()
  elseif name == "fd" then return fd()
  elseif name == "doane" then                                 -- Sturges corrected by the skew
    if n <= 2 then return 0 end
    local sigma = x:std():item()
    if sigma <= 0 then return 0 end
    local g1 = (((x - x:mean()) / sigma) ^ 3):mean():item()
    local sg1 = math.sqrt(6 * (n - 2) / ((n + 1) * (n + 3)))
    return ptp / (1 + math.log(n, 2) + math.log(1 + math.abs(g1) / sg1, 2))
  end
  local w = fd()                                               -- auto
  return w > 0 and math.min(w, sturges()) or sturges()
end

-- histogram_bin_edges(a [, {bins = 10, range = {lo, hi}, weights}]): NumPy's: the edges
-- histogram would use; bins a count, the edges themselves, or an estimator's name (auto fd
-- doane scott rice sturges sqrt: equal bins of the width it estimates from the values in range).
function M.histogram_bin_edges(a, opts)
  local fname = "histogram_bin_edges"
  options.check_array(a, fname, 1, "a")
  if is_complex(a.dtype) then options.argerror(fname, 1, "a must be real, got %s", a.dtype) end
  local o = EDGES:check(opts, 2)
  if o.weights and o.weights.size ~= a.size then
    options.argerror(fname, 2, "option 'weights' must have a's %d elements", a.size)
  end
  local x = a.dtype == "bool" and a:astype("uint8") or a
  if options.is_array(o.bins) then
    local e = o.bins
    if e.ndim ~= 1 or e.shape[1] < 2 then options.argerror(fname, 2, "option 'bins' as edges must be 1-D with at least 2") end
    local nb = e.shape[1] - 1
    if gpu.lt(e[{ { 2, nb + 1 } }], e[{ { 1, nb } }]):any():item() then
      options.argerror(fname, 2, "option 'bins' must increase monotonically")
    end
    return e
  end
  if type(o.bins) == "number" then
    if o.bins < 1 then options.argerror(fname, 2, "option 'bins' must be >= 1, got %d", o.bins) end
    return uniform_edges(fname, x, o.bins, o.range)
  end
  if o.weights then
    options.argerror(fname, 2, "bins = '%s': estimating the bins of weighted data is not supported (NumPy's too)", o.bins)
  end
  local e = uniform_edges(fname, x, 1, o.range)
  local lo, hi = e[1], e[2]
  local v = x:reshape(x.size):astype("float64")
  if o.range then v = gpu.masked_select(v, gpu.logical_and(v:ge(lo), v:le(hi))) end
  local width = estimated_width(o.bins, v, v.shape[1] > 0 and (v:max() - v:min()):item() or 0)
  local nb = width > 0 and math.max(math.ceil((hi - lo) / width), 1) or 1
  return uniform_edges(fname, x, nb, o.range)
end

local HISTDD_KEYS = {
  bins = { type = "integer|array|table", default = 10 },
  range = { type = "table" },
  density = { type = "boolean", default = false },
  weights = { type = "array" },
}
local HISTDD = options.declare("histogramdd", HISTDD_KEYS, { example = "gpu.histogramdd(gpu.ones(3, 2), %s)" })
local HIST2D = options.declare("histogram2d", HISTDD_KEYS, { example = "gpu.histogram2d(gpu.ones(3), gpu.ones(3), %s)" })

-- The D-dimensional histogram of the columns cols (1-D, n each): float64 counts (D axes)
-- and the edges (a list), as NumPy's histogramdd: per axis a search of the edges (the last
-- edge inside the last bin), the D bin numbers as one flat position, one bincount.
local function histdd(fname, cols, o, argn)
  local D, n = #cols, cols[1].shape[1]
  local dev = cols[1].device
  local bins, range = o.bins, o.range
  if type(bins) == "table" and not options.is_array(bins) and #bins ~= D then
    options.argerror(fname, argn, "option 'bins' must have one entry per dimension (%d), got %d", D, #bins)
  end
  if range ~= nil and #range ~= D then
    options.argerror(fname, argn, "option 'range' must have one {lo, hi} per dimension (%d), got %d", D, #range)
  end
  local w = o.weights
  if w and w.size ~= n then options.argerror(fname, argn, "option 'weights' must have %d elements, got %d", n, w.size) end
  local edges, flat, stride, shape = {}, nil, 1, {}
  local idx = {}
  for d = 1, D do
    local b = (type(bins) == "table" and not options.is_array(bins)) and bins[d] or bins
    local x = cols[d]:astype("float64")
    local e
    if options.is_array(b) then
      if b.ndim ~= 1 or b.shape[1] < 2 then
        options.argerror(fname, argn, "option 'bins': the edges of dimension %d must be 1-D with at least 2", d)
      end
      e = b:astype("float64")
      local nb = e.shape[1] - 1
      if gpu.lt(e[{ { 2, nb + 1 } }], e[{ { 1, nb } }]):any():item() then
        options.argerror(fname, argn, "option 'bins': the edges of dimension %d must increase monotonically", d)
      end
    elseif math.type(b) == "integer" then
      if b < 1 then options.argerror(fname, argn, "option 'bins' must be >= 1, got %d", b) end
      local r = range and range[d]
      if r ~= nil and type(r) ~= "table" then options.argerror(fname, argn, "option 'range' must hold {lo, hi} pairs") end
      e = uniform_edges(fname, x, b, r)
    else
      options.argerror(fname, argn, "option 'bins': dimension %d needs an integer or an array of edges, got %s", d, options.type_name(b))
    end
    edges[d] = e
    local nb = e.shape[1] - 1
    local k = gpu.searchsorted(e, x, { side = "right" }) - 1     -- NumPy's count: 0 below, nb + 1 above
    k = k - gpu.eq(x, e[nb + 1]):astype("int64")               -- the last edge: in the last bin
    idx[d], shape[d] = k, nb + 2
  end
  for d = D, 1, -1 do
    flat = flat and flat + idx[d] * stride or idx[d] * stride
    stride = stride * shape[d]
  end
  local counts = M.bincount(flat, { minlength = stride, weights = w and w:reshape(n) or nil }):astype("float64")
  counts = counts[{ { 1, stride } }]:reshape(shape)
  local key = {}
  for d = 1, D do key[d] = { 2, shape[d] - 1 } end
  local h = counts[key]:contiguous()
  if o.density then
    local dens = h / h:sum()
    for d = 1, D do
      local e, nb = edges[d], shape[d] - 2
      local wshape = {}
      for j = 1, D do wshape[j] = j == d and nb or 1 end
      dens = dens / (e[{ { 2, nb + 1 } }] - e[{ { 1, nb } }]):reshape(wshape)
    end
    h = dens
  end
  return h, edges
end

-- histogramdd(sample [, {bins = 10, range, density, weights}]) -> hist, edges: NumPy's;
-- sample an (N, D) array or a list of D arrays of N; bins a count, a list of counts or edges
-- per dimension; range a list of {lo, hi}; hist float64 (D axes), edges a list of arrays
function M.histogramdd(sample, opts)
  local fname = "histogramdd"
  local cols = {}
  if options.is_array(sample) then
    if sample.ndim == 1 then cols[1] = sample
    elseif sample.ndim == 2 then
      if sample.shape[2] > gpu._max_dims then
        options.argerror(fname, 1, "sample has %d dimensions; a histogram has at most %d axes", sample.shape[2], gpu._max_dims)
      end
      for d = 1, sample.shape[2] do cols[d] = sample[{ ":", d }] end
    else options.argerror(fname, 1, "sample must be (N, D), got %d axes", sample.ndim) end
  elseif type(sample) == "table" then
    if #sample > gpu._max_dims then
      options.argerror(fname, 1, "sample has %d dimensions; a histogram has at most %d axes", #sample, gpu._max_dims)
    end
    for d, c in ipairs(sample) do
      options.check_array(c, fname, 1, ("sample[%d]"):format(d))
      cols[d] = c:reshape(c.size)
    end
  else
    options.argerror(fname, 1, "sample must be an (N, D) array or a list of arrays, got %s", options.type_name(sample))
  end
  if #cols == 0 then options.argerror(fname, 1, "sample has no dimensions") end
  if #cols > gpu._max_dims then
    options.argerror(fname, 1, "sample has %d dimensions; a histogram has at most %d axes", #cols, gpu._max_dims)
  end
  for d, c in ipairs(cols) do
    if is_complex(c.dtype) then options.argerror(fname, 1, "sample must be real, got %s", c.dtype) end
    if c.shape[1] ~= cols[1].shape[1] then options.argerror(fname, 1, "sample[%d] has %d values, sample[1] %d", d, c.shape[1], cols[1].shape[1]) end
    if c.device ~= cols[1].device then options.argerror(fname, 1, "sample[%d] is on %s, sample[1] on %s", d, c.device, cols[1].device) end
  end
  return histdd(fname, cols, HISTDD:check(opts, 2), 2)
end

-- histogram2d(x, y [, {bins = 10, range, density, weights}]) -> hist, xedges, yedges: NumPy's;
-- bins a count, {nx, ny}, one array of edges for both, or {xedges, yedges}
function M.histogram2d(x, y, opts)
  local fname = "histogram2d"
  options.check_array(x, fname, 1, "x")
  options.check_array(y, fname, 2, "y")
  if x.ndim ~= 1 or y.ndim ~= 1 or x.shape[1] ~= y.shape[1] then
    options.argerror(fname, 2, "x and y must be 1-D of one length, got %s and %s", options.shape_str(x.shape), options.shape_str(y.shape))
  end
  if x.device ~= y.device then options.argerror(fname, 2, "y is on %s, x on %s", y.device, x.device) end
  for i, v in ipairs({ x, y }) do
    if is_complex(v.dtype) then options.argerror(fname, i, "%s must be real, got %s", i == 1 and "x" or "y", v.dtype) end
  end
  local o = HIST2D:check(opts, 3)
  if options.is_array(o.bins) then o.bins = { o.bins, o.bins } end
  local h, e = histdd(fname, { x, y }, o, 3)
  return h, e[1], e[2]
end

return M
