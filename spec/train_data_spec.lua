-- spec/train_data_spec.lua — the Dataset protocol, DataLoader over
-- datasets, TensorDataset, Subset, random_split, default_collate, read_text, CharVocab.
local h = require "spec.helper"
local gpu = h.gpu
local data = gpu.data

-- a dataset object with __len and get(i): sample i is {x = i * ones(2), y = i % 3 + 1}
local Squares = {}
Squares.__index = Squares
Squares.__len = function(self) return self.n end
function Squares:get(i) return { x = gpu.full({ 2 }, i * 1.0), y = i % 3 + 1 } end

describe("train data: datasets", function()
  for _, dev in ipairs(h.devices()) do
    it("TensorDataset batches equal the arrays' rows, shuffled or not, on " .. dev, function()
      local x = gpu.arange(20, { dtype = "float32", device = dev }):reshape(10, 2)
      local y = gpu.arange(10, { device = dev })
      local ds = data.TensorDataset(x, y)
      assert.equal(10, #ds)
      local s = ds:get(3)
      h.assert_close(s[1], { 4, 5 }); assert.equal(0, s[2].ndim); assert.equal(2, s[2]:item())
      local seen, nb = {}, 0
      local loader = data.DataLoader(ds, { batch_size = 4, shuffle = true })
      assert.equal(3, #loader)
      for xb, yb in loader do
        nb = nb + 1
        assert.equal(dev, xb.device == "cpu" and "cpu" or dev)
        for r = 1, yb.shape[1] do
          local yi = yb[r]
          h.assert_close(xb[{ { r, r } }], { { 2 * yi, 2 * yi + 1 } })
          assert.is_nil(seen[yi]); seen[yi] = true
        end
      end
      assert.equal(3, nb)
      local n = 0
      for k in pairs(seen) do n = n + 1; assert.is_true(k >= 0 and k <= 9) end
      assert.equal(10, n)
      local sizes = {}
      for xb in data.DataLoader(ds, { batch_size = 4, drop_last = true }) do sizes[#sizes + 1] = xb.shape[1] end
      assert.same({ 4, 4 }, sizes)
    end)
  end

  it("any object with __len and get(i), or a plain list, is a dataset; default_collate stacks by field", function()
    local ds = setmetatable({ n = 5 }, Squares)
    local batches = {}
    for b in data.DataLoader(ds, { batch_size = 2 }) do batches[#batches + 1] = b end
    assert.equal(3, #batches)
    h.assert_close(batches[1].x, { { 1, 1 }, { 2, 2 } })
    assert.equal("int64", batches[1].y.dtype); h.assert_close(batches[1].y, { 2, 3 })
    assert.equal(1, batches[3].x.shape[1])
    local list = { { gpu.ones(3), 1.5 }, { gpu.zeros(3), 2.5 }, { gpu.ones(3), true and 0.5 } }
    local xb, yb = data.DataLoader(list, { batch_size = 3 })()()
    assert.same({ 3, 3 }, xb.shape); assert.equal("float64", yb.dtype); h.assert_close(yb, { 1.5, 2.5, 0.5 })
    -- collate_fn takes the samples
    local got = data.DataLoader(list, { batch_size = 2, collate_fn = function(s) return #s end })()()
    assert.equal(2, got)
    h.assert_close(data.default_collate { true, false }, { true, false })
    h.fails({ "default_collate", "sample 2" }, data.default_collate, { gpu.ones(2), gpu.ones(3) })
    h.fails({ "default_collate", "sample 2 has no field y" }, data.default_collate, { { x = 1, y = 2 }, { x = 1 } })
    h.fails({ "data.DataLoader", "gpu.array expected, got integer 3" }, data.DataLoader, 3)
    h.fails({ "data.DataLoader", "collate_fn needs a dataset" }, data.DataLoader, gpu.ones(3), nil, { collate_fn = print })
    h.fails({ "data.DataLoader", "unknown option 'batchsize'" }, data.DataLoader, list, { batchsize = 2 })
    h.fails({ "data.DataLoader", "no length" }, data.DataLoader, setmetatable({}, { __len = function() return "x" end }))
  end)

  it("Subset and random_split (counts, fractions, a generator) partition the dataset", function()
    local ds = data.TensorDataset(gpu.arange(10))
    local sub = data.Subset(ds, { 3, 1 })
    assert.equal(2, #sub); assert.equal(2, sub:get(1)[1]:item())
    local a, b, c = data.random_split(ds, { 5, 3, 2 }, { generator = gpu.random.Generator(7) })
    assert.equal(5, #a); assert.equal(3, #b); assert.equal(2, #c)
    local all = {}
    for _, s in ipairs { a, b, c } do for i = 1, #s do all[#all + 1] = s:get(i)[1]:item() end end
    table.sort(all)
    for i = 1, 10 do assert.equal(i - 1, all[i]) end
    local a2 = data.random_split(ds, { 5, 3, 2 }, { generator = gpu.random.Generator(7) })
    assert.same(a.indices, a2.indices)                        -- the same generator, the same split
    local f1, f2, f3 = data.random_split(ds, { 0.5, 0.25, 0.25 })
    assert.equal(6, #f1); assert.equal(2, #f2); assert.equal(2, #f3)   -- PyTorch gives the rest to the first ones
    for xb in data.DataLoader(f2, { batch_size = 8 }) do assert.equal(2, xb.shape[1]) end
    h.fails({ "data.random_split", "sum to 4 but the dataset has 10" }, data.random_split, ds, { 2, 2 })
    h.fails({ "data.Subset", "indices[1] = 11 is not a position in 1..10" }, data.Subset, ds, { 11 })
    h.fails({ "data.TensorDataset", "array #2 has 3 rows, array #1 has 2" }, data.TensorDataset, gpu.ones(2), gpu.ones(3))
  end)

  it("the x, y DataLoader still works and takes a generator", function()
    local x = gpu.arange(6)
    local function order(seed)
      local out = {}
      for xb in data.DataLoader(x, nil, { batch_size = 6, shuffle = true, generator = gpu.random.Generator(seed) }) do
        out = xb:totable()
      end
      return out
    end
    assert.same(order(3), order(3))
  end)
end)

describe("train data: text", function()
  local dir, name = h.tmpdir()
  h.spit(name("b.txt"), "hello\n")
  h.spit(name("a.txt"), "ab\tc\n")
  h.spit(name("c.dat"), "dat")
  h.spit(name("d.bin"), "x\0y")

  it("read_text reads a folder's text files in sorted order, skipping .dat and binary files", function()
    local text, files = data.read_text(dir)
    assert.equal("ab\tc\nhello\n", text)
    assert.same({ name("a.txt"), name("b.txt") }, files)
    assert.same({ name("a.txt"), name("b.txt"), name("d.bin") }, data.list_text_files(dir))
    assert.equal("hello\n--ab\tc\n", (data.read_text({ name("b.txt"), name("a.txt") }, { separator = "--" })))
    h.fails({ "data.read_text", "cannot read" }, data.read_text, { dir .. "/nope" })
    h.fails({ "data.list_text_files", "is not a folder" }, data.list_text_files, name("a.txt"))
  end)

  it("CharVocab: sorted characters, 1-based ids, encode and decode round trip", function()
    local v = data.CharVocab("hello world")
    assert.equal(8, #v)
    assert.same({ " ", "d", "e", "h", "l", "o", "r", "w" }, v.itos)
    local ids = v:encode("hold")
    assert.equal("int64", ids.dtype); h.assert_close(ids, { 4, 6, 5, 2 })
    assert.equal("hold", v:decode(ids)); assert.equal("dew", v:decode { 2, 3, 8 })
    local u = data.CharVocab("héllo ☃")
    assert.equal("utf8", u.mode); assert.equal(6, #u)
    assert.equal("☃é", u:decode(u:encode("☃é")))
    local b = data.CharVocab("a\200b")                    -- not UTF-8: bytes
    assert.equal("bytes", b.mode); assert.equal(3, #b)
    assert.equal("b\200", b:decode(b:encode("b\200")))
    h.fails({ "CharVocab:encode", "character \"z\" at 3" }, v.encode, v, "hez")
    local q = data.CharVocab("ab?", { unk = "?" })
    assert.equal("a??", q:decode(q:encode("azz")))
    h.fails({ "CharVocab:decode", "id 9 at 1 is not in 1..8" }, v.decode, v, { 9 })
    h.fails({ "data.CharVocab", "empty" }, data.CharVocab, "")
    h.fails({ "data.CharVocab", "unk" }, data.CharVocab, "ab", { unk = "z" })
    -- an embedding takes the ids as they are
    local e = gpu.nn.Embedding(#v, 3)
    assert.same({ 4, 3 }, e(ids).shape)
  end)
end)
