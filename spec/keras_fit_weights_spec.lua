-- keras_fit_weights_spec.lua — Keras's fit options against Keras 3 (spec/fixtures/
-- keras_fit_weights.py): sample_weight, class_weight, initial_epoch, validation_freq; an
-- optimizer made before the model's weights exist (gpu.optim.Adam{learning_rate = ...}) and
-- model.optimizer; trainable = false (trainable_weights, a frozen BatchNormalization).
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local F = require "spec.fixtures.keras_fit_weights"

local function arr(t, dt) return gpu.array(t, { dtype = dt or "float32" }) end
local x, y, yb, sw = arr(F.x), arr(F.y, "int64") + 1, arr(F.yb), arr(F.sw)

local function model(binary)
  local m = nn.Sequential { nn.Dense(binary and 1 or 3, { activation = binary and "sigmoid" or "softmax", input_shape = { 4 } }) }
  m:set_weights(binary and { arr(F.kb0), arr(F.bb0) } or { arr(F.k0), arr(F.b0) })
  m:compile { optimizer = gpu.optim.SGD { learning_rate = 0.1 },
              loss = binary and "binary_crossentropy" or "sparse_categorical_crossentropy" }
  return m
end

local function matches(name, m, hist)
  local c = F.cases[name]
  local w = m:get_weights()
  assert(h.close(w[1], arr(c.kernel), 2e-5))
  assert(h.close(w[2], arr(c.bias), 2e-5))
  assert.equal(#c.loss, #hist.loss)
  for i, v in ipairs(c.loss) do assert(math.abs(hist.loss[i] - v) < 2e-5 * math.max(1, math.abs(v)), name .. " loss " .. i) end
  assert.equal(#c.val_loss, hist.val_loss and #hist.val_loss or 0)
  for i, v in ipairs(c.val_loss) do assert(math.abs(hist.val_loss[i] - v) < 2e-5 * math.max(1, math.abs(v))) end
  assert.same(c.epoch, hist.epoch)
end

describe("Keras's fit options against Keras 3", function()
  it("sample_weight", function()
    local m = model()
    matches("sample_weight", m, m:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0, sample_weight = sw }))
  end)
  it("sample_weight with validation_split: the last rows' weights weigh val_loss", function()
    local m = model()
    matches("sample_weight_split", m, m:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0,
      sample_weight = sw, validation_split = 0.25 }))
  end)
  it("class_weight (1-based labels), a partial one, and a binary target's 0 and 1", function()
    local m = model()
    matches("class_weight", m, m:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0,
      class_weight = { [1] = 0.5, [2] = 2.0, [3] = 1.5 } }))
    m = model()
    matches("class_weight_partial", m, m:fit(x, y, { epochs = 1, batch_size = 8, shuffle = false, verbose = 0,
      class_weight = { [2] = 3.0 } }))
    m = model(true)
    matches("binary_class_weight", m, m:fit(x, yb, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0,
      class_weight = { [0] = 0.25, [1] = 4.0 } }))
  end)
  it("class_weight on one-hot targets weighs by the hot column", function()
    local m1, m2 = model(), model()
    m1:compile { optimizer = gpu.optim.SGD { learning_rate = 0.1 }, loss = "categorical_crossentropy" }
    m1:fit(x, nn.functional.one_hot(y, 3):astype("float32"), { epochs = 1, batch_size = 8, shuffle = false, verbose = 0,
      class_weight = { [1] = 0.5, [2] = 2.0, [3] = 1.5 } })
    m2:fit(x, y, { epochs = 1, batch_size = 8, shuffle = false, verbose = 0, class_weight = { [1] = 0.5, [2] = 2.0, [3] = 1.5 } })
    assert(h.close(m1:get_weights()[1], m2:get_weights()[1], 1e-6))
  end)
  it("initial_epoch and validation_freq (every n-th epoch, or a list)", function()
    local m = model()
    matches("initial_epoch", m, m:fit(x, y, { epochs = 5, batch_size = 8, shuffle = false, verbose = 0,
      initial_epoch = 2, validation_split = 0.25, validation_freq = 2 }))
    m = model()
    matches("validation_freq_list", m, m:fit(x, y, { epochs = 4, batch_size = 8, shuffle = false, verbose = 0,
      validation_split = 0.25, validation_freq = { 1, 4 } }))
    m = model()
    local hist = m:fit(x, y, { epochs = 2, initial_epoch = 2, verbose = 0 })
    assert.equal(0, #hist.loss)
  end)
  it("sample_weight follows the shuffled rows", function()
    -- zero weights on half the samples: the same as training on the other half alone
    local keep = gpu.arange(24):lt(12)
    local m1, m2 = model(), model()
    gpu.random.seed(3)
    m1:fit(x, y, { epochs = 1, batch_size = 24, verbose = 0, sample_weight = keep:astype("float32") * 2 })
    m2:fit(x[{ { 1, 12 } }], y[{ { 1, 12 } }], { epochs = 1, batch_size = 12, verbose = 0 })
    assert(h.close(m1:get_weights()[1], m2:get_weights()[1], 1e-5))
  end)
  it("evaluate's sample_weight weighs the loss whatever the batches, not the metrics", function()
    for _, bs in ipairs { 8, 10 } do
      local m = model()
      m:compile { optimizer = gpu.optim.SGD { learning_rate = 0.1 }, loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
      local r = m:evaluate(x, y, { batch_size = bs, sample_weight = sw })
      local c = F.evaluate["bs" .. bs]
      assert(math.abs(r.loss - c.loss) < 1e-5, bs)
      assert(math.abs(r.accuracy - c.accuracy) < 1e-6, bs)
    end
    local mb = model(true)
    assert(math.abs(mb:evaluate(x, yb, { batch_size = 8, sample_weight = sw }).loss - F.evaluate.binary.loss) < 1e-5)
    local m = model()
    h.fails({ "Module:evaluate", "sample_weight", "one weight per sample" }, m.evaluate, m, x, y, { sample_weight = sw[{ { 1, 5 } }] })
    h.fails({ "Module:evaluate", "sample_weight", "real array" }, m.evaluate, m, x, y, { sample_weight = sw:gt(1) })
    h.fails({ "Module:evaluate", "sample_weight needs arrays x, y" }, m.evaluate, m,
      gpu.data.DataLoader(x, y, { batch_size = 8 }), { sample_weight = sw })
    h.fails({ "Module:evaluate", "option 'sample_weight'", "gpu.array" }, m.evaluate, m, x, y, { sample_weight = { 1, 2 } })
  end)
  it("weighted_metrics: weighed by sample_weight or class_weight, renamed weighted_<name> beside an unweighted one", function()
    local function run(name, binary, metrics, wmetrics, opts)
      local m = model(binary)
      m:compile { optimizer = gpu.optim.SGD { learning_rate = 0.1 },
                  loss = binary and "binary_crossentropy" or "sparse_categorical_crossentropy",
                  metrics = metrics, weighted_metrics = wmetrics }
      local o = { epochs = 2, batch_size = 8, shuffle = false, verbose = 0 }
      for k, v in pairs(opts) do o[k] = v end
      local hist = m:fit(x, binary and yb or y, o)
      local want = F.weighted[name]
      for key, vals in pairs(want.history) do
        assert.is_table(hist[key], name .. ": no history " .. key)
        for i, v in ipairs(vals) do
          assert(math.abs(hist[key][i] - v) < 2e-5 * math.max(1, math.abs(v)), ("%s %s[%d]: %s vs %s"):format(name, key, i, hist[key][i], v))
        end
      end
      local r = m:evaluate(x, binary and yb or y, { batch_size = 10, sample_weight = sw })
      for key, v in pairs(want.evaluate) do
        assert(math.abs(r[key] - v) < 2e-5 * math.max(1, math.abs(v)), ("%s evaluate %s: %s vs %s"):format(name, key, r[key], v))
      end
    end
    run("sparse", false, { "accuracy" }, { "accuracy", "sparse_categorical_crossentropy" },
      { sample_weight = sw, validation_split = 0.25 })
    run("class_weight", false, {}, { "accuracy" }, { class_weight = { [1] = 0.5, [2] = 2.0, [3] = 1.5 } })
    run("binary", true, { "mse" }, { "mse", "mae", "binary_accuracy" }, { sample_weight = sw })
    local m = model()
    h.fails({ "Module:compile", "weighted_metrics[1]", "cannot be weighed" }, m.compile, m,
      { loss = "mse", weighted_metrics = { "top_k_categorical_accuracy" } })
    local p = nn.metrics.Precision()
    h.fails({ "Module:compile", "weighted_metrics[1] is an object metrics holds too" }, m.compile, m,
      { loss = "mse", metrics = { p }, weighted_metrics = { p } })
    h.fails({ "Module:compile", "weighted_metrics[1] must be a metric name" }, m.compile, m, { loss = "mse", weighted_metrics = { 3 } })
  end)
  it("refuses what Keras refuses, naming the option", function()
    local m = model()
    h.fails({ "Module:fit", "not both" }, function() m:fit(x, y, { sample_weight = sw, class_weight = { [1] = 2 }, verbose = 0 }) end)
    h.fails({ "Module:fit", "sample_weight", "one weight per sample" }, function() m:fit(x, y, { sample_weight = sw[{ { 1, 5 } }], verbose = 0 }) end)
    h.fails({ "Module:fit", "sample_weight", "real array" }, function() m:fit(x, y, { sample_weight = sw:gt(1), verbose = 0 }) end)
    h.fails({ "Module:fit", "class_weight", "class labels" }, function() m:fit(x, y, { class_weight = { [-1] = 2 }, verbose = 0 }) end)
    h.fails({ "Module:fit", "class_weight", "finite weights" }, function() m:fit(x, y, { class_weight = { [1] = 0 / 0 }, verbose = 0 }) end)
    h.fails({ "Module:fit", "initial_epoch" }, function() m:fit(x, y, { initial_epoch = -1, verbose = 0 }) end)
    h.fails({ "Module:fit", "validation_freq", ">= 1" }, function() m:fit(x, y, { validation_freq = 0, verbose = 0 }) end)
    h.fails({ "Module:fit", "validation_freq", "entry 2" }, function() m:fit(x, y, { validation_freq = { 1, 0 }, verbose = 0 }) end)
    h.fails({ "Module:fit", "validation_freq", "list of epoch numbers" }, function() m:fit(x, y, { validation_freq = { a = 1 }, verbose = 0 }) end)
    local d = model()
    d:compile { optimizer = "sgd", loss = "dice" }
    h.fails({ "Module:fit", "one value per sample" }, function() d:fit(x, nn.functional.one_hot(y, 3):astype("float32"), { sample_weight = sw, verbose = 0 }) end)
    local w0 = m:get_weights()[1]:copy()
    pcall(m.fit, m, x, y, { sample_weight = sw, class_weight = { [1] = 2 }, verbose = 0 })
    assert(gpu.array_equal(w0, m:get_weights()[1]))
  end)
end)

describe("sample weights from a loader or a generator (batches x, y, w)", function()
  local data = gpu.data
  local function wmodel()
    local m = model()
    m:compile { optimizer = gpu.optim.SGD { learning_rate = 0.1 }, loss = "sparse_categorical_crossentropy",
                metrics = { "accuracy" }, weighted_metrics = { "accuracy" } }
    return m
  end
  -- a generator of one pass in batches of bs (x, y, w returned, or {x, y, w} with as_list),
  -- starting a new pass after returning nil
  local function batches_of(bs, as_list, w)
    local i = 0
    return function()
      if i >= 24 then i = 0 return nil end
      local r = { { i + 1, math.min(i + bs, 24) } }
      i = i + bs
      if as_list then return { x[r], y[r], (w or sw)[r] } end
      return x[r], y[r], (w or sw)[r]
    end
  end
  local function same_fit(h1, m1, h2, m2)
    for key, vals in pairs(h1) do
      if type(vals) == "table" and type(vals[1]) == "number" then
        for i, v in ipairs(vals) do assert(math.abs(h2[key][i] - v) <= 1e-6 * math.max(1, math.abs(v)), key .. " " .. i) end
      end
    end
    for j, w in ipairs(m1:get_weights()) do assert(h.close(m2:get_weights()[j], w, 1e-6), "weight " .. j) end
  end

  it("fit on a TensorDataset(x, y, w) loader, a generator and {x, y, w} lists: fit{sample_weight} in order", function()
    local m1 = wmodel()
    local h1 = m1:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0, sample_weight = sw })
    assert.is_table(h1.weighted_accuracy)
    local m2 = wmodel()
    same_fit(h1, m1, m2:fit(data.DataLoader(data.TensorDataset(x, y, sw), { batch_size = 8 }), nil,
      { epochs = 2, verbose = 0 }), m2)
    local m3 = wmodel()
    same_fit(h1, m3, m3:fit(data.TensorDataset(x, y, sw), nil, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0 }), m3)
    for _, as_list in ipairs { false, true } do
      local m4 = wmodel()
      same_fit(h1, m1, m4:fit(batches_of(8, as_list), nil, { epochs = 2, verbose = 0 }), m4)
    end
    -- and the weights count: all ones is the unweighted fit, other weights another one
    local m5, m6 = wmodel(), wmodel()
    local h5 = m5:fit(batches_of(8, false, gpu.ones(24)), nil, { epochs = 1, verbose = 0 })
    local h6 = m6:fit(x, y, { epochs = 1, batch_size = 8, shuffle = false, verbose = 0 })
    assert(math.abs(h5.loss[1] - h6.loss[1]) < 1e-6)
    assert(math.abs(h5.loss[1] - h1.loss[1]) > 1e-4)
  end)

  it("evaluate and validation_data weigh their loss and weighted_metrics by the batches' weights", function()
    local m = wmodel()
    local want = m:evaluate(x, y, { batch_size = 8, sample_weight = sw })
    local got = m:evaluate(data.DataLoader(data.TensorDataset(x, y, sw), { batch_size = 8 }))
    local gen = m:evaluate(batches_of(8))
    for _, r in ipairs { got, gen } do
      assert(math.abs(r.loss - want.loss) < 1e-6)
      assert(math.abs(r.weighted_accuracy - want.weighted_accuracy) < 1e-6)
      assert(math.abs(r.accuracy - want.accuracy) < 1e-6)
    end
    local unweighted = m:evaluate(x, y, { batch_size = 8 })
    assert(math.abs(unweighted.loss - want.loss) > 1e-4)
    local m2 = wmodel()
    local hist = m2:fit(x, y, { epochs = 1, batch_size = 8, shuffle = false, verbose = 0,
      validation_data = data.DataLoader(data.TensorDataset(x, y, sw), { batch_size = 8 }) })
    local r = m2:evaluate(x, y, { batch_size = 8, sample_weight = sw })
    assert(math.abs(hist.val_loss[1] - r.loss) < 1e-6)
  end)

  it("a third value of the wrong kind or shape is an error naming the batch", function()
    local m = wmodel()
    local function gen(...)
      local v = table.pack(...)
      return function() return table.unpack(v, 1, v.n) end
    end
    local r8 = { { 1, 8 } }
    h.fails({ "Module:fit", "the generator's batch 1 has sample weights of shape (7) for 8 samples", "shape (8)" }, m.fit, m,
      gen(x[r8], y[r8], sw[{ { 1, 7 } }]), nil, { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:fit", "batch 1 has sample weights of shape (8, 1)" }, m.fit, m,
      gen(x[r8], y[r8], sw[r8]:reshape(8, 1)), nil, { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:fit", "the generator's batch 1 holds 'w' as its sample weights" }, m.fit, m,
      gen(x[r8], y[r8], "w"), nil, { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:fit", "sample weights of bool" }, m.fit, m, gen(x[r8], y[r8], sw[r8]:gt(1)), nil,
      { steps_per_epoch = 1, verbose = 0 })
    h.fails({ "Module:evaluate", "the loader's batch 1 has sample weights of shape (8, 2)" }, m.evaluate, m,
      data.DataLoader(data.TensorDataset(x, y, gpu.ones(24, 2)), { batch_size = 8 }))
    h.fails({ "Module:fit", "class_weight or sample weights in the batches, not both" }, m.fit, m,
      data.DataLoader(data.TensorDataset(x, y, sw), { batch_size = 8 }), nil, { class_weight = { [1] = 2 }, verbose = 0 })
    h.fails({ "Module:fit", "sample_weight needs arrays x, y", "third value" }, m.fit, m,
      data.DataLoader(x, y, { batch_size = 8 }), nil, { sample_weight = sw, verbose = 0 })
  end)
end)

describe("an optimizer made before the weights exist", function()
  it("binds at the first batch, is model.optimizer, and trains as one made with the parameters", function()
    local opt = gpu.optim.Adam { learning_rate = 1e-2 }
    assert.equal(1e-2, opt.lr)
    assert.equal(1e-2, opt.learning_rate)
    local m1 = nn.Sequential { nn.Dense(3, { activation = "softmax" }) }
    m1:compile { optimizer = opt, loss = "sparse_categorical_crossentropy" }
    assert.equal(opt, m1.optimizer)
    gpu.random.seed(5)
    m1:fit(x, y, { epochs = 2, batch_size = 8, verbose = 0 })
    assert.equal(opt, m1.optimizer)
    assert(gpu.optim.is_optimizer(opt))
    assert.equal(2, #opt.params)
    local m2 = nn.Sequential { nn.Dense(3, { activation = "softmax" }) }
    m2:compile { optimizer = "sgd", loss = "sparse_categorical_crossentropy" }
    assert.equal(nil, m2.optimizer)
    m2:fit(x, y, { epochs = 1, verbose = 0 })
    assert(gpu.optim.is_optimizer(m2.optimizer))
  end)
  it("options read and write as an optimizer's, checked; methods say it has no parameters", function()
    local u = gpu.optim.SGD { lr = 0.1 }
    u.momentum = 0.9
    assert.equal(0.9, u.momentum)
    u.learning_rate = 0.2
    assert.equal(0.2, u.lr)
    h.fails({ "optim.SGD", "momentum" }, function() u.momentum = -1 end)
    assert.equal(0.9, u.momentum)
    h.fails({ "optim.SGD", "'foo' is not an option" }, function() u.foo = 1 end)
    h.fails({ "optim.SGD:step", "no parameters yet" }, function() u:step() end)
    h.fails({ "optim.SGD:zero_grad", "no parameters yet" }, function() u:zero_grad() end)
    h.fails({ "optim.Adam", "'lr' and 'learning_rate' both given" }, function() gpu.optim.Adam { lr = 1, learning_rate = 2 } end)
    h.fails({ "optim.Adam", "unknown option 'lrr'" }, function() gpu.optim.Adam { lrr = 1 } end)
    h.fails({ "optim.SGD", "nesterov" }, function() gpu.optim.SGD { lr = 0.1, nesterov = true } end)
    h.fails({ "optim.Adam", "no parameters" }, function() gpu.optim.Adam({}) end)
    -- one optimizer, two models: the second is refused at its first batch
    local a, b = nn.Sequential { nn.Dense(3) }, nn.Sequential { nn.Dense(3) }
    local o = gpu.optim.SGD { lr = 0.1 }
    a:compile { optimizer = o, loss = "mse" }
    b:compile { optimizer = o, loss = "mse" }
    a:fit(x, gpu.zeros(24, 3), { verbose = 0 })
    h.fails({ "Module:fit", "bound to another model" }, function() b:fit(x, gpu.zeros(24, 3), { verbose = 0 }) end)
    -- positional learning rate and learning_rate in a construction with parameters
    local p = gpu.ones(2):requires_grad()
    assert.equal(0.5, gpu.optim.SGD({ p }, { learning_rate = 0.5 }).lr)
    h.fails({ "optim.SGD", "lr given twice" }, function() gpu.optim.SGD({ p }, 0.1, { learning_rate = 0.5 }) end)
  end)
end)

describe("trainable = false", function()
  it("keeps a layer's weights out of the optimizer and trainable_weights", function()
    local m = nn.Sequential { nn.Dense(8, { activation = "relu", input_shape = { 4 } }), nn.Dense(3, { activation = "softmax" }) }
    m(x)                            -- builds the second layer
    m[1].trainable = false
    assert.equal(2, #m:trainable_weights())
    assert.equal(2, #m:non_trainable_weights())
    assert.equal(m[2]:parameters()[1], m:trainable_weights()[1])
    local w1, w2 = m:get_weights()[1]:copy(), m:get_weights()[3]:copy()
    m:compile { optimizer = gpu.optim.SGD { lr = 0.1 }, loss = "sparse_categorical_crossentropy" }
    m:fit(x, y, { epochs = 1, verbose = 0 })
    assert(gpu.array_equal(w1, m:get_weights()[1]))
    assert(not gpu.array_equal(w2, m:get_weights()[3]))
    assert.equal(2, #m.optimizer.params)
    m.trainable = false             -- the whole model: nothing to train
    m:compile { optimizer = "sgd", loss = "sparse_categorical_crossentropy" }
    h.fails({ "Module:fit", "every parameter is frozen" }, function() m:fit(x, y, { verbose = 0 }) end)
    m.trainable = true
    assert.equal(2, #m:trainable_weights())   -- m[1] is still frozen on its own
  end)
  it("a frozen BatchNormalization normalizes by its moving statistics in training", function()
    local bn = nn.BatchNormalization()
    local m = nn.Sequential { bn }
    local z = gpu.random.randn(16, 4) * 3 + 2
    m:train()
    m(z)                                            -- builds it, moves its statistics
    local mm, mv = bn.moving_mean:copy(), bn.moving_variance:copy()
    bn.trainable = false
    m:train()
    local out = m(z)
    assert(gpu.array_equal(mm, bn.moving_mean))      -- not moved
    assert(gpu.array_equal(mv, bn.moving_variance))
    m:eval()
    assert(h.close(out, m(z), 1e-6))                 -- what inference gives
  end)
end)

describe("regularizers and constraints against Keras 3", function()
  local R, C = nn.regularizers, nn.constraints
  local wm = arr(F.wm)
  local V = F.values
  it("each regularizer's penalty and each constraint's result (Keras's axis 0 is 1 here)", function()
    local function num(a) return a:item() end
    assert.near(V.l1, num(R.L1(0.3)(wm)), 1e-5 * V.l1)
    assert.near(V.l2, num(R.L2(0.2)(wm)), 1e-5 * V.l2)
    assert.near(V.l1l2, num(R.L1L2(0.1, 0.05)(wm)), 1e-5 * V.l1l2)
    assert.near(V.l1l2, num(R.L1L2 { l1 = 0.1, l2 = 0.05 }(wm)), 1e-5 * V.l1l2)
    assert.near(V.ortho_rows, num(R.OrthogonalRegularizer(0.4, "rows")(wm)), 1e-5)
    assert.near(V.ortho_columns, num(R.OrthogonalRegularizer { factor = 0.4, mode = "columns" }(wm)), 1e-5)
    assert(h.close(C.MaxNorm(1.5)(wm), arr(V.max_norm), 1e-6))
    assert(h.close(C.MaxNorm(1.2, 2)(wm), arr(V.max_norm_ax1), 1e-6))
    assert(h.close(C.MaxNorm { max_value = 1.2, axis = 2 }(wm), arr(V.max_norm_ax1), 1e-6))
    assert(h.close(C.UnitNorm()(wm), arr(V.unit_norm), 1e-6))
    assert(h.close(C.UnitNorm(2)(wm), arr(V.unit_norm_ax1), 1e-6))
    assert(h.close(C.MinMaxNorm(0.5, 1.0, 0.7)(wm), arr(V.min_max), 1e-6))
    assert(h.close(C.NonNeg()(wm), arr(V.non_neg), 0))
    -- Keras's identifiers and defaults
    assert.equal(0.01, R.l2().l2)
    assert.equal(2, C.max_norm().max_value)
  end)
  it("a Dense layer with every option trains as Keras's (penalties in the loss, constraints after each step)", function()
    local m = nn.Sequential { nn.Dense(3, { activation = "softmax", input_shape = { 4 },
      kernel_regularizer = R.L2(0.01), bias_regularizer = R.L1(0.02), activity_regularizer = R.L1L2(0.001, 0.002),
      kernel_constraint = C.MaxNorm(0.8), bias_constraint = "non_neg" }) }
    m:set_weights { arr(F.k0), arr(F.b0) }
    m:compile { optimizer = gpu.optim.SGD { learning_rate = 0.1 }, loss = "sparse_categorical_crossentropy" }
    matches("regularized", m, m:fit(x, y, { epochs = 2, batch_size = 8, shuffle = false, verbose = 0, validation_split = 0.25 }))
  end)
  it("model:losses() lists the activity penalties of the last call, then the weights' (Conv2D, ActivityRegularization)", function()
    local c2 = nn.Conv2D(3, 3, { kernel_regularizer = R.L2(0.05), activity_regularizer = R.L1(0.01), bias_regularizer = R.L1(0.1) })
    local m = nn.Sequential { c2, nn.ActivityRegularization { l1 = 0.02, l2 = 0.03 } }
    assert.same({}, m:losses())
    m(arr(F.xc))                                     -- builds the kernel
    c2:set_weights { arr(F.kc), arr(F.bc) }
    local named = nn.Sequential { nn.Conv2D(3, 3, { bias_regularizer = "l1", kernel_regularizer = "l2",
      activity_regularizer = "l1l2" }), nn.ActivityRegularization(0.1) }
    named(arr(F.xc))
    assert.equal(4, #named:losses())                 -- Keras's identifiers give default instances
    m(arr(F.xc))
    local got = m:losses()
    assert.equal(#F.conv_losses, #got)
    for i, v in ipairs(F.conv_losses) do assert.near(v, got[i]:item(), 2e-5 * math.max(1, math.abs(v))) end
    assert.equal(0, got[1].ndim)
  end)
  it("a model with regularizers and constraints saves and loads whole; a function regularizer keeps the weights only", function()
    local m = nn.Sequential { nn.Dense(3, { input_shape = { 4 }, kernel_regularizer = R.L2(0.1), bias_regularizer = "l1",
      kernel_constraint = "max_norm", bias_constraint = C.MinMaxNorm(0.1, 2, 0.5) }),
      nn.Dense(2, { activity_regularizer = R.OrthogonalRegularizer(0.2, "columns") }) }
    m(x)
    local path = os.tmpname()
    m:save(path)
    local m2 = nn.load_model(path)
    m2(x)
    local a, b = m:losses(), m2:losses()
    assert.equal(#a, #b)
    for i = 1, #a do assert.equal(a[i]:item(), b[i]:item()) end
    assert.equal("constraints.MinMaxNorm(min_value=0.1, max_value=2, rate=0.5)", tostring(m2[1]._cons[2][2]))
    local f = nn.Sequential { nn.Dense(2, { input_shape = { 4 }, kernel_regularizer = function(w) return w:sum() end }) }
    f:save(path)
    h.fails({ "nn.load_model", "no architecture" }, function() nn.load_model(path) end)
    os.remove(path)
  end)

  it("to_json and model_from_json: the architecture without the weights", function()
    local m = nn.Sequential { nn.Dense(3, { input_shape = { 4 }, kernel_regularizer = "l2", activation = "relu" }),
      nn.Dropout(0.2), nn.Dense(2, "softmax") }
    local text = m:to_json()
    assert.is_string(text)
    local m2 = nn.model_from_json(text)
    assert.equal(tostring(m), tostring(m2))
    assert.same(m[1].kernel.shape, m2[1].kernel.shape)
    assert.is_false(gpu.array_equal(m[1].kernel, m2[1].kernel))     -- new weights
    assert.equal(1, #m2:losses())
    m:eval(); m2:eval()
    m(x); m2(x)                                      -- builds the last layer of each
    m2:set_weights(m:get_weights())
    assert(gpu.array_equal(m(x), m2(x)))
    h.fails({ "nn.model_from_json", "not a model's JSON" }, function() nn.model_from_json("{}") end)
    h.fails({ "nn.model_from_json", "not valid JSON" }, function() nn.model_from_json("{bad") end)
    h.fails({ "nn.model_from_json", "text" }, function() nn.model_from_json(5) end)
    h.fails({ "nn.model_from_json", "model format 99" }, function()
      nn.model_from_json((text:gsub('"version":%d+', '"version":99')))
    end)
    local f = nn.Sequential { nn.Dense(2, { kernel_regularizer = function(w) return w:sum() end }) }
    h.fails({ "Module:to_json", "function" }, function() f:to_json() end)
  end)

  it("refuses what is not a regularizer or a constraint, naming the option", function()
    h.fails({ "nn.Dense", "kernel_regularizer", "must be a regularizer" }, function() nn.Dense(3, { kernel_regularizer = "l3" }) end)
    h.fails({ "nn.Dense", "kernel_constraint", "must be a constraint" }, function() nn.Dense(3, { kernel_constraint = 5 }) end)
    h.fails({ "nn.Conv2D", "activity_regularizer" }, function() nn.Conv2D(3, 3, { activity_regularizer = {} }) end)
    h.fails({ "regularizers.L1", "factor" }, function() R.L1(-1) end)
    h.fails({ "regularizers.L1L2", "unknown option" }, function() R.L1L2 { l3 = 1 } end)
    h.fails({ "regularizers.OrthogonalRegularizer", "mode" }, function() R.OrthogonalRegularizer(0.1, "diag") end)
    h.fails({ "regularizers.OrthogonalRegularizer", "2-D" }, function() R.OrthogonalRegularizer()(gpu.ones(2, 2, 2)) end)
    h.fails({ "regularizers.L2", "x" }, function() R.L2()("w") end)
    h.fails({ "constraints.MaxNorm", "max_value" }, function() C.MaxNorm(-1) end)
    h.fails({ "constraints.MinMaxNorm", "above max_value" }, function() C.MinMaxNorm(2, 1) end)
    h.fails({ "constraints", "axis 3 is out of range" }, function() C.UnitNorm(3)(wm) end)
    h.fails({ "nn.ActivityRegularization", "l1" }, function() nn.ActivityRegularization(-1) end)
    -- a function regularizer that gives more than one value is refused when the penalties are read
    local bad = nn.Sequential { nn.Dense(2, { input_shape = { 4 }, kernel_regularizer = function(w) return w end }) }
    h.fails({ "Module:losses", "not one value" }, function() bad:losses() end)
    local badc = nn.Sequential { nn.Dense(2, { input_shape = { 4 }, kernel_constraint = function(w) return w:sum() end }) }
    badc:compile { optimizer = "sgd", loss = "mse" }
    h.fails({ "Module:fit", "constraint", "weight's shape" }, function() badc:fit(x, gpu.zeros(24, 2), { verbose = 0 }) end)
  end)
end)
