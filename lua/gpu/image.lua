-- gpu.image: arrays to and from PNG files.
--
--   gpu.image.save("grid.png", x [, {nrow = 8, padding = 2, pad_value = 0}])
--   local img = gpu.image.load("photo.png")                    -- uint8 (C, H, W)
--   local f = gpu.image.load("photo.png", {dtype = "float32"}) -- float in [0, 1]
--
-- save takes (H, W), (C, H, W) with C = 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA),
-- or a batch (N, C, H, W), which is laid out as a grid as torchvision's save_image does:
-- nrow images a row, padding pixels of pad_value around and between them (a batch of one
-- is the image itself, no padding). Floats are clamped to [0, 1], NaN reads as 0, and
-- each value becomes floor(v * 255 + 0.5); uint8 is written as it is. pad_value is in the
-- image's own scale (0..1 for floats, 0..255 for uint8).
--
-- The PNG codec is C (src/core/png.c, libpng16 opened on first use); the layout is here.

local gpu = require "gpu"
local options = require "gpu.options"

local M = {}

local float_dtypes = { float16 = true, bfloat16 = true, float32 = true, float64 = true }

local SAVE = options.declare("image.save", {
  nrow = { type = "integer", min = 1, default = 8 },
  padding = { type = "integer", min = 0, default = 2 },
  pad_value = { type = "number", default = 0 },
}, { example = "local p = os.tmpname() gpu.image.save(p, gpu.zeros(2, 2), %s) os.remove(p)" })

local LOAD = options.declare("image.load", {
  dtype = { type = "dtype", default = "uint8", what = "'uint8' or a float dtype",
            check = function(v)
              if v == "uint8" or float_dtypes[v] then return true end
              return false, "must be 'uint8' or a float dtype, got '" .. v .. "'"
            end },
  device = { type = "device" },
}, { example = "local p = os.tmpname() gpu.image.save(p, gpu.zeros(2, 2)) gpu.image.load(p, %s) os.remove(p)" })

-- uint8 pixels of x (any shape), on x's device: floats clamped, NaN as 0, rounded.
local function to_bytes(x)
  if x.dtype == "uint8" then return x end
  if x.dtype == "float16" or x.dtype == "bfloat16" then x = x:astype("float32") end
  local v = gpu.where(x:isnan(), 0, x):clip(0, 1)
  return (v * 255 + 0.5):floor():astype("uint8")
end

-- The pad value as a byte in x's scale.
local function pad_byte(x, pad, argn)
  if x.dtype == "uint8" then
    if pad ~= math.floor(pad) or pad < 0 or pad > 255 then
      options.argerror("image.save", argn, "option 'pad_value' must be an integer 0..255 for a uint8 image, got %s",
        tostring(pad))
    end
    return math.tointeger(pad)
  end
  if pad ~= pad then return 0 end
  return math.floor(math.min(math.max(pad, 0), 1) * 255 + 0.5)
end

-- (C, H, W) bytes of a batch (N, C, H, W) laid out nrow a row, as torchvision's make_grid.
local function grid(b, nrow, padding, pad)
  local n, c, h, w = b.shape[1], b.shape[2], b.shape[3], b.shape[4]
  if n == 1 then return b[1] end
  local cols = math.min(nrow, n)
  local rows = (n + cols - 1) // cols
  local ch, cw = h + padding, w + padding
  local g = gpu.full({ c, rows * ch + padding, cols * cw + padding }, pad, { dtype = "uint8", device = b.device })
  for k = 1, n do
    local r, q = (k - 1) // cols, (k - 1) % cols
    local y, x = r * ch + padding + 1, q * cw + padding + 1
    g[{ ":", { y, y + h - 1 }, { x, x + w - 1 } }] = b[k]
  end
  return g
end

local function shape_fault(shape)
  return ("an image is (H, W), (C, H, W) with C = 1, 2, 3 or 4, or a batch (N, C, H, W) of them; got %s")
    :format(options.shape_str(shape))
end

-- f(...) with its error (the C codec's "gpu.image.load: 'x.png': ...") raised at the user's line.
local function codec(f, ...)
  local ok, r = pcall(f, ...)
  if not ok then options.raise("%s", tostring(r)) end
  return r
end

-- save(path, x [, opts]) (or save(x, path [, opts]))
function M.save(path, x, opts)
  if options.is_array(path) and type(x) == "string" then path, x = x, path end
  if type(path) ~= "string" then options.argerror("image.save", 1, "path: string expected, got %s", options.type_name(path)) end
  options.check_array(x, "image.save", 2, "image")
  local o = SAVE:check(opts, 3)
  if x.dtype ~= "uint8" and not float_dtypes[x.dtype] then
    options.argerror("image.save", 2, "an image is uint8 or float in [0, 1], got %s", x.dtype)
  end
  local shape = x.shape
  if x.ndim == 2 then
    x = x:reshape(1, 1, shape[1], shape[2])
  elseif x.ndim == 3 then
    x = x:reshape(1, shape[1], shape[2], shape[3])
  elseif x.ndim ~= 4 then
    options.argerror("image.save", 2, "%s", shape_fault(shape))
  end
  local s = x.shape
  if s[1] < 1 or s[2] < 1 or s[2] > 4 or s[3] < 1 or s[4] < 1 then
    options.argerror("image.save", 2, "%s", shape_fault(shape))
  end
  local pad = pad_byte(x, o.pad_value, 3)
  local img = grid(to_bytes(x), o.nrow, o.padding, pad)
  codec(gpu._png_save, path, img:permute(2, 3, 1))
end

-- load(path [, {dtype = "uint8" | float dtype, device =}]) -> (C, H, W)
function M.load(path, opts)
  if type(path) ~= "string" then options.argerror("image.load", 1, "path: string expected, got %s", options.type_name(path)) end
  local o = LOAD:check(opts, 2)
  local hwc = codec(gpu._png_load, path)
  local x = hwc:permute(3, 1, 2):contiguous()
  if o.dtype ~= "uint8" then x = x:astype(o.dtype) / 255 end
  if o.device then x = x:to(o.device) end
  return x
end

return options.count_all("image.", M)
