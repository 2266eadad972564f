-- gpu.image: PNG save and load. Every written PNG is read back and compared pixel for
-- pixel; fixtures written by another tool (spec/fixtures/png/make_fixtures.py, zlib by
-- hand) load with known pixels; broken files are refused with clear errors.
local h = require "spec.helper"
local slurp = h.slurp
local spit = h.spit
local gpu = h.gpu

local dir, tmp = h.tmpdir("img")

-- CRC-32 (zlib's), to forge chunks that pass libpng's CRC check.
local function crc32(s)
  local c = 0xffffffff
  for i = 1, #s do
    c = c ~ s:byte(i)
    for _ = 1, 8 do c = (c & 1) ~= 0 and (0xedb88320 ~ (c >> 1)) or (c >> 1) end
  end
  return c ~ 0xffffffff
end
local function chunk(kind, data) return (">I4"):pack(#data) .. kind .. data .. (">I4"):pack(crc32(kind .. data)) end
local SIG = "\x89PNG\r\n\x1a\n"

-- uint8 (C, H, W) with distinct values
local function pattern(c, hh, w, dev)
  return (gpu.arange(c * hh * w, { device = dev }) * 7 % 256):astype("uint8"):reshape(c, hh, w)
end

local function same(a, b)
  assert.are.same(a.shape, b.shape)
  assert.are.equal("uint8", b.dtype)
  assert.are.same(a:astype("int32"):cpu():totable(), b:astype("int32"):cpu():totable())
end

describe("gpu.image.save and load", function()
  for _, d in ipairs(h.devices()) do
    for _, c in ipairs { 1, 2, 3, 4 } do
      it(("round-trips (%d, H, W) uint8 pixel for pixel from %s"):format(c, d), function()
        local x = pattern(c, 5, 7, d)
        local p = tmp()
        gpu.image.save(p, x)
        same(x, gpu.image.load(p))
      end)
    end
    it("writes (H, W) as one gray channel from " .. d, function()
      local x = pattern(1, 4, 6, d)[1]
      local p = tmp()
      gpu.image.save(p, x)
      local y = gpu.image.load(p)
      assert.are.same({ 1, 4, 6 }, y.shape)
      same(x:reshape(1, 4, 6), y)
    end)
    it("writes a view (transposed) as its logical array from " .. d, function()
      local x = pattern(3, 4, 6, d):permute(1, 3, 2)
      local p = tmp()
      gpu.image.save(p, x)
      same(x:contiguous(), gpu.image.load(p))
    end)
  end

  it("rounds floats to bytes: clamped to [0, 1], NaN as 0, floor(v * 255 + 0.5)", function()
    local v = { 0, 1, 0.5, 0.25, 0.001, 0.002, -0.3, 1.7, 0 / 0, 1 / 0, -1 / 0, 127.5 / 255 + 1e-6 }
    local want = { 0, 255, 128, 64, 0, 1, 0, 255, 0, 255, 0, 128 }
    for _, dt in ipairs { "float32", "float64", "float16" } do
      local p = tmp()
      gpu.image.save(p, gpu.array({ v }, { dtype = "float64" }):astype(dt))
      assert.are.same({ { want } }, gpu.image.load(p):astype("int32"):totable())
    end
  end)

  it("lays a batch out as a grid: nrow a row, padding of pad_value (as torchvision's make_grid)", function()
    local b = (gpu.arange(5 * 2 * 3 * 4) % 200 + 10):astype("uint8"):reshape(5, 2, 3, 4)
    local p = tmp()
    gpu.image.save(p, b, { nrow = 2, padding = 1, pad_value = 7 })
    local g = gpu.image.load(p):astype("int32"):totable()
    -- 3 rows, 2 columns of 3x4 images: (3 * (3 + 1) + 1) x (2 * (4 + 1) + 1)
    assert.are.equal(2, #g)
    assert.are.equal(13, #g[1])
    assert.are.equal(11, #g[1][1])
    local bt = b:astype("int32"):totable()
    for c = 1, 2 do
      for y = 1, 13 do
        for x = 1, 11 do
          local r, q = (y - 2) // 4, (x - 2) // 5      -- grid cell (0-based), pixel inside
          local iy, ix = (y - 2) % 4 + 1, (x - 2) % 5 + 1
          local k = r * 2 + q + 1
          local want = 7
          if y >= 2 and x >= 2 and iy <= 3 and ix <= 4 and k <= 5 then want = bt[k][c][iy][ix] end
          assert.are.equal(want, g[c][y][x], ("channel %d, pixel (%d, %d)"):format(c, y, x))
        end
      end
    end
  end)

  it("grids with the defaults nrow = 8, padding = 2, pad_value = 0; a float pad_value is scaled", function()
    local p = tmp()
    gpu.image.save(p, gpu.ones(10, 3, 8, 8))
    local g = gpu.image.load(p)
    assert.are.same({ 3, 2 * 10 + 2, 8 * 10 + 2 }, g.shape)
    assert.are.equal(0, g[{ 1, 1, 1 }])
    assert.are.equal(255, g[{ 1, 3, 3 }])
    assert.are.equal(0, g[{ 1, 13, 75 }])        -- the empty cells of row 2 are padding
    gpu.image.save(p, gpu.zeros(2, 1, 2, 2), { pad_value = 1 })
    g = gpu.image.load(p)
    assert.are.same({ 1, 6, 10 }, g.shape)
    assert.are.equal(255, g[{ 1, 1, 1 }])
    assert.are.equal(0, g[{ 1, 3, 3 }])
  end)

  it("a batch of one is the image itself, without padding", function()
    local x = pattern(3, 4, 5)
    local p = tmp()
    gpu.image.save(p, x:reshape(1, 3, 4, 5))
    same(x, gpu.image.load(p))
  end)

  it("loads as float in [0, 1] with {dtype =}, on the device asked", function()
    local x = pattern(3, 2, 2)
    local p = tmp()
    gpu.image.save(p, x)
    local f = gpu.image.load(p, { dtype = "float32", device = "cpu" })
    assert.are.equal("float32", f.dtype)
    assert.is_true(h.close(f, x:astype("float32") / 255, 1e-7))
    assert.are.equal("float64", gpu.image.load(p, { dtype = "float64" }).dtype)
  end)

  it("replaces an existing file and leaves no temporary beside it", function()
    local p = tmp()
    spit(p, "old")
    gpu.image.save(p, pattern(1, 2, 2))
    same(pattern(1, 2, 2), gpu.image.load(p))
    local ls = io.popen("ls " .. dir):read("a")
    assert.is_nil(ls:find("tmp%-"))
  end)
end)

describe("gpu.image.load of files another tool wrote", function()
  local fx = "spec/fixtures/png/"
  it("RGB with a Sub-filtered row", function()
    assert.are.same({ { { 255, 0, 0 }, { 10, 40, 70 } }, { { 0, 255, 0 }, { 20, 50, 80 } }, { { 0, 0, 255 }, { 30, 60, 90 } } },
      gpu.image.load(fx .. "rgb_3x2.png"):astype("int32"):totable())
  end)
  it("a 2-bit palette with transparency as RGBA", function()
    assert.are.same({ { { 0, 255, 255, 0 } }, { { 0, 255, 0, 0 } }, { { 0, 255, 0, 255 } }, { { 255, 0, 255, 255 } } },
      gpu.image.load(fx .. "palette_4x1.png"):astype("int32"):totable())
  end)
  it("16-bit gray as its high bytes", function()
    assert.are.same({ { { 0x12, 0xff }, { 0, 0x80 } } }, gpu.image.load(fx .. "gray16_2x2.png"):astype("int32"):totable())
  end)
end)

describe("gpu.image errors", function()
  local good = slurp("spec/fixtures/png/rgb_3x2.png")

  it("refuses dtypes other than uint8 and float", function()
    for _, dt in ipairs { "int32", "int64", "bool" } do
      assert.has_error(function() gpu.image.save(tmp(), gpu.zeros({ 2, 2 }, { dtype = dt })) end,
        "bad argument #2 to 'image.save' (an image is uint8 or float in [0, 1], got " .. dt .. ")")
    end
  end)

  it("refuses shapes that are no image", function()
    for _, s in ipairs { { 4 }, { 5, 2, 2 }, { 2, 5, 2, 2 }, { 1, 1, 1, 1, 1 }, { 0, 3 }, { 0, 3, 2, 2 } } do
      local ok, err = pcall(gpu.image.save, tmp(), gpu.zeros(s))
      assert.is_false(ok)
      assert.matches("bad argument #2 to 'image.save' %(an image is %(H, W%), %(C, H, W%) with C = 1, 2, 3 or 4", err)
    end
  end)

  it("raises on unknown options and bad values", function()
    assert.has_error(function() gpu.image.save(tmp(), gpu.zeros(2, 2), { nrows = 2 }) end,
      "bad argument #3 to 'image.save' (unknown option 'nrows'; did you mean 'nrow'?)")
    assert.has_error(function() gpu.image.save(tmp(), gpu.zeros({ 2, 2 }, { dtype = "uint8" }), { pad_value = 300 }) end,
      "bad argument #3 to 'image.save' (option 'pad_value' must be an integer 0..255 for a uint8 image, got 300)")
    local p = tmp()
    gpu.image.save(p, gpu.zeros(2, 2))
    local ok, err = pcall(gpu.image.load, p, { dtype = "int32" })
    assert.is_false(ok)
    assert.matches("option 'dtype' must be 'uint8' or a float dtype", err)
    assert.has_error(function() gpu.image.load(p, { dtyp = "uint8" }) end,
      "bad argument #2 to 'image.load' (unknown option 'dtyp'; did you mean 'dtype'?)")
  end)

  it("a missing file, a directory, a non-PNG", function()
    local ok, err = pcall(gpu.image.load, dir .. "/none.png")
    assert.is_false(ok)
    assert.matches("gpu.image.load: '.-none.png': cannot open", err)
    ok, err = pcall(gpu.image.load, dir)
    assert.matches("not a regular file", err)
    local p = tmp()
    spit(p, "GIF89a not a png at all")
    ok, err = pcall(gpu.image.load, p)
    assert.matches("gpu.image.load: '.-': not a PNG file %(no PNG signature%)", err)
    spit(p, "")
    ok, err = pcall(gpu.image.load, p)
    assert.matches("not a PNG file", err)
  end)

  it("a save onto a directory is refused and the directory kept", function()
    local ok, err = pcall(gpu.image.save, dir, gpu.zeros(2, 2))
    assert.is_false(ok)
    assert.matches("gpu.image.save: '.-': not a regular file %(a directory%)", err)
    ok, err = pcall(gpu.image.save, dir .. "/no/such/dir/x.png", gpu.zeros(2, 2))
    assert.is_false(ok)
    assert.matches("gpu.image.save: ", err)
  end)

  it("truncated files, at every length", function()
    local p = tmp()
    for len = 8, #good - 1 do
      spit(p, good:sub(1, len))
      local ok, err = pcall(gpu.image.load, p)
      assert.is_false(ok, "a file cut at " .. len .. " bytes loaded")
      assert.matches("gpu.image.load: '.-': [%w ]*", err)
      assert.is_truthy(err:find("truncated") or err:find("corrupt"), err)
    end
  end)

  it("corrupt bytes: a bad CRC, a bad IHDR, flipped bits anywhere never crash", function()
    local p = tmp()
    spit(p, good:sub(1, 19) .. string.char(good:byte(20) ~ 1) .. good:sub(21))    -- the width
    local ok, err = pcall(gpu.image.load, p)
    assert.is_false(ok)
    assert.matches("corrupt PNG %(IHDR: CRC error%)", err)
    -- an IHDR with a valid CRC but an impossible color type
    spit(p, SIG .. chunk("IHDR", (">I4I4BBBBB"):pack(2, 2, 8, 5, 0, 0, 0)) .. good:sub(34))
    ok, err = pcall(gpu.image.load, p)
    assert.is_false(ok)
    assert.matches("corrupt PNG", err)
    for i = 9, #good do
      spit(p, good:sub(1, i - 1) .. string.char(good:byte(i) ~ 0x10) .. good:sub(i + 1))
      pcall(gpu.image.load, p)          -- an error or an image, never a crash
    end
  end)

  it("refuses sizes past the limits and what the bytes could hold, before allocating", function()
    local p = tmp()
    local idat = chunk("IDAT", "\x78\x9c\x03\x00\x00\x00\x00\x01")
    spit(p, SIG .. chunk("IHDR", (">I4I4BBBBB"):pack(1000000, 1000000, 8, 6, 0, 0, 0)) .. idat .. chunk("IEND", ""))
    local ok, err = pcall(gpu.image.load, p)
    assert.is_false(ok)
    assert.matches("cannot come from %d+ bytes", err)
    spit(p, SIG .. chunk("IHDR", (">I4I4BBBBB"):pack(1000001, 1, 8, 0, 0, 0, 0)) .. idat .. chunk("IEND", ""))
    ok, err = pcall(gpu.image.load, p)
    assert.is_false(ok)
    assert.matches("gpu.image.load: ", err)
  end)
end)
