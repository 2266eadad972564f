-- gpu.nn.keras_layers: Keras's convolution and pooling layers with Keras's signatures and
-- channels-last data: Conv2D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D,
-- GlobalMaxPooling2D. Input channels are found at the first call; data_format =
-- "channels_last" (N, H, W, C) by default or "channels_first" (N, C, H, W). The kernel is
-- Keras's (kh, kw, in / groups, filters), so Keras weights load as they are; the work is the
-- NCHW convolution and pooling (nn.conv2d, nn.max_pool2d: oneDNN/cuDNN where present) between
-- two transposes. padding = "same" pads as TensorFlow does (the odd pixel after).
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local F = require "gpu.nn.functional"
local layers = require "gpu.nn.layers"

local raise, argerror, check_array, shape_str, type_name = options.raise, options.argerror, options.check_array,
  options.shape_str, options.type_name
local class = module.class

local KL = {}

-- a pair from a number or a list of two positive integers
local function pair(fname, v, what)
  if math.type(v) == "integer" then v = { v, v } end
  if type(v) ~= "table" or #v ~= 2 or math.type(v[1]) ~= "integer" or math.type(v[2]) ~= "integer" or v[1] < 1 or v[2] < 1 then
    argerror(fname, 1, "%s must be an integer >= 1 or a list of two, got %s", what, type_name(v))
  end
  return { v[1], v[2] }
end

-- TensorFlow's "same" padding of one axis: before, after
local function same_pad(n, k, s, d)
  local ek = (k - 1) * d + 1
  local out = (n + s - 1) // s
  local total = math.max((out - 1) * s + ek - n, 0)
  return total // 2, total - total // 2
end

