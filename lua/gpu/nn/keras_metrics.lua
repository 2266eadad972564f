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
local losses = require "gpu.nn.losses"

local raise, argerror, type_name, is_array, shape_str = options.raise, options.argerror, options.type_name,
  options.is_array, options.shape_str

local EPS = 1e-7          -- Keras's backend.epsilon()

local K = {}
local Metric = {}
Metric.__index = Metric
local classes = {}

local function is_metric(v) return type(v) == "table" and classes[getmetatable(v)] ~= nil end
K.is_metric = is_metric

-- class(name, keys, example, init, update, result, reset [, pos]): a metric class;
-- Name([positional..., ] opts) makes one. pos lists the positional arguments Keras's
-- constructor requires, as { key, spec } (spec as an option's), stored in o[key].
local function class(name, keys, example, init, update, result, reset, pos)
  local cls = { __name = name }
  cls.__index = cls
  cls.__tostring = function(self) return ("%s(name=%s)"):format(name, self.name) end
  local fname = "nn.metrics." .. name
  local decl = options.declare(fname, keys, { example = ("gpu.nn.metrics.%s(%s)"):format(name, example or "%s") })
  local npos = pos and #pos or 0
  setmetatable(cls, { __index = Metric, __call = function(c, ...)
    local nargs = select("#", ...)
    if nargs > npos + 1 then
      argerror(fname, npos + 2, npos == 0 and "one options table expected" or "at most %d arguments expected, got %d",
        npos + 1, nargs)
    end
    local args = { ... }
    local given = {}
    for i = 1, npos do given[i] = options.value(args[i], pos[i][2], fname, i, pos[i][1]) end
    local o = decl:check(args[npos + 1], npos + 1)
    for i = 1, npos do o[pos[i][1]] = given[i] end
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

-- bucket_add(self, n, label (M) bool, p (M), weight (M) or nil, ends_open): self's tp/fp/
-- tn/fn (lists of n) += the counts at n thresholds evenly spread over [0, 1], by
-- bucket: a prediction p (clipped to [0, 1]) is above the thresholds 1..k(p) + 1 where
-- k(p) = ceil(p (n - 1)) - 1, so one bincount per batch. ends_open (AUC's thresholds, the
-- ends -eps and 1 + eps): k clamped to [0, n - 2]; else (the thresholds 0 and 1 exactly)
-- a p of 0 is above none.
local function bucket_add(self, n, label, p, weight, ends_open)
  local pf = p:astype("float64"):maximum(0):minimum(1)
  local raw = (pf * (n - 1)):ceil() - 1
  local k = raw:maximum(0):minimum(n - 2):astype("int64")
  local pos = label:astype("float64")
  local neg = 1 - pos
  if weight then
    local w64 = weight:astype("float64")
    pos, neg = pos * w64, neg * w64
  end
  local total_pos, total_neg = sum(pos), sum(neg)
  if not ends_open then
    local counted = raw:ge(0):astype("float64")
    pos, neg = pos * counted, neg * counted
  end
  local cp = gpu.bincount(k, { minlength = n - 1, weights = pos }):totable()
  local cn = gpu.bincount(k, { minlength = n - 1, weights = neg }):totable()
  local tp_run, fp_run = 0, 0
  -- threshold j (1-based, of n): the predictions with k >= j - 1; the last: none
  for j = n - 1, 1, -1 do
    tp_run, fp_run = tp_run + cp[j], fp_run + cn[j]
    self.tp[j], self.fp[j] = self.tp[j] + tp_run, self.fp[j] + fp_run
    self.fn[j], self.tn[j] = self.fn[j] + total_pos - tp_run, self.tn[j] + total_neg - fp_run
  end
  self.fn[n], self.tn[n] = self.fn[n] + total_pos, self.tn[n] + total_neg
end

-- AUC{..., multi_label = false, num_labels, label_weights}: the counts at num_thresholds
-- thresholds (bucket_add's, the ends open); without multi_label one set of counts over
-- every element (label_weights, one per column of (N, L), weigh them), with it a set per
-- column of (N, L) and the mean of their areas (weighted by label_weights when given)
local function counts(n)
  local st = { tp = {}, fp = {}, tn = {}, fn = {} }
  for i = 1, n do st.tp[i], st.fp[i], st.tn[i], st.fn[i] = 0, 0, 0, 0 end
  return st
end
local function auc_area(self, st)
  local n, tp, fp, tn, fn = self.num_thresholds, st.tp, st.fp, st.tn, st.fn
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
end
class("AUC", { name = NAME("auc"), num_thresholds = { type = "integer", min = 2, default = 200 },
  curve = { choices = { "ROC", "PR" }, default = "ROC" },
  summation_method = { choices = { "interpolation", "minoring", "majoring" }, default = "interpolation" },
  from_logits = { type = "boolean", default = false }, multi_label = { type = "boolean", default = false },
  num_labels = { type = "integer", min = 1 }, label_weights = { type = "table|array", what = "a list of weights" } }, nil,
  function(self, o, fname)
    self.num_thresholds, self.curve, self.summation_method, self.from_logits = o.num_thresholds, o.curve,
      o.summation_method, o.from_logits
    self.multi_label, self.num_labels = o.multi_label, o.num_labels
    if o.num_labels and not o.multi_label then argerror(fname, 1, "num_labels is for multi_label = true only") end
    local lw = o.label_weights
    if lw ~= nil then
      if is_array(lw) then
        if lw.ndim ~= 1 then argerror(fname, 1, "label_weights must be 1-d, got shape %s", shape_str(lw.shape)) end
        lw = lw:astype("float64"):totable()
      end
      if #lw == 0 then argerror(fname, 1, "label_weights is an empty list") end
      for i, v in ipairs(lw) do
        if type(v) ~= "number" or v ~= v or v < 0 then
          argerror(fname, 1, "label_weights[%d] must be a number >= 0, got %s", i, tostring(v))
        end
      end
      if o.num_labels and #lw ~= o.num_labels then
        argerror(fname, 1, "label_weights holds %d weights for %d labels", #lw, o.num_labels)
      end
      self.label_weights = { table.unpack(lw) }
    end
  end,
  function(self, y, p, w)
    local fname = "AUC:update_state"
    y, p, w = batch(self, y, p, w)
    local L = p.shape[p.ndim]
    if (self.multi_label or self.label_weights) and p.ndim ~= 2 then
      raise("%s: %s needs predictions (N, L), got %s", fname, self.multi_label and "multi_label" or "label_weights",
        shape_str(p.shape))
    end
    if self.label_weights and #self.label_weights ~= L then
      raise("%s: %d label_weights for %d labels", fname, #self.label_weights, L)
    end
    if self.multi_label and #self.sets > 0 and #self.sets ~= L then
      raise("%s: %d labels, %s %d", fname, L, self.num_labels and "num_labels is" or "earlier batches had", #self.sets)
    end
    if self.from_logits then p = p:sigmoid() end
    local ones = gpu.ones(p.shape, { dtype = p.dtype, device = p.device })
    local weight = w and wide(w, p.ndim) * ones
    local label = y:ne(0)
    if not self.multi_label then
      if self.label_weights then
        local lw = gpu.array(self.label_weights, { dtype = p.dtype, device = p.device }):reshape(1, L)
        weight = (weight or ones) * lw
      end
      bucket_add(self.sets[1], self.num_thresholds, label:reshape(-1), p:reshape(-1), weight and weight:reshape(-1), true)
      return
    end
    if #self.sets == 0 then for j = 1, L do self.sets[j] = counts(self.num_thresholds) end end
    for j = 1, L do
      local col = { ":", { j, j } }
      bucket_add(self.sets[j], self.num_thresholds, label[col]:reshape(-1), p[col]:reshape(-1),
        weight and weight[col]:reshape(-1), true)
    end
  end,
  function(self)
    if not self.multi_label then return auc_area(self, self.sets[1]) end
    if #self.sets == 0 then return 0 end
    local s, sw = 0, 0
    for j = 1, #self.sets do
      local wj = self.label_weights and self.label_weights[j] or 1
      s, sw = s + auc_area(self, self.sets[j]) * wj, sw + wj
    end
    return no_nan_div(s, sw)
  end,
  function(self)
    self.sets = {}
    if not self.multi_label then self.sets[1] = counts(self.num_thresholds)
    elseif self.num_labels then for j = 1, self.num_labels do self.sets[j] = counts(self.num_thresholds) end end
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

-- ---- a rate at a constraint on another ---------------------------------------------------

-- SensitivityAtSpecificity(specificity), SpecificityAtSensitivity(sensitivity),
-- PrecisionAtRecall(recall), RecallAtPrecision(precision) [, {num_thresholds = 200,
-- class_id}]: the counts at num_thresholds thresholds 0, 1/(n-1), ..., 1 (one: 0.5), and
-- the largest of one rate over the thresholds where the other is >= the value (0 if none)
local AT_KEYS = function(default)
  return { name = NAME(default), num_thresholds = { type = "integer", min = 1, default = 200 },
           class_id = { type = "integer", min = 1 } }
end
local function at_init(self, o, value)
  self.value, self.class_id, self.num_thresholds = value, o.class_id, o.num_thresholds
  if o.num_thresholds == 1 then self.thresholds = { 0.5 } end
end
local function at_update(self, y, p, w)
  local label, pf, weight = confusion_inputs(self, y, p, w)
  if self.thresholds then
    confusion_add(self, label, pf, weight)
  else
    bucket_add(self, self.num_thresholds, label, pf, weight, false)
  end
end
local function at_reset(self)
  self.tp, self.fp, self.tn, self.fn = {}, {}, {}, {}
  for i = 1, self.num_thresholds do self.tp[i], self.fp[i], self.tn[i], self.fn[i] = 0, 0, 0, 0 end
end
local RATES = {
  sensitivity = function(s, i) return no_nan_div(s.tp[i], s.tp[i] + s.fn[i]) end,
  specificity = function(s, i) return no_nan_div(s.tn[i], s.tn[i] + s.fp[i]) end,
  precision = function(s, i) return no_nan_div(s.tp[i], s.tp[i] + s.fp[i]) end,
}
RATES.recall = RATES.sensitivity
for _, d in ipairs({ { "SensitivityAtSpecificity", "sensitivity", "specificity" },
                     { "SpecificityAtSensitivity", "specificity", "sensitivity" },
                     { "PrecisionAtRecall", "precision", "recall" },
                     { "RecallAtPrecision", "recall", "precision" } }) do
  local name, rate, constrained = d[1], RATES[d[2]], RATES[d[3]]
  local snake = name:gsub("(%l)(%u)", "%1_%2"):lower()
  local key = d[3]
  class(name, AT_KEYS(snake), "0.5, %s", function(self, o) at_init(self, o, o[key]) end, at_update, function(self)
    local best = 0
    for i = 1, self.num_thresholds do
      if constrained(self, i) >= self.value then best = math.max(best, rate(self, i)) end
    end
    return best
  end, at_reset, { { key, { type = "number", min = 0, max = 1 } } })
end

-- ---- R2Score ---------------------------------------------------------------------------------

-- R2Score{class_aggregation = "uniform_average" | "variance_weighted_average" | "none",
-- num_regressors = 0}: of y_true and y_pred (N, C), per column 1 - SSE / SST from the
-- weighted sums (an infinite score as 0), averaged (or a list: "none", Keras's None); with
-- num_regressors p, adjusted by the number of values n seen (elements, as Keras counts):
-- 1 - (1 - r2)(n - 1) / (n - p - 1), unless p >= n - 1
class("R2Score", { name = NAME("r2_score"), class_aggregation = { choices = { "uniform_average",
  "variance_weighted_average", "none" }, default = "uniform_average" },
  num_regressors = { type = "integer", min = 0, default = 0 } }, nil,
  function(self, o) self.class_aggregation, self.num_regressors = o.class_aggregation, o.num_regressors end,
  function(self, y, p, w)
    y, p, w = batch(self, y, p, w)
    local fname = "R2Score:update_state"
    if p.ndim == 1 then y, p = y:reshape(-1, 1), p:reshape(-1, 1) end
    if p.ndim ~= 2 then raise("%s: y_true and y_pred (N, C) expected, got %s", fname, shape_str(p.shape)) end
    local y64, p64 = y:astype("float64"), p:astype("float64")
    local ww = w and wide(w:astype("float64"), 2) * gpu.ones(p.shape, { dtype = "float64", device = p.device })
      or gpu.ones(p.shape, { dtype = "float64", device = p.device })
    local C = p.shape[2]
    if self.sum ~= nil and #self.sum ~= C then
      raise("%s: %d columns, earlier batches had %d", fname, C, #self.sum)
    end
    local wy = y64 * ww
    local parts = gpu.stack({ wy:sum(1), (y64 * wy):sum(1), ((y64 - p64):square() * ww):sum(1), ww:sum(1) }):totable()
    if self.sum == nil then
      self.sum, self.squared_sum, self.sse, self.count = {}, {}, {}, {}
      for c = 1, C do self.sum[c], self.squared_sum[c], self.sse[c], self.count[c] = 0, 0, 0, 0 end
    end
    for c = 1, C do
      self.sum[c], self.squared_sum[c] = self.sum[c] + parts[1][c], self.squared_sum[c] + parts[2][c]
      self.sse[c], self.count[c] = self.sse[c] + parts[3][c], self.count[c] + parts[4][c]
    end
    self.num_samples = self.num_samples + p.size
  end,
  function(self)
    if self.sum == nil then return self.class_aggregation == "none" and {} or 0 end
    local raw, total = {}, {}
    for c = 1, #self.sum do
      local mean = self.sum[c] / self.count[c]
      total[c] = self.squared_sum[c] - self.sum[c] * mean
      raw[c] = 1 - self.sse[c] / total[c]
      if raw[c] == math.huge or raw[c] == -math.huge then raw[c] = 0 end
    end
    local r2
    if self.class_aggregation == "none" then
      r2 = raw
    elseif self.class_aggregation == "uniform_average" then
      r2 = 0
      for c = 1, #raw do r2 = r2 + raw[c] end
      r2 = r2 / #raw
    else
      local s, sw = 0, 0
      for c = 1, #raw do s, sw = s + total[c] * raw[c], sw + total[c] end
      r2 = s / sw
    end
    local n, k = self.num_samples, self.num_regressors
    if k ~= 0 and k < n - 1 then
      local function adjust(v) return 1 - (1 - v) * (n - 1) / (n - k - 1) end
      if type(r2) == "table" then for c = 1, #r2 do r2[c] = adjust(r2[c]) end else r2 = adjust(r2) end
    end
    return r2
  end,
  function(self) self.sum, self.squared_sum, self.sse, self.count, self.num_samples = nil, nil, nil, nil, 0 end)

-- ---- IoU -------------------------------------------------------------------------------------

-- The confusion matrix of class numbers 1..num_classes: y_true and y_pred as labels (or,
-- sparse_y_true / sparse_y_pred false, one-hot or scores whose argmax along axis is the
-- class), flattened; an entry whose label or prediction is outside 1..num_classes, or
-- whose label is ignore_class, counts for nothing. Weights (N) are spread over each
-- sample's entries. The states are float sums (Keras's default int dtype would truncate
-- float weights).
local function iou_update(self, y, p, w)
  local fname = getmetatable(self).__name .. ":update_state"
  if not is_array(y) then argerror(fname, 1, "y_true must be an array, got %s", type_name(y)) end
  if not is_array(p) then argerror(fname, 2, "y_pred must be an array, got %s", type_name(p)) end
  if w ~= nil and not is_array(w) and type(w) ~= "number" then
    argerror(fname, 3, "sample_weight must be an array or a number, got %s", type_name(w))
  end
  if self.threshold ~= nil then
    if not p.dtype:match("float") then p = p:astype("float32") end
    p = p:ge(self.threshold):astype("int64") + 1
    y = y:to(p.device):astype("int64") + 1
  else
    if not self.sparse_y_true then y = y:argmax(self.axis) end
    if not self.sparse_y_pred then p = p:argmax(self.axis) end
    y, p = y:astype("int64"), p:to(y.device):astype("int64")
  end
  if y.size ~= p.size then
    raise("%s: %d labels and %d predictions (after argmax)", fname, y.size, p.size)
  end
  if y.ndim == 0 then y, p = y:reshape(1), p:reshape(1) end
  local weight
  if w ~= nil then
    if type(w) == "number" then
      weight = gpu.full(y.shape, w, { dtype = "float64", device = y.device })
    elseif w.size == y.size then
      weight = w:to(y.device):astype("float64"):reshape(table.unpack(y.shape))
    elseif w.ndim == 1 and w.shape[1] == y.shape[1] then
      weight = wide(w:to(y.device):astype("float64"), y.ndim) * gpu.ones(y.shape, { dtype = "float64", device = y.device })
    else
      raise("%s: sample_weight %s does not match the labels %s", fname, shape_str(w.shape), shape_str(y.shape))
    end
    weight = weight:reshape(-1)
  end
  y, p = y:reshape(-1), p:reshape(-1)
  local C = self.num_classes
  local ok = y:ge(1):logical_and(y:le(C)):logical_and(p:ge(1)):logical_and(p:le(C))
  if self.ignore_class ~= nil then ok = ok:logical_and(y:ne(self.ignore_class)) end
  local okf = ok:astype("float64")
  weight = weight and weight * okf or okf
  local idx = gpu.where(ok, (y - 1) * C + (p - 1), 0)
  local cm = gpu.bincount(idx, { minlength = C * C, weights = weight }):totable()
  for i = 1, C * C do self.cm[i] = self.cm[i] + cm[i] end
end
-- the mean of the target classes' IoU = tp / (true + predicted - tp), over those that
-- occur (true + predicted - tp > 1e-9), as Keras (eps 1e-7 in both divisions)
local function iou_result(self)
  local C, cm = self.num_classes, self.cm
  local s, valid = 0, 0
  for _, c in ipairs(self.target_class_ids) do
    local tp, rows, cols = cm[(c - 1) * C + c], 0, 0
    for j = 1, C do rows, cols = rows + cm[(c - 1) * C + j], cols + cm[(j - 1) * C + c] end
    local denom = rows + cols - tp
    if denom > 1e-9 then s, valid = s + tp / (denom + EPS), valid + 1 end
  end
  return s / (valid + EPS)
end
local function iou_reset(self)
  self.cm = {}
  for i = 1, self.num_classes ^ 2 do self.cm[i] = 0 end
end
local function iou_init(self, o, fname)
  self.num_classes, self.ignore_class, self.axis = o.num_classes, o.ignore_class, o.axis
  self.sparse_y_true = o.sparse_y_true
  self.sparse_y_pred = o.sparse_y_pred
  if o.target_class_ids == nil then
    self.target_class_ids = {}
    for c = 1, o.num_classes do self.target_class_ids[c] = c end
  else
    local ids = o.target_class_ids
    if #ids == 0 then argerror(fname, 2, "target_class_ids is an empty list") end
    for i, c in ipairs(ids) do
      if math.type(c) ~= "integer" or c < 1 or c > o.num_classes then
        argerror(fname, 2, "target_class_ids[%d] must be a class number in 1..%d, got %s", i, o.num_classes, tostring(c))
      end
    end
    self.target_class_ids = { table.unpack(ids) }
  end
end
local NUM_CLASSES = { "num_classes", { type = "integer", min = 1 } }
local TARGET_IDS = { "target_class_ids", { type = "table", what = "a list of class numbers" } }
local function iou_keys(default, sparse_true)
  local keys = { name = NAME(default), ignore_class = { type = "integer" }, axis = { type = "integer", default = -1 },
    sparse_y_pred = { type = "boolean", default = sparse_true } }
  if sparse_true then keys.sparse_y_true = { type = "boolean", default = true } end
  return keys
end
local function onehot_init(self, o, fname)
  o.sparse_y_true = false
  iou_init(self, o, fname)
end
class("IoU", iou_keys("iou", true), "3, {1, 2}, %s", iou_init, iou_update, iou_result, iou_reset,
  { NUM_CLASSES, TARGET_IDS })
class("MeanIoU", iou_keys("mean_iou", true), "3, %s", iou_init, iou_update, iou_result, iou_reset, { NUM_CLASSES })
class("OneHotIoU", iou_keys("one_hot_iou", false), "3, {1, 2}, %s", onehot_init, iou_update, iou_result, iou_reset,
  { NUM_CLASSES, TARGET_IDS })
class("OneHotMeanIoU", iou_keys("one_hot_mean_iou", false), "3, %s", onehot_init, iou_update, iou_result, iou_reset,
  { NUM_CLASSES })

-- BinaryIoU([target_class_ids = {0, 1}, ] {threshold = 0.5}): IoU of the two classes of
-- binary labels, 0 and 1 (the label values), a prediction >= threshold being 1; the
-- mean over the listed ones
class("BinaryIoU", { name = NAME("binary_iou"), threshold = { type = "number", default = 0.5 } }, "{0, 1}, %s",
  function(self, o, fname)
    local ids = o.target_class_ids or { 0, 1 }
    if #ids == 0 then argerror(fname, 1, "target_class_ids is an empty list") end
    self.target_class_ids = {}
    for i, c in ipairs(ids) do
      if c ~= 0 and c ~= 1 then argerror(fname, 1, "target_class_ids[%d] must be 0 or 1, got %s", i, tostring(c)) end
      self.target_class_ids[i] = math.tointeger(c) + 1
    end
    self.num_classes, self.threshold = 2, o.threshold
  end, iou_update, iou_result, iou_reset,
  { { "target_class_ids", { type = "table", optional = true, what = "a list of 0 and 1" } } })

-- ---- the losses' means -----------------------------------------------------------------------

-- A metric that is the weighted mean over samples of a loss's per-sample value (Keras's
-- MeanMetricWrapper of the loss): per(self, y, p) -> (N)
local function loss_mean(name, default, keys, per)
  keys.name = NAME(default)
  class(name, keys, nil, function(self, o) self.o = o end, function(self, y, p, w)
    local fname = name .. ":update_state"
    if not is_array(y) then argerror(fname, 1, "y_true must be an array, got %s", type_name(y)) end
    if not is_array(p) then argerror(fname, 2, "y_pred must be an array, got %s", type_name(p)) end
    if w ~= nil and not (is_array(w) or type(w) == "number") then
      argerror(fname, 3, "sample_weight must be an array or a number, got %s", type_name(w))
    end
    local v = options.call(fname, per, self, y, p)
    if v.ndim == 0 then v = v:reshape(1) end
    if type(w) == "number" then w = gpu.full({ v.shape[1] }, w, { dtype = "float64", device = v.device }) end
    if w ~= nil and (w.ndim ~= 1 or w.shape[1] ~= v.shape[1]) then
      raise("%s: sample_weight %s does not match the %d samples", fname, shape_str(w.shape), v.shape[1])
    end
    add_mean(self, v:astype("float64"), w and w:to(v.device):astype("float64"))
  end, mean_result, mean_reset)
end

-- y and p of one shape (p (N, 1) beside y (N) as (N)), floating; (N) as (N, 1): a value
-- per sample, as the other metrics of this file take one
local function pair(self, y, p)
  y, p = batch(self, y, p)
  if p.ndim == 1 then y, p = y:reshape(-1, 1), p:reshape(-1, 1) end
  return y:astype(p.dtype), p
end
local function through(loss, opts_of)
  return function(self, y, p)
    y, p = pair(self, y, p)
    local o = opts_of and opts_of(self.o) or {}
    o.reduction = "none"
    return losses[loss](p, y, o)
  end
end
local logits = { type = "boolean", default = false }
local smooth = { type = "number", min = 0, max = 1, default = 0 }

loss_mean("MeanAbsoluteError", "mean_absolute_error", {}, function(self, y, p)
  y, p = pair(self, y, p)
  return last_mean((p - y):abs())
end)
loss_mean("MeanSquaredError", "mean_squared_error", {}, function(self, y, p)
  y, p = pair(self, y, p)
  return last_mean((p - y):square())
end)
-- Keras's: probabilities clipped to [eps, 1 - eps], labels smoothed towards 1/2
loss_mean("BinaryCrossentropy", "binary_crossentropy", { from_logits = logits, label_smoothing = smooth },
  function(self, y, p)
    y, p = pair(self, y, p)
    local ls = self.o.label_smoothing
    if ls > 0 then y = y * (1 - ls) + 0.5 * ls end
    local per
    if self.o.from_logits then
      per = p:softplus() - y * p
    else
      local q = p:clip(EPS, 1 - EPS)
      per = -(y * q:log() + (1 - y) * (1 - q):log())
    end
    return last_mean(per)
  end)
loss_mean("CategoricalCrossentropy", "categorical_crossentropy", { from_logits = logits, label_smoothing = smooth },
  function(self, y, p)
    y, p = pair(self, y, p)
    if p.ndim == 1 then y, p = y:reshape(1, -1), p:reshape(1, -1) end
    return losses.categorical_crossentropy(p, y, { from_logits = self.o.from_logits,
      label_smoothing = self.o.label_smoothing, reduction = "none" })
  end)
-- labels 1..C (N) or (N, 1) beside predictions (N, C)
loss_mean("SparseCategoricalCrossentropy", "sparse_categorical_crossentropy", { from_logits = logits },
  function(self, y, p)
    if y.ndim == 2 and y.shape[2] == 1 then y = y:reshape(-1) end
    return losses.sparse_categorical_crossentropy(p, y:to(p.device), { from_logits = self.o.from_logits,
      reduction = "none" })
  end)
loss_mean("KLDivergence", "kl_divergence", {}, through("kl_divergence"))
loss_mean("Poisson", "poisson", {}, through("poisson"))
loss_mean("Hinge", "hinge", {}, through("hinge"))
loss_mean("SquaredHinge", "squared_hinge", {}, through("squared_hinge"))
loss_mean("CategoricalHinge", "categorical_hinge", {}, through("categorical_hinge"))

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
  log_cosh_error = K.LogCoshError, r2_score = K.R2Score, binary_crossentropy = K.BinaryCrossentropy,
  categorical_crossentropy = K.CategoricalCrossentropy, sparse_categorical_crossentropy = K.SparseCategoricalCrossentropy,
  kl_divergence = K.KLDivergence, kld = K.KLDivergence, poisson = K.Poisson, hinge = K.Hinge,
  squared_hinge = K.SquaredHinge, categorical_hinge = K.CategoricalHinge,
}

for cls, name in pairs(classes) do options.guard_methods(cls, name, "metric", is_metric) end
return K
