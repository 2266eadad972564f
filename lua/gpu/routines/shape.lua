-- gpu.routines.shape — pad, meshgrid, take_along_axis / put_along_axis, gather / scatter /
-- scatter_add, atleast_1d/2d/3d, broadcast_to, broadcast_arrays, swapaxes, moveaxis, rot90,
-- nan_to_num: views, index arrays built with arange and one take or index_put_ each, so
-- both devices run them; the gathering ones (pad, take_along_axis, gather) and the views are
-- differentiable, the in-place writes are not. Indices and axes are 1-based.
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"

local M = {}

local norm_axis = basic.norm_axis
local function arange(n, dev) return gpu.arange(n, { device = dev }) end

-- ---- pad --------------------------------------------------------------------------------------

local PAD = options.declare("pad", {
  mode = { type = "string", default = "constant", choices = { "constant", "edge", "reflect", "symmetric", "wrap" } },
  constant_values = { type = "number|table", default = 0 },
}, { example = "gpu.pad(gpu.ones(2), 1, %s)" })

local function is_pair(t)
  return type(t) == "table" and #t == 2 and math.type(t[1]) == "integer" and math.type(t[2]) == "integer"
end

-- NumPy's pad_width forms -> one {before, after} per axis: n, {n}, {b, a}, {{b, a}}, or
-- {{b1, a1}, {b2, a2}, ...}.
local function pad_pairs(fname, pw, ndim)
  local pairs_ = {}
  local function all(b, a) for i = 1, ndim do pairs_[i] = { b, a } end end
  if math.type(pw) == "integer" then
    all(pw, pw)
  elseif type(pw) == "table" and #pw == 1 and math.type(pw[1]) == "integer" then
    all(pw[1], pw[1])
  elseif is_pair(pw) then
    all(pw[1], pw[2])
  elseif type(pw) == "table" and #pw == 1 and is_pair(pw[1]) then
    all(pw[1][1], pw[1][2])
  elseif type(pw) == "table" and #pw == ndim then
    for i = 1, ndim do
      if not is_pair(pw[i]) then options.argerror(fname, 2, "pad_width entry %d must be {before, after}", i) end
      pairs_[i] = { pw[i][1], pw[i][2] }
    end
  else
    options.argerror(fname, 2, "pad_width must be n, {before, after} or one {before, after} per axis (%d), got %s",
      ndim, options.type_name(pw))
  end
  for i = 1, ndim do
    if pairs_[i][1] < 0 or pairs_[i][2] < 0 then options.argerror(fname, 2, "pad_width must be non-negative") end
  end
  return pairs_
end

-- The 0-based source position of each output position p (0-based, before the start
-- negative) for the index modes.
local remap = {
  edge = function(p, n) return p:clip(0, n - 1) end,
  wrap = function(p, n) return gpu.mod(p, n) end,
  symmetric = function(p, n)
    local m = gpu.mod(p, 2 * n)
    return gpu.where(m:ge(n), (2 * n - 1) - m, m)
  end,
  reflect = function(p, n)
    if n == 1 then return p * 0 end
    local m = gpu.mod(p, 2 * (n - 1))
    return gpu.where(m:ge(n), (2 * (n - 1)) - m, m)
  end,
}

-- The constant values for axis i: {before, after}.
local function constants(fname, cv, i)
  if type(cv) == "number" then return cv, cv end
  if #cv == 2 and type(cv[1]) == "number" and type(cv[2]) == "number" then return cv[1], cv[2] end
  if type(cv[i]) == "table" and type(cv[i][1]) == "number" and type(cv[i][2]) == "number" then return cv[i][1], cv[i][2] end
  if #cv == 1 and type(cv[1]) == "number" then return cv[1], cv[1] end
  options.argerror(fname, 3, "option 'constant_values' must be a number, {before, after} or one pair per axis")
end

