-- gpu.routines.sets — unique, nonzero, argwhere, count_nonzero, flatnonzero: over the
-- existing (stable) sort, masked_select and cumsum, so both devices run them with no
-- element loop in Lua. Positions are 1-based.
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"

local M = {}

local function arange(n, dev) return gpu.arange(n, { device = dev }) end

-- ---- nonzero and friends -----------------------------------------------------------------

-- The 0-based flat positions of x's non-zero elements (NaN counts as non-zero, as NumPy).
local function flat_positions(x)
  local mask = x:astype("bool"):reshape(x.size)
  return gpu.masked_select(arange(x.size, x.device), mask)
end

-- nonzero(x): a table of int64 arrays, one per axis, the 1-based positions of the non-zero
-- elements in row-major order (a 0-d x is taken as 1-D, as NumPy 1's deprecated rule).
function M.nonzero(x)
  options.check_array(x, "nonzero", 1, "x")
  local flat = flat_positions(x)
  local shape = x.ndim == 0 and { 1 } or x.shape
  local out, stride = {}, 1
  for k = #shape, 1, -1 do
    local q = stride == 1 and flat or gpu.floordiv(flat, stride)
    out[k] = (k == 1 and q or gpu.mod(q, shape[k])) + 1
    stride = stride * shape[k]
  end
  return out
end

-- argwhere(x): (N, ndim) int64, the rows nonzero gives (1-based)
function M.argwhere(x)
  options.check_array(x, "argwhere", 1, "x")
  if x.ndim == 0 then
    local n = x:astype("bool"):item() and 1 or 0
    return gpu.zeros({ n, 0 }, { dtype = "int64", device = x.device })
  end
  return gpu.stack(M.nonzero(x), 2)
end

-- flatnonzero(x): the 1-based positions in x flattened
function M.flatnonzero(x)
  options.check_array(x, "flatnonzero", 1, "x")
  return flat_positions(x) + 1
end

local COUNT = options.declare("count_nonzero", { keepdims = { type = "boolean", default = false } },
  { example = "gpu.count_nonzero(gpu.ones(2, 3), 1, %s)" })

-- count_nonzero(x [, axis] [, {keepdims}]): int64 counts (a 0-d array without an axis)
function M.count_nonzero(x, axis, opts)
  options.check_array(x, "count_nonzero", 1, "x")
  if type(axis) == "table" and opts == nil and next(axis) ~= nil and math.type(next(axis)) ~= "integer" then
    axis, opts = nil, axis
  end
  local o = COUNT:check(opts, axis == nil and 2 or 3)
  return x:astype("bool"):sum(axis, { keepdims = o.keepdims })
end

-- ---- unique -----------------------------------------------------------------------------------

local UNIQUE = options.declare("unique", {
  return_index = { type = "boolean", default = false },
  return_inverse = { type = "boolean", default = false },
  return_counts = { type = "boolean", default = false },
  axis = { type = "integer" },
}, { example = "gpu.unique(gpu.ones(3), %s)" })

-- The inverse of a permutation p (1-based): q with q[p[i]] = i.
local function invert(p) return p:argsort() end

-- first[i]: whether sorted element (or row) i starts a new value; n >= 1
local function starts(sorted, rows)
  local n = sorted.shape[1]
  local head = gpu.ones(1, { dtype = "bool", device = sorted.device })
  if n == 1 then return head end
  local a, b = sorted[{ { 2, n } }], sorted[{ { 1, n - 1 } }]
  local differ = gpu.ne(a, b)
  -- NaNs are one value (NumPy's equal_nan); sorted, they are last, so a slice of values
  -- has none when its last element is not NaN
  local last = not rows and sorted[n]
  if basic.is_float(sorted.dtype) and (rows or last ~= last) then
    differ = gpu.logical_and(differ, gpu.logical_not(gpu.logical_and(gpu.isnan(a), gpu.isnan(b))))
  end
  if rows then differ = differ:reshape(n - 1, -1):any(2) end
  return gpu.concat({ head, differ })
end

-- Sorts the rows of a 2-D x lexicographically (stable argsorts, last column first).
local function row_order(x)
  local n, m = x.shape[1], x.shape[2]
  local perm = arange(n, x.device) + 1
  for j = m, 1, -1 do
    local col = gpu.take(x[{ ":", j }], perm)
    perm = gpu.take(perm, col:argsort())
  end
  return perm
end

-- unique(x [, {return_index, return_inverse, return_counts, axis}]): the sorted distinct
-- values (NaN once, last), and as NumPy the 1-based first positions, the positions into the
-- result that rebuild x, and the counts, in that order after the values.
function M.unique(x, opts)
  local fname = "unique"
  options.check_array(x, fname, 1, "x")
  local o = UNIQUE:check(opts, 2)
  local axis, rows, moved
  if o.axis then
    if x.ndim == 0 then options.argerror(fname, 2, "option 'axis': x is 0-d") end
    axis = basic.norm_axis(fname, o.axis, x.ndim, 2)
    local perm = { axis }
    for i = 1, x.ndim do if i ~= axis then perm[#perm + 1] = i end end
    moved = x:permute(perm)
    rows = moved:reshape(x.shape[axis], -1)
  end
  local flat = rows or x:reshape(x.size)
  local n = flat.shape[1]
  local values, index, inverse, counts
  if n == 0 then
    values = rows and moved or flat
    local empty = gpu.zeros(0, { dtype = "int64", device = x.device })
    index, inverse, counts = empty, empty, empty
  else
    -- the permutation only when a result needs it (a sort alone is cheaper)
    local need_perm = rows or o.return_index or o.return_inverse
    local perm = need_perm and (rows and row_order(flat) or flat:argsort()) or nil
    local sorted = not need_perm and flat:sort() or (rows and flat:index(1, perm) or gpu.take(flat, perm))
    local first = starts(sorted, rows ~= nil)
    local plain = not (rows or o.return_index or o.return_inverse or o.return_counts)
    local at = not plain and gpu.masked_select(arange(n, x.device), first) or nil   -- 0-based starts
    if plain then
      values = gpu.masked_select(sorted, first)
    elseif rows then
      local shape = moved.shape
      shape[1] = at.shape[1]
      values = moved:index(1, gpu.take(perm, at + 1)):reshape(shape)
      local back = {}
      for i = 2, x.ndim do back[i <= axis and i - 1 or i] = i end
      back[axis] = 1
      values = values:permute(back):contiguous()
    else
      values = gpu.take(sorted, at + 1)
    end
    if o.return_index then index = gpu.take(perm, at + 1) end
    if o.return_inverse then inverse = gpu.take(gpu.cumsum(first), invert(perm)) end
    if o.return_counts then
      counts = gpu.concat({ at[{ { 2, at.shape[1] } }], gpu.full(1, n, { dtype = "int64", device = x.device }) }) - at
    end
  end
  local out = { values }
  if o.return_index then out[#out + 1] = index end
  if o.return_inverse then
    out[#out + 1] = inverse                 -- 1-D, over x flattened (NumPy 1's shape)
  end
  if o.return_counts then out[#out + 1] = counts end
  return table.unpack(out)
end

-- ---- NumPy 2's unique_values, unique_counts, unique_inverse ---------------------------------

-- The sorted x flattened, its permutation (when asked) and where each distinct value starts
-- (NaNs each distinct, NumPy 2's equal_nan = False in these three).
local function runs(fname, x, need_perm)
  options.check_array(x, fname, 1, "x")
  local flat = x:reshape(x.size)
  local sorted, perm
  if need_perm then sorted, perm = flat:sort(1) else sorted = flat:sort() end
  local n = x.size
  local first = gpu.ones(math.min(n, 1), { dtype = "bool", device = x.device })
  if n > 1 then first = gpu.concat({ first, gpu.ne(sorted[{ { 2, n } }], sorted[{ { 1, n - 1 } }]) }) end
  return sorted, perm, first
end

-- unique_values(x): the distinct values of x flattened, sorted (NaNs not merged)
function M.unique_values(x)
  local sorted, _, first = runs("unique_values", x, false)
  return gpu.masked_select(sorted, first)
end

-- unique_counts(x) -> values, counts (int64)
function M.unique_counts(x)
  local sorted, _, first = runs("unique_counts", x, false)
  local n = x.size
  local at = gpu.masked_select(arange(n, x.device), first)
  if n == 0 then return sorted, at end
  local counts = gpu.concat({ at[{ { 2, at.shape[1] } }], gpu.full(1, n, { dtype = "int64", device = x.device }) }) - at
  return gpu.masked_select(sorted, first), counts
end

-- unique_inverse(x) -> values, inverse: the 1-based positions into values that rebuild x, of
-- x's shape (NumPy 2)
function M.unique_inverse(x)
  local sorted, perm, first = runs("unique_inverse", x, true)
  local inverse = x.size == 0 and gpu.zeros(x.shape, { dtype = "int64", device = x.device })
    or gpu.take(gpu.cumsum(first), invert(perm)):reshape(x.shape)
  return gpu.masked_select(sorted, first), inverse
end

-- ---- isin and the set operations of 1-D arrays -----------------------------------------------

local function real_arg(fname, v, argn, what)
  options.check_array(v, fname, argn, what)
  if gpu._dtypes[v.dtype].kind == "complex" then
    options.argerror(fname, argn, "%s must be real (complex numbers have no order here), got %s", what, v.dtype)
  end
end

local function same_device(fname, a, b)
  if a.device ~= b.device then options.argerror(fname, 2, "the arrays are on %s and %s", a.device, b.device) end
end

local function flat(x) return x:reshape(x.size) end

local ISIN = options.declare("isin", {
  assume_unique = { type = "boolean", default = false },
  invert = { type = "boolean", default = false },
  kind = { type = "string", choices = { "sort", "table" } },
}, { example = "gpu.isin(gpu.ones(3), gpu.ones(2), %s)" })
local IN1D = options.declare("in1d", {
  assume_unique = { type = "boolean", default = false },
  invert = { type = "boolean", default = false },
}, { example = "gpu.in1d(gpu.ones(3), gpu.ones(2), %s)" })

-- integer dtypes whose values int64 holds: those a lookup table can take
local TABLE_DTYPES = { bool = true, int8 = true, uint8 = true, int16 = true, uint16 = true, int32 = true,
  uint32 = true, int64 = true }

local MAX_TABLE = 1 << 27        -- the largest lookup table (bytes): a larger range sorts
local LIMIT = 1 << 62

-- For each element of the 1-D v: whether the 1-D t holds it. Integers spanning a range no
-- larger than 6 (n + m) (NumPy's rule for its "table" kind): a lookup table of that range,
-- one scatter and one take; else the sort-merge: t's distinct values and v sorted together
-- (t's first among equals, the sort being stable), an element of v is in t when the first of
-- its run of equal values came from t (NaN equals nothing).
local function contains(t, v)
  local n, m, dev = v.shape[1], t.shape[1], v.device
  if n == 0 or m == 0 then return gpu.zeros(n, { dtype = "bool", device = dev }) end
  if TABLE_DTYPES[t.dtype] and TABLE_DTYPES[v.dtype] then
    local t64 = t.dtype == "int64" and t or t:astype("int64")
    local lo, hi = t64:min():item(), t64:max():item()
    if lo >= -LIMIT and hi <= LIMIT and hi - lo < 6 * (n + m) and hi - lo < MAX_TABLE then
      local v64 = v.dtype == "int64" and v or v:astype("int64")
      local vlo, vhi = v64:min():item(), v64:max():item()
      local ulo, uhi = math.min(lo, vlo), math.max(hi, vhi)
      local span = uhi - ulo                                  -- (wraps negative only at 2^63)
      if ulo >= -LIMIT and uhi <= LIMIT and span >= 0 and span < 6 * (n + m) and span < MAX_TABLE then
        -- v's values in the table's range too: slot k + 1 - ulo holds value k, no clipping
        local table_ = gpu.zeros(uhi - ulo + 1, { dtype = "bool", device = dev })
        table_:index_put_(1, t64 - (ulo - 1), true)
        return gpu.take(table_, v64 - (ulo - 1))
      end
      -- slot k + 2 - lo holds value k; slots 1 and hi - lo + 3 (false) take every value outside,
      -- clipped there (v - (lo - 2) cannot wrap into the table when |lo| <= 2^62)
      local slots = hi - lo + 3
      local table_ = gpu.zeros(slots, { dtype = "bool", device = dev })
      table_:index_put_(1, t64 - (lo - 2), true)
      return gpu.take(table_, (v64 - (lo - 2)):clip(1, slots))
    end
  end
  local u = M.unique(t)
  local all = gpu.concat({ u, v })
  local sorted, perm = all:sort(1)
  local k = all.shape[1]
  local start = gpu.ones(1, { dtype = "bool", device = dev })
  if k > 1 then start = gpu.concat({ start, gpu.ne(sorted[{ { 2, k } }], sorted[{ { 1, k - 1 } }]) }) end
  local from_t = perm:le(u.shape[1])
  local run = gpu.cumsum(start)                                   -- 1-based run of each
  local found = gpu.take(gpu.masked_select(from_t, start), run)   -- its run starts in t
  local back = gpu.zeros(k, { dtype = "bool", device = dev })
  back:index_put_(1, perm, found)
  return back[{ { u.shape[1] + 1, k } }]
end

local function isin(fname, decl, element, test, opts, names)
  real_arg(fname, element, 1, names and names[1] or "element")
  real_arg(fname, test, 2, names and names[2] or "test_elements")
  same_device(fname, element, test)
  local o = decl:check(opts, 3)
  local r = contains(flat(test), flat(element))
  if o.invert then r = gpu.logical_not(r) end
  return r, o
end

-- isin(element, test_elements [, {assume_unique, invert, kind}]): bool of element's shape,
-- whether each element is in test_elements (NumPy's; also torch.isin); kind "table" or
-- "sort" is accepted and the choice made as contains does (assume_unique changes nothing).
function M.isin(element, test_elements, opts)
  local r = isin("isin", ISIN, element, test_elements, opts)
  return r:reshape(element.shape)
end

-- in1d(ar1, ar2 [, {assume_unique, invert}]): isin of ar1 flattened (1-D)
function M.in1d(ar1, ar2, opts)
  return (isin("in1d", IN1D, ar1, ar2, opts, { "ar1", "ar2" }))
end

local INTERSECT = options.declare("intersect1d", {
  assume_unique = { type = "boolean", default = false },
  return_indices = { type = "boolean", default = false },
}, { example = "gpu.intersect1d(gpu.ones(3), gpu.ones(2), %s)" })
local SETDIFF = options.declare("setdiff1d", { assume_unique = { type = "boolean", default = false } },
  { example = "gpu.setdiff1d(gpu.ones(3), gpu.ones(2), %s)" })
local SETXOR = options.declare("setxor1d", { assume_unique = { type = "boolean", default = false } },
  { example = "gpu.setxor1d(gpu.ones(3), gpu.ones(2), %s)" })

local function pair(fname, a, b)
  real_arg(fname, a, 1, "ar1")
  real_arg(fname, b, 2, "ar2")
  same_device(fname, a, b)
end

-- both arrays flattened in their common dtype
local function common_flat(a, b)
  a, b = flat(a), flat(b)
  if a.dtype ~= b.dtype then
    local dtype = gpu.promote_types(a.dtype, b.dtype)
    a, b = a:astype(dtype), b:astype(dtype)
  end
  return a, b
end

local function empty_positions(dev) return gpu.zeros(0, { dtype = "int64", device = dev }) end

-- intersect1d(ar1, ar2 [, {assume_unique, return_indices}]) -> the sorted values in both
-- [, their 1-based first positions in ar1, in ar2] (NumPy's)
function M.intersect1d(ar1, ar2, opts)
  local fname = "intersect1d"
  pair(fname, ar1, ar2)
  local o = INTERSECT:check(opts, 3)
  local a, b = common_flat(ar1, ar2)
  local ia, ib
  if not o.assume_unique then
    if o.return_indices then
      a, ia = M.unique(a, { return_index = true })
      b, ib = M.unique(b, { return_index = true })
    else
      a, b = M.unique(a), M.unique(b)
    end
  end
  local aux = gpu.concat({ a, b })
  local n = aux.shape[1]
  if n < 2 then
    local none = gpu.zeros(0, { dtype = aux.dtype, device = aux.device })
    if o.return_indices then return none, empty_positions(aux.device), empty_positions(aux.device) end
    return none
  end
  local sorted, perm
  if o.return_indices then sorted, perm = aux:sort(1) else sorted = aux:sort() end
  local same = gpu.eq(sorted[{ { 2, n } }], sorted[{ { 1, n - 1 } }])
  local values = gpu.masked_select(sorted[{ { 1, n - 1 } }], same)
  if not o.return_indices then return values end
  local i1 = gpu.masked_select(perm[{ { 1, n - 1 } }], same)
  local i2 = gpu.masked_select(perm[{ { 2, n } }], same) - a.size
  if not o.assume_unique then i1, i2 = gpu.take(ia, i1), gpu.take(ib, i2) end
  return values, i1, i2
end

-- union1d(ar1, ar2): the sorted distinct values of either (NumPy's)
function M.union1d(ar1, ar2)
  pair("union1d", ar1, ar2)
  return M.unique(gpu.concat({ flat(ar1), flat(ar2) }))
end

-- setdiff1d(ar1, ar2 [, {assume_unique}]): the distinct values of ar1 not in ar2, sorted
-- (with assume_unique: ar1's order, as NumPy's)
function M.setdiff1d(ar1, ar2, opts)
  local fname = "setdiff1d"
  pair(fname, ar1, ar2)
  local o = SETDIFF:check(opts, 3)
  local a = o.assume_unique and flat(ar1) or M.unique(ar1)
  local keep = gpu.logical_not(contains(flat(ar2), a))
  return gpu.masked_select(a, keep)
end

-- setxor1d(ar1, ar2 [, {assume_unique}]): the sorted values in exactly one of them
function M.setxor1d(ar1, ar2, opts)
  local fname = "setxor1d"
  pair(fname, ar1, ar2)
  local o = SETXOR:check(opts, 3)
  local a, b = flat(ar1), flat(ar2)
  if not o.assume_unique then a, b = M.unique(a), M.unique(b) end
  local aux = gpu.concat({ a, b }):sort()
  local n = aux.shape[1]
  if n == 0 then return aux end
  local edge = gpu.ones(1, { dtype = "bool", device = aux.device })
  local flag = n > 1 and gpu.concat({ edge, gpu.ne(aux[{ { 2, n } }], aux[{ { 1, n - 1 } }]), edge }) or gpu.concat({ edge, edge })
  return gpu.masked_select(aux, gpu.logical_and(flag[{ { 2, n + 1 } }], flag[{ { 1, n } }]))
end

-- ---- lexsort ---------------------------------------------------------------------------------

local MAX_KEYS = 1024

-- lexsort(keys [, axis = -1]): NumPy's: the 1-based positions that sort by the last key, ties
-- by the one before, ...; keys a list of arrays of one shape or an array whose first axis
-- lists them. Stable argsorts from the first key to the last.
function M.lexsort(keys, axis)
  local fname = "lexsort"
  local list = {}
  if options.is_array(keys) then
    if keys.ndim == 0 then options.argerror(fname, 1, "keys must be a list of arrays or an array of at least 1 axis") end
    if keys.ndim > 1 and keys.shape[1] > MAX_KEYS then
      options.argerror(fname, 1, "%d keys: at most %d (one stable sort each)", keys.shape[1], MAX_KEYS)
    end
    if keys.ndim == 1 then list[1] = keys
    else for k = 1, keys.shape[1] do list[k] = keys[k] end end
  elseif type(keys) == "table" then
    for k, v in ipairs(keys) do
      options.check_array(v, fname, 1, ("keys[%d]"):format(k))
      list[k] = v
    end
    if #list == 0 then options.argerror(fname, 1, "keys must hold at least one array") end
    if #list > MAX_KEYS then options.argerror(fname, 1, "%d keys: at most %d (one stable sort each)", #list, MAX_KEYS) end
  else
    options.argerror(fname, 1, "keys must be a list of arrays or an array, got %s", options.type_name(keys))
  end
  local first = list[1]
  for k, v in ipairs(list) do
    if options.shape_str(v.shape) ~= options.shape_str(first.shape) then
      options.argerror(fname, 1, "keys[%d] has shape %s, keys[1] %s", k, options.shape_str(v.shape), options.shape_str(first.shape))
    end
    if v.device ~= first.device then options.argerror(fname, 1, "keys[%d] is on %s, keys[1] on %s", k, v.device, first.device) end
    if gpu._dtypes[v.dtype].kind == "complex" then options.argerror(fname, 1, "keys[%d] is complex (no order here)", k) end
  end
  if first.ndim == 0 then return gpu.ones({}, { dtype = "int64", device = first.device }) end
  if first.size == 0 then return gpu.zeros(first.shape, { dtype = "int64", device = first.device }) end
  axis = basic.norm_axis(fname, axis == nil and -1 or axis, first.ndim, 2)
  local take = require("gpu.routines.shape").take_along_axis
  local perm
  for _, key in ipairs(list) do
    if perm == nil then perm = key:argsort(axis)
    else perm = take(perm, take(key, perm, axis):argsort(axis), axis) end
  end
  return perm
end

return M
