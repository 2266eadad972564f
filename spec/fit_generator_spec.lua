-- spec/fit_generator_spec.lua — Keras's fit, evaluate and predict over a generator (a
-- function, a callable table or a coroutine.wrap'ed function giving x, y per call and nil at the
-- end), steps_per_epoch over generators, arrays and loaders (Keras 2's rules: arrays one stream
-- of passes, loaders restarted each epoch, generators never restarted), validation_data as a
-- generator with validation_steps, evaluate/predict with steps, what callbacks and the progress
-- line see, and the errors (lua/gpu/nn/fit_data.lua, training.lua).
local h = require "spec.helper"
local gpu = h.gpu
local nn, data = gpu.nn, gpu.data
local P = nn._progress

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
  m(gpu.ones({ 1, 5 }, { dtype = "float32" }))
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

-- rows s..e of x and y
local function rows(x, y, s, e) return x[{ { s, e } }], y and y[{ { s, e } }] end

-- passes(x, y, bs [, n]): a generator of the batches of x, y in order, returning nil after
-- each pass and starting again after it (n passes, then nil for good; n nil: no end)
local function passes(x, y, bs, n)
  local N, s, done = x.shape[1], 1, 0
  return function()
    if n and done >= n then return nil end
    if s > N then s, done = 1, done + 1; return nil end
    local e = math.min(N, s + bs - 1)
    local xb, yb = rows(x, y, s, e)
    s = e + 1
    return xb, yb
  end
end

-- stream(x, y, bs): an endless generator of x, y's batches, pass after pass (no nil)
local function stream(x, y, bs)
  local g = passes(x, y, bs)
  return function()
    local xb, yb = g()
    if xb == nil then xb, yb = g() end
    return xb, yb
  end
end

