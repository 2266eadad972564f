-- spec/train_keras_spec.lua — fit's callbacks (order and effects, as
-- Keras's documentation describes them), model.stop_training, the Keras metrics (the
-- examples of Keras's metric docs), whole-model saving and nn.load_model.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn

local function model_xy(seed)
  gpu.random.seed(seed or 1)
  local m = nn.Sequential { nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1) }
  m:compile { optimizer = gpu.optim.SGD(m:parameters(), { lr = 0.01 }), loss = "mse" }
  local x = gpu.random.randn(16, 3)
  local y = x:sum(2, { keepdims = true })
  return m, x, y
end

-- a callback that puts logs[key] = seq[epoch] (the callbacks after it monitor key)
local function feeder(key, seq)
  return { on_epoch_end = function(_, epoch, logs) logs[key] = seq[epoch] end }
end

describe("train keras: callbacks", function()
  it("hooks run in Keras's order with 1-based epochs and batches, and see the logs", function()
    local m, x, y = model_xy()
    local calls = {}
    local rec = {}
    for _, hook in ipairs { "on_train_begin", "on_epoch_begin", "on_batch_begin", "on_batch_end", "on_epoch_end",
                            "on_train_end" } do
      rec[hook] = function(self, a, logs)
        assert.equal(m, self.model)
        calls[#calls + 1] = hook .. (type(a) == "number" and ("(" .. a .. ")") or "")
        if hook == "on_epoch_end" then
          assert.is_number(logs.loss); assert.is_number(logs.val_loss); assert.equal(0.01, logs.lr)
        elseif hook == "on_batch_end" then
          assert.is_number(logs.loss)
        end
      end
    end
    m:fit(x, y, { epochs = 2, batch_size = 6, verbose = 0, validation_split = 0.25, callbacks = { rec } })
    assert.same({ "on_train_begin", "on_epoch_begin(1)", "on_batch_begin(1)", "on_batch_end(1)", "on_batch_begin(2)",
      "on_batch_end(2)", "on_epoch_end(1)", "on_epoch_begin(2)", "on_batch_begin(1)", "on_batch_end(1)",
      "on_batch_begin(2)", "on_batch_end(2)", "on_epoch_end(2)", "on_train_end" }, calls)
  end)

  it("model.stop_training set in a hook ends fit after that batch", function()
    local m, x, y = model_xy()
    local batches = 0
    local h1 = m:fit(x, y, { epochs = 5, batch_size = 4, verbose = 0, callbacks = {
      { on_train_batch_end = function(self, b) batches = batches + 1; if b == 2 then self.model.stop_training = true end end } } })
    assert.equal(2, batches); assert.equal(1, #h1.loss)
    assert.is_true(m.stop_training)
    m:fit(x, y, { epochs = 1, verbose = 0 })                 -- a new fit starts again
    assert.is_false(m.stop_training)
  end)

  it("EarlyStopping stops after patience epochs without improvement by min_delta and restores the best weights", function()
    local m, x, y = model_xy()
    local es = nn.EarlyStopping { monitor = "score", patience = 2 }
    local hist = m:fit(x, y, { epochs = 10, verbose = 0, callbacks = { feeder("score", { 5, 4, 4.5, 4.2, 4.1, 3 }), es } })
    assert.equal(4, #hist.loss); assert.equal(4, es.stopped_epoch); assert.equal(4, es.best); assert.equal(2, es.best_epoch)
    es = nn.EarlyStopping { monitor = "score", patience = 2, min_delta = 0.5 }
    hist = m:fit(x, y, { epochs = 10, verbose = 0, callbacks = { feeder("score", { 5, 4.6, 4.4, 4.1, 4.0 }), es } })
    assert.equal(5, #hist.loss)             -- 4.4 is 0.6 better than 5 (best), 4.1 and 4.0 not 0.5 better than 4.4
    es = nn.EarlyStopping { monitor = "acc_like", patience = 1 }   -- "acc" in the name: mode max
    hist = m:fit(x, y, { epochs = 10, verbose = 0, callbacks = { feeder("acc_like", { 0.5, 0.6, 0.55, 0.7 }), es } })
    assert.equal(3, #hist.loss)
    -- restore_best_weights: the weights at the end of the best epoch
    local saved = {}
    local snap = { on_epoch_end = function(_, e) saved[e] = m[1].weight:copy() end }
    es = nn.EarlyStopping { monitor = "score", patience = 1, restore_best_weights = true }
    m:fit(x, y, { epochs = 10, verbose = 0, callbacks = { snap, feeder("score", { 3, 1, 2, 2 }), es } })
    assert.equal(3, es.stopped_epoch)
    h.assert_close(m[1].weight, saved[2], 0)
    assert.is_false(h.close(saved[3], saved[2], 0))
    h.fails({ "nn.EarlyStopping", "unknown option 'patiense'" }, nn.EarlyStopping, { patiense = 1 })
  end)

  it("ReduceLROnPlateau and LearningRateScheduler set the optimizer's lr as Keras's", function()
    local m, x, y = model_xy()
    local lrs = {}
    local rec = { on_epoch_end = function(_, e, logs) lrs[e] = m._keras.optimizer.lr end }
    m:fit(x, y, { epochs = 6, verbose = 0, callbacks = {
      feeder("score", { 1, 1, 1, 0.5, 0.5, 0.5 }), nn.ReduceLROnPlateau { monitor = "score", patience = 1, factor = 0.5 }, rec } })
    h.assert_close(lrs, { 0.01, 0.005, 0.0025, 0.0025, 0.00125, 0.000625 }, 1e-12)
    lrs = {}
    m:fit(x, y, { epochs = 3, verbose = 0, callbacks = { nn.LearningRateScheduler(function(e, lr) return lr * 0 + 0.1 * e end), rec } })
    h.assert_close(lrs, { 0.1, 0.2, 0.3 }, 1e-12)
    -- a model whose optimizer is made at its first batch takes the lr set before
    local lazy = nn.Sequential { nn.Dense(1) }
    lazy:compile { optimizer = "sgd", loss = "mse" }
    lazy:fit(x, y, { epochs = 1, verbose = 0, callbacks = { nn.LearningRateScheduler(function() return 0.5 end) } })
    assert.equal(0.5, lazy._keras.optimizer.lr)
    h.fails({ "LearningRateScheduler", "not a learning rate" }, m.fit, m, x, y,
      { verbose = 0, callbacks = { nn.LearningRateScheduler(function() return "x" end) } })
  end)

  it("LambdaCallback calls plain functions without self, as Keras's; misuse names the option", function()
    local m, x, y = model_xy()
    local seen = {}
    local cb = nn.LambdaCallback { on_train_begin = function(logs) seen[#seen + 1] = type(logs) end,
      on_epoch_end = function(epoch, logs) seen[#seen + 1] = ("%d:%s"):format(epoch, type(logs.loss)) end,
      on_train_batch_end = function(batch) seen.batches = batch end }
    m:fit(x, y, { epochs = 2, verbose = 0, batch_size = #x > 0 and x.shape[1] or 1, callbacks = { cb } })
    assert.same({ "table", "1:number", "2:number" }, { seen[1], seen[2], seen[3] })
    assert.equal(1, seen.batches)
    h.fails({ "nn.LambdaCallback", "unknown option 'on_epoch_ned'" }, nn.LambdaCallback, { on_epoch_ned = print })
    h.fails({ "nn.LambdaCallback", "option 'on_epoch_end' must be a function" }, nn.LambdaCallback, { on_epoch_end = 3 })
  end)

  it("CSVLogger writes a header and one row per epoch; TerminateOnNaN stops at a NaN loss", function()
    local m, x, y = model_xy()
    local dir, name = h.tmpdir()
    m:fit(x, y, { epochs = 2, verbose = 0, callbacks = { feeder("score", { 0.1, 0.25 }), nn.CSVLogger(name("log.csv")) } })
    local text = h.slurp(name("log.csv"))
    local lines = {}
    for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(3, #lines)
    assert.equal("epoch,loss,lr,score", lines[1])
    assert.truthy(lines[3]:match("^2,[%d%.e%-]+,0%.01,0%.25$"), lines[3])
    m:fit(x, y, { epochs = 1, verbose = 0, callbacks = { feeder("score", { 0.5 }), nn.CSVLogger(name("log.csv"), { append = true }) } })
    local n = 0
    for _ in h.slurp(name("log.csv")):gmatch("[^\n]+") do n = n + 1 end
    assert.equal(4, n)
    local xn = x:copy()
    xn[{ { 6, 6 } }] = 0 / 0
    local t = nn.TerminateOnNaN()
    local real_print = _G.print
    _G.print = function() end
    local ok, hist = pcall(m.fit, m, xn, y, { epochs = 3, batch_size = 4, shuffle = false, verbose = 0, callbacks = { t } })
    _G.print = real_print
    assert.is_true(ok, hist)
    assert.equal(2, t.terminated_at); assert.equal(1, #hist.loss)
    h.fails({ "Module:fit", "the loss is NaN" }, m.fit, m, xn, y, { batch_size = 4, shuffle = false, verbose = 0 })
    os.remove(name("log.csv")); os.remove(dir)
  end)

  it("ModelCheckpoint saves every epoch, or the best only, to a path with Keras's fields", function()
    local m, x, y = model_xy()
    local dir, name = h.tmpdir()
    local ck = nn.ModelCheckpoint(dir .. "/m-{epoch:02d}-{score:.2f}.safetensors", { monitor = "score", save_best_only = true })
    local weights = {}
    local snap = { on_epoch_end = function(_, e) weights[e] = m[1].weight:copy() end }
    m:fit(x, y, { epochs = 4, verbose = 0, callbacks = { snap, feeder("score", { 0.5, 0.25, 0.75, 0.125 }), ck } })
    for _, e in ipairs { 1, 2, 4 } do
      local f = io.open(("%s/m-%02d-%.2f.safetensors"):format(dir, e, ({ 0.5, 0.25, 0.75, 0.125 })[e]), "rb")
      assert.is_not_nil(f, "epoch " .. e); f:close()
    end
    assert.is_nil(io.open(dir .. "/m-03-0.75.safetensors", "rb"))
    assert.equal(dir .. "/m-04-0.12.safetensors", ck.last_path)      -- (as Python formats 0.125)
    local back = nn.load_model(ck.last_path)
    h.assert_close(back[1].weight, weights[4], 0)
    local w = nn.ModelCheckpoint { path = name("w.safetensors"), save_weights_only = true }
    m:fit(x, y, { epochs = 1, verbose = 0, validation_split = 0.25, callbacks = { w } })
    h.fails({ "holds no model" }, nn.load_model, name("w.safetensors"))
    h.fails({ "ModelCheckpoint", "{nope}" }, m.fit, m, x, y, { verbose = 0, callbacks = { nn.ModelCheckpoint(name("{nope}")) } })
  end)

  it("ModelCheckpoint's path fields: Python's nan and inf, clear errors for a width over 99 or NaN as an integer", function()
    local fmt = require("gpu.nn.callbacks").format_path
    assert.equal("m-007-nan-  -inf-1.234e+04", fmt("m-{epoch:03d}-{loss:.2f}-{acc:6.2f}-{n:.3e}", 7,
      { loss = 0 / 0, acc = -math.huge, n = 12345 }))
    h.fails({ "ModelCheckpoint: format {epoch:999d}: width and precision must be at most 99" }, fmt, "{epoch:999d}", 1, {})
    h.fails({ "ModelCheckpoint: format {loss:.100f}" }, fmt, "{loss:.100f}", 1, { loss = 1 })
    h.fails({ "ModelCheckpoint: the path's field {loss:d} needs an integer, got nan" }, fmt, "{loss:d}", 1, { loss = 0 / 0 })
    h.fails({ "ModelCheckpoint: unsupported format {loss:1.2.3f}" }, fmt, "{loss:1.2.3f}", 1, { loss = 1 })
    local m, x, y = model_xy()
    local dir = h.tmpdir()
    h.fails({ "ModelCheckpoint: format {epoch:999d}" }, m.fit, m, x, y,
      { verbose = 0, callbacks = { nn.ModelCheckpoint(dir .. "/m-{epoch:999d}.safetensors") } })
  end)

  it("refuses bad callbacks before training", function()
    local m, x, y = model_xy()
    local w = m[1].weight:copy()
    h.fails({ "Module:fit", "callbacks[1] has none of the hooks" }, m.fit, m, x, y, { callbacks = { {} } })
    h.fails({ "Module:fit", "callbacks[1].on_epoch_end is integer 3" }, m.fit, m, x, y, { callbacks = { { on_epoch_end = 3 } } })
    h.assert_close(m[1].weight, w, 0)
  end)
end)

describe("train keras: metrics (Keras's documented examples)", function()
  local function metric(name, pred, y)
    local m = nn.Sequential { nn.Identity() }
    m:compile { optimizer = "sgd", loss = function(p) return p:sum() * 0 end, metrics = { name } }
    return m:evaluate(gpu.array(pred), y)[name]
  end
  it("gives Keras's numbers", function()
    local tol = 1e-6
    assert.near(0.25, metric("mae", { { 1, 1 }, { 0, 0 } }, gpu.array { { 0, 1 }, { 0, 0 } }), tol)
    assert.near(0.25, metric("mse", { { 1, 1 }, { 0, 0 } }, gpu.array { { 0, 1 }, { 0, 0 } }), tol)
    assert.near(0.75, metric("binary_accuracy", { { 0.98 }, { 1 }, { 0 }, { 0.6 } }, gpu.array { { 1 }, { 1 }, { 0 }, { 0 } }), tol)
    assert.near(0.75, metric("binary_accuracy", { { 0.98 }, { 1 }, { 0 }, { 0.6 } }, gpu.array { 1, 1, 0, 0 }), tol)
    local p = { { 0.1, 0.9, 0.8 }, { 0.05, 0.95, 0 } }
    assert.near(0.5, metric("categorical_accuracy", p, gpu.array { { 0, 0, 1 }, { 0, 1, 0 } }), tol)
    assert.near(0.5, metric("sparse_categorical_accuracy", p, gpu.array({ 3, 2 }, { dtype = "int64" })), tol)
    assert.near(1.0, metric("top_k_categorical_accuracy", p, gpu.array { { 0, 0, 1 }, { 0, 1, 0 } }), tol)   -- k = 5
    assert.near(1.0, metric("sparse_top_k_categorical_accuracy", p, gpu.array({ 3, 2 }, { dtype = "int64" })), tol)
    local p4 = { { 0.1, 0.2, 0.3, 0.4, 0.5, 0.6 }, { 0.6, 0.5, 0.4, 0.3, 0.2, 0.1 } }
    assert.near(0.5, metric("sparse_top_k_categorical_accuracy", p4, gpu.array({ 1, 1 }, { dtype = "int64" })), tol)
    local mm = require "gpu.nn.metrics"
    assert.equal(1, mm.top_k(1)(gpu.array(p), gpu.array { { 0, 0, 1 }, { 0, 1, 0 } }):item())   -- Keras's k = 1 example: 0.5 of 2
    assert.equal(1, mm.sparse_top_k(1)(gpu.array(p), gpu.array({ 3, 2 }, { dtype = "int64" })):item())
    h.fails({ "mae", "differ in shape" }, metric, "mae", { { 1, 1 } }, gpu.array { { 1, 1, 1 } })
    h.fails({ "Module:compile", "unknown metric 'maee'; did you mean 'mae'?" }, metric, "maee", { 1 }, gpu.array { 1 })
  end)
end)

describe("train keras: whole-model saving", function()
  local dir, name = h.tmpdir()

  it("save / load_model: every layer of main, weights, tied modules, optimizer and compile settings", function()
    gpu.random.seed(3)
    local shared = nn.Linear(6, 6)
    local m = nn.Sequential { nn.Conv2d(1, 2, 3, { padding = 1 }), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2),
      nn.AvgPool2d(1), nn.Flatten(), nn.Dense(6, "tanh"), shared, nn.LeakyReLU(0.2), shared, nn.Dropout(0.0),
      nn.Linear(6, 3, { bias = false }), nn.Softmax() }
    m:compile { optimizer = "adam", loss = "categorical_crossentropy", metrics = { "accuracy", "mae" } }
    local x = gpu.random.randn(8, 1, 4, 4)
    local y = nn.one_hot(gpu.random.randint(1, 3, { 8 }), 3)
    m:fit(x, y, { epochs = 2, batch_size = 4, verbose = 0, shuffle = false })
    m:save(name("m.safetensors"))
    local m2, opt = nn.load_model(name("m.safetensors"))
    assert.equal(13, #m2)
    assert.equal(m2[8], m2[10])                                   -- one module again
    assert.equal("Adam", getmetatable(opt).__name); assert.equal(4, opt.step_count)
    assert.equal(m2._keras.optimizer, opt)
    m:eval(); m2:eval()
    h.assert_close(m2(x), m(x), 0)
    m:train(); m2:train()
    m:fit(x, y, { epochs = 1, batch_size = 4, verbose = 0, shuffle = false })
    m2:fit(x, y, { epochs = 1, batch_size = 4, verbose = 0, shuffle = false })
    h.assert_close(m2[12].weight, m[12].weight, 1e-6)             -- the optimizer's state went along
    -- model:load reads the weights of a whole-model file too
    local m3 = nn.load_model(name("m.safetensors"), { compile = false })
    assert.is_nil(rawget(m3, "_keras"))
    m3[12].weight:detach():fill_(0)
    h.assert_close(m3[12].weight, gpu.zeros(3, 6), 0)
    m3:load(name("m.safetensors"))
    assert.is_false(h.close(m3[12].weight, gpu.zeros(3, 6), 0))
    -- Embedding and BatchNorm1d with options
    local e = nn.Sequential { nn.Embedding(10, 4, { padding_idx = 1 }), nn.Flatten(), nn.BatchNorm1d(8, { momentum = 0.2 }) }
    e:save(name("e.safetensors"))
    local e2 = nn.load_model(name("e.safetensors"))
    local ids = gpu.array({ { 1, 2 }, { 3, 4 } }, { dtype = "int64" })
    e:eval(); e2:eval()
    h.assert_close(e2(ids), e(ids), 0)
  end)

  it("an optimizer over some of the parameters, in another order, is saved by the model's positions", function()
    local m = nn.Sequential { nn.Linear(2, 3), nn.Linear(3, 1) }
    local opt = gpu.optim.Adam({ { params = { m[2].weight } }, { params = { m[1].bias, m[1].weight }, lr = 0.1 } })
    m:compile { optimizer = opt, loss = "mse" }
    m:fit(gpu.ones(4, 2), gpu.ones(4, 1), { verbose = 0 })
    m:save(name("o.safetensors"))
    local m2, opt2 = nn.load_model(name("o.safetensors"))
    assert.equal(m2[2].weight, opt2.param_groups[1].params[1])
    assert.equal(m2[1].bias, opt2.param_groups[2].params[1]); assert.equal(m2[1].weight, opt2.param_groups[2].params[2])
    h.assert_close(opt2.state[3].exp_avg, opt.state[3].exp_avg, 0)
    local stray = gpu.optim.SGD({ gpu.ones(1):requires_grad() })
    h.fails({ "Module:save", "not a parameter of the model" }, m.save, m, name("x.safetensors"), { optimizer = stray })
  end)

  it("refuses a weights-only file, a newer format and an unknown layer, naming them", function()
    local m = nn.Sequential { nn.Linear(2, 2) }
    m:save_weights(name("w.safetensors"))
    h.fails({ "nn.load_model", "holds no model" }, nn.load_model, name("w.safetensors"))
    m:save(name("v.safetensors"))
    local t, meta = gpu.load_safetensors(name("v.safetensors"))
    meta.version = "99"
    gpu.save_safetensors(name("v99.safetensors"), t, meta)
    h.fails({ "nn.load_model", "newer gpulua (model format 99" }, nn.load_model, name("v99.safetensors"))
    meta.version = "1"
    meta.architecture = meta.architecture:gsub('"Linear"', '"FancyLayer"')
    gpu.save_safetensors(name("u.safetensors"), t, meta)
    h.fails({ "nn.load_model", "a layer 'FancyLayer' that this gpulua does not have" }, nn.load_model, name("u.safetensors"))
    meta.architecture = "{\"root\": 1, \"modules\": [{\"class\": \"Linear\", \"args\": [os.exit()]}]}"
    gpu.save_safetensors(name("j.safetensors"), t, meta)
    h.fails({ "nn.load_model", "not valid JSON" }, nn.load_model, name("j.safetensors"))
    -- a constructor argument that is a function: the weights are saved, and load_model says why it cannot rebuild
    local f = nn.Sequential { nn.Dense(2, function(z) return z end, { input_shape = { 2 } }) }
    f:save(name("f.safetensors"))
    h.fails({ "nn.load_model", "weights but no architecture", "is function" }, nn.load_model, name("f.safetensors"))
    local f2 = nn.Sequential { nn.Dense(2, function(z) return z end, { input_shape = { 2 } }) }
    f2:load(name("f.safetensors"))
    h.assert_close(f2[1].kernel, f[1].kernel, 0)
  end)

  it("a class made with nn.class joins by itself; get_config declares what its constructor needs", function()
    local Scale = nn.class("TrainSpecScale")
    function Scale:init(k, opts) self.k = k; self.bias_on = opts and opts.bias; self:register_parameter("w", gpu.ones(k)) end
    function Scale:forward(z) return z * self.w end
    local m = nn.Sequential { Scale(3, { bias = true }) }
    m[1].w:detach():fill_(2)
    m:save(name("s.safetensors"))
    local m2 = nn.load_model(name("s.safetensors"))
    assert.equal(3, m2[1].k); assert.is_true(m2[1].bias_on)
    h.assert_close(m2[1].w, { 2, 2, 2 })
    -- a layer made from a function keeps working by declaring its data
    local Fn = nn.class("TrainSpecFn")
    function Fn:init(name_of_fn) self.fn_name = type(name_of_fn) == "string" and name_of_fn or "relu" end
    function Fn:get_config() return { self.fn_name } end
    function Fn:forward(z) return z[self.fn_name](z) end
    local g = nn.Sequential { Fn(function() end) }
    g:save(name("g.safetensors"))
    assert.equal("relu", nn.load_model(name("g.safetensors"))[1].fn_name)
  end)
end)
