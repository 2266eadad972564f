-- gpu.fft: numpy.fft. The transforms are three C ops (src/lua/lfft.c, in gpu._fft under the
-- rules names "fft.c2c", "fft.r2c", "fft.c2r": FFTW on the cpu, cuFFT on cuda); this file
-- gives them NumPy's faces: n and s (a shorter axis is cut, a longer one padded with zeros:
-- views and gpu.concatenate, so autograd follows them), axes, the norm modes (a scale the C
-- op applies), hfft/ihfft (irfft/rfft of the conjugate), the sample frequencies and the
-- shifts (gpu.roll).
--
--   gpu.fft.fft(x [, n [, axis]] [, {norm = "backward" | "ortho" | "forward"}])
--   gpu.fft.fftn(x [, s [, axes]] [, {norm = ...}])
--
-- Axes are 1-based, negatives from the end; the options table may follow any leading
-- subset of the positional arguments. Dtypes as NumPy 2: float32, float16, bfloat16 and
-- complex64 give complex64 (float16 and bfloat16 compute in float32), everything else
-- complex128; irfft and hfft give the real dtype, float16 (bfloat16) for float16
-- (bfloat16) input.
local gpu = require "gpu"
local options = require "gpu.options"

local C = gpu._fft
local is_array, argerror = options.is_array, options.argerror

local M = {}

local function fail(fname, argn, fmt, ...) argerror("gpu.fft." .. fname, argn, fmt, ...) end

-- ---- arguments ------------------------------------------------------------------------------------

local NORM_KEYS = { norm = { type = "string", choices = { "backward", "ortho", "forward" }, default = "backward" } }
local decls = {}
local function decl(name, example)
  decls[name] = options.declare("fft." .. name, NORM_KEYS, { example = example })
end
for _, f in ipairs { "fft", "ifft", "rfft", "irfft", "hfft", "ihfft" } do
  decl(f, "gpu.fft." .. f .. "(gpu.ones(4), nil, nil, %s)")
end
for _, f in ipairs { "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn" } do
  decl(f, "gpu.fft." .. f .. "(gpu.ones(4, 4), nil, nil, %s)")
end

local function is_opts(v) return type(v) == "table" and not is_array(v) and type(next(v)) == "string" end

-- (a, b, opts) of a call (x, a, b, opts) whose options table may come early; checked
-- against fname's declaration: the norm string and the positionals
local function split(fname, a, b, opts)
  if is_opts(a) then
    if b ~= nil or opts ~= nil then fail(fname, 3, "no argument expected after the options table") end
    a, opts = nil, a
  elseif is_opts(b) then
    if opts ~= nil then fail(fname, 4, "no argument expected after the options table") end
    b, opts = nil, b
  end
  local o = decls[fname]:check(opts, 4, "gpu.fft." .. fname)
  return a, b, o.norm
end


local function check_x(fname, x)
  if not is_array(x) then fail(fname, 1, "gpu.array expected, got %s", options.type_name(x)) end
  if x:is_closed() then fail(fname, 1, "the gpu.array is closed") end
end

local function integer(v)
  return math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v) and v == v)
end

-- a 1-based axis of x (negatives from the end) as a positive one
local function axis_of(fname, x, a, argn, what)
  if not integer(a) then fail(fname, argn, "%s must be an integer, got %s", what, options.type_name(a)) end
  local nd = x.ndim
  local p = a < 0 and nd + a + 1 or a
  if a == 0 or p < 1 or p > nd then
    fail(fname, argn, "%s %d is out of bounds for a %d-dimensional array", what, a, nd)
  end
  return math.tointeger(p)
end

local function points(fname, n, argn, what)
  if not integer(n) then fail(fname, argn, "%s must be an integer, got %s", what, options.type_name(n)) end
  if n < 1 then fail(fname, argn, "invalid number of data points (%d): %s must be at least 1", n, what) end
  return math.tointeger(n)
end

