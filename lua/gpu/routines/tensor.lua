-- gpu.routines.tensor: PyTorch's tensor helpers, written over the dispatched ops so both
-- devices run them: masked_fill, index_add / index_copy / index_fill, scatter_reduce (and
-- their in-place `_` forms), tensor_split, chunk, unbind, narrow, unflatten,
-- diag_embed, block_diag, cartesian_prod, combinations, type_as / view_as / reshape_as /
-- expand_as, new_zeros / new_ones / new_full / new_empty, the random in-place fills and the
-- random `*_like` constructors. Dims and indices are 1-based (negatives from the end).
--
-- The out-of-place forms are differentiable where PyTorch's are: the ones made of
-- differentiable ops by construction, the scatters through autograd.record. Under autograd
-- the in-place forms are recorded from their out-of-place forms (gpu.autograd's
-- inplace_via), as the dispatched in-place ops are.
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"
local shape_part = require "gpu.routines.shape"

local M = {}

local G = gpu._grad
local norm_axis, int_arg = basic.norm_axis, basic.int_arg
local check_array, argerror, shape_str = options.check_array, options.argerror, options.shape_str

local function autograd() return require "gpu.autograd" end
local function no_grad(f) return gpu.no_grad(f) end

-- The checks of an in-place routine, before it computes or draws anything: x is writable
-- (not a broadcast view). True when the call is to be recorded (grad on, and x or an
-- operand requires grad): the routine then hands its out-of-place form to the autograd
-- engine (record), as the dispatch does its in-place ops.
local function in_place(fname, x, ...)
  local ok, why = gpu._writable(x)
  if not ok then options.raise("%s: %s", fname, why) end
  if not G.grad_enabled() then return false end
  for i = 1, select("#", ...) + 1 do
    local v = select(i, x, ...)
    if options.is_array(v) and G.node(v) ~= nil then return true end
  end
  return false
end

-- x takes compute(x0)'s values, recorded: x0 is x as it was (gpu.autograd's inplace_via)
local function record(fname, x, compute) return autograd()._engine.inplace_via(fname, x, compute) end

-- Writes y (x's shape) into x, in place, and returns x.
local function write_into(x, y)
  x[":"] = y
  return x
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-- The key of the elements first..last (1-based, inclusive) of an axis of n elements: none
-- when last < first (a range past the end; ":" of an empty axis), as x[key] takes them.
local function span(first, last, n)
  if last < first then return n > 0 and { n + 1, n } or ":" end
  return { first, last }
end

-- The shape of `shape` with entry d set to n.
local function with(shape, d, n)
  local s = {}
  for i = 1, #shape do s[i] = shape[i] end
  s[d] = n
  return s
end

-- A value for x's elements: a number (a boolean for bool arrays) or a 0-d array (its dtype
-- cast to x's, PyTorch's rule for masked_fill and index_fill).
local function fill_value(fname, x, v, argn)
  if options.is_array(v) then
    check_array(v, fname, argn, "value")
    if v.ndim ~= 0 then argerror(fname, argn, "value must be a number or a 0-d array, got an array of %d axes", v.ndim) end
    if v.device ~= x.device then argerror(fname, argn, "value is on %s, x on %s (use :to())", v.device, x.device) end
    return v.dtype == x.dtype and v or v:astype(x.dtype)
  end
  if type(v) == "boolean" then
    if x.dtype ~= "bool" then argerror(fname, argn, "value must be a number for a %s array, got a boolean", x.dtype) end
    return gpu.full({}, v, { dtype = "bool", device = x.device })
  end
  local complex = type(v) == "userdata" and (getmetatable(v) or {}).__name == "gpu.complex"
  if type(v) ~= "number" and not complex then
    argerror(fname, argn, "value must be a number or a 0-d array, got %s", options.type_name(v))
  end
  if complex and gpu._dtypes[x.dtype].kind ~= "complex" then
    argerror(fname, argn, "a complex value for a %s array", x.dtype)
  end
  return gpu.full({}, v, { dtype = x.dtype, device = x.device })
end

-- ---- masked_fill ------------------------------------------------------------------------------------

