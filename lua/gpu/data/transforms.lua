-- gpu.data.transforms: torchvision.transforms' image transforms on arrays: Compose,
-- ToTensor, Normalize, RandomCrop, RandomHorizontalFlip, Resize, CenterCrop,
-- RandomRotation, ColorJitter. A transform is a callable object: t(x) -> the transformed
-- array.
--
--   local T = gpu.data.transforms
--   local tf = T.Compose { T.ToTensor(), T.RandomCrop(28, { padding = 2 }), T.Normalize({0.5}, {0.5}) }
--   local y = tf(img)                       -- img uint8 (H, W, C) -> float32 (C, H, W)
--
-- Images are (C, H, W) arrays, batches (N, C, H, W) (ToTensor takes uint8 (H, W, C) or
-- (H, W), or (N, H, W, C)). As torchvision's transforms on a batched tensor, a random
-- transform draws its parameters once per call, so every image of a batch gets the same
-- crop, flip, angle or factors. Draws come from gpu.random, or from the `generator` option
-- (a gpu.random.Generator). The deterministic results are torchvision's (spec/fixtures/
-- transforms.py): Resize is torchvision's Resize(..., antialias=False) (torchvision
-- antialiases by default, which changes only downscaling; antialias = true is not
-- implemented here), and RandomRotation samples the rotated coordinates as torchvision's
-- tensor rotate does (grid_sample, align_corners=False, fill blended by the sampled mask).
local gpu = require "gpu"
local options = require "gpu.options"
local resample = require "gpu.nn.resample"

local raise, argerror, check_array, shape_str, type_name = options.raise, options.argerror, options.check_array,
  options.shape_str, options.type_name
local T = {}

local generator_key = { type = "any", what = "a gpu.random.Generator", check = function(v)
  return type(v) == "userdata" or type(v) == "table", "must be a gpu.random.Generator"
end }
local FLOATS = { float16 = true, bfloat16 = true, float32 = true, float64 = true }

-- a transform class: instances are called as t(x); name as errors say it
local function class(name)
  local cls, is = options.class("transforms." .. name, "t")
  cls.__call = function(self, ...)
    local n = select("#", ...)
    if n ~= 1 then argerror("transforms." .. name, 1, "a transform takes one array, got %d arguments", n) end
    return self:forward(...)
  end
  return cls, is
end

-- image(fname, x [, float]): x an image (C, H, W) or a batch (N, C, H, W), float when asked
local function image(fname, x, float)
  check_array(x, fname, 1, "input")
  if x.ndim ~= 3 and x.ndim ~= 4 then
    raise("%s: expected an image (C, H, W) or a batch (N, C, H, W), got shape %s", fname, shape_str(x.shape))
  end
  if float and not FLOATS[x.dtype] then
    raise("%s: expected a float image, got %s (ToTensor makes float32 in [0, 1] of uint8)", fname, x.dtype)
  end
  return x
end

-- size(fname, v, argn, what): {h, w} from an integer or a list of one or two
local function pair(fname, v, argn, what)
  if math.type(v) == "integer" then v = { v, v } end
  if type(v) == "table" and #v == 1 then v = { v[1], v[1] } end
  if type(v) ~= "table" or #v ~= 2 or math.type(v[1]) ~= "integer" or math.type(v[2]) ~= "integer" or v[1] < 1
      or v[2] < 1 then
    argerror(fname, argn, "%s: an integer >= 1 or a list {h, w} of them expected, got %s", what, type_name(v))
  end
  return { v[1], v[2] }
end

-- a number drawn uniformly from [lo, hi] (lo itself when they are equal)
local function uniform(g, lo, hi)
  if lo == hi then return lo end
  local r = g and g:uniform(lo, hi, { 1 }, { dtype = "float64", device = "cpu" })
    or gpu.random.uniform(lo, hi, { 1 }, { dtype = "float64", device = "cpu" })
  return r[1]
end
-- an integer drawn uniformly from lo..hi
local function randint(g, lo, hi)
  if lo == hi then return lo end
  local r = g and g:randint(lo, hi, { 1 }, { device = "cpu" }) or gpu.random.randint(lo, hi, { 1 }, { device = "cpu" })
  return r[1]
