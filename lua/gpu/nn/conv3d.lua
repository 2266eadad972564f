-- gpu.nn's volumetric layers: PyTorch's Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d and
-- their functional forms (N, C, D, H, W), and Keras's Conv3D, MaxPooling3D and
-- AveragePooling3D (channels-last (N, D, H, W, C) by default).
--
-- Each is computed from the planar op over the kernel's depth taps: tap t of a convolution
-- is a conv2d of the depth slices t d_d + 1, t d_d + 1 + s_d, ... (every output depth at once,
-- the depths folded into the batch), and the taps are summed; a transposed convolution places
-- each tap's conv_transpose2d at the depths i s_d + t d_d; a pool takes the maximum or the
-- mean of its taps' planar pools. Autograd follows through the planar ops.
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local F = require "gpu.nn.functional"
local init = require "gpu.nn.initializers"
local regularizers = require "gpu.nn.regularizers"

local raise, argerror, check_array, shape_str, type_name = options.raise, options.argerror, options.check_array,
  options.shape_str, options.type_name
local class = module.class

local V = { functional = {} }
local VF = V.functional

-- a triple from a number or a list of three integers (>= 1, or >= 0 with zero_ok)
local function triple(fname, v, what, zero_ok)
  local lo = zero_ok and 0 or 1
  if math.type(v) == "integer" then v = { v, v, v } end
  if type(v) ~= "table" or #v ~= 3 then
    argerror(fname, 1, "%s must be an integer or a list of three, got %s", what, type_name(v))
  end
  for i = 1, 3 do
    if math.type(v[i]) ~= "integer" or v[i] < lo then
      argerror(fname, 1, "%s must hold integers >= %d, got %s", what, lo, tostring(v[i]))
    end
  end
  return { v[1], v[2], v[3] }
end

-- x (N, C, D, H, W), or an unbatched (C, D, H, W) as a batch of one (was: it was unbatched)
local function batched(fname, x)
  check_array(x, fname, 1, "input")
  if x.ndim == 4 then return x:unsqueeze(1), true end
  if x.ndim ~= 5 then raise("%s: expected a 5-D input (N, C, D, H, W) or a 4-D one (C, D, H, W), got %s", fname, shape_str(x.shape)) end
  return x, false
end

-- the depth slices of tap t (0-based) for od outputs: x[:, :, t dd + 1 : ... : sd]
local function depth_slices(x, t, dd, sd, od)
  local first = t * dd + 1
  return x[{ ":", ":", { first, first + sd * (od - 1), sd } }]
end

