-- spec/data_spec.lua — gpu.data: batches and DataLoader, the IDX reader (plain and
-- gzip) with its hostile-file checks, and Fashion-MNIST from Debian's package.
local h = require "spec.helper"
local gpu = h.gpu
local data = gpu.data

local function be32(n) return string.char(n >> 24 & 255, n >> 16 & 255, n >> 8 & 255, n & 255) end
local function write(bytes, gz)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  if gz then
    assert(os.execute("gzip -c " .. path .. " > " .. path .. ".gz"))
    os.remove(path)
    path = path .. ".gz"
  end
  return path
end
local function load(bytes, gz)
  local p = write(bytes, gz)
  local ok, res = pcall(gpu.load_idx, p)
  os.remove(p)
  return ok, res
end

describe("gpu.load_idx", function()
  local u8 = "\0\0\8\2" .. be32(2) .. be32(3) .. "\1\2\3\4\5\255"
  it("reads uint8, int32 and float32 files, plain and gzip", function()
    for _, gz in ipairs { false, true } do
      local ok, x = load(u8, gz)
      assert(ok, x)
      assert.equal("uint8", x.dtype)
      assert.same({ { 1, 2, 3 }, { 4, 5, 255 } }, x:totable())
      ok, x = load("\0\0\12\1" .. be32(2) .. be32(1) .. be32(0xFFFFFFFE), gz)
      assert(ok, x)
      assert.equal("int32", x.dtype)
      assert.same({ 1, -2 }, x:totable())
      ok, x = load("\0\0\13\1" .. be32(1) .. string.pack(">f", 1.5), gz)
      assert(ok, x)
      assert.same({ 1.5 }, x:totable())
      ok, x = load("\0\0\9\1" .. be32(2) .. "\1\255", gz)            -- int8
      assert(ok, x)
      assert.equal("int8", x.dtype)
      assert.same({ 1, -1 }, x:totable())
      ok, x = load("\0\0\11\1" .. be32(2) .. string.pack(">i2>i2", -300, 7), gz)   -- int16, big-endian
      assert(ok, x)
      assert.equal("int16", x.dtype)
      assert.same({ -300, 7 }, x:totable())
    end
  end)
  it("refuses hostile and broken files with the fault named", function()
    local cases = {
      { "\1\0\8\1" .. be32(1) .. "\0", "bad magic" },
      { "\0\0\7\1" .. be32(1) .. "\0", "unknown type code 0x07" },
      { "\0\0\8\0", "0 dimensions" },
      { "\0\0\8\9" .. string.rep(be32(1), 9) .. "\0", "9 dimensions" },
      { "\0\0\8", "truncated IDX header" },
      { "\0\0\8\2" .. be32(2), "truncated IDX header %(8 of 12 bytes%)" },
      { "\0\0\8\2" .. be32(2) .. be32(2) .. "\1\2\3", "promises 4 data bytes but the file holds 3" },
      { "\0\0\8\1" .. be32(2) .. "\1\2\3", "promises 2 data bytes but the file holds 3" },
      { "\0\0\14\3" .. be32(0xFFFFFFFF) .. be32(0xFFFFFFFF) .. be32(0xFFFFFFFF), "promises more than" },
    }
    for _, c in ipairs(cases) do
      local ok, err = load(c[1], false)
      assert.is_false(ok, c[2])
      assert.matches("load_idx: .*" .. c[2], err)
    end
    -- gzip: a size no gzip stream of this length can hold, truncated and trailing data
    local ok, err = load("\0\0\8\2" .. be32(100000) .. be32(1000) .. "\0", true)
    assert.is_false(ok); assert.matches("more than a %d+%-byte gzip file can hold", err)
    ok, err = load("\0\0\8\2" .. be32(2) .. be32(2) .. "\1\2\3", true)
    assert.is_false(ok); assert.matches("truncated %(3 of 4 data bytes%)", err)
    ok, err = load("\0\0\8\1" .. be32(2) .. "\1\2\3", true)
    assert.is_false(ok); assert.matches("trailing bytes", err)
    ok, err = pcall(gpu.load_idx, "/nonexistent/file.idx")
    assert.is_false(ok); assert.matches("gpu.load_idx: '/nonexistent/file.idx': cannot open %(No such file", err)
    ok, err = pcall(gpu.load_idx, "/tmp")
    assert.is_false(ok); assert.matches("gpu.load_idx: '/tmp': not a regular file %(a directory%)", err)
  end)
end)

