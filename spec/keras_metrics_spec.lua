-- spec/keras_metrics_spec.lua — Keras's stateful metrics (lua/gpu/nn/keras_metrics.lua)
-- against Keras 3 (spec/fixtures/keras_metrics.lua, made by spec/fixtures/keras_metrics.py):
-- each metric's result after one batch, after a second with sample weights, and after
-- reset_state and a third; and the metrics inside compile/fit/evaluate.
local h = require "spec.helper"
local gpu = h.gpu
local M = gpu.nn.metrics
local F = dofile("spec/fixtures/keras_metrics.lua")

local function arr(b, key, dev)
  if b[key] == nil then return nil end
  local a = gpu.array(b[key], { dtype = "float32", device = dev })
  return key == "w" and a or a:reshape(table.unpack(b.shape))
end

local function list(v) return type(v) == "table" and v or { v } end

-- Keras keeps float32 states: its results carry float32 rounding
local function close(want, got, what)
  want, got = list(want), list(got)
  assert.equal(#want, #got, what)
  for i = 1, #want do
    assert(math.abs(want[i] - got[i]) <= 2e-6 * math.max(1, math.abs(want[i])),
      ("%s[%d]: %.9g, Keras %.9g"):format(what, i, got[i], want[i]))
  end
end

for _, dev in ipairs(h.devices()) do
  describe("Keras's metrics on " .. dev, function()
    for i, c in ipairs(F.cases) do
      local args = {}
      for k, v in pairs(c.args) do args[k] = v end
      local what = ("%s %d (%s)"):format(c.cls, i, c.data)
      it(what .. " accumulates as Keras's", function()
        local m = M[c.cls](args)
        local d = F.data[c.data]
        m:update_state(arr(d[1], "y", dev), arr(d[1], "p", dev))
        close(c.after[1], m:result(), what .. " after one batch")
        m:update_state(arr(d[2], "y", dev), arr(d[2], "p", dev), arr(d[2], "w", dev))
        close(c.after[2], m:result(), what .. " after a weighted batch")
        m:reset_state()
        m:update_state(arr(d[3], "y", dev), arr(d[3], "p", dev))
        close(c.after[3], m:result(), what .. " after reset_state")
      end)
    end
  end)
end

describe("Keras's metrics", function()
  it("Mean and Sum take values and weights", function()
    local m = M.Mean()
    m:update_state(gpu.array({ 1, 2, 3 }))
    m:update_state(gpu.array({ 4, 8 }), gpu.array({ 1, 0 }))
    assert.equal(2.5, m:result())
    local s = M.Sum{ name = "total" }
    s:update_state(gpu.array({ 1, 2 }), gpu.array({ 2, 3 }))
    s:update_state(4)
    assert.equal(12, s:result())
    assert.equal("total", s.name)
    s:reset_state()
    assert.equal(0, s:result())
  end)

  it("go through compile, fit and evaluate, by object and by name, over each epoch", function()
    gpu.random.seed(0)
    local x = gpu.random.randn(64, 4)
    local y = x[{ ":", { 1, 1 } }]:gt(0):astype("float32")
    local nn = gpu.nn
    local m = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
    local prec = M.Precision{ name = "prec" }
    m:compile{ optimizer = "adam", loss = "binary_crossentropy", metrics = { prec, "recall", "auc", "accuracy" } }
    local hist = m:fit(x, y, { epochs = 2, batch_size = 16, verbose = 0, validation_split = 0.25 })
    for _, k in ipairs({ "prec", "recall", "auc", "val_prec", "val_recall", "val_auc" }) do
      assert.equal("number", type(hist.history[k][2]), k)
    end
    local r = m:evaluate(x, y, { batch_size = 10 })
    -- the epoch's value is the metric over all its samples, not a mean of batch values
    local direct = M.AUC()
    direct:update_state(y, m:predict(x))
    assert.near(direct:result(), r.auc, 1e-12)
    assert.near(prec:result(), r.prec, 0)                -- the object passed in holds the state
    -- accuracy of one output per sample is Keras's binary accuracy
    local want = m:predict(x):gt(0.5):astype("float32"):eq(y):astype("float64"):mean():item()
    assert.near(want, r.accuracy, 1e-12)
  end)

  it("refuse misuse by name and leave their state as it was", function()
    local p = M.Precision()
    p:update_state(gpu.array({ 1, 0 }), gpu.array({ 0.9, 0.2 }))
    local before = p:result()
    local cases = {
      { function() return M.Precision{ thresholds = { 0.5, 2 } } end, "thresholds[2] must be a number in [0, 1]" },
      { function() return M.Precision{ thresholds = {} } end, "thresholds is an empty list" },
      { function() return M.AUC{ curve = "PRGAIN" } end, "curve" },
      { function() return M.AUC{ num_thresholds = 1 } end, "num_thresholds" },
      { function() return M.F1Score{ average = "median" } end, "average" },
      { function() return M.F1Score{ beta = 2 } end, "unknown option 'beta'" },
      { function() return p:update_state(gpu.ones(3), gpu.ones(2)) end, "differ in shape" },
      { function() return p:update_state({ 1 }, gpu.ones(1)) end, "y_true must be an array" },
      { function() return p:update_state(gpu.ones(2), gpu.ones(2), gpu.ones(3)) end, "does not match the 2 samples" },
      { function() return M.Recall{ class_id = 5 }:update_state(gpu.ones(2, 3), gpu.ones(2, 3)) end, "class_id 5 of 3 classes" },
      { function() return M.F1Score():update_state(gpu.ones(4), gpu.ones(4)) end, "predictions (N, C) expected" },
      { function() return gpu.nn.Sequential(gpu.nn.Linear(2, 1)):compile{ metrics = { "precisio" } } end,
        "unknown metric 'precisio'; did you mean 'precision'?" },
      { function() return gpu.nn.Sequential(gpu.nn.Linear(2, 1)):compile{ metrics = { "auc", M.AUC() } } end,
        "two metrics are named 'auc'" },
      { function() return gpu.nn.Sequential(gpu.nn.Linear(2, 1)):compile{ metrics = { 42 } } end,
        "must be a metric name or a gpu.nn.metrics object" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
    assert.equal(before, p:result())
  end)
end)
