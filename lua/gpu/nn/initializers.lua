-- gpu.nn.initializers (nn.init): parameter initialisers, from gpu.random's seeded generator.
local gpu = require "gpu"
local options = require "gpu.options"

local init = {}

function init.fans(shape)
  options.value(shape, { type = "table" }, "nn.init.fans", 1, "shape")
  if #shape == 2 then return shape[2], shape[1] end     -- (out, in) for Linear's weight
  return shape[1], shape[1]
end

-- A fan size argument: a positive number.
local function fan(fname, argn, v, what)
  return options.value(v, { type = "number", min = 0, min_open = true }, "nn.init." .. fname, argn, what)
end

function init.uniform(shape, lim, opts)
  options.value(lim, { type = "number", min = 0 }, "nn.init.uniform", 2, "lim")
  return options.call("nn.init.uniform", gpu.random.uniform, -lim, lim, shape, opts)
end

function init.glorot_uniform(fan_in, fan_out, shape, opts)
  fan("glorot_uniform", 1, fan_in, "fan_in"); fan("glorot_uniform", 2, fan_out, "fan_out")
  return init.uniform(shape, math.sqrt(6 / (fan_in + fan_out)), opts)
end

function init.glorot_normal(fan_in, fan_out, shape, opts)
  fan("glorot_normal", 1, fan_in, "fan_in"); fan("glorot_normal", 2, fan_out, "fan_out")
  return options.call("nn.init.glorot_normal", gpu.random.normal, 0, math.sqrt(2 / (fan_in + fan_out)), shape, opts)
end

function init.he_normal(fan_in, shape, opts)
  fan("he_normal", 1, fan_in, "fan_in")
  return options.call("nn.init.he_normal", gpu.random.normal, 0, math.sqrt(2 / fan_in), shape, opts)
end

function init.he_uniform(fan_in, shape, opts)
  fan("he_uniform", 1, fan_in, "fan_in")
  return init.uniform(shape, math.sqrt(6 / fan_in), opts)
end

