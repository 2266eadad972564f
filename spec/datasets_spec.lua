-- spec/datasets_spec.lua — gpu.data.mnist and gpu.data.cifar10 over small synthetic files
-- in the standard formats (IDX; CIFAR-10's binary batches) written to a temporary folder:
-- the values byte for byte against the format, the options, and the refusals of missing,
-- truncated and malformed files by name.
local h = require "spec.helper"
local gpu = h.gpu
local data = gpu.data

local function be32(n) return string.char(n >> 24 & 255, n >> 16 & 255, n >> 8 & 255, n & 255) end
local function write(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
end
local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. p))
  return p
end
local function rmdir(p) os.execute("rm -rf " .. p) end
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end

-- pixel value of image n at (r, c) of an MNIST-style file, and its label
local function pix(n, r, c, seed) return (n * 31 + r * 7 + c * 3 + seed) % 256 end
local function idx_images(n, hgt, wid, seed)
  local t = { "\0\0\8\3", be32(n), be32(hgt), be32(wid) }
  for i = 0, n - 1 do
    for r = 0, hgt - 1 do
      for c = 0, wid - 1 do t[#t + 1] = string.char(pix(i, r, c, seed)) end
    end
  end
  return table.concat(t)
end
local function idx_labels(labels)
  local t = { "\0\0\8\1", be32(#labels) }
  for _, l in ipairs(labels) do t[#t + 1] = string.char(l) end
  return table.concat(t)
end

describe("gpu.data.mnist", function()
  local dir
  before_each(function()
    dir = tmpdir()
    write(dir .. "/train-images-idx3-ubyte", idx_images(5, 4, 3, 0))
    write(dir .. "/train-labels-idx1-ubyte", idx_labels { 0, 9, 3, 3, 1 })
    write(dir .. "/t10k-images-idx3-ubyte", idx_images(2, 4, 3, 100))
    write(dir .. "/t10k-labels-idx1-ubyte", idx_labels { 7, 2 })
    assert(os.execute("gzip " .. dir .. "/t10k-images-idx3-ubyte"))
  end)
  after_each(function() rmdir(dir) end)

  it("reads the train and test IDX files (plain and .gz), labels 1-based", function()
    local tr = data.mnist(dir)
    assert.equal("uint8", tr.x.dtype)
    assert.same({ 5, 4, 3 }, tr.x.shape)
    assert.equal(pix(3, 2, 1, 0), tr.x[{ 4, 3, 2 }])
    assert.equal("int64", tr.y.dtype)
    assert.same({ 1, 10, 4, 4, 2 }, tr.y:totable())
    assert.equal("0 - zero", tr.classes[1])
    local te = data.mnist(dir, { train = false, scale = true, flatten = true })
    assert.same({ 2, 12 }, te.x.shape)
    assert.equal("float32", te.x.dtype)
    assert.near(pix(1, 0, 2, 100) / 255, te.x[{ 2, 3 }], 1e-6)
    assert.same({ 8, 3 }, te.y:totable())
    assert.same({ 2 }, data.mnist(dir, { limit = 2 }).y.shape)
  end)

  it("refuses missing, truncated and malformed files by name", function()
    os.remove(dir .. "/train-labels-idx1-ubyte")
    local e = err_of(data.mnist, dir)
    assert.matches("data.mnist: train%-labels%-idx1%-ubyte%(%.gz%) not found in " .. dir:gsub("%p", "%%%0"), e)
    write(dir .. "/train-labels-idx1-ubyte", idx_labels { 0, 1, 2 })
    assert.matches("data.mnist:.*train%-images%-idx3%-ubyte is uint8 %(5, 4, 3%).*%(3%)", err_of(data.mnist, dir))
    write(dir .. "/train-labels-idx1-ubyte", idx_labels { 0, 1, 2, 3, 4 }:sub(1, -2))
    assert.matches("data.mnist:.*train%-labels%-idx1%-ubyte.*the header promises 5 data bytes but the file holds 4", err_of(data.mnist, dir))
    write(dir .. "/train-labels-idx1-ubyte", idx_labels { 0, 1, 2, 3, 10 })
    assert.matches("data.mnist:.*train%-labels%-idx1%-ubyte holds a label above 9", err_of(data.mnist, dir))
    write(dir .. "/train-labels-idx1-ubyte", "garbage!")
    assert.matches("data.mnist:.*train%-labels%-idx1%-ubyte", err_of(data.mnist, dir))
    os.remove(dir .. "/train-labels-idx1-ubyte")
    assert(os.execute("mkfifo " .. dir .. "/train-labels-idx1-ubyte"))
    assert.matches("data.mnist:.*train%-labels%-idx1%-ubyte': not a regular file", err_of(data.mnist, dir))
  end)

  it("misuse is an error naming the function", function()
    assert.matches("bad argument #1 to 'data.mnist' %(folder", err_of(data.mnist, 3))
    assert.matches("unknown option 'trian'", err_of(data.mnist, dir, { trian = true }))
    assert.matches("option 'train' must be a boolean", err_of(data.mnist, dir, { train = 1 }))
    assert.matches("at most 2 arguments", err_of(data.mnist, dir, {}, 3))
  end)
end)

describe("gpu.data.cifar10", function()
  local dir
  local R = 3073
  -- record i of a file: label, then pixel (c, r, col) = (i + c * 5 + r * 3 + col + seed) % 256
  local function records(labels, seed)
    local t = {}
    for i, l in ipairs(labels) do
      t[#t + 1] = string.char(l)
      local px = {}
      for c = 0, 2 do
        for r = 0, 31 do
          for col = 0, 31 do px[#px + 1] = string.char((i + c * 5 + r * 3 + col + seed) % 256) end
        end
      end
      t[#t + 1] = table.concat(px)
    end
    return table.concat(t)
  end
  before_each(function()
    dir = tmpdir()
    for k = 1, 5 do write(("%s/data_batch_%d.bin"):format(dir, k), records({ k - 1, 9 }, k * 10)) end
    write(dir .. "/test_batch.bin", records({ 4, 5, 6 }, 99))
  end)
  after_each(function() rmdir(dir) end)

  it("reads the binary batches: uint8 (N, 3, 32, 32) in CHW order, labels 1-based", function()
    local tr = data.cifar10(dir)
    assert.same({ 10, 3, 32, 32 }, tr.x.shape)
    assert.equal("uint8", tr.x.dtype)
    assert.same({ 1, 10, 2, 10, 3, 10, 4, 10, 5, 10 }, tr.y:totable())
    assert.equal("int64", tr.y.dtype)
    -- sample 4 is record 2 of data_batch_2 (seed 20); pixel c = 3, r = 5, col = 7
    assert.equal((2 + 2 * 5 + 4 * 3 + 6 + 20) % 256, tr.x[{ 4, 3, 5, 7 }])
    assert.equal("airplane", tr.classes[1])
    local te = data.cifar10(dir, { train = false, scale = true, flatten = true, limit = 2 })
    assert.same({ 2, 3072 }, te.x.shape)
    assert.near(((1 + 0 + 0 + 1 + 99) % 256) / 255, te.x[{ 1, 2 }], 1e-6)
    assert.same({ 5, 6 }, te.y:totable())
    -- the archive's folder inside the given one
    local sub = dir .. "/cifar-10-batches-bin"
    assert(os.execute("mkdir " .. sub .. " && mv " .. dir .. "/*.bin " .. sub))
    assert.same({ 5, 6, 7 }, data.cifar10(dir, { train = false }).y:totable())
  end)

  it("refuses missing, truncated and malformed files by name", function()
    os.remove(dir .. "/data_batch_3.bin")
    assert.matches("data.cifar10: data_batch_3.bin not found in " .. dir:gsub("%p", "%%%0"), err_of(data.cifar10, dir))
    write(dir .. "/data_batch_3.bin", records({ 1 }, 0):sub(1, 3000))
    assert.matches("data.cifar10: '.*data_batch_3.bin': truncated or malformed: 3000 bytes", err_of(data.cifar10, dir))
    write(dir .. "/data_batch_3.bin", records({ 1, 12 }, 0))
    assert.matches("data.cifar10: '.*data_batch_3.bin' is malformed: record 2 has label 12", err_of(data.cifar10, dir))
    write(dir .. "/test_batch.bin", "")
    assert.matches("test_batch.bin': empty", err_of(data.cifar10, dir, { train = false }))
    -- a FIFO is refused by name, not opened (which would wait for a writer)
    os.remove(dir .. "/test_batch.bin")
    assert(os.execute("mkfifo " .. dir .. "/test_batch.bin"))
    assert.matches("data.cifar10: '.*test_batch.bin': not a regular file", err_of(data.cifar10, dir, { train = false }))
    assert.equal(R, 1 + 3 * 32 * 32)
  end)

  it("misuse is an error naming the function", function()
    assert.matches("bad argument #1 to 'data.cifar10' %(folder", err_of(data.cifar10, nil))
    assert.matches("unknown option 'scal'", err_of(data.cifar10, dir, { scal = true }))
    assert.matches("at most 2 arguments", err_of(data.cifar10, dir, {}, 3))
  end)
end)
