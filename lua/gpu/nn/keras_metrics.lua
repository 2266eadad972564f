-- gpu.nn.keras_metrics: Keras's stateful metrics, as objects with update_state(y_true,
-- y_pred [, sample_weight]), result() and reset_state(), accumulated over an epoch exactly
-- as Keras's (the states are sums, so a result after several batches is the result over
-- all of their samples). gpu.nn.metrics exports each class (gpu.nn.metrics.Precision{...})
-- and compile{metrics = {...}} takes them as objects or by Keras's snake_case names.
--
--   local auc = gpu.nn.metrics.AUC{curve = "PR"}
--   auc:update_state(y, p); print(auc:result())
--
-- The states are Lua numbers (float64) summed from per-batch reductions on the arrays'
-- device: a result reads no array. Labels count as positive when nonzero (Keras casts
-- them to bool). class_id is 1-based. A result is a number, or a list of numbers (one per
-- threshold, or per class for F1Score/FBetaScore without average).
local gpu = require "gpu"
local options = require "gpu.options"

local raise, argerror, type_name, is_array, shape_str = options.raise, options.argerror, options.type_name,
  options.is_array, options.shape_str

local EPS = 1e-7          -- Keras's backend.epsilon()

local K = {}
local Metric = {}
Metric.__index = Metric
local classes = {}

local function is_metric(v) return type(v) == "table" and classes[getmetatable(v)] ~= nil end
K.is_metric = is_metric

-- class(name, keys, init, update, result): a metric class; Name(opts) makes one
local function class(name, keys, example, init, update, result, reset)
  local cls = { __name = name }
  cls.__index = cls
  cls.__tostring = function(self) return ("%s(name=%s)"):format(name, self.name) end
  local decl = options.declare("nn.metrics." .. name, keys, { example = ("gpu.nn.metrics.%s(%s)"):format(name, example or "%s") })
  setmetatable(cls, { __index = Metric, __call = function(c, opts, ...)
    if select("#", ...) > 0 then argerror("nn.metrics." .. name, 2, "one options table expected") end
    local o = decl:check(opts, 1)
    local self = setmetatable({ name = o.name }, c)
    init(self, o, "nn.metrics." .. name)
    self:reset_state()
    return self
  end })
  cls.update_ = update
  cls.result_ = result
  cls.reset_ = reset
  classes[cls] = name
  K[name] = cls
  return cls
end

function Metric:reset_state() self:reset_() end
function Metric:result() return self:result_() end

-- The batch: y_true and y_pred as arrays of one shape (y_pred (N, 1) beside y_true (N)
-- taken as (N), as Keras squeezes it), floating, and the sample weights (N) or nil.
local function batch(self, y, p, w)
  local fname = getmetatable(self).__name .. ":update_state"
  if not is_array(y) then argerror(fname, 1, "y_true must be an array, got %s", type_name(y)) end
  if not is_array(p) then argerror(fname, 2, "y_pred must be an array, got %s", type_name(p)) end
  if p.ndim == y.ndim + 1 and p.shape[p.ndim] == 1 then p = p:reshape(table.unpack(y.shape)) end
  if y.ndim == p.ndim + 1 and y.shape[y.ndim] == 1 then y = y:reshape(table.unpack(p.shape)) end
  if shape_str(y.shape) ~= shape_str(p.shape) then
    raise("%s: y_true %s and y_pred %s differ in shape", fname, shape_str(y.shape), shape_str(p.shape))
  end
  if p.ndim == 0 then raise("%s: 0-d predictions (a batch has samples)", fname) end
  if not p.dtype:match("float") then p = p:astype("float32") end
  y = y:to(p.device)
  if w ~= nil then
    if not is_array(w) then
      if type(w) ~= "number" then argerror(fname, 3, "sample_weight must be an array or a number, got %s", type_name(w)) end
      w = gpu.full({ p.shape[1] }, w, { dtype = p.dtype, device = p.device })
    end
    if w.ndim ~= 1 or w.shape[1] ~= p.shape[1] then
      raise("%s: sample_weight %s does not match the %d samples", fname, shape_str(w.shape), p.shape[1])
    end
    w = w:to(p.device):astype(p.dtype)
  end
  return y, p, w
end

-- w (N) shaped to broadcast against an array of ndim dims (N, ...): (N, 1, ..., 1)
local function wide(w, ndim)
  if w == nil or ndim <= 1 then return w end
  local shape = { w.shape[1] }
  for d = 2, ndim do shape[d] = 1 end
  return w:reshape(table.unpack(shape))
end

local function sum(a) return a:astype("float64"):sum():item() end

