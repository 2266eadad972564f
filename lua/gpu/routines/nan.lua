-- gpu.routines.nan — NumPy's NaN-ignoring reductions (nansum, nanmean, nanmax, nanmin,
-- nanvar, nanstd, nanargmax, nanargmin) as the plain reductions of x with its NaNs replaced
-- (where), so they run on both devices and are differentiable. Integer and bool arrays
-- have no NaN: the plain reduction. Called as the reductions are: f(x [, axis] [, opts]).
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"

local M = {}

local KEYS = {
  keepdims = { type = "boolean", default = false },
  dtype = { type = "dtype" },
  ddof = { type = "integer", default = 0, min = 0 },
}

local function decl(name, keys)
  local k = {}
  for _, key in ipairs(keys) do k[key] = KEYS[key] end
  return options.declare(name, k, { example = "gpu." .. name .. "(gpu.ones(2, 3), 1, %s)" })
end

-- The arguments (x [, axis] [, opts]): an axis is an integer or a list of them ({} none);
-- a table with other keys is the options.
local function args(fname, d, x, axis, opts)
  options.check_array(x, fname, 1, "x")
  if type(axis) == "table" and opts == nil then
    local k = next(axis)
    if k ~= nil and math.type(k) ~= "integer" then axis, opts = nil, axis end
  end
  if axis ~= nil and math.type(axis) ~= "integer" and type(axis) ~= "table" then
    options.argerror(fname, 2, "axis must be an integer or a table of integers, got %s", options.type_name(axis))
  end
  return axis, d:check(opts, axis == nil and 2 or 3)
end

local function nan_filled(x, v) return gpu.where(gpu.isnan(x), v, x) end

local SUM = decl("nansum", { "keepdims", "dtype" })
function M.nansum(x, axis, opts)
  local o
  axis, o = args("nansum", SUM, x, axis, opts)
  if basic.is_float(x.dtype) then x = nan_filled(x, 0) end
  return x:sum(axis, { keepdims = o.keepdims, dtype = o.dtype })
end

-- the count of non-NaN elements, in dtype
local function count(x, axis, keepdims, dtype)
  return gpu.logical_not(gpu.isnan(x)):sum(axis, { keepdims = keepdims }):astype(dtype)
end

local MEAN = decl("nanmean", { "keepdims", "dtype" })
function M.nanmean(x, axis, opts)
  local o
  axis, o = args("nanmean", MEAN, x, axis, opts)
  if not basic.is_float(x.dtype) then return x:mean(axis, { keepdims = o.keepdims, dtype = o.dtype }) end
  local s = nan_filled(x, 0):sum(axis, { keepdims = o.keepdims, dtype = o.dtype })
  return s / count(x, axis, o.keepdims, s.dtype)              -- an all-NaN slice: 0/0 = NaN
end

-- nanmax / nanmin: NaN only where the whole slice is NaN
local function extremum(name, method, fill)
  local d = decl(name, { "keepdims" })
  return function(x, axis, opts)
    local o
    axis, o = args(name, d, x, axis, opts)
    if not basic.is_float(x.dtype) then return (gpu[method](x, axis, { keepdims = o.keepdims })) end
    local nan = gpu.isnan(x)
    local m = gpu.where(nan, fill, x)
    m = gpu[method](m, axis, { keepdims = o.keepdims })
    return gpu.where(nan:all(axis, { keepdims = o.keepdims }), 0 / 0, m)
  end
end
M.nanmax = extremum("nanmax", "max", -math.huge)
M.nanmin = extremum("nanmin", "min", math.huge)

-- nanargmax / nanargmin: 1-based positions; an all-NaN slice is an error, as NumPy's
local function arg_extremum(name, method, fill)
  local d = decl(name, { "keepdims" })
  return function(x, axis, opts)
    local o
    axis, o = args(name, d, x, axis, opts)
    if math.type(axis) ~= "integer" and axis ~= nil then
      options.argerror(name, 2, "axis must be one integer, got %s", options.type_name(axis))
    end
    if basic.is_float(x.dtype) and x.size > 0 then
      local nan = gpu.isnan(x)
      if nan:all(axis):any():item() then options.raise("%s: All-NaN slice encountered", name) end
      x = gpu.where(nan, fill, x)
    end
    return gpu[method](x, axis, { keepdims = o.keepdims })
  end
end
M.nanargmax = arg_extremum("nanargmax", "argmax", -math.huge)
M.nanargmin = arg_extremum("nanargmin", "argmin", math.huge)

-- nanvar: the mean of the squared deviations of the non-NaN elements, over count - ddof
-- (NaN where that is not positive, as NumPy)
local function variance(name, x, axis, o)
  if o.dtype then x = x:astype(o.dtype) end
  if not basic.is_float(x.dtype) then x = x:astype("float64") end
  local nan = gpu.isnan(x)
  local n = count(x, axis, true, x.dtype)
  local mean = gpu.where(nan, 0, x):sum(axis, { keepdims = true }) / n
  local dev = gpu.where(nan, 0, x - mean)
  local dof = count(x, axis, o.keepdims, x.dtype) - o.ddof
  local v = (dev * dev):sum(axis, { keepdims = o.keepdims }) / dof
  return gpu.where(dof:le(0), 0 / 0, v)
end

local VAR = decl("nanvar", { "keepdims", "dtype", "ddof" })
function M.nanvar(x, axis, opts)
  local o
  axis, o = args("nanvar", VAR, x, axis, opts)
  return variance("nanvar", x, axis, o)
end

local STD = decl("nanstd", { "keepdims", "dtype", "ddof" })
function M.nanstd(x, axis, opts)
  local o
  axis, o = args("nanstd", STD, x, axis, opts)
  return gpu.sqrt(variance("nanstd", x, axis, o))
end

return M