-- mask: a bool array on x's device that broadcasts with x (in place: to x's own shape)
local function check_mask(fname, x, mask, inplace)
  check_array(mask, fname, 2, "mask")
  if mask.dtype ~= "bool" then argerror(fname, 2, "mask must be a bool array, got %s", mask.dtype) end
  if mask.device ~= x.device then argerror(fname, 2, "mask is on %s, x on %s (use :to())", mask.device, x.device) end
  local xs, ms = x.shape, mask.shape
  local fits = not inplace or #ms <= #xs
  for i = 1, math.min(#ms, #xs) do
    local m, n = ms[#ms - i + 1], xs[#xs - i + 1]
    if m ~= n and m ~= 1 and (inplace or n ~= 1) then fits = false end
  end
  if not fits then
    argerror(fname, 2, "mask of shape %s does not broadcast to x's shape %s", shape_str(ms), shape_str(xs))
  end
end

-- masked_fill(x, mask, value): x with value where mask is true (mask and x broadcast)
function M.masked_fill(x, mask, value)
  local fname = "masked_fill"
  check_array(x, fname, 1, "x")
  check_mask(fname, x, mask, false)
  return gpu.where(mask, fill_value(fname, x, value, 3), x)
end

-- x:masked_fill_(mask, value): in place (mask broadcast to x's shape); returns x
function M.masked_fill_(x, mask, value)
  local fname = "masked_fill_"
  check_array(x, fname, 1, "x")
  check_mask(fname, x, mask, true)
  local v = fill_value(fname, x, value, 3)
  if in_place(fname, x, v) then return record(fname, x, function(x0) return gpu.where(mask, v, x0) end) end
  return write_into(x, gpu.where(mask, v, x))
end

-- ---- index_add, index_copy, index_fill ---------------------------------------------------------------

-- The index of the index_* ops: a 1-D (or 0-d) int64/int32 array of 1-based positions
-- along an axis (negatives from the end), as 1-D. The positions themselves are checked by
-- the index ops that read them (index_put_, index: "index 4 is out of range for axis 1
-- with size 3 ..."), before anything is written.
local function axis_index(fname, index, argn)
  check_array(index, fname, argn, "index")
  if index.dtype ~= "int64" and index.dtype ~= "int32" then
    argerror(fname, argn, "index must be int64 or int32, got %s", index.dtype)
  end
  if index.ndim > 1 then argerror(fname, argn, "index must be 1-D, got %d axes", index.ndim) end
  return index.ndim == 1 and index or index:reshape(1)
end

-- The common arguments of index_add / index_copy: the dim, the positions, and source
-- checked against x (x's shape with index's length on dim, x's dtype and device).
local function index_args(fname, x, dim, index, source)
  check_array(x, fname, 1, "x")
  if x.ndim == 0 then argerror(fname, 1, "x must have at least 1 axis") end
  dim = norm_axis(fname, dim, x.ndim, 2, "dim must be an integer")
  local idx = axis_index(fname, index, 3)
  check_array(source, fname, 4, "source")
  local want = with(x.shape, dim, idx.size)
  if not same_shape(source.shape, want) then
    argerror(fname, 4, "source must have shape %s (x's, with index's length on dim %d), got %s", shape_str(want), dim,
      shape_str(source.shape))
  end
  if source.dtype ~= x.dtype then argerror(fname, 4, "source is %s, x %s (they must be the same dtype)", source.dtype, x.dtype) end
  if source.device ~= x.device then argerror(fname, 4, "source is on %s, x on %s (use :to())", source.device, x.device) end
  return dim, idx
end

-- ones on dim's axis (broadcast against x) with zeros at idx: the elements an index_copy or
-- index_fill leaves as they were
local function kept(x, dim, idx, dtype)
  local m = gpu.ones(x.shape[dim], { dtype = dtype, device = x.device })
  m:index_put_(1, idx, gpu.zeros(idx.size, { dtype = dtype, device = x.device }))
  local s = {}
  for d = 1, x.ndim do s[d] = 1 end
  s[dim] = x.shape[dim]
  return m:reshape(s)
end

local INDEX_ADD = options.declare("index_add", {
  alpha = { type = "number", default = 1 },
}, { example = "gpu.index_add(gpu.zeros(3), 1, gpu.array({1}, {dtype = 'int64'}), gpu.ones(1), %s)" })

-- index_add(x, dim, index, source [, {alpha = 1}]): a copy of x with alpha * source's
-- slices added at the positions index gives along dim (repeats add up); differentiable in
-- x and source.
function M.index_add(x, dim, index, source, opts)
  local fname = "index_add"
  local d, idx = index_args(fname, x, dim, index, source)
  local alpha = INDEX_ADD:check(opts, 5).alpha
  local out = no_grad(function()
    local o = x:copy()
    o:index_put_(d, idx, alpha == 1 and source or source * alpha, { accumulate = true })
    return o
  end)
  return autograd().record(out, { x, source }, function(g)
    local gs = g:index(d, idx)
    return g, alpha == 1 and gs or gs * alpha
  end)
end

-- x:index_add_(dim, index, source [, {alpha = 1}]): in place; returns x
function M.index_add_(x, dim, index, source, opts)
  local fname = "index_add_"
  local d, idx = index_args(fname, x, dim, index, source)
  local alpha = INDEX_ADD:check(opts, 5, fname).alpha
  if in_place(fname, x, source) then
    return record(fname, x, function(x0) return M.index_add(x0, d, idx, source, { alpha = alpha }) end)
  end
  x:index_put_(d, idx, alpha == 1 and source or source * alpha, { accumulate = true })
  return x
end

-- index_copy(x, dim, index, source): a copy of x with source's slices written at the
-- positions index gives along dim (with repeats, one of them wins); differentiable in x
-- and source.
function M.index_copy(x, dim, index, source)
  local fname = "index_copy"
  local d, idx = index_args(fname, x, dim, index, source)
  local out = no_grad(function()
    local o = x:copy()
    o:index_put_(d, idx, source)
    return o
  end)
  return autograd().record(out, { x, source }, function(g)
    return g * kept(x, d, idx, g.dtype), g:index(d, idx)
  end)
end

-- x:index_copy_(dim, index, source): in place; returns x
function M.index_copy_(x, dim, index, source)
  local fname = "index_copy_"
  local d, idx = index_args(fname, x, dim, index, source)
  if in_place(fname, x, source) then return record(fname, x, function(x0) return M.index_copy(x0, d, idx, source) end) end
  x:index_put_(d, idx, source)
  return x
end

local function index_fill_args(fname, x, dim, index, value)
  check_array(x, fname, 1, "x")
  if x.ndim == 0 then argerror(fname, 1, "x must have at least 1 axis") end
  local d = norm_axis(fname, dim, x.ndim, 2, "dim must be an integer")
  local idx = axis_index(fname, index, 3)
  return d, idx, fill_value(fname, x, value, 4)
end

-- index_fill(x, dim, index, value): a copy of x with value (a number or a 0-d array) in
-- the slices index gives along dim; differentiable in x and an array value.
function M.index_fill(x, dim, index, value)
  local d, idx, v = index_fill_args("index_fill", x, dim, index, value)
  local mask = no_grad(function() return kept(x, d, idx, "bool"):logical_not() end)
  return gpu.where(mask, v, x)
end

-- x:index_fill_(dim, index, value): in place; returns x
function M.index_fill_(x, dim, index, value)
  local fname = "index_fill_"
  local d, idx, v = index_fill_args(fname, x, dim, index, value)
  if in_place(fname, x, v) then return record(fname, x, function(x0) return M.index_fill(x0, d, idx, v) end) end
  local mask = kept(x, d, idx, "bool"):logical_not()
  return write_into(x, gpu.where(mask, v, x))
end

-- ---- scatter_reduce ---------------------------------------------------------------------------------

local REDUCES = { sum = true, prod = true, mean = true, amax = true, amin = true }
local SCATTER_REDUCE = options.declare("scatter_reduce", {
  include_self = { type = "boolean", default = true },
}, { example = "gpu.scatter_reduce(gpu.zeros(3), 1, gpu.array({1}, {dtype = 'int64'}), gpu.ones(1), 'sum', %s)" })

-- op(a, b) of the reduction, elementwise
local COMBINE = {
  prod = function(a, b) return a * b end,
  amax = function(a, b) return gpu.maximum(a, b) end,
  amin = function(a, b) return gpu.minimum(a, b) end,
}

-- The reduction (prod, amax, amin) of the values v (1-D) of each position p (1-D int64):
-- the distinct positions (ascending) and their reductions.
--   amax, amin: a sort by position then value (two stable sorts), whose runs end with their
--   largest value (NaN last: it wins, as PyTorch's); amin sorts -v (or, for integers, v
--   descending) the same way.
--   prod: a stable sort by position, then a segmented scan by doubling (log2(n) steps of
--   whole-array ops): after the step of width k each element holds the product of up to 2k
--   elements of its run that end at it, so a run's last element ends with the run's.
local function segment_reduce(reduce, p, v)
  local n = p.size
  local order
  if reduce == "prod" then
    order = p:argsort(1)
  else
    local kind = gpu._dtypes[v.dtype].kind
    local by_value
    if reduce == "amax" then by_value = v:argsort(1)
    elseif kind == "float" then by_value = (-v):argsort(1)
    else by_value = v:argsort(1, { descending = true }) end
    order = by_value:take(p:take(by_value):argsort(1))
  end
  local ps, w = p:take(order), v:take(order)
  local k = 1
  while reduce == "prod" and k < n do
    local same = ps[{ { k + 1, n } }]:eq(ps[{ { 1, n - k } }])
    local head = w[{ { 1, k } }]
    local tail = gpu.where(same, w[{ { k + 1, n } }] * w[{ { 1, n - k } }], w[{ { k + 1, n } }])
    w = gpu.concat({ head, tail })
    k = k * 2
  end
  local last = gpu.full({ 1 }, true, { device = p.device })
  if n > 1 then last = gpu.concat({ ps[{ { 2, n } }]:ne(ps[{ { 1, n - 1 } }]), last }) end
  return ps[last], w[last]
end

-- Whether amax / amin go through gpu._scatter_extreme (one pass over the elements, the
-- element a stable sort by value would put last) rather than segment_reduce's sorts: on
-- the cpu (cuda: no kernel yet).
local function extreme_kernel(reduce, x)
  return (reduce == "amax" or reduce == "amin") and x.device == "cpu"
end

-- The positions and values of scatter_reduce: the flat 1-based positions into x of index's
-- elements (gather's rule), and src's elements over index's shape, both flat. For a 1-D x
-- and a reduction that needs no sort (sorted false: sum, mean; amax, amin on the cpu) index
-- itself, negatives included; the sorting ones get positions made positive and checked.
local function scatter_args(fname, x, dim, index, src, sorted)
  check_array(x, fname, 1, "x")
  local d = norm_axis(fname, dim, math.max(x.ndim, 1), 2, "dim must be an integer")
  check_array(index, fname, 3, "index")
  check_array(src, fname, 4, "src")
  if index.ndim ~= x.ndim then argerror(fname, 3, "index must have x's %d axes, got %d", x.ndim, index.ndim) end
  if src.ndim ~= index.ndim then argerror(fname, 4, "src must have index's %d axes, got %d", index.ndim, src.ndim) end
  for i = 1, index.ndim do
    if index.shape[i] > src.shape[i] then
      argerror(fname, 4, "src must be at least index's shape %s, got %s", shape_str(index.shape), shape_str(src.shape))
    end
  end
  if src.dtype ~= x.dtype then argerror(fname, 4, "src is %s, x %s (they must be the same dtype)", src.dtype, x.dtype) end
  if src.device ~= x.device or index.device ~= x.device then
    argerror(fname, 4, "x, index and src must be on one device (x is on %s)", x.device)
  end
  local p
  if x.ndim == 1 and not sorted and (index.dtype == "int64" or index.dtype == "int32") then
    p = index                       -- its positions are x's own: index_put_ and take check them
  else
    shape_part._check_extents(fname, x, index, d, false, 3)
    p = shape_part._flat_index(fname, x, index, d, 3)
  end
  local key = {}
  for i = 1, index.ndim do key[i] = span(1, index.shape[i], src.shape[i]) end
  local v = (index.ndim > 0 and src[key] or src)
  return d, p:reshape(p.size), v:reshape(v.size)
end

-- The result (flat) of scatter_reduce, with what its gradient needs: without include_self
-- the touched positions (a bool mask of x's flat elements), for mean the counts.
local function scatter_reduce_flat(x, reduce, p, v, include_self)
  local xf = x:reshape(x.size)
  local out, touched = xf:copy(), nil
  if not include_self then
    touched = gpu.zeros(x.size, { dtype = "bool", device = x.device })
    if p.size > 0 then touched:index_put_(1, p, gpu.full(p.shape, true, { device = x.device })) end
    out = gpu.where(touched, gpu.zeros({}, { dtype = x.dtype, device = x.device }), out)
  end
  local count
  if reduce == "sum" or reduce == "mean" then
    if p.size > 0 then out:index_put_(1, p, v, { accumulate = true }) end
    if reduce == "mean" then
      count = gpu.zeros(x.size, { dtype = "int64", device = x.device })
      if p.size > 0 then count:index_put_(1, p, gpu.ones(p.size, { dtype = "int64", device = x.device }), { accumulate = true }) end
      if include_self then count = count + 1 end
      local c = gpu.where(count:eq(0), 1, count)
      local kind = gpu._dtypes[x.dtype].kind
      out = (kind == "float" or kind == "complex") and out / c:astype(x.dtype) or gpu.floor_divide(out, c):astype(x.dtype)
    end
  elseif p.size > 0 and extreme_kernel(reduce, x) then
    local red, seen = gpu._scatter_extreme(x.size, p, v, reduce == "amax")
    if include_self then red = COMBINE[reduce](xf, red) end
    out = gpu.where(seen, red, out)
  elseif p.size > 0 then
    local pos, red = segment_reduce(reduce, p, v)
    if include_self then red = COMBINE[reduce](xf:take(pos), red) end
    out:index_put_(1, pos, red)
  end
  return out, touched, count
end

-- The gradients of scatter_reduce for x and v (flat), given g (flat), following PyTorch's
-- formulas: sum and mean spread g (mean divided by the counts); amax and amin give it to the
-- elements equal to the result, shared evenly between ties; prod gives each element the
-- product of the others (also where it is zero).
local function scatter_reduce_grads(reduce, xf, p, v, out, touched, count, include_self, g)
  local keep                                            -- (without include_self: x's gradient where untouched)
  if not include_self then keep = touched:logical_not():astype(g.dtype) end
  if reduce == "sum" then
    return keep and g * keep or g, g:take(p)
  elseif reduce == "mean" then
    local gc = g / count:astype(g.dtype):maximum(1)
    return keep and gc * keep or gc, gc:take(p)
  elseif reduce == "amax" or reduce == "amin" then
    local op = out:take(p)
    local hit = v:eq(op):astype(g.dtype)
    local n = gpu.zeros(xf.size, { dtype = g.dtype, device = g.device })
    n:index_put_(1, p, hit, { accumulate = true })
    local self_hit = include_self and xf:eq(out):astype(g.dtype) or touched:logical_not():astype(g.dtype)
    n = n + self_hit
    local gn = g / gpu.where(n:eq(0), 1, n)
    return gn * self_hit, gn:take(p) * hit
  end
  -- prod: the product of the others is out / a for a member a that is not 0; for a zero,
  -- the product of the run's non-zero members when it is the run's only zero, else 0
  local zero_v = v:eq(0)
  local zero_x = include_self and xf:eq(0) or gpu.zeros(xf.size, { dtype = "bool", device = g.device })
  local zeros = zero_x:astype("int64")
  zeros:index_put_(1, p, zero_v:astype("int64"), { accumulate = true })
  local nonzero = scatter_reduce_flat(gpu.where(zero_x, 1, xf), "prod", p, gpu.where(zero_v, 1, v), include_self)
  local function others(a, zero, nz, pnz, pout)
    return gpu.where(zero, gpu.where(nz:eq(1), pnz, 0), pout / gpu.where(zero, 1, a))
  end
  local gx = include_self and g * others(xf, zero_x, zeros, nonzero, out) or gpu.where(touched, 0, g)
  return gx, g:take(p) * others(v, zero_v, zeros:take(p), nonzero:take(p), out:take(p))
end

-- The arguments of scatter_reduce / scatter_reduce_: the reduction's name checked, then the
-- positions and values (scatter_args), then whether the reduction takes x's dtype.
local function scatter_reduce_args(fname, x, dim, index, src, reduce)
  if type(reduce) ~= "string" or not REDUCES[reduce] then
    argerror(fname, 5, "reduce must be one of 'sum', 'prod', 'mean', 'amax', 'amin', got %s", options.type_name(reduce))
  end
  local sorted = reduce ~= "sum" and reduce ~= "mean" and not extreme_kernel(reduce, x)
  local _, p, v = scatter_args(fname, x, dim, index, src, sorted)
  if (reduce == "amax" or reduce == "amin") and gpu._dtypes[x.dtype].kind == "complex" then
    argerror(fname, 5, "'%s' has no order of %s values", reduce, x.dtype)
  end
  return p, v
end

-- 0-d x, index and src (PyTorch takes them, dim 1 or -1 here): they go as 1-D arrays
local function all_0d(x, index, src)
  for _, v in ipairs({ x, index, src }) do
    if not options.is_array(v) or v:is_closed() or v.ndim ~= 0 then return false end
  end
  return true
end

-- scatter_reduce(x, dim, index, src, reduce [, {include_self = true}]): PyTorch's: a copy
-- of x where each element that index points at (along dim, gather's rule, 1-based) becomes
-- the reduction (sum, prod, mean, amax, amin) of the src elements sent to it, and of its own
-- value with include_self. Differentiable in x and src (first derivatives).
function M.scatter_reduce(x, dim, index, src, reduce, opts)
  local fname = "scatter_reduce"
  if all_0d(x, index, src) then
    return M.scatter_reduce(x:reshape(1), dim, index:reshape(1), src:reshape(1), reduce, opts):reshape({})
  end
  local p, v = scatter_reduce_args(fname, x, dim, index, src, reduce)
  local include_self = SCATTER_REDUCE:check(opts, 6).include_self
  local out, touched, count = no_grad(function() return scatter_reduce_flat(x, reduce, p, v, include_self) end)
  local res = out:reshape(x.shape)
  return autograd().record(res, { x, src }, function(g)
    return no_grad(function()
      local gx, gv = scatter_reduce_grads(reduce, x:reshape(x.size), p, v, out, touched, count, include_self,
        g:reshape(g.size))
      gx = gx:reshape(x.shape)
      gv = gv:reshape(index.shape)
      if not same_shape(index.shape, src.shape) then
        local pw = {}
        for i = 1, src.ndim do pw[i] = { 0, src.shape[i] - index.shape[i] } end
        gv = gpu.pad(gv, pw)
      end
      return gx, gv
    end)
  end)
end

-- x:scatter_reduce_(dim, index, src, reduce [, {include_self = true}]): in place; returns x
function M.scatter_reduce_(x, dim, index, src, reduce, opts)
  local fname = "scatter_reduce_"
  if all_0d(x, index, src) then
    M.scatter_reduce_(x:reshape(1), dim, index:reshape(1), src:reshape(1), reduce, opts)   -- (a view of x)
    return x
  end
  local p, v = scatter_reduce_args(fname, x, dim, index, src, reduce)
  local include_self = SCATTER_REDUCE:check(opts, 6, fname).include_self
  if in_place(fname, x, src) then
    return record(fname, x, function(x0) return M.scatter_reduce(x0, dim, index, src, reduce, { include_self = include_self }) end)
  end
  return write_into(x, (scatter_reduce_flat(x, reduce, p, v, include_self)):reshape(x.shape))
end

-- ---- splitting --------------------------------------------------------------------------------------

-- x's elements first..last (1-based, inclusive; last < first: none) along axis d, a view
local function slice(x, d, first, last)
  local key = {}
  for i = 1, x.ndim do key[i] = ":" end
  key[d] = span(first, last, x.shape[d])
  return x[key]
end

-- The most pieces a split makes (each a Lua value in a table): more is an error, not an
-- hour of work (an expand can have 2^31 slices on an axis).
local MAX_PIECES = 1 << 24
local function check_pieces(fname, n)
  if n > MAX_PIECES then options.raise("%s: would make %d views (at most %d)", fname, n, MAX_PIECES) end
end

-- tensor_split(x, sections_or_indices [, dim = 1]): PyTorch's: n pieces (the first
-- size % n one longer), or, for a list, the pieces that end at each of its positions
-- (1-based, inclusive: the numbers are PyTorch's 0-based starts of the pieces after) and
-- the rest; a list of views.
function M.tensor_split(x, what, dim)
  local fname = "tensor_split"
  check_array(x, fname, 1, "x")
  if x.ndim == 0 then argerror(fname, 1, "x must have at least 1 axis") end
  local d = norm_axis(fname, dim == nil and 1 or dim, x.ndim, 3, "dim must be an integer")
  local n, out = x.shape[d], {}
  if math.type(what) == "integer" then
    if what < 1 then argerror(fname, 2, "the number of sections must be at least 1, got %d", what) end
    check_pieces(fname, what)
    local q, r, start = n // what, n % what, 1
    for i = 1, what do
      local len = q + (i <= r and 1 or 0)
      out[i] = slice(x, d, start, start + len - 1)
      start = start + len
    end
    return out
  end
  if options.is_array(what) then
    if what.dtype ~= "int64" and what.dtype ~= "int32" or what.ndim > 1 then
      argerror(fname, 2, "an array of indices must be 1-D int64 or int32, got %d-D %s", what.ndim, what.dtype)
    end
    check_pieces(fname, what.size + 1)
    what = what.ndim == 0 and what:item() or what:totable()
    if math.type(what) == "integer" then return M.tensor_split(x, what, d) end
  end
  if type(what) ~= "table" then
    argerror(fname, 2, "sections_or_indices must be an integer or a list of positions, got %s", options.type_name(what))
  end
  local prev = 0
  check_pieces(fname, #what + 1)
  for i, e in ipairs(what) do
    if math.type(e) ~= "integer" then argerror(fname, 2, "position %d must be an integer, got %s", i, options.type_name(e)) end
    local stop = e < 0 and math.max(n + e, 0) or math.min(e, n)
    out[i] = slice(x, d, prev + 1, stop)
    prev = stop
  end
  out[#out + 1] = slice(x, d, prev + 1, n)
  return out
end

-- chunk(x, chunks [, dim = 1]): PyTorch's: pieces of ceil(n / chunks) elements (the last
-- shorter), so maybe fewer than chunks of them; a list of views
function M.chunk(x, chunks, dim)
  local fname = "chunk"
  check_array(x, fname, 1, "x")
  if x.ndim == 0 then argerror(fname, 1, "x must have at least 1 axis") end
  chunks = int_arg(fname, chunks, 2, "chunks")
  if chunks == nil or chunks < 1 then argerror(fname, 2, "chunks must be an integer >= 1, got %s", options.type_name(chunks)) end
  local d = norm_axis(fname, dim == nil and 1 or dim, x.ndim, 3, "dim must be an integer")
  local n = x.shape[d]
  if n == 0 then return M.tensor_split(x, chunks, d) end
  local size, out = (n + chunks - 1) // chunks, {}
  check_pieces(fname, (n + size - 1) // size)
  for start = 1, n, size do out[#out + 1] = slice(x, d, start, math.min(start + size - 1, n)) end
  return out
end

-- unbind(x [, dim = 1]): the slices along dim, each without it; a list of views
function M.unbind(x, dim)
  local fname = "unbind"
  check_array(x, fname, 1, "x")
  if x.ndim == 0 then argerror(fname, 1, "x must have at least 1 axis") end
  local d = norm_axis(fname, dim == nil and 1 or dim, x.ndim, 2, "dim must be an integer")
  local out = {}
  check_pieces(fname, x.shape[d])
  for i = 1, x.shape[d] do
    local key = {}
    for k = 1, x.ndim do key[k] = ":" end
    key[d] = { i, i }
    out[i] = x[key]:squeeze(d)
  end
  return out
end

-- narrow(x, dim, start, length): the view of length elements along dim from start (1-based,
-- negatives from the end; n + 1 with length 0 is the empty end)
function M.narrow(x, dim, start, length)
  local fname = "narrow"
  check_array(x, fname, 1, "x")
  if x.ndim == 0 then argerror(fname, 1, "x must have at least 1 axis") end
  local d = norm_axis(fname, dim, x.ndim, 2, "dim must be an integer")
  local n = x.shape[d]
  start = int_arg(fname, start, 3, "start")
  length = int_arg(fname, length, 4, "length")
  if start == nil then argerror(fname, 3, "start must be an integer, got nil") end
  if length == nil or length < 0 then argerror(fname, 4, "length must be an integer >= 0, got %s", options.type_name(length)) end
  local s = start < 0 and n + start + 1 or start
  if s < 1 or s > n + 1 then argerror(fname, 3, "start %d is out of range for dim %d of size %d", start, d, n) end
  if s + length - 1 > n then
    argerror(fname, 4, "start %d + length %d runs past the end of dim %d (size %d)", start, length, d, n)
  end
  return slice(x, d, s, s + length - 1)
end

-- unflatten(x, dim, sizes): dim split into the axes sizes (one entry may be -1)
function M.unflatten(x, dim, sizes)
  local fname = "unflatten"
  check_array(x, fname, 1, "x")
  if x.ndim == 0 then argerror(fname, 1, "x must have at least 1 axis") end
  local d = norm_axis(fname, dim, x.ndim, 2, "dim must be an integer")
  if type(sizes) ~= "table" or options.is_array(sizes) or #sizes == 0 then
    argerror(fname, 3, "sizes must be a non-empty list of sizes, got %s", options.type_name(sizes))
  end
  local n, prod, free = x.shape[d], 1, nil
  for i, s in ipairs(sizes) do
    if math.type(s) ~= "integer" or s < -1 then argerror(fname, 3, "size %d must be an integer >= 0 or -1", i) end
    if s == -1 then
      if free then argerror(fname, 3, "only one size may be -1") end
      free = i
    else
      if s > 0 and prod > math.maxinteger // s then argerror(fname, 3, "sizes %s multiply past 2^63", shape_str(sizes)) end
      prod = prod * s
    end
  end
  local sz = {}
  for i, s in ipairs(sizes) do sz[i] = s end
  if free then
    if prod == 0 or n % prod ~= 0 then argerror(fname, 3, "sizes %s do not fill dim %d of size %d", shape_str(sizes), d, n) end
    sz[free] = n // prod
  elseif prod ~= n then
    argerror(fname, 3, "sizes %s multiply to %d, not dim %d's size %d", shape_str(sizes), prod, d, n)
  end
  local shape, xs = {}, x.shape
  for i = 1, d - 1 do shape[#shape + 1] = xs[i] end
  for _, s in ipairs(sz) do shape[#shape + 1] = s end
  for i = d + 1, #xs do shape[#shape + 1] = xs[i] end
  return x:reshape(shape)
end

-- ---- building ---------------------------------------------------------------------------------------

-- diag_embed(x [, offset = 0 [, dim1 = -2 [, dim2 = -1]]]): PyTorch's: x's last axis on
-- the offset diagonal of the square axes dim1, dim2 of the result (one more axis than x),
-- zeros elsewhere. Differentiable (a concat, a reshape and slices).
function M.diag_embed(x, offset, dim1, dim2)
  local fname = "diag_embed"
  check_array(x, fname, 1, "x")
  if x.ndim == 0 then argerror(fname, 1, "x must have at least 1 axis") end
  offset = int_arg(fname, offset, 2, "offset", 0)
  local nd = x.ndim + 1
  local a1 = norm_axis(fname, dim1 == nil and -2 or dim1, nd, 3, "dim1 must be an integer")
  local a2 = norm_axis(fname, dim2 == nil and -1 or dim2, nd, 4, "dim2 must be an integer")
  if a1 == a2 then argerror(fname, 4, "dim1 and dim2 are the same axis (%d)", a1) end
  local xs = x.shape
  local m = xs[#xs]
  local batch = {}
  for i = 1, #xs - 1 do batch[i] = xs[i] end
  local k = math.abs(offset)
  local nn = m + k
  -- (…, m) -> (…, m, m) with x on the diagonal: rows of x then m zeros, read m at a time
  local b = #batch
  local zs = with(batch, b + 1, m)
  zs[b + 2] = m
  local col = x:unsqueeze(-1)
  local wide = gpu.concat({ col, gpu.zeros(zs, { dtype = x.dtype, device = x.device }) }, b + 2)   -- (…, m, m + 1)
  local flat = with(batch, b + 1, m * (m + 1))
  local sq = with(batch, b + 1, m)
  sq[b + 2] = m
  local y = wide:reshape(flat)[(function()
    local key = {}
    for i = 1, b do key[i] = ":" end
    key[b + 1] = span(1, m * m, m * (m + 1))
    return key
  end)()]:reshape(sq)
  if k > 0 then                                          -- to (…, n, n), the block moved off the diagonal
    local pw = {}
    for i = 1, b do pw[i] = { 0, 0 } end
    if offset > 0 then pw[b + 1], pw[b + 2] = { 0, k }, { k, 0 } else pw[b + 1], pw[b + 2] = { k, 0 }, { 0, k } end
    y = m == 0 and gpu.zeros(with(with(batch, b + 1, nn), b + 2, nn), { dtype = x.dtype, device = x.device }) or gpu.pad(y, pw)
  end
  -- the two square axes from the end to dim1 and dim2
  local perm, rest = {}, {}
  for i = 1, b do rest[i] = i end
  local r = 1
  for i = 1, nd do
    if i == a1 then perm[i] = b + 1 elseif i == a2 then perm[i] = b + 2 else perm[i] = rest[r]; r = r + 1 end
  end
  return y:permute(perm)
end

-- PyTorch's promotion of two arrays' dtypes: a float (or complex) dtype beside an integer
-- or bool one wins as it is (int64 and float32 give float32; NumPy's float64); the same
-- kinds promote as NumPy's.
local RANK = { bool = 0, uint = 1, int = 1, float = 2, complex = 3 }
local function torch_promote(a, b)
  local ka, kb = gpu._dtypes[a].kind, gpu._dtypes[b].kind
  if RANK[ka] == 2 and RANK[kb] < 2 then return a end
  if RANK[kb] == 2 and RANK[ka] < 2 then return b end
  return gpu.promote_types(a, b)
end

-- block_diag(a, b, ...): PyTorch's: the 0-, 1- and 2-D arrays (a 0-d as (1, 1), a 1-D as a
-- row) on the diagonal of one matrix, in their promoted dtype; differentiable.
function M.block_diag(...)
  local fname = "block_diag"
  local args = table.pack(...)
  local mats, dtype, dev = {}, nil, nil
  for i = 1, args.n do
    local a = check_array(args[i], fname, i, "array")
    if a.ndim > 2 then argerror(fname, i, "arrays must have at most 2 axes, got %d", a.ndim) end
    if dev and a.device ~= dev then argerror(fname, i, "array is on %s, the first on %s (use :to())", a.device, dev) end
    dev = a.device
    dtype = dtype and torch_promote(dtype, a.dtype) or a.dtype
    mats[i] = a.ndim == 2 and a or a:reshape(1, a.size)
  end
  if args.n == 0 then return gpu.zeros(1, 0) end
  local cols = 0
  for _, a in ipairs(mats) do cols = cols + a.shape[2] end
  local rows, left = {}, 0
  for i, a in ipairs(mats) do
    local r, c = a.shape[1], a.shape[2]
    local parts = {}
    if left > 0 then parts[#parts + 1] = gpu.zeros(r, left, { dtype = dtype, device = dev }) end
    parts[#parts + 1] = a.dtype == dtype and a or a:astype(dtype)
    if cols - left - c > 0 then parts[#parts + 1] = gpu.zeros(r, cols - left - c, { dtype = dtype, device = dev }) end
    rows[i] = #parts == 1 and parts[1] or gpu.concat(parts, 2)
    left = left + c
  end
  return #rows == 1 and rows[1] or gpu.concat(rows, 1)
end

-- cartesian_prod(a, b, ...): PyTorch's: the rows of every combination of the 1-D inputs'
-- elements (the last varying fastest), (N, k); one input comes back as it is.
function M.cartesian_prod(...)
  local fname = "cartesian_prod"
  local args = table.pack(...)
  if args.n == 0 then argerror(fname, 1, "at least one array expected") end
  local dtype
  for i = 1, args.n do
    local a = check_array(args[i], fname, i, "array")
    if a.ndim ~= 1 then argerror(fname, i, "arrays must be 1-D, got %d axes", a.ndim) end
    if a.device ~= args[1].device then argerror(fname, i, "array is on %s, the first on %s (use :to())", a.device, args[1].device) end
    dtype = dtype and torch_promote(dtype, a.dtype) or a.dtype
  end
  if args.n == 1 then return args[1] end
  local xs = {}
  for i = 1, args.n do xs[i] = args[i].dtype == dtype and args[i] or args[i]:astype(dtype) end
  xs[#xs + 1] = { indexing = "ij", copy = false }
  local grids = table.pack(gpu.meshgrid(table.unpack(xs)))
  local cols = {}
  for i = 1, grids.n do cols[i] = grids[i]:reshape(grids[i].size) end
  return gpu.stack(cols, 2)
end

-- combinations(x [, r = 2 [, with_replacement = false]]): PyTorch's: the r-element
-- combinations of the 1-D x's elements, in order, as the rows of (N, r); differentiable
-- (one index op)
function M.combinations(x, r, with_replacement)
  local fname = "combinations"
  check_array(x, fname, 1, "x")
  if x.ndim ~= 1 then argerror(fname, 1, "x must be 1-D, got %d axes", x.ndim) end
  r = int_arg(fname, r, 2, "r", 2)
  if r < 0 then argerror(fname, 2, "r must be >= 0, got %d", r) end
  if with_replacement ~= nil and type(with_replacement) ~= "boolean" then
    argerror(fname, 3, "with_replacement must be a boolean, got %s", options.type_name(with_replacement))
  end
  local n = x.shape[1]
  if r == 0 then return gpu.zeros(0, { dtype = x.dtype, device = x.device }) end
  -- the count first (C(n, r), or C(n + r - 1, r) with replacement; a float is enough to
  -- bound it), so that a huge one is an error before the positions are listed on the host
  local top = with_replacement and n + r - 1 or n
  local k, count = math.min(r, top - r), 1.0
  for i = 1, k do
    count = count * (top - k + i) / i
    if count * r > MAX_PIECES then
      options.raise("%s: %d elements taken %d at a time make more than %d positions", fname, n, r, MAX_PIECES)
    end
  end
  -- the combinations in order: the last entry that can grow grows, those after it restart
  -- as low as they may (one above it, or equal to it with replacement)
  local rows, cur = {}, {}
  local function limit(i) return with_replacement and n or n - r + i end
  for i = 1, r do cur[i] = with_replacement and 1 or i end
  local more = r <= top and n > 0
  while more do
    table.move(cur, 1, r, #rows + 1, rows)
    local i = r
    while i >= 1 and cur[i] >= limit(i) do i = i - 1 end
    more = i >= 1
    if more then
      cur[i] = cur[i] + 1
      for j = i + 1, r do cur[j] = with_replacement and cur[i] or cur[j - 1] + 1 end
    end
  end
  local count = #rows // r
  if count == 0 then return gpu.zeros(0, r, { dtype = x.dtype, device = x.device }) end
  return x:index(1, gpu.array(rows, { dtype = "int64", device = x.device })):reshape(count, r)
end

-- ---- like another array -----------------------------------------------------------------------------

-- type_as(x, other): x in other's dtype (x itself when it has it already)
function M.type_as(x, other)
  check_array(x, "type_as", 1, "x")
  check_array(other, "type_as", 2, "other")
  return x.dtype == other.dtype and x or x:astype(other.dtype)
end

-- view_as(x, other), reshape_as, expand_as: x:view / reshape / expand to other's shape
function M.view_as(x, other)
  check_array(x, "view_as", 1, "x")
  return x:view(check_array(other, "view_as", 2, "other").shape)
end

function M.reshape_as(x, other)
  check_array(x, "reshape_as", 1, "x")
  return x:reshape(check_array(other, "reshape_as", 2, "other").shape)
end

-- a expanded (a read-only view) to shape, or an error naming fname's argument argn
local function expand_to(fname, argn, what, a, shape)
  local s, lead = {}, #shape - a.ndim
  for d = 1, #shape do
    s[d] = a.shape[d - lead] or 1
    if lead < 0 or s[d] ~= shape[d] and s[d] ~= 1 then
      argerror(fname, argn, "%s of shape %s does not expand to %s", what, shape_str(a.shape), shape_str(shape))
    end
  end
  return a:reshape(s):expand(shape)
end

function M.expand_as(x, other)
  check_array(x, "expand_as", 1, "x")
  return expand_to("expand_as", 2, "x", x, check_array(other, "expand_as", 2, "other").shape)
end

-- ---- in place ---------------------------------------------------------------------------------------

-- x:zero_(): zeros in place; returns x
function M.zero_(x)
  check_array(x, "zero_", 1, "x")
  if in_place("zero_", x) then return record("zero_", x, function(x0) return gpu.zeros_like(x0) end) end
  x:fill_(0)
  return x
end

-- x:copy_(src): src's elements (broadcast to x's shape, cast to its dtype, from any
-- device) into x; returns x
function M.copy_(x, src)
  local fname = "copy_"
  check_array(x, fname, 1, "x")
  check_array(src, fname, 2, "src")
  local s, xs = src.shape, x.shape
  local fits = #s <= #xs
  for i = 1, math.min(#s, #xs) do
    if s[#s - i + 1] ~= xs[#xs - i + 1] and s[#s - i + 1] ~= 1 then fits = false end
  end
  if not fits then argerror(fname, 2, "src of shape %s does not broadcast to x's shape %s", shape_str(s), shape_str(xs)) end
  local rec = in_place(fname, x, src)
  if src.device ~= x.device then src = src:to(x.device) end
  if rec then return record(fname, x, function() return src end) end
  return write_into(x, src)
end

-- clamp(x, min, max): PyTorch's name of clip; x:clamp_(min, max) and x:clip_ in place
function M.clamp(x, lo, hi)
  check_array(x, "clamp", 1, "x")
  if lo == nil and hi == nil then argerror("clamp", 2, "at least one of min and max must be given") end
  return gpu.clip(x, lo, hi)
end

local function clip_in_place(fname)
  return function(x, lo, hi)
    check_array(x, fname, 1, "x")
    if lo == nil and hi == nil then argerror(fname, 2, "at least one of min and max must be given") end
    if in_place(fname, x, lo, hi) then return record(fname, x, function(x0) return gpu.clip(x0, lo, hi) end) end
    local y = gpu.clip(x, lo, hi)
    return write_into(x, y.dtype == x.dtype and y or y:astype(x.dtype))
  end
end
M.clamp_ = clip_in_place("clamp_")
M.clip_ = clip_in_place("clip_")

-- ---- random fills -----------------------------------------------------------------------------------

local GENERATOR = { type = "any", what = "a gpu.random.Generator", check = function(v)
  return type(v) == "userdata" and (getmetatable(v) or {}).__name == "gpu.Generator", "must be a gpu.random.Generator"
end }
local RANDOM_FILL = { generator = GENERATOR }

-- What draws the numbers: gpu.random's functions, or a Generator's methods called as them.
local function random_source(o)
  local g = o.generator
  if g == nil then return gpu.random end
  return setmetatable({}, { __index = function(_, k) return function(...) return g[k](g, ...) end end })
end

-- The float dtype random draws are made in for x: its own (float32, float64), else float32
-- cast on the write (float16, bfloat16).
local function draw_dtype(fname, x, floats_only)
  local kind = gpu._dtypes[x.dtype].kind
  if floats_only and kind ~= "float" then
    argerror(fname, 1, "x must be a floating-point array, got %s", x.dtype)
  end
  if x.dtype == "float64" then return "float64" end
  return "float32"
end

local function random_fill(fname, floats_only, nnum, defaults, draw)
  local decl = options.declare(fname, RANDOM_FILL, { example = "gpu.ones(2):" .. fname .. "(" .. ("nil, "):rep(nnum) .. "%s)" })
  return function(x, ...)
    check_array(x, fname, 1, "x")
    local a = table.pack(...)
    local nums = {}
    for i = 1, nnum do
      local v = a[i]
      if v == nil then v = defaults[i] end
      if type(v) ~= "number" and not (fname == "bernoulli_" and options.is_array(v)) then
        argerror(fname, i + 1, "%s must be a number, got %s", defaults.names[i], options.type_name(v))
      end
      nums[i] = v
    end
    local o = decl:check(a[nnum + 1], nnum + 2)
    local rec = in_place(fname, x)
    local dt = draw_dtype(fname, x, floats_only)
    local function drawn()
      local y = gpu.no_grad(function() return draw(random_source(o), x, dt, table.unpack(nums, 1, nnum)) end)
      return y.dtype == x.dtype and y or y:astype(x.dtype)
    end
    if rec then return record(fname, x, drawn) end            -- (drawn after the record's checks)
    return write_into(x, drawn())
  end
end

-- x:normal_([mean = 0 [, std = 1]] [, {generator}]), x:uniform_([from = 0 [, to = 1]]),
-- x:exponential_([lambd = 1]), x:bernoulli_([p = 0.5]) (p a number or an array broadcast to
-- x): x filled in place with draws from the default generator of x's device (or the one
-- given); return x. normal_, uniform_ and exponential_ take floating-point arrays,
-- bernoulli_ any dtype (0 and 1).
M.normal_ = random_fill("normal_", true, 2, { 0, 1, names = { "mean", "std" } }, function(r, x, dt, mean, std)
  if std < 0 then argerror("normal_", 3, "std must be >= 0, got %g", std) end
  return r.normal(mean, std, x.shape, { dtype = dt, device = x.device })
end)
M.uniform_ = random_fill("uniform_", true, 2, { 0, 1, names = { "from", "to" } }, function(r, x, dt, lo, hi)
  if lo > hi then argerror("uniform_", 2, "from (%g) must be <= to (%g)", lo, hi) end
  return r.uniform(lo, hi, x.shape, { dtype = dt, device = x.device })
end)
M.exponential_ = random_fill("exponential_", true, 1, { 1, names = { "lambd" } }, function(r, x, dt, lambd)
  if not (lambd > 0) then argerror("exponential_", 2, "lambd must be > 0, got %g", lambd) end
  local u = r.rand(x.shape, { dtype = dt, device = x.device })
  return gpu.log1p(-u) / -lambd
end)
M.bernoulli_ = random_fill("bernoulli_", false, 1, { 0.5, names = { "p" } }, function(r, x, dt, p)
  if type(p) == "number" then
    if p < 0 or p > 1 then argerror("bernoulli_", 2, "p must be in [0, 1], got %g", p) end
    return r.bernoulli(p, x.shape, { dtype = dt, device = x.device })
  end
  check_array(p, "bernoulli_", 2, "p")
  if p.device ~= x.device then argerror("bernoulli_", 2, "p is on %s, x on %s (use :to())", p.device, x.device) end
  local pe = expand_to("bernoulli_", 2, "p", p:astype("float64"), x.shape)
  if p.size > 0 and gpu.logical_or(pe:lt(0), pe:gt(1)):logical_or(gpu.isnan(pe)):any():item() then
    argerror("bernoulli_", 2, "p must be in [0, 1]")
  end
  return r.rand(x.shape, { dtype = "float64", device = x.device }):lt(pe)
end)

-- ---- new arrays like x ------------------------------------------------------------------------------

local LIKE = {
  dtype = { type = "string" },
  device = { type = "string" },
}

-- The shape given to new_* after x (args: the arguments after x, so args[i] is argument
-- i + 1) as sizes or a table, and the options table after it.
local function shape_and_opts(fname, args)
  local shape, last = {}, args.n
  local opts
  if last >= 1 and type(args[last]) == "table" and not options.is_array(args[last]) and
      (last > 1 or next(args[last]) ~= nil and args[last][1] == nil) then
    opts, last = args[last], last - 1
  end
  if last == 1 and type(args[1]) == "table" then
    for i, n in ipairs(args[1]) do
      if math.type(n) ~= "integer" or n < 0 then argerror(fname, 2, "shape entry %d must be a size >= 0", i) end
      shape[i] = n
    end
  else
    for i = 1, last do
      if math.type(args[i]) ~= "integer" or args[i] < 0 then
        argerror(fname, i + 1, "size must be an integer >= 0, got %s", options.type_name(args[i]))
      end
      shape[#shape + 1] = args[i]
    end
  end
  return shape, opts
end

local function new_like(fname, make)
  local decl = options.declare(fname, LIKE, { example = "gpu.ones(2):" .. fname .. "({3}, %s)" })
  return function(x, ...)
    check_array(x, fname, 1, "x")
    local shape, opts = shape_and_opts(fname, table.pack(...))
    local o = decl:check(opts, select("#", ...) + 1)
    return make(shape, { dtype = o.dtype or x.dtype, device = o.device or x.device })
  end
end

-- x:new_zeros(shape [, opts]), new_ones, new_empty: arrays of x's dtype and device unless
-- opts say otherwise (shape a table or the sizes)
M.new_zeros = new_like("new_zeros", function(s, o) return gpu.zeros(s, o) end)
M.new_ones = new_like("new_ones", function(s, o) return gpu.ones(s, o) end)
M.new_empty = new_like("new_empty", function(s, o) return gpu.empty(s, o) end)

local NEW_FULL = options.declare("new_full", LIKE, { example = "gpu.ones(2):new_full({3}, 1, %s)" })

-- x:new_full(shape, value [, opts]): full of value
function M.new_full(x, shape, value, opts)
  local fname = "new_full"
  check_array(x, fname, 1, "x")
  shape = shape_and_opts(fname, { shape, n = 1 })
  if type(value) ~= "number" and type(value) ~= "boolean" then
    argerror(fname, 3, "value must be a number or a boolean, got %s", options.type_name(value))
  end
  local o = NEW_FULL:check(opts, 4)
  return gpu.full(shape, value, { dtype = o.dtype or x.dtype, device = o.device or x.device })
end

local RAND_LIKE = {
  dtype = { type = "string" },
  device = { type = "string" },
  generator = GENERATOR,
}

local function rand_like(fname, draw)
  local decl = options.declare(fname, RAND_LIKE, { example = "gpu." .. fname .. "(gpu.ones(2), %s)" })
  return function(x, opts)
    check_array(x, fname, 1, "x")
    local o = decl:check(opts, 2)
    local dtype = o.dtype or x.dtype
    if not options.dtype(dtype) then argerror(fname, 2, "unknown dtype '%s'", tostring(dtype)) end
    dtype = options.dtype(dtype)
    if gpu._dtypes[dtype].kind ~= "float" then argerror(fname, 1, "the draws need a floating-point dtype, got %s", dtype) end
    local y = draw(random_source(o), x.shape, { dtype = dtype == "float64" and "float64" or "float32", device = o.device or x.device })
    return y.dtype == dtype and y or y:astype(dtype)
  end
end

-- rand_like(x [, opts]), randn_like: uniform [0, 1) / standard normal draws of x's shape,
-- dtype and device (opts: dtype, device, generator)
M.rand_like = rand_like("rand_like", function(r, s, o) return r.rand(s, o) end)
M.randn_like = rand_like("randn_like", function(r, s, o) return r.randn(s, o) end)

local RANDINT_LIKE = options.declare("randint_like", RAND_LIKE, { example = "gpu.randint_like(gpu.ones(2), 5, %s)" })

-- randint_like(x, [low = 0,] high [, opts]): integers low <= v < high (high excluded, as
-- PyTorch's; gpu.random.randint includes its hi) of x's shape, dtype and device
function M.randint_like(x, a, b, opts)
  local fname = "randint_like"
  check_array(x, fname, 1, "x")
  local low, high, only_high = a, b, b == nil or type(b) == "table" and not options.is_array(b)
  if only_high then
    if type(b) == "table" and opts ~= nil then argerror(fname, 4, "nothing may follow the options table") end
    low, high, opts = 0, a, b or opts
  end
  if math.tointeger(low) == nil then argerror(fname, 2, "low must be an integer, got %s", options.type_name(low)) end
  if math.tointeger(high) == nil then
    argerror(fname, only_high and 2 or 3, "high must be an integer, got %s", options.type_name(high))
  end
  low, high = math.tointeger(low), math.tointeger(high)
  if high <= low then argerror(fname, 3, "high (%d) must be greater than low (%d)", high, low) end
  local o = RANDINT_LIKE:check(opts, 4)
  local dtype = o.dtype and options.dtype(o.dtype) or x.dtype
  if not dtype then argerror(fname, 4, "unknown dtype '%s'", tostring(o.dtype)) end
  local kind = gpu._dtypes[dtype].kind
  local draw = (kind == "float" or kind == "bool" or kind == "complex") and "int64" or dtype
  local y = random_source(o).randint(low, high - 1, x.shape, { dtype = draw, device = o.device or x.device })
  return y.dtype == dtype and y or y:astype(dtype)
end

return M
