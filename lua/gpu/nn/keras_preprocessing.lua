-- gpu.nn.keras_preprocessing: Keras 3's image preprocessing and augmentation layers:
-- Resizing, CenterCrop (deterministic), RandomFlip, RandomRotation, RandomZoom,
-- RandomCrop (active only in training: identity in eval mode, as Keras's at inference).
-- Images are channels-last (N, H, W, C) or one image (H, W, C) (data_format =
-- "channels_first": (N, C, H, W) or (C, H, W)); non-float inputs are cast to float32, as
-- Keras casts to its compute dtype.
--
-- The random layers draw per call from gpu.random, or from their own generator when made
-- with seed = n (the same seed, the same draws). RandomFlip, RandomRotation and RandomZoom
-- draw per image; RandomCrop one window for the batch, as Keras's. Rotation and zoom map
-- each output pixel through Keras's affine matrix and sample the input as Keras's
-- map_coordinates does (bilinear or nearest; fill_mode reflect, wrap, constant or nearest
-- reflect on the indices, constant filling a corner that falls outside with fill_value).
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local resample = require "gpu.nn.resample"

local raise, argerror, check_array, shape_str, type_name = options.raise, options.argerror, options.check_array,
  options.shape_str, options.type_name

local KP = {}
local FLOATS = { float16 = true, bfloat16 = true, float32 = true, float64 = true }
local FMT = { choices = { "channels_last", "channels_first" }, default = "channels_last" }
local name_key = { type = "string" }
local seed_key = { type = "integer" }
local FILL_MODES = { "reflect", "wrap", "constant", "nearest" }

-- (N, H, W, C) float of x as the layer takes it, and how to give a result back in x's layout
local function nhwc(fname, x, data_format)
  check_array(x, fname, 1, "input")
  if x.ndim ~= 3 and x.ndim ~= 4 then
    raise("%s: expected a batch (N, H, W, C) or an image (H, W, C) (channels_first: (N, C, H, W) or (C, H, W)), got %s",
      fname, shape_str(x.shape))
  end
  local single = x.ndim == 3
  local y = single and x:reshape(1, table.unpack(x.shape)) or x
  local cf = data_format == "channels_first"
  if cf then y = y:permute({ 1, 3, 4, 2 }) end
  if not FLOATS[y.dtype] then y = y:astype("float32") end
  return y, function(out)
    if cf then out = out:permute({ 1, 4, 2, 3 }) end
    if single then out = out:reshape(table.unpack(out.shape, 2)) end
    return out:contiguous()
  end
end

-- the layer's draws: its generator (seed) or gpu.random's; uniform(lo, hi, n) -> a list
local function generator(self)
  if self.opts.seed == nil then return nil end
  local g = rawget(self, "_generator")
  if g == nil then
    g = gpu.random.Generator(self.opts.seed)
    rawset(self, "_generator", g)
  end
  return g
end
local function uniform(self, lo, hi, n)
  local g = generator(self)
  local opts = { dtype = "float64", device = "cpu" }
  return (g and g:uniform(lo, hi, { n }, opts) or gpu.random.uniform(lo, hi, { n }, opts)):totable()
end

-- bilinear or nearest resize of (N, H, W, C) to (h, w), Keras's torch backend (interpolate,
-- align_corners = false; Keras's "nearest" is interpolate's "nearest-exact")
local function resize(fname, x, h, w, interpolation)
  if x.shape[2] == h and x.shape[3] == w then return x end
  local mode = interpolation == "nearest" and "nearest-exact" or interpolation
  local y = resample.interpolate_as(fname, x:permute({ 1, 4, 2, 3 }), { size = { h, w }, mode = mode,
    align_corners = interpolation == "bilinear" and false or nil })
  return y:permute({ 1, 3, 4, 2 })
end

-- Keras's smart_resize: the largest centred window of the target's aspect ratio, resized
local function aspect_box(H, W, h, w)
  local ch = math.max(math.min(H, math.floor(W * h / w)), 1)
  local cw = math.max(math.min(W, math.floor(H * w / h)), 1)
  return (H - ch) // 2, (W - cw) // 2, ch, cw
end
local function smart_resize(fname, x, h, w, interpolation)
  local t, l, ch, cw = aspect_box(x.shape[2], x.shape[3], h, w)
  return resize(fname, x[{ {}, { t + 1, t + ch }, { l + 1, l + cw }, {} }], h, w, interpolation)