end

-- Python's round (half to even)
local function round_even(v)
  local f = math.floor(v)
  local d = v - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return math.tointeger(f) or f
end

-- x's last two axes cut to rows t+1..t+h and columns l+1..l+w
local function crop(x, t, l, h, w)
  local idx = {}
  for _ = 1, x.ndim - 2 do idx[#idx + 1] = {} end
  idx[#idx + 1] = { t + 1, t + h }
  idx[#idx + 1] = { l + 1, l + w }
  return x[idx]
end

-- x's last two axes padded by left, top, right, bottom with value
local function pad(x, l, t, r, b, value)
  if l + t + r + b == 0 then return x end
  local p = {}
  for _ = 1, x.ndim - 2 do p[#p + 1] = { 0, 0 } end
  p[#p + 1] = { t, b }
  p[#p + 1] = { l, r }
  return gpu.pad(x, p, { constant_values = value })
end

-- ---- Compose ---------------------------------------------------------------------------------

local Compose = class("Compose")

-- Compose({t1, t2, ...}): t1, then t2, ... (each a callable: a transform or a function)
function T.Compose(list)
  if type(list) ~= "table" or getmetatable(list) ~= nil then
    argerror("transforms.Compose", 1, "a list of transforms expected, got %s", type_name(list))
  end
  local ts = {}
  for i, t in ipairs(list) do
    local mt = getmetatable(t)
    if type(t) ~= "function" and not (type(mt) == "table" and mt.__call) then
      argerror("transforms.Compose", 1, "transforms[%d] is %s, not a callable", i, type_name(t))
    end
    ts[i] = t
  end
  return setmetatable({ transforms = ts }, Compose)
end

function Compose:forward(x)
  for _, t in ipairs(self.transforms) do x = t(x) end
  return x
end

-- ---- ToTensor --------------------------------------------------------------------------------

local ToTensor = class("ToTensor")

-- ToTensor(): uint8 (H, W, C) or (H, W) -> float32 (C, H, W) in [0, 1] (bytes / 255), as
-- torchvision's; (N, H, W, C) -> (N, C, H, W). Other dtypes are only moved to channels
-- first (as torchvision leaves a non-byte array's values).
function T.ToTensor() return setmetatable({}, ToTensor) end

function ToTensor:forward(x)
  local fname = "transforms.ToTensor"
  check_array(x, fname, 1, "input")
  local y
  if x.ndim == 2 then y = x:reshape(1, x.shape[1], x.shape[2])
  elseif x.ndim == 3 then y = x:permute({ 3, 1, 2 })
  elseif x.ndim == 4 then y = x:permute({ 1, 4, 2, 3 })
  else raise("%s: expected (H, W), (H, W, C) or (N, H, W, C), got shape %s", fname, shape_str(x.shape)) end
  if x.dtype == "uint8" then return y:astype("float32") / 255 end
  return y:contiguous()
end

-- ---- Normalize -------------------------------------------------------------------------------

local Normalize = class("Normalize")
local NORMALIZE = options.declare("transforms.Normalize", { inplace = { type = "boolean", default = false } },
  { example = "gpu.data.transforms.Normalize({0.5}, {0.5}, %s)" })

local function numbers(fname, argn, v, what)
  if type(v) == "number" then v = { v } end
  if type(v) ~= "table" or #v == 0 then argerror(fname, argn, "%s: a number or a list of numbers expected, got %s",
    what, type_name(v)) end
  for i, e in ipairs(v) do
    if type(e) ~= "number" then argerror(fname, argn, "%s[%d] must be a number, got %s", what, i, type_name(e)) end
  end
  return table.move(v, 1, #v, 1, {})
end

-- Normalize(mean, std [, {inplace = false}]): (x - mean[c]) / std[c] per channel (lists of
-- C numbers, or of one for all)
function T.Normalize(mean, std, opts)
  local fname = "transforms.Normalize"
  mean, std = numbers(fname, 1, mean, "mean"), numbers(fname, 2, std, "std")
  local o = NORMALIZE:check(opts, 3)
  if #mean ~= #std and #mean ~= 1 and #std ~= 1 then
    argerror(fname, 2, "std has %d entries and mean %d (one per channel, or one for all)", #std, #mean)
  end
  for i, s in ipairs(std) do
    if s == 0 then
      argerror(fname, 2, "std[%d] is 0: std evaluated to zero, leading to division by zero", i)
    end
  end
  return setmetatable({ mean = mean, std = std, inplace = o.inplace }, Normalize)
end

function Normalize:forward(x)
  local fname = "transforms.Normalize"
  image(fname, x, true)
  local C = x.shape[x.ndim - 2]
  local n = math.max(#self.mean, #self.std)
  if n ~= 1 and n ~= C then
    raise("%s: mean and std have %d entries but the input has %d channels", fname, n, C)
  end
  local function column(v)
    local t = {}
    for c = 1, (#v == 1 and 1 or C) do t[c] = { { v[c] } } end
    return gpu.array(t, { dtype = x.dtype, device = x.device })
  end
  local y = (x - column(self.mean)) / column(self.std)
  if self.inplace then
    x:copy_(y)
    return x
  end
  return y
end

-- ---- CenterCrop, RandomCrop ------------------------------------------------------------------

local CenterCrop = class("CenterCrop")

-- CenterCrop(size): the centre size = h or {h, w} of each image (top and left rounded as
-- torchvision's, half to even); an image smaller than the crop is padded with zeros first
function T.CenterCrop(size) return setmetatable({ size = pair("transforms.CenterCrop", size, 1, "size") }, CenterCrop) end

local function center_crop(x, th, tw)
  local H, W = x.shape[x.ndim - 1], x.shape[x.ndim]
  if th > H or tw > W then
    local l, t = tw > W and (tw - W) // 2 or 0, th > H and (th - H) // 2 or 0
    local r, b = tw > W and (tw - W + 1) // 2 or 0, th > H and (th - H + 1) // 2 or 0
    x = pad(x, l, t, r, b, 0)
    H, W = x.shape[x.ndim - 1], x.shape[x.ndim]
    if H == th and W == tw then return x end
  end
  return crop(x, round_even((H - th) / 2), round_even((W - tw) / 2), th, tw)
end

function CenterCrop:forward(x)
  image("transforms.CenterCrop", x)
  return center_crop(x, self.size[1], self.size[2])
end

local RandomCrop = class("RandomCrop")
local RANDOM_CROP = options.declare("transforms.RandomCrop", {
  padding = "integer|table", pad_if_needed = { type = "boolean", default = false },
  fill = { type = "number", default = 0 },
  padding_mode = { choices = { "constant" }, default = "constant" },
  generator = generator_key,
}, { example = "gpu.data.transforms.RandomCrop(2, %s)" })

-- RandomCrop(size [, {padding =, pad_if_needed = false, fill = 0, padding_mode = "constant",
-- generator =}]): a crop of size h or {h, w} at a random place (top 0..H-h, left 0..W-w,
-- uniform) after padding by `padding` (all sides, {left/right, top/bottom} or {left, top,
-- right, bottom}) and, with pad_if_needed, up to the crop's size
function T.RandomCrop(size, opts)
  local fname = "transforms.RandomCrop"
  local sz = pair(fname, size, 1, "size")
  local o = RANDOM_CROP:check(opts, 2)
  local p = o.padding
  if p ~= nil then
    if math.type(p) == "integer" then p = { p, p, p, p }
    elseif type(p) == "table" and #p == 2 then p = { p[1], p[2], p[1], p[2] } end
    local ok = type(p) == "table" and #p == 4
    for i = 1, 4 do ok = ok and math.type(p[i]) == "integer" and p[i] >= 0 end
    if not ok then
      argerror(fname, 2, "padding: an integer >= 0 or a list of 2 or 4 of them expected, got %s", type_name(o.padding))
    end
  end
  return setmetatable({ size = sz, padding = p, pad_if_needed = o.pad_if_needed, fill = o.fill,
                        generator = o.generator }, RandomCrop)
end

function RandomCrop:forward(x)
  local fname = "transforms.RandomCrop"
  image(fname, x)
  local th, tw = self.size[1], self.size[2]
  if self.padding then x = pad(x, self.padding[1], self.padding[2], self.padding[3], self.padding[4], self.fill) end
  local H, W = x.shape[x.ndim - 1], x.shape[x.ndim]
  if self.pad_if_needed and W < tw then
    x = pad(x, tw - W, 0, tw - W, 0, self.fill)
    W = x.shape[x.ndim]
  end
  if self.pad_if_needed and H < th then
    x = pad(x, 0, th - H, 0, th - H, self.fill)
    H = x.shape[x.ndim - 1]
  end
  if H < th or W < tw then
    raise("%s: required crop size (%d, %d) is larger than the input image size (%d, %d)", fname, th, tw, H, W)
  end
  local t, l = randint(self.generator, 0, H - th), randint(self.generator, 0, W - tw)
  return crop(x, t, l, th, tw)
end

-- ---- RandomHorizontalFlip --------------------------------------------------------------------

local Flip = class("RandomHorizontalFlip")
local FLIP = options.declare("transforms.RandomHorizontalFlip", {
  p = { type = "number", min = 0, max = 1, default = 0.5 }, generator = generator_key,
}, { example = "gpu.data.transforms.RandomHorizontalFlip(%s)" })

-- RandomHorizontalFlip([{p = 0.5, generator =}]): the image mirrored left to right with
-- probability p
function T.RandomHorizontalFlip(opts)
  local o = FLIP:check(opts, 1)
  return setmetatable({ p = o.p, generator = o.generator }, Flip)
end

function Flip:forward(x)
  image("transforms.RandomHorizontalFlip", x)
  if uniform(self.generator, 0, 1) < self.p then return x:flip(x.ndim) end
  return x
end

-- ---- Resize ----------------------------------------------------------------------------------

local Resize = class("Resize")
local RESIZE = options.declare("transforms.Resize", {
  interpolation = { choices = { "bilinear", "nearest" }, default = "bilinear" },
  antialias = { type = "boolean", default = false, check = function(v)
    return v == false, "= true is not implemented (torchvision's antialiased downscaling); Resize is torchvision's "
      .. "antialias=False"
  end },
  max_size = { unsupported = "give the size {h, w}" },
}, { example = "gpu.data.transforms.Resize(2, %s)" })

-- Resize(size [, {interpolation = "bilinear" | "nearest", antialias = false}]): size {h, w},
-- or an integer: the shorter side's new length, the longer one floor(size * long / short)
-- (torchvision's rule); nn.functional.interpolate (align_corners = false); a uint8 image is
-- resized in float32 and rounded back, as torchvision's
function T.Resize(size, opts)
  local fname = "transforms.Resize"
  local s
  if math.type(size) == "integer" then
    if size < 1 then argerror(fname, 1, "size must be >= 1, got %d", size) end
    s = size
  else
    s = pair(fname, size, 1, "size")
  end
  local o = RESIZE:check(opts, 2)
  return setmetatable({ size = s, interpolation = o.interpolation }, Resize)
end

function Resize:forward(x)
  local fname = "transforms.Resize"
  image(fname, x)
  local H, W = x.shape[x.ndim - 1], x.shape[x.ndim]
  local oh, ow
  if type(self.size) == "table" then
    oh, ow = self.size[1], self.size[2]
  else
    local short, long = math.min(H, W), math.max(H, W)
    local new_long = (self.size * long) // short
    if W <= H then oh, ow = new_long, self.size else oh, ow = self.size, new_long end
  end
  if oh == H and ow == W then return x end
  local u8 = x.dtype == "uint8"
  if not FLOATS[x.dtype] and not u8 then raise("%s: expected a float or uint8 image, got %s", fname, x.dtype) end
  local y = u8 and x:astype("float32") or x
  local single = y.ndim == 3
  if single then y = y:reshape(1, y.shape[1], H, W) end
  y = resample.interpolate_as(fname, y, { size = { oh, ow }, mode = self.interpolation,
    align_corners = self.interpolation == "bilinear" and false or nil })
  if single then y = y:reshape(y.shape[2], oh, ow) end
  if u8 then y = gpu.clip(gpu.round(y), 0, 255):astype("uint8") end
  return y
end

-- ---- RandomRotation --------------------------------------------------------------------------

local Rotation = class("RandomRotation")
local ROTATION = options.declare("transforms.RandomRotation", {
  interpolation = { choices = { "nearest", "bilinear" }, default = "nearest" },
  fill = { type = "number", default = 0 },
  expand = { unsupported = "the output keeps the input's size" },
  center = { unsupported = "the rotation is about the image's centre" },
  generator = generator_key,
}, { example = "gpu.data.transforms.RandomRotation(10, %s)" })

-- RandomRotation(degrees [, {interpolation = "nearest" | "bilinear", fill = 0, generator =}]):
-- the image rotated counter-clockwise about its centre by an angle drawn from
-- [-degrees, degrees] (or {lo, hi}; {a, a} is a fixed angle), as torchvision's
function T.RandomRotation(degrees, opts)
  local fname = "transforms.RandomRotation"
  local d
  if type(degrees) == "number" then
    if degrees < 0 then argerror(fname, 1, "degrees must be >= 0 when a single number, got %s", type_name(degrees)) end
    d = { -degrees, degrees }
  elseif type(degrees) == "table" and #degrees == 2 and type(degrees[1]) == "number" and type(degrees[2]) == "number"
      and degrees[1] <= degrees[2] then
    d = { degrees[1], degrees[2] }
  else
    argerror(fname, 1, "degrees: a number >= 0 or a list {lo, hi} with lo <= hi expected, got %s", type_name(degrees))
  end
  local o = ROTATION:check(opts, 2)
  return setmetatable({ degrees = d, interpolation = o.interpolation, fill = o.fill, generator = o.generator }, Rotation)
end

-- rotate(x, angle, mode, fill): torchvision's tensor rotate: each output pixel (j, i)
-- reads the input at its coordinates turned by the inverse rotation about the centre, in
-- float32 as grid_sample computes them (align_corners = false, zeros outside); fill is
-- blended by the same sampling of an all-ones mask
local function rotate(x, angle, mode, fill)
  local H, W = x.shape[x.ndim - 1], x.shape[x.ndim]
  local a = math.rad(angle)
  local c, s = math.cos(a), math.sin(a)
  local f32 = { dtype = "float32", device = x.device }
  -- the affine grid: base (x, y, 1) times theta^T / (w/2, h/2), as torchvision's _gen_affine_grid
  local xs = gpu.linspace(-W * 0.5 + 0.5, W * 0.5 + 0.5 - 1, W, f32):reshape(1, W)
  local ys = gpu.linspace(-H * 0.5 + 0.5, H * 0.5 + 0.5 - 1, H, f32):reshape(H, 1)
  local theta = gpu.array({ { c, -s, 0 }, { s, c, 0 } }, f32) / gpu.array({ { 0.5 * W }, { 0.5 * H } }, f32)
  local gx = xs * theta[{ 1, 1 }] + ys * theta[{ 1, 2 }] + theta[{ 1, 3 }]
  local gy = xs * theta[{ 2, 1 }] + ys * theta[{ 2, 2 }] + theta[{ 2, 3 }]
  -- grid_sample's unnormalisation (align_corners = false): pixel coordinates, 0-based
  local sx = ((gx + 1) * W - 1) / 2
  local sy = ((gy + 1) * H - 1) / 2
  local flat_shape, out_shape = {}, {}
  for k = 1, x.ndim - 2 do flat_shape[k], out_shape[k] = x.shape[k], x.shape[k] end
  flat_shape[#flat_shape + 1] = H * W
  out_shape[#out_shape + 1], out_shape[#out_shape + 2] = H, W
  local flat = x:reshape(flat_shape)
  -- the values at integer pixel (px, py) (arrays of H, W), zero outside, and its validity
  local function at(px, py)
    local valid = px:ge(0):logical_and(px:le(W - 1)):logical_and(py:ge(0)):logical_and(py:le(H - 1))
    local idx = gpu.where(valid, py * W + px, 0):astype("int64"):reshape(H * W) + 1
    local v = flat:take(idx, flat.ndim):reshape(out_shape)
    local m = valid:astype(x.dtype)
    return v * m, m
  end
  local y, mask
  if mode == "nearest" then
    y, mask = at(gpu.round(sx), gpu.round(sy))
    if fill ~= 0 then y = gpu.where(mask:lt(0.5), gpu.array(fill, { dtype = x.dtype, device = x.device }), y) end
    return y
  end
  local x0, y0 = gpu.floor(sx), gpu.floor(sy)
  local wx, wy = (sx - x0):astype(x.dtype), (sy - y0):astype(x.dtype)
  y, mask = 0, 0
  for _, corner in ipairs { { 0, 0 }, { 1, 0 }, { 0, 1 }, { 1, 1 } } do
    local w = (corner[1] == 1 and wx or 1 - wx) * (corner[2] == 1 and wy or 1 - wy)
    local v, m = at(x0 + corner[1], y0 + corner[2])
    y = y + v * w
    mask = mask + m * w
  end
  return y * mask + (1 - mask) * fill
end

function Rotation:forward(x)
  local fname = "transforms.RandomRotation"
  image(fname, x, true)
  return rotate(x, uniform(self.generator, self.degrees[1], self.degrees[2]), self.interpolation, self.fill)
end

-- ---- ColorJitter -----------------------------------------------------------------------------

local Jitter = class("ColorJitter")
local JITTER = options.declare("transforms.ColorJitter", {
  brightness = "number|table", contrast = "number|table", saturation = "number|table", hue = "number|table",
  generator = generator_key,
}, { example = "gpu.data.transforms.ColorJitter(%s)" })

-- grayscale (..., 1, H, W) of RGB (..., 3, H, W), torchvision's weights
local function gray(x)
  local ax = x.ndim - 2
  local r, g, b = x:narrow(ax, 1, 1), x:narrow(ax, 2, 1), x:narrow(ax, 3, 1)
  return r * 0.2989 + g * 0.587 + b * 0.114
end
local function blend(a, b, f) return gpu.clip(a * f + b * (1 - f), 0, 1) end

local function rgb_to_hsv(x)
  local ax = x.ndim - 2
  local r, g, b = x:narrow(ax, 1, 1), x:narrow(ax, 2, 1), x:narrow(ax, 3, 1)
  local maxc = gpu.maximum(gpu.maximum(r, g), b)
  local minc = gpu.minimum(gpu.minimum(r, g), b)
  local eqc = maxc:eq(minc)
  local cr = maxc - minc
  local ones = gpu.ones_like(maxc)
  local s = cr / gpu.where(eqc, ones, maxc)
  local div = gpu.where(eqc, ones, cr)
  local rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
  local is_r, is_g = maxc:eq(r), maxc:eq(g)
  local hr = is_r:astype(x.dtype) * (bc - gc)
  local hg = is_g:logical_and(is_r:logical_not()):astype(x.dtype) * (rc - bc + 2)
  local hb = is_g:logical_not():logical_and(is_r:logical_not()):astype(x.dtype) * (gc - rc + 4)
  local h = gpu.fmod((hr + hg + hb) / 6 + 1, 1)
  return h, s, maxc
end

local function hsv_to_rgb(h, s, v, ax)
  local i = gpu.floor(h * 6)
  local f = h * 6 - i
  local p = gpu.clip(v * (1 - s), 0, 1)
  local q = gpu.clip(v * (1 - s * f), 0, 1)
  local t = gpu.clip(v * (1 - s * (1 - f)), 0, 1)
  i = gpu.remainder(i, 6)
  local sel = {}
  for k = 0, 5 do sel[k] = i:eq(k):astype(h.dtype) end
  local function pick(list)
    local out = 0
    for k = 0, 5 do out = out + sel[k] * list[k + 1] end
    return out
  end
  return gpu.concatenate({ pick { v, q, p, p, t, v }, pick { t, v, v, q, p, p }, pick { p, p, t, v, v, q } }, ax)
end

local adjust = {
  brightness = function(x, f) return gpu.clip(x * f, 0, 1) end,
  contrast = function(x, f)
    local C = x.shape[x.ndim - 2]
    local g = C == 3 and gray(x) or x
    local n = x.ndim
    return blend(x, g:mean({ n - 2, n - 1, n }, { keepdims = true }), f)
  end,
  saturation = function(x, f)
    if x.shape[x.ndim - 2] == 1 then return x end
    return blend(x, gray(x), f)
  end,
  hue = function(x, f)
    if x.shape[x.ndim - 2] == 1 then return x end
    local h, s, v = rgb_to_hsv(x)
    h = gpu.remainder(h + f, 1)
    return hsv_to_rgb(h, s, v, x.ndim - 2)
  end,
}
local ORDER = { "brightness", "contrast", "saturation", "hue" }

-- ColorJitter([{brightness =, contrast =, saturation =, hue =, generator =}]): the four
-- adjustments, each with a factor drawn from its range, in a random order (torchvision's):
-- brightness, contrast and saturation a number v >= 0 (the range [max(0, 1 - v), 1 + v])
-- or {lo, hi} >= 0; hue v in [0, 0.5] ([-v, v]) or {lo, hi} within [-0.5, 0.5]; {f, f} is a
-- fixed factor. Images float in [0, 1], RGB (3 channels; a 1-channel image skips
-- saturation and hue)
function T.ColorJitter(opts)
  local fname = "transforms.ColorJitter"
  local o = JITTER:check(opts, 1)
  local ranges = {}
  for _, k in ipairs(ORDER) do
    local v = o[k]
    local hue = k == "hue"
    if type(v) == "number" then
      if hue then
        if v < 0 or v > 0.5 then argerror(fname, 1, "hue must be in [0, 0.5], got %s", type_name(v)) end
        v = { -v, v }
      else
        if v < 0 then argerror(fname, 1, "%s must be >= 0, got %s", k, type_name(v)) end
        v = { math.max(0, 1 - v), 1 + v }
      end
      if v[1] == v[2] and v[1] == (hue and 0 or 1) then v = nil end   -- the identity
    elseif type(v) == "table" then
      local lo, hi = v[1], v[2]
      if #v ~= 2 or type(lo) ~= "number" or type(hi) ~= "number" or lo > hi or (hue and (lo < -0.5 or hi > 0.5))
          or (not hue and lo < 0) then
        argerror(fname, 1, "%s: a list {lo, hi} with lo <= hi %s expected", k,
          hue and "within [-0.5, 0.5]" or "and lo >= 0")
      end
      v = { lo, hi }
    end
    ranges[k] = v
  end
  return setmetatable({ ranges = ranges, generator = o.generator }, Jitter)
end

function Jitter:forward(x)
  local fname = "transforms.ColorJitter"
  image(fname, x, true)
  local C = x.shape[x.ndim - 2]
  if C ~= 1 and C ~= 3 then raise("%s: expected 1 or 3 channels, got %d", fname, C) end
  local g = self.generator
  local perm = (g and g:permutation(4, { device = "cpu" }) or gpu.random.permutation(4, { device = "cpu" })):totable()
  local factors = {}
  for _, k in ipairs(ORDER) do
    local r = self.ranges[k]
    if r then factors[k] = uniform(g, r[1], r[2]) end
  end
  for _, i in ipairs(perm) do
    local k = ORDER[i]
    if factors[k] then x = adjust[k](x, factors[k]) end
  end
  return x
end

-- the adjustments with a given factor (torchvision.transforms.functional's adjust_*):
-- adjust_brightness(x, f), adjust_contrast(x, f), adjust_saturation(x, f) (f >= 0),
-- adjust_hue(x, f) (f in [-0.5, 0.5])
for _, k in ipairs(ORDER) do
  local fname = "transforms.adjust_" .. k
  T["adjust_" .. k] = function(x, f)
    image(fname, x, true)
    local C = x.shape[x.ndim - 2]
    if C ~= 1 and C ~= 3 then raise("%s: expected 1 or 3 channels, got %d", fname, C) end
    if k == "hue" then options.value(f, { type = "number", min = -0.5, max = 0.5 }, fname, 2, "hue_factor")
    else options.value(f, { type = "number", min = 0 }, fname, 2, k .. "_factor") end
    return adjust[k](x, f)
  end
end

return options.count_all("transforms.", T)