-- stderr(fn): what fn writes to io.stderr, and fn's results
local function stderr(fn, ...)
  local out, real = {}, io.stderr
  io.stderr = { write = function(_, ...) for _, v in ipairs { ... } do out[#out + 1] = tostring(v) end end }  -- luacheck: ignore
  local res = table.pack(pcall(fn, ...))
  io.stderr = real                                                                                             -- luacheck: ignore
  if not res[1] then error(res[2], 0) end
  return table.concat(out), table.unpack(res, 2, res.n)
end

-- stdout(fn): what fn writes through io.write
local function stdout(fn, ...)
  local out, real = {}, io.write
  io.write = function(...) for _, v in ipairs { ... } do out[#out + 1] = tostring(v) end end                     -- luacheck: ignore
  local ok, err = pcall(fn, ...)
  io.write = real                                                                                               -- luacheck: ignore
  assert(ok, err)
  return table.concat(out)
end

describe("fit over a generator", function()
  local x, y = problem(40)
  local xv, yv = x[{ { 1, 12 } }], y[{ { 1, 12 } }]
  local arrays = { epochs = 3, batch_size = 8, shuffle = false, verbose = 0 }

  it("a function, a callable table and a coroutine give the arrays' numbers (one pass per epoch until nil)", function()
    local ref = model()
    local hr = ref:fit(x, y, arrays)
    local a = model()
    same_history(hr, a:fit(passes(x, y, 8), nil, { epochs = 3, verbose = 0 }), 1e-6)
    same_weights(ref, a, 1e-6)
    -- a callable table, options in y's place
    local b = model()
    local g = passes(x, y, 8)
    same_history(hr, b:fit(setmetatable({}, { __call = function() return g() end }), { epochs = 3, verbose = 0 }), 1e-6)
    same_weights(ref, b, 1e-6)
    -- a coroutine.wrap'ed endless generator with steps_per_epoch; {x, y} pairs
    local c = model()
    local co = coroutine.wrap(function()
      while true do
        for s = 1, 40, 8 do coroutine.yield { rows(x, y, s, s + 7) } end
      end
    end)
    same_history(hr, c:fit(co, nil, { epochs = 3, steps_per_epoch = 5, verbose = 0 }), 1e-6)
    same_weights(ref, c, 1e-6)
  end)

  it("steps_per_epoch takes the next batches of the stream (never restarted)", function()
    -- 3 steps per epoch from an endless stream of 5-batch passes: the arrays' stream with
    -- steps_per_epoch = 3 (Keras's rule for arrays) takes the same batches
    local a, b = model(), model()
    local ha = a:fit(stream(x, y, 8), nil, { epochs = 4, steps_per_epoch = 3, verbose = 0 })
    local hb = b:fit(x, y, { epochs = 4, steps_per_epoch = 3, batch_size = 8, shuffle = false, verbose = 0 })
    assert.equal(4, #ha.loss)
    same_history(ha, hb, 1e-6)
    same_weights(a, b, 1e-6)
    -- not the arrays restarted at each epoch
    local c = model()
    local g = passes(x[{ { 1, 24 } }], y[{ { 1, 24 } }], 8)       -- 3 batches, then nil, then again
    c:fit(g, nil, { epochs = 4, verbose = 0 })
    assert.is_false((h.close(c:parameters()[1], a:parameters()[1], 1e-6)))
  end)

  it("ends with Keras's warning when a generator runs out before steps_per_epoch x epochs", function()
    local function of(n)
      return coroutine.wrap(function() for s = 1, n do coroutine.yield(rows(x, y, (s - 1) % 5 * 8 + 1, (s - 1) % 5 * 8 + 8)) end end)
    end
    local m = model()
    local err, hist = stderr(m.fit, m, of(7), nil, { epochs = 3, steps_per_epoch = 3, verbose = 0 })
    assert.equal(3, #hist.loss)                              -- the third epoch had one batch
    assert.matches("Module:fit: the input ran out of data; interrupting training", err, 1, true)
    assert.matches("steps_per_epoch x epochs = 3 x 3 = 9 batches", err, 1, true)
    local m2 = model()
    local err2, hist2 = stderr(m2.fit, m2, of(6), nil, { epochs = 3, steps_per_epoch = 3, verbose = 0 })
    assert.equal(2, #hist2.loss)                             -- no third epoch: nothing was left for it
    assert.matches("ran out of data", err2, 1, true)
    -- an exact supply: no warning
    local m3 = model()
    local err3 = stderr(m3.fit, m3, of(9), nil, { epochs = 3, steps_per_epoch = 3, verbose = 0 })
    assert.equal("", err3)
  end)

  it("without steps_per_epoch, a generator that does not start again is an error naming the option", function()
    local m = model()
    local one = coroutine.wrap(function() for s = 1, 40, 8 do coroutine.yield(rows(x, y, s, s + 7)) end end)
    h.fails({ "Module:fit", "no batch for epoch 2", "epoch 1's 5 batches", "steps_per_epoch" }, m.fit, m, one, nil,
      { epochs = 2, verbose = 0 })
    -- one epoch of it is fine
    local m2 = model()
    local once = coroutine.wrap(function() for s = 1, 40, 8 do coroutine.yield(rows(x, y, s, s + 7)) end end)
    assert.equal(1, #m2:fit(once, nil, { verbose = 0 }).loss)
  end)

  it("takes validation_data as a generator, with or without validation_steps", function()
    local ref = model()
    local hr = ref:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0, validation_data = { xv, yv } })
    local a = model()
    local ha = a:fit(passes(x, y, 8), nil, { epochs = 2, verbose = 0, validation_data = passes(xv, yv, 256) })
    same_history(hr, ha, 1e-6)
    assert.equal(2, #ha.val_loss)
    local b = model()
    local hb = b:fit(stream(x, y, 8), nil, { epochs = 2, steps_per_epoch = 5, verbose = 0,
      validation_data = stream(xv, yv, 6), validation_steps = 2 })
    same_history(hr, hb, 1e-6)
    -- validation_steps over arrays and a loader: their first batches
    local c = model()
    local hc = c:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0, validation_data = { x, y },
      validation_steps = 1 })                          -- the first 256 rows: all 40
    local d = model()
    local hd = d:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0,
      validation_data = data.DataLoader(xv, yv, { batch_size = 6 }), validation_steps = 2 })
    same_history(hr, hd, 1e-6)
    assert.is_true(math.abs(hc.val_loss[2] - c:evaluate(x, y).loss) < 1e-6)
    -- a one-shot validation generator without validation_steps: the second epoch's validation
    local e = model()
    local once = coroutine.wrap(function() coroutine.yield(xv, yv) end)
    h.fails({ "Module:fit (validation_data)", "the generator gave no batches for epoch 2's validation",
      "validation_steps" }, e.fit, e, x, y, { epochs = 2, verbose = 0, validation_data = once })
  end)

  it("evaluate and predict take a generator, with steps", function()
    local m = model()
    m:fit(x, y, { epochs = 1, verbose = 0 })
    local e = m:evaluate(x, y, { batch_size = 8 })
    local r = m:evaluate(passes(x, y, 8), { steps = 5 })
    assert.is_true(math.abs(r.loss - e.loss) < 1e-6)
    assert.is_true(math.abs(r.accuracy - e.accuracy) < 1e-9)
    local r2 = m:evaluate(passes(x, y, 7))                  -- until nil
    assert.is_true(math.abs(r2.loss - e.loss) < 1e-6)
    -- steps: the first batches only (arrays and loaders), the next ones (a generator)
    local e16 = m:evaluate(x[{ { 1, 16 } }], y[{ { 1, 16 } }])
    h.assert_close(m:evaluate(x, y, { batch_size = 8, steps = 2 }).loss, e16.loss, 1e-6)
    h.assert_close(m:evaluate(data.DataLoader(x, y, { batch_size = 8 }), nil, { steps = 2 }).loss, e16.loss, 1e-6)
    local g = stream(x, y, 8)
    m:evaluate(g, { steps = 3 })
    local e4 = m:evaluate(x[{ { 25, 40 } }], y[{ { 25, 40 } }])
    h.assert_close(m:evaluate(g, { steps = 2 }).loss, e4.loss, 1e-6)
    -- more steps than batches: the ones there are, and Keras's warning
    local err, r3 = stderr(m.evaluate, m, passes(x, y, 8, 1), nil, { steps = 9 })
    assert.matches("Module:evaluate: the input ran out of data; interrupting the evaluation", err, 1, true)
    assert.matches("steps = 9 batches", err, 1, true)
    assert.is_true(math.abs(r3.loss - e.loss) < 1e-6)
    -- predict: the inputs of x or x, y batches
    local p = m:predict(x)
    h.assert_close(m:predict(passes(x, nil, 8)), p, 1e-6)
    h.assert_close(m:predict(passes(x, y, 16)), p, 1e-6)
    h.assert_close(m:predict(stream(x, y, 8), { steps = 2 }), p[{ { 1, 16 } }], 1e-6)
    h.assert_close(m:predict(x, { batch_size = 8, steps = 2 }), p[{ { 1, 16 } }], 1e-6)
    local perr = stderr(m.predict, m, passes(x, nil, 8, 1), { steps = 6 })
    assert.matches("Module:predict: the input ran out of data", perr, 1, true)
  end)
end)

describe("steps_per_epoch over arrays and loaders", function()
  local x, y = problem(40)

  it("arrays: one stream of `epochs` passes, batch size ceil(n / steps) by default", function()
    local a, b = model(), model()
    a:fit(x, y, { epochs = 2, steps_per_epoch = 4, shuffle = false, verbose = 0 })     -- batches of 10
    b:fit(x, y, { epochs = 2, batch_size = 10, shuffle = false, verbose = 0 })
    same_weights(a, b, 1e-6)
    -- 6 steps of 8 from two passes of 5 batches: the second epoch ends after 4, with the warning
    local m = model()
    local cb = { steps = {}, on_epoch_end = function(self, e) self.steps[e] = self.n end,
                 on_epoch_begin = function(self) self.n = 0 end, on_train_batch_end = function(self) self.n = self.n + 1 end }
    local err, hist = stderr(m.fit, m, x, y, { epochs = 2, steps_per_epoch = 6, batch_size = 8, verbose = 0,
      callbacks = { cb } })
    assert.same({ 6, 4 }, cb.steps)
    assert.equal(2, #hist.loss)
    assert.matches("steps_per_epoch x epochs = 6 x 2 = 12 batches", err, 1, true)
    -- a stream used up by the first epoch: no second one
    local m2 = model()
    local err2, hist2 = stderr(m2.fit, m2, x, y, { epochs = 2, steps_per_epoch = 10, batch_size = 8, verbose = 0 })
    assert.equal(1, #hist2.loss)
    assert.matches("ran out of data", err2, 1, true)
    -- shuffled passes still give each sample once per pass
    local seen = 0
    local m3 = model()
    m3:fit(x, y, { epochs = 3, steps_per_epoch = 3, batch_size = 8, verbose = 0, callbacks = {
      { on_train_batch_end = function() seen = seen + 1 end } } })
    assert.equal(9, seen)
  end)

  it("a DataLoader or a Dataset starts again each epoch and gives its first steps_per_epoch batches", function()
    local a, b = model(), model()
    local loader = data.DataLoader(data.TensorDataset(x, y), { batch_size = 8 })
    local ha = a:fit(loader, nil, { epochs = 3, steps_per_epoch = 2, verbose = 0 })
    local hb = b:fit(x[{ { 1, 16 } }], y[{ { 1, 16 } }], { epochs = 3, batch_size = 8, shuffle = false, verbose = 0 })
    same_history(ha, hb, 1e-6)
    same_weights(a, b, 1e-6)
    local c = model()
    same_history(hb, c:fit(data.TensorDataset(x, y), { epochs = 3, batch_size = 8, shuffle = false, steps_per_epoch = 2,
      verbose = 0 }), 1e-6)
    -- more steps than the loader has: the epoch ends at its end, and fit with Keras's warning
    local d = model()
    local err, hd = stderr(d.fit, d, loader, nil, { epochs = 3, steps_per_epoch = 7, verbose = 0 })
    assert.equal(1, #hd.loss)
    assert.matches("steps_per_epoch x epochs = 7 x 3 = 21 batches", err, 1, true)
  end)
end)

describe("fit's callbacks and progress over steps", function()
  local x, y = problem(40)

  it("callbacks get Keras's params and the batches of each epoch counted from 1", function()
    local log = {}
    local cb = {
      on_train_begin = function(self) log.params = self.params end,
      on_train_batch_end = function(_, b) log[#log + 1] = b end,
    }
    local m = model()
    m:fit(stream(x, y, 8), nil, { epochs = 2, steps_per_epoch = 3, verbose = 0, callbacks = { cb } })
    assert.same({ epochs = 2, steps = 3, verbose = 0 }, log.params)
    assert.same({ 1, 2, 3, 1, 2, 3 }, { table.unpack(log, 1, 6) })
    log = {}
    m:fit(passes(x, y, 16), nil, { epochs = 2, verbose = 0, callbacks = { cb } })
    assert.same({ epochs = 2, verbose = 0 }, log.params)           -- steps not known
    assert.same({ 1, 2, 3, 1, 2, 3 }, { table.unpack(log, 1, 6) })
    log = {}
    m:fit(x, y, { epochs = 1, batch_size = 16, verbose = 0, callbacks = { cb } })
    assert.same({ epochs = 1, steps = 3, verbose = 0 }, log.params)
  end)

  it("the epoch lines count the steps taken; a bar of unknown total shows n/Unknown", function()
    local m = model()
    local out = stdout(m.fit, m, stream(x, y, 8), nil, { epochs = 2, steps_per_epoch = 3, verbose = 2 })
    assert.matches("Epoch 1/2 %- 3/3 ", out)
    assert.matches("Epoch 2/2 %- 3/3 ", out)
    out = stdout(m.fit, m, passes(x, y, 16), nil, { epochs = 1, verbose = 2 })
    assert.matches("Epoch 1/1 %- 3/3 ", out)
    assert.matches("^ *7/Unknown %- 1%.2s 171ms/step %- loss: 0%.5000$", P.line(7, nil, 1.2, { { "loss", 0.5 } }, 80, true))
    assert.matches("^ *7/Unknown", P.line(7, 5, 1.2, { { "loss", 0.5 } }))           -- past the estimate
    assert.matches("^3/5 %[", P.line(3, 5, 1.2, { { "loss", 0.5 } }, 80, true))
    -- an epoch the data ended early: its steps of the total, and its time
    assert.matches("Epoch 3/3 %- 1/3 %- 0%.5s 500ms/step %- loss", P.plain_line(3, 3, 1, 0.5, { { "loss", 0.5 } }, 3))
  end)
end)

describe("fit over a generator: misuse", function()
  local x, y = problem(40)

  it("refuses bad batches and options with errors naming the call", function()
    local m = model()
    local w0 = m:parameters()[1]:copy()
    local function gen(...)
      local v = table.pack(...)
      return function() return table.unpack(v, 1, v.n) end
    end
    h.fails({ "Module:fit", "the generator's batch 1 holds 'x' as its inputs, not an array",
      "a generator returns x, y [, sample_weight] per call" }, m.fit, m, gen("x", y), nil, { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:fit", "the generator's batch 1 has no targets" }, m.fit, m, gen(x), nil,
      { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:fit", "the generator's batch 1 holds integer 3 as its targets, not an array" }, m.fit, m, gen(x, 3),
      nil, { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:fit", "batch 1 has (40, 5) inputs and (12) targets" }, m.fit, m, gen(x, y[{ { 1, 12 } }]), nil,
      { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:fit", "batch 1 has sample weights of shape (39) for 40 samples" }, m.fit, m,
      gen(x, y, gpu.ones(39)), nil, { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:fit", "the generator gave no batches (it returned nil at its first call)" }, m.fit, m,
      function() return nil end, nil, { verbose = 0 })
    h.fails({ "bad argument #2 to 'Module:fit'", "option 'steps_per_epoch' must be >= 1, got integer 0" }, m.fit, m,
      gen(x, y), { steps_per_epoch = 0 })
    h.fails({ "bad argument #3 to 'Module:fit'", "option 'steps_per_epoch' must be an integer, got number 1.5" }, m.fit, m, x, y,
      { steps_per_epoch = 1.5 })
    h.fails({ "Module:fit", "option 'validation_steps' must be >= 1" }, m.fit, m, gen(x, y), nil,
      { steps_per_epoch = 1, validation_data = gen(x, y), validation_steps = 0 })
    h.fails({ "Module:fit", "validation_steps needs validation_data" }, m.fit, m, x, y, { validation_steps = 2 })
    h.fails({ "Module:fit", "validation_split needs arrays x, y" }, m.fit, m, gen(x, y), nil,
      { steps_per_epoch = 1, validation_split = 0.2 })
    h.fails({ "Module:fit", "distributed = true takes arrays, a DataLoader or a Dataset, not a generator" }, m.fit, m,
      gen(x, y), nil, { steps_per_epoch = 1, distributed = true })
    h.fails({ "bad argument #2 to 'Module:fit'", "y must be nil when x is a DataLoader, a Dataset or a generator" },
      m.fit, m, gen(x, y), y)
    h.fails({ "Module:fit", "validation_data", "must be {x_val, y_val}, a DataLoader, a Dataset or a generator" },
      m.fit, m, x, y, { validation_data = { x }, verbose = 0 })
    h.fails({ "Module:evaluate", "option 'steps' must be >= 1" }, m.evaluate, m, gen(x, y), { steps = 0 })
    h.fails({ "Module:evaluate", "the generator gave no batches" }, m.evaluate, m, function() end)
    h.fails({ "Module:evaluate", "distributed = true takes arrays" }, m.evaluate, m, gen(x, y), { distributed = true })
    h.fails({ "Module:predict", "the generator gave no batches" }, m.predict, m, function() end)
    h.fails({ "Module:predict", "the generator's batch 1 is a 0-d array" }, m.predict, m, gen(gpu.array(1.5)))
    h.fails({ "Module:predict", "not a DataLoader, a Dataset or a generator" }, m.predict, m, gen(x),
      { distributed = true })
    -- nothing trained by the refused calls
    h.assert_close(m:parameters()[1], w0, 0)
    -- a generator that raises is named with its batch (the first batch trained)
    local k = 0
    h.fails({ "Module:fit", "the generator failed at its batch 2", "boom" }, m.fit, m, function()
      k = k + 1
      if k == 2 then error("boom") end
      return x, y
    end, nil, { steps_per_epoch = 3, verbose = 0 })
  end)
end)
