-- spec/keras_metrics_more_spec.lua — Keras's rate-at-constraint metrics, AUC's multi_label,
-- R2Score, the IoU
-- family and the losses' mean metrics (lua/gpu/nn/keras_metrics.lua) against Keras 3
-- (spec/fixtures/keras_metrics_more.lua, made by spec/fixtures/keras_metrics_more.py):
-- each metric's result after one batch, after a second with sample weights, and after
-- reset_state and a third; edge cases (no positives, every score equal); misuse.
local h = require "spec.helper"
local gpu = h.gpu
local M = gpu.nn.metrics
local F = dofile("spec/fixtures/keras_metrics_more.lua")

local function arr(b, key, dev)
  if b[key] == nil then return nil end
  local a = gpu.array(b[key], { dtype = "float32", device = dev })
  if key == "w" then return a end
  return a:reshape(table.unpack(key == "y" and b.yshape or b.pshape))
end

local function flat(v, out)
  out = out or {}
  if type(v) ~= "table" then out[#out + 1] = v; return out end
  for _, x in ipairs(v) do flat(x, out) end
  return out
end

-- Keras keeps float32 states: its results carry float32 rounding
local function close(want, got, what)
  assert.equal(type(want), type(got), what)
  want, got = flat(want), flat(got)
  assert.equal(#want, #got, what)
  for i = 1, #want do
    assert(math.abs(want[i] - got[i]) <= 2e-6 * math.max(1, math.abs(want[i])),
      ("%s[%d]: %.9g, Keras %.9g"):format(what, i, got[i], want[i]))
  end
end

local function make(ctor)
  return assert(load("return M." .. ctor, "=ctor", "t", { M = M }))()
end

for _, dev in ipairs(h.devices()) do
  describe("Keras's metrics (more) on " .. dev, function()
    for i, c in ipairs(F.cases) do
      local what = ("%s %d (%s)"):format(c.ctor, i, c.data)
      it(what .. " accumulates as Keras's", function()
        local m = make(c.ctor)
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

describe("Keras's metrics (more)", function()
  it("are named as Keras names them and made by those names in compile", function()
    assert.equal("precision_at_recall", M.PrecisionAtRecall(0.5).name)
    assert.equal("sensitivity_at_specificity", M.SensitivityAtSpecificity(0.5).name)
    assert.equal("mean_iou", M.MeanIoU(3).name)
    assert.equal("binary_iou", M.BinaryIoU().name)
    assert.equal("r2_score", M.R2Score().name)
    assert.equal("kl_divergence", M.KLDivergence().name)
    assert.equal("mine", M.IoU(3, { 1 }, { name = "mine" }).name)
    gpu.random.seed(0)
    local x = gpu.random.randn(32, 3)
    local y = x[{ ":", { 1, 1 } }]:gt(0):astype("float32")
    local nn = gpu.nn
    local m = nn.Sequential(nn.Linear(3, 1), nn.Sigmoid())
    m:compile{ optimizer = "adam", loss = "binary_crossentropy",
               metrics = { "binary_crossentropy", "hinge", "r2_score", M.PrecisionAtRecall(0.5), M.BinaryIoU() } }
    local r = m:evaluate(x, y, { batch_size = 10 })
    local direct = M.BinaryCrossentropy()
    direct:update_state(y, m:predict(x))
    assert.near(direct:result(), r.binary_crossentropy, 1e-6)
    for _, k in ipairs({ "hinge", "r2_score", "precision_at_recall", "binary_iou" }) do
      assert.equal("number", type(r[k]), k)
    end
  end)

  it("hand back 0 before any batch", function()
    assert.equal(0, M.PrecisionAtRecall(0.5):result())
    assert.equal(0, M.MeanIoU(3):result())
    assert.equal(0, M.R2Score():result())
    assert.same({}, M.R2Score{ class_aggregation = "none" }:result())
    assert.equal(0, M.Poisson():result())
  end)

  it("take a number as sample_weight", function()
    local a, b = M.MeanIoU(2), M.MeanIoU(2)
    local y, p = gpu.array({ 1, 2, 2, 1 }), gpu.array({ 1, 2, 1, 1 })
    a:update_state(y, p, 2)
    b:update_state(y, p)
    assert.near(b:result(), a:result(), 1e-6)
  end)

  it("refuse misuse by name and leave their state as it was", function()
    local iou = M.MeanIoU(3)
    iou:update_state(gpu.array({ 1, 2, 3 }), gpu.array({ 1, 2, 2 }))
    local before = iou:result()
    local r2 = M.R2Score()
    r2:update_state(gpu.ones(4, 2), gpu.ones(4, 2) * 2)
    local cases = {
      { function() return M.PrecisionAtRecall() end, "bad argument #1 to 'nn.metrics.PrecisionAtRecall'" },
      { function() return M.PrecisionAtRecall(1.5) end, "recall must be <= 1" },
      { function() return M.RecallAtPrecision("0.5") end, "'nn.metrics.RecallAtPrecision'" },
      { function() return M.SensitivityAtSpecificity(0.5, { num_thresholds = 0 }) end, "num_thresholds" },
      { function() return M.SpecificityAtSensitivity(0.5, { clas_id = 1 }) end, "unknown option 'clas_id'" },
      { function() return M.PrecisionAtRecall(0.5, {}, 3) end, "at most 2 arguments expected, got 3" },
      { function() return M.PrecisionAtRecall(0.5, { class_id = 4 }):update_state(gpu.ones(2, 3), gpu.ones(2, 3)) end,
        "class_id 4 of 3 classes" },
      { function() return M.R2Score{ class_aggregation = "median" } end, "class_aggregation" },
      { function() return M.R2Score{ num_regressors = -1 } end, "num_regressors" },
      { function() return r2:update_state(gpu.ones(4, 3), gpu.ones(4, 3)) end, "3 columns, earlier batches had 2" },
      { function() return M.R2Score():update_state(gpu.ones(2, 2, 2), gpu.ones(2, 2, 2)) end, "(N, C) expected" },
      { function() return M.IoU(3) end, "bad argument #2 to 'nn.metrics.IoU'" },
      { function() return M.IoU(3, { 4 }) end, "target_class_ids[1] must be a class number in 1..3" },
      { function() return M.IoU(3, {}) end, "target_class_ids is an empty list" },
      { function() return M.MeanIoU(0) end, "num_classes" },
      { function() return M.MeanIoU(3, { sparse_y_true = 1 }) end, "sparse_y_true" },
      { function() return M.OneHotMeanIoU(3, { sparse_y_true = true }) end, "unknown option 'sparse_y_true'" },
      { function() return M.BinaryIoU({ 2 }) end, "target_class_ids[1] must be 0 or 1" },
      { function() return M.BinaryIoU({ 0 }, { threshold = "x" }) end, "threshold" },
      { function() return iou:update_state(gpu.ones(3), gpu.ones(2)) end, "3 labels and 2 predictions" },
      { function() return iou:update_state({ 1 }, gpu.ones(1)) end, "y_true must be an array" },
      { function() return iou:update_state(gpu.ones(3), gpu.ones(3), gpu.ones(2)) end, "does not match the labels (3)" },
      { function() return iou:update_state(gpu.ones(3), gpu.ones(3), "w") end, "sample_weight must be an array or a number" },
      { function() return M.BinaryCrossentropy{ label_smoothing = 2 } end, "label_smoothing" },
      { function() return M.Hinge{ from_logits = true } end, "unknown option 'from_logits'" },
      { function() return M.Poisson():update_state(gpu.ones(3), gpu.ones(2)) end, "differ in shape" },
      { function() return M.Poisson():update_state(gpu.ones(3), gpu.ones(3), gpu.ones(2)) end, "does not match the 3 samples" },
      { function() return M.SparseCategoricalCrossentropy():update_state(gpu.array({ 1, 5 }), gpu.ones(2, 3)) end,
        "SparseCategoricalCrossentropy:update_state" },
      { function() return M.KLDivergence():update_state(gpu.ones(2), 3) end, "y_pred must be an array" },
      { function() return M.AUC{ num_labels = 3 } end, "num_labels is for multi_label = true only" },
      { function() return M.AUC{ multi_label = true, num_labels = 2, label_weights = { 1, 2, 3 } } end,
        "label_weights holds 3 weights for 2 labels" },
      { function() return M.AUC{ label_weights = { 1, -1 } } end, "label_weights[2] must be a number >= 0" },
      { function() return M.AUC{ multi_label = true }:update_state(gpu.ones(4), gpu.ones(4)) end,
        "multi_label needs predictions (N, L)" },
      { function() return M.AUC{ multi_label = true, num_labels = 2 }:update_state(gpu.ones(4, 3), gpu.ones(4, 3)) end,
        "3 labels, num_labels is 2" },
      { function() return M.AUC{ label_weights = { 1, 2 } }:update_state(gpu.ones(4, 3), gpu.ones(4, 3)) end,
        "2 label_weights for 3 labels" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok, c[2])
      assert.matches(c[2], err, 1, true)
    end
    assert.equal(before, iou:result())
  end)
end)