end

-- ---- the affine sampler ---------------------------------------------------------------------

-- Keras's index fixers: an integer index array of an axis of `size` brought inside it
local fixers = {
  constant = function(i, size) return gpu.clip(i, 0, size - 1) end,
  nearest = function(i, size) return gpu.clip(i, 0, size - 1) end,
  wrap = function(i, size) return gpu.remainder(i, size) end,
}
local function mirror(i, size)
  local s = size - 1
  if s == 0 then return i * 0 end
  return (gpu.remainder(i + s, 2 * s) - s):abs()
end
fixers.mirror = mirror
fixers.reflect = function(i, size) return gpu.floor((mirror(i * 2 + 1, 2 * size + 1) - 1) / 2) end

-- affine(x, mats, interpolation, fill_mode, fill_value): x (N, H, W, C); mats[n] =
-- {a0, a1, a2, b0, b1, b2}: output pixel (row r, column c) of image n reads the input at
-- row b0 c + b1 r + b2, column a0 c + a1 r + a2 (0-based), as Keras's affine_transform
local function affine(x, mats, interpolation, fill_mode, fill_value)
  local N, H, W, C = table.unpack(x.shape)
  local f32 = { dtype = "float32", device = x.device }
  local function column(k)
    local t = {}
    for n = 1, N do t[n] = mats[n][k] end
    return gpu.array(t, f32):reshape(N, 1, 1)
  end
  local rows = gpu.arange(0, H, f32):reshape(1, H, 1)
  local cols = gpu.arange(0, W, f32):reshape(1, 1, W)
  local cy = rows * column(5) + cols * column(4) + column(6)     -- (N, H, W)
  local cx = rows * column(2) + cols * column(1) + column(3)
  local flat = x:reshape(N * H * W, C)
  local base = (gpu.arange(0, N, f32) * (H * W)):reshape(N, 1, 1)
  local fill = gpu.array(fill_value, { dtype = x.dtype, device = x.device })
  local fix = fixers[fill_mode]
  local function nodes(coord)
    if interpolation == "nearest" then return { { gpu.round(coord), 1 } } end
    local lower = gpu.floor(coord)
    local up = coord - lower
    return { { lower, 1 - up }, { lower + 1, up } }
  end
  local out = 0
  for _, ny in ipairs(nodes(cy)) do
    for _, nx in ipairs(nodes(cx)) do
      local iy, ix = ny[1], nx[1]
      local idx = (base + fix(iy, H) * W + fix(ix, W)):astype("int64"):reshape(N * H * W) + 1
      local v = flat:take(idx, 1):reshape(N, H, W, C)
      if fill_mode == "constant" then
        local valid = iy:ge(0):logical_and(iy:lt(H)):logical_and(ix:ge(0)):logical_and(ix:lt(W)):reshape(N, H, W, 1)
        v = gpu.where(valid, v, fill)
      end
      local w = ny[2] == 1 and nx[2] or nx[2] == 1 and ny[2] or ny[2] * nx[2]
      if w ~= 1 then v = v * w:reshape(N, H, W, 1):astype(x.dtype) end
      out = out + v
    end
  end
  return out
end

-- the affine options of RandomRotation and RandomZoom
local function affine_keys(keys)
  keys.fill_mode = { choices = FILL_MODES, default = "reflect" }
  keys.interpolation = { choices = { "bilinear", "nearest" }, default = "bilinear" }
  keys.fill_value = { type = "number", default = 0 }
  keys.seed, keys.data_format, keys.name = seed_key, FMT, name_key
  return keys
end

-- a factor: f -> {-f, f}; {lo, hi} with lo <= hi; each in [min, max]
local function factor(fname, v, what, min)
  local lo, hi
  if type(v) == "number" then lo, hi = -math.abs(v), math.abs(v)
  elseif type(v) == "table" and #v == 2 and type(v[1]) == "number" and type(v[2]) == "number" then lo, hi = v[1], v[2]
  else argerror(fname, 1, "%s: a number or a list {lower, upper} expected, got %s", what, type_name(v)) end
  if lo > hi then argerror(fname, 1, "%s: lower %s is above upper %s", what, tostring(lo), tostring(hi)) end
  if min and lo < min then argerror(fname, 1, "%s: lower bound %s is below %s", what, tostring(lo), tostring(min)) end
  return { lo, hi }
end

