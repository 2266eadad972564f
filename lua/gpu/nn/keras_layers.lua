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
local regularizers = require "gpu.nn.regularizers"

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
-- (a view: the next channels-last layer permutes it back to NCHW without a copy)
local function from_nchw(y, cl) return cl and y:permute({ 1, 3, 4, 2 }) or y end

local function four_d(fname, x)
  check_array(x, fname, 1, "input")
  if x.ndim ~= 4 then raise("%s: expected a 4-D input (N, H, W, C) or (N, C, H, W), got %s", fname, shape_str(x.shape)) end
end

local acts = layers.activations
local act_names = {}
for k in pairs(acts) do act_names[#act_names + 1] = k end
table.sort(act_names)

local CONV2D = options.declare("nn.Conv2D", module.with_placement(regularizers.keys {
  strides = { type = "integer|table", default = 1 }, padding = { choices = { "valid", "same" }, default = "valid" },
  data_format = { choices = { "channels_last", "channels_first" }, default = "channels_last" },
  dilation_rate = { type = "integer|table", default = 1 }, groups = { type = "integer", min = 1, default = 1 },
  activation = { type = "string|callable", choices = act_names, default = "linear" },
  use_bias = { type = "boolean", default = true },
  kernel_initializer = { choices = { "glorot_uniform", "he_uniform", "he_normal", "glorot_normal" }, default = "glorot_uniform" },
  bias_initializer = { choices = { "zeros", "ones" }, default = "zeros" },
  input_shape = { type = "table" }, name = { type = "string" },
}), { example = "gpu.nn.Conv2D(2, 3, %s)(gpu.ones(1, 5, 5, 1))" })

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
  regularizers.attach(self, o)
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
  return regularizers.activity(self, from_nchw(self.activation(y), cl))
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

-- GlobalAveragePooling1D/2D/3D / GlobalMaxPooling1D/2D/3D([{data_format, keepdims = false}]):
-- the mean or the maximum over the steps (N, L, C), the plane (N, H, W, C) or the volume
-- (N, D, H, W, C); channels_first: over the axes after C
local GLOBAL_KEYS = { data_format = POOL_KEYS.data_format, keepdims = { type = "boolean", default = false },
  name = { type = "string" } }
local GLOBAL_SHAPES = { "(N, L, C) or (N, C, L)", "(N, H, W, C) or (N, C, H, W)", "(N, D, H, W, C) or (N, C, D, H, W)" }
for _, nd in ipairs { 1, 2, 3 } do
  for _, is_max in ipairs { false, true } do
    local cname = ("Global%sPooling%dD"):format(is_max and "Max" or "Average", nd)
    local ones = ({ "gpu.ones(1, 4, 2)", "gpu.ones(1, 4, 4, 2)", "gpu.ones(1, 2, 2, 2, 2)" })[nd]
    local decl = options.declare("nn." .. cname, GLOBAL_KEYS, { example = ("gpu.nn.%s(%%s)(%s)"):format(cname, ones) })
    local cls = class(cname)
    function cls:init(opts)
      self.opts = decl:check(opts, 1)
      if self.opts.name then self.name = self.opts.name end
    end
    -- forward(x [, {mask = (N, L)}]): GlobalAveragePooling1D averages the unmasked steps only
    -- (a Keras mask, module.call_masked), as Keras's
    local masked = nd == 1 and not is_max
    local call_decl = masked and options.declare("nn." .. cname .. ":forward", { mask = { type = "array" } },
      { example = ("gpu.nn.%s()(%s, %%s)"):format(cname, ones) }) or nil
    if masked then cls.takes_mask = true end
    function cls:forward(x, opts)
      local fname = "nn." .. cname
      check_array(x, fname, 1, "input")
      if x.ndim ~= nd + 2 then
        raise("nn.%s: expected a %d-D input %s, got %s", cname, nd + 2, GLOBAL_SHAPES[nd], shape_str(x.shape))
      end
      local cl = self.opts.data_format == "channels_last"
      local axes, first = {}, cl and 2 or 3
      for i = 1, nd do axes[i] = first + i - 1 end
      local mask = masked and call_decl:check(opts, 2).mask or nil
      if mask == nil then
        if opts ~= nil and not masked then argerror(fname, 2, "at most 1 argument expected, got 2") end
        if is_max then return x:max(axes, { keepdims = self.opts.keepdims }) end
        return x:mean(axes, { keepdims = self.opts.keepdims })
      end
      local N, L = x.shape[1], x.shape[first]
      if mask.ndim ~= 2 or mask.shape[1] ~= N or mask.shape[2] ~= L then
        argerror(fname, 2, "mask must be (N, L) = (%d, %d), got %s", N, L, shape_str(mask.shape))
      end
      local m = mask:to(x.device):astype(x.dtype):reshape(N, cl and L or 1, cl and 1 or L)
      local y = (x * m):sum(axes, { keepdims = true }) / m:sum(axes, { keepdims = true })
      if self.opts.keepdims then return y end
      return y:squeeze(first)
    end
    KL[cname] = cls
  end
end

-- ---- Conv1D ------------------------------------------------------------------------------------

local CONV1D = options.declare("nn.Conv1D", module.with_placement(regularizers.keys {
  strides = { type = "integer", min = 1, default = 1 }, padding = { choices = { "valid", "same", "causal" }, default = "valid" },
  data_format = { choices = { "channels_last", "channels_first" }, default = "channels_last" },
  dilation_rate = { type = "integer", min = 1, default = 1 }, groups = { type = "integer", min = 1, default = 1 },
  activation = { type = "string|callable", choices = act_names, default = "linear" },
  use_bias = { type = "boolean", default = true },
  kernel_initializer = { choices = { "glorot_uniform", "he_uniform", "he_normal", "glorot_normal" }, default = "glorot_uniform" },
  bias_initializer = { choices = { "zeros", "ones" }, default = "zeros" },
  input_shape = { type = "table" }, name = { type = "string" },
}), { example = "gpu.nn.Conv1D(2, 3, %s)(gpu.ones(1, 5, 1))" })

-- Conv1D(filters, kernel_size [, {strides, padding = "valid" | "same" | "causal", ...}]):
-- over (N, L, C) (channels_first: (N, C, L)); kernel (k, in / groups, filters)
local Conv1D = class("Conv1D")
function Conv1D:init(filters, kernel_size, opts)
  local fname = "nn.Conv1D"
  if math.type(filters) ~= "integer" or filters < 1 then argerror(fname, 1, "filters must be an integer >= 1, got %s", type_name(filters)) end
  if math.type(kernel_size) ~= "integer" or kernel_size < 1 then
    argerror(fname, 2, "kernel_size must be an integer >= 1, got %s", type_name(kernel_size))
  end
  local o = CONV1D:check(opts, 3)
  if filters % o.groups ~= 0 then raise("%s: filters (%d) must be divisible by groups (%d)", fname, filters, o.groups) end
  self.filters, self.kernel_size, self.opts = filters, kernel_size, o
  self.channels_last = o.data_format == "channels_last"
  self.activation = acts[o.activation] or o.activation
  regularizers.attach(self, o)
  if o.name then self.name = o.name end
  if o.input_shape then local sh = o.input_shape self:build(self.channels_last and sh[#sh] or sh[1]) end
end
function Conv1D:build(cin, device)
  local g = self.opts.groups
  if cin % g ~= 0 then raise("nn.Conv1D: %d input channels are not divisible by groups (%d)", cin, g) end
  local p = module.placement { dtype = self.opts.dtype, device = self.device or self.opts.device or device }
  local k = self.kernel_size
  local fan_in, fan_out = k * cin // g, k * self.filters // g
  local shape = { k, cin // g, self.filters }
  local init = self.opts.kernel_initializer
  local w
  if init == "glorot_uniform" then local lim = math.sqrt(6 / (fan_in + fan_out)) w = gpu.random.uniform(-lim, lim, shape, p)
  elseif init == "glorot_normal" then w = gpu.random.normal(0, math.sqrt(2 / (fan_in + fan_out)), shape, p)
  elseif init == "he_uniform" then local lim = math.sqrt(6 / fan_in) w = gpu.random.uniform(-lim, lim, shape, p)
  else w = gpu.random.normal(0, math.sqrt(2 / fan_in), shape, p) end
  self.in_channels = cin
  self:register_parameter("kernel", w)
  if self.opts.use_bias then
    self:register_parameter("bias", (self.opts.bias_initializer == "ones" and gpu.ones or gpu.zeros)({ self.filters }, p))
  end
end
function Conv1D:forward(x)
  local fname = ("Conv1D(%d)"):format(self.filters)
  check_array(x, fname, 1, "input")
  if x.ndim ~= 3 then raise("%s: expected a 3-D input (N, L, C) or (N, C, L), got %s", fname, shape_str(x.shape)) end
  local cl = self.channels_last
  local cin = cl and x.shape[3] or x.shape[2]
  if self.in_channels == nil then self:build(cin, x.device) end
  if cin ~= self.in_channels then raise("%s: expected %d input channels, got %d", fname, self.in_channels, cin) end
  local xc = (cl and x:transpose(2, 3) or x):unsqueeze(3)          -- (N, C, 1, L)
  local k, s, d = self.kernel_size, self.opts.strides, self.opts.dilation_rate
  local ek = (k - 1) * d + 1
  if self.opts.padding == "causal" then
    xc = gpu.pad(xc, { { 0, 0 }, { 0, 0 }, { 0, 0 }, { ek - 1, 0 } })
  elseif self.opts.padding == "same" then
    local a, b = same_pad(xc.shape[4], k, s, d)
    if a + b > 0 then xc = gpu.pad(xc, { { 0, 0 }, { 0, 0 }, { 0, 0 }, { a, b } }) end
  end
  if xc.shape[4] < ek then raise("%s: an input of length %d is shorter than the kernel's %d", fname, xc.shape[4], ek) end
  local w = self.kernel:permute({ 3, 2, 1 }):unsqueeze(3)          -- (filters, in / groups, 1, k)
  local y = F.conv2d(xc, w, self.bias, { stride = { 1, s }, dilation = { 1, d }, groups = self.opts.groups }):squeeze(3)
  y = self.activation(y)
  return regularizers.activity(self, cl and y:transpose(2, 3):contiguous() or y)
end
KL.Conv1D = Conv1D

-- ---- padding, cropping, noise, spatial dropout, TimeDistributed -------------------------------

local function keras_simple(cname, keys, positional, init, forward, example, required)
  local cls = module.options_class(cname, keys, positional, init, forward, example, required)
  KL[cname] = cls
  return cls
end

-- Keras's padding / cropping amounts: n, {a, b} (1-D) or, 2-D, n, {h, w}, {{top, bottom}, {left, right}}
local function amounts(fname, v, dims)
  local function pr(x, what)
    if math.type(x) == "integer" and x >= 0 then return { x, x } end
    if type(x) == "table" and #x == 2 and math.type(x[1]) == "integer" and math.type(x[2]) == "integer" and x[1] >= 0 and x[2] >= 0 then
      return { x[1], x[2] }
    end
    raise("%s: %s must be an integer >= 0 or a pair of them, got %s", fname, what, type_name(x))
  end
  if dims == 1 then return { pr(v, "the amount") } end
  if math.type(v) == "integer" then return { pr(v, "the amount"), pr(v, "the amount") } end
  if type(v) ~= "table" or #v ~= 2 then raise("%s: an integer, {h, w} or {{top, bottom}, {left, right}} expected, got %s", fname, type_name(v)) end
  if type(v[1]) == "table" then return { pr(v[1], "the rows'"), pr(v[2], "the columns'") } end
  return { pr(v[1], "the rows'"), pr(v[2], "the columns'") }
end

local FMT = { choices = { "channels_last", "channels_first" }, default = "channels_last" }
for _, d in ipairs({ { "ZeroPadding1D", 1, 1 }, { "ZeroPadding2D", 2, 1 }, { "Cropping1D", 1, 0 }, { "Cropping2D", 2, 0 } }) do
  local cname, dims, is_pad = d[1], d[2], d[3] == 1
  local key = is_pad and "padding" or "cropping"
  keras_simple(cname, { [key] = { type = "integer|table", default = 1 }, data_format = FMT, name = { type = "string" } }, { key },
    function(self, o, fname) self.amount = amounts(fname, o[key], dims) end,
    function(self, x)
      local fname = "nn." .. cname
      check_array(x, fname, 1, "input")
      if x.ndim ~= dims + 2 then raise("%s: expected a %d-D input, got %s", fname, dims + 2, shape_str(x.shape)) end
      local first = self.opts.data_format == "channels_last" and 2 or 3
      if is_pad then
        local width = {}
        for a = 1, x.ndim do width[a] = { 0, 0 } end
        for i = 1, dims do width[first + i - 1] = self.amount[i] end
        return gpu.pad(x, width)
      end
      local key_ = {}
      for a = 1, x.ndim do key_[a] = ":" end
      for i = 1, dims do
        local ax, c = first + i - 1, self.amount[i]
        if c[1] + c[2] >= x.shape[ax] then
          raise("%s: cropping %d and %d from an axis of %d leaves nothing", fname, c[1], c[2], x.shape[ax])
        end
        key_[ax] = { c[1] + 1, x.shape[ax] - c[2] }
      end
      return x[key_]:contiguous()
    end, dims == 1 and "gpu.ones(1, 4, 2)" or "gpu.ones(1, 4, 4, 2)")
end

for _, d in ipairs({ { "SpatialDropout1D", 1 }, { "SpatialDropout2D", 2 } }) do
  local cname, dims = d[1], d[2]
  keras_simple(cname, { rate = { type = "number", min = 0, max = 1, max_open = true }, data_format = FMT, name = { type = "string" } },
    { "rate" }, function(_, o, fname) if o.rate == nil then raise("%s: rate is required", fname) end end,
    function(self, x)
      local fname = "nn." .. cname
      check_array(x, fname, 1, "input")
      if x.ndim ~= dims + 2 then raise("%s: expected a %d-D input, got %s", fname, dims + 2, shape_str(x.shape)) end
      if not self.training or self.opts.rate == 0 then return x end
      local shape = {}
      local cl = self.opts.data_format == "channels_last"
      for a = 1, x.ndim do
        local keep = a == 1 or (cl and a == x.ndim) or (not cl and a == 2)
        shape[a] = keep and x.shape[a] or 1
      end
      local q = 1 - self.opts.rate
      return x * gpu.random.bernoulli(q, shape, { dtype = x.dtype, device = x.device }) * (1 / q)
    end, dims == 1 and "gpu.ones(1, 4, 2)" or "gpu.ones(1, 4, 4, 2)", "{ rate = 0.5 }")
end

keras_simple("GaussianNoise", { stddev = { type = "number", min = 0 }, name = { type = "string" } }, { "stddev" },
  function(_, o, fname) if o.stddev == nil then raise("%s: stddev is required", fname) end end,
  function(self, x)
    check_array(x, "nn.GaussianNoise", 1, "input")
    if not self.training or self.opts.stddev == 0 then return x end
    return x + gpu.random.normal(0, self.opts.stddev, x.shape, { dtype = x.dtype, device = x.device })
  end, "gpu.ones(2, 3)", "{ stddev = 0.1 }")
keras_simple("GaussianDropout", { rate = { type = "number", min = 0, max = 1, max_open = true }, name = { type = "string" } },
  { "rate" }, function(_, o, fname) if o.rate == nil then raise("%s: rate is required", fname) end end,
  function(self, x)
    check_array(x, "nn.GaussianDropout", 1, "input")
    local r = self.opts.rate
    if not self.training or r == 0 then return x end
    return x * gpu.random.normal(1, math.sqrt(r / (1 - r)), x.shape, { dtype = x.dtype, device = x.device })
  end, "gpu.ones(2, 3)", "{ rate = 0.1 }")

-- TimeDistributed(layer): layer applied to every step of (N, T, ...) as one batch (N T, ...)
local TimeDistributed = class("TimeDistributed")
function TimeDistributed:init(layer)
  if not module.is_module(layer) then argerror("nn.TimeDistributed", 1, "a layer expected, got %s", type_name(layer)) end
  self.layer = layer
end
function TimeDistributed:forward(x)
  check_array(x, "nn.TimeDistributed", 1, "input")
  if x.ndim < 3 then raise("nn.TimeDistributed: expected (N, T, ...), got %s", shape_str(x.shape)) end
  local N, T = x.shape[1], x.shape[2]
  local rest = {}
  for a = 3, x.ndim do rest[#rest + 1] = x.shape[a] end
  local y = self.layer(x:reshape(N * T, table.unpack(rest)))
  local out = { N, T }
  for a = 2, y.ndim do out[#out + 1] = y.shape[a] end
  return y:reshape(table.unpack(out))
end
TimeDistributed.keeps_mask = true      -- a Keras step mask goes on through it (module.call_masked)
KL.TimeDistributed = TimeDistributed

-- ---- BatchNormalization, LayerNormalization, Normalization -------------------------------------

local BN = options.declare("nn.BatchNormalization", module.with_placement {
  axis = { type = "integer", default = -1 }, momentum = { type = "number", min = 0, max = 1, default = 0.99 },
  epsilon = { type = "number", min = 0, min_open = true, default = 1e-3 }, center = { type = "boolean", default = true },
  scale = { type = "boolean", default = true }, name = { type = "string" },
}, { example = "gpu.nn.BatchNormalization(%s)(gpu.ones(4, 3))" })

-- the per-feature shape of x along axis (1-based after the batch; -1 the last) and its axis
local function feature_axis(fname, x, axis)
  local a = axis < 0 and x.ndim + 1 + axis or axis + 1
  if a < 2 or a > x.ndim then raise("%s: axis %d is out of range for an input %s", fname, axis, shape_str(x.shape)) end
  local shape = {}
  for d = 1, x.ndim do shape[d] = d == a and x.shape[d] or 1 end
  return a, shape
end

-- BatchNormalization([{axis = -1, momentum = 0.99, epsilon = 1e-3, center, scale}]): Keras's:
-- gamma, beta, moving_mean, moving_variance (the batch's biased variance, moving = moving m +
-- batch (1 - m)); built at the first call
local BatchNormalization = class("BatchNormalization")
function BatchNormalization:init(opts)
  self.opts = BN:check(opts, 1)
  if self.opts.name then self.name = self.opts.name end
end
function BatchNormalization:build(C, device)
  local p = module.placement { dtype = self.opts.dtype, device = self.device or self.opts.device or device }
  self.features = C
  if self.opts.scale then self:register_parameter("gamma", gpu.ones({ C }, p)) end
  if self.opts.center then self:register_parameter("beta", gpu.zeros({ C }, p)) end
  self:register_buffer("moving_mean", gpu.zeros({ C }, p))
  self:register_buffer("moving_variance", gpu.ones({ C }, p))
end
function BatchNormalization:forward(x)
  local fname = "nn.BatchNormalization"
  check_array(x, fname, 1, "input")
  local a, shape = feature_axis(fname, x, self.opts.axis)
  local C = x.shape[a]
  if self.features == nil then self:build(C, x.device) end
  if C ~= self.features then raise("%s: expected %d features on axis %d, got %d", fname, self.features, self.opts.axis, C) end
  local axes = {}
  for d = 1, x.ndim do if d ~= a then axes[#axes + 1] = d end end
  local mean, var
  if self.training and not rawget(self, "_frozen") then     -- (frozen: trainable = false, Keras's inference)
    mean = x:mean(axes, { keepdims = true })
    var = (x - mean):square():mean(axes, { keepdims = true })
    local m = self.opts.momentum
    gpu.no_grad(function()
      self.moving_mean[{}] = self.moving_mean * m + mean:detach():reshape(C) * (1 - m)
      self.moving_variance[{}] = self.moving_variance * m + var:detach():reshape(C) * (1 - m)
    end)
  else
    mean, var = self.moving_mean:reshape(table.unpack(shape)), self.moving_variance:reshape(table.unpack(shape))
  end
  local y = (x - mean) / (var + self.opts.epsilon):sqrt()
  if self.gamma ~= nil then y = y * self.gamma:reshape(table.unpack(shape)) end
  if self.beta ~= nil then y = y + self.beta:reshape(table.unpack(shape)) end
  return y
end
KL.BatchNormalization = BatchNormalization

local LN = options.declare("nn.LayerNormalization", module.with_placement {
  axis = { type = "integer|table", default = -1 }, epsilon = { type = "number", min = 0, min_open = true, default = 1e-3 },
  center = { type = "boolean", default = true }, scale = { type = "boolean", default = true }, name = { type = "string" },
}, { example = "gpu.nn.LayerNormalization(%s)(gpu.ones(4, 3))" })

-- LayerNormalization([{axis = -1 (or a list), epsilon = 1e-3, center, scale}]): Keras's, each
-- sample normalised over the axes (1-based after the batch; -1 the last), gamma and beta of
-- their shape
local LayerNormalization = class("LayerNormalization")
function LayerNormalization:init(opts)
  self.opts = LN:check(opts, 1)
  if self.opts.name then self.name = self.opts.name end
end
function LayerNormalization:forward(x)
  local fname = "nn.LayerNormalization"
  check_array(x, fname, 1, "input")
  local list = type(self.opts.axis) == "table" and self.opts.axis or { self.opts.axis }
  local axes, pshape = {}, {}
  for d = 1, x.ndim do pshape[d] = 1 end
  for _, ax in ipairs(list) do
    local a = feature_axis(fname, x, ax)
    axes[#axes + 1] = a
    pshape[a] = x.shape[a]
  end
  if self.pshape == nil then
    local p = module.placement { dtype = self.opts.dtype, device = self.device or self.opts.device or x.device }
    local ps = {}
    for _, a in ipairs(axes) do ps[#ps + 1] = x.shape[a] end
    self.pshape = ps
    if self.opts.scale then self:register_parameter("gamma", gpu.ones(ps, p)) end
    if self.opts.center then self:register_parameter("beta", gpu.zeros(ps, p)) end
  end
  local mean = x:mean(axes, { keepdims = true })
  local var = (x - mean):square():mean(axes, { keepdims = true })
  local y = (x - mean) / (var + self.opts.epsilon):sqrt()
  if self.gamma ~= nil then y = y * self.gamma:reshape(table.unpack(pshape)) end
  if self.beta ~= nil then y = y + self.beta:reshape(table.unpack(pshape)) end
  return y
end
LayerNormalization.keeps_mask = true
KL.LayerNormalization = LayerNormalization

local NORM = options.declare("nn.Normalization", { axis = { type = "integer", default = -1 }, mean = { type = "number|table|array" },
  variance = { type = "number|table|array" }, invert = { type = "boolean", default = false }, name = { type = "string" } },
  { example = "gpu.nn.Normalization((function(t) t.mean = t.mean or 0; t.variance = t.variance or 1 return t end)(%s))(gpu.ones(2, 3))" })

-- Normalization([{axis = -1, mean, variance, invert = false}]): (x - mean) / max(sqrt(var),
-- 1e-7) per feature on axis; n:adapt(data) computes mean and variance from data (an array
-- (N, ...)); invert maps back
local Normalization = class("Normalization")
function Normalization:init(opts)
  local o = NORM:check(opts, 1)
  self.opts = o
  if o.name then self.name = o.name end
  if (o.mean == nil) ~= (o.variance == nil) then raise("nn.Normalization: give mean and variance together, or adapt()") end
  if o.mean ~= nil then
    local function arr(v) return options.is_array(v) and v:astype("float32") or gpu.array(v, { dtype = "float32" }) end
    self:register_buffer("mean", arr(o.mean))
    self:register_buffer("variance", arr(o.variance))
  end
end
function Normalization:adapt(data)
  local fname = "Normalization:adapt"
  check_array(data, fname, 1, "data")
  if data.ndim < 1 or data.shape[1] == 0 then raise("%s: data has no samples", fname) end
  local a = data.ndim >= 2 and feature_axis(fname, data, self.opts.axis) or nil
  local axes = {}
  for d = 1, data.ndim do if d ~= a then axes[#axes + 1] = d end end
  local x = data:astype("float64")
  local mean = x:mean(axes)
  local var = (x - x:mean(axes, { keepdims = true })):square():mean(axes)
  self:register_buffer("mean", mean:astype(data.dtype:match("float") and data.dtype or "float32"))
  self:register_buffer("variance", var:astype(data.dtype:match("float") and data.dtype or "float32"))
  return self
end
function Normalization:forward(x)
  local fname = "nn.Normalization"
  check_array(x, fname, 1, "input")
  if self.mean == nil then raise("%s: no mean and variance yet (give them, or call adapt(data) first)", fname) end
  local mean, var = self.mean, self.variance
  if mean.ndim == 1 and x.ndim >= 2 and mean.size > 1 then
    local _, shape = feature_axis(fname, x, self.opts.axis)
    mean, var = mean:reshape(table.unpack(shape)), var:reshape(table.unpack(shape))
  end
  mean, var = mean:to(x.device):astype(x.dtype:match("float") and x.dtype or "float32"), var:to(x.device)
  local sd = var:sqrt():maximum(1e-7):astype(mean.dtype)
  if self.opts.invert then return x * sd + mean end
  return (x - mean) / sd
end
KL.Normalization = Normalization

-- the helpers the other Keras layer files share (not layers: behind the metatable, so that
-- nn's export of this table's entries leaves them out)
setmetatable(KL, { __index = { _helpers = { pair = pair, same_pad = same_pad, pad_same = pad_same, to_nchw = to_nchw,
  from_nchw = from_nchw, four_d = four_d, acts = acts, act_names = act_names } } })

return KL
