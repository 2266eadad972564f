-- gpu.routines.manip: NumPy's joining, splitting, building and indexing routines (vstack ...
-- take's neighbours), written over the dispatched ops (concat, index, take, where, views,
-- the elementwise ops), so both devices run them and the gathering ones are
-- differentiable; the in-place writes (put, putmask, place, fill_diagonal) are not.
-- Positions are 1-based everywhere: an index NumPy takes or returns as p is p + 1 here
-- (negatives count from the end, as NumPy's), and axes count from 1. NumPy's tuples of
-- arrays (unravel_index, tril_indices, ix_, ogrid ...) are multiple results; its lists of
-- arrays (array_split and the splits) Lua tables. Index plans are made on the device, but
-- for the few values the user gave as Lua values (split points, insert's positions).
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"

local M = {}

local norm_axis, int_arg, is_array = basic.norm_axis, basic.int_arg, options.is_array
local argerror, raise, type_name, shape_str = options.argerror, options.raise, options.type_name, options.shape_str

local function arange(n, dev) return gpu.arange(n, { device = dev }) end
local function int64(t, dev) return gpu.array(t, { dtype = "int64", device = dev }) end

-- The float dtype a creation function gives without a dtype (the library's default).
local function default_float() return gpu.empty(0).dtype end

local function is_int_dtype(dtype)
  local k = gpu._dtypes[dtype].kind
  return k == "int" or k == "uint"
end

-- The entries 1..n of a plain list (rawlen/rawget: a table's own __len or __index is not
-- trusted, so a hostile table cannot make a loop run for ever); a hole is an error.
local function list_of(fname, t, argn, what)
  if type(t) ~= "table" or is_array(t) then
    argerror(fname, argn, "%s must be a table, got %s", what, type_name(t))
  end
  local out = {}
  for i = 1, rawlen(t) do
    out[i] = rawget(t, i)
    if out[i] == nil then argerror(fname, argn, "%s: entry %d is nil", what, i) end
  end
  return out
end

-- A list of integers: a Lua integer (a list of one when allow_scalar), a table of integers
-- or an integer gpu.array (flattened). Returns the list and whether it was a scalar.
local function int_list(fname, v, argn, what, allow_scalar)
  if math.type(v) == "integer" and allow_scalar then return { v }, true end
  if is_array(v) then
    options.check_array(v, fname, argn, what)
    if not is_int_dtype(v.dtype) then argerror(fname, argn, "%s must be an integer array, got %s", what, v.dtype) end
    if v.size > 1e7 then argerror(fname, argn, "%s: at most 1e7 positions, got %d", what, v.size) end
    local t = v:reshape(v.size):to("cpu"):totable()
    return t, false
  end
  local t = list_of(fname, v, argn, what)
  for i, s in ipairs(t) do
    if math.type(s) ~= "integer" then
      argerror(fname, argn, "%s entry %d must be an integer, got %s", what, i, type_name(s))
    end
  end
  return t, false
end

-- A list of sizes: an integer or a table of integers >= 0.
local function sizes_of(fname, v, argn, what)
  if math.type(v) == "integer" then v = { v } end
  local t = list_of(fname, v, argn, what)
  for i, n in ipairs(t) do
    if math.type(n) ~= "integer" or n < 0 then
      argerror(fname, argn, "%s entry %d must be a size >= 0, got %s", what, i, type_name(n))
    end
  end
  return t
end

-- The number of elements of a shape (a list of sizes), refused past 2^53 (where the
-- product of Lua integers would lose its exactness or wrap)
local function element_count(fname, sizes, argn, what)
  local total = 1
  for _, n in ipairs(sizes) do
    if n > 0 and total > 2^53 / n then argerror(fname, argn, "%s %s has too many elements", what, shape_str(sizes)) end
    total = total * n
  end
  return total
end

-- A 1-based position s on an axis of n elements, NumPy's 0-based one: s >= 1 is s - 1,
-- a negative s counts from the end (n + s); 0 is refused. hi: the largest 1-based s taken
-- (n, or n + 1 where a position after the last is meaningful).
local function zero_based(fname, s, n, hi, argn, what)
  if s == 0 then argerror(fname, argn, "%s 0 is not a position (positions are 1-based, negatives count from the end)", what) end
  if s > hi or s < -n then
    argerror(fname, argn, "%s %d is out of range for an axis of size %d (positions are 1-based)", what, s, n)
  end
  return s > 0 and s - 1 or n + s
end

-- x with sizes prepended (1s) to nd axes
local function ndmin(x, nd)
  if x.ndim >= nd then return x end
  local s = {}
  for d = 1, nd - x.ndim do s[d] = 1 end
  for d = 1, x.ndim do s[#s + 1] = x.shape[d] end
  return x:reshape(s)
end

-- A value given as a Lua number (or boolean) made a 0-d array of like's device, in the
-- dtype NumPy gives it beside like (a weak scalar); an array is returned as it is.
local function as_array(fname, v, like, argn, what)
  if is_array(v) then return options.check_array(v, fname, argn, what) end
  if type(v) == "number" or type(v) == "boolean" then
    return gpu.full({}, v, { dtype = gpu.result_type(like, v), device = like.device })
  end
  argerror(fname, argn, "%s must be a gpu.array or a number, got %s", what, type_name(v))
end

-- ---- joining -----------------------------------------------------------------------------------

-- The arrays of a list argument (at least one), each checked.
local function array_list(fname, t, argn)
  local xs = list_of(fname, t, argn, "arrays")
  if #xs == 0 then argerror(fname, argn, "need at least one array to join") end
  for i, x in ipairs(xs) do options.check_array(x, fname, argn, "entry " .. i) end
  return xs
end

-- concat of xs along axis, after checking the shapes agree off the axis (an error naming
-- fname and the entry that differs).
local function join(fname, xs, axis, argn)
  local first = xs[1]
  for i = 2, #xs do
    local x = xs[i]
    local ok = x.ndim == first.ndim
    for d = 1, first.ndim do
      if ok and d ~= axis and x.shape[d] ~= first.shape[d] then ok = false end
    end
    if not ok then
      argerror(fname, argn, "entry %d has shape %s, entry 1 %s: they must agree except on axis %d",
        i, shape_str(x.shape), shape_str(first.shape), axis)
    end
  end
  return gpu.concat(xs, axis)
end

local function map(xs, f)
  local out = {}
  for i, x in ipairs(xs) do out[i] = f(x) end
  return out
end

-- vstack({a, b, ...}) / row_stack: along the first axis, 1-D arrays as rows
local function vertical(fname)
  return function(arrays)
    local xs = map(array_list(fname, arrays, 1), function(x) return ndmin(x, 2) end)
    return join(fname, xs, 1, 1)
  end
end
M.vstack = vertical("vstack")
M.row_stack = vertical("row_stack")

-- hstack({a, b, ...}): along the second axis (the first for 1-D arrays)
function M.hstack(arrays)
  local xs = map(array_list("hstack", arrays, 1), function(x) return ndmin(x, 1) end)
  return join("hstack", xs, xs[1].ndim == 1 and 1 or 2, 1)
end

-- dstack({a, b, ...}): along the third axis, after atleast_3d
function M.dstack(arrays)
  local xs = map(array_list("dstack", arrays, 1), function(x)
    if x.ndim == 0 then return x:reshape(1, 1, 1) end
    if x.ndim == 1 then return x:reshape(1, x.shape[1], 1) end
    if x.ndim == 2 then return x:reshape(x.shape[1], x.shape[2], 1) end
    return x
  end)
  return join("dstack", xs, 3, 1)
end

-- column_stack({a, b, ...}): 1-D arrays as columns, then along the second axis
function M.column_stack(arrays)
  local xs = map(array_list("column_stack", arrays, 1), function(x)
    if x.ndim < 2 then return x:reshape(x.size, 1) end
    return x
  end)
  return join("column_stack", xs, 2, 1)
end

-- block(nested lists of arrays): NumPy's block: the innermost lists join along the last
-- axis, the next ones out along the one before, and so on; every array is first given
-- the result's number of axes (leading 1s).
function M.block(arrays)
  local fname = "block"
  local maxnd = 0
  local function depth(v, path, level)
    if is_array(v) then
      options.check_array(v, fname, 1, "entry " .. path)
      maxnd = math.max(maxnd, v.ndim)
      return 0
    end
    if level > 32 then argerror(fname, 1, "lists nested more than 32 deep") end
    local t = list_of(fname, v, 1, path == "" and "arrays" or "entry " .. path)
    if #t == 0 then argerror(fname, 1, "list %s is empty", path == "" and "arrays" or path) end
    local d
    for i, e in ipairs(t) do
      local p = path == "" and ("[" .. i .. "]") or (path .. "[" .. i .. "]")
      local di = depth(e, p, level + 1)
      if d and di ~= d then argerror(fname, 1, "list depths are mismatched: entry %s is %d deep, the ones before %d", p, di, d) end
      d = di
    end
    return d + 1
  end
  local L = depth(arrays, "", 0)
  local N = math.max(L, maxnd)
  local function build(v, level)
    if level == L then return ndmin(v, N) end
    local parts = {}
    for i = 1, rawlen(v) do parts[i] = build(rawget(v, i), level + 1) end
    return join(fname, parts, N - (L - level) + 1, 1)
  end
  if L == 0 then return arrays:copy() end
  return build(arrays, 0)
end

-- append(arr, values [, axis]): without an axis both flattened then joined; with one,
-- values must have arr's axes
function M.append(arr, values, axis)
  local fname = "append"
  options.check_array(arr, fname, 1, "arr")
  values = as_array(fname, values, arr, 2, "values")
  if axis == nil then return gpu.concat({ arr:reshape(arr.size), values:reshape(values.size) }) end
  axis = norm_axis(fname, axis, arr.ndim, 3)
  if values.ndim ~= arr.ndim then
    argerror(fname, 2, "values have %d axes, arr %d (with an axis they must agree)", values.ndim, arr.ndim)
  end
  return join(fname, { arr, values }, axis, 2)
end

-- ---- splitting ---------------------------------------------------------------------------------

-- the most pieces a split makes (a count past the axis' size gives empty ones, as NumPy's;
-- a list of a million views takes a second, and a count of 2^53 would not end)
local MAX_PIECES = 1 << 20

-- x with none of its elements along axis (a slice cannot say it: its bounds are 1-based)
local function empty_along(x, axis)
  return x:index(axis, gpu.zeros({ 0 }, { dtype = "int64", device = x.device }))
end

-- The pieces of x along axis: sections a count (sizes differ by at most one, the larger
-- first; equal: they must all be equal) or a list of 1-based positions where a new piece
-- starts (NumPy's split points + 1; negatives from the end; past the end gives empty pieces).
local function split_at(fname, x, sections, axis, equal, argn)
  local n = x.shape[axis]
  local bounds = { 0 }
  if math.type(sections) == "integer" then
    if sections < 1 then argerror(fname, argn, "the number of sections must be at least 1, got %d", sections) end
    if sections > MAX_PIECES then argerror(fname, argn, "at most %d sections, got %d", MAX_PIECES, sections) end
    if equal and n % sections ~= 0 then
      argerror(fname, argn, "an axis of size %d does not split into %d equal sections", n, sections)
    end
    local q, r = n // sections, n % sections
    for i = 1, sections do bounds[i + 1] = bounds[i] + q + (i <= r and 1 or 0) end
  else
    local starts = int_list(fname, sections, argn, "indices_or_sections", false)
    if #starts >= MAX_PIECES then argerror(fname, argn, "at most %d sections, got %d", MAX_PIECES, #starts + 1) end
    for i, s in ipairs(starts) do
      if s == 0 then argerror(fname, argn, "split position 0: positions are 1-based (a piece starting at s)") end
      local p = s > 0 and s - 1 or n + s
      bounds[i + 1] = math.min(math.max(p, 0), n)
    end
    bounds[#bounds + 1] = n
  end
  local out = {}
  for i = 1, #bounds - 1 do
    local a, b = bounds[i], bounds[i + 1]
    if b <= a then
      out[i] = empty_along(x, axis)
    else
      local key = {}
      for d = 1, x.ndim do key[d] = ":" end
      key[axis] = { a + 1, b }
      out[i] = x[key]
    end
  end
  return out
end

-- array_split(x, indices_or_sections [, axis = 1]): a list of views
function M.array_split(x, sections, axis)
  local fname = "array_split"
  options.check_array(x, fname, 1, "x")
  axis = norm_axis(fname, axis == nil and 1 or axis, x.ndim, 3)
  return split_at(fname, x, sections, axis, false, 2)
end

local function fixed_split(fname, min_nd, axis_of)
  return function(x, sections)
    options.check_array(x, fname, 1, "x")
    if x.ndim < min_nd then
      argerror(fname, 1, "x must have at least %d ax%s, got %d", min_nd, min_nd == 1 and "is" or "es", x.ndim)
    end
    return split_at(fname, x, sections, axis_of(x), true, 2)
  end
end
-- hsplit / vsplit / dsplit(x, indices_or_sections): split along the second (1-D: first),
-- first and third axis; a count must divide the axis
M.hsplit = fixed_split("hsplit", 1, function(x) return x.ndim > 1 and 2 or 1 end)
M.vsplit = fixed_split("vsplit", 2, function() return 1 end)
M.dsplit = fixed_split("dsplit", 3, function() return 3 end)

-- ---- inserting and deleting --------------------------------------------------------------------

-- insert(arr, obj, values [, axis]): values inserted before the 1-based position(s) obj
-- (n + 1: after the last; negatives from the end) along axis, or along arr flattened
-- without an axis; NumPy's rules for values' shape (a scalar obj: values' first axis
-- becomes the axis).
function M.insert(arr, obj, values, axis)
  local fname = "insert"
  options.check_array(arr, fname, 1, "arr")
  if axis == nil then
    arr = arr:reshape(arr.size)
    axis = 1
  else
    axis = norm_axis(fname, axis, arr.ndim, 4)
  end
  local n, nd = arr.shape[axis], arr.ndim
  local idx, scalar = int_list(fname, obj, 2, "obj", true)
  local vals = as_array(fname, values, arr, 3, "values"):astype(arr.dtype)
  if vals.device ~= arr.device then argerror(fname, 3, "values are on %s, arr on %s: use :to()", vals.device, arr.device) end
  local pos = {}
  for i, s in ipairs(idx) do pos[i] = zero_based(fname, s, n, n + 1, 2, "position") end
  local numnew
  if #idx == 1 then
    vals = ndmin(vals, nd)
    if scalar then vals = gpu.moveaxis(vals, 1, axis) end
    if vals.ndim > nd then argerror(fname, 3, "values have %d axes, arr %d", vals.ndim, nd) end
    numnew = vals.shape[axis]
  else
    numnew = #idx
  end
  local target = arr.shape
  target[axis] = numnew
  local ok, b = pcall(gpu.broadcast_to, vals, target)
  if not ok then
    argerror(fname, 3, "values of shape %s do not broadcast to %s", shape_str(vals.shape), shape_str(target))
  end
  -- the plan, made on the device: old element j (0-based) goes to j + (the count of new
  -- positions <= j), the new one of rank r in the stable sort of the positions to its
  -- position + r; the result gathers concat(arr, values) along the axis with it
  local dev = arr.device
  local j = arange(n, dev)
  local old_to, new_to, new_from
  if #idx == 1 then
    local p = pos[1]
    old_to = j + gpu.where(j:ge(p), numnew, 0)
    new_to = arange(numnew, dev) + p
    new_from = arange(numnew, dev) + (n + 1)
  else
    local order = {}
    for i = 1, numnew do order[i] = i end
    table.sort(order, function(p, q) if pos[p] ~= pos[q] then return pos[p] < pos[q] end return p < q end)
    local sorted, to, from = {}, {}, {}
    for r, i in ipairs(order) do sorted[r], to[r], from[r] = pos[i], pos[i] + r - 1, n + i end
    old_to = j + (gpu.searchsorted(int64(sorted, dev), j, { side = "right" }) - 1)
    new_to, new_from = int64(to, dev), int64(from, dev)
  end
  local src = gpu.zeros({ n + numnew }, { dtype = "int64", device = dev })
  src:index_put_(1, old_to + 1, j + 1)
  src:index_put_(1, new_to + 1, new_from)
  return gpu.concat({ arr, b }, axis):index(axis, src)
end

-- delete(arr, obj [, axis]): arr without the 1-based position(s) obj (an integer, a list,
-- an integer array, or a bool mask of the axis' length) along axis (arr flattened without).
-- The kept positions are found on the device (a mask and nonzero).
function M.delete(arr, obj, axis)
  local fname = "delete"
  options.check_array(arr, fname, 1, "arr")
  if axis == nil then
    arr = arr:reshape(arr.size)
    axis = 1
  else
    axis = norm_axis(fname, axis, arr.ndim, 3)
  end
  local n, dev = arr.shape[axis], arr.device
  local keep
  if is_array(obj) then
    options.check_array(obj, fname, 2, "obj")
    if obj.device ~= dev then argerror(fname, 2, "obj is on %s, arr on %s: use :to()", obj.device, dev) end
  end
  if is_array(obj) and obj.dtype == "bool" then
    if obj.ndim ~= 1 or obj.size ~= n then
      argerror(fname, 2, "a bool obj must be 1-D of the axis' length %d, got shape %s", n, shape_str(obj.shape))
    end
    keep = obj:logical_not()
  else
    local p
    if is_array(obj) then
      if not is_int_dtype(obj.dtype) then argerror(fname, 2, "obj must be an integer or bool array, got %s", obj.dtype) end
      p = obj:astype("int64"):reshape(obj.size)
    else
      p = int64((int_list(fname, obj, 2, "obj", true)), dev)
    end
    if p.size > 0 and gpu.logical_or(gpu.logical_or(p:gt(n), p:lt(-n)), p:eq(0)):any():item() then
      argerror(fname, 2, "a position is out of range for an axis of size %d (1 .. n or -n .. -1: positions are 1-based)", n)
    end
    keep = gpu.ones({ n }, { dtype = "bool", device = dev })
    if p.size > 0 then keep:index_put_(1, gpu.where(p:lt(0), p + (n + 1), p), false) end
  end
  return arr:index(axis, gpu.nonzero(keep)[1])
end

-- resize(a, new_shape): NumPy's np.resize: a flattened, repeated to fill new_shape (zeros
-- for an empty a)
function M.resize(a, new_shape)
  local fname = "resize"
  options.check_array(a, fname, 1, "a")
  local shape = sizes_of(fname, new_shape, 2, "new_shape")
  local total = element_count(fname, shape, 2, "new_shape")
  if a.size == 0 or total == 0 then return gpu.zeros(shape, { dtype = a.dtype, device = a.device }) end
  local idx = gpu.mod(arange(total, a.device), a.size) + 1
  return gpu.take(a:reshape(a.size), idx):reshape(shape)
end

-- trim_zeros(filt [, trim = "fb"]): a view of the 1-D filt without its leading ("f") and / or
-- trailing ("b") zeros
function M.trim_zeros(filt, trim)
  local fname = "trim_zeros"
  options.check_array(filt, fname, 1, "filt")
  if trim == nil then trim = "fb" end
  if type(trim) ~= "string" or not trim:lower():match("^[fb]*$") then
    argerror(fname, 2, "trim must be a string of 'f' and 'b', got %s", type_name(trim))
  end
  if filt.ndim ~= 1 then argerror(fname, 1, "filt must be 1-D, got %d axes", filt.ndim) end
  local nz = gpu.nonzero(filt)[1]
  if nz.size == 0 then return empty_along(filt, 1) end
  local t = trim:lower()
  local first = t:find("f", 1, true) and nz[1] or 1
  local last = t:find("b", 1, true) and nz[nz.size] or filt.size
  return filt[{ { first, last } }]
end

-- ---- flips and axes ----------------------------------------------------------------------------

-- fliplr(x): the second axis reversed (a view); flipud(x): the first
function M.fliplr(x)
  options.check_array(x, "fliplr", 1, "x")
  if x.ndim < 2 then argerror("fliplr", 1, "x must have at least 2 axes, got %d", x.ndim) end
  return x:flip(2)
end

function M.flipud(x)
  options.check_array(x, "flipud", 1, "x")
  if x.ndim < 1 then argerror("flipud", 1, "x must have at least 1 axis, got a 0-d array") end
  return x:flip(1)
end

-- rollaxis(x, axis [, start = 1]): the axis moved to just before the axis start (1-based;
-- ndim + 1: last; negatives from the end), a view
function M.rollaxis(x, axis, start)
  local fname = "rollaxis"
  options.check_array(x, fname, 1, "x")
  local n = x.ndim
  axis = norm_axis(fname, axis, n, 2)
  start = int_arg(fname, start, 3, "start", 1)
  local s = start < 0 and n + start + 1 or start
  if s < 1 or s > n + 1 then
    argerror(fname, 3, "start %d is out of range for an array of %d axes (1 .. %d, negatives from the end)", start, n, n + 1)
  end
  if axis < s then s = s - 1 end
  local perm = {}
  for i = 1, n do if i ~= axis then perm[#perm + 1] = i end end
  table.insert(perm, s, axis)
  return x:permute(perm)
end

-- broadcast_shapes(s1, s2, ...): the shape (a table) the shapes broadcast to
function M.broadcast_shapes(...)
  local fname = "broadcast_shapes"
  local args = table.pack(...)
  local shapes, nd = {}, 0
  for i = 1, args.n do
    shapes[i] = sizes_of(fname, args[i], i, "shape")
    nd = math.max(nd, #shapes[i])
  end
  local out = {}
  for d = 1, nd do
    local n = 1
    for k, s in ipairs(shapes) do
      local m = s[d - (nd - #s)] or 1
      if m ~= 1 then
        if n ~= 1 and m ~= n then
          raise("broadcast_shapes: shape %s (argument %d) does not broadcast with the ones before", shape_str(s), k)
        end
        n = m
      end
    end
    out[d] = n
  end
  return out
end

-- ---- building ----------------------------------------------------------------------------------

local CREATE_KEYS = { dtype = { type = "dtype" }, device = { type = "device" } }

local LOGSPACE = options.declare("logspace", {
  endpoint = { type = "boolean", default = true },
  base = { type = "number", default = 10 },
  dtype = { type = "dtype" }, device = { type = "device" },
}, { example = "gpu.logspace(0, 2, 3, %s)" })

local GEOMSPACE = options.declare("geomspace", {
  endpoint = { type = "boolean", default = true },
  dtype = { type = "dtype" }, device = { type = "device" },
}, { example = "gpu.geomspace(1, 100, 3, %s)" })

local function number_arg(fname, v, argn, what)
  if type(v) ~= "number" then argerror(fname, argn, "%s must be a number, got %s", what, type_name(v)) end
  return v
end

-- num and opts where num may be left out: (num), (opts), (num, opts), (nil, opts)
local function num_opts(fname, num, opts, argn)
  if type(num) == "table" and not is_array(num) and opts == nil then num, opts = nil, num end
  num = int_arg(fname, num, argn, "num", 50)
  if num < 0 then argerror(fname, argn, "num must be >= 0, got %d", num) end
  return num, opts
end

-- NumPy's linspace values in float64 (start + i * step; the endpoint exact with endpoint)
local function linspace64(start, stop, num, endpoint, dev)
  if endpoint then return gpu.linspace(start, stop, num, { dtype = "float64", device = dev }) end
  local y = gpu.linspace(start, stop, num + 1, { dtype = "float64", device = dev })
  return y[{ { 1, num } }]
end

-- logspace(start, stop [, num = 50] [, {endpoint = true, base = 10, dtype, device}]):
-- base ^ linspace(start, stop), computed in float64 (NumPy's), then in dtype
function M.logspace(start, stop, num, opts)
  local fname = "logspace"
  number_arg(fname, start, 1, "start")
  number_arg(fname, stop, 2, "stop")
  num, opts = num_opts(fname, num, opts, 3)
  local o = LOGSPACE:check(opts, 4)
  local y = linspace64(start, stop, num, o.endpoint, o.device)
  return (gpu.full({}, o.base, { dtype = "float64", device = o.device }) ^ y):astype(o.dtype or default_float())
end

-- geomspace(start, stop [, num = 50] [, {endpoint = true, dtype, device}]): a geometric
-- sequence with its ends exact; both negative: the sequence of their magnitudes negated,
-- as NumPy's; zero is an error
function M.geomspace(start, stop, num, opts)
  local fname = "geomspace"
  number_arg(fname, start, 1, "start")
  number_arg(fname, stop, 2, "stop")
  num, opts = num_opts(fname, num, opts, 3)
  local o = GEOMSPACE:check(opts, 4)
  if start == 0 or stop == 0 then argerror(fname, start == 0 and 1 or 2, "a geometric sequence cannot include zero") end
  local sign = 1
  if start < 0 and stop < 0 then start, stop, sign = -start, -stop, -1 end
  local y = linspace64(math.log(start, 10), math.log(stop, 10), num, o.endpoint, o.device)
  local r = gpu.full({}, 10.0, { dtype = "float64", device = o.device }) ^ y
  if num > 0 then
    local ends = arange(num, o.device)
    r = gpu.where(ends:eq(0), start, r)
    if num > 1 and o.endpoint then r = gpu.where(ends:eq(num - 1), stop, r) end
  end
  if sign < 0 then r = -r end
  return r:astype(o.dtype or default_float())
end

local TRI = options.declare("tri", CREATE_KEYS, { example = "gpu.tri(3, 3, 0, %s)" })

-- The N x M bool mask of j - i <= k (0-based i, j).
local function tri_mask(n, m, k, dev)
  return (arange(m, dev):reshape(1, m) - arange(n, dev):reshape(n, 1)):le(k)
end

-- tri(N [, M = N [, k = 0]] [, {dtype, device}]): ones at and below the k-th diagonal
function M.tri(n, m, k, opts)
  local fname = "tri"
  if type(m) == "table" and k == nil and opts == nil then m, opts = nil, m end
  if type(k) == "table" and opts == nil then k, opts = nil, k end
  n = int_arg(fname, n, 1, "N")
  m = int_arg(fname, m, 2, "M", n)
  k = int_arg(fname, k, 3, "k", 0)
  if n < 0 or m < 0 then argerror(fname, n < 0 and 1 or 2, "sizes must be >= 0") end
  local o = TRI:check(opts, 4)
  return tri_mask(n, m, k, o.device):astype(o.dtype or default_float())
end

-- diagflat(v [, k = 0]): v flattened on the k-th diagonal of a square matrix
function M.diagflat(v, k)
  options.check_array(v, "diagflat", 1, "v")
  k = int_arg("diagflat", k, 2, "k", 0)
  return gpu.diag(v:reshape(v.size), k)
end

local INDICES = options.declare("indices", {
  dtype = { type = "dtype", default = "int64" },
  sparse = { type = "boolean", default = false },
  device = { type = "device" },
}, { example = "gpu.indices({2, 3}, %s)" })

-- The 1-based coordinate grids of shape dims: one array per axis, of shape (1, .., n_d, .., 1).
local function coords(dims, dtype, dev)
  local out = {}
  for d = 1, #dims do
    local s = {}
    for e = 1, #dims do s[e] = 1 end
    s[d] = dims[d]
    out[d] = (arange(dims[d], dev) + 1):astype(dtype):reshape(s)
  end
  return out
end

-- indices(dimensions [, {dtype = "int64", sparse = false, device}]): the 1-based index grids
-- stacked (shape (ndim, d1, ...)); sparse: one open grid per axis (multiple results)
function M.indices(dimensions, opts)
  local fname = "indices"
  local dims = sizes_of(fname, dimensions, 1, "dimensions")
  local o = INDICES:check(opts, 2)
  local g = coords(dims, o.dtype, o.device)
  if o.sparse then return table.unpack(g, 1, #dims) end
  if #dims == 0 then return gpu.zeros({ 0 }, { dtype = o.dtype, device = o.device }) end
  for d = 1, #dims do g[d] = g[d]:expand(dims) end
  return gpu.stack(g, 1)
end

local GRID = options.declare("mgrid", CREATE_KEYS, { example = "gpu.mgrid({0, 3}, %s)" })
local OGRID = options.declare("ogrid", CREATE_KEYS, { example = "gpu.ogrid({0, 3}, %s)" })

-- The ranges of mgrid/ogrid: each an integer n (0 .. n - 1), {start, stop [, step]} (NumPy's
-- start:stop:step, stop excluded) or {start, stop, num = n} (NumPy's complex step n*1j: n
-- points, both ends included). Returns the ranges, the sizes and whether every bound is
-- an integer (an int64 grid).
local function grid_ranges(fname, args)
  local n, opts = args.n, nil
  if n > 0 and type(args[n]) == "table" and not is_array(args[n]) and rawget(args[n], 1) == nil then
    opts, n = args[n], n - 1
  end
  if n == 0 then argerror(fname, 1, "at least one range expected") end
  local ranges, sizes, integral = {}, {}, true
  for i = 1, n do
    local r = args[i]
    if math.type(r) == "integer" then r = { 0, r } end
    if type(r) ~= "table" or is_array(r) then
      argerror(fname, i, "a range must be {start, stop [, step]}, {start, stop, num = n} or a count, got %s", type_name(r))
    end
    local start, stop, step, num = rawget(r, 1), rawget(r, 2), rawget(r, 3), rawget(r, "num")
    if type(start) ~= "number" or type(stop) ~= "number" then
      argerror(fname, i, "a range must be {start, stop [, step]} with numbers")
    end
    if num ~= nil then
      if step ~= nil then argerror(fname, i, "give a step or num, not both") end
      if math.type(num) ~= "integer" or num < 0 then argerror(fname, i, "num must be an integer >= 0") end
      local st = num > 1 and (stop - start) / (num - 1) or 1
      ranges[i], sizes[i], integral = { start, st }, num, false
    else
      if step == nil then step = 1 end
      if type(step) ~= "number" then argerror(fname, i, "step must be a number, got %s", type_name(step)) end
      if step == 0 or step ~= step then argerror(fname, i, "step must not be zero or NaN") end
      local len = math.ceil((stop - start) / step)
      if len ~= len or len > 2^40 then argerror(fname, i, "the range is too long") end
      ranges[i], sizes[i] = { start, step }, math.max(math.tointeger(len) or 0, 0)
      if math.type(start) ~= "integer" or math.type(stop) ~= "integer" or math.type(step) ~= "integer" then
        integral = false
      end
    end
  end
  return ranges, sizes, integral, opts, n
end

-- one grid axis: i * step + start over i = 0 .. size - 1 (float64 or int64), then in dtype
local function grid_axis(r, size, integral, dtype, dev)
  local i = arange(size, dev)
  local v = integral and (i * r[2] + r[1]) or (i:astype("float64") * r[2] + r[1])
  return v:astype(dtype or (integral and "int64" or default_float()))
end

-- mgrid(r1, r2, ... [, {dtype, device}]): NumPy's np.mgrid[r1, r2, ...]: one dense grid per
-- range stacked (shape (n, s1, s2, ...)); one range gives the 1-D array of its values
function M.mgrid(...)
  local fname = "mgrid"
  local ranges, sizes, integral, opts, n = grid_ranges(fname, table.pack(...))
  local o = GRID:check(opts, n + 1)
  if n == 1 then return grid_axis(ranges[1], sizes[1], integral, o.dtype, o.device) end
  local g = {}
  for d = 1, n do
    local s = {}
    for e = 1, n do s[e] = 1 end
    s[d] = sizes[d]
    g[d] = grid_axis(ranges[d], sizes[d], integral, o.dtype, o.device):reshape(s):expand(sizes)
  end
  return gpu.stack(g, 1)
end

-- ogrid(r1, r2, ... [, {dtype, device}]): NumPy's np.ogrid: the open grids, one result per
-- range (shape (1, .., s_d, .., 1))
function M.ogrid(...)
  local fname = "ogrid"
  local ranges, sizes, integral, opts, n = grid_ranges(fname, table.pack(...))
  local o = OGRID:check(opts, n + 1)
  if n == 1 then return grid_axis(ranges[1], sizes[1], integral, o.dtype, o.device) end
  local g = {}
  for d = 1, n do
    local s = {}
    for e = 1, n do s[e] = 1 end
    s[d] = sizes[d]
    g[d] = grid_axis(ranges[d], sizes[d], integral, o.dtype, o.device):reshape(s)
  end
  return table.unpack(g, 1, n)
end

local FROMFUNCTION = options.declare("fromfunction", CREATE_KEYS, { example = "gpu.fromfunction(function(i) return i end, {3}, %s)" })

-- fromfunction(f, shape [, {dtype, device}]): f called with one coordinate array per axis
-- (1-based, of dtype, default the float dtype; broadcastable open grids as NumPy's dense
-- ones give the same results for elementwise f), its result returned
function M.fromfunction(f, shape, opts)
  local fname = "fromfunction"
  if type(f) ~= "function" then
    local mt = getmetatable(f)
    if not (type(mt) == "table" and rawget(mt, "__call")) then
      argerror(fname, 1, "f must be a function, got %s", type_name(f))
    end
  end
  local dims = sizes_of(fname, shape, 2, "shape")
  local o = FROMFUNCTION:check(opts, 3)
  local g = coords(dims, o.dtype or default_float(), o.device)
  for d = 1, #dims do g[d] = g[d]:expand(dims) end
  return f(table.unpack(g, 1, #dims))
end

-- ---- positions ---------------------------------------------------------------------------------

local ORDER = { type = "string", default = "C", choices = { "C", "F" } }
local UNRAVEL = options.declare("unravel_index", { order = ORDER }, { example = "gpu.unravel_index(5, {2, 3}, %s)" })
local RAVEL = options.declare("ravel_multi_index", {
  mode = { type = "string|table", default = "raise" },
  order = ORDER,
}, { example = "gpu.ravel_multi_index({1, 2}, {2, 3}, %s)" })

local function axes_order(nd, order)
  local t = {}
  for i = 1, nd do t[i] = order == "C" and nd - i + 1 or i end
  return t                                    -- the fastest-varying axis first
end

-- unravel_index(indices, shape [, {order = "C"}]): the 1-based coordinates (one result per
-- axis) of the 1-based flat positions indices (a Lua integer gives integers, an integer
-- array int64 arrays of its shape)
function M.unravel_index(indices, shape, opts)
  local fname = "unravel_index"
  local dims = sizes_of(fname, shape, 2, "shape")
  local o = UNRAVEL:check(opts, 3)
  local total = element_count(fname, dims, 2, "shape")
  local out = {}
  if math.type(indices) == "integer" then
    if indices < 1 or indices > total then
      argerror(fname, 1, "index %d is out of bounds for a shape of %d elements (positions are 1-based)", indices, total)
    end
    local p = indices - 1
    for _, d in ipairs(axes_order(#dims, o.order)) do out[d] = p % dims[d] + 1; p = p // dims[d] end
    return table.unpack(out, 1, #dims)
  end
  options.check_array(indices, fname, 1, "indices")
  if not is_int_dtype(indices.dtype) then argerror(fname, 1, "indices must be an integer array, got %s", indices.dtype) end
  local p = indices:astype("int64")
  if p.size > 0 and gpu.logical_or(p:lt(1), p:gt(total)):any():item() then
    argerror(fname, 1, "an index is out of bounds for a shape of %d elements (positions are 1-based)", total)
  end
  p = p - 1
  for _, d in ipairs(axes_order(#dims, o.order)) do
    out[d] = gpu.mod(p, dims[d]) + 1
    p = gpu.floordiv(p, dims[d])
  end
  return table.unpack(out, 1, #dims)
end

local MODES = { raise = true, wrap = true, clip = true }

-- A 1-based position array (int64) in 0-based form under mode: raise (checked in
-- lo .. n; negatives from the end when lo < 0), wrap (modulo n, negatives from the end),
-- clip (below 1: the first, above n: the last).
local function positions0(fname, p, n, mode, lo, argn, what)
  local z
  if mode == "raise" then
    if p.size > 0 and gpu.logical_or(gpu.logical_or(p:lt(lo), p:gt(n)), p:eq(0)):any():item() then
      argerror(fname, argn, "%s out of range 1 .. %d%s (positions are 1-based)", what, n, lo < 0 and " (or -n .. -1)" or "")
    end
    z = gpu.where(p:lt(0), p + n, p - 1)
  elseif mode == "wrap" then
    if n == 0 then argerror(fname, argn, "cannot wrap into an empty axis") end
    z = gpu.mod(gpu.where(p:gt(0), p - 1, p), n)
  else
    if n == 0 then argerror(fname, argn, "cannot clip into an empty axis") end
    z = (p - 1):clip(0, n - 1)
  end
  return z
end

-- ravel_multi_index(multi_index, dims [, {mode = "raise", order = "C"}]): the 1-based flat
-- positions of the 1-based coordinates (a table, one integer or integer array per axis;
-- integers give an integer); mode "raise", "wrap", "clip" or a table of them per axis
function M.ravel_multi_index(multi_index, dims, opts)
  local fname = "ravel_multi_index"
  local sizes = sizes_of(fname, dims, 2, "dims")
  local o = RAVEL:check(opts, 3)
  element_count(fname, sizes, 2, "dims")
  local coordsl = list_of(fname, multi_index, 1, "multi_index")
  if #coordsl ~= #sizes then
    argerror(fname, 1, "multi_index has %d entries, dims %d: they must agree", #coordsl, #sizes)
  end
  local modes = {}
  for d = 1, #sizes do
    local m = type(o.mode) == "table" and rawget(o.mode, d) or o.mode
    if not MODES[m] then argerror(fname, 3, "option 'mode' must be 'raise', 'wrap' or 'clip' (or one per axis), got %s", type_name(m)) end
    modes[d] = m
  end
  local all_numbers, dev = true, nil
  for d, c in ipairs(coordsl) do
    if is_array(c) then
      options.check_array(c, fname, 1, "multi_index entry " .. d)
      if not is_int_dtype(c.dtype) then argerror(fname, 1, "multi_index entry %d must be an integer array, got %s", d, c.dtype) end
      all_numbers, dev = false, dev or c.device
    elseif math.type(c) ~= "integer" then
      argerror(fname, 1, "multi_index entry %d must be an integer or an integer array, got %s", d, type_name(c))
    end
  end
  local flat, stride = nil, 1
  for _, d in ipairs(axes_order(#sizes, o.order)) do
    local c = coordsl[d]
    if type(c) == "number" then c = gpu.full({}, c, { dtype = "int64", device = dev }) else c = c:astype("int64") end
    local z = positions0(fname, c, sizes[d], modes[d], 1, 1, "multi_index entry " .. d .. ":")
    flat = flat and (flat + z * stride) or z * stride
    stride = stride * sizes[d]
  end
  flat = flat + 1
  if all_numbers then return flat:item() end
  return flat
end

local TRI_INDICES = options.declare("tril_indices", { device = { type = "device" } }, { example = "gpu.tril_indices(3, 0, 3, %s)" })
local TRIU_INDICES = options.declare("triu_indices", { device = { type = "device" } }, { example = "gpu.triu_indices(3, 0, 3, %s)" })

local function tri_indices(fname, decl, upper)
  return function(n, k, m, opts)
    if type(k) == "table" and m == nil and opts == nil then k, opts = nil, k end
    if type(m) == "table" and opts == nil then m, opts = nil, m end
    n = int_arg(fname, n, 1, "n")
    k = int_arg(fname, k, 2, "k", 0)
    m = int_arg(fname, m, 3, "m", n)
    if n < 0 or m < 0 then argerror(fname, n < 0 and 1 or 3, "sizes must be >= 0") end
    local o = decl:check(opts, 4)
    local mask = tri_mask(n, m, upper and k - 1 or k, o.device)
    if upper then mask = mask:logical_not() end
    local nz = gpu.nonzero(mask)
    return nz[1], nz[2]
  end
end
-- tril_indices(n [, k = 0 [, m = n]] [, {device}]) / triu_indices: the 1-based rows and
-- columns (int64) of the lower / upper triangle, in row-major order
M.tril_indices = tri_indices("tril_indices", TRI_INDICES, false)
M.triu_indices = tri_indices("triu_indices", TRIU_INDICES, true)

local DIAG_INDICES = options.declare("diag_indices", { device = { type = "device" } }, { example = "gpu.diag_indices(3, 2, %s)" })

-- diag_indices(n [, ndim = 2] [, {device}]): ndim copies of 1 .. n (int64)
function M.diag_indices(n, ndim, opts)
  local fname = "diag_indices"
  if type(ndim) == "table" and opts == nil then ndim, opts = nil, ndim end
  n = int_arg(fname, n, 1, "n")
  ndim = int_arg(fname, ndim, 2, "ndim", 2)
  if n < 0 then argerror(fname, 1, "n must be >= 0, got %d", n) end
  if ndim < 0 or ndim > 64 then argerror(fname, 2, "ndim must be in 0 .. 64, got %d", ndim) end
  local o = DIAG_INDICES:check(opts, 3)
  local out = {}
  for d = 1, ndim do out[d] = arange(n, o.device) + 1 end
  return table.unpack(out, 1, ndim)
end

-- ix_(s1, s2, ...): open meshes for indexing: the k-th sequence (an integer array or list:
-- positions, passed on; a bool array: its 1-based true positions) shaped to run along axis k
function M.ix_(...)
  local fname = "ix_"
  local args = table.pack(...)
  local out = {}
  for k = 1, args.n do
    local s = args[k]
    if is_array(s) then
      options.check_array(s, fname, k, "sequence")
      if s.ndim ~= 1 then argerror(fname, k, "cross index must be 1-D, got %d axes", s.ndim) end
      if s.dtype == "bool" then s = gpu.nonzero(s)[1]
      elseif not is_int_dtype(s.dtype) then argerror(fname, k, "a sequence must be of integers or bools, got %s", s.dtype) end
    else
      s = int64((int_list(fname, s, k, "sequence", false)))
    end
    local shape = {}
    for d = 1, args.n do shape[d] = 1 end
    shape[k] = s.size
    out[k] = s:reshape(shape)
  end
  return table.unpack(out, 1, args.n)
end

-- ---- writing in place ----------------------------------------------------------------------------

-- Writes v (an array of the positions' count) at the 0-based flat positions z of x, in place
-- and out of the tape; a non-contiguous x through a contiguous copy assigned back.
local function write_flat(x, z, v)
  if z.size == 0 then return x end
  local target = x:is_contiguous() and x:view(x.size) or x:contiguous():reshape(x.size)
  gpu.no_grad(function()
    target:index_put_(1, z:reshape(z.size) + 1, v:astype(x.dtype):reshape(z.size))
  end)
  if not x:is_contiguous() then gpu.no_grad(function() x[":"] = target:reshape(x.shape) end) end
  return x
end

-- v flattened and repeated (cycled) to count elements, in x's dtype and on its device
local function cycled(fname, v, count, x, argn, what)
  if type(v) == "number" or type(v) == "boolean" then
    return gpu.full({ count }, v, { dtype = x.dtype, device = x.device })
  end
  if type(v) == "table" and not is_array(v) then
    local t = list_of(fname, v, argn, what)
    for i, e in ipairs(t) do
      if type(e) ~= "number" and type(e) ~= "boolean" then argerror(fname, argn, "%s entry %d must be a number", what, i) end
    end
    v = gpu.array(#t > 0 and t or {}, { dtype = x.dtype, device = x.device })
  end
  options.check_array(v, fname, argn, what)
  if v.device ~= x.device then argerror(fname, argn, "%s are on %s, the array on %s: use :to()", what, v.device, x.device) end
  if count == 0 then return gpu.zeros({ 0 }, { dtype = x.dtype, device = x.device }) end
  if v.size == 0 then argerror(fname, argn, "cannot take values from an empty %s", what) end
  local flat = v:reshape(v.size):astype(x.dtype)
  if v.size == count then return flat end
  return gpu.take(flat, gpu.mod(arange(count, x.device), v.size) + 1)
end

-- a, an array the in-place routines may write: not one the tape tracks (the write would
-- not be recorded; the ops' own in-place forms refuse it the same way)
local function writable(fname, a)
  options.check_array(a, fname, 1, "a")
  if require("gpu.autograd").tracked(a) then
    argerror(fname, 1, "%s writes in place and a requires grad: it would not be recorded (run it in gpu.no_grad)", fname)
  end
end

local PUT = options.declare("put", { mode = { type = "string", default = "raise", choices = { "raise", "wrap", "clip" } } },
  { example = "gpu.put(gpu.zeros(3), 1, 5, %s)" })

-- put(a, ind, v [, {mode = "raise"}]): a's elements (row-major, as a.flat) at the 1-based
-- positions ind (an integer, a list or an integer array; negatives from the end) set to v
-- (a number, a list or an array, cycled), in place; returns a. mode "wrap": positions
-- modulo the size; "clip": below 1 the first, above the size the last. A position given
-- twice takes one of its values (the last on the cpu).
function M.put(a, ind, v, opts)
  local fname = "put"
  writable(fname, a)
  local o = PUT:check(opts, 4)
  local idx
  if is_array(ind) then
    options.check_array(ind, fname, 2, "ind")
    if not is_int_dtype(ind.dtype) then argerror(fname, 2, "ind must be an integer array, got %s", ind.dtype) end
    if ind.device ~= a.device then argerror(fname, 2, "ind is on %s, a on %s: use :to()", ind.device, a.device) end
    idx = ind:astype("int64"):reshape(ind.size)
  else
    idx = int64((int_list(fname, ind, 2, "ind", true)), a.device)
  end
  if idx.size > 0 and a.size == 0 and o.mode ~= "raise" then argerror(fname, 1, "cannot put into an empty array") end
  local z = positions0(fname, idx, a.size, o.mode, -a.size, 2, "ind")
  local vals = cycled(fname, v, idx.size, a, 3, "v")
  return write_flat(a, z, vals)
end

-- putmask(a, mask, values): a.flat[i] = values.flat[i % len(values)] where mask (a's shape)
-- is true, in place; returns a
function M.putmask(a, mask, values)
  local fname = "putmask"
  writable(fname, a)
  options.check_array(mask, fname, 2, "mask")
  if mask.dtype ~= "bool" then argerror(fname, 2, "mask must be a bool array, got %s", mask.dtype) end
  if mask.size ~= a.size then argerror(fname, 2, "mask and a must be the same size, got %d and %d", mask.size, a.size) end
  if mask.device ~= a.device then argerror(fname, 2, "mask is on %s, a on %s: use :to()", mask.device, a.device) end
  local vals = cycled(fname, values, a.size, a, 3, "values")
  if a.size == 0 then return a end
  local r = gpu.where(mask:reshape(a.shape), vals:reshape(a.shape), a)
  local z = arange(a.size, a.device)
  return write_flat(a, z, r:reshape(a.size))
end

-- place(a, mask, vals): the elements of a where mask is true set to vals in turn (cycled),
-- in place; returns a
function M.place(a, mask, vals)
  local fname = "place"
  writable(fname, a)
  options.check_array(mask, fname, 2, "mask")
  if mask.dtype ~= "bool" then argerror(fname, 2, "mask must be a bool array, got %s", mask.dtype) end
  if mask.size ~= a.size then argerror(fname, 2, "mask and a must be the same size, got %d and %d", mask.size, a.size) end
  if mask.device ~= a.device then argerror(fname, 2, "mask is on %s, a on %s: use :to()", mask.device, a.device) end
  local z = gpu.nonzero(mask:reshape(a.size))[1] - 1
  local v = cycled(fname, vals, z.size, a, 3, "vals")
  return write_flat(a, z, v)
end

-- fill_diagonal(a, val [, wrap = false]): the main diagonal of a (2-D, or every axis of one
-- length) set to val (a number or an array, cycled), in place; returns a. A tall 2-D a
-- stops at its last column unless wrap, as NumPy's.
function M.fill_diagonal(a, val, wrap)
  local fname = "fill_diagonal"
  writable(fname, a)
  if wrap ~= nil and type(wrap) ~= "boolean" then argerror(fname, 3, "wrap must be a boolean, got %s", type_name(wrap)) end
  if a.ndim < 2 then argerror(fname, 1, "a must have at least 2 axes, got %d", a.ndim) end
  local step, stop = 0, a.size
  if a.ndim == 2 then
    step = a.shape[2] + 1
    if not wrap then stop = math.min(stop, a.shape[2] * a.shape[2]) end
  else
    local p = 1
    for d = 1, a.ndim - 1 do
      if a.shape[d] ~= a.shape[d + 1] then argerror(fname, 1, "all axes must have the same length, got %s", shape_str(a.shape)) end
      p = p * a.shape[d]
      step = step + p
    end
    step = step + 1
  end
  local count = stop > 0 and (stop - 1) // step + 1 or 0
  local z = arange(count, a.device) * step
  return write_flat(a, z, cycled(fname, val, count, a, 2, "val"))
end

-- ---- selecting ------------------------------------------------------------------------------------

-- compress(condition, a [, axis]): the slices of a along axis (a flattened without) where
-- condition (a 1-D bool array or list of booleans, at most the axis' length) is true
function M.compress(condition, a, axis)
  local fname = "compress"
  options.check_array(a, fname, 2, "a")
  if type(condition) == "table" and not is_array(condition) then
    local t = list_of(fname, condition, 1, "condition")
    for i, c in ipairs(t) do
      if type(c) ~= "boolean" then argerror(fname, 1, "condition entry %d must be a boolean, got %s", i, type_name(c)) end
    end
    condition = gpu.array(#t > 0 and t or {}, { dtype = "bool", device = a.device })
  end
  options.check_array(condition, fname, 1, "condition")
  if condition.dtype ~= "bool" then argerror(fname, 1, "condition must be a bool array, got %s", condition.dtype) end
  if condition.ndim ~= 1 then argerror(fname, 1, "condition must be 1-D, got %d axes", condition.ndim) end
  if axis == nil then
    a = a:reshape(a.size)
    axis = 1
  else
    axis = norm_axis(fname, axis, a.ndim, 3)
  end
  if condition.device ~= a.device then
    argerror(fname, 1, "condition is on %s, a on %s: use :to()", condition.device, a.device)
  end
  local pos = gpu.nonzero(condition)[1]
  local n = a.shape[axis]
  if pos.size > 0 and pos[pos.size] > n then
    argerror(fname, 1, "condition is true at %d, past the axis' length %d", pos[pos.size], n)
  end
  return a:index(axis, pos)
end

local CHOOSE = options.declare("choose", { mode = { type = "string", default = "raise", choices = { "raise", "wrap", "clip" } } },
  { example = "gpu.choose(gpu.array({1, 2}, {dtype = 'int64'}), {gpu.zeros(2), gpu.ones(2)}, %s)" })

-- choose(a, choices [, {mode = "raise"}]): choices[a] elementwise (a: 1-based integers,
-- broadcast with the choices: arrays or numbers); mode "wrap" (modulo the count,
-- negatives from the end) or "clip"
function M.choose(a, choices, opts)
  local fname = "choose"
  options.check_array(a, fname, 1, "a")
  if not is_int_dtype(a.dtype) then argerror(fname, 1, "a must be an integer array, got %s", a.dtype) end
  local cs = list_of(fname, choices, 2, "choices")
  if #cs == 0 then argerror(fname, 2, "choices must not be empty") end
  for i, c in ipairs(cs) do
    if is_array(c) then options.check_array(c, fname, 2, "choice " .. i)
    elseif type(c) ~= "number" then argerror(fname, 2, "choice %d must be a gpu.array or a number, got %s", i, type_name(c)) end
  end
  local o = CHOOSE:check(opts, 3)
  local z = positions0(fname, a:astype("int64"), #cs, o.mode, 1, 1, "a")
  local r = cs[#cs]
  if type(r) == "number" then r = gpu.full({}, r, { dtype = gpu.result_type(table.unpack(cs)), device = a.device }) end
  r = gpu.where(z:eq(#cs - 1), r, r)
  for k = #cs - 1, 1, -1 do r = gpu.where(z:eq(k - 1), cs[k], r) end
  return r
end

-- select(condlist, choicelist [, default = 0]): elementwise, the choice of the first true
-- condition, default where none is
function M.select(condlist, choicelist, default)
  local fname = "select"
  local conds = list_of(fname, condlist, 1, "condlist")
  local chs = list_of(fname, choicelist, 2, "choicelist")
  if #conds ~= #chs then argerror(fname, 2, "condlist has %d entries, choicelist %d: they must agree", #conds, #chs) end
  if #conds == 0 then argerror(fname, 1, "select with an empty condition list is not possible") end
  for i, c in ipairs(conds) do
    options.check_array(c, fname, 1, "condition " .. i)
    if c.dtype ~= "bool" then argerror(fname, 1, "condition %d must be a bool array, got %s", i, c.dtype) end
  end
  local like
  for i, c in ipairs(chs) do
    if is_array(c) then options.check_array(c, fname, 2, "choice " .. i); like = like or c
    elseif type(c) ~= "number" then argerror(fname, 2, "choice %d must be a gpu.array or a number, got %s", i, type_name(c)) end
  end
  if default == nil then default = 0 end
  if not is_array(default) and type(default) ~= "number" then
    argerror(fname, 3, "default must be a gpu.array or a number, got %s", type_name(default))
  end
  if is_array(default) then options.check_array(default, fname, 3, "default") end
  local all = { table.unpack(chs) }
  all[#all + 1] = default
  local dtype = gpu.result_type(table.unpack(all))
  local dev = (like or conds[1]).device
  local r = is_array(default) and default:astype(dtype) or gpu.full({}, default, { dtype = dtype, device = dev })
  for k = #conds, 1, -1 do
    local c = chs[k]
    if type(c) == "number" then c = gpu.full({}, c, { dtype = dtype, device = dev }) end
    r = gpu.where(conds[k], c, r)
  end
  return r:astype(dtype)
end

return M
