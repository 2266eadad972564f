-- spec/keras_preprocessing_spec.lua — Keras's image preprocessing layers (nn.Resizing,
-- nn.CenterCrop, nn.RandomFlip, nn.RandomRotation, nn.RandomZoom, nn.RandomCrop): the
-- deterministic ones and the random ones with fixed factors against Keras 3 (torch
-- backend, spec/fixtures/keras_preprocessing.lua); the random draws by their properties;
-- interpolate's "nearest-exact" against torch; misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local F = require "spec.fixtures.keras_preprocessing"

local function arr(d) return gpu.array(d.data, { dtype = "float32" }):reshape(d.shape) end
local function maxdiff(a, b) return (a:astype("float64") - b:astype("float64")):abs():max():item() end
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end
local x = arr(F.inputs.x)

describe("Keras preprocessing layers against Keras 3", function()
  for _, c in ipairs(F.cases) do
    it(c.name .. ": " .. c.ctor, function()
      local layer = load("local nn = ...; return " .. c.ctor)(nn)
      if not c.training then layer:eval() end
      local y = layer(arr(F.inputs[c.input]))
      assert.same(c.shape, y.shape)
      assert.equal("float32", y.dtype)
      assert.is_true(maxdiff(y, gpu.array(c.data):reshape(c.shape)) <= 1e-5)
    end)
  end

  it("interpolate's nearest-exact is torch's", function()
    local t = arr(F.nearest_exact.input)
    for _, k in ipairs { "size_up", "size_down", "scale" } do
      local c = F.nearest_exact[k]
      local o = { mode = "nearest-exact" }
      for kk, v in pairs(c.opts) do o[kk] = v end
      local y = nn.functional.interpolate(t, o)
      assert.same(c.shape, y.shape)
      assert.equal(0, maxdiff(y, gpu.array(c.data):reshape(c.shape)))
    end
    local up = nn.Upsample { size = { 8, 10 }, mode = "nearest-exact" }(t)
    assert.equal(0, maxdiff(up, gpu.array(F.nearest_exact.size_up.data):reshape(F.nearest_exact.size_up.shape)))
  end)
end)

