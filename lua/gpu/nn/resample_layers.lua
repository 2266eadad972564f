-- gpu.nn.resample_layers: MaxPool1d, AvgPool1d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d,
-- Upsample, PixelShuffle, PixelUnshuffle, with PyTorch's constructor arguments and defaults,
-- on the functional forms of gpu.nn.resample.
--
--   local up = nn.Sequential{ nn.ConvTranspose2d(16, 8, 4, {stride = 2, padding = 1}), nn.ReLU(),
--                             nn.Upsample{scale_factor = 2, mode = "bilinear"} }
local options = require "gpu.options"
local argerror = options.argerror
local R = require "gpu.nn.resample"
local module = require "gpu.nn.module"
local class = module.class

local L = {}

local function positive(fname, argn, v, what)
  return options.value(v, { type = "integer", min = 1 }, fname, argn, what)
end

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

-- Adaptive{Avg,Max}Pool{1,2,3}d(output_size [, {return_indices}] (max)): output_size a
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
local V3 = require("gpu.nn.conv3d").functional
adaptive_class("AdaptiveAvgPool3d", V3.adaptive_avg_pool3d)
adaptive_class("AdaptiveMaxPool3d", V3.adaptive_max_pool3d, true)

-- ---- Upsample, PixelShuffle -------------------------------------------------------------------

-- Upsample{size = | scale_factor =, mode = "nearest" | "nearest-exact" | "linear" | "bilinear", align_corners}
local UPSAMPLE = options.declare("nn.Upsample", { size = "integer|table", scale_factor = "number|table",
  mode = { choices = { "nearest", "nearest-exact", "linear", "bilinear" }, default = "nearest" }, align_corners = "boolean",
  recompute_scale_factor = "boolean" },
  { example = "gpu.nn.Upsample((function(o) if not o.size then o.scale_factor = o.scale_factor or 2 end return o end)(%s))" })
local Upsample = class("Upsample")
L.Upsample = Upsample
function Upsample:init(opts)
  local o = UPSAMPLE:check(opts, 1)
  if (o.size == nil) == (o.scale_factor == nil) then
    argerror("nn.Upsample", 1, "give exactly one of the options 'size' and 'scale_factor'")
  end
  if o.align_corners ~= nil and (o.mode == "nearest" or o.mode == "nearest-exact") then
    argerror("nn.Upsample", 1, "option 'align_corners' only applies to the linear modes, not '" .. o.mode .. "'")
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
