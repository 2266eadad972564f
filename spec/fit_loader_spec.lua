-- spec/fit_loader_spec.lua — Keras's fit, evaluate and predict over a gpu.data.DataLoader or a
-- Dataset (lua/gpu/nn/fit_data.lua): the same numbers as over the arrays (same seed, no
-- shuffle), validation data as a loader or dataset, callbacks and metrics, distributed = true
-- in a world of one, and the errors naming fit.
local h = require "spec.helper"
local gpu = h.gpu
local nn, data = gpu.nn, gpu.data

local function problem(n)
  gpu.random.seed(31)
  local x = gpu.random.randn(n, 5):astype("float32")
  local y = gpu.random.randint(1, 3, { n }, { dtype = "int64" })
  return x, y
end

local function model(seed)
  gpu.random.seed(seed or 7)
  local m = nn.Sequential { nn.Dense(8, { activation = "relu", input_shape = { 5 } }), nn.Dense(3, { activation = "softmax" }) }
  m:compile { optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
  m(gpu.ones({ 1, 5 }, { dtype = "float32" }))          -- builds the second layer now, from seed 7
  return m
end

local function same_weights(a, b, tol)
  local pa, pb = a:parameters(), b:parameters()
  assert.equal(#pa, #pb)
  for i = 1, #pa do h.assert_close(pa[i], pb[i], tol) end
end

local function same_history(a, b, tol)
  for _, name in ipairs { "loss", "accuracy", "val_loss", "val_accuracy" } do
    assert.equal(a[name] == nil, b[name] == nil, name)
    if a[name] then
      assert.equal(#a[name], #b[name], name)
      for e = 1, #a[name] do assert.is_true(math.abs(a[name][e] - b[name][e]) <= tol, name .. " epoch " .. e) end
    end
  end
end

-- a dataset of the protocol only: # and get(i) -> {x_i, y_i} (a row and a Lua integer)
local function plain_dataset(x, y)
  local ds = {}
  function ds:get(i) return { x[i], y[i] } end
  return setmetatable(ds, { __len = function() return x.shape[1] end })
end

describe("fit over a Dataset or a DataLoader", function()
  local x, y = problem(40)
  local xv, yv = x[{ { 1, 12 } }], y[{ { 1, 12 } }]
  local o = { epochs = 3, batch_size = 8, shuffle = false, verbose = 0 }

  it("a TensorDataset gives the arrays' numbers (no shuffle, same seed)", function()
    local a, b = model(), model()
    local ha = a:fit(x, y, o)
    local hb = b:fit(data.TensorDataset(x, y), nil, o)
    same_history(ha, hb, 1e-6)
    same_weights(a, b, 1e-6)
  end)

  it("a DataLoader (its own batch size) and a protocol-only dataset give the same numbers", function()
    local a, b, c = model(), model(), model()
    local ha = a:fit(x, y, o)
    local hb = b:fit(data.DataLoader(data.TensorDataset(x, y), { batch_size = 8 }), nil,
      { epochs = 3, batch_size = 1000, verbose = 0 })     -- the loader's batch size wins
    local hc = c:fit(plain_dataset(x, y), nil, o)
    same_history(ha, hb, 1e-6)
    same_history(ha, hc, 1e-6)
    same_weights(a, b, 1e-6)
    same_weights(a, c, 1e-6)
    -- an (x, y) DataLoader over arrays too
    local d = model()
    same_history(ha, d:fit(data.DataLoader(x, y, { batch_size = 8 }), nil, { epochs = 3, verbose = 0 }), 1e-6)
  end)

  it("takes validation_data as a dataset or a loader; evaluate and predict take them too", function()
    local a, b, c = model(), model(), model()
    local ha = a:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0, validation_data = { xv, yv } })
    local hb = b:fit(data.TensorDataset(x, y), nil,
      { epochs = 2, batch_size = 8, shuffle = false, verbose = 0, validation_data = data.TensorDataset(xv, yv) })
    local hc = c:fit(data.TensorDataset(x, y), nil, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0,
      validation_data = data.DataLoader(xv, yv, { batch_size = 5 }) })
    same_history(ha, hb, 1e-6)
    same_history(ha, hc, 1e-6)
    assert.equal(2, #hb.val_loss)
    local e = a:evaluate(x, y)
    for _, src in ipairs { data.TensorDataset(x, y), data.DataLoader(x, y, { batch_size = 7 }), plain_dataset(x, y) } do
      local r = a:evaluate(src)
      assert.is_true(math.abs(r.loss - e.loss) < 1e-6)
      assert.is_true(math.abs(r.accuracy - e.accuracy) < 1e-9)
    end
    local p = a:predict(x)
    h.assert_close(a:predict(data.TensorDataset(x, y)), p, 1e-6)
    h.assert_close(a:predict(data.DataLoader(x, nil, { batch_size = 9 })), p, 1e-6)
    h.assert_close(a:predict(data.TensorDataset(x), { batch_size = 4 }), p, 1e-6)
  end)

  it("runs callbacks per batch and epoch, shuffles when asked, and keeps the metrics", function()
    local m = model()
    local log = { batches = 0, epochs = {} }
    local cb = {
      on_train_batch_end = function(_, _, logs) log.batches = log.batches + 1; assert.is_number(logs.loss) end,
      on_epoch_end = function(_, e, logs) log.epochs[e] = logs.accuracy end,
    }
    local loader = data.DataLoader(data.TensorDataset(x, y), { batch_size = 6, shuffle = true })
    local hist = m:fit(loader, nil, { epochs = 2, verbose = 0, callbacks = { cb } })
    assert.equal(2 * #loader, log.batches)        -- 7 batches of up to 6 from 40 samples
    assert.equal(7, #loader)
    assert.equal(2, #hist.accuracy)
    assert.equal(hist.accuracy[2], log.epochs[2])
    assert.is_true(hist.accuracy[1] >= 0 and hist.accuracy[1] <= 1)
  end)

  it("prints the progress over the loader's steps", function()
    local m = model()
    local out = {}
    local real = io.write
    io.write = function(...) for _, v in ipairs { ... } do out[#out + 1] = tostring(v) end end  -- luacheck: ignore
    local ok, err = pcall(m.fit, m, data.TensorDataset(x, y), nil, { epochs = 1, batch_size = 16, verbose = 2 })
    io.write = real                                                                           -- luacheck: ignore
    assert(ok, err)
    assert.matches("Epoch 1/1 %- 3/3 ", table.concat(out))
  end)

  it("with distributed = true, makes the loader's sampler distributed (a world of one: the same numbers)", function()
    gpu.distributed.init { timeout = 60 }
    if gpu.distributed.world_size() ~= 1 then return end
    local a, b = model(), model()
    local ha = a:fit(x, y, { epochs = 3, batch_size = 8, shuffle = false, verbose = 0, validation_data = { xv, yv } })
    local hb = b:fit(data.DataLoader(data.TensorDataset(x, y), { batch_size = 8 }), nil,
      { epochs = 3, verbose = 0, distributed = true, validation_data = data.TensorDataset(xv, yv) })
    same_history(ha, hb, 1e-6)
    same_weights(a, b, 1e-6)
    local e, e1 = a:evaluate(data.TensorDataset(x, y), nil, { distributed = true }), a:evaluate(x, y)
    assert.is_true(math.abs(e.loss - e1.loss) < 1e-6)
    -- a dataset DataLoader takes distributed = true itself now
    local dl = data.DataLoader(data.TensorDataset(x, y), { batch_size = 8, distributed = true, shuffle = false })
    assert.equal(5, #dl)
    local n = 0
    for xb in dl do n = n + xb.shape[1] end
    assert.equal(40, n)
    -- a loader shuffling with its own generator cannot take a DistributedSampler
    local gl = data.DataLoader(data.TensorDataset(x, y), { batch_size = 8, shuffle = true, generator = gpu.random.Generator(1) })
    h.fails({ "Module:fit", "distributed = true cannot take this DataLoader", "generator" }, b.fit, b, gl, nil,
      { epochs = 1, verbose = 0, distributed = true })
    h.fails({ "Module:predict", "distributed = true takes an array x" }, b.predict, b, data.TensorDataset(x),
      { distributed = true })
  end)

  it("refuses misuse with errors naming fit, evaluate and predict", function()
    local m = model()
    local ds = data.TensorDataset(x, y)
    local w0 = m:parameters()[1]:copy()
    h.fails({ "bad argument #2 to 'Module:fit'", "y must be nil when x is a DataLoader, a Dataset or a generator" }, m.fit, m, ds, y)
    h.fails({ "bad argument #2 to 'Module:evaluate'", "y must be nil" }, m.evaluate, m, ds, y)
    h.fails({ "Module:fit", "validation_split needs arrays x, y" }, m.fit, m, ds, nil, { validation_split = 0.2, verbose = 0 })
    h.fails({ "Module:fit", "validation_data", "must be {x_val, y_val}, a DataLoader, a Dataset or a generator" }, m.fit, m, x, y,
      { validation_data = { xv }, verbose = 0 })
    h.fails({ "bad argument #1 to 'Module:fit'", "the dataset has no samples" }, m.fit, m, { a = 1 }, nil, { verbose = 0 })
    h.fails({ "bad argument #1 to 'Module:fit'", "the dataset has no length" }, m.fit, m,
      setmetatable({}, { __len = function() return "x" end }), nil, { verbose = 0 })
    h.fails({ "bad argument #1 to 'Module:evaluate'", "the loader has no samples" }, m.evaluate, m,
      data.DataLoader(gpu.ones(0, 5), gpu.ones(0)))
    -- samples without targets, targets that are no arrays, items that are missing or cannot be stacked
    h.fails({ "Module:fit", "batch 1 has no targets" }, m.fit, m, data.TensorDataset(x), nil, { verbose = 0 })
    local strings = setmetatable({ get = function(_, i) return { x[i], "label" } end }, { __len = function() return 4 end })
    h.fails({ "Module:fit", "batch 1 failed", "default_collate" }, m.fit, m, strings, nil, { verbose = 0 })
    local holes = setmetatable({ get = function(_, i) if i < 3 then return { x[i], 1 } end end },
      { __len = function() return 4 end })
    h.fails({ "Module:fit", "batch 1 failed", "is nil (a dataset's items are 1..#ds)" }, m.fit, m, holes, nil, { verbose = 0, batch_size = 4 })
    local short = data.DataLoader(ds, { batch_size = 4, collate_fn = function(samples)
      local xs = {}
      for i, sm in ipairs(samples) do xs[i] = sm[1] end
      return { gpu.stack(xs, 1), gpu.ones({ 2 }, { dtype = "int64" }) }
    end })
    h.fails({ "Module:fit", "batch 1 has (4, 5) inputs and (2) targets" }, m.fit, m, short, nil, { verbose = 0 })
    local numbers = setmetatable({ get = function(_, i) return { i, 1 } end }, { __len = function() return 4 end })
    h.fails({ "Module:predict", "batch 1 is a 0-d array" }, m.predict, m,
      data.DataLoader(ds, { collate_fn = function() return gpu.array(1.5) end }))
    h.fails({ "Dense(8)", "expected input width 5" }, m.fit, m, numbers, nil, { verbose = 0 })   -- the model says it
    h.fails({ "Module:evaluate", "batch 1 has no targets" }, m.evaluate, m, data.TensorDataset(x))
    -- nothing changed by the refused calls
    h.assert_close(m:parameters()[1], w0, 0)
    assert.equal(40, #ds)
  end)
end)
