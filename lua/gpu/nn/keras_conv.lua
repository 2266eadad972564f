-- gpu.nn's further Keras convolutions, channels-last by default as Keras's:
-- DepthwiseConv2D, SeparableConv2D and Conv2DTranspose, in Keras's kernel layouts, computed
-- through nn.functional's conv2d (groups) and conv_transpose2d.
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local F = require "gpu.nn.functional"
local regularizers = require "gpu.nn.regularizers"
local H = require("gpu.nn.keras_layers")._helpers

local raise, argerror, shape_str, type_name = options.raise, options.argerror, options.shape_str, options.type_name
local class = module.class
local pair, pad_same, to_nchw, from_nchw, four_d = H.pair, H.pad_same, H.to_nchw, H.from_nchw, H.four_d

local KC = {}

local INITS = { "glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "lecun_uniform", "lecun_normal", "zeros", "ones" }
local INIT = function(default) return { choices = INITS, default = default } end

-- A kernel of Keras's shape drawn as Keras's initializer: fans from the shape (the receptive
-- field, the product of all but the last two extents, times each of those two).
local function keras_kernel(init, shape, p)
  local rf = 1
  for i = 1, #shape - 2 do rf = rf * shape[i] end
  local fan_in, fan_out = shape[#shape - 1] * rf, shape[#shape] * rf
  if init == "zeros" then return gpu.zeros(shape, p) end
  if init == "ones" then return gpu.ones(shape, p) end
  local scale, fan = 1, fan_in
  if init:match("^glorot") then fan = (fan_in + fan_out) / 2 elseif init:match("^he") then scale = 2 end
  if init:match("uniform$") then
    local lim = math.sqrt(3 * scale / fan)
    return gpu.random.uniform(-lim, lim, shape, p)
  end
  -- Keras's normal initializers draw a normal truncated at two standard deviations, whose
  -- standard deviation is the variance's root divided by 0.8796...
  local sd = math.sqrt(scale / fan) / 0.87962566103423978
  local k = gpu.random.normal(0, sd, shape, p)
  local out = k:abs():gt(2 * sd)
  while out:any():item() do
    k = gpu.where(out, gpu.random.normal(0, sd, shape, p), k)
    out = k:abs():gt(2 * sd)
  end
  return k
end

local function bias(init, n, p) return (init == "ones" and gpu.ones or gpu.zeros)({ n }, p) end

local COMMON = {
  strides = { type = "integer|table", default = 1 }, padding = { choices = { "valid", "same" }, default = "valid" },
  data_format = { choices = { "channels_last", "channels_first" }, default = "channels_last" },
  dilation_rate = { type = "integer|table", default = 1 },
  activation = { type = "string|callable", choices = H.act_names, default = "linear" },
  use_bias = { type = "boolean", default = true }, bias_initializer = { choices = { "zeros", "ones" }, default = "zeros" },
  input_shape = { type = "table" }, name = { type = "string" },
}
local function keys(extra, weights)
  local t = {}
  for k, v in pairs(COMMON) do t[k] = v end
  for k, v in pairs(extra) do t[k] = v end
  return module.with_placement(regularizers.keys(t, weights))
end

-- the options every layer here keeps: pairs, the layout, the activation, regularizers
local function setup(self, fname, o, kernel_size, weights)
  self.opts = o
  self.kernel_size = pair(fname, kernel_size, "kernel_size")
  self.strides, self.dilation = pair(fname, o.strides, "strides"), pair(fname, o.dilation_rate, "dilation_rate")
  self.channels_last = o.data_format == "channels_last"
  self.activation = H.acts[o.activation] or o.activation
  regularizers.attach(self, o, weights)
  if o.name then self.name = o.name end
end

local function placement(self, device)
  return module.placement { dtype = self.opts.dtype, device = self.device or self.opts.device or device }
end

-- x's channels, building the layer at its first call; the input as (N, C, H, W)
local function prepare(self, fname, x)
  four_d(fname, x)
  local cl = self.channels_last
  local cin = cl and x.shape[4] or x.shape[2]
  if self.in_channels == nil then self:build(cin, x.device) end
  if cin ~= self.in_channels then
    raise("%s: expected %d input channels, got %d (input %s)", fname, self.in_channels, cin, shape_str(x.shape))
  end
  return to_nchw(x, cl)
end

-- the depthwise convolution of xc (N, C, H, W) by a Keras depthwise kernel (kh, kw, C, m):
-- C * m channels, channel c * m + j from input channel c (1-based: (c - 1) m + j)
local function depthwise(self, fname, xc, kernel, b)
  if self.opts.padding == "same" then xc = pad_same(xc, self.kernel_size, self.strides, self.dilation) end
  local kh, kw = self.kernel_size[1], self.kernel_size[2]
  local ek1, ek2 = (kh - 1) * self.dilation[1] + 1, (kw - 1) * self.dilation[2] + 1
  if xc.shape[3] < ek1 or xc.shape[4] < ek2 then
    raise("%s: an input of %dx%d is smaller than the kernel's %dx%d (padding = 'valid')", fname, xc.shape[3], xc.shape[4], ek1, ek2)
  end
  local C, m = kernel.shape[3], kernel.shape[4]
  local w = kernel:permute({ 3, 4, 1, 2 }):reshape(C * m, 1, kh, kw)
  return F.conv2d(xc, w, b, { stride = self.strides, dilation = self.dilation, groups = C })
end

-- ---- DepthwiseConv2D ----------------------------------------------------------------------------

local DEPTHWISE = options.declare("nn.DepthwiseConv2D", keys({
  depth_multiplier = { type = "integer", min = 1, default = 1 }, depthwise_initializer = INIT("glorot_uniform"),
}, { { "depthwise", "kernel" }, "bias" }), { example = "gpu.nn.DepthwiseConv2D(3, %s)(gpu.ones(1, 5, 5, 2))" })

-- DepthwiseConv2D(kernel_size [, {depth_multiplier = 1, strides = 1, padding = "valid" | "same",
-- data_format = "channels_last", dilation_rate = 1, activation, use_bias = true,
-- depthwise_initializer = "glorot_uniform", bias_initializer = "zeros", depthwise_regularizer, ...}]):
-- each input channel convolved on its own by depth_multiplier kernels; kernel (kh, kw, C,
-- depth_multiplier) as Keras 3's (the depthwise_ options act on it), bias (C * depth_multiplier)
local DepthwiseConv2D = class("DepthwiseConv2D")
function DepthwiseConv2D:init(kernel_size, opts)
  local fname = "nn.DepthwiseConv2D"
  if kernel_size == nil then argerror(fname, 1, "kernel_size (an integer >= 1 or a list of two) expected, got nil") end
  setup(self, fname, DEPTHWISE:check(opts, 2), kernel_size, { { "depthwise", "kernel" }, "bias" })
  if self.opts.input_shape then local s = self.opts.input_shape self:build(self.channels_last and s[#s] or s[1]) end
end
function DepthwiseConv2D:build(cin, device)
  local p, m = placement(self, device), self.opts.depth_multiplier
  self.in_channels = cin
  self:register_parameter("kernel",
    keras_kernel(self.opts.depthwise_initializer, { self.kernel_size[1], self.kernel_size[2], cin, m }, p))
  if self.opts.use_bias then self:register_parameter("bias", bias(self.opts.bias_initializer, cin * m, p)) end
end
function DepthwiseConv2D:forward(x)
  local fname = "DepthwiseConv2D"
  local xc = prepare(self, fname, x)
  local y = depthwise(self, fname, xc, self.kernel, self.bias)
  return regularizers.activity(self, from_nchw(self.activation(y), self.channels_last))
end
function DepthwiseConv2D:repr()
  return ("DepthwiseConv2D(kernel_size=(%d, %d), depth_multiplier=%d)"):format(self.kernel_size[1], self.kernel_size[2],
    self.opts.depth_multiplier)
end
KC.DepthwiseConv2D = DepthwiseConv2D

-- ---- SeparableConv2D -----------------------------------------------------------------------------

local SEPARABLE = options.declare("nn.SeparableConv2D", keys({
  depth_multiplier = { type = "integer", min = 1, default = 1 }, depthwise_initializer = INIT("glorot_uniform"),
  pointwise_initializer = INIT("glorot_uniform"),
}, { "depthwise", "pointwise", "bias" }), { example = "gpu.nn.SeparableConv2D(4, 3, %s)(gpu.ones(1, 5, 5, 2))" })

-- SeparableConv2D(filters, kernel_size [, {depth_multiplier = 1, strides, padding, data_format,
-- dilation_rate, activation, use_bias, depthwise_initializer, pointwise_initializer,
-- bias_initializer, depthwise_/pointwise_/bias_regularizer, ...}]): a depthwise convolution
-- (no bias) then a 1x1 one to filters channels; depthwise_kernel (kh, kw, C, m),
-- pointwise_kernel (1, 1, C m, filters), bias (filters)
local SeparableConv2D = class("SeparableConv2D")
function SeparableConv2D:init(filters, kernel_size, opts)
  local fname = "nn.SeparableConv2D"
  if math.type(filters) ~= "integer" or filters < 1 then argerror(fname, 1, "filters must be an integer >= 1, got %s", type_name(filters)) end
  self.filters = filters
  setup(self, fname, SEPARABLE:check(opts, 3), kernel_size, { "depthwise", "pointwise", "bias" })
  if self.opts.input_shape then local s = self.opts.input_shape self:build(self.channels_last and s[#s] or s[1]) end
end
function SeparableConv2D:build(cin, device)
  local p, m = placement(self, device), self.opts.depth_multiplier
  self.in_channels = cin
  self:register_parameter("depthwise_kernel",
    keras_kernel(self.opts.depthwise_initializer, { self.kernel_size[1], self.kernel_size[2], cin, m }, p))
  self:register_parameter("pointwise_kernel", keras_kernel(self.opts.pointwise_initializer, { 1, 1, cin * m, self.filters }, p))
  if self.opts.use_bias then self:register_parameter("bias", bias(self.opts.bias_initializer, self.filters, p)) end
end
function SeparableConv2D:forward(x)
  local fname = ("SeparableConv2D(%d)"):format(self.filters)
  local xc = prepare(self, fname, x)
  local d = depthwise(self, fname, xc, self.depthwise_kernel, nil)
  local pw = self.pointwise_kernel
  local y = F.conv2d(d, pw:reshape(pw.shape[3], self.filters):transpose(1, 2):reshape(self.filters, pw.shape[3], 1, 1), self.bias)
  return regularizers.activity(self, from_nchw(self.activation(y), self.channels_last))
end
function SeparableConv2D:repr()
  return ("SeparableConv2D(%d, kernel_size=(%d, %d))"):format(self.filters, self.kernel_size[1], self.kernel_size[2])
end
KC.SeparableConv2D = SeparableConv2D

-- ---- Conv2DTranspose -----------------------------------------------------------------------------

local TRANSPOSE = options.declare("nn.Conv2DTranspose", keys({
  output_padding = { type = "integer|table" }, kernel_initializer = INIT("glorot_uniform"),
}), { example = "gpu.nn.Conv2DTranspose(2, 3, %s)(gpu.ones(1, 4, 4, 1))" })

-- Keras's output length of a transposed convolution along one axis, and the crop before
-- (what the full transposed convolution, (n - 1) s + dk long, loses at its start; a
-- negative length difference at its end is zeros added). "same" crops as the forward
-- convolution of that length pads: half the difference, rounded down, before.
local function transpose_axis(n, k, s, d, padding, op)
  local dk = (k - 1) * d + 1
  local len
  if op == nil then
    len = padding == "valid" and n * s + math.max(dk - s, 0) or n * s
  else
    len = (n - 1) * s + dk - 2 * (padding == "same" and dk // 2 or 0) + op
  end
  local before = padding == "same" and math.max((n - 1) * s + dk - len, 0) // 2 or 0
  return len, before
end

-- Conv2DTranspose(filters, kernel_size [, {strides = 1, padding = "valid" | "same",
-- output_padding, data_format, dilation_rate, activation, use_bias, kernel_initializer,
-- bias_initializer, regularizers, constraints}]): the gradient of Conv2D with respect to
-- its input; kernel (kh, kw, filters, C) as Keras's; Keras's output sizes (valid: n s +
-- max(dk - s, 0); same: n s; with output_padding: (n - 1) s + dk - 2 pad + output_padding)
local Conv2DTranspose = class("Conv2DTranspose")
function Conv2DTranspose:init(filters, kernel_size, opts)
  local fname = "nn.Conv2DTranspose"
  if math.type(filters) ~= "integer" or filters < 1 then argerror(fname, 1, "filters must be an integer >= 1, got %s", type_name(filters)) end
  self.filters = filters
  setup(self, fname, TRANSPOSE:check(opts, 3), kernel_size)
  local op = self.opts.output_padding
  if op ~= nil then
    if math.type(op) == "integer" then op = { op, op } end
    if #op ~= 2 or math.type(op[1]) ~= "integer" or math.type(op[2]) ~= "integer" or op[1] < 0 or op[2] < 0 then
      argerror(fname, 3, "option 'output_padding' must be an integer >= 0 or a list of two")
    end
    for i = 1, 2 do
      if op[i] >= self.strides[i] then
        raise("%s: output_padding (%d, %d) must be smaller than strides (%d, %d)", fname, op[1], op[2], self.strides[1], self.strides[2])
      end
    end
    self.output_padding = { op[1], op[2] }
  end
  if self.opts.input_shape then local s = self.opts.input_shape self:build(self.channels_last and s[#s] or s[1]) end
end
function Conv2DTranspose:build(cin, device)
  local p = placement(self, device)
  self.in_channels = cin
  self:register_parameter("kernel",
    keras_kernel(self.opts.kernel_initializer, { self.kernel_size[1], self.kernel_size[2], self.filters, cin }, p))
  if self.opts.use_bias then self:register_parameter("bias", bias(self.opts.bias_initializer, self.filters, p)) end
end
function Conv2DTranspose:forward(x)
  local fname = ("Conv2DTranspose(%d)"):format(self.filters)
  local xc = prepare(self, fname, x)
  local w = self.kernel:permute({ 4, 3, 1, 2 })        -- (C, filters, kh, kw): conv_transpose2d's layout
  local full = F.conv_transpose2d(xc, w, nil, { stride = self.strides, dilation = self.dilation })
  local spans, pads = {}, {}
  for i = 1, 2 do
    local op = self.output_padding and self.output_padding[i]
    local len, before = transpose_axis(xc.shape[2 + i], self.kernel_size[i], self.strides[i], self.dilation[i],
      self.opts.padding, op)
    local have = full.shape[2 + i]
    local last = math.min(before + len, have)
    spans[i] = { before + 1, last }
    pads[i] = before + len - last                        -- zeros after what the full result has
  end
  local y = full[{ ":", ":", spans[1], spans[2] }]
  if pads[1] > 0 or pads[2] > 0 then y = gpu.pad(y, { { 0, 0 }, { 0, 0 }, { 0, pads[1] }, { 0, pads[2] } }) end
  if self.bias ~= nil then y = y + self.bias:reshape(1, self.filters, 1, 1) end
  return regularizers.activity(self, from_nchw(self.activation(y), self.channels_last))
end
function Conv2DTranspose:repr()
  return ("Conv2DTranspose(%d, kernel_size=(%d, %d), strides=(%d, %d), padding=%s)"):format(self.filters,
    self.kernel_size[1], self.kernel_size[2], self.strides[1], self.strides[2], self.opts.padding)
end
KC.Conv2DTranspose = Conv2DTranspose

return KC