local function class(cname, keys, positional, init, forward, example, required)
  local cls = module.options_class(cname, keys, positional, init, forward, example, required)
  KP[cname] = cls
  return cls
end

-- ---- Resizing, CenterCrop ------------------------------------------------------------------------

local function size_init(self, o, fname)
  for _, k in ipairs { "height", "width" } do
    if o[k] == nil then argerror(fname, 1, "%s is required", k) end
  end
end

-- Resizing(height, width [, {interpolation = "bilinear", crop_to_aspect_ratio = false,
-- data_format, name}]): each image resized (nn.functional.interpolate, Keras's torch
-- backend); crop_to_aspect_ratio first takes the largest centred window of the target's
-- aspect ratio
class("Resizing", {
  height = { type = "integer", min = 1 }, width = { type = "integer", min = 1 },
  interpolation = { choices = { "bilinear", "nearest" }, default = "bilinear" },
  crop_to_aspect_ratio = { type = "boolean", default = false },
  pad_to_aspect_ratio = { unsupported = "use crop_to_aspect_ratio, or pad first" },
  antialias = { type = "boolean", default = false, check = function(v) return v == false, "= true is not implemented" end },
  data_format = FMT, name = name_key,
}, { "height", "width" }, size_init, function(self, x)
  local fname, o = "nn.Resizing", self.opts
  local y, back = nhwc(fname, x, o.data_format)
  if o.crop_to_aspect_ratio then return back(smart_resize(fname, y, o.height, o.width, o.interpolation)) end
  return back(resize(fname, y, o.height, o.width, o.interpolation))
end, "gpu.ones(1, 4, 4, 2)", "{ height = 2, width = 3 }")

-- CenterCrop(height, width [, {data_format, name}]): the centred window (top (H - h) // 2,
-- left (W - w) // 2); an image smaller than it on either side is smart-resized (Keras's:
-- the largest centred window of its aspect ratio, bilinear) instead
class("CenterCrop", { height = { type = "integer", min = 1 }, width = { type = "integer", min = 1 },
  data_format = FMT, name = name_key }, { "height", "width" }, size_init, function(self, x)
  local fname, o = "nn.CenterCrop", self.opts
  local y, back = nhwc(fname, x, o.data_format)
  local H, W = y.shape[2], y.shape[3]
  if H >= o.height and W >= o.width then
    local t, l = (H - o.height) // 2, (W - o.width) // 2
    return back(y[{ {}, { t + 1, t + o.height }, { l + 1, l + o.width }, {} }])
  end
  return back(smart_resize(fname, y, o.height, o.width, "bilinear"))
end, "gpu.ones(1, 4, 4, 2)", "{ height = 2, width = 3 }")

-- ---- RandomFlip, RandomCrop ----------------------------------------------------------------------

-- RandomFlip([mode = "horizontal_and_vertical"] [, {seed, data_format, name}]): in training
-- each image flipped with probability 1/2 left to right ("horizontal"), top to bottom
-- ("vertical"), or both at once on the same draw ("horizontal_and_vertical"), as Keras's
class("RandomFlip", {
  mode = { choices = { "horizontal", "vertical", "horizontal_and_vertical" }, default = "horizontal_and_vertical" },
  seed = seed_key, data_format = FMT, name = name_key,
}, { "mode" }, nil, function(self, x)
  local fname, o = "nn.RandomFlip", self.opts
  local y, back = nhwc(fname, x, o.data_format)
  if not self.training then return x end
  local N = y.shape[1]
  local draws = uniform(self, 0, 1, N)
  local coin = {}
  for n = 1, N do coin[n] = draws[n] <= 0.5 end
  local flips = gpu.array(coin, { dtype = "bool", device = y.device }):reshape(N, 1, 1, 1)
  if o.mode ~= "vertical" then y = gpu.where(flips, y:flip(3), y) end
  if o.mode ~= "horizontal" then y = gpu.where(flips, y:flip(2), y) end
  return back(y)
end, "gpu.ones(1, 4, 4, 2)")