-- ---- Mean and Sum, and the metrics made of a per-sample value ---------------------------

local NAME = function(default) return { type = "string", default = default } end

-- Keras's Mean.update_state: values reduced to one per sample (the mean of the rest),
-- total += sum(v * w), count += sum(w) (or the samples)
local function add_mean(self, v, w)
  if v.ndim > 1 then
    local axes = {}
    for d = 2, v.ndim do axes[#axes + 1] = d end
    v = v:mean(axes)
  end
  if w == nil then
    self.total, self.count = self.total + sum(v), self.count + v.size
  else
    self.total, self.count = self.total + sum(v * w), self.count + sum(w)
  end
end
local function mean_result(self) return self.count == 0 and 0 or self.total / self.count end
local function mean_reset(self) self.total, self.count = 0, 0 end

class("Mean", { name = NAME("mean") }, nil, function() end, function(self, values, _, w)
  local fname = "Mean:update_state"
  if not is_array(values) then
    if type(values) ~= "number" then argerror(fname, 1, "values must be an array or a number, got %s", type_name(values)) end
    values = gpu.array({ values }, { dtype = "float64" })
  end
  if w ~= nil and (not is_array(w) or w.ndim ~= 1 or (values.ndim > 0 and w.shape[1] ~= values.shape[1])) then
    raise("%s: sample_weight must be an array of one weight per value", fname)
  end
  if values.ndim == 0 then values = values:reshape(1) end
  add_mean(self, values:astype("float64"), w and w:astype("float64"):to(values.device))
end, mean_result, mean_reset)

class("Sum", { name = NAME("sum") }, nil, function() end, function(self, values, _, w)
  if not is_array(values) then
    if type(values) ~= "number" then argerror("Sum:update_state", 1, "values must be an array or a number, got %s", type_name(values)) end
    self.total = self.total + values * (w or 1)
    return
  end
  local v = values:astype("float64")
  if w ~= nil then v = v * wide(w:astype("float64"):to(v.device), v.ndim) end
  self.total = self.total + v:sum():item()
end, function(self) return self.total end, function(self) self.total = 0 end)

-- Mean/Sum take (values [, sample_weight]) rather than (y_true, y_pred): their update_state
function K.Mean:update_state(values, sample_weight) self:update_(values, nil, sample_weight) end
function K.Sum:update_state(values, sample_weight) self:update_(values, nil, sample_weight) end

-- a metric that is the mean over samples of fn(y, p) (a value per sample, or per element)
local function mean_of(name, default, fn, sqrt)
  class(name, { name = NAME(default) }, nil, function() end, function(self, y, p, w)
    y, p, w = batch(self, y, p, w)
    add_mean(self, fn(y:astype(p.dtype), p), w)
  end, sqrt and function(self) return math.sqrt(mean_result(self)) end or mean_result, mean_reset)
end

local function last_mean(v) return v.ndim > 1 and v:mean(v.ndim) or v end

mean_of("RootMeanSquaredError", "root_mean_squared_error", function(y, p) return (p - y):square() end, true)
mean_of("MeanAbsolutePercentageError", "mean_absolute_percentage_error", function(y, p)
  return last_mean(((y - p) / y:abs():maximum(EPS)):abs()) * 100
end)
mean_of("MeanSquaredLogarithmicError", "mean_squared_logarithmic_error", function(y, p)
  return last_mean(((p:maximum(EPS) + 1):log() - (y:maximum(EPS) + 1):log()):square())
end)
mean_of("LogCoshError", "logcosh", function(y, p)
  local x = p - y
  return last_mean(x + (x * -2):softplus() - math.log(2))
end)

class("CosineSimilarity", { name = NAME("cosine_similarity"), axis = { type = "integer", default = -1 } }, nil,
  function(self, o) self.axis = o.axis end,
  function(self, y, p, w)
    y, p, w = batch(self, y, p, w)
    y = y:astype(p.dtype)
    local ax = self.axis
    local function unit(a) return a / (a:square():sum(ax, { keepdims = true }):maximum(1e-12)):sqrt() end
    local v = (unit(y) * unit(p)):sum(ax)
    add_mean(self, v, w)
  end, mean_result, mean_reset)

-- ---- confusion counts --------------------------------------------------------------------

local thresholds_key = { type = "number|table", what = "a threshold in [0, 1] or a list of them" }

-- the thresholds of o (a number or a list; default d) as a list, and whether it was a list
local function thresholds_of(fname, v, d)
  if v == nil then return { d }, false end
  local list = type(v) == "table" and v or { v }
  if #list == 0 then argerror(fname, 1, "thresholds is an empty list") end
  for i, t in ipairs(list) do
    if type(t) ~= "number" or t ~= t or (d == 0.5 and (t < 0 or t > 1)) then
      argerror(fname, 1, "thresholds[%d] must be a number in [0, 1], got %s", i, tostring(t))
    end
  end
  return { table.unpack(list) }, type(v) == "table"
end

-- y and p prepared as Keras's update_confusion_matrix_variables: a class_id's column, the
-- top_k filter (the rest of each row at -inf), then flattened; labels as 0/1, weights per
-- element
local function confusion_inputs(self, y, p, w)
  y, p, w = batch(self, y, p, w)
  local fname = getmetatable(self).__name .. ":update_state"
  if self.top_k then
    local k = math.min(self.top_k, p.shape[p.ndim])
    local _, idx = p:topk(k, p.ndim)
    local keep = gpu.zeros(p.shape, { dtype = "bool", device = p.device })
    keep = keep:scatter(p.ndim, idx, gpu.ones(idx.shape, { dtype = "bool", device = p.device }))
    p = gpu.where(keep, p, -math.huge)
  end
  if self.class_id then
    if p.ndim ~= 2 then raise("%s: class_id needs predictions (N, C), got %s", fname, shape_str(p.shape)) end
    if self.class_id > p.shape[2] then raise("%s: class_id %d of %d classes", fname, self.class_id, p.shape[2]) end
    local c = self.class_id
    y, p = y[{ ":", { c, c } }], p[{ ":", { c, c } }]
  end
  local label = y:ne(0)
  local weight = w and (wide(w, p.ndim) * gpu.ones(p.shape, { dtype = p.dtype, device = p.device })):reshape(-1)
  return label:reshape(-1), p:reshape(-1), weight
end

-- tp/fp/tn/fn (lists per threshold) += the batch's weighted counts
local function confusion_add(self, label, p, weight)
  local pos = label:astype("float64")
  local neg = 1 - pos
  if weight then
    local w64 = weight:astype("float64")
    pos, neg = pos * w64, neg * w64
  end
  local total_pos, total_neg = pos:sum():item(), neg:sum():item()
  for i, t in ipairs(self.thresholds) do
    local above = p:gt(t):astype("float64")
    local tp, fp = (above * pos):sum():item(), (above * neg):sum():item()
    self.tp[i], self.fp[i] = self.tp[i] + tp, self.fp[i] + fp
    self.fn[i], self.tn[i] = self.fn[i] + total_pos - tp, self.tn[i] + total_neg - fp
  end
end

local function confusion_reset(self)
  self.tp, self.fp, self.tn, self.fn = {}, {}, {}, {}
  for i = 1, #self.thresholds do self.tp[i], self.fp[i], self.tn[i], self.fn[i] = 0, 0, 0, 0 end
end

local function per_threshold(self, f)
  local out = {}
  for i = 1, #self.thresholds do out[i] = f(i) end
  return self.listed and out or out[1]
end

local function no_nan_div(a, b) return b == 0 and 0 or a / b end

local CONFUSION_KEYS = function(default)
  return { name = NAME(default), thresholds = thresholds_key }
end
for _, spec in ipairs({ { "TruePositives", "true_positives", "tp" }, { "TrueNegatives", "true_negatives", "tn" },
                        { "FalsePositives", "false_positives", "fp" }, { "FalseNegatives", "false_negatives", "fn" } }) do
  local field = spec[3]
  class(spec[1], CONFUSION_KEYS(spec[2]), nil, function(self, o, fname)
    self.thresholds, self.listed = thresholds_of(fname, o.thresholds, 0.5)
  end, function(self, y, p, w) confusion_add(self, confusion_inputs(self, y, p, w)) end,
  function(self) return per_threshold(self, function(i) return self[field][i] end) end, confusion_reset)
end

local PR_KEYS = function(default)
  return { name = NAME(default), thresholds = thresholds_key, top_k = { type = "integer", min = 1 },
           class_id = { type = "integer", min = 1 } }
end
local function pr_init(self, o, fname)
  self.top_k, self.class_id = o.top_k, o.class_id
  self.thresholds, self.listed = thresholds_of(fname, o.thresholds, o.top_k and -math.huge or 0.5)
end
class("Precision", PR_KEYS("precision"), nil, pr_init,
  function(self, y, p, w) confusion_add(self, confusion_inputs(self, y, p, w)) end,
  function(self) return per_threshold(self, function(i) return no_nan_div(self.tp[i], self.tp[i] + self.fp[i]) end) end,
  confusion_reset)
class("Recall", PR_KEYS("recall"), nil, pr_init,
  function(self, y, p, w) confusion_add(self, confusion_inputs(self, y, p, w)) end,
  function(self) return per_threshold(self, function(i) return no_nan_div(self.tp[i], self.tp[i] + self.fn[i]) end) end,
  confusion_reset)

-- ---- AUC -------------------------------------------------------------------------------------

-- The counts at num_thresholds thresholds evenly spread over [0, 1] (the ends -eps and
-- 1 + eps), by bucket: a prediction p (clipped to [0, 1]) is above the thresholds 1..k(p) + 1
-- where k(p) = ceil(p (n - 1)) - 1 clamped to [0, n - 2], so one bincount per batch.
class("AUC", { name = NAME("auc"), num_thresholds = { type = "integer", min = 2, default = 200 },
  curve = { choices = { "ROC", "PR" }, default = "ROC" },
  summation_method = { choices = { "interpolation", "minoring", "majoring" }, default = "interpolation" },
  from_logits = { type = "boolean", default = false } }, nil,
  function(self, o)
    self.num_thresholds, self.curve, self.summation_method, self.from_logits = o.num_thresholds, o.curve,
      o.summation_method, o.from_logits
  end,
  function(self, y, p, w)
    y, p, w = batch(self, y, p, w)
    if self.from_logits then p = p:sigmoid() end
    local n = self.num_thresholds
    local label = y:ne(0):reshape(-1)
    local weight = w and (wide(w, p.ndim) * gpu.ones(p.shape, { dtype = p.dtype, device = p.device })):reshape(-1)
    local pf = p:reshape(-1):astype("float64"):maximum(0):minimum(1)
    local k = ((pf * (n - 1)):ceil() - 1):maximum(0):minimum(n - 2):astype("int64")
    local pos = label:astype("float64")
    local neg = 1 - pos
    if weight then
      local w64 = weight:astype("float64")
      pos, neg = pos * w64, neg * w64
    end
    local cp = gpu.bincount(k, { minlength = n - 1, weights = pos }):totable()
    local cn = gpu.bincount(k, { minlength = n - 1, weights = neg }):totable()
    local tp_run, fp_run = 0, 0
    local total_pos, total_neg = 0, 0
    for j = 1, n - 1 do total_pos, total_neg = total_pos + cp[j], total_neg + cn[j] end
    -- threshold j (1-based, of n): the predictions with k >= j - 1; the last: none
    for j = n - 1, 1, -1 do
      tp_run, fp_run = tp_run + cp[j], fp_run + cn[j]
      self.tp[j], self.fp[j] = self.tp[j] + tp_run, self.fp[j] + fp_run
      self.fn[j], self.tn[j] = self.fn[j] + total_pos - tp_run, self.tn[j] + total_neg - fp_run
    end
    self.fn[n], self.tn[n] = self.fn[n] + total_pos, self.tn[n] + total_neg
  end,
  function(self)
    local n, tp, fp, tn, fn = self.num_thresholds, self.tp, self.fp, self.tn, self.fn
    local area = 0
    if self.curve == "PR" and self.summation_method == "interpolation" then
      -- Davis and Goadrich's interpolation, as Keras computes it
      for i = 1, n - 1 do
        local dtp = tp[i] - tp[i + 1]
        local pa, pb = tp[i] + fp[i], tp[i + 1] + fp[i + 1]
        local slope = no_nan_div(dtp, math.max(pa - pb, 0))
        local intercept = tp[i + 1] - slope * pb
        local ratio = (pa > 0 and pb > 0) and no_nan_div(pa, math.max(pb, 0)) or 1
        area = area + no_nan_div(slope * (dtp + intercept * math.log(ratio)), math.max(tp[i + 1] + fn[i + 1], 0))
      end
      return area
    end
    local x, y = {}, {}
    for i = 1, n do
      local recall = no_nan_div(tp[i], tp[i] + fn[i])
      if self.curve == "ROC" then x[i], y[i] = no_nan_div(fp[i], fp[i] + tn[i]), recall
      else x[i], y[i] = recall, no_nan_div(tp[i], tp[i] + fp[i]) end
    end
    for i = 1, n - 1 do
      local h = self.summation_method == "interpolation" and (y[i] + y[i + 1]) / 2
        or self.summation_method == "minoring" and math.min(y[i], y[i + 1]) or math.max(y[i], y[i + 1])
      area = area + (x[i] - x[i + 1]) * h
    end
    return area
  end,
  function(self)
    self.tp, self.fp, self.tn, self.fn = {}, {}, {}, {}
    for i = 1, self.num_thresholds do self.tp[i], self.fp[i], self.tn[i], self.fn[i] = 0, 0, 0, 0 end
  end)

-- ---- F-scores ------------------------------------------------------------------------------

-- FBetaScore{average = nil | "micro" | "macro" | "weighted", beta = 1, threshold}: per class
-- of predictions (N, C); threshold nil: each row's largest prediction is the positive one
local F_KEYS = function(default)
  return { name = NAME(default), average = { choices = { "micro", "macro", "weighted" } },
           beta = { type = "number", min = 0, min_open = true, default = 1.0 }, threshold = { type = "number" } }
end
local function f_init(self, o)
  self.average, self.beta, self.threshold = o.average, o.beta, o.threshold
end
local function f_update(self, y, p, w)
  y, p, w = batch(self, y, p, w)
  if p.ndim ~= 2 then raise("%s:update_state: predictions (N, C) expected, got %s", getmetatable(self).__name, shape_str(p.shape)) end
  local pred
  if self.threshold == nil then
    pred = p:ge(p:max({ 2 }, { keepdims = true })):logical_and(p:abs():gt(1e-9))
  else
    pred = p:gt(self.threshold)
  end
  local pb, yb = pred:astype("float64"), y:astype("float64")
  local ww = w and wide(w:astype("float64"), 2)
  local function wsum(v)
    if ww then v = v * ww end
    if self.average == "micro" then return { v:sum():item() } end
    return v:sum(1):totable()
  end
  local tp, fp, fn, iw = wsum(pb * yb), wsum(pb * (1 - yb)), wsum((1 - pb) * yb), wsum(yb)
  if self.tp == nil then
    self.tp, self.fp, self.fn, self.iw = {}, {}, {}, {}
    for i = 1, #tp do self.tp[i], self.fp[i], self.fn[i], self.iw[i] = 0, 0, 0, 0 end
  elseif #tp ~= #self.tp then
    raise("%s:update_state: %d classes, earlier batches had %d", getmetatable(self).__name, #tp, #self.tp)
  end
  for i = 1, #tp do
    self.tp[i], self.fp[i], self.fn[i], self.iw[i] = self.tp[i] + tp[i], self.fp[i] + fp[i], self.fn[i] + fn[i],
      self.iw[i] + iw[i]
  end
end
local function f_result(self)
  if self.tp == nil then return self.average and 0 or {} end
  local b2, out = self.beta ^ 2, {}
  for i = 1, #self.tp do
    local precision = self.tp[i] / (self.tp[i] + self.fp[i] + EPS)
    local recall = self.tp[i] / (self.tp[i] + self.fn[i] + EPS)
    out[i] = precision * recall / (b2 * precision + recall + EPS) * (1 + b2)
  end
  if self.average == nil then return out end
  if self.average == "weighted" then
    local total, s = 0, 0
    for i = 1, #out do total = total + self.iw[i] end
    for i = 1, #out do s = s + out[i] * self.iw[i] / (total + EPS) end
    return s
  end
  local s = 0
  for i = 1, #out do s = s + out[i] end
  return s / #out
end
local function f_reset(self) self.tp, self.fp, self.fn, self.iw = nil, nil, nil, nil end
class("FBetaScore", F_KEYS("fbeta_score"), nil, f_init, f_update, f_result, f_reset)
local F1 = F_KEYS("f1_score")
F1.beta = nil
class("F1Score", F1, nil, function(self, o) f_init(self, o); self.beta = 1.0 end, f_update, f_result, f_reset)

-- every class but Mean and Sum: update_state(y_true, y_pred [, sample_weight])
for cls in pairs(classes) do
  if cls ~= K.Mean and cls ~= K.Sum then
    cls.update_state = function(self, y, p, w) self:update_(y, p, w) end
  end
end

-- The snake_case names compile{metrics} knows (Keras's), each making a new object
K.by_name = {
  true_positives = K.TruePositives, true_negatives = K.TrueNegatives, false_positives = K.FalsePositives,
  false_negatives = K.FalseNegatives, precision = K.Precision, recall = K.Recall, auc = K.AUC,
  f1_score = K.F1Score, fbeta_score = K.FBetaScore, root_mean_squared_error = K.RootMeanSquaredError,
  rmse = K.RootMeanSquaredError, mean_absolute_percentage_error = K.MeanAbsolutePercentageError,
  mape = K.MeanAbsolutePercentageError, mean_squared_logarithmic_error = K.MeanSquaredLogarithmicError,
  msle = K.MeanSquaredLogarithmicError, cosine_similarity = K.CosineSimilarity, logcosh = K.LogCoshError,
  log_cosh_error = K.LogCoshError,
}

for cls, name in pairs(classes) do options.guard_methods(cls, name, "metric", is_metric) end
return K
