-- gpu.nn.losses: the loss functions, their modules (nn.CrossEntropyLoss{...}(z, y)), the
-- names compile{loss = ...} accepts (nn.losses), one_hot, and the one check of class
-- labels that every label-taking function uses.
--
-- Class labels are 1-based: an array of whole numbers 1..C (an integer dtype, or a float
-- one holding whole numbers), checked before anything is computed.

local gpu = require "gpu"
local options = require "gpu.options"
local F = require "gpu.nn.functional"
local module = require "gpu.nn.module"

local L = {}
local is_array, raise, argerror = options.is_array, options.raise, options.argerror
local check_array, shape_str, type_name = options.check_array, options.shape_str, options.type_name

-- ---- labels ----------------------------------------------------------------------------------

-- The smallest and largest element of a and, for a float a, the largest fractional part,
-- as Lua numbers in one copy back (each :item() would wait for the device).
local function bounds(a)
  local parts = { a:min(), a:max() }
  if not a.dtype:match("int") then parts[3] = (a - a:floor()):abs():max():astype(parts[1].dtype) end
  local b = gpu.stack(parts):totable()
  return b[1], b[2], b[3] or 0
end

-- check_labels(fname, labels, C [, {n =, argn = 2, what = "labels", integer = false}]) ->
-- the largest label: labels is an array of whole numbers in 1..C (C nil: any >= 1), of
-- shape (n) when n is given; integer: an integer dtype is required. An empty array passes.
function L.check_labels(fname, labels, C, o)
  o = o or {}
  local what, argn = o.what or "labels", o.argn or 2
  local range = C and ("1..%d"):format(C) or "1, 2, ..."
  if not is_array(labels) then
    argerror(fname, argn, "%s: a gpu.array of class numbers %s expected, got %s", what, range, type_name(labels))
  end
  check_array(labels, fname, argn, what)
  local int = labels.dtype:match("int") ~= nil
  if labels.dtype == "bool" or (o.integer and not int) then
    raise("%s: %s must be an integer array, got %s", fname, what, labels.dtype)
  end
  if o.n and (labels.ndim ~= 1 or labels.shape[1] ~= o.n) then
    raise("%s: %d predictions but %s of shape %s (expected (%d))", fname, o.n, what, shape_str(labels.shape), o.n)
  end
  if labels.size == 0 then return 0 end
  local lo, hi, frac = bounds(labels)
  if lo < 1 or (C and hi > C) then
    raise("%s: %s are 1-based (%s); found %s", fname, what, range, tostring(lo < 1 and lo or hi))
  end
  if frac ~= 0 then raise("%s: %s must be whole class numbers %s (found a fraction)", fname, what, range) end
  return math.tointeger(hi) or hi
end
local check_labels = L.check_labels

local ONE_HOT = options.declare("nn.one_hot", {
  dtype = { type = "dtype", default = "float32" },
}, { example = "gpu.nn.one_hot(gpu.array({1, 2}, {dtype = 'int64'}), 3, %s)" })

-- one_hot(labels (...) [, C] [, {dtype = "float32"}]) -> (..., C); C defaults to the largest label
function L.one_hot(labels, C, opts)
  if type(C) == "table" and opts == nil then C, opts = nil, C end      -- one_hot(labels, {dtype =})
  local o = ONE_HOT:check(opts, 3)
  if math.type(C) == "float" and C == math.floor(C) and math.abs(C) < 2 ^ 63 then C = math.tointeger(C) end
  C = options.value(C, { type = "integer", min = 1, optional = true }, "nn.one_hot", 2, "num_classes")
  local hi = check_labels("nn.one_hot", labels, C, { argn = 1 })
  return F.onehot(labels, C or math.max(hi, 1), o.dtype, labels.device)
end

-- ---- losses ----------------------------------------------------------------------------------

local function reduce_loss(per, reduction)
  if reduction == "sum" then return per:sum() end
  if reduction == "none" then return per end
  return per:mean()
end

-- Predictions (N, C) with N, C >= 1.
local function check_pred(fname, pred, what)
  check_array(pred, fname, 1, what)
  if pred.ndim ~= 2 or pred.shape[2] < 1 then
    raise("%s: %s must be (N, C), got shape %s", fname, what, shape_str(pred.shape))
  end
  if pred.shape[1] == 0 then raise("%s: the batch is empty (%s of shape %s)", fname, what, shape_str(pred.shape)) end
  return pred.shape[1], pred.shape[2]
end

-- Two arrays of one shape.
local function same_shape(fname, a, b)
  check_array(a, fname, 1, "input")
  check_array(b, fname, 2, "target")
  if shape_str(a.shape) ~= shape_str(b.shape) then
    raise("%s: input %s and target %s differ in shape", fname, shape_str(a.shape), shape_str(b.shape))
  end
end

-- -log p of the target classes t (N, C), probabilities clipped as Keras does.
local function nll_of_probs(p, t, reduction)
  return reduce_loss(-(p:clip(1e-7, 1 - 1e-7):log() * t):sum(2), reduction)
end

-- The loss functions, by name: fn(a, b, o) with o the checked options.
local defs = {}

-- cross_entropy(logits (N, C), labels (N) in 1..C [, {label_smoothing =, reduction =}])
function defs.cross_entropy(logits, labels, o)
  local N, C = check_pred("nn.cross_entropy", logits, "logits")
  check_labels("nn.cross_entropy", labels, C, { n = N })
  return F.ce_from_logits("nn.cross_entropy", logits, labels, nil, o.label_smoothing, o.reduction)
end

