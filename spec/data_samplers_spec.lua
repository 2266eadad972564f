-- spec/data_samplers_spec.lua — gpu.data's samplers (Sequential, Random, SubsetRandom,
-- WeightedRandom, Batch), DataLoader's sampler and batch_sampler options, IterableDataset
-- and ConcatDataset; the deterministic outputs against torch.utils.data
-- (spec/fixtures/data_samplers.lua), the random ones by their properties.
local h = require "spec.helper"
local gpu = h.gpu
local data = gpu.data
local F = require "spec.fixtures.data_samplers"

local function sorted(t)
  local c = table.move(t, 1, #t, 1, {})
  table.sort(c)
  return c
end
local function range(a, b)
  local t = {}
  for i = a, b do t[#t + 1] = i end
  return t
end
local function collect(it)
  local out = {}
  for v in it do out[#out + 1] = v end
  return out
end
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end

describe("gpu.data samplers", function()
  it("SequentialSampler gives 1..n as torch's (a count, an array or a dataset)", function()
    assert.same(F.sequential, data.SequentialSampler(7):indices():totable())
    assert.same(F.sequential, collect(data.SequentialSampler(gpu.zeros(7, 2)):iter()))
    assert.equal(7, #data.SequentialSampler(data.TensorDataset(gpu.zeros(7))))
    assert.equal("int64", data.SequentialSampler(3):indices().dtype)
    assert.same({}, data.SequentialSampler(0):indices():totable())
  end)

  it("RandomSampler: a permutation, num_samples beyond n, replacement, reproducible", function()
    local s = data.RandomSampler(10)
    assert.equal(10, #s)
    assert.same(range(1, 10), sorted(s:indices():totable()))
    local long = data.RandomSampler(4, { num_samples = 10 }):indices():totable()
    assert.equal(10, #long)
    assert.same(range(1, 4), sorted({ table.unpack(long, 1, 4) }))
    assert.same(range(1, 4), sorted({ table.unpack(long, 5, 8) }))
    local r = data.RandomSampler(3, { replacement = true, num_samples = 50 }):indices():totable()
    assert.equal(50, #r)
    for _, i in ipairs(r) do assert.is_true(i >= 1 and i <= 3) end
    local a = data.RandomSampler(20, { generator = gpu.random.Generator(5) })
    local b = data.RandomSampler(20, { generator = gpu.random.Generator(5) })
    local a1 = a:indices():totable()
    assert.same(a1, b:indices():totable())
    assert.are_not.same(a1, a:indices():totable())      -- a new order each epoch
  end)

  it("SubsetRandomSampler: the given positions, shuffled", function()
    local s = data.SubsetRandomSampler({ 9, 2, 5 }, { generator = gpu.random.Generator(1) })
    assert.equal(3, #s)
    assert.same({ 2, 5, 9 }, sorted(s:indices():totable()))
    assert.same({ 2, 4 }, sorted(data.SubsetRandomSampler(gpu.array({ 4, 2 }, { dtype = "int32" })):indices():totable()))
    assert.same({}, data.SubsetRandomSampler({}):indices():totable())
  end)

  it("WeightedRandomSampler draws by weight, never a zero weight", function()
    local s = data.WeightedRandomSampler({ 0, 1, 0, 3 }, 4000, { generator = gpu.random.Generator(2) })
    local idx = s:indices()
    assert.equal(4000, idx.size)
    local count = {}
    for _, i in ipairs(idx:totable()) do count[i] = (count[i] or 0) + 1 end
    assert.is_nil(count[1]); assert.is_nil(count[3])
    assert.near(0.75, count[4] / 4000, 0.04)
    local nr = data.WeightedRandomSampler(gpu.array { 1, 1, 1, 1, 1 }, 5, { replacement = false }):indices():totable()
    assert.same(range(1, 5), sorted(nr))
  end)

  it("BatchSampler lists as torch's over a sampler and over a list", function()
    for key, want in pairs(F.batch) do
      local bs, mode = key:match("(%d+)_(%a+)")
      local b = data.BatchSampler(data.SequentialSampler(7), tonumber(bs), mode == "drop")
      assert.same(want, b:batches())
      assert.equal(#want, #b)
    end
    assert.same(F.listed, data.BatchSampler({ 5, 1, 9, 3, 7 }, 2, false):batches())
  end)

  it("misuse is an error naming the function", function()
    assert.matches("data.SequentialSampler", err_of(data.SequentialSampler, "x"))
    assert.matches("data.SequentialSampler.*at most 1", err_of(data.SequentialSampler, 3, 4))
    assert.matches("num_samples should be a positive integer", err_of(data.RandomSampler, 3, { num_samples = 0 }))
    assert.matches("the data has no samples to draw", err_of(data.RandomSampler, 0, { num_samples = 3 }))
    assert.matches("unknown option 'replacment'", err_of(data.RandomSampler, 3, { replacment = true }))
    assert.matches("option 'replacement' must be a boolean", err_of(data.RandomSampler, 3, { replacement = 1 }))
    assert.matches("data.SubsetRandomSampler.*indices%[2%]", err_of(data.SubsetRandomSampler, { 1, 0 }))
    assert.matches("data.SubsetRandomSampler.*integer array", err_of(data.SubsetRandomSampler, gpu.ones(2)))
    assert.matches("weights must be finite and >= 0", err_of(data.WeightedRandomSampler, { 1, -1 }, 2))
    assert.matches("weights sum to 0", err_of(data.WeightedRandomSampler, { 0, 0 }, 2))
    assert.matches("weights%[2%] must be a number", err_of(data.WeightedRandomSampler, { 1, "a" }, 2))
    assert.matches("num_samples should be a positive", err_of(data.WeightedRandomSampler, { 1 }, 0))
    assert.matches("exceeds the 1 positions", err_of(data.WeightedRandomSampler, { 1, 0 }, 2, { replacement = false }))
    assert.matches("data.BatchSampler.*batch_size should be a positive", err_of(data.BatchSampler, { 1 }, 0, false))
    assert.matches("data.BatchSampler.*drop_last should be a boolean", err_of(data.BatchSampler, { 1 }, 1, 1))
    assert.matches("data.BatchSampler.*sampler: a gpu.data sampler", err_of(data.BatchSampler, 3, 1, false))
    assert.matches("RandomSampler:indices: use sampler:indices%(%)", err_of(data.RandomSampler(2).indices))
  end)
end)

describe("gpu.data.DataLoader with sampler and batch_sampler", function()
  local x = gpu.arange(1, 11):reshape(10, 1)
  local y = gpu.arange(1, 11)

  it("takes a sampler's order, arrays and datasets alike", function()
    local s = data.SubsetRandomSampler({ 2, 4, 6, 8, 10 }, { generator = gpu.random.Generator(3) })
    local loader = data.DataLoader(x, y, { batch_size = 2, sampler = s })
    assert.equal(3, #loader)
    local got = {}
    for xb, yb in loader do
      assert.same(yb:totable(), xb:reshape(-1):totable())
      for _, v in ipairs(yb:totable()) do got[#got + 1] = v end
    end
    assert.same({ 2, 4, 6, 8, 10 }, sorted(got))
    got = {}
    for _, yb in data.DataLoader(data.TensorDataset(x, y), { batch_size = 4, sampler = data.SequentialSampler(10) }) do
      for _, v in ipairs(yb:totable()) do got[#got + 1] = v end
    end
    assert.same(range(1, 10), got)
  end)

  it("takes a batch_sampler's lists as its batches, as torch's", function()
    local cat = data.ConcatDataset { data.TensorDataset(gpu.arange(10, 13)), data.TensorDataset(gpu.arange(20, 22)),
                                     data.TensorDataset(gpu.arange(30, 34)) }
    local got = {}
    for xb in data.DataLoader(cat, { batch_sampler = data.BatchSampler({ 9, 2, 4, 5, 1 }, 2, false) }) do
      got[#got + 1] = xb:totable()
    end
    assert.same(F.concat.loader, got)
    local loader = data.DataLoader(x, y, { batch_sampler = data.BatchSampler(data.SequentialSampler(10), 4, true) })
    assert.equal(2, #loader)
    got = {}
    for _, yb in loader do got[#got + 1] = yb:totable() end
    assert.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 } }, got)
  end)

  it("refuses conflicting options as PyTorch, and positions beyond the data", function()
    local s = data.SequentialSampler(10)
    assert.matches("sampler option is mutually exclusive with shuffle",
      err_of(data.DataLoader, x, y, { sampler = s, shuffle = true }))
    local b = data.BatchSampler(s, 2, false)
    for _, o in ipairs { { batch_size = 2 }, { shuffle = true }, { sampler = s }, { drop_last = true } } do
      o.batch_sampler = b
      assert.matches("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last",
        err_of(data.DataLoader, x, y, o))
    end
    assert.matches("mutually exclusive with sampler and batch_sampler",
      err_of(data.DataLoader, x, y, { sampler = s, distributed = true }))
    assert.matches("option 'sampler' must be a gpu.data sampler", err_of(data.DataLoader, x, y, { sampler = { 1, 2 } }))
    assert.matches("option 'batch_sampler' must be a gpu.data.BatchSampler",
      err_of(data.DataLoader, x, y, { batch_sampler = s }))
    assert.matches("the sampler gave position 11, but the data has 10 samples", err_of(function()
      for _ in data.DataLoader(x, y, { sampler = data.SequentialSampler(11) }) do end
    end))
    assert.matches("the batch_sampler gave position 12", err_of(function()
      for _ in data.DataLoader(data.TensorDataset(x), { batch_sampler = data.BatchSampler({ 12 }, 1, false) }) do end
    end))
  end)
end)

describe("gpu.data.IterableDataset", function()
  local function stream(n)
    return data.IterableDataset(function()
      local i = 0
      return function()
        i = i + 1
        if i <= n then return { gpu.full({ 2 }, i), i } end
      end
    end)
  end

  it("is batched in its order by a DataLoader, each loop a new pass", function()
    local loader = data.DataLoader(stream(5), { batch_size = 2 })
    for _ = 1, 2 do
      local got = {}
      for xb, yb in loader do
        assert.same({ yb.size, 2 }, xb.shape)
        got[#got + 1] = yb:totable()
      end
      assert.same({ { 1, 2 }, { 3, 4 }, { 5 } }, got)
    end
    local n = 0
    for _ in data.DataLoader(stream(5), { batch_size = 2, drop_last = true }) do n = n + 1 end
    assert.equal(2, n)
    assert.equal(5, #collect(stream(5):iter()))
  end)

  it("feeds fit, evaluate and predict until its stream ends (Keras's dataset of unknown length)", function()
    gpu.random.seed(2)
    local m = gpu.nn.Sequential { gpu.nn.Linear(2, 3) }
    m:compile { optimizer = "sgd", loss = "cross_entropy", metrics = { "accuracy" } }
    local labelled = data.IterableDataset(function()
      local i = 0
      return function()
        i = i + 1
        if i <= 10 then return { gpu.full({ 2 }, i / 10), gpu.array(i % 3 + 1, { dtype = "int64" }) } end
      end
    end)
    local loader = data.DataLoader(labelled, { batch_size = 4 })
    local hist = m:fit(loader, { epochs = 2, verbose = 0 })
    assert.equal(2, #hist.loss)
    local seen = 0
    local cb = gpu.nn.LambdaCallback { on_train_batch_end = function() seen = seen + 1 end }
    m:fit(loader, { epochs = 1, verbose = 0, callbacks = { cb } })
    assert.equal(3, seen)                                   -- 4 + 4 + 2 samples
    assert.equal(10, m:predict(loader).shape[1])
    assert.is_number(m:evaluate(loader).loss)
    m:fit(loader, { epochs = 1, verbose = 0, steps_per_epoch = 2 })
  end)

  it("refuses shuffle, samplers and a length, as PyTorch", function()
    assert.matches("DataLoader with IterableDataset: expected unspecified shuffle option",
      err_of(data.DataLoader, stream(2), { shuffle = true }))
    assert.matches("expected unspecified sampler option",
      err_of(data.DataLoader, stream(2), { sampler = data.SequentialSampler(2) }))
    assert.matches("expected unspecified batch_sampler option",
      err_of(data.DataLoader, stream(2), { batch_sampler = data.BatchSampler({ 1 }, 1, false) }))
    assert.matches("has no length", err_of(function() return #data.DataLoader(stream(2)) end))
    assert.matches("data.IterableDataset.*a function returning an iterator", err_of(data.IterableDataset, 3))
    assert.matches("not an iterator", err_of(function() data.IterableDataset(function() return 1 end):iter() end))
  end)
end)

describe("gpu.data.ConcatDataset", function()
  it("indexes across its datasets as torch's", function()
    local cat = data.ConcatDataset { data.TensorDataset(gpu.arange(10, 13)), data.TensorDataset(gpu.arange(20, 22)),
                                     { { gpu.array(30) }, { gpu.array(31) }, { gpu.array(32) }, { gpu.array(33) } } }
    assert.equal(9, #cat)
    assert.same(F.concat.sizes, cat.cumulative_sizes)
    local items = {}
    for i = 1, #cat do items[i] = cat:get(i)[1]:item() end
    assert.same(F.concat.items, items)
  end)

  it("misuse is an error naming the function", function()
    assert.matches("data.ConcatDataset.*non%-empty list", err_of(data.ConcatDataset, {}))
    assert.matches("data.ConcatDataset.*datasets%[2%]", err_of(data.ConcatDataset, { { 1 }, 3 }))
    assert.matches("does not support IterableDataset",
      err_of(data.ConcatDataset, { data.IterableDataset(function() return function() end end) }))
    assert.matches("ConcatDataset:get: index 4 is out of 1..3", err_of(function() data.ConcatDataset({ { 1, 2, 3 } }):get(4) end))
  end)
end)