describe("Keras random preprocessing layers", function()
  it("are the identity in eval mode", function()
    for _, layer in ipairs { nn.RandomFlip(), nn.RandomRotation(0.3), nn.RandomZoom(0.2, 0.1), nn.RandomCrop(3, 3) } do
      layer:eval()
      assert.equal(x, layer(x))
    end
  end)

  it("RandomFlip flips whole images exactly, per image, reproducibly with a seed", function()
    local hx = x[{ {}, {}, { 7, 1, -1 }, {} }]
    local vx = x[{ {}, { 6, 1, -1 }, {}, {} }]
    local seen = { [0] = 0, [1] = 0 }
    local layer = nn.RandomFlip("horizontal", { seed = 7 })
    for _ = 1, 20 do
      local y = layer(x)
      for n = 1, 2 do
        local yn = y[{ n }]
        if maxdiff(yn, x[{ n }]) == 0 then seen[0] = seen[0] + 1
        else
          assert.equal(0, maxdiff(yn, hx[{ n }]))
          seen[1] = seen[1] + 1
        end
      end
    end
    assert.is_true(seen[0] > 5 and seen[1] > 5)
    local v = nn.RandomFlip("vertical", { seed = 3 })(x)
    for n = 1, 2 do assert.is_true(maxdiff(v[{ n }], x[{ n }]) == 0 or maxdiff(v[{ n }], vx[{ n }]) == 0) end
    local both = nn.RandomFlip { seed = 3 }(x)      -- both flips on one draw: the image turned 180 degrees
    local hv = x[{ {}, { 6, 1, -1 }, { 7, 1, -1 }, {} }]
    for n = 1, 2 do assert.is_true(maxdiff(both[{ n }], x[{ n }]) == 0 or maxdiff(both[{ n }], hv[{ n }]) == 0) end
    assert.same(nn.RandomFlip { seed = 11 }(x):totable(), nn.RandomFlip { seed = 11 }(x):totable())
  end)

  it("RandomRotation, RandomZoom, RandomCrop: shapes, one draw per image, seeds", function()
    for _, make in ipairs {
      function() return nn.RandomRotation(0.2, { seed = 5 }) end,
      function() return nn.RandomZoom(0.3, nil, { seed = 5, fill_mode = "constant" }) end,
      function() return nn.RandomCrop(4, 5, { seed = 5 }) end } do
      local a, b = make(), make()
      local ya, yb = a(x), b(x)
      assert.same(ya:totable(), yb:totable())
      assert.are_not.same(ya:totable(), a(x):totable())
    end
    assert.same({ 2, 6, 7, 3 }, nn.RandomRotation(0.2)(x).shape)
    assert.same({ 2, 4, 5, 3 }, nn.RandomCrop(4, 5)(x).shape)
    -- each image its own angle: two copies of one image come out different
    local twin = gpu.stack({ x[{ 1 }], x[{ 1 }] }, 1)
    local r = nn.RandomRotation(0.4, { seed = 2 })(twin)
    assert.is_true(maxdiff(r[{ 1 }], r[{ 2 }]) > 0)
    -- the crop is a window of the input, the same for the batch
    local c = nn.RandomCrop(4, 5, { seed = 9 })(x)
    local found
    for t = 0, 2 do
      for l = 0, 2 do
        if maxdiff(x[{ {}, { t + 1, t + 4 }, { l + 1, l + 5 }, {} }], c) == 0 then found = true end
      end
    end
    assert.is_true(found)
    -- one image (H, W, C) and channels_first
    assert.same({ 6, 7, 3 }, nn.RandomRotation(0.1)(x[{ 1 }]).shape)
    local cf = x:permute({ 1, 4, 2, 3 }):contiguous()
    local y1 = nn.RandomZoom({ 0.2, 0.2 }, nil, { data_format = "channels_first" })(cf)
    local y2 = nn.RandomZoom({ 0.2, 0.2 })(x)
    assert.equal(0, maxdiff(y1, y2:permute({ 1, 4, 2, 3 })))
    assert.same({ 3, 4, 5 }, nn.Resizing(4, 5, { data_format = "channels_first" })(cf[{ 1 }]).shape)
  end)

  it("differentiable layers pass gradcheck in float64", function()
    local xd = gpu.random.rand({ 2, 5, 4, 2 }, { dtype = "float64" })
    for _, layer in ipairs { nn.Resizing(7, 3), nn.CenterCrop(6, 3), nn.RandomRotation({ 0.1, 0.1 }, { fill_mode = "constant" }),
                             nn.RandomZoom({ 0.2, 0.2 }, { -0.3, -0.3 }) } do
      local ok, msg = gpu.autograd.gradcheck(function(v) return layer(v) end, { xd })
      assert.is_true(ok, msg)
    end
  end)

  it("cast an integer input to float32", function()
    local u = (x * 255):astype("uint8")
    local y = nn.Resizing(3, 3)(u)
    assert.equal("float32", y.dtype)
  end)
end)

describe("Keras preprocessing layers misuse", function()
  it("is an error naming the layer", function()
    assert.matches("nn.Resizing.*height is required", err_of(nn.Resizing))
    assert.matches("option 'interpolation' must be one of", err_of(nn.Resizing, 2, 2, { interpolation = "cubic" }))
    assert.matches("nn.Resizing.*antialias", err_of(nn.Resizing, 2, 2, { antialias = true }))
    assert.matches("nn.Resizing.*pad_to_aspect_ratio", err_of(nn.Resizing, 2, 2, { pad_to_aspect_ratio = true }))
    assert.matches("nn.CenterCrop: expected a batch", err_of(nn.CenterCrop(2, 2), gpu.ones(3, 3)))
    assert.matches("nn.CenterCrop.*input: gpu.array expected", err_of(nn.CenterCrop(2, 2), "x"))
    assert.matches("option 'mode' must be one of", err_of(nn.RandomFlip, "diagonal"))
    assert.matches("nn.RandomRotation.*factor is required", err_of(nn.RandomRotation))
    assert.matches("nn.RandomRotation.*factor: lower 0.3 is above upper 0.1", err_of(nn.RandomRotation, { 0.3, 0.1 }))
    assert.matches("option 'fill_mode' must be one of", err_of(nn.RandomRotation, 0.1, { fill_mode = "mirror" }))
    assert.matches("nn.RandomZoom.*height_factor: lower bound %-2 is below %-1", err_of(nn.RandomZoom, { -2, 0 }))
    assert.matches("unknown option 'sed'", err_of(nn.RandomCrop, 2, 2, { sed = 1 }))
    assert.matches("option 'height' must be", err_of(nn.RandomCrop, 0, 2))
  end)
end)