-- (N, C, D, H, W) -> (N D, C, H, W) and back (m: the result's channels)
local function fold(x) local N, C, D = x.shape[1], x.shape[2], x.shape[3]
  return x:permute({ 1, 3, 2, 4, 5 }):reshape(N * D, C, x.shape[4], x.shape[5]) end
local function unfold(y, N, D) return y:reshape(N, D, y.shape[2], y.shape[3], y.shape[4]):permute({ 1, 3, 2, 4, 5 }) end

local function pad_depth(x, a, b, value)
  if a == 0 and b == 0 then return x end
  return gpu.pad(x, { { 0, 0 }, { 0, 0 }, { a, b }, { 0, 0 }, { 0, 0 } }, { constant_values = value or 0 })
end

-- ---- conv3d, conv_transpose3d ------------------------------------------------------------------

local size = "integer|table"
local CONV3D = options.declare("nn.conv3d", { stride = size, padding = size, dilation = size, groups = { type = "integer", min = 1 } },
  { example = "gpu.nn.functional.conv3d(gpu.ones(1, 1, 3, 3, 3), gpu.ones(1, 1, 2, 2, 2), nil, %s)" })
local CONVT3D = options.declare("nn.conv_transpose3d", { stride = size, padding = size, output_padding = size, dilation = size,
  groups = { type = "integer", min = 1 } },
  { example = "gpu.nn.functional.conv_transpose3d(gpu.ones(1, 1, 3, 3, 3), gpu.ones(1, 1, 2, 2, 2), nil, %s)" })

local function check_weight(fname, x, w, b, transposed)
  check_array(w, fname, 2, "weight")
  if b ~= nil then check_array(b, fname, 3, "bias") end
  if w.ndim ~= 5 then
    raise("%s: weight must be a 5-D array (%s, kd, kh, kw), got %s", fname, transposed and "in, out/groups" or "out, in/groups",
      shape_str(w.shape))
  end
end

-- conv3d_as(name, x, w, b, o): x (N, C, D, H, W), w (O, C/groups, kd, kh, kw), b (O) or nil
local function conv3d_as(name, x, w, b, o)
  local xb, was = batched(name, x)
  check_weight(name, xb, w, b)
  local s, p, d = triple(name, o.stride or 1, "stride"), triple(name, o.padding or 0, "padding", true),
    triple(name, o.dilation or 1, "dilation")
  local G = o.groups or 1
  local N, C, D = xb.shape[1], xb.shape[2], xb.shape[3]
  local O, kd = w.shape[1], w.shape[3]
  if C ~= w.shape[2] * G then
    raise("%s: expected %d input channels (weight %s, groups %d), got %d", name, w.shape[2] * G, shape_str(w.shape), G, C)
  end
  if O % G ~= 0 then raise("%s: groups (%d) must divide the %d output channels", name, G, O) end
  if b ~= nil and (b.ndim ~= 1 or b.size ~= O) then raise("%s: bias must hold %d values, got %s", name, O, shape_str(b.shape)) end
  local xp = pad_depth(xb, p[1], p[1])
  local od = (D + 2 * p[1] - d[1] * (kd - 1) - 1) // s[1] + 1
  if od < 1 then raise("%s: the input's depth %d (padding %d) is smaller than the kernel's %d", name, D, p[1], d[1] * (kd - 1) + 1) end
  local y
  for t = 0, kd - 1 do
    local wt = w[{ ":", ":", t + 1 }]
    local yt = F.conv2d_as(name, fold(depth_slices(xp, t, d[1], s[1], od)), wt, nil,
      { stride = { s[2], s[3] }, padding = { p[2], p[3] }, dilation = { d[2], d[3] }, groups = G })
    y = y and y + yt or yt
  end
  y = unfold(y, N, od)
  if b ~= nil then y = y + b:reshape(1, O, 1, 1, 1) end
  return was and y:squeeze(1) or y
end
function VF.conv3d(x, w, b, opts) return conv3d_as("nn.conv3d", x, w, b, CONV3D:check(opts, 4)) end

-- conv_transpose3d_as(name, x, w, b, o): x (N, C, D, H, W), w (C, O/groups, kd, kh, kw) ->
-- (N, O, (D - 1) s - 2 p + d (kd - 1) + output_padding + 1, ...), PyTorch's
local function conv_transpose3d_as(name, x, w, b, o)
  local xb, was = batched(name, x)
  check_weight(name, xb, w, b, true)
  local s, p, d = triple(name, o.stride or 1, "stride"), triple(name, o.padding or 0, "padding", true),
    triple(name, o.dilation or 1, "dilation")
  local op = triple(name, o.output_padding or 0, "output_padding", true)
  for i = 1, 3 do
    if op[i] >= s[i] and op[i] >= d[i] then
      raise("%s: output_padding (%d, %d, %d) must be smaller than stride or dilation", name, op[1], op[2], op[3])
    end
  end
  local G = o.groups or 1
  local N, C, D = xb.shape[1], xb.shape[2], xb.shape[3]
  local kd, O = w.shape[3], w.shape[2] * G
  if C ~= w.shape[1] then raise("%s: expected %d input channels (weight %s), got %d", name, w.shape[1], shape_str(w.shape), C) end
  if b ~= nil and (b.ndim ~= 1 or b.size ~= O) then raise("%s: bias must hold %d values, got %s", name, O, shape_str(b.shape)) end
  local full = (D - 1) * s[1] + d[1] * (kd - 1) + 1 + op[1]        -- before the depth padding's crop
  local od = full - 2 * p[1]
  if od < 1 then raise("%s: the output's depth would be %d: too small", name, od) end
  local xf = fold(xb)                                                  -- (N D, C, H, W)
  local y
  for t = 0, kd - 1 do
    local yt = F.conv_transpose2d(xf, w[{ ":", ":", t + 1 }], nil,
      { stride = { s[2], s[3] }, padding = { p[2], p[3] }, output_padding = { op[2], op[3] }, dilation = { d[2], d[3] },
        groups = G })
    yt = unfold(yt, N, D)                                              -- (N, O, D, OH, OW)
    if s[1] > 1 then                                                   -- depth i to i s: zeros between
      local z = gpu.zeros({ N, O, D, s[1] - 1, yt.shape[4], yt.shape[5] }, { dtype = yt.dtype, device = yt.device })
      yt = gpu.concat({ yt:unsqueeze(4), z }, 4):reshape(N, O, D * s[1], yt.shape[4], yt.shape[5])
      yt = yt[{ ":", ":", { 1, (D - 1) * s[1] + 1 } }]
    end
    local before = t * d[1]
    yt = pad_depth(yt, before, full - before - yt.shape[3])
    y = y and y + yt or yt
  end
  y = y[{ ":", ":", { p[1] + 1, p[1] + od } }]
  if b ~= nil then y = y + b:reshape(1, O, 1, 1, 1) end
  return was and y:squeeze(1) or y
end
function VF.conv_transpose3d(x, w, b, opts) return conv_transpose3d_as("nn.conv_transpose3d", x, w, b, CONVT3D:check(opts, 4)) end

-- ---- max_pool3d, avg_pool3d --------------------------------------------------------------------

local MAXP = options.declare("nn.max_pool3d", { stride = size, padding = size, dilation = size },
  { example = "gpu.nn.functional.max_pool3d(gpu.ones(1, 1, 4, 4, 4), 2, %s)" })
local AVGP = options.declare("nn.avg_pool3d", { stride = size, padding = size },
  { example = "gpu.nn.functional.avg_pool3d(gpu.ones(1, 1, 4, 4, 4), 2, %s)" })

-- pool3d_as(name, is_max, x, k, o): the maximum, or the mean (padding counted as zeros,
-- PyTorch's count_include_pad), over windows of k (a number or three)
local function pool3d_as(name, is_max, x, k, o)
  local xb, was = batched(name, x)
  k = triple(name, k, "kernel_size")
  local s, p = triple(name, o.stride or k, "stride"), triple(name, o.padding or 0, "padding", true)
  local d = triple(name, o.dilation or 1, "dilation")
  for i = 1, 3 do
    if p[i] * 2 > k[i] then raise("%s: padding (%d) must be at most half the kernel (%d)", name, p[i], k[i]) end
  end
  local N, C, D = xb.shape[1], xb.shape[2], xb.shape[3]
  local xp = pad_depth(xb, p[1], p[1], is_max and -math.huge or 0)
  local od = (D + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
  if od < 1 then raise("%s: the input's depth %d is smaller than the window's %d", name, D, d[1] * (k[1] - 1) + 1) end
  local y
  for t = 0, k[1] - 1 do
    local sl = depth_slices(xp, t, d[1], s[1], od)                     -- (N, C, od, H, W)
    local planes = sl:reshape(N, C * od, sl.shape[4], sl.shape[5])
    local yt
    if is_max then
      yt = F.max_pool2d(planes, { k[2], k[3] }, { stride = { s[2], s[3] }, padding = { p[2], p[3] }, dilation = { d[2], d[3] } })
      y = y and gpu.maximum(y, yt) or yt
    else
      yt = F.avg_pool2d(planes, { k[2], k[3] }, { stride = { s[2], s[3] }, padding = { p[2], p[3] } })
      y = y and y + yt or yt
    end
  end
  if not is_max then y = y / k[1] end
  y = y:reshape(N, C, od, y.shape[3], y.shape[4])
  return was and y:squeeze(1) or y
end
function VF.max_pool3d(x, k, opts) return pool3d_as("nn.max_pool3d", true, x, k, MAXP:check(opts, 3)) end
function VF.avg_pool3d(x, k, opts) return pool3d_as("nn.avg_pool3d", false, x, k, AVGP:check(opts, 3)) end

-- ---- adaptive_avg_pool3d, adaptive_max_pool3d -----------------------------------------------------

-- PyTorch's adaptive windows per axis (start floor(i L / out), end ceil((i + 1) L / out)), as
-- nn/resample.lua's 1-D and 2-D forms: the mean is avg_pool3d when every size divides, else
-- the averaging matrices (out, in) applied along W, H and D; the maximum is resample.lua's
-- gather of every window padded to the widest, the first maximum of each.
local Rs = require "gpu.nn.resample"

local function adaptive_avg3d(name, x, out)
  local xb, was = batched(name, x)
  local N, C, D, H, W = xb.shape[1], xb.shape[2], xb.shape[3], xb.shape[4], xb.shape[5]
  local o = Rs.out_sizes(name, out, 3, { D, H, W })
  local y
  if D % o[1] == 0 and H % o[2] == 0 and W % o[3] == 0 then
    local k = { D // o[1], H // o[2], W // o[3] }
    y = pool3d_as(name, false, xb, k, { stride = k })
  else
    y = xb
    if W ~= o[3] then y = y:matmul(Rs.avg_matrix(W, o[3], xb).T) end
    if H ~= o[2] then y = Rs.avg_matrix(H, o[2], xb):matmul(y) end
    if D ~= o[1] then
      y = Rs.avg_matrix(D, o[1], xb):matmul(y:reshape(N, C, D, o[2] * o[3])):reshape(N, C, o[1], o[2], o[3])
    end
  end
  return was and y:squeeze(1) or y
end

local function adaptive_max3d(name, x, out, return_indices)
  if return_indices ~= nil and type(return_indices) ~= "boolean" then
    argerror(name, 3, "return_indices must be a boolean, got %s", type_name(return_indices))
  end
  local xb, was = batched(name, x)
  local o = Rs.out_sizes(name, out, 3, { xb.shape[3], xb.shape[4], xb.shape[5] })
  local y, where = Rs.adaptive_max_nd(xb, o)
  y = was and y:squeeze(1) or y
  if not return_indices then return y end
  local w = where()
  return y, was and w:squeeze(1) or w
end

-- adaptive_avg_pool3d(x (N, C, D, H, W) or (C, D, H, W), output_size): output_size a number
-- or three (nil/false keeps that axis's size, PyTorch's None)
function VF.adaptive_avg_pool3d(x, out) return adaptive_avg3d("nn.adaptive_avg_pool3d", x, out) end
-- adaptive_max_pool3d(x, output_size [, return_indices]) -> y [, indices: 1-based positions in
-- the flattened D x H x W volume]
function VF.adaptive_max_pool3d(x, out, return_indices)
  return adaptive_max3d("nn.adaptive_max_pool3d", x, out, return_indices)
end

-- ---- PyTorch's modules ---------------------------------------------------------------------------

local function positive(fname, argn, v, what) return options.value(v, { type = "integer", min = 1 }, fname, argn, what) end

-- Conv3d / ConvTranspose3d(in, out, kernel [, {stride = 1, padding = 0, dilation = 1, groups = 1,
-- bias = true, (output_padding = 0,) dtype, device}]): PyTorch's, weight (out, in/groups, k...)
-- or (in, out/groups, k...), U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = weight.shape[2] * prod(k)
local function conv_module(name, transposed)
  local keys = module.with_placement { stride = size, padding = size, dilation = size,
    groups = { type = "integer", min = 1, default = 1 }, bias = { type = "boolean", default = true },
    padding_mode = { choices = { "zeros" }, default = "zeros" } }
  if transposed then keys.output_padding = size end
  local decl = options.declare("nn." .. name, keys, { example = ("gpu.nn.%s(1, 2, 3, %%s)"):format(name) })
  local fname = "nn." .. name
  local cls = class(name)
  function cls:init(cin, cout, k, opts)
    positive(fname, 1, cin, "in_channels")
    positive(fname, 2, cout, "out_channels")
    local o = decl:check(opts, 4)
    local G = o.groups
    if cin % G ~= 0 or cout % G ~= 0 then
      argerror(fname, 4, "option 'groups' (%d) must divide in_channels %d and out_channels %d", G, cin, cout)
    end
    self.in_channels, self.out_channels, self.groups = cin, cout, G
    self.kernel_size = triple(fname, k, "kernel_size")
    self.stride, self.dilation = triple(fname, o.stride or 1, "stride"), triple(fname, o.dilation or 1, "dilation")
    self.padding = triple(fname, o.padding or 0, "padding", true)
    if transposed then self.output_padding = triple(fname, o.output_padding or 0, "output_padding", true) end
    local kk = self.kernel_size[1] * self.kernel_size[2] * self.kernel_size[3]
    local shape = transposed and { cin, cout // G } or { cout, cin // G }
    local lim = 1 / math.sqrt(shape[2] * kk)
    local p = module.placement(o)
    self:register_parameter("weight", init.uniform({ shape[1], shape[2], table.unpack(self.kernel_size) }, lim, p))
    if o.bias then self:register_parameter("bias", init.uniform({ cout }, lim, p)) end
  end
  function cls:forward(x)
    local lname = ("%s(%d, %d)"):format(name, self.in_channels, self.out_channels)
    local o = { stride = self.stride, padding = self.padding, dilation = self.dilation, groups = self.groups,
                output_padding = self.output_padding }
    if transposed then return conv_transpose3d_as(lname, x, self.weight, self.bias, o) end
    return conv3d_as(lname, x, self.weight, self.bias, o)
  end
  function cls:repr()
    local k, s = self.kernel_size, self.stride
    return ("%s(%d, %d, kernel_size=(%d, %d, %d), stride=(%d, %d, %d))"):format(name, self.in_channels, self.out_channels,
      k[1], k[2], k[3], s[1], s[2], s[3])
  end
  V[name] = cls
end
conv_module("Conv3d", false)
conv_module("ConvTranspose3d", true)

-- MaxPool3d / AvgPool3d(kernel [, {stride = kernel, padding = 0, (dilation = 1)}])
local function pool_module(name, is_max)
  local keys = { stride = size, padding = size }
  if is_max then keys.dilation = size else
    keys.count_include_pad = { type = "boolean", check = function(v) return v, "false is not supported (padding counts as zeros)" end }
  end
  local decl = options.declare("nn." .. name, keys, { example = ("gpu.nn.%s(2, %%s)(gpu.ones(1, 1, 4, 4, 4))"):format(name) })
  local cls = class(name)
  function cls:init(k, opts)
    local o = decl:check(opts, 2)
    self.kernel_size = triple("nn." .. name, k, "kernel_size")
    self.stride = triple("nn." .. name, o.stride or self.kernel_size, "stride")
    self.padding = triple("nn." .. name, o.padding or 0, "padding", true)
    self.dilation = triple("nn." .. name, o.dilation or 1, "dilation")
  end
  function cls:forward(x)
    return pool3d_as(name, is_max, x, self.kernel_size, { stride = self.stride, padding = self.padding, dilation = self.dilation })
  end
  function cls:repr()
    local k, s = self.kernel_size, self.stride
    return ("%s(kernel_size=(%d, %d, %d), stride=(%d, %d, %d))"):format(name, k[1], k[2], k[3], s[1], s[2], s[3])
  end
  V[name] = cls
end
pool_module("MaxPool3d", true)
pool_module("AvgPool3d", false)

-- ---- Keras's layers ------------------------------------------------------------------------------

-- TensorFlow's "same" padding of one axis: before, after
local function same_pad(n, k, s, d)
  local ek = (k - 1) * d + 1
  local out = (n + s - 1) // s
  local total = math.max((out - 1) * s + ek - n, 0)
  return total // 2, total - total // 2
end
local function pad_same3(x, k, s, d, value)
  local pads, any = { { 0, 0 }, { 0, 0 } }, false
  for i = 1, 3 do
    local a, b = same_pad(x.shape[2 + i], k[i], s[i], d[i])
    pads[2 + i] = { a, b }
    any = any or a + b > 0
  end
  if not any then return x end
  return gpu.pad(x, pads, { constant_values = value or 0 })
end
local function to_ncdhw(x, cl) return cl and x:permute({ 1, 5, 2, 3, 4 }) or x end
local function from_ncdhw(y, cl) return cl and y:permute({ 1, 3, 4, 5, 2 }) or y end   -- (a view, as keras_layers')
local function five_d(fname, x)
  check_array(x, fname, 1, "input")
  if x.ndim ~= 5 then raise("%s: expected a 5-D input (N, D, H, W, C) or (N, C, D, H, W), got %s", fname, shape_str(x.shape)) end
end

local acts = require("gpu.nn.layers").activations
local act_names = require("gpu.nn.keras_layers")._helpers.act_names
local CONV3D_K = options.declare("nn.Conv3D", module.with_placement(regularizers.keys {
  strides = size, padding = { choices = { "valid", "same" }, default = "valid" },
  data_format = { choices = { "channels_last", "channels_first" }, default = "channels_last" },
  dilation_rate = size, groups = { type = "integer", min = 1, default = 1 },
  activation = { type = "string|callable", choices = act_names, default = "linear" },
  use_bias = { type = "boolean", default = true },
  kernel_initializer = { choices = { "glorot_uniform", "he_uniform", "he_normal", "glorot_normal" }, default = "glorot_uniform" },
  bias_initializer = { choices = { "zeros", "ones" }, default = "zeros" },
  input_shape = { type = "table" }, name = { type = "string" },
}), { example = "gpu.nn.Conv3D(2, 2, %s)(gpu.ones(1, 3, 3, 3, 1))" })

-- Conv3D(filters, kernel_size [, {strides = 1, padding = "valid" | "same", data_format =
-- "channels_last", dilation_rate = 1, groups = 1, activation, use_bias, kernel_initializer,
-- bias_initializer, regularizers, constraints, input_shape, name}]): Keras's; kernel
-- (kd, kh, kw, C / groups, filters), built at the first call
local Conv3D = class("Conv3D")
function Conv3D:init(filters, kernel_size, opts)
  local fname = "nn.Conv3D"
  if math.type(filters) ~= "integer" or filters < 1 then argerror(fname, 1, "filters must be an integer >= 1, got %s", type_name(filters)) end
  local o = CONV3D_K:check(opts, 3)
  if filters % o.groups ~= 0 then raise("%s: filters (%d) must be divisible by groups (%d)", fname, filters, o.groups) end
  self.filters, self.opts = filters, o
  self.kernel_size = triple(fname, kernel_size, "kernel_size")
  self.strides, self.dilation = triple(fname, o.strides or 1, "strides"), triple(fname, o.dilation_rate or 1, "dilation_rate")
  self.channels_last = o.data_format == "channels_last"
  self.activation = acts[o.activation] or o.activation
  regularizers.attach(self, o)
  if o.name then self.name = o.name end
  if o.input_shape then local sh = o.input_shape self:build(self.channels_last and sh[#sh] or sh[1]) end
end
function Conv3D:build(cin, device)
  local g = self.opts.groups
  if cin % g ~= 0 then raise("nn.Conv3D: %d input channels are not divisible by groups (%d)", cin, g) end
  local p = module.placement { dtype = self.opts.dtype, device = self.device or self.opts.device or device }
  local k = self.kernel_size
  local rf = k[1] * k[2] * k[3]
  local fan_in, fan_out = rf * cin // g, rf * self.filters // g
  local shape = { k[1], k[2], k[3], cin // g, self.filters }
  local ini = self.opts.kernel_initializer
  local w
  if ini == "glorot_uniform" then local lim = math.sqrt(6 / (fan_in + fan_out)) w = gpu.random.uniform(-lim, lim, shape, p)
  elseif ini == "glorot_normal" then w = gpu.random.normal(0, math.sqrt(2 / (fan_in + fan_out)), shape, p)
  elseif ini == "he_uniform" then local lim = math.sqrt(6 / fan_in) w = gpu.random.uniform(-lim, lim, shape, p)
  else w = gpu.random.normal(0, math.sqrt(2 / fan_in), shape, p) end
  self.in_channels = cin
  self:register_parameter("kernel", w)
  if self.opts.use_bias then
    self:register_parameter("bias", (self.opts.bias_initializer == "ones" and gpu.ones or gpu.zeros)({ self.filters }, p))
  end
end
function Conv3D:forward(x)
  local fname = ("Conv3D(%d)"):format(self.filters)
  five_d(fname, x)
  local cl = self.channels_last
  local cin = cl and x.shape[5] or x.shape[2]
  if self.in_channels == nil then self:build(cin, x.device) end
  if cin ~= self.in_channels then raise("%s: expected %d input channels, got %d (input %s)", fname, self.in_channels, cin, shape_str(x.shape)) end
  local xc = to_ncdhw(x, cl)
  if self.opts.padding == "same" then xc = pad_same3(xc, self.kernel_size, self.strides, self.dilation) end
  for i = 1, 3 do
    local ek = (self.kernel_size[i] - 1) * self.dilation[i] + 1
    if xc.shape[2 + i] < ek then raise("%s: an input of extent %d is smaller than the kernel's %d", fname, xc.shape[2 + i], ek) end
  end
  local w = self.kernel:permute({ 5, 4, 1, 2, 3 })          -- (filters, C / groups, kd, kh, kw)
  local y = conv3d_as(fname, xc, w, self.bias, { stride = self.strides, dilation = self.dilation, groups = self.opts.groups })
  return regularizers.activity(self, from_ncdhw(self.activation(y), cl))
end
function Conv3D:repr()
  local k = self.kernel_size
  return ("Conv3D(%d, kernel_size=(%d, %d, %d), padding=%s)"):format(self.filters, k[1], k[2], k[3], self.opts.padding)
end
V.Conv3D = Conv3D

-- MaxPooling3D / AveragePooling3D([pool_size = 2] [, {strides = pool_size, padding = "valid" |
-- "same", data_format}]); "same" leaves the padding out of a window, as Keras's
local POOL3_KEYS = { strides = size, padding = { choices = { "valid", "same" }, default = "valid" },
  data_format = { choices = { "channels_last", "channels_first" }, default = "channels_last" }, name = { type = "string" } }
local function keras_pool(cname, is_max)
  local decl = options.declare("nn." .. cname, POOL3_KEYS, { example = ("gpu.nn.%s(2, %%s)(gpu.ones(1, 4, 4, 4, 1))"):format(cname) })
  local cls = class(cname)
  function cls:init(pool_size, opts)
    if type(pool_size) == "table" and pool_size[1] == nil and opts == nil then pool_size, opts = nil, pool_size end
    local fname = "nn." .. cname
    local o = decl:check(opts, 2)
    self.pool = triple(fname, pool_size or 2, "pool_size")
    self.strides = triple(fname, o.strides or self.pool, "strides")
    self.opts, self.channels_last = o, o.data_format == "channels_last"
    if o.name then self.name = o.name end
  end
  function cls:forward(x)
    local fname = "nn." .. cname
    five_d(fname, x)
    local cl = self.channels_last
    local xc = to_ncdhw(x, cl)
    local k, s, one = self.pool, self.strides, { 1, 1, 1 }
    local y
    if self.opts.padding == "same" then
      if is_max then
        y = pool3d_as(fname, true, pad_same3(xc, k, s, one, -math.huge), k, { stride = s })
      else
        local ones = gpu.ones({ 1, 1, xc.shape[3], xc.shape[4], xc.shape[5] }, { dtype = xc.dtype, device = xc.device })
        y = pool3d_as(fname, false, pad_same3(xc, k, s, one), k, { stride = s })
          / pool3d_as(fname, false, pad_same3(ones, k, s, one), k, { stride = s })
      end
    else
      for i = 1, 3 do if xc.shape[2 + i] < k[i] then raise("%s: an input smaller than the pool", fname) end end
      y = pool3d_as(fname, is_max, xc, k, { stride = s })
    end
    return from_ncdhw(y, cl)
  end
  function cls:repr() return ("%s(pool_size=(%d, %d, %d))"):format(cname, self.pool[1], self.pool[2], self.pool[3]) end
  V[cname] = cls
end
keras_pool("MaxPooling3D", true)
keras_pool("AveragePooling3D", false)

return V
