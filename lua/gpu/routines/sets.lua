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

return M