for _, dev in ipairs(h.devices()) do
  describe("batches on " .. dev, function()
    local x = gpu.arange(1, 11, { device = dev }):reshape(10, 1)
    local y = gpu.arange(1, 11, { device = dev })
    it("covers every sample once, in order or shuffled", function()
      local sizes, seen = {}, {}
      for xb, yb in data.batches(x, y, 4) do
        sizes[#sizes + 1] = xb.shape[1]
        h.assert_close(xb:reshape(xb.shape[1]), yb)
        for _, v in ipairs(yb:totable()) do seen[#seen + 1] = v end
      end
      assert.same({ 4, 4, 2 }, sizes)
      assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, seen)
      gpu.random.seed(5)
      seen = {}
      for xb, yb in data.batches(x, y, 3, { shuffle = true }) do
        h.assert_close(xb:reshape(xb.shape[1]), yb)
        for _, v in ipairs(yb:totable()) do seen[#seen + 1] = v end
      end
      assert.are_not.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, seen)
      table.sort(seen)
      assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, seen)
    end)
    it("DataLoader: epochs, drop_last, length, device", function()
      local dl = data.DataLoader(x, y, { batch_size = 4, drop_last = true, device = dev })
      assert.equal(2, #dl)
      local n = 0
      for xb in dl() do n = n + 1; assert.equal(4, xb.shape[1]) end
      assert.equal(2, n)
    end)
    it("refuses mismatched lengths and bad batch sizes", function()
      local ok, err = pcall(data.batches, x, gpu.ones(9), 2)
      assert.is_false(ok); assert.matches("batches: x has 10 samples but y has 9", err)
      ok, err = pcall(data.batches, x, y, 0)
      assert.is_false(ok); assert.matches("bad argument #3 to 'data.batches' (batch_size must be >= 1, got integer 0)", err, 1, true)
    end)
  end)
end

describe("DataLoader under pairs and ipairs", function()
  it("pairs numbers an epoch's batches; ipairs and an integer key are an error saying how to iterate", function()
    local loader = gpu.data.DataLoader(gpu.arange(10):reshape(5, 2), gpu.arange(5), { batch_size = 2 })
    local seen = {}
    for i, xb, yb in pairs(loader) do seen[#seen + 1] = { i, xb.shape[1], yb:totable() } end
    assert.same({ { 1, 2, { 0, 1 } }, { 2, 2, { 2, 3 } }, { 3, 1, { 4 } } }, seen)
    local ok, err = pcall(function() for _ in ipairs(loader) do end end)
    assert.is_false(ok)
    assert.matches("DataLoader: a loader has no batch [1] (ipairs does not iterate it): use `for xb, yb in loader do`",
      err, 1, true)
    ok, err = pcall(function() return loader[3] end)
    assert.is_false(ok)
    assert.matches("no batch [3]", err, 1, true)
    assert.equal(2, loader.batch_size)                  -- fields and methods as before
    assert.equal(3, #loader)
  end)
end)

describe("fashion_mnist", function()
  local have = io.open(data.fashion_mnist_path .. "/t10k-labels-idx1-ubyte.gz")
  if have then have:close() end
  local test = have and it or pending
  test("reads Debian's dataset-fashion-mnist: shapes, labels 1..10, class names, scaling", function()
    local ds = data.fashion_mnist { limit = 100 }
    assert.same({ 100, 28, 28 }, ds.train.x.shape)
    assert.equal("uint8", ds.train.x.dtype)
    assert.same({ 100 }, ds.test.y.shape)
    assert.equal("int64", ds.test.y.dtype)
    assert.equal(10, ds.test.y[1])          -- the first test image is an ankle boot
    assert.equal("Ankle boot", ds.classes[10])
    assert.is_true(ds.train.y:min():item() >= 1 and ds.train.y:max():item() <= 10)
    local s = data.fashion_mnist { limit = 10, scale = true, flatten = true }
    assert.same({ 10, 784 }, s.train.x.shape)
    assert.equal("float32", s.train.x.dtype)
    assert.is_true(s.train.x:max():item() <= 1 and s.train.x:min():item() >= 0)
    local ok, err = pcall(data.fashion_mnist, { path = "/nonexistent" })
    assert.is_false(ok); assert.matches("not found in /nonexistent", err)
  end)
end)