-- the axes of an n-D transform (s and axes as given; nil axes: the last #s axes, or all)
local function cook_axes(fname, x, s, axes)
  if s ~= nil and type(s) ~= "table" then
    fail(fname, 2, "s must be a table of integers, got %s", options.type_name(s))
  end
  local list = {}
  if axes == nil then
    local k = s and #s or x.ndim
    if k > x.ndim then fail(fname, 2, "s has %d entries for a %d-dimensional array", k, x.ndim) end
    for i = x.ndim - k + 1, x.ndim do list[#list + 1] = i end
  elseif type(axes) == "number" then
    list[1] = axis_of(fname, x, axes, 3, "axis")
  elseif type(axes) == "table" and not is_array(axes) then
    local seen = {}
    for i = 1, #axes do
      local a = axis_of(fname, x, axes[i], 3, "axis")
      if seen[a] then fail(fname, 3, "axis %d is repeated", a) end
      seen[a] = true
      list[i] = a
    end
  else
    fail(fname, 3, "axes must be an integer or a table of integers, got %s", options.type_name(axes))
  end
  if s ~= nil and #s ~= #list then
    fail(fname, 2, "s has %d entries but there are %d axes", #s, #list)
  end
  return list
end

-- x cut or padded with zeros to n entries along axis a
local function resized(x, a, n)
  local m = x.shape[a]
  if m == n then return x end
  if m > n then
    local key = {}
    for i = 1, x.ndim do key[i] = i == a and { 1, n } or ":" end
    return x[key]
  end
  local shape = x.shape
  shape[a] = n - m
  return gpu.concatenate({ x, gpu.zeros(shape, { dtype = x.dtype, device = x.device }) }, a)
end

-- the scale of the transform over 'count' points for a norm mode
local function scale_of(norm, count, inverse)
  if norm == "ortho" then return 1 / math.sqrt(count) end
  if (norm == "forward") ~= inverse then return 1 / count end
  return 1
end

local SWAPPED = { backward = "forward", forward = "backward", ortho = "ortho" }
local HALF = { float16 = true, bfloat16 = true }

-- the C op's result, its errors raised under the public name at the user's line
local function run(fname, f, ...)
  local ok, r = pcall(f, ...)
  if ok then return r end
  local msg = tostring(r):gsub("^[^\n]-gpu%._fft%.%w+: ", ""):gsub("^bad argument #%d+ to '[^']*' %((.*)%)$", "%1")
  options.raise("gpu.fft.%s: %s", fname, msg)
end

-- the complex dtype a transform of x gives
local function complex_of(x)
  local dt = x.dtype
  if dt == "complex64" or dt == "float32" or HALF[dt] then return "complex64" end
  return "complex128"
end

-- ---- the transforms --------------------------------------------------------------------------------

-- x cut or padded to the lengths s along axes (nil: as they are, each at least 1), and the
-- product of the lengths
local function sized(fname, x, s, axes)
  local count = 1
  for i, a in ipairs(axes) do
    local n = s and points(fname, s[i], 2, "s[" .. i .. "]") or points(fname, x.shape[a], 2, "the length of axis " .. a)
    x = resized(x, a, n)
    count = count * n
  end
  return x, count
end

-- c2c over 'axes' with lengths s (nil: as they are)
local function c2c(fname, x, s, axes, norm, inverse)
  if #axes == 0 then return x:astype(complex_of(x)) end
  local count
  x, count = sized(fname, x, s, axes)
  return run(fname, C.c2c, x, axes, inverse, scale_of(norm, count, inverse))
end

local function r2c(fname, x, s, axes, norm, inverse)
  if #axes == 0 then fail(fname, 3, "at least one axis is needed") end
  local count
  x, count = sized(fname, x, s, axes)
  return run(fname, C.r2c, x, axes, scale_of(norm, count, inverse))
end

-- c2r with output lengths s (nil: as they are, the last 2 (m - 1))
local function c2r(fname, x, s, axes, norm, inverse)
  if #axes == 0 then fail(fname, 3, "at least one axis is needed") end
  local count, k, last = 1, #axes, nil
  local dt = x.dtype
  for i, a in ipairs(axes) do
    local n
    if s then n = points(fname, s[i], 2, "s[" .. i .. "]")
    elseif i < k then n = x.shape[a]
    else n = 2 * (x.shape[a] - 1) end
    if s == nil then points(fname, n, 2, i < k and "the length of axis " .. a or "the output length 2 (m - 1)") end
    x = resized(x, a, i < k and n or n // 2 + 1)
    count = count * n
    last = n
  end
  local y = run(fname, C.c2r, x, axes, last, scale_of(norm, count, inverse))
  if HALF[dt] then y = y:astype(dt) end
  return y
end

-- numpy.fft's functions: fname(x, n, axis, opts) (one = true) or fname(x, s, axes, opts)
-- (default_axes: nil for all, or those given), through one of the transforms above.
-- hermitian (hfft, ihfft): the conjugate of the input (of an inverse) or of the output,
-- and the norm's direction swapped
local function numpy_fn(fname, transform, inverse, o)
  return function(x, a, b, opts)
    check_x(fname, x)
    local norm
    a, b, norm = split(fname, a, b, opts)
    local s, axes
    if o.one then
      axes = { axis_of(fname, x, b == nil and -1 or b, 3, "axis") }
      s = a ~= nil and { points(fname, a, 2, "n") } or nil
    else
      s, axes = a, cook_axes(fname, x, a, b == nil and o.axes or b)
    end
    if o.hermitian then
      norm = SWAPPED[norm]
      if inverse then x = gpu.conj(x) end
    end
    local y = transform(fname, x, s, axes, norm, inverse)
    return (o.hermitian and not inverse) and gpu.conj(y) or y
  end
end

local ONE, TWO, ALL = { one = true }, { axes = { -2, -1 } }, {}
M.fft = numpy_fn("fft", c2c, false, ONE)
M.ifft = numpy_fn("ifft", c2c, true, ONE)
M.rfft = numpy_fn("rfft", r2c, false, ONE)
M.irfft = numpy_fn("irfft", c2r, true, ONE)
M.hfft = numpy_fn("hfft", c2r, true, { one = true, hermitian = true })    -- irfft(conj(x))
M.ihfft = numpy_fn("ihfft", r2c, false, { one = true, hermitian = true }) -- conj(rfft(x))
M.fft2 = numpy_fn("fft2", c2c, false, TWO)
M.ifft2 = numpy_fn("ifft2", c2c, true, TWO)
M.fftn = numpy_fn("fftn", c2c, false, ALL)
M.ifftn = numpy_fn("ifftn", c2c, true, ALL)
M.rfft2 = numpy_fn("rfft2", r2c, false, TWO)
M.irfft2 = numpy_fn("irfft2", c2r, true, TWO)
M.rfftn = numpy_fn("rfftn", r2c, false, ALL)
M.irfftn = numpy_fn("irfftn", c2r, true, ALL)

-- ---- frequencies and shifts ----------------------------------------------------------------------

local FREQ_KEYS = {
  dtype = { type = "dtype", check = function(v) return v:match("float") ~= nil, "must be a float dtype" end },
  device = "device",
}
local FFTFREQ = options.declare("fft.fftfreq", FREQ_KEYS, { example = "gpu.fft.fftfreq(4, 1, %s)" })
local RFFTFREQ = options.declare("fft.rfftfreq", FREQ_KEYS, { example = "gpu.fft.rfftfreq(4, 1, %s)" })

local function freq_args(fname, decl_, n, d, opts)
  if is_opts(d) and opts == nil then d, opts = nil, d end
  n = points(fname, n, 1, "n")
  if d == nil then d = 1.0 end
  if type(d) ~= "number" or d == 0 or d ~= d then
    fail(fname, 2, "the sample spacing d must be a nonzero number, got %s", options.type_name(d))
  end
  local o = decl_:check(opts, 3, "gpu.fft." .. fname)
  return n, d, o.dtype or "float64", o.device
end

-- fftfreq(n [, d = 1] [, {dtype = "float64", device}]): the sample frequencies of an n-point
-- transform, 0, 1, ..., -(n // 2), ..., -1 over n d (NumPy's integers times 1 / (n d))
function M.fftfreq(n, d, opts)
  local dtype, device
  n, d, dtype, device = freq_args("fftfreq", FFTFREQ, n, d, opts)
  local k = (n - 1) // 2 + 1
  local ints = gpu.concatenate({ gpu.arange(0, k, { dtype = "int64", device = device }),
                                 gpu.arange(-(n // 2), 0, { dtype = "int64", device = device }) })
  local y = ints * (1.0 / (n * d))
  return dtype == "float64" and y or y:astype(dtype)
end

-- rfftfreq(n [, d = 1] [, {dtype, device}]): 0, 1, ..., n // 2 over n d
function M.rfftfreq(n, d, opts)
  local dtype, device
  n, d, dtype, device = freq_args("rfftfreq", RFFTFREQ, n, d, opts)
  local y = gpu.arange(0, n // 2 + 1, { dtype = "int64", device = device }) * (1.0 / (n * d))
  return dtype == "float64" and y or y:astype(dtype)
end

local function shift(fname, x, axes, sign)
  check_x(fname, x)
  local list = {}
  if axes == nil then
    for i = 1, x.ndim do list[i] = i end
  elseif type(axes) == "number" then
    list[1] = axis_of(fname, x, axes, 2, "axis")
  elseif type(axes) == "table" and not is_array(axes) then
    for i = 1, #axes do list[i] = axis_of(fname, x, axes[i], 2, "axis") end
  else
    fail(fname, 2, "axes must be an integer or a table of integers, got %s", options.type_name(axes))
  end
  if #list == 0 then return x:copy() end
  local shifts = {}
  for i, a in ipairs(list) do shifts[i] = sign * (x.shape[a] // 2) end
  return x:roll(shifts, list)
end

-- fftshift(x [, axes]): the zero frequency moved to the middle (every axis by default)
function M.fftshift(x, axes) return shift("fftshift", x, axes, 1) end
-- ifftshift(x [, axes]): fftshift undone
function M.ifftshift(x, axes) return shift("ifftshift", x, axes, -1) end

return options.count_all("gpu.fft.", M)