-- RandomCrop(height, width [, {seed, data_format, name}]): in training a window of
-- height x width at a random place, the same for the batch; an input not larger than the
-- window on both sides is cropped at Keras's aspect-ratio box and resized instead. Eval:
-- the input as it is (Keras's at inference)
class("RandomCrop", { height = { type = "integer", min = 1 }, width = { type = "integer", min = 1 },
  seed = seed_key, data_format = FMT, name = name_key }, { "height", "width" }, size_init, function(self, x)
  local fname, o = "nn.RandomCrop", self.opts
  local y, back = nhwc(fname, x, o.data_format)
  if not self.training then return x end
  local H, W, h, w = y.shape[2], y.shape[3], o.height, o.width
  local t, l
  if H > h and W > w then
    local d = uniform(self, 0, 1, 2)
    t, l = math.floor(d[1] * (H - h + 1)), math.floor(d[2] * (W - w + 1))
    t, l = math.min(t, H - h), math.min(l, W - w)
  else
    t, l = aspect_box(H, W, h, w)
  end
  y = y[{ {}, { t + 1, math.min(t + h, H) }, { l + 1, math.min(l + w, W) }, {} }]
  return back(resize(fname, y, h, w, "bilinear"))
end, "gpu.ones(1, 4, 4, 2)", "{ height = 2, width = 3 }")

-- ---- RandomRotation, RandomZoom ------------------------------------------------------------------

-- RandomRotation(factor [, {fill_mode = "reflect", interpolation = "bilinear", fill_value = 0,
-- seed, data_format, name}]): in training each image rotated about its centre by an angle
-- drawn from factor * 360 degrees (a number f: [-f, f]; {lower, upper}; {a, a} fixed),
-- counter-clockwise for a positive factor, Keras's matrix and sampling
class("RandomRotation", affine_keys { factor = "number|table" }, { "factor" }, function(self, o, fname)
  if o.factor == nil then argerror(fname, 1, "factor is required") end
  self.range = factor(fname, o.factor, "factor")
end, function(self, x)
  local fname, o = "nn.RandomRotation", self.opts
  local y, back = nhwc(fname, x, o.data_format)
  if not self.training then return x end
  local N, H, W = y.shape[1], y.shape[2], y.shape[3]
  local lo, hi = self.range[1], self.range[2]
  local angles = lo == hi and {} or uniform(self, lo * 360, hi * 360, N)
  local cx, cy = 0.5 * (W - 1), 0.5 * (H - 1)
  local mats = {}
  for n = 1, N do
    local a = math.rad(angles[n] or lo * 360)
    local c, s = math.cos(a), math.sin(a)
    mats[n] = { c, -s, cx - cx * c + cy * s, s, c, cy - cx * s - cy * c }
  end
  return back(affine(y, mats, o.interpolation, o.fill_mode, o.fill_value))
end, "gpu.ones(1, 4, 4, 2)", "{ factor = 0.1 }")

-- RandomZoom(height_factor [, width_factor] [, {fill_mode = "reflect", interpolation =
-- "bilinear", fill_value = 0, seed, data_format, name}]): in training each image zoomed
-- about its centre by 1 + a draw from height_factor (a number f: [-f, f]; {lower, upper};
-- lower >= -1; positive zooms out) vertically, and from width_factor horizontally (the
-- same draw when it is not given), Keras's matrix and sampling
class("RandomZoom", affine_keys { height_factor = "number|table", width_factor = "number|table" },
  { "height_factor", "width_factor" }, function(self, o, fname)
  if o.height_factor == nil then argerror(fname, 1, "height_factor is required") end
  self.hrange = factor(fname, o.height_factor, "height_factor", -1)
  self.wrange = o.width_factor ~= nil and factor(fname, o.width_factor, "width_factor", -1) or nil
end, function(self, x)
  local fname, o = "nn.RandomZoom", self.opts
  local y, back = nhwc(fname, x, o.data_format)
  if not self.training then return x end
  local N, H, W = y.shape[1], y.shape[2], y.shape[3]
  local function draw(r)
    if r[1] == r[2] then
      local t = {}
      for n = 1, N do t[n] = 1 + r[1] end
      return t
    end
    local t = uniform(self, 1 + r[1], 1 + r[2], N)
    return t
  end
  local zh = draw(self.hrange)
  local zw = self.wrange and draw(self.wrange) or zh
  local mats = {}
  for n = 1, N do
    mats[n] = { zw[n], 0, (W - 1) / 2 * (1 - zw[n]), 0, zh[n], (H - 1) / 2 * (1 - zh[n]) }
  end
  return back(affine(y, mats, o.interpolation, o.fill_mode, o.fill_value))
end, "gpu.ones(1, 4, 4, 2)", "{ height_factor = 0.1 }")

return KP