-- x (N, C, H, W) padded for "same" (value: the padding's value)
local function pad_same(x, k, s, d, value)
  local t, b = same_pad(x.shape[3], k[1], s[1], d[1])
  local l, r = same_pad(x.shape[4], k[2], s[2], d[2])
  if t + b + l + r == 0 then return x end
  return gpu.pad(x, { { 0, 0 }, { 0, 0 }, { t, b }, { l, r } }, { constant_values = value or 0 })
end

local function to_nchw(x, cl) return cl and x:permute({ 1, 4, 2, 3 }) or x end
local function from_nchw(y, cl) return cl and y:permute({ 1, 3, 4, 2 }):contiguous() or y end

local function four_d(fname, x)
  check_array(x, fname, 1, "input")
  if x.ndim ~= 4 then raise("%s: expected a 4-D input (N, H, W, C) or (N, C, H, W), got %s", fname, shape_str(x.shape)) end
end

local acts = layers.activations
local act_names = {}
for k in pairs(acts) do act_names[#act_names + 1] = k end
table.sort(act_names)

local CONV2D = options.declare("nn.Conv2D", module.with_placement {
  strides = { type = "integer|table", default = 1 }, padding = { choices = { "valid", "same" }, default = "valid" },
  data_format = { choices = { "channels_last", "channels_first" }, default = "channels_last" },
  dilation_rate = { type = "integer|table", default = 1 }, groups = { type = "integer", min = 1, default = 1 },
  activation = { type = "string|callable", choices = act_names, default = "linear" },
  use_bias = { type = "boolean", default = true },
  kernel_initializer = { choices = { "glorot_uniform", "he_uniform", "he_normal", "glorot_normal" }, default = "glorot_uniform" },
  bias_initializer = { choices = { "zeros", "ones" }, default = "zeros" },
  input_shape = { type = "table" }, name = { type = "string" },
}, { example = "gpu.nn.Conv2D(2, 3, %s)(gpu.ones(1, 5, 5, 1))" })

-- Conv2D(filters, kernel_size [, {strides = 1, padding = "valid" | "same", activation,
-- use_bias = true, data_format = "channels_last", dilation_rate = 1, groups = 1,
-- kernel_initializer = "glorot_uniform", bias_initializer = "zeros", input_shape, name}])
local Conv2D = class("Conv2D")
function Conv2D:init(filters, kernel_size, opts)
  local fname = "nn.Conv2D"
  if math.type(filters) ~= "integer" or filters < 1 then argerror(fname, 1, "filters must be an integer >= 1, got %s", type_name(filters)) end
  local o = CONV2D:check(opts, 3)
  self.filters, self.kernel_size, self.opts = filters, pair(fname, kernel_size, "kernel_size"), o
  self.strides, self.dilation = pair(fname, o.strides, "strides"), pair(fname, o.dilation_rate, "dilation_rate")
  self.channels_last = o.data_format == "channels_last"
  self.activation = acts[o.activation] or o.activation
  if filters % o.groups ~= 0 then raise("%s: filters (%d) must be divisible by groups (%d)", fname, filters, o.groups) end
  if o.name then self.name = o.name end
  if o.input_shape then
    local s = o.input_shape
    self:build(self.channels_last and s[#s] or s[1])
  end
end
function Conv2D:build(cin, device)
  local fname = "nn.Conv2D"
  local g = self.opts.groups
  if cin % g ~= 0 then raise("%s: %d input channels are not divisible by groups (%d)", fname, cin, g) end
  local kh, kw = self.kernel_size[1], self.kernel_size[2]
  local p = module.placement { dtype = self.opts.dtype, device = self.device or self.opts.device or device }
  local fan_in, fan_out = kh * kw * cin // g, kh * kw * self.filters // g
  local shape = { kh, kw, cin // g, self.filters }
  local init = self.opts.kernel_initializer
  local k
  if init == "glorot_uniform" then
    local lim = math.sqrt(6 / (fan_in + fan_out))
    k = gpu.random.uniform(-lim, lim, shape, p)
  elseif init == "glorot_normal" then k = gpu.random.normal(0, math.sqrt(2 / (fan_in + fan_out)), shape, p)
  elseif init == "he_uniform" then
    local lim = math.sqrt(6 / fan_in)
    k = gpu.random.uniform(-lim, lim, shape, p)
  else k = gpu.random.normal(0, math.sqrt(2 / fan_in), shape, p) end
  self.in_channels = cin
  self:register_parameter("kernel", k)
  if self.opts.use_bias then
    self:register_parameter("bias", (self.opts.bias_initializer == "ones" and gpu.ones or gpu.zeros)({ self.filters }, p))
  end
end
function Conv2D:forward(x)
  local fname = ("Conv2D(%d)"):format(self.filters)
  four_d(fname, x)
  local cl = self.channels_last
  local cin = cl and x.shape[4] or x.shape[2]
  if self.in_channels == nil then self:build(cin, x.device) end
  if cin ~= self.in_channels then raise("%s: expected %d input channels, got %d (input %s)", fname, self.in_channels, cin, shape_str(x.shape)) end
  local xc = to_nchw(x, cl)
  if self.opts.padding == "same" then xc = pad_same(xc, self.kernel_size, self.strides, self.dilation) end
  local kh, kw = self.kernel_size[1], self.kernel_size[2]
  local ek1, ek2 = (kh - 1) * self.dilation[1] + 1, (kw - 1) * self.dilation[2] + 1
  if xc.shape[3] < ek1 or xc.shape[4] < ek2 then
    raise("%s: an input of %dx%d is smaller than the kernel's %dx%d (padding = 'valid')", fname, xc.shape[3], xc.shape[4], ek1, ek2)
  end
  local w = self.kernel:permute({ 4, 3, 1, 2 })          -- (filters, in / groups, kh, kw)
  local y = F.conv2d(xc, w, self.bias, { stride = self.strides, dilation = self.dilation, groups = self.opts.groups })
  return from_nchw(self.activation(y), cl)
end
function Conv2D:repr()
  return ("Conv2D(%d, kernel_size=(%d, %d), padding=%s)"):format(self.filters, self.kernel_size[1], self.kernel_size[2],
    self.opts.padding)
end
KL.Conv2D = Conv2D

local POOL_KEYS = { strides = { type = "integer|table" }, padding = { choices = { "valid", "same" }, default = "valid" },
  data_format = { choices = { "channels_last", "channels_first" }, default = "channels_last" }, name = { type = "string" } }

-- MaxPooling2D / AveragePooling2D([pool_size = 2] [, {strides = pool_size, padding = "valid" |
-- "same", data_format}]); "same" leaves the padding out of a window (max: -inf; average: a
-- window's mean of its real pixels, as Keras's)
local function pool_class(cname, is_max)
  local decl = options.declare("nn." .. cname, POOL_KEYS, { example = ("gpu.nn.%s(2, %%s)(gpu.ones(1, 4, 4, 1))"):format(cname) })
  local cls = class(cname)
  function cls:init(pool_size, opts)
    if type(pool_size) == "table" and pool_size[1] == nil and opts == nil then pool_size, opts = nil, pool_size end
    local fname = "nn." .. cname
    local o = decl:check(opts, 2)
    self.pool = pair(fname, pool_size or 2, "pool_size")
    self.strides = pair(fname, o.strides or self.pool, "strides")
    self.opts, self.channels_last = o, o.data_format == "channels_last"
    if o.name then self.name = o.name end
  end
  function cls:forward(x)
    local fname = "nn." .. cname
    four_d(fname, x)
    local cl = self.channels_last
    local xc = to_nchw(x, cl)
    local k, s = self.pool, self.strides
    local y
    if is_max then
      if self.opts.padding == "same" then xc = pad_same(xc, k, s, { 1, 1 }, -math.huge) end
      if xc.shape[3] < k[1] or xc.shape[4] < k[2] then raise("%s: an input smaller than the pool", fname) end
      y = F.max_pool2d(xc, k, { stride = s })
    else
      if self.opts.padding == "same" then
        local ones = gpu.ones({ 1, 1, xc.shape[3], xc.shape[4] }, { dtype = xc.dtype, device = xc.device })
        local sums = F.avg_pool2d(pad_same(xc, k, s, { 1, 1 }), k, { stride = s })
        local counts = F.avg_pool2d(pad_same(ones, k, s, { 1, 1 }), k, { stride = s })
        y = sums / counts
      else
        if xc.shape[3] < k[1] or xc.shape[4] < k[2] then raise("%s: an input smaller than the pool", fname) end
        y = F.avg_pool2d(xc, k, { stride = s })
      end
    end
    return from_nchw(y, cl)
  end
  function cls:repr() return ("%s(pool_size=(%d, %d))"):format(cname, self.pool[1], self.pool[2]) end
  KL[cname] = cls
end
pool_class("MaxPooling2D", true)
pool_class("AveragePooling2D", false)

-- GlobalAveragePooling2D / GlobalMaxPooling2D([{data_format, keepdims = false}])
local GLOBAL_KEYS = { data_format = POOL_KEYS.data_format, keepdims = { type = "boolean", default = false },
  name = { type = "string" } }
for _, d in ipairs({ { "GlobalAveragePooling2D", false }, { "GlobalMaxPooling2D", true } }) do
  local cname, is_max = d[1], d[2]
  local decl = options.declare("nn." .. cname, GLOBAL_KEYS, { example = ("gpu.nn.%s(%%s)(gpu.ones(1, 4, 4, 2))"):format(cname) })
  local cls = class(cname)
  function cls:init(opts)
    self.opts = decl:check(opts, 1)
    if self.opts.name then self.name = self.opts.name end
  end
  function cls:forward(x)
    four_d("nn." .. cname, x)
    local axes = self.opts.data_format == "channels_last" and { 2, 3 } or { 3, 4 }
    if is_max then return x:max(axes, { keepdims = self.opts.keepdims }) end
    return x:mean(axes, { keepdims = self.opts.keepdims })
  end
  KL[cname] = cls
end

return KL
