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
local autograd = require "gpu.autograd"

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

-- check_labels(fname, labels, C [, {n =, argn = 2, what = "labels", integer = false, zero =
-- false}]) -> the largest label: labels is an array of whole numbers in 1..C (C nil: any >= 1;
-- zero: 0 too, a padding id), of shape (n) when n is given; integer: an integer dtype is
-- required. An empty array passes.
function L.check_labels(fname, labels, C, o)
  o = o or {}
  local what, argn = o.what or "labels", o.argn or 2
  local first = o.zero and 0 or 1
  local range = C and ("%d..%d"):format(first, C) or ("%d, %d, ..."):format(first, first + 1)
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
  if lo < first or (C and hi > C) then
    raise("%s: %s are 1-based%s (%s); found %s", fname, what, o.zero and ", 0 the padding" or "", range,
      tostring(lo < first and lo or hi))
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

-- a and b (named what_a, what_b in the message) of one shape
local function shapes_match(fname, a, what_a, b, what_b)
  if shape_str(a.shape) ~= shape_str(b.shape) then
    raise("%s: %s %s and %s %s differ in shape", fname, what_a, shape_str(a.shape), what_b, shape_str(b.shape))
  end
end

-- Two arrays of one shape.
local function same_shape(fname, a, b)
  check_array(a, fname, 1, "input")
  check_array(b, fname, 2, "target")
  shapes_match(fname, a, "input", b, "target")
end

-- -log p of the target classes t (N, C), as Keras does: each row of p divided by its sum
-- first (scores that are not quite a distribution), then clipped to [1e-7, 1 - 1e-7].
local function nll_of_probs(p, t, reduction)
  local q = p / p:sum(2, { keepdims = true })
  return reduce_loss(-(q:clip(1e-7, 1 - 1e-7):log() * t):sum(2), reduction)
end

-- The loss functions, by name: fn(a, b, o) with o the checked options.
local defs = {}

-- Class scores (N, C) or (N, C, d1, ...) with labels (N) or (N, d1, ...) as rows (M, C)
-- and labels (M): PyTorch's K-dimensional form, the class axis second. Returns the rows,
-- the labels and the shape of a reduction = "none" result.
local function class_rows(fname, z, labels, what)
  check_array(z, fname, 1, what)
  if z.ndim < 2 or z.shape[2] < 1 then
    raise("%s: %s must be (N, C) or (N, C, d1, ...), got shape %s", fname, what, shape_str(z.shape))
  end
  if z.shape[1] == 0 then raise("%s: the batch is empty (%s of shape %s)", fname, what, shape_str(z.shape)) end
  if z.ndim == 2 then return z, labels, { z.shape[1] } end
  local s = z.shape
  local C = s[2]
  local out_shape, perm = { s[1] }, { 1 }
  for i = 3, #s do out_shape[#out_shape + 1] = s[i]; perm[#perm + 1] = i end
  perm[#perm + 1] = 2
  if is_array(labels) and shape_str(labels.shape) ~= shape_str(out_shape) then
    raise("%s: %s of shape %s need labels of shape %s, got %s", fname, what, shape_str(s), shape_str(out_shape),
      shape_str(labels.shape))
  end
  return z:permute(perm):reshape(-1, C), is_array(labels) and labels:reshape(-1) or labels, out_shape
end

-- The class weight option (C) of x's device, or nil.
local function class_weight(fname, w, C, x)
  if w == nil then return nil end
  if w.ndim ~= 1 or w.shape[1] ~= C then
    raise("%s: weight must hold one value per class (%d), got shape %s", fname, C, shape_str(w.shape))
  end
  if w.device ~= x.device then raise("%s: weight is on %s but the input on %s (use :to())", fname, w.device, x.device) end
  return w:astype(x.dtype)
end

-- The negative log-likelihood family (nll_loss, cross_entropy) with class weights, an
-- ignored label and label smoothing, as PyTorch computes it: the mean divides by the
-- summed weights of the labels taken part (their count without weights), the smoothing
-- term's mean too (PyTorch 1.13's).
local function nll_family(fname, z, labels, o, from_logits, what)
  if is_array(labels) then check_array(labels, fname, 2, "labels") end
  local rows, lab, out_shape = class_rows(fname, z, labels, what)
  local M, C = rows.shape[1], rows.shape[2]
  local w = class_weight(fname, o.weight, C, z)
  local eps, reduction, ii = o.label_smoothing or 0, o.reduction, o.ignore_index
  -- an ignored label can only be there if it lies between the smallest and largest label
  local hits = false
  if is_array(lab) and lab.size > 0 and lab.dtype ~= "bool" then
    local lo, hi = bounds(lab)
    hits = ii >= lo and ii <= hi
  end
  local valid = hits and lab:ne(ii) or nil
  local safe = hits and gpu.where(valid, lab, 1) or lab
  check_labels(fname, safe, C, { n = M })
  local per
  if from_logits and w == nil and not hits then
    return F.ce_from_logits(fname, rows, safe, nil, eps, reduction == "none" and "none" or reduction), out_shape
  end
  local logp = from_logits and F.log_softmax(rows, -1) or rows
  local oh = F.onehot(safe, C, rows.dtype, rows.device)
  local nll = -(logp * oh):sum(2)
  local wy = w and (oh * w):sum(2) or nil
  if wy then nll = nll * wy end
  local smooth
  if eps > 0 then smooth = -(w and logp * w or logp):sum(2) end
  local vm = valid and valid:astype(rows.dtype) or nil
  if vm then
    nll = nll * vm
    if smooth then smooth = smooth * vm end
  end
  if reduction == "none" then
    per = smooth and nll * (1 - eps) + smooth * (eps / C) or nll
    return per, out_shape
  end
  if reduction == "sum" then
    per = nll:sum()
    if smooth then per = per * (1 - eps) + smooth:sum() * (eps / C) end
    return per
  end
  local denom = wy and (vm and wy * vm or wy):sum() or (vm and vm:sum() or M)
  per = nll:sum() / denom
  if smooth then
    per = per * (1 - eps) + smooth:sum() / denom * (eps / C)
  end
  return per
