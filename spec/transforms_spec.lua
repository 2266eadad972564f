-- spec/transforms_spec.lua — gpu.data.transforms: the deterministic transforms (ToTensor,
-- Normalize, CenterCrop, Resize, a fixed-angle RandomRotation, ColorJitter with fixed
-- factors) against torchvision (spec/fixtures/transforms.lua); the random ones by their
-- properties (shapes, reproducible with a generator, exact flips and crops); gradients;
-- misuse.
local h = require "spec.helper"
local gpu = h.gpu
local T = gpu.data.transforms
local F = require "spec.fixtures.transforms"

local function arr(d, dtype) return gpu.array(d.data, { dtype = dtype or "float32" }):reshape(d.shape) end
local inputs = { img = arr(F.img), batch = arr(F.batch), u8 = arr(F.u8, "uint8"), u8gray = arr(F.u8gray, "uint8"),
                 u8chw = arr(F.u8chw, "uint8") }
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end

describe("gpu.data.transforms against torchvision", function()
  local make = {
    to_tensor = T.ToTensor(), to_tensor_gray = T.ToTensor(),
    normalize = T.Normalize({ 0.5, 0.4, 0.3 }, { 0.2, 0.25, 0.3 }),
    normalize_batch = T.Normalize({ 0.5, 0.4, 0.3 }, { 0.2, 0.25, 0.3 }),
    center_crop_3x4 = T.CenterCrop { 3, 4 }, center_crop_2 = T.CenterCrop(2), center_crop_pad = T.CenterCrop { 8, 6 },
    resize_up_bilinear = T.Resize { 8, 10 }, resize_down_bilinear = T.Resize { 3, 4 }, resize_short_side = T.Resize(3),
    resize_nearest = T.Resize({ 4, 9 }, { interpolation = "nearest" }), resize_uint8 = T.Resize { 4, 7 },
    rotate_nearest = T.RandomRotation { 30, 30 },
    rotate_bilinear = T.RandomRotation({ 30, 30 }, { interpolation = "bilinear" }),
    rotate_bilinear_fill = T.RandomRotation({ -50, -50 }, { interpolation = "bilinear", fill = 0.5 }),
    rotate_nearest_fill = T.RandomRotation({ 75, 75 }, { fill = 0.25 }),
    jitter_brightness = T.ColorJitter { brightness = { 1.3, 1.3 } },
    jitter_contrast = T.ColorJitter { contrast = { 0.6, 0.6 } },
    jitter_saturation = T.ColorJitter { saturation = { 1.7, 1.7 } },
    jitter_hue = T.ColorJitter { hue = { 0.2, 0.2 } },
    jitter_hue_neg_batch = T.ColorJitter { hue = { -0.35, -0.35 } },
    jitter_all = T.Compose {
      function(x) return T.adjust_brightness(x, 0.8) end, function(x) return T.adjust_contrast(x, 1.4) end,
      function(x) return T.adjust_saturation(x, 0.5) end, function(x) return T.adjust_hue(x, -0.1) end },
  }
  local names = {}
  for k in pairs(F.cases) do names[#names + 1] = k end
  table.sort(names)
  for _, name in ipairs(names) do
    it(name, function()
      local c = F.cases[name]
      local y = make[name](inputs[c.input])
      assert.equal(c.dtype, y.dtype)
      assert.same(c.shape, y.shape)
      local d = (y:astype("float64") - gpu.array(c.data, { dtype = "float64" }):reshape(c.shape)):abs():max():item()
      assert.is_true(d <= 1e-6, name .. ": max difference " .. d)
    end)
  end
end)

describe("gpu.data.transforms random ones", function()
  local img, batch = inputs.img, inputs.batch

  it("RandomCrop: a window of the (padded) image, reproducible with a generator", function()
    local a = T.RandomCrop({ 3, 4 }, { generator = gpu.random.Generator(4) })
    local b = T.RandomCrop({ 3, 4 }, { generator = gpu.random.Generator(4) })
    for _ = 1, 5 do
      local ya, yb = a(img), b(img)
      assert.same({ 3, 3, 4 }, ya.shape)
      assert.same(ya:totable(), yb:totable())
      local found = false                  -- the crop is some window of the image
      for t = 0, 2 do
        for l = 0, 3 do
          if (img[{ {}, { t + 1, t + 3 }, { l + 1, l + 4 } }] - ya):abs():max():item() == 0 then found = true end
        end
      end
      assert.is_true(found)
    end
    local p = T.RandomCrop(5, { padding = 2, fill = 7 })(batch)
    assert.same({ 2, 3, 5, 5 }, p.shape)
    local full = T.RandomCrop({ 7, 11 }, { padding = { 2, 1 }, fill = 7 })(img)   -- the whole padded image
    assert.same({ 3, 7, 11 }, full.shape)
    assert.equal(7, full[{ 1, 1, 1 }])
    assert.same(img:totable(), full[{ {}, { 2, 6 }, { 3, 9 } }]:totable())
    assert.same({ 3, 6, 9 }, T.RandomCrop({ 6, 9 }, { pad_if_needed = true })(img).shape)
    assert.matches("transforms.RandomCrop: required crop size %(6, 4%) is larger than the input image size %(5, 7%)",
      err_of(T.RandomCrop({ 6, 4 }), img))
  end)

  it("RandomHorizontalFlip: p = 1 reverses the columns exactly, p = 0 is the identity", function()
    local y = T.RandomHorizontalFlip { p = 1 }(batch)
    for j = 1, 4 do
      assert.same(batch[{ {}, {}, {}, j }]:totable(), y[{ {}, {}, {}, 5 - j }]:totable())
    end
    assert.same(batch:totable(), T.RandomHorizontalFlip { p = 1 }(y):totable())
    assert.equal(img, T.RandomHorizontalFlip { p = 0 }(img))
    local flips = 0
    local t = T.RandomHorizontalFlip { generator = gpu.random.Generator(9) }
    for _ = 1, 200 do if t(img) ~= img then flips = flips + 1 end end
    assert.is_true(flips > 70 and flips < 130)
  end)

  it("RandomRotation and ColorJitter draw within their ranges, reproducibly", function()
    local a = T.RandomRotation(40, { generator = gpu.random.Generator(1), interpolation = "bilinear" })
    local b = T.RandomRotation(40, { generator = gpu.random.Generator(1), interpolation = "bilinear" })
    assert.same(a(batch):totable(), b(batch):totable())
    assert.same({ 2, 3, 6, 4 }, a(batch).shape)
    -- a rotation by 0 is the identity
    assert.same(img:totable(), T.RandomRotation(0)(img):totable())
    local j1 = T.ColorJitter { brightness = 0.5, contrast = 0.5, saturation = 0.5, hue = 0.2,
                               generator = gpu.random.Generator(3) }
    local j2 = T.ColorJitter { brightness = 0.5, contrast = 0.5, saturation = 0.5, hue = 0.2,
                               generator = gpu.random.Generator(3) }
    local y = j1(img)
    assert.same(y:totable(), j2(img):totable())
    assert.is_true(y:min():item() >= 0 and y:max():item() <= 1)
    assert.same(img:totable(), T.ColorJitter()(img):totable())
  end)

  it("Compose chains, and Normalize inplace writes its input", function()
    local tf = T.Compose { T.ToTensor(), T.CenterCrop(2), T.Normalize({ 0.5 }, { 0.5 }) }
    local y = tf(inputs.u8)
    assert.same({ 3, 2, 2 }, y.shape)
    local want = (T.CenterCrop(2)(T.ToTensor()(inputs.u8)) - 0.5) / 0.5
    assert.is_true((y - want):abs():max():item() < 1e-6)
    local x = img:copy()
    local r = T.Normalize({ 1 }, { 2 }, { inplace = true })(x)
    assert.equal(x, r)
    assert.is_true((x - (img - 1) / 2):abs():max():item() < 1e-6)
  end)

  it("differentiable transforms pass gradcheck in float64", function()
    local ag = gpu.autograd
    local x = gpu.random.rand({ 2, 3, 5, 4 }, { dtype = "float64" })
    for _, t in ipairs { T.Normalize({ 0.1, 0.2, 0.3 }, { 0.5, 2, 3 }), T.Resize { 7, 3 }, T.CenterCrop { 3, 6 },
                         T.RandomRotation({ 30, 30 }, { interpolation = "bilinear" }),
                         T.ColorJitter { contrast = { 0.7, 0.7 } },    -- one adjustment: no random order
                         function(v) return T.adjust_saturation(T.adjust_brightness(v, 0.8), 1.2) end } do
      local ok, msg = ag.gradcheck(function(v) return t(v) end, { x })
      assert.is_true(ok, msg)
    end
  end)
end)

describe("gpu.data.transforms misuse", function()
  it("is an error naming the transform", function()
    assert.matches("transforms.Normalize.*std%[2%] is 0", err_of(T.Normalize, { 0, 0 }, { 1, 0 }))
    assert.matches("transforms.Normalize.*mean%[1%] must be a number", err_of(T.Normalize, { "a" }, { 1 }))
    assert.matches("unknown option 'inplce'", err_of(T.Normalize, { 0 }, { 1 }, { inplce = true }))
    assert.matches("transforms.Normalize: mean and std have 2 entries but the input has 3 channels",
      err_of(T.Normalize({ 0, 0 }, { 1, 1 }), inputs.img))
    assert.matches("transforms.Normalize: expected a float image, got uint8", err_of(T.Normalize({ 0 }, { 1 }), inputs.u8chw))
    assert.matches("transforms.CenterCrop.*size: an integer >= 1", err_of(T.CenterCrop, 0))
    assert.matches("transforms.CenterCrop: expected an image %(C, H, W%)", err_of(T.CenterCrop(2), gpu.ones(3)))
    assert.matches("transforms.CenterCrop.*input: gpu.array expected", err_of(T.CenterCrop(2), "x"))
    assert.matches("a transform takes one array, got 2", err_of(T.CenterCrop(2), inputs.img, 1))
    assert.matches("transforms.Resize.*antialias.*not implemented", err_of(T.Resize, 3, { antialias = true }))
    assert.matches("option 'interpolation' must be one of", err_of(T.Resize, 3, { interpolation = "cubic" }))
    assert.matches("transforms.RandomRotation.*degrees", err_of(T.RandomRotation, { 3, 1 }))
    assert.matches("option 'expand'", err_of(T.RandomRotation, 3, { expand = true }))
    assert.matches("transforms.ColorJitter.*hue must be in %[0, 0.5%]", err_of(T.ColorJitter, { hue = 0.7 }))
    assert.matches("transforms.ColorJitter.*brightness must be >= 0", err_of(T.ColorJitter, { brightness = -1 }))
    assert.matches("transforms.ColorJitter: expected 1 or 3 channels", err_of(T.ColorJitter { hue = 0.1 }, gpu.ones(2, 3, 3)))
    assert.matches("transforms.RandomHorizontalFlip.*option 'p'", err_of(T.RandomHorizontalFlip, { p = 2 }))
    assert.matches("transforms.RandomCrop.*padding", err_of(T.RandomCrop, 2, { padding = { 1, 2, 3 } }))
    assert.matches("transforms.Compose.*transforms%[2%]", err_of(T.Compose, { T.ToTensor(), 3 }))
    assert.matches("transforms.ToTensor: expected %(H, W%)", err_of(T.ToTensor(), gpu.ones(2)))
    assert.matches("transforms.adjust_hue.*hue_factor", err_of(T.adjust_hue, inputs.img, 0.9))
    assert.matches("transforms.ToTensor.*at most 0", err_of(T.ToTensor, 1))
    assert.matches("transforms.CenterCrop:forward: use t:forward", err_of(T.CenterCrop(2).forward, inputs.img))
  end)
end)