-- ---- PyTorch's in-place initialisers (torch.nn.init) ------------------------------------------
-- Each fills an array in place, without recording (as PyTorch's run under no_grad), and
-- returns it. Options as PyTorch's keywords, in a table (kaiming_uniform_(w, {a = math.sqrt(5)}))
-- or positional (kaiming_uniform_(w, math.sqrt(5))).

local raise, argerror, type_name = options.raise, options.argerror, options.type_name

local function target(fname, t)
  options.check_array(t, "nn.init." .. fname, 1, "tensor")
  if not t.dtype:match("^float") and not t.dtype:match("^bfloat") then
    argerror("nn.init." .. fname, 1, "a floating-point array expected, got %s", t.dtype)
  end
  return t
end

-- t's elements = v (an array or a number), unrecorded; an error names fname
local function fill(t, v, fname)
  options.call("nn.init." .. (fname or "fill"), gpu.no_grad, function() t[{}] = v end)
  return t
end

local function placed(t) return { dtype = t.dtype, device = t.device } end

-- args(fname, decl, t, ...): the options of a call f(t, opts) or f(t, a, b, ...) (positional
-- in the order of 'names')
local function args(fname, decl, names, t, ...)
  local first = ...
  if type(first) == "table" and select("#", ...) == 1 then return decl:check(first, 2) end
  local o = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if i > #names then argerror("nn.init." .. fname, i + 1, "at most %d arguments expected", #names + 1) end
    o[names[i]] = v
  end
  return decl:check(o, 2)
end

local function declare(fname, keys)
  return options.declare("nn.init." .. fname, keys, { example = ("gpu.nn.init.%s(gpu.zeros(3, 4), %%s)"):format(fname) })
end

local NONLINEARITIES = { "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
  "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu" }

-- calculate_gain(nonlinearity [, param]): PyTorch's recommended gains
function init.calculate_gain(nonlinearity, param)
  local fname = "nn.init.calculate_gain"
  options.value(nonlinearity, { choices = NONLINEARITIES }, fname, 1, "nonlinearity")
  if param ~= nil and nonlinearity ~= "leaky_relu" then argerror(fname, 2, "%s takes no parameter", nonlinearity) end
  if nonlinearity == "tanh" then return 5.0 / 3 end
  if nonlinearity == "relu" then return math.sqrt(2.0) end
  if nonlinearity == "selu" then return 3.0 / 4 end
  if nonlinearity == "leaky_relu" then
    local slope = param
    if slope == nil then slope = 0.01 end
    if type(slope) ~= "number" or math.type(slope) == nil then
      argerror(fname, 2, "negative_slope must be a number, got %s", type_name(slope))
    end
    return math.sqrt(2.0 / (1 + slope * slope))
  end
  return 1
end

-- fan_in, fan_out of a weight as PyTorch counts them: (out, in, *kernel)
function init.calculate_fan_in_and_fan_out(t)
  options.check_array(t, "nn.init.calculate_fan_in_and_fan_out", 1, "tensor")
  if t.ndim < 2 then
    raise("nn.init: fan in and fan out cannot be computed for an array of fewer than 2 dimensions (got %d)", t.ndim)
  end
  local receptive = 1
  for d = 3, t.ndim do receptive = receptive * t.shape[d] end
  return t.shape[2] * receptive, t.shape[1] * receptive
end

local UNIFORM = declare("uniform_", { a = { type = "number", default = 0.0 }, b = { type = "number", default = 1.0 } })
function init.uniform_(t, ...)
  target("uniform_", t)
  local o = args("uniform_", UNIFORM, { "a", "b" }, t, ...)
  if o.a > o.b then argerror("nn.init.uniform_", 2, "a (%g) must not exceed b (%g)", o.a, o.b) end
  return fill(t, options.call("nn.init.uniform_", gpu.random.uniform, o.a, o.b, t.shape, placed(t)), "uniform_")
end

local NORMAL = declare("normal_", { mean = { type = "number", default = 0.0 }, std = { type = "number", min = 0, default = 1.0 } })
function init.normal_(t, ...)
  target("normal_", t)
  local o = args("normal_", NORMAL, { "mean", "std" }, t, ...)
  return fill(t, options.call("nn.init.normal_", gpu.random.normal, o.mean, o.std, t.shape, placed(t)), "normal_")
end

function init.constant_(t, val)
  target("constant_", t)
  options.value(val, { type = "number" }, "nn.init.constant_", 2, "val")
  return fill(t, val, "constant_")
end
function init.ones_(t) return fill(target("ones_", t), 1, "ones_") end
function init.zeros_(t) return fill(target("zeros_", t), 0, "zeros_") end

function init.eye_(t)
  target("eye_", t)
  if t.ndim ~= 2 then argerror("nn.init.eye_", 1, "a 2-D array expected, got %d dimensions", t.ndim) end
  return fill(t, options.call("nn.init.eye_", gpu.eye, t.shape[1], t.shape[2], placed(t)), "eye_")
end

local XAVIER = declare("xavier_uniform_", { gain = { type = "number", min = 0, default = 1.0 } })
function init.xavier_uniform_(t, ...)
  target("xavier_uniform_", t)
  local o = args("xavier_uniform_", XAVIER, { "gain" }, t, ...)
  local fi, fo = init.calculate_fan_in_and_fan_out(t)
  local a = o.gain * math.sqrt(6.0 / (fi + fo))
  local v = options.call("nn.init.xavier_uniform_", gpu.random.uniform, -a, a, t.shape, placed(t))
  return fill(t, v, "xavier_uniform_")
end
local XAVIER_N = declare("xavier_normal_", { gain = { type = "number", min = 0, default = 1.0 } })
function init.xavier_normal_(t, ...)
  target("xavier_normal_", t)
  local o = args("xavier_normal_", XAVIER_N, { "gain" }, t, ...)
  local fi, fo = init.calculate_fan_in_and_fan_out(t)
  return fill(t, options.call("nn.init.xavier_normal_", gpu.random.normal, 0, o.gain * math.sqrt(2.0 / (fi + fo)),
    t.shape, placed(t)), "xavier_normal_")
end

local function kaiming_keys()
  return { a = { type = "number", default = 0 }, mode = { choices = { "fan_in", "fan_out" }, default = "fan_in" },
    nonlinearity = { choices = NONLINEARITIES, default = "leaky_relu" } }
end
local KAIMING_U, KAIMING_N = declare("kaiming_uniform_", kaiming_keys()), declare("kaiming_normal_", kaiming_keys())
local function kaiming_std(t, o)
  local fi, fo = init.calculate_fan_in_and_fan_out(t)
  local f = o.mode == "fan_in" and fi or fo
  local gain = o.nonlinearity == "leaky_relu" and init.calculate_gain("leaky_relu", o.a)
    or init.calculate_gain(o.nonlinearity)
  return gain / math.sqrt(f)
end
function init.kaiming_uniform_(t, ...)
  target("kaiming_uniform_", t)
  local o = args("kaiming_uniform_", KAIMING_U, { "a", "mode", "nonlinearity" }, t, ...)
  local bound = math.sqrt(3.0) * kaiming_std(t, o)
  local v = options.call("nn.init.kaiming_uniform_", gpu.random.uniform, -bound, bound, t.shape, placed(t))
  return fill(t, v, "kaiming_uniform_")
end
function init.kaiming_normal_(t, ...)
  target("kaiming_normal_", t)
  local o = args("kaiming_normal_", KAIMING_N, { "a", "mode", "nonlinearity" }, t, ...)
  local v = options.call("nn.init.kaiming_normal_", gpu.random.normal, 0, kaiming_std(t, o), t.shape, placed(t))
  return fill(t, v, "kaiming_normal_")
end

-- trunc_normal_(t [, {mean = 0, std = 1, a = -2, b = 2}]): N(mean, std) truncated to [a, b]
-- (a and b absolute bounds, as PyTorch's), drawn as PyTorch draws it: a uniform on the
-- normal CDF's image of [a, b], through the inverse CDF (in float64), clipped to [a, b]
local TRUNC = declare("trunc_normal_", { mean = { type = "number", default = 0.0 },
  std = { type = "number", min = 0, min_open = true, default = 1.0 }, a = { type = "number", default = -2.0 },
  b = { type = "number", default = 2.0 } })
function init.trunc_normal_(t, ...)
  target("trunc_normal_", t)
  local o = args("trunc_normal_", TRUNC, { "mean", "std", "a", "b" }, t, ...)
  if not (o.a < o.b) then argerror("nn.init.trunc_normal_", 2, "a (%g) must be below b (%g)", o.a, o.b) end
  local v = options.call("nn.init.trunc_normal_", function()
    local cdf = gpu.ndtr(gpu.array({ (o.a - o.mean) / o.std, (o.b - o.mean) / o.std }, { dtype = "float64" })):totable()
    local u = gpu.random.uniform(2 * cdf[1] - 1, 2 * cdf[2] - 1, t.shape, { dtype = "float64", device = t.device })
    return (u:erfinv() * (o.std * math.sqrt(2)) + o.mean):clip(o.a, o.b):astype(t.dtype)
  end)
  return fill(t, v, "trunc_normal_")
end

-- orthogonal_(t [, gain = 1]): the (semi-)orthogonal matrix of a QR of a normal one, the
-- array seen as (shape[1], the rest), rows or columns orthonormal, times gain
local ORTHO = declare("orthogonal_", { gain = { type = "number", default = 1.0 } })
function init.orthogonal_(t, ...)
  target("orthogonal_", t)
  local o = args("orthogonal_", ORTHO, { "gain" }, t, ...)
  if t.ndim < 2 then argerror("nn.init.orthogonal_", 1, "an array of 2 or more dimensions expected, got %d", t.ndim) end
  if t.size == 0 then return t end
  local rows = t.shape[1]
  local cols = t.size // rows
  local q = options.call("nn.init.orthogonal_", function()
    local flat = gpu.random.normal(0, 1, { rows, cols }, { dtype = "float64", device = t.device })
    if rows < cols then flat = flat:transpose(1, 2):contiguous() end
    local qq, r = gpu.linalg.qr(flat)
    qq = qq * gpu.sign(gpu.diagonal(r))
    if rows < cols then qq = qq:transpose(1, 2) end
    return (qq * o.gain):astype(t.dtype):reshape(table.unpack(t.shape))
  end)
  return fill(t, q, "orthogonal_")
end

return options.count_all("nn.init.", init)