-- Keras: sparse_categorical_crossentropy(y_pred, labels): y_pred are probabilities (a
-- softmax output: computed from its logits) or logits with {from_logits = true}.
function defs.sparse_categorical_crossentropy(pred, labels, o)
  local fname = "nn.sparse_categorical_crossentropy"
  local N, C = check_pred(fname, pred, "predictions")
  check_labels(fname, labels, C, { n = N })
  local z = o.from_logits and pred or F.logits_of(pred)
  if z then return F.ce_from_logits(fname, z, labels, nil, 0, o.reduction) end
  return nll_of_probs(pred, F.onehot(labels, C, pred.dtype, pred.device), o.reduction)
end

-- categorical_crossentropy(pred, target (N, C) [, {from_logits =, label_smoothing =}])
function defs.categorical_crossentropy(pred, target, o)
  local fname = "nn.categorical_crossentropy"
  local _, C = check_pred(fname, pred, "predictions")
  check_array(target, fname, 2, "targets")
  if shape_str(pred.shape) ~= shape_str(target.shape) then
    raise("%s: predictions %s and targets %s must have the same (N, C) shape", fname, shape_str(pred.shape),
      shape_str(target.shape))
  end
  local t = target:astype(pred.dtype)
  if o.label_smoothing > 0 then t = t * (1 - o.label_smoothing) + o.label_smoothing / C end
  local z = o.from_logits and pred or F.logits_of(pred)
  if z then return F.ce_from_logits(fname, z, nil, t:astype(z.dtype), 0, o.reduction) end
  return nll_of_probs(pred, t, o.reduction)
end

-- nll_loss(log_probs (N, C), labels (N) in 1..C): -log_probs[label], PyTorch's
function defs.nll_loss(logp, labels, o)
  local N, C = check_pred("nn.nll_loss", logp, "log-probabilities")
  check_labels("nn.nll_loss", labels, C, { n = N })
  return reduce_loss(-(logp * F.onehot(labels, C, logp.dtype, logp.device)):sum(2), o.reduction)
end

function defs.mse_loss(a, b, o)
  same_shape("nn.mse_loss", a, b)
  local d = a - b
  return reduce_loss(d * d, o.reduction)
end

function defs.binary_cross_entropy(p, y, o)
  same_shape("nn.binary_cross_entropy", p, y)
  local lp = p:log():clip(-100, nil)
  local lq = (1 - p):log():clip(-100, nil)
  return reduce_loss(-(y * lp + (1 - y) * lq), o.reduction)
end

function defs.binary_cross_entropy_with_logits(z, y, o)
  same_shape("nn.binary_cross_entropy_with_logits", z, y)
  return reduce_loss(z:softplus() - y * z, o.reduction)
end

-- ---- declarations: each loss as a function and (some) as a module ----------------------------------

local reduction = { choices = { "mean", "sum", "none" }, default = "mean" }
local no_weights = { unsupported = "class weights are not implemented" }
local smoothing = { type = "number", min = 0, max = 1, default = 0 }
local logits_flag = { type = "boolean", default = false }
local labels3 = "gpu.zeros(2, 3), gpu.array({1, 3}, {dtype = 'int64'})"
local same2 = "gpu.full({2}, 0.5), gpu.ones(2)"

local decls = {
  { "cross_entropy", "CrossEntropyLoss", labels3, { label_smoothing = smoothing, reduction = reduction,
    weight = no_weights, ignore_index = { unsupported = true } } },
  { "sparse_categorical_crossentropy", nil, labels3, { from_logits = logits_flag, reduction = reduction } },
  { "categorical_crossentropy", nil, "gpu.full({2, 2}, 0.5), gpu.eye(2)", { from_logits = logits_flag,
    label_smoothing = smoothing, reduction = reduction } },
  { "nll_loss", "NLLLoss", labels3, { reduction = reduction, weight = no_weights, ignore_index = { unsupported = true } } },
  { "mse_loss", "MSELoss", same2, { reduction = reduction } },
  { "binary_cross_entropy", "BCELoss", same2, { reduction = reduction, weight = no_weights } },
  { "binary_cross_entropy_with_logits", "BCEWithLogitsLoss", same2, { reduction = reduction, weight = no_weights,
    pos_weight = no_weights } },
}

-- The function nn.<name>(a, b [, opts]) and the module class nn.<Module>([opts]), whose
-- options are checked once, when it is made.
for _, d in ipairs(decls) do
  local name, module_name, args, keys = d[1], d[2], d[3], d[4]
  local fn = defs[name]
  local decl = options.declare("nn." .. name, keys, { example = ("gpu.nn.%s(%s, %%s)"):format(name, args) })
  L[name] = function(a, b, opts) return fn(a, b, decl:check(opts, 3)) end
  if module_name then
    local mdecl = options.declare("nn." .. module_name, keys,
      { example = ("gpu.nn.%s(%%s)(%s)"):format(module_name, args) })
    local cls = module.class(module_name)
    function cls:init(opts) self.opts = mdecl:check(opts, 1) end
    function cls:forward(a, b) return fn(a, b, self.opts) end
    L[module_name] = cls
  end
end

L.cross_entropy_loss = L.cross_entropy
L.mse = L.mse_loss

-- losses by Keras name (compile{loss = "..."})
L.losses = {
  sparse_categorical_crossentropy = L.sparse_categorical_crossentropy,
  categorical_crossentropy = L.categorical_crossentropy,
  cross_entropy = L.cross_entropy,
  mse = L.mse_loss, mean_squared_error = L.mse_loss,
  binary_crossentropy = L.binary_cross_entropy,
  binary_crossentropy_from_logits = L.binary_cross_entropy_with_logits,
}

return L
