-- gpu.nn.resample_layers: Conv1d, ConvTranspose1d, ConvTranspose2d, MaxPool1d, AvgPool1d,
-- AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d, Upsample, PixelShuffle, PixelUnshuffle, with
-- PyTorch's constructor arguments, defaults, parameter names and initialisation, on the
-- functional forms of gpu.nn.resample.
--
--   local up = nn.Sequential{ nn.ConvTranspose2d(16, 8, 4, {stride = 2, padding = 1}), nn.ReLU(),
--                             nn.Upsample{scale_factor = 2, mode = "bilinear"} }
local options = require "gpu.options"
local argerror = options.argerror
local R = require "gpu.nn.resample"
local module = require "gpu.nn.module"
local class = module.class
local init = require "gpu.nn.initializers"

local L = {}

local function positive(fname, argn, v, what)
  return options.value(v, { type = "integer", min = 1 }, fname, argn, what)
end

local unsupported_padding_mode = { type = "string", default = "zeros", check = function(v)
  return v == "zeros", "must be 'zeros' (reflect, replicate and circular padding are not implemented)"
end }

-- A size given as a number or a table: the table of nd entries (a 1-D layer keeps {k}).
local function sizes(v, nd, what, name)
  if type(v) == "table" then
    if #v ~= nd then argerror(name, 3, "%s must be an integer or a table of %d, got %d entries", what, nd, #v) end
    return { table.unpack(v) }
  end
  local r = {}
  for i = 1, nd do r[i] = v end
  return r
end

-- ---- convolutions ---------------------------------------------------------------------------