end

local function shaped(per, out_shape)
  if out_shape and per.ndim == 1 and #out_shape > 1 then return per:reshape(out_shape) end
  return per
end

-- cross_entropy(logits (N, C) or (N, C, d...), labels (N) or (N, d...) in 1..C [,
-- {weight, ignore_index = -100, label_smoothing, reduction}])
function defs.cross_entropy(logits, labels, o)
  if is_array(logits) and is_array(labels) and not logits:is_closed() and not labels:is_closed()
      and labels.dtype:match("float") and logits.ndim >= 2
      and shape_str(labels.shape) == shape_str(logits.shape) then
    -- class probabilities as targets (PyTorch >= 1.10): -sum_c w_c t_c log_softmax(z)_c
    local fname = "nn.cross_entropy"
    if o.ignore_index ~= -100 then raise("%s: ignore_index applies to class labels, not to probability targets", fname) end
    local C = logits.shape[2]
    local t = labels:astype(logits.dtype)
    if o.label_smoothing > 0 then t = t * (1 - o.label_smoothing) + o.label_smoothing / C end
    local lsm = F.log_softmax(logits, 2)
    local prod = t * lsm
    if o.weight ~= nil then
      if o.weight.ndim ~= 1 or o.weight.shape[1] ~= C then
        raise("%s: weight must hold one value per class (%d), got shape %s", fname, C, shape_str(o.weight.shape))
      end
      local wshape = { 1, C }
      for _ = 3, logits.ndim do wshape[#wshape + 1] = 1 end
      prod = prod * o.weight:to(logits.device):astype(logits.dtype):reshape(table.unpack(wshape))
    end
    return reduce_loss(-prod:sum(2), o.reduction)
  end
  return shaped(nll_family("nn.cross_entropy", logits, labels, o, true, "logits"))
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

-- nll_loss(log_probs (N, C) or (N, C, d...), labels in 1..C [, {weight, ignore_index =
-- -100, reduction}]): -weight[label] * log_probs[label], PyTorch's
function defs.nll_loss(logp, labels, o)
  return shaped(nll_family("nn.nll_loss", logp, labels, o, false, "log-probabilities"))
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

function defs.l1_loss(a, b, o)
  same_shape("nn.l1_loss", a, b)
  return reduce_loss((a - b):abs(), o.reduction)
end

-- smooth_l1_loss: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta 0: L1)
function defs.smooth_l1_loss(a, b, o)
  same_shape("nn.smooth_l1_loss", a, b)
  local d = (a - b):abs()
  if o.beta == 0 then return reduce_loss(d, o.reduction) end
  local q = d:minimum(o.beta)                 -- the quadratic part, finite on both branches
  return reduce_loss(gpu.where(d:lt(o.beta), q * q * (0.5 / o.beta), d - 0.5 * o.beta), o.reduction)
end

-- huber_loss: 0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta)
function defs.huber_loss(a, b, o)
  same_shape("nn.huber_loss", a, b)
  local d = (a - b):abs()
  local q = d:minimum(o.delta)
  return reduce_loss(gpu.where(d:le(o.delta), q * q * 0.5, (d - 0.5 * o.delta) * o.delta), o.reduction)
end

-- kl_div(input = log q, target = p [, {reduction = "mean", log_target = false}]): p (log p -
-- log q) pointwise, 0 where p is 0; "batchmean" divides the sum by the batch size.
function defs.kl_div(lq, p, o)
  same_shape("nn.kl_div", lq, p)
  local per
  if o.log_target then per = p:exp() * (p - lq)
  else
    local pos = p:gt(0)
    per = gpu.where(pos, p * (gpu.where(pos, p, 1):log() - lq), 0)
  end
  if o.reduction == "batchmean" then return per:sum() / (lq.ndim > 0 and lq.shape[1] or 1) end
  return reduce_loss(per, o.reduction)
end

-- Keras's mean absolute error, Huber (delta 1) and categorical hinge, y_pred first
function defs.mae(pred, target, o) return defs.l1_loss(pred, target, o) end
function defs.huber(pred, target, o)
  same_shape("nn.huber", pred, target)
  return defs.huber_loss(pred, target, { delta = o.delta, reduction = o.reduction })
end
-- Keras's kl_divergence(y_pred, y_true): sum over the last axis of t log(t / p), both
-- clipped to [1e-7, 1], averaged over the rest
function defs.kl_divergence(pred, target, o)
  same_shape("nn.kl_divergence", pred, target)
  local t, q = target:astype(pred.dtype):clip(1e-7, 1), pred:clip(1e-7, 1)
  local per = (t * (t / q):log()):sum(-1)
  return reduce_loss(per, o.reduction)
end
function defs.categorical_hinge(pred, target, o)
  same_shape("nn.categorical_hinge", pred, target)
  if pred.ndim == 0 or pred.shape[pred.ndim] == 0 then
    raise("nn.categorical_hinge: predictions must have classes on their last axis, got shape %s", shape_str(pred.shape))
  end
  local t = target:astype(pred.dtype)
  local pos = (t * pred):sum(-1)
  local neg = ((1 - t) * pred):max({ -1 })
  return reduce_loss((neg - pos + 1):maximum(0), o.reduction)
end

-- ---- declarations: each loss as a function and (some) as a module ----------------------------------

