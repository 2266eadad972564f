-- gpu.nn.metrics: the metrics compile{metrics = {...}} accepts, with Keras's numbers.
--
-- Each metric is fn(pred, y) -> the sum over the batch's samples of the per-sample value
-- (a 0-d array on pred's device, read only when shown); fit and evaluate divide the sums
-- by the number of samples, as Keras's MeanMetricWrapper averages over samples.
-- Per-sample values (Keras's): the mean over the last axis of |y - pred| (mae), of
-- (y - pred)^2 (mse), of (pred > 0.5) == y (binary_accuracy); argmax(pred) == argmax(y)
-- (categorical_accuracy), == the label (sparse_categorical_accuracy; labels 1..C); the
-- target among the k largest predictions (top_k_categorical_accuracy,
-- sparse_top_k_categorical_accuracy; k = 5, a tie with the k-th counts as in). A
-- prediction (N, 1) beside targets (N) is taken as (N), as Keras squeezes it.
local gpu = require "gpu"
local options = require "gpu.options"
local losses = require "gpu.nn.losses"

local raise, shape_str, is_array = options.raise, options.shape_str, options.is_array
local M = {}

local function same_shape(name, pred, y)
  if not is_array(y) then raise("%s: the targets are %s, not an array", name, options.type_name(y)) end
  if y.ndim == pred.ndim - 1 and pred.shape[pred.ndim] == 1 then pred = pred:reshape(y.shape) end
  if shape_str(pred.shape) ~= shape_str(y.shape) then
    raise("%s: predictions %s and targets %s differ in shape", name, shape_str(pred.shape), shape_str(y.shape))
  end
  return pred, y
end

-- the sum over samples of the mean over the last axis (a 1-D value: each element a sample)
local function per_sample_sum(v)
  if v.ndim <= 1 then return v:sum() end
  local n = v.shape[v.ndim]
  return v:sum() / n
end

local function floating(pred, y)
  if not y.dtype:find("float") then y = y:astype(pred.dtype) end
  return y
end

-- The values each metric is the per-sample mean of (shapes checked), for the counting
-- forms here and for compile's weighted_metrics (nn/training.lua), which weigh them
local values = {}
function values.mae(pred, y)
  pred, y = same_shape("mae", pred, y)
  return (pred - floating(pred, y)):abs()
end
function values.mse(pred, y)
  pred, y = same_shape("mse", pred, y)
  return (pred - floating(pred, y)):square()
end
function values.binary_accuracy(pred, y)
  pred, y = same_shape("binary_accuracy", pred, y)
  local hit = (pred:gt(0.5)):astype("float32"):eq(floating(pred, y):astype("float32"))
  return hit:astype("float32")
end
function M.mae(pred, y) return per_sample_sum(values.mae(pred, y)) end
function M.mse(pred, y) return per_sample_sum(values.mse(pred, y)) end
function M.binary_accuracy(pred, y) return per_sample_sum(values.binary_accuracy(pred, y)) end

local function two_d(name, pred)
  if pred.ndim ~= 2 then raise("%s: expected predictions (N, C), got %s", name, shape_str(pred.shape)) end
end
local function labels(name, pred, y)
  if not is_array(y) or y.ndim ~= 1 or y.shape[1] ~= pred.shape[1] then
    raise("%s: expected labels (%d) for predictions %s, got %s", name, pred.shape[1], shape_str(pred.shape),
      is_array(y) and shape_str(y.shape) or options.type_name(y))
  end
  return y:astype("int64")
end
local function onehot_targets(name, pred, y)
  if not is_array(y) or shape_str(y.shape) ~= shape_str(pred.shape) then
    raise("%s: expected one-hot targets %s, got %s", name, shape_str(pred.shape),
      is_array(y) and shape_str(y.shape) or options.type_name(y))
  end
  return y:argmax(2)
end

function values.categorical_accuracy(pred, y)
  two_d("categorical_accuracy", pred)
  return pred:argmax(2):eq(onehot_targets("categorical_accuracy", pred, y))
end
function values.sparse_categorical_accuracy(pred, y)
  two_d("sparse_categorical_accuracy", pred)
  return pred:argmax(2):eq(labels("sparse_categorical_accuracy", pred, y))
end
function M.categorical_accuracy(pred, y) return values.categorical_accuracy(pred, y):sum() end
function M.sparse_categorical_accuracy(pred, y) return values.sparse_categorical_accuracy(pred, y):sum() end
M._values = values

-- in_top_k(pred, target labels, k): the rows whose target's prediction has fewer than k
-- predictions above it
local function in_top_k(pred, t, k)
  local oh = losses.one_hot(t, pred.shape[2], { dtype = pred.dtype })
  local pt = (pred * oh):sum(2, { keepdims = true })
  local above = pred:gt(pt):astype("int64"):sum(2)
  return above:lt(k):sum()
end
-- the metric maker of k: pred's rows whose class targets(name, pred, y) is in its top k
local function top_k_metric(name, targets)
  return function(k)
    return function(pred, y)
      two_d(name, pred)
      return in_top_k(pred, targets(name, pred, y), k)
    end
  end
end
M.top_k = top_k_metric("top_k_categorical_accuracy", onehot_targets)
M.sparse_top_k = top_k_metric("sparse_top_k_categorical_accuracy", labels)
M.top_k_categorical_accuracy = M.top_k(5)
M.sparse_top_k_categorical_accuracy = M.sparse_top_k(5)
M.mean_absolute_error, M.mean_squared_error = M.mae, M.mse

M.names = { "binary_accuracy", "categorical_accuracy", "mae", "mean_absolute_error", "mean_squared_error", "mse",
            "sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy", "top_k_categorical_accuracy" }
-- Keras's stateful metric classes (lua/gpu/nn/keras_metrics.lua): nn.metrics.Precision{...}
local KM = require "gpu.nn.keras_metrics"
for name, cls in pairs(KM) do
  if type(cls) == "table" and name:match("^%u") then M[name] = cls end
end
M.is_metric, M.by_name = KM.is_metric, KM.by_name
return options.count_all("nn.metrics.", M)