-- Conv1d(in, out, kernel [, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true,
-- padding_mode = "zeros", dtype =, device =}]): weight (out, in/groups, k), bias (out).
-- ConvTranspose1d/2d(in, out, kernel [, {..., output_padding = 0}]): weight (in, out/groups, k...)
-- PyTorch's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = weight.shape[2] * prod(kernel).
local function conv_class(name, nd, transposed)
  local cls = class(name)
  L[name] = cls
  local keys = module.with_placement {
    stride = "integer|table", padding = "integer|table", dilation = "integer|table",
    groups = { type = "integer", min = 1, default = 1 }, bias = { type = "boolean", default = true },
    padding_mode = unsupported_padding_mode,
  }
  if transposed then keys.output_padding = "integer|table" end
  local decl = options.declare("nn." .. name, keys, { example = ("gpu.nn.%s(1, 2, 3, %%s)"):format(name) })
  local fname = "nn." .. name
  function cls:init(cin, cout, k, opts)
    positive(fname, 1, cin, "in_channels")
    positive(fname, 2, cout, "out_channels")
    local o = decl:check(opts, 4)
    local G = o.groups
    if cin % G ~= 0 or cout % G ~= 0 then
      argerror(fname, 4, "option 'groups' (%d) must divide in_channels %d and out_channels %d", G, cin, cout)
    end
    local ks = sizes(k, nd, "kernel_size", fname)
    for _, v in ipairs(ks) do positive(fname, 3, v, "kernel_size") end
    self.in_channels, self.out_channels, self.groups, self.kernel_size = cin, cout, G, ks
    self.stride = sizes(o.stride or 1, nd, "stride", fname)
    self.padding = sizes(o.padding or 0, nd, "padding", fname)
    self.dilation = sizes(o.dilation or 1, nd, "dilation", fname)
    self.output_padding = transposed and sizes(o.output_padding or 0, nd, "output_padding", fname) or nil
    local shape = transposed and { cin, cout // G } or { cout, cin // G }
    local fan_in = shape[2]
    for _, v in ipairs(ks) do shape[#shape + 1] = v; fan_in = fan_in * v end
    local lim = 1 / math.sqrt(fan_in)
    local p = module.placement(o)
    self:register_parameter("weight", init.uniform(shape, lim, p))
    if o.bias then self:register_parameter("bias", init.uniform({ cout }, lim, p)) end
  end
  local function tuple(t) return "(" .. table.concat(t, ", ") .. (#t == 1 and ",)" or ")") end
  function cls:repr()
    local r = ("%s(%d, %d, kernel_size=%s, stride=%s"):format(name, self.in_channels, self.out_channels,
      tuple(self.kernel_size), tuple(self.stride))
    for _, k in ipairs { "padding", "output_padding" } do
      local v = self[k]
      if v and (v[1] ~= 0 or v[nd] ~= 0) then r = r .. (", %s=%s"):format(k, tuple(v)) end
    end
    if self.groups ~= 1 then r = r .. ", groups=" .. self.groups end
    return r .. ")"
  end
  local fn = ({ [1] = transposed and R.conv_transpose1d_as or R.conv1d_as,
                [2] = transposed and R.conv_transpose2d_as })[nd]
  function cls:forward(x)
    local lname = ("%s(%d, %d)"):format(name, self.in_channels, self.out_channels)
    local function arg(v) return nd == 1 and v[1] or v end
    return fn(lname, x, self.weight, self.bias, { stride = arg(self.stride), padding = arg(self.padding),
      dilation = arg(self.dilation), groups = self.groups,
      output_padding = self.output_padding and arg(self.output_padding) or nil })
  end
  return cls
end
conv_class("Conv1d", 1, false)
conv_class("ConvTranspose1d", 1, true)
conv_class("ConvTranspose2d", 2, true)

-- ---- 1-D pooling ------------------------------------------------------------------------------

local unsupported = { unsupported = true }

-- MaxPool1d(kernel [, {stride = kernel, padding = 0, dilation = 1, return_indices = false}])
local MaxPool1d = class("MaxPool1d")
L.MaxPool1d = MaxPool1d
local MAXPOOL1D = options.declare("nn.MaxPool1d", { stride = "integer|table", padding = "integer|table",
  dilation = "integer|table", return_indices = "boolean", ceil_mode = unsupported },
  { example = "gpu.nn.MaxPool1d(2, %s)" })
function MaxPool1d:init(k, opts)
  local o = MAXPOOL1D:check(opts, 2)
  self.kernel_size = positive("nn.MaxPool1d", 1, type(k) == "table" and k[1] or k, "kernel_size")
  self.stride, self.padding, self.dilation = o.stride or self.kernel_size, o.padding or 0, o.dilation or 1
  self.return_indices = o.return_indices
end
function MaxPool1d:forward(x)
  return R.max_pool1d_as("MaxPool1d", x, self.kernel_size, { stride = self.stride, padding = self.padding,
    dilation = self.dilation, return_indices = self.return_indices })
end
function MaxPool1d:repr()
  local function n(v) return tostring(type(v) == "table" and v[1] or v) end
  return ("MaxPool1d(kernel_size=%d, stride=%s, padding=%s)"):format(self.kernel_size, n(self.stride), n(self.padding))
end

-- AvgPool1d(kernel [, {stride = kernel, padding = 0}]): padding counts as zeros
local AvgPool1d = class("AvgPool1d")
L.AvgPool1d = AvgPool1d
local AVGPOOL1D = options.declare("nn.AvgPool1d", { stride = "integer|table", padding = "integer|table",
  ceil_mode = unsupported,
  count_include_pad = { type = "boolean", check = function(v) return v, "false is not supported (padding counts as zeros)" end } },
  { example = "gpu.nn.AvgPool1d(2, %s)" })
function AvgPool1d:init(k, opts)
  local o = AVGPOOL1D:check(opts, 2)
  self.kernel_size = positive("nn.AvgPool1d", 1, type(k) == "table" and k[1] or k, "kernel_size")
  self.stride, self.padding = o.stride or self.kernel_size, o.padding or 0
end
function AvgPool1d:forward(x)
  return R.avg_pool1d_as("AvgPool1d", x, self.kernel_size, { stride = self.stride, padding = self.padding })
end
function AvgPool1d:repr() return ("AvgPool1d(kernel_size=%d)"):format(self.kernel_size) end

-- ---- adaptive pooling ---------------------------------------------------------------------------

-- Adaptive{Avg,Max}Pool{1,2}d(output_size [, {return_indices}] (max)): output_size a
-- number or a table ({nil, 5} and {false, 5} keep the input's height).
local function adaptive_class(name, fn, max)
  local cls = class(name)
  L[name] = cls
  local decl = max and options.declare("nn." .. name, { return_indices = "boolean" },
    { example = ("gpu.nn.%s(2, %%s)"):format(name) })
  function cls:init(out, opts)
    if type(out) ~= "table" then positive("nn." .. name, 1, out, "output_size") end
    self.output_size = out
    if max then
      if type(opts) == "boolean" then opts = { return_indices = opts } end
      self.return_indices = decl:check(opts, 2).return_indices
    elseif opts ~= nil then
      argerror("nn." .. name, 2, "no options expected (%s takes output_size only)", name)
    end
  end
  function cls:forward(x) return fn(x, self.output_size, self.return_indices) end
  function cls:repr()
    local o = self.output_size
    if type(o) == "table" then
      local t = {}
      for i = 1, #o > 0 and #o or 2 do t[i] = o[i] and tostring(o[i]) or "None" end
      o = "(" .. table.concat(t, ", ") .. ")"
    end
    return ("%s(output_size=%s)"):format(name, tostring(o))
  end
  return cls
end
adaptive_class("AdaptiveAvgPool1d", R.adaptive_avg_pool1d)
adaptive_class("AdaptiveAvgPool2d", R.adaptive_avg_pool2d)
adaptive_class("AdaptiveMaxPool1d", R.adaptive_max_pool1d, true)
adaptive_class("AdaptiveMaxPool2d", R.adaptive_max_pool2d, true)

-- ---- Upsample, PixelShuffle -------------------------------------------------------------------

-- Upsample{size = | scale_factor =, mode = "nearest" | "linear" | "bilinear", align_corners}
local UPSAMPLE = options.declare("nn.Upsample", { size = "integer|table", scale_factor = "number|table",
  mode = { choices = { "nearest", "linear", "bilinear" }, default = "nearest" }, align_corners = "boolean",
  recompute_scale_factor = "boolean" },
  { example = "gpu.nn.Upsample((function(o) if not o.size then o.scale_factor = o.scale_factor or 2 end return o end)(%s))" })
local Upsample = class("Upsample")
L.Upsample = Upsample
function Upsample:init(opts)
  local o = UPSAMPLE:check(opts, 1)
  if (o.size == nil) == (o.scale_factor == nil) then
    argerror("nn.Upsample", 1, "give exactly one of the options 'size' and 'scale_factor'")
  end
  if o.align_corners ~= nil and o.mode == "nearest" then
    argerror("nn.Upsample", 1, "option 'align_corners' only applies to the linear modes, not 'nearest'")
  end
  self.size, self.scale_factor, self.mode, self.align_corners = o.size, o.scale_factor, o.mode, o.align_corners
  self.recompute_scale_factor = o.recompute_scale_factor
end
function Upsample:forward(x)
  return R.interpolate_as("Upsample", x, { size = self.size, scale_factor = self.scale_factor, mode = self.mode,
    align_corners = self.align_corners, recompute_scale_factor = self.recompute_scale_factor })
end
function Upsample:repr()
  local what = self.size and ("size=" .. (type(self.size) == "table" and table.concat(self.size, "x") or self.size))
    or ("scale_factor=" .. (type(self.scale_factor) == "table" and table.concat(self.scale_factor, "x")
    or tostring(self.scale_factor)))
  return ("Upsample(%s, mode='%s')"):format(what, self.mode)
end

-- PixelShuffle(r) / PixelUnshuffle(r)
local function shuffle_class(name, fn, what)
  local cls = class(name)
  L[name] = cls
  function cls:init(r) self.factor = positive("nn." .. name, 1, r, what) end
  function cls:forward(x) return fn(name, x, self.factor) end
  function cls:repr() return ("%s(%s=%d)"):format(name, what, self.factor) end
end
shuffle_class("PixelShuffle", R.pixel_shuffle_as, "upscale_factor")
shuffle_class("PixelUnshuffle", R.pixel_unshuffle_as, "downscale_factor")

return L