local reduction = { choices = { "mean", "sum", "none" }, default = "mean" }
local no_weights = { unsupported = "class weights are not implemented" }
local smoothing = { type = "number", min = 0, max = 1, default = 0 }
local logits_flag = { type = "boolean", default = false }
-- class weights: a 1-D float array, one per class; ignore_index: a label value as written
-- (1-based labels: PyTorch's default -100 never is one)
local class_weights = { type = "array", check = function(v)
  return v.dtype:match("float") ~= nil, "must be a float array (one weight per class)" end }
local ignore = { type = "integer", default = -100 }
local labels3 = "gpu.zeros(2, 3), gpu.array({1, 3}, {dtype = 'int64'})"
local same2 = "gpu.full({2}, 0.5), gpu.ones(2)"

local decls = {
  { "cross_entropy", "CrossEntropyLoss", labels3, { label_smoothing = smoothing, reduction = reduction,
    weight = class_weights, ignore_index = ignore } },
  { "sparse_categorical_crossentropy", nil, labels3, { from_logits = logits_flag, reduction = reduction } },
  { "categorical_crossentropy", nil, "gpu.full({2, 2}, 0.5), gpu.eye(2)", { from_logits = logits_flag,
    label_smoothing = smoothing, reduction = reduction } },
  { "nll_loss", "NLLLoss", labels3, { reduction = reduction, weight = class_weights, ignore_index = ignore } },
  { "mse_loss", "MSELoss", same2, { reduction = reduction } },
  { "binary_cross_entropy", "BCELoss", same2, { reduction = reduction, weight = no_weights } },
  { "l1_loss", "L1Loss", same2, { reduction = reduction } },
  { "smooth_l1_loss", "SmoothL1Loss", same2, { reduction = reduction, beta = { type = "number", min = 0, default = 1 } } },
  { "huber_loss", "HuberLoss", same2, { reduction = reduction, delta = { type = "number", min = 0, min_open = true,
    default = 1 } } },
  { "kl_div", "KLDivLoss", same2, { reduction = { choices = { "mean", "batchmean", "sum", "none" }, default = "mean" },
    log_target = { type = "boolean", default = false } } },
  { "mae", nil, same2, { reduction = reduction } },
  { "huber", nil, same2, { reduction = reduction, delta = { type = "number", min = 0, min_open = true, default = 1 } } },
  { "kl_divergence", nil, same2, { reduction = reduction } },
  { "categorical_hinge", nil, "gpu.full({2, 2}, 0.5), gpu.eye(2)", { reduction = reduction } },
  { "binary_cross_entropy_with_logits", "BCEWithLogitsLoss", same2, { reduction = reduction, weight = no_weights,
    pos_weight = no_weights } },
}

-- The function nn.<name>(a, b [, opts]) and the module class nn.<Module>([opts]), whose
-- options are checked once, when it is made, for each {name, Module or nil, example
-- arguments, option keys} of list (fns: name -> the loss function)
local function declare_losses(list, fns)
  for _, d in ipairs(list) do
    local name, module_name, args, keys = d[1], d[2], d[3], d[4]
    local fn = fns[name]
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
end
declare_losses(decls, defs)

L.cross_entropy_loss = L.cross_entropy
L.mse = L.mse_loss
L.mean_absolute_error = L.mae

-- ---- losses of three arrays ----------------------------------------------------------------

-- x1, x2 and y (or anchor, positive, negative) of one shape; y (N) for cosine_embedding.
local function three(fname, a, b, c, names)
  check_array(a, fname, 1, names[1]); check_array(b, fname, 2, names[2]); check_array(c, fname, 3, names[3])
  shapes_match(fname, a, names[1], b, names[2])
end

local defs3 = {}

-- cosine_embedding_loss(x1 (N, D) or (D), x2, y (N) of 1 / -1 [, {margin = 0, reduction}]):
-- 1 - cos where y = 1, max(0, cos - margin) where y = -1 (PyTorch's eps 1e-12 in the norms)
function defs3.cosine_embedding_loss(x1, x2, y, o)
  local fname = "nn.cosine_embedding_loss"
  three(fname, x1, x2, y, { "input1", "input2", "target" })
  if x1.ndim < 1 or x1.ndim > 2 then raise("%s: inputs must be (N, D) or (D), got %s", fname, shape_str(x1.shape)) end
  local want = x1.ndim == 2 and { x1.shape[1] } or {}
  if shape_str(y.shape) ~= shape_str(want) then
    raise("%s: target must have shape %s, got %s", fname, shape_str(want), shape_str(y.shape))
  end
  local prod = (x1 * x2):sum(-1)
  local cos = prod / ((x1 * x1):sum(-1) + 1e-12):sqrt() / ((x2 * x2):sum(-1) + 1e-12):sqrt()
  local yd = y:astype(cos.dtype)
  local per = gpu.where(yd:eq(1), 1 - cos, 0) + gpu.where(yd:eq(-1), (cos - o.margin):maximum(0), 0)
  return reduce_loss(per, o.reduction)
end

-- margin_ranking_loss(x1, x2, y [, {margin = 0, reduction}]): max(0, -y (x1 - x2) + margin)
function defs3.margin_ranking_loss(x1, x2, y, o)
  local fname = "nn.margin_ranking_loss"
  three(fname, x1, x2, y, { "input1", "input2", "target" })
  shapes_match(fname, y, "target", x1, "inputs")
  return reduce_loss((-y:astype(x1.dtype) * (x1 - x2) + o.margin):maximum(0), o.reduction)
end

-- || a - b + eps ||_p over the last axis (PyTorch's pairwise_distance)
local function pairwise(a, b, p, eps)
  local d = (a - b + eps):abs()
  if p == 1 then return d:sum(-1) end
  if p == 2 then return (d * d):sum(-1):sqrt() end
  return (d ^ p):sum(-1) ^ (1 / p)
end

-- triplet_margin_loss(anchor, positive, negative [, {margin = 1, p = 2, eps = 1e-6, swap =
-- false, reduction}]): max(d(a, p) - d(a, n) + margin, 0)
function defs3.triplet_margin_loss(a, pos, neg, o)
  local fname = "nn.triplet_margin_loss"
  three(fname, a, pos, neg, { "anchor", "positive", "negative" })
  shapes_match(fname, neg, "negative", a, "anchor")
  local dp, dn = pairwise(a, pos, o.p, o.eps), pairwise(a, neg, o.p, o.eps)
  if o.swap then dn = dn:minimum(pairwise(pos, neg, o.p, o.eps)) end
  return reduce_loss((dp - dn + o.margin):maximum(0), o.reduction)
end

local three2 = "gpu.ones(2, 3), gpu.full({2, 3}, 0.5), gpu.array({1, -1})"
for _, d in ipairs {
  { "cosine_embedding_loss", "CosineEmbeddingLoss", three2, { margin = { type = "number", default = 0 },
    reduction = reduction } },
  { "margin_ranking_loss", "MarginRankingLoss", "gpu.ones(2), gpu.zeros(2), gpu.array({1, -1})",
    { margin = { type = "number", default = 0 }, reduction = reduction } },
  { "triplet_margin_loss", "TripletMarginLoss", "gpu.ones(2, 3), gpu.zeros(2, 3), gpu.full({2, 3}, 2)",
    { margin = { type = "number", default = 1 }, p = { type = "number", min = 0, min_open = true, default = 2 },
      eps = { type = "number", min = 0, default = 1e-6 }, swap = { type = "boolean", default = false },
      reduction = reduction } },
} do
  local name, module_name, args, keys = d[1], d[2], d[3], d[4]
  local fn = defs3[name]
  local decl = options.declare("nn." .. name, keys, { example = ("gpu.nn.%s(%s, %%s)"):format(name, args) })
  L[name] = function(a, b, c, opts) return fn(a, b, c, decl:check(opts, 4)) end
  local mdecl = options.declare("nn." .. module_name, keys,
    { example = ("gpu.nn.%s(%%s)(%s)"):format(module_name, args) })
  local cls = module.class(module_name)
  function cls:init(opts) self.opts = mdecl:check(opts, 1) end
  function cls:forward(a, b, c) return fn(a, b, c, self.opts) end
  L[module_name] = cls
end

-- ---- more of Keras's and PyTorch's losses ---------------------------------------------------

local EPS = 1e-7      -- Keras's backend.epsilon()

-- the mean over the last axis (a value per sample), as Keras's losses reduce
local function last_mean(v) return v.ndim > 0 and v:mean(-1) or v end
local function keras_pair(fname, pred, target)
  same_shape(fname, pred, target)
  return pred, target:astype(pred.dtype)
end

-- Keras's hinge labels: 0/1 targets become -1/1 (when every target is 0 or 1)
local function hinge_labels(t)
  local binary = t:eq(0):logical_or(t:eq(1)):all():item()
  return binary and t * 2 - 1 or t
end

local defs_more = {}

-- binary_focal_crossentropy(pred, target [, {apply_class_balancing = false, alpha = 0.25,
-- gamma = 2, from_logits = false, label_smoothing = 0, reduction}]): Keras's: the clipped
-- binary cross-entropy times (1 - p_t)^gamma (and the class weight), per sample the mean
-- over the last axis
function defs_more.binary_focal_crossentropy(pred, target, o)
  local p, t = keras_pair("nn.binary_focal_crossentropy", pred, target)
  if o.label_smoothing > 0 then t = t * (1 - o.label_smoothing) + 0.5 * o.label_smoothing end
  if o.from_logits then p = p:sigmoid() end
  local pc = p:clip(EPS, 1 - EPS)
  local bce = -(t * pc:log() + (1 - t) * (1 - pc):log())
  local pt = t * p + (1 - t) * (1 - p)
  local per = (1 - pt):maximum(0) ^ o.gamma * bce
  if o.apply_class_balancing then per = per * (t * o.alpha + (1 - t) * (1 - o.alpha)) end
  return reduce_loss(last_mean(per), o.reduction)
end

-- categorical_focal_crossentropy(pred, target (N, C) [, {alpha = 0.25, gamma = 2,
-- from_logits = false, label_smoothing = 0, reduction}]): Keras's
function defs_more.categorical_focal_crossentropy(pred, target, o)
  local p, t = keras_pair("nn.categorical_focal_crossentropy", pred, target)
  if p.ndim == 0 then raise("nn.categorical_focal_crossentropy: predictions need a class axis") end
  local C = p.shape[p.ndim]
  if o.label_smoothing > 0 then t = t * (1 - o.label_smoothing) + o.label_smoothing / C end
  if o.from_logits then p = F.softmax(p, -1) end
  local out = (p / p:sum(-1, { keepdims = true })):clip(EPS, 1 - EPS)
  local per = ((1 - out) ^ o.gamma * o.alpha * (-(t * out:log()))):sum(-1)
  return reduce_loss(per, o.reduction)
end

-- poisson(pred, target): Keras's mean(pred - target log(pred + eps)) over the last axis
function defs_more.poisson(pred, target, o)
  local p, t = keras_pair("nn.poisson", pred, target)
  return reduce_loss(last_mean(p - t * (p + EPS):log()), o.reduction)
end

-- mean_absolute_percentage_error / mean_squared_logarithmic_error (Keras's, per sample)
function defs_more.mean_absolute_percentage_error(pred, target, o)
  local p, t = keras_pair("nn.mean_absolute_percentage_error", pred, target)
  return reduce_loss(last_mean(((t - p) / t:abs():maximum(EPS)):abs()) * 100, o.reduction)
end
function defs_more.mean_squared_logarithmic_error(pred, target, o)
  local p, t = keras_pair("nn.mean_squared_logarithmic_error", pred, target)
  return reduce_loss(last_mean(((p:maximum(EPS) + 1):log() - (t:maximum(EPS) + 1):log()):square()), o.reduction)
end

-- cosine_similarity_loss(pred, target [, {axis = -1}]): Keras's cosine_similarity loss, -cos
-- (l2-normalised, eps 1e-12); nn.cosine_similarity is PyTorch's functional similarity
function defs_more.cosine_similarity_loss(pred, target, o)
  local p, t = keras_pair("nn.cosine_similarity_loss", pred, target)
  local ax = o.axis
  local function unit(a) return a / a:square():sum(ax, { keepdims = true }):maximum(1e-12):sqrt() end
  return reduce_loss(-(unit(t) * unit(p)):sum(ax), o.reduction)
end

-- log_cosh(pred, target): mean over the last axis of log(cosh(pred - target)), computed
-- as x + softplus(-2x) - log 2 (no overflow)
function defs_more.log_cosh(pred, target, o)
  local p, t = keras_pair("nn.log_cosh", pred, target)
  local x = p - t
  return reduce_loss(last_mean(x + (x * -2):softplus() - math.log(2)), o.reduction)
end

-- hinge / squared_hinge(pred, target of -1/1 or 0/1): Keras's
function defs_more.hinge(pred, target, o)
  local p, t = keras_pair("nn.hinge", pred, target)
  return reduce_loss(last_mean((1 - hinge_labels(t) * p):maximum(0)), o.reduction)
end
function defs_more.squared_hinge(pred, target, o)
  local p, t = keras_pair("nn.squared_hinge", pred, target)
  return reduce_loss(last_mean((1 - hinge_labels(t) * p):maximum(0):square()), o.reduction)
end

-- dice(pred, target [, {axis}]): Keras's 1 - 2 sum(t p) / (sum(t) + sum(p) + eps), over
-- every element (axis nil: one value) or over the listed axes (a value per rest)
function defs_more.dice(pred, target, o)
  local p, t = keras_pair("nn.dice", pred, target)
  local ax = o.axis
  if type(ax) == "number" then ax = { ax } end
  local function total(v) return ax and v:sum(ax) or v:sum() end
  local per = 1 - total(t * p) * 2 / (total(t) + total(p) + EPS)
  return reduce_loss(per, o.reduction)
end

-- PyTorch's poisson_nll_loss(input, target [, {log_input = true, full = false, eps = 1e-8,
-- reduction}]): exp(input) - target input, or input - target log(input + eps); full adds
-- Stirling's term where target > 1
function defs_more.poisson_nll_loss(x, t, o)
  same_shape("nn.poisson_nll_loss", x, t)
  t = t:astype(x.dtype)
  local per = o.log_input and (x:exp() - t * x) or (x - t * (x + o.eps):log())
  if o.full then
    local safe = t:maximum(1)
    local stirling = safe * safe:log() - safe + (safe * (2 * math.pi)):log() * 0.5
    per = per + gpu.where(t:gt(1), stirling, 0)
  end
  return reduce_loss(per, o.reduction)
end

-- hinge_embedding_loss(input, target of 1 / -1 [, {margin = 1, reduction}]): input where
-- target is 1, max(0, margin - input) where it is -1
function defs_more.hinge_embedding_loss(x, y, o)
  same_shape("nn.hinge_embedding_loss", x, y)
  local yd = y:astype(x.dtype)
  local per = gpu.where(yd:eq(1), x, 0) + gpu.where(yd:eq(-1), (o.margin - x):maximum(0), 0)
  return reduce_loss(per, o.reduction)
end

-- soft_margin_loss(input, target of 1 / -1): log(1 + exp(-target input))
function defs_more.soft_margin_loss(x, y, o)
  same_shape("nn.soft_margin_loss", x, y)
  return reduce_loss((-(y:astype(x.dtype) * x)):softplus(), o.reduction)
end

-- multilabel_soft_margin_loss(input (N, C), target (N, C) of 0/1 [, {weight (C), reduction}]):
-- per sample -mean over classes of w (t log sigmoid(x) + (1 - t) log sigmoid(-x))
function defs_more.multilabel_soft_margin_loss(x, y, o)
  local fname = "nn.multilabel_soft_margin_loss"
  same_shape(fname, x, y)
  local t = y:astype(x.dtype)
  local per = t * (-x):softplus() + (1 - t) * x:softplus()
  if o.weight ~= nil then
    if o.weight.ndim ~= 1 or o.weight.shape[1] ~= x.shape[x.ndim] then
      raise("%s: weight must hold one value per class (%d), got shape %s", fname, x.shape[x.ndim], shape_str(o.weight.shape))
    end
    per = per * o.weight:to(x.device):astype(x.dtype)
  end
  return reduce_loss(x.ndim > 0 and per:mean(-1) or per, o.reduction)
end

-- multi_margin_loss(input (N, C), labels (N) in 1..C [, {p = 1, margin = 1, weight,
-- reduction}]): per sample the sum over the other classes of max(0, margin - x[y] + x[i])^p,
-- times weight[y], over C
function defs_more.multi_margin_loss(x, labels, o)
  local fname = "nn.multi_margin_loss"
  local N, C = check_pred(fname, x, "input")
  check_labels(fname, labels, C, { n = N })
  local oh = F.onehot(labels, C, x.dtype, x.device)
  local xy = (x * oh):sum(2, { keepdims = true })
  local m = (x - xy + o.margin):maximum(0) * (1 - oh)
  if o.p == 2 then m = m:square() end
  local per = m:sum(2) / C
  if o.weight ~= nil then
    if o.weight.ndim ~= 1 or o.weight.shape[1] ~= C then
      raise("%s: weight must hold one value per class (%d), got shape %s", fname, C, shape_str(o.weight.shape))
    end
    per = per * (oh * o.weight:to(x.device):astype(x.dtype)):sum(2)
  end
  return reduce_loss(per, o.reduction)
end

local keras2 = "gpu.full({2, 3}, 0.5), gpu.ones(2, 3)"
local more_decls = {
  { "binary_focal_crossentropy", nil, keras2, { apply_class_balancing = { type = "boolean", default = false },
    alpha = { type = "number", min = 0, max = 1, default = 0.25 }, gamma = { type = "number", min = 0, default = 2 },
    from_logits = logits_flag, label_smoothing = smoothing, reduction = reduction } },
  { "categorical_focal_crossentropy", nil, keras2, { alpha = { type = "number", min = 0, default = 0.25 },
    gamma = { type = "number", min = 0, default = 2 }, from_logits = logits_flag, label_smoothing = smoothing,
    reduction = reduction } },
  { "poisson", nil, keras2, { reduction = reduction } },
  { "mean_absolute_percentage_error", nil, keras2, { reduction = reduction } },
  { "mean_squared_logarithmic_error", nil, keras2, { reduction = reduction } },
  { "cosine_similarity_loss", nil, keras2, { axis = { type = "integer", default = -1 }, reduction = reduction } },
  { "log_cosh", nil, keras2, { reduction = reduction } },
  { "hinge", nil, keras2, { reduction = reduction } },
  { "squared_hinge", nil, keras2, { reduction = reduction } },
  { "dice", nil, keras2, { axis = { type = "integer|table", what = "an axis or a list of axes" }, reduction = reduction } },
  { "poisson_nll_loss", "PoissonNLLLoss", same2, { log_input = { type = "boolean", default = true },
    full = { type = "boolean", default = false }, eps = { type = "number", min = 0, default = 1e-8 },
    reduction = reduction } },
  { "hinge_embedding_loss", "HingeEmbeddingLoss", "gpu.ones(2), gpu.array({1, -1})",
    { margin = { type = "number", default = 1 }, reduction = reduction } },
  { "soft_margin_loss", "SoftMarginLoss", "gpu.ones(2), gpu.array({1, -1})", { reduction = reduction } },
  { "multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss", keras2, { weight = class_weights, reduction = reduction } },
  { "multi_margin_loss", "MultiMarginLoss", labels3, { p = { type = "integer", min = 1, max = 2, default = 1 },
    margin = { type = "number", default = 1 }, weight = class_weights, reduction = reduction } },
}
declare_losses(more_decls, defs_more)
L.mape, L.msle, L.logcosh = L.mean_absolute_percentage_error, L.mean_squared_logarithmic_error, L.log_cosh

-- gaussian_nll_loss(input, target, var [, {full = false, eps = 1e-6, reduction}]): PyTorch's
-- 0.5 (log max(var, eps) + (input - target)^2 / max(var, eps)) (+ 0.5 log 2 pi with full);
-- var of input's shape, or one less axis / a last axis of 1 (one variance per sample)
local GNLL_KEYS = { full = { type = "boolean", default = false }, eps = { type = "number", min = 0, default = 1e-6 },
  reduction = reduction }
local function gaussian_nll(x, t, var, o)
  local fname = "nn.gaussian_nll_loss"
  same_shape(fname, x, t)
  check_array(var, fname, 3, "var")
  local v = var:astype(x.dtype)
  if shape_str(v.shape) ~= shape_str(x.shape) then
    if v.ndim == x.ndim - 1 then
      local shape = { table.unpack(v.shape) }
      shape[#shape + 1] = 1
      v = v:reshape(table.unpack(shape))
    end
    local ok = v.ndim == x.ndim and v.shape[v.ndim] == 1
    for d = 1, x.ndim - 1 do ok = ok and v.shape[d] == x.shape[d] end
    if not ok then raise("%s: var %s does not fit input %s", fname, shape_str(var.shape), shape_str(x.shape)) end
  end
  if v:lt(0):any():item() then raise("%s: var has negative entries", fname) end
  v = v:detach():maximum(o.eps) + (v - v:detach())        -- clamped, with var's gradient (as PyTorch's)
  local per = ((v:log() + (x - t):square() / v) * 0.5)
  if o.full then per = per + 0.5 * math.log(2 * math.pi) end
  return reduce_loss(per, o.reduction)
end
local GNLL = options.declare("nn.gaussian_nll_loss", GNLL_KEYS,
  { example = "gpu.nn.gaussian_nll_loss(gpu.ones(2), gpu.zeros(2), gpu.ones(2), %s)" })
L.gaussian_nll_loss = function(x, t, var, opts) return gaussian_nll(x, t, var, GNLL:check(opts, 4)) end
do
  local mdecl = options.declare("nn.GaussianNLLLoss", GNLL_KEYS,
    { example = "gpu.nn.GaussianNLLLoss(%s)(gpu.ones(2), gpu.zeros(2), gpu.ones(2))" })
  local cls = module.class("GaussianNLLLoss")
  function cls:init(opts) self.opts = mdecl:check(opts, 1) end
  function cls:forward(x, t, var) return gaussian_nll(x, t, var, self.opts) end
  L.GaussianNLLLoss = cls
end

-- ---- CTC -------------------------------------------------------------------------------------

-- ctc_loss(log_probs (T, N, C) or (T, C), targets, input_lengths, target_lengths [, {blank =
-- 1, reduction = "mean", zero_infinity = false}]): PyTorch's connectionist temporal
-- classification loss, -log p(target | input) summed over the alignments by the alpha
-- recursion in log space, per sample over its first input_lengths[n] steps. log_probs are
-- log-softmax outputs; targets are class numbers 1..C (not the blank), padded (N, S) or
-- concatenated (sum of target_lengths); the lengths are arrays or lists of whole numbers
-- (numbers for (T, C)). blank is a class number, 1-based (PyTorch's default 0 is the first
-- class: blank = 1 here). "mean" divides each loss by its target length (at least 1) and
-- averages over the batch. The gradient is PyTorch's: exp(log_probs) - the posterior of
-- each class at each step (the gradient through a log_softmax in front of it), zero past a
-- sample's input length; for a sample whose loss is infinite (no alignment fits) NaN, or
-- with zero_infinity 0 (its loss then 0). Computed on the host in float64.
local CTC_KEYS = { blank = { type = "integer", min = 1, default = 1 }, reduction = reduction,
  zero_infinity = { type = "boolean", default = false } }
local NEG_INF = -math.huge

local function logadd(a, b)
  if a == NEG_INF then return b end
  if b == NEG_INF then return a end
  if a < b then a, b = b, a end
  return a + math.log(1 + math.exp(b - a))
end

-- the lengths as a list of N whole numbers in [lo, hi]
local function ctc_lengths(fname, v, argn, what, N, hi, unbatched)
  local list
  if unbatched and type(v) == "number" then
    list = { v }
  elseif is_array(v) then
    check_array(v, fname, argn, what)
    if v.ndim > 1 or v.size ~= N then argerror(fname, argn, "%s must hold %d lengths, got shape %s", what, N, shape_str(v.shape)) end
    list = v:reshape(-1):astype("float64"):totable()
  elseif type(v) == "table" then
    list = v
    if #list ~= N then argerror(fname, argn, "%s must hold %d lengths, got %d", what, N, #list) end
  else
    argerror(fname, argn, "%s must be an array or a list of lengths, got %s", what, type_name(v))
  end
  local out = {}
  for i = 1, N do
    local x = list[i]
    if type(x) ~= "number" or x ~= math.floor(x) or x < 0 or (hi and x > hi) then
      argerror(fname, argn, "%s[%d] must be a whole number in 0..%s, got %s", what, i, hi and tostring(hi) or "inf", tostring(x))
    end
    out[i] = math.tointeger(x)
  end
  return out
end

-- alpha and beta of one sample: lp[t][c] (t = 1..Tn), the extended target l (blank, l1,
-- blank, ..., blank) -> nll, and (when grad) the gradient rows g[t][c]
local function ctc_one(lp, Tn, l, C, want_grad)
  local L = #l
  local alpha, beta = {}, {}
  local function skip(s) return s > 2 and l[s] ~= l[s - 2] end
  for t = 1, Tn do alpha[t] = {}; for s = 1, L do alpha[t][s] = NEG_INF end end
  if Tn == 0 then return L == 1 and 0 or math.huge end
  alpha[1][1] = lp[1][l[1]]
  if L > 1 then alpha[1][2] = lp[1][l[2]] end
  for t = 2, Tn do
    local prev, cur, row = alpha[t - 1], alpha[t], lp[t]
    for s = 1, L do
      local a = prev[s]
      if s > 1 then a = logadd(a, prev[s - 1]) end
      if skip(s) then a = logadd(a, prev[s - 2]) end
      cur[s] = a == NEG_INF and NEG_INF or a + row[l[s]]
    end
  end
  local ll = alpha[Tn][L]
  if L > 1 then ll = logadd(ll, alpha[Tn][L - 1]) end
  local nll = -ll
  if not want_grad then return nll end
  if nll == math.huge then              -- PyTorch's gradient of an impossible target: NaN
    local g = {}
    for t = 1, Tn do g[t] = {}; for c = 1, C do g[t][c] = 0 / 0 end end
    return nll, g
  end
  for t = 1, Tn do beta[t] = {}; for s = 1, L do beta[t][s] = NEG_INF end end
  beta[Tn][L] = lp[Tn][l[L]]
  if L > 1 then beta[Tn][L - 1] = lp[Tn][l[L - 1]] end
  for t = Tn - 1, 1, -1 do
    local nxt, cur, row = beta[t + 1], beta[t], lp[t]
    for s = 1, L do
      local b = nxt[s]
      if s < L then b = logadd(b, nxt[s + 1]) end
      if s + 2 <= L and l[s + 2] ~= l[s] then b = logadd(b, nxt[s + 2]) end
      cur[s] = b == NEG_INF and NEG_INF or b + row[l[s]]
    end
  end
  local g = {}
  for t = 1, Tn do
    local lcab = {}
    for c = 1, C do lcab[c] = NEG_INF end
    for s = 1, L do lcab[l[s]] = logadd(lcab[l[s]], alpha[t][s] + beta[t][s]) end
    local row = {}
    for c = 1, C do
      local v = lp[t][c]
      row[c] = math.exp(v) - (lcab[c] == NEG_INF and 0 or math.exp(lcab[c] + nll - v))
    end
    g[t] = row
  end
  return nll, g
end

local function ctc_loss(fname, log_probs, targets, input_lengths, target_lengths, o)
  check_array(log_probs, fname, 1, "log_probs")
  if not log_probs.dtype:match("float") then argerror(fname, 1, "log_probs must be a float array, got %s", log_probs.dtype) end
  local unbatched = log_probs.ndim == 2
  if log_probs.ndim ~= 3 and not unbatched then
    argerror(fname, 1, "log_probs must be (T, N, C) or (T, C), got shape %s", shape_str(log_probs.shape))
  end
  local T, N, C = log_probs.shape[1], unbatched and 1 or log_probs.shape[2], log_probs.shape[log_probs.ndim]
  if o.blank > C then argerror(fname, 5, "blank %d is not a class of %d", o.blank, C) end
  check_array(targets, fname, 2, "targets")
  local ilen = ctc_lengths(fname, input_lengths, 3, "input_lengths", N, T, unbatched)
  local tlen = ctc_lengths(fname, target_lengths, 4, "target_lengths", N, nil, unbatched)
  local tg = targets
  if unbatched then
    if tg.ndim ~= 1 then argerror(fname, 2, "targets of (T, C) log_probs must be 1-d, got shape %s", shape_str(tg.shape)) end
    tg = tg:reshape(1, -1)
  end
  local padded = tg.ndim == 2
  local total = 0
  for i = 1, N do total = total + tlen[i] end
  if padded then
    if tg.shape[1] ~= N then argerror(fname, 2, "targets (N, S) must have N = %d rows, got shape %s", N, shape_str(tg.shape)) end
    for i = 1, N do
      if tlen[i] > tg.shape[2] then
        argerror(fname, 4, "target_lengths[%d] = %d is longer than the targets' %d columns", i, tlen[i], tg.shape[2])
      end
    end
  elseif tg.ndim ~= 1 then
    argerror(fname, 2, "targets must be (N, S) padded or 1-d concatenated, got shape %s", shape_str(tg.shape))
  elseif tg.size ~= total then
    argerror(fname, 4, "the target_lengths add up to %d, the concatenated targets hold %d", total, tg.size)
  end
  local tv = tg.size > 0 and tg:reshape(-1):astype("float64"):totable() or {}
  for i, v in ipairs(tv) do
    if v ~= math.floor(v) or v < 1 or v > C then
      argerror(fname, 2, "targets must be class numbers in 1..%d, got %s at %d", C, tostring(v), i)
    end
  end
  local lp3 = unbatched and log_probs:reshape(T, 1, C) or log_probs
  local want_grad = autograd.tracked(log_probs)
  local lpt = lp3:detach():astype("float64"):totable()
  local losses, grads = {}, {}
  local offset = 0
  for n = 1, N do
    local l = { o.blank }
    for k = 1, tlen[n] do
      local idx = padded and (n - 1) * tg.shape[2] + k or offset + k
      local c = math.tointeger(tv[idx])
      if c == o.blank then argerror(fname, 2, "targets hold the blank (%d) in sample %d", o.blank, n) end
      l[#l + 1] = c
      l[#l + 1] = o.blank
    end
    offset = offset + tlen[n]
    local lp = {}
    for t = 1, ilen[n] do lp[t] = lpt[t][n] end
    local nll, g = ctc_one(lp, ilen[n], l, C, want_grad)
    if o.zero_infinity and nll == math.huge then nll, g = 0, nil end
    losses[n], grads[n] = nll, g
  end
  local dt, dev = log_probs.dtype, log_probs.device
  local per = gpu.array(losses, { dtype = dt, device = dev })
  local out
  if o.reduction == "none" then
    out = unbatched and per:reshape() or per
  elseif o.reduction == "sum" then
    out = per:sum()
  else
    local div = {}
    for n = 1, N do div[n] = math.max(tlen[n], 1) end
    out = (per / gpu.array(div, { dtype = dt, device = dev })):mean()
  end
  if not want_grad then return out end
  local base = {}
  for t = 1, T do
    base[t] = {}
    for n = 1, N do
      local g = grads[n]
      base[t][n] = (g and t <= ilen[n]) and g[t] or nil
      if base[t][n] == nil then
        local zero = {}
        for c = 1, C do zero[c] = 0 end
        base[t][n] = zero
      end
    end
  end
  local G = gpu.array(base, { dtype = dt, device = dev })
  return autograd.record(out, { log_probs }, function(g)
    local w
    if o.reduction == "none" then
      w = g:reshape(N)
    elseif o.reduction == "sum" then
      w = g:reshape(1) * gpu.ones(N, { dtype = dt, device = dev })
    else
      local div = {}
      for n = 1, N do div[n] = 1 / (math.max(tlen[n], 1) * N) end
      w = g:reshape(1) * gpu.array(div, { dtype = dt, device = dev })
    end
    local d = G * w:reshape(1, N, 1)
    return unbatched and d:reshape(T, C) or d
  end)
end

local CTC = options.declare("nn.ctc_loss", CTC_KEYS,
  { example = "gpu.nn.ctc_loss(gpu.zeros(3, 1, 2), gpu.array({{2}}), {3}, {1}, %s)" })
L.ctc_loss = function(log_probs, targets, input_lengths, target_lengths, opts)
  local o = CTC:check(opts, 5)
  return ctc_loss("nn.ctc_loss", log_probs, targets, input_lengths, target_lengths, o)
end
do
  local mdecl = options.declare("nn.CTCLoss", CTC_KEYS,
    { example = "gpu.nn.CTCLoss(%s)(gpu.zeros(3, 1, 2), gpu.array({{2}}), {3}, {1})" })
  local cls = module.class("CTCLoss")
  function cls:init(opts) self.opts = mdecl:check(opts, 1) end
  function cls:forward(log_probs, targets, input_lengths, target_lengths)
    return ctc_loss("CTCLoss", log_probs, targets, input_lengths, target_lengths, self.opts)
  end
  L.CTCLoss = cls
end

-- losses by Keras name (compile{loss = "..."})
L.losses = {
  sparse_categorical_crossentropy = L.sparse_categorical_crossentropy,
  categorical_crossentropy = L.categorical_crossentropy,
  cross_entropy = L.cross_entropy,
  mse = L.mse_loss, mean_squared_error = L.mse_loss,
  mae = L.mae, mean_absolute_error = L.mae, huber = L.huber, kl_divergence = L.kl_divergence,
  kld = L.kl_divergence, categorical_hinge = L.categorical_hinge,
  binary_crossentropy = L.binary_cross_entropy,
  binary_crossentropy_from_logits = L.binary_cross_entropy_with_logits,
  binary_focal_crossentropy = L.binary_focal_crossentropy, categorical_focal_crossentropy = L.categorical_focal_crossentropy,
  poisson = L.poisson, mean_absolute_percentage_error = L.mape, mape = L.mape,
  mean_squared_logarithmic_error = L.msle, msle = L.msle, cosine_similarity = L.cosine_similarity_loss,
  log_cosh = L.log_cosh, logcosh = L.log_cosh, hinge = L.hinge, squared_hinge = L.squared_hinge, dice = L.dice,
}

return L