-- pad(x, pad_width [, {mode = "constant", constant_values = 0}]): NumPy's pad for the modes
-- constant, edge, reflect, symmetric, wrap.
function M.pad(x, pad_width, opts)
  local fname = "pad"
  options.check_array(x, fname, 1, "x")
  local o = PAD:check(opts, 3)
  local pw = pad_pairs(fname, pad_width, x.ndim)
  for i = 1, x.ndim do
    local b, a = pw[i][1], pw[i][2]
    if b > 0 or a > 0 then
      local n = x.shape[i]
      if o.mode == "constant" then
        local cb, ca = constants(fname, o.constant_values, i)
        local parts = {}
        local function block(len, v)
          local shape = x.shape
          shape[i] = len
          return gpu.full(shape, v, { dtype = x.dtype, device = x.device })
        end
        if b > 0 then parts[#parts + 1] = block(b, cb) end
        parts[#parts + 1] = x
        if a > 0 then parts[#parts + 1] = block(a, ca) end
        x = gpu.concat(parts, i)
      else
        if n == 0 then options.raise("%s: can't extend the empty axis %d with mode '%s'", fname, i, o.mode) end
        local p = arange(b + n + a, x.device) - b
        x = x:index(i, remap[o.mode](p, n) + 1)
      end
    end
  end
  return x
end

-- ---- meshgrid -----------------------------------------------------------------------------------

local MESH = options.declare("meshgrid", {
  indexing = { type = "string", default = "xy", choices = { "xy", "ij" } },
  copy = { type = "boolean", default = true },
}, { example = "gpu.meshgrid(gpu.ones(2), gpu.ones(3), %s)" })

-- meshgrid(x1, x2, ... [, {indexing = "xy", copy = true}]): the coordinate arrays of the
-- flattened inputs ("xy": the first two axes swapped, as NumPy); copy = false gives the
-- broadcast (read-only) views.
function M.meshgrid(...)
  local fname = "meshgrid"
  local args = table.pack(...)
  local opts
  if args.n > 0 and type(args[args.n]) == "table" and not options.is_array(args[args.n]) then
    opts = args[args.n]
    args.n = args.n - 1
  end
  local o = MESH:check(opts, args.n + 1)
  local xs, shape = {}, {}
  for i = 1, args.n do
    xs[i] = options.check_array(args[i], fname, i, "x" .. i)
    xs[i] = xs[i]:reshape(xs[i].size)
    shape[i] = xs[i].size
  end
  local axis = {}
  for i = 1, args.n do axis[i] = i end
  if o.indexing == "xy" and args.n >= 2 then
    axis[1], axis[2] = 2, 1
    shape[1], shape[2] = shape[2], shape[1]
  end
  local out = {}
  for i = 1, args.n do
    local s = {}
    for d = 1, args.n do s[d] = 1 end
    s[axis[i]] = xs[i].size
    local g = xs[i]:reshape(s):expand(shape)
    out[i] = o.copy and g:contiguous() or g
  end
  return table.unpack(out, 1, args.n)
end

-- ---- take_along_axis, put_along_axis, gather, scatter --------------------------------------------

-- The flat 1-based positions into x (row-major, its logical shape) of idx along axis, the
-- other axes' coordinates those of idx's own elements (broadcast: where x has one element
-- on an axis, that one). idx is checked against x's extent on axis (negatives from the end).
local function flat_index(fname, x, idx, axis, argn)
  options.check_array(idx, fname, argn, "indices")
  if idx.dtype ~= "int64" and idx.dtype ~= "int32" then
    options.argerror(fname, argn, "indices must be int64 or int32, got %s", idx.dtype)
  end
  if idx.ndim ~= x.ndim then
    options.argerror(fname, argn, "indices must have x's %d axes, got %d", x.ndim, idx.ndim)
  end
  local n = x.shape[axis]
  idx = idx:astype("int64")
  if idx.size > 0 then
    local bad = gpu.logical_or(idx:gt(n), idx:lt(-n)):logical_or(idx:eq(0))
    if bad:any():item() then
      options.argerror(fname, argn, "an index is out of range for axis %d with size %d (indices are 1-based)", axis, n)
    end
  end
  local flat = (gpu.where(idx:lt(0), idx + n, idx - 1))
  local stride, strides = 1, {}
  for d = x.ndim, 1, -1 do strides[d] = stride; stride = stride * x.shape[d] end
  flat = flat * strides[axis]
  for d = 1, x.ndim do
    if d ~= axis and x.shape[d] ~= 1 then
      local s = {}
      for k = 1, x.ndim do s[k] = 1 end
      s[d] = idx.shape[d]
      flat = flat + arange(idx.shape[d], x.device):reshape(s) * strides[d]
    end
  end
  return flat + 1
end

-- The shape checks: take_along_axis broadcasts (sizes equal or 1), gather needs idx's
-- extent no larger than x's on the other axes (PyTorch).
local function check_extents(fname, x, idx, axis, broadcast, argn)
  for d = 1, x.ndim do
    if d ~= axis and idx.ndim == x.ndim then
      local ok
      if broadcast then ok = idx.shape[d] == x.shape[d] or x.shape[d] == 1 or idx.shape[d] == 1
      else ok = idx.shape[d] <= x.shape[d] end
      if not ok then
        options.argerror(fname, argn, "indices have %d elements on axis %d, x %d", idx.shape[d], d, x.shape[d])
      end
    end
  end
end

-- idx broadcast against x on the axes other than axis
local function broadcast_idx(x, idx, axis)
  local shape, need = {}, false
  for d = 1, x.ndim do
    shape[d] = d == axis and idx.shape[d] or math.max(x.shape[d], idx.shape[d])
    if shape[d] ~= idx.shape[d] then need = true end
  end
  return need and idx:expand(shape) or idx
end

-- for gpu.routines.tensor's scatter_reduce (names with '_' are not routines)
M._flat_index, M._check_extents = flat_index, check_extents

-- take_along_axis(x, idx, axis): NumPy's (1-based idx, negatives from the end)
function M.take_along_axis(x, idx, axis)
  local fname = "take_along_axis"
  options.check_array(x, fname, 1, "x")
  if axis == nil then
    options.check_array(idx, fname, 2, "indices")
    return gpu.take(x, idx)
  end
  axis = norm_axis(fname, axis, math.max(x.ndim, 1), 3)
  options.check_array(idx, fname, 2, "indices")
  check_extents(fname, x, idx, axis, true, 2)
  idx = broadcast_idx(x, idx, axis)
  return gpu.take(x, flat_index(fname, x, idx, axis, 2))
end

-- gather(x, axis, idx): PyTorch's (idx no larger than x on the other axes; 1-based)
function M.gather(x, axis, idx)
  local fname = "gather"
  options.check_array(x, fname, 1, "x")
  axis = norm_axis(fname, axis, math.max(x.ndim, 1), 2)
  options.check_array(idx, fname, 3, "index")
  check_extents(fname, x, idx, axis, false, 3)
  return gpu.take(x, flat_index(fname, x, idx, axis, 3))
end

-- Writes values (an array broadcast to idx's shape, or a number) at idx along axis of x,
-- in place (accumulate: adds). x must be writable; a non-contiguous x is written through a
-- contiguous copy assigned back.
local function put(fname, x, idx, values, axis, accumulate, argn)
  local flat = flat_index(fname, x, idx, axis, argn)
  local target = x:is_contiguous() and x:view(x.size) or x:contiguous():reshape(x.size)
  local v
  if type(values) == "number" then
    v = gpu.full(flat.shape, values, { dtype = x.dtype, device = x.device })
  else
    options.check_array(values, fname, argn + 1, "values")
    v = values:astype(x.dtype):expand(flat.shape)
  end
  gpu.no_grad(function()
    target:index_put_(1, flat:reshape(flat.size), v:reshape(flat.size), { accumulate = accumulate or nil })
  end)
  if not x:is_contiguous() then x[":"] = target:reshape(x.shape) end
  return x
end

-- put_along_axis(x, idx, values, axis): NumPy's, in place; returns x
function M.put_along_axis(x, idx, values, axis)
  local fname = "put_along_axis"
  options.check_array(x, fname, 1, "x")
  axis = norm_axis(fname, axis, math.max(x.ndim, 1), 4)
  options.check_array(idx, fname, 2, "indices")
  check_extents(fname, x, idx, axis, true, 2)
  return put(fname, x, broadcast_idx(x, idx, axis), values, axis, false, 2)
end

-- scatter(x, axis, idx, src) / scatter_add: PyTorch's out-of-place forms: a copy of x with
-- src's elements (or a number) written at idx along axis (scatter_add: added)
local function scatter(fname, accumulate)
  return function(x, axis, idx, src)
    options.check_array(x, fname, 1, "x")
    axis = norm_axis(fname, axis, math.max(x.ndim, 1), 2)
    options.check_array(idx, fname, 3, "index")
    check_extents(fname, x, idx, axis, false, 3)
    if options.is_array(src) then
      for d = 1, idx.ndim do
        if src.ndim ~= idx.ndim or idx.shape[d] > src.shape[d] then
          options.argerror(fname, 4, "src must be at least index's shape %s, got %s", options.shape_str(idx.shape),
            options.shape_str(src.shape))
        end
      end
      local key = {}
      for d = 1, idx.ndim do key[d] = { 1, idx.shape[d] } end
      if idx.ndim > 0 then src = src[key] end
    elseif type(src) ~= "number" then
      options.argerror(fname, 4, "src must be a gpu.array or a number, got %s", options.type_name(src))
    end
    return put(fname, x:copy(), idx, src, axis, accumulate, 3)
  end
end
M.scatter = scatter("scatter", false)
M.scatter_add = scatter("scatter_add", true)

-- ---- shapes ---------------------------------------------------------------------------------------

local function atleast(fname, nd, place)
  return function(...)
    local args = table.pack(...)
    local out = {}
    for i = 1, args.n do
      local x = options.check_array(args[i], fname, i, "x")
      if x.ndim < nd then x = x:reshape(place(x.shape)) end
      out[i] = x
    end
    return table.unpack(out, 1, args.n)
  end
end
M.atleast_1d = atleast("atleast_1d", 1, function() return { 1 } end)
M.atleast_2d = atleast("atleast_2d", 2, function(s) return { 1, s[1] or 1 } end)
M.atleast_3d = atleast("atleast_3d", 3, function(s)
  if #s == 0 then return { 1, 1, 1 } elseif #s == 1 then return { 1, s[1], 1 } end
  return { s[1], s[2], 1 }
end)

-- A plain copy of the sizes (a table's own __len is not trusted: #shape of a table whose
-- __len says math.maxinteger made broadcast_to loop for ever; apifuzz seed 13).
local function read_shape(fname, shape, argn)
  if math.type(shape) == "integer" then return { shape } end
  if type(shape) ~= "table" then options.argerror(fname, argn, "shape must be a table of sizes, got %s", options.type_name(shape)) end
  local out = {}
  for i, n in ipairs(shape) do
    if math.type(n) ~= "integer" or n < 0 then options.argerror(fname, argn, "shape entry %d must be a size >= 0", i) end
    out[i] = n
  end
  return out
end

-- The broadcast shape of the shapes, or an error naming fname.
local function broadcast_shape(fname, shapes)
  local nd = 0
  for _, s in ipairs(shapes) do nd = math.max(nd, #s) end
  local out = {}
  for d = 1, nd do
    local n = 1
    for k, s in ipairs(shapes) do
      local m = s[d - (nd - #s)] or 1
      if m ~= 1 then
        if n ~= 1 and m ~= n then
          options.raise("%s: shape %s of operand %d does not broadcast with the others", fname, options.shape_str(s), k)
        end
        n = m
      end
    end
    out[d] = n
  end
  return out
end

-- broadcast_to(x, shape): a read-only broadcast view, leading axes prepended as NumPy
function M.broadcast_to(x, shape)
  local fname = "broadcast_to"
  options.check_array(x, fname, 1, "x")
  shape = read_shape(fname, shape, 2)
  if #shape < x.ndim then options.argerror(fname, 2, "shape %s has fewer axes than x (%d)", options.shape_str(shape), x.ndim) end
  local s = {}
  for d = 1, #shape do s[d] = x.shape[d - (#shape - x.ndim)] or 1 end
  for d = 1, #shape do
    if s[d] ~= shape[d] and s[d] ~= 1 then
      options.argerror(fname, 2, "x of shape %s does not broadcast to %s", options.shape_str(x.shape), options.shape_str(shape))
    end
  end
  return x:reshape(s):expand(shape)
end

-- broadcast_arrays(a, b, ...): the operands as views of their broadcast shape
function M.broadcast_arrays(...)
  local fname = "broadcast_arrays"
  local args, shapes = table.pack(...), {}
  for i = 1, args.n do shapes[i] = options.check_array(args[i], fname, i, "x").shape end
  local shape = broadcast_shape(fname, shapes)
  local out = {}
  for i = 1, args.n do out[i] = M.broadcast_to(args[i], shape) end
  return table.unpack(out, 1, args.n)
end

-- swapaxes(x, a, b): a view with the two axes exchanged
function M.swapaxes(x, a, b)
  local fname = "swapaxes"
  options.check_array(x, fname, 1, "x")
  a, b = norm_axis(fname, a, x.ndim, 2), norm_axis(fname, b, x.ndim, 3)
  if a == b then return x:view(x.shape) end
  local perm = {}
  for i = 1, x.ndim do perm[i] = i end
  perm[a], perm[b] = b, a
  return x:permute(perm)
end

-- moveaxis(x, source, destination): a view; both a number or equal-length tables
function M.moveaxis(x, src, dst)
  local fname = "moveaxis"
  options.check_array(x, fname, 1, "x")
  if type(src) ~= "table" then src = { src } end
  if type(dst) ~= "table" then dst = { dst } end
  if #src ~= #dst then options.argerror(fname, 3, "source and destination must have the same number of axes") end
  local s, d, used, placed = {}, {}, {}, {}
  for i = 1, #src do
    s[i], d[i] = norm_axis(fname, src[i], x.ndim, 2), norm_axis(fname, dst[i], x.ndim, 3)
    if used[s[i]] then options.argerror(fname, 2, "repeated axis %d in source", s[i]) end
    if placed[d[i]] then options.argerror(fname, 3, "repeated axis %d in destination", d[i]) end
    used[s[i]], placed[d[i]] = true, true
  end
  local rest = {}
  for i = 1, x.ndim do if not used[i] then rest[#rest + 1] = i end end
  local perm, k = {}, 1
  for i = 1, #src do perm[d[i]] = s[i] end
  for i = 1, x.ndim do
    if perm[i] == nil then perm[i] = rest[k]; k = k + 1 end
  end
  return x:permute(perm)
end

-- rot90(x [, k = 1 [, axes = {1, 2}]]): NumPy's, a view (flips and a transpose)
function M.rot90(x, k, axes)
  local fname = "rot90"
  options.check_array(x, fname, 1, "x")
  k = basic.int_arg(fname, k, 2, "k", 1) % 4
  axes = axes or { 1, 2 }
  if type(axes) ~= "table" or #axes ~= 2 then options.argerror(fname, 3, "axes must be {a, b}") end
  if x.ndim < 2 then options.argerror(fname, 1, "x must have at least 2 axes, got %d", x.ndim) end
  local a, b = norm_axis(fname, axes[1], x.ndim, 3), norm_axis(fname, axes[2], x.ndim, 3)
  if a == b then options.argerror(fname, 3, "axes must be different") end
  if k == 0 then return x:view(x.shape) end
  if k == 2 then return x:flip({ a, b }) end
  if k == 1 then return M.swapaxes(x:flip(b), a, b) end
  return M.swapaxes(x, a, b):flip(b)
end

-- ---- nan_to_num -------------------------------------------------------------------------------------

local FMAX = { float64 = 1.7976931348623157e308, float32 = 3.4028234663852886e38, float16 = 65504.0,
  bfloat16 = 3.3895313892515355e38 }

local NAN_TO_NUM = options.declare("nan_to_num", {
  nan = { type = "number", default = 0 },
  posinf = { type = "number" },
  neginf = { type = "number" },
  copy = { type = "boolean", default = true },
}, { example = "gpu.nan_to_num(gpu.ones(2), %s)" })

-- nan_to_num(x [, {nan = 0, posinf = dtype max, neginf = dtype min}]): a new array (NumPy's
-- copy = false is not offered: writes into x with {copy = false})
function M.nan_to_num(x, opts)
  options.check_array(x, "nan_to_num", 1, "x")
  local o = NAN_TO_NUM:check(opts, 2)
  if not basic.is_float(x.dtype) then return o.copy and x:copy() or x end
  local big = FMAX[x.dtype]
  local y = gpu.where(gpu.isnan(x), o.nan, x)
  y = gpu.where(y:eq(math.huge), o.posinf or big, y)
  y = gpu.where(y:eq(-math.huge), o.neginf or -big, y)
  if o.copy then return y end
  x[":"] = y
  return x
end

return M
