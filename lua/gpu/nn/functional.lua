-- gpu.nn.functional: the functional forms the layers are built on: linear / dense
-- (gpu.fused.linear), softmax and log_softmax (cuDNN where the device has it), the
-- cross-entropy from logits (gpu.fused.cross_entropy), conv2d, max / average pooling and
-- batch norm (cuDNN, else gpu.im2col / gpu.col2im and GEMM: the reference the cuDNN path
-- is checked against). gpu.nn re-exports them (nn.linear, nn.conv2d, ...); the layers
-- call them.
--
-- They are compositions of dispatched ops: the fused and library kernels are ops with
-- their own rules in gpu.autograd.rules (one tape node each, hand-written backward), so
-- nothing here records by hand except max pooling's im2col path (its gradient goes to the
-- first maximum of each window, as PyTorch's does, where the max rule would share it
-- among ties). Under gpu.autocast (see gpu.amp) the matmul-like kernels compute in the
-- half dtype and return float32 (the dispatch casts, and records the casts).

local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"

local F = {}
local fused = gpu.fused
local record = autograd.record
local raise, argerror = options.raise, options.argerror
local check_array, shape_str = options.check_array, options.shape_str

-- ---- linear, activations, softmax ----------------------------------------------------------------

-- The operands of linear / dense: x (..., in), w 2-D with its in and out sizes on axes
-- in_axis and 3 - in_axis, b (out) or nil.
local function check_affine(fname, x, w, b, in_axis, wname)
  check_array(x, fname, 1, "x"); check_array(w, fname, 2, wname)
  if b ~= nil then check_array(b, fname, 3, "bias") end
  if w.ndim ~= 2 then raise("%s: %s must be 2-D, got shape %s", fname, wname, shape_str(w.shape)) end
  local fin, fout = w.shape[in_axis], w.shape[3 - in_axis]
  if x.ndim < 1 or x.shape[x.ndim] ~= fin then
    raise("%s: input of shape %s does not fit %s %s (expected %d input features)", fname, shape_str(x.shape), wname,
      shape_str(w.shape), fin)
  end
  if b ~= nil and (b.ndim ~= 1 or b.shape[1] ~= fout) then
    raise("%s: bias must be (%d), got shape %s", fname, fout, shape_str(b.shape))
  end
end

-- linear and dense: x (..., in) times the weight plus b (out), one GEMM + bias (its rule
-- is one tape node). w is (out, in) for linear (PyTorch's layout) and (in, out) for dense
-- (Keras's, kernel_layout; w.T is a view, recorded as such).
local function affine(x, w, b, kernel_layout)
  return fused.linear(x, kernel_layout and w.T or w, b)
end

-- linear(x, w, b): x (..., in) @ w (out, in)^T + b (out): one tape node.
function F.linear(x, w, b)
  check_affine("nn.linear", x, w, b, 2, "weight")
  return affine(x, w, b, false)
end

-- dense(x, kernel, b): Keras layout, kernel (in, units).
function F.dense(x, k, b)
  check_affine("nn.dense", x, k, b, 1, "kernel")
  return affine(x, k, b, true)
end

-- relu(x [, inplace = false]): inplace writes x (PyTorch's relu(x, inplace=True)), an
-- in-place op, refused on an array that requires grad
function F.relu(x, inplace)
  check_array(x, "nn.relu", 1, "x")
  if options.value(inplace, { type = "boolean", default = false }, "nn.relu", 2, "inplace") then return x:relu_() end
  return x:relu()
end
function F.sigmoid(x) return check_array(x, "nn.sigmoid", 1, "x"):sigmoid() end
function F.tanh(x) return check_array(x, "nn.tanh", 1, "x"):tanh() end
-- gelu(x [, approximate = "none" | "tanh"]): the exact form (erf) or PyTorch's tanh form
local SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
function F.gelu(x, approximate)
  check_array(x, "nn.gelu", 1, "x")
  if type(approximate) == "table" then approximate = approximate.approximate end
  approximate = options.value(approximate, { choices = { "none", "tanh" }, default = "none" }, "nn.gelu", 2,
    "approximate")
  if approximate == "none" then return x:gelu() end
  return x * (((x + x * x * x * 0.044715) * SQRT_2_OVER_PI):tanh() + 1) * 0.5
end
function F.softplus(x) return check_array(x, "nn.softplus", 1, "x"):softplus() end
function F.leaky_relu(x, slope)
  check_array(x, "nn.leaky_relu", 1, "x")
  slope = options.value(slope, { type = "number", default = 0.01 }, "nn.leaky_relu", 2, "negative_slope")
  return gpu.where(x:gt(0), x, x * slope)
end

-- softmax outputs remember their logits, so a cross-entropy on them is computed from
-- the logits (one stable log-softmax) instead of log(softmax).
local logits_of = setmetatable({}, { __mode = "k" })

-- Softmax over the last axis on a device with cuDNN (gpu.dnn.available): cudnnSoftmax
-- forward and backward, one tape node; nil where it does not apply (then array ops).
local dnn = gpu.dnn
-- (bfloat16 stays on array ops until cuDNN's legacy softmax has been seen taking it)
local dnn_floats = { float16 = true, float32 = true, float64 = true }
local function dnn_softmax(x, axis, log)
  if dnn == nil or dnn.enabled == false or (axis ~= -1 and axis ~= x.ndim)
    or not dnn_floats[x.dtype] or x.ndim < 1 or dnn.available(x.device, x.dtype, "softmax") ~= true then
    return nil
  end
  return dnn.softmax(x, { log = log })
end

-- The axis argument of softmax / log_softmax: an axis of x (1..ndim, or -ndim..-1).
local function softmax_axis(fname, x, axis)
  check_array(x, fname, 1, "x")
  axis = options.value(axis, { type = "integer", default = -1 }, fname, 2, "axis")
  if x.ndim == 0 or axis == 0 or axis > x.ndim or axis < -x.ndim then
    argerror(fname, 2, "axis %d is out of range for an array of shape %s", axis, shape_str(x.shape))
  end
  return axis
end

function F.log_softmax(x, axis)
  axis = softmax_axis("nn.log_softmax", x, axis)
  return dnn_softmax(x, axis, true) or x - x:logsumexp(axis, { keepdims = true })
end

function F.softmax(x, axis)
  axis = softmax_axis("nn.softmax", x, axis)
  local y = dnn_softmax(x, axis, false) or (x - x:logsumexp(axis, { keepdims = true })):exp()
  if axis == -1 or axis == x.ndim then logits_of[y] = x end
  return y
end

-- logits_of(p): the logits p was computed from by softmax over its last axis, or nil
function F.logits_of(p) return logits_of[p] end

-- ---- cross-entropy -----------------------------------------------------------------------------

-- onehot(labels, C, dtype, device): labels (...) of 1..C (checked by the caller) -> (..., C)
-- (labels - 1 against arange(C): C + 1 would wrap at math.maxinteger)
local function onehot(labels, C, dtype, device)
  local classes = gpu.arange(C, { device = device })
  local s = labels.shape
  s[#s + 1] = 1
  return (labels:reshape(s) - 1):eq(classes):astype(dtype)
end
F.onehot = onehot

-- Cross-entropy from logits (one node): against labels (N, 1..C, already checked) with
-- label smoothing eps, or a target distribution (N, C) (labels nil). With t the smoothed
-- one-hot rows or the targets: loss_i = lse_i - sum_c t_ic z_ic; d/dz = softmax - t.
-- float32/float64 logits go through gpu.fused (one pass per row forward and backward);
-- other dtypes through array ops.
local fused_float = { float32 = true, float64 = true }
local function ce_from_logits(fname, z, labels, target, eps, reduction)
  local N, C = z.shape[1], z.shape[2]
  if reduction ~= nil and reduction ~= "mean" and reduction ~= "sum" and reduction ~= "none" then
    raise("%s: reduction must be 'mean', 'sum' or 'none', got %s", fname, tostring(reduction))
  end
  local per
  if fused_float[z.dtype] then
    if labels ~= nil and labels.dtype ~= "int64" then labels = labels:astype("int64") end
    per = (fused.cross_entropy(z, labels or target, eps > 0 and { label_smoothing = eps } or nil))
  else
    if labels ~= nil then
      target = onehot(labels, C, z.dtype, z.device)
      if eps > 0 then target = target * (1 - eps) + eps / C end
    end
    local lse = z:logsumexp(2, { keepdims = true })
    per = (lse - (target * z):sum(2, { keepdims = true })):reshape(N)
  end
  if reduction == "none" then return per end
  if reduction == "sum" then return per:sum() end
  return per:mean()
end
F.ce_from_logits = ce_from_logits

-- ---- convolution, pooling, batch norm (NCHW) ---------------------------------------------------

-- Whether the layers take the library path (cuDNN on cuda, oneDNN on the cpu) for data of
-- 'dtype' on 'device' in 'family' ("conv", "pool", "batch_norm"): a cheap C call, the
-- library is loaded once.
local function use_dnn(device, dtype, family)
  return dnn ~= nil and dnn.enabled ~= false and dnn.available(device, dtype, family) == true
end
-- dtypes the cuDNN path takes (bfloat16 goes through im2col + cuBLAS until cuDNN's legacy
-- calls have been seen taking it on a device)
local floats = { float16 = true, float32 = true, float64 = true }
local wide = { float32 = true, float64 = true }

-- A size argument: a positive (or, with zero_ok, non-negative) integer or a pair {h, w}.
local function pair(v, what, layer, zero_ok)
  if type(v) == "number" then v = { v, v } end
  if type(v) ~= "table" or #v ~= 2 then
    raise("%s: %s must be an integer or a pair {h, w}, got %s", layer, what, type(v))
  end
  for i = 1, 2 do
    local x = v[i]
    if math.type(x) ~= "integer" or x < (zero_ok and 0 or 1) then
      raise("%s: %s must be %s integers, got %s", layer, what, zero_ok and "non-negative" or "positive",
        tostring(x))
    end
  end
  return { v[1], v[2] }
end

local function check_input(layer, x, ndims, channels)
  check_array(x, layer, 1, "input")
  local ok = false
  for _, d in ipairs(ndims) do if x.ndim == d then ok = true end end
  if not ok then
    raise("%s: expected a %s-D input, got shape %s", layer, table.concat(ndims, "- or "), shape_str(x.shape))
  end
  if channels and x.shape[2] ~= channels then
    raise("%s: expected %d input channels, got %d (input shape %s)", layer, channels, x.shape[2],
      shape_str(x.shape))
  end
end

-- A 1-D size argument: a positive (zero_ok: non-negative) integer or a one-element table.
local function single(v, what, name, zero_ok)
  if type(v) == "table" and #v == 1 then v = v[1] end
  if math.type(v) ~= "integer" or v < (zero_ok and 0 or 1) then
    raise("%s: %s must be a %s integer (or {n}), got %s", name, what, zero_ok and "non-negative" or "positive",
      options.type_name(v))
  end
  return v
end

-- x with a batch axis: x itself when it has 'batched' axes, x:unsqueeze(1) when it has one
-- fewer (PyTorch's unbatched input); the second result says which. Other ranks raise.
local function batched(name, x, nd)
  check_array(x, name, 1, "input")
  if x.ndim == nd then return x, false end
  if x.ndim == nd - 1 then return x:reshape(1, table.unpack(x.shape)), true end
  raise("%s: expected a %d-D or %d-D (unbatched) input, got shape %s", name, nd, nd - 1, shape_str(x.shape))
end

local function unbatch(y, was) if was then return y:reshape(table.unpack(y.shape, 2)) end return y end

F.pair, F.check_input, F.single, F.batched, F.unbatch = pair, check_input, single, batched, unbatch

local function out_size(layer, H, W, k, s, p, d)
  local oh = (H + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
  local ow = (W + 2 * p[2] - d[2] * (k[2] - 1) - 1) // s[2] + 1
  if oh < 1 or ow < 1 then
    raise("%s: the input %dx%d (padded %dx%d) is smaller than the kernel %dx%d (dilated)", layer, H, W,
      H + 2 * p[1], W + 2 * p[2], d[1] * (k[1] - 1) + 1, d[2] * (k[2] - 1) + 1)
  end
  return oh, ow
end

-- ---- functional forms ------------------------------------------------------------------------

-- The convolution proper (arguments checked by nn.conv2d): cuDNN where the device has
-- it, else im2col + batched matmul; one tape node.
local function conv_core(x, w, b, N, C, H, W, O, Cg, G, k, s, p, d, OH, OW)
  local kh, kw = k[1], k[2]
  local y
  -- (under gpu.autocast the dispatch hands dnn.conv2d float32/float64 operands in the half dtype)
  local dt = wide[x.dtype] and autograd.autocast_dtype() or x.dtype
  if x.dtype == w.dtype and floats[x.dtype] and use_dnn(x.device, dt, "conv") then
    y = dnn.conv2d(x, w, { stride = s, padding = p, dilation = d, groups = G })
  else
    local L, K, Og = OH * OW, Cg * kh * kw, O // G
    local cols = gpu.im2col(x, { kernel = k, stride = s, padding = p, dilation = d }):reshape(N, G, K, L)
    y = w:reshape(G, Og, K):matmul(cols):reshape(N, O, OH, OW)
  end
  if b ~= nil then y = y + b:reshape(1, O, 1, 1) end
  return y
end


-- The option keys of the convolution and pooling forms: sizes, a number or a pair {h, w}.
local size = "integer|table"
F.window_keys = {
  stride = size, padding = size, dilation = size, groups = { type = "integer", min = 1 },
  return_indices = "boolean",
}
local function window_decl(fname, keys, example)
  local k = {}
  for _, key in ipairs(keys) do k[key] = F.window_keys[key] end
  return options.declare(fname, k, { example = example })
end
local CONV2D = window_decl("nn.conv2d", { "stride", "padding", "dilation", "groups" },
  "gpu.nn.conv2d(gpu.ones(1, 1, 3, 3), gpu.ones(1, 1, 2, 2), nil, %s)")
local MAX_POOL2D = window_decl("nn.max_pool2d", { "stride", "padding", "dilation", "return_indices" },
  "gpu.nn.max_pool2d(gpu.ones(1, 1, 4, 4), 2, %s)")
local AVG_POOL2D = window_decl("nn.avg_pool2d", { "stride", "padding" },
  "gpu.nn.avg_pool2d(gpu.ones(1, 1, 4, 4), 2, %s)")

-- conv2d(x, w, b, {stride =, padding =, dilation =, groups =}): x (N, C, H, W), w (O, C/groups,
-- kh, kw), b (O) or nil -> (N, O, OH, OW); one tape node (cuDNN, or im2col + batched matmul).
-- conv2d_as(name, ...): the same, its errors naming the layer 'name' (options checked).
local function conv2d_as(name, x, w, b, opts)
  local s = pair(opts.stride or 1, "stride", name)
  local p = pair(opts.padding or 0, "padding", name, true)
  local d = pair(opts.dilation or 1, "dilation", name)
  local G = opts.groups or 1
  check_input(name, x, { 4 })
  local N, C, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
  check_array(w, name, 2, "weight")
  if b ~= nil then check_array(b, name, 3, "bias") end
  if w.ndim ~= 4 then
    raise("%s: weight must be a 4-D array (out, in/groups, kh, kw), got %s", name,
      shape_str(w.shape))
  end
  local O, Cg, kh, kw = w.shape[1], w.shape[2], w.shape[3], w.shape[4]
  if math.type(G) ~= "integer" or G < 1 or O % G ~= 0 then
    raise("%s: groups (%s) must be a positive integer dividing the %d output channels", name, tostring(G), O)
  end
  if b ~= nil and b.size ~= O then
    raise("%s: bias must hold %d values (one per output channel), got %s", name, O,
      shape_str(b.shape))
  end
  if C ~= Cg * G then
    raise("%s: expected %d input channels, got %d (input shape %s)", name, Cg * G, C, shape_str(x.shape))
  end
  local k = { kh, kw }
  local OH, OW = out_size(name, H, W, k, s, p, d)
  return conv_core(x, w, b, N, C, H, W, O, Cg, G, k, s, p, d, OH, OW)
end
F.conv2d_as = conv2d_as
function F.conv2d(x, w, b, opts) return conv2d_as("nn.conv2d", x, w, b, CONV2D:check(opts, 4)) end

local function pool_geom(name, x, k, opts)
  k = pair(k, "kernel_size", name)
  local s = pair(opts.stride or k, "stride", name)
  local p = pair(opts.padding or 0, "padding", name, true)
  local d = pair(opts.dilation or 1, "dilation", name)
  if p[1] * 2 > k[1] or p[2] * 2 > k[2] then
    raise("%s: padding %dx%d must be at most half the kernel %dx%d", name, p[1], p[2], k[1], k[2])
  end
  check_input(name, x, { 4 })
  local N, C, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
  local OH, OW = out_size(name, H, W, k, s, p, d)
  return N, C, H, W, OH, OW, { kernel = k, stride = s, padding = p, dilation = d }
end

-- The cuDNN path of pooling where it applies (no dilation, a float dtype, a device with
-- cuDNN): one tape node; nil otherwise.
local function dnn_pool(x, copts, max)
  local dl = copts.dilation
  if dl[1] ~= 1 or dl[2] ~= 1 or not floats[x.dtype] or not use_dnn(x.device, x.dtype, "pool") then return nil end
  local o = { kernel = copts.kernel, stride = copts.stride, padding = copts.padding }
  return (max and dnn.max_pool2d or dnn.avg_pool2d)(x, o)
end

-- max_pool2d(x, kernel [, {stride = kernel, padding = 0, dilation = 1, return_indices}])
-- -> y [, indices]: the maxima over each window (padding never wins) and, with
-- return_indices, where they are: int64 1-based positions in the flattened H x W plane.
local function max_pool2d_as(name, x, k, opts)
  local N, C, H, W, OH, OW, copts = pool_geom(name, x, k, opts)
  if not (opts and opts.return_indices) then
    local y = dnn_pool(x, copts, true)
    if y then return y end
  end
  copts.pad_value = -math.huge
  local KK = copts.kernel[1] * copts.kernel[2]
  local y, idx = gpu.no_grad(function()
    local cols = gpu.im2col(x:reshape(N * C, 1, H, W), copts)
    local v, i = cols:max(2)
    return v:reshape(N, C, OH, OW), i
  end)
  copts.pad_value = nil
  record(y, { x }, function(g)
    local win = gpu.arange(1, KK + 1, { dtype = "int64", device = x.device }):reshape(1, KK, 1)
    local hit = gpu.eq(idx:reshape(N * C, 1, OH * OW), win)
    local gc = gpu.where(hit, g:reshape(N * C, 1, OH * OW), 0)
    return gpu.col2im(gc, { N * C, 1, H, W }, copts):reshape(N, C, H, W)
  end)
  if opts and opts.return_indices then
    -- window position -> 1-based position in the flattened H x W plane (PyTorch's, plus one)
    local k, st, p, d = copts.kernel, copts.stride, copts.padding, copts.dilation
    local i64 = { dtype = "int64", device = x.device }
    local p0 = gpu.no_grad(function() return idx:reshape(N, C, OH, OW) - 1 end)
    local oh = gpu.arange(0, OH, i64):reshape(1, 1, OH, 1)
    local ow = gpu.arange(0, OW, i64):reshape(1, 1, 1, OW)
    local ih = oh * st[1] + (p0 // k[2]) * d[1] - p[1]
    local iw = ow * st[2] + (p0 % k[2]) * d[2] - p[2]
    return y, ih * W + iw + 1
  end
  return y
end
F.max_pool2d_as = max_pool2d_as
function F.max_pool2d(x, k, opts) return max_pool2d_as("nn.max_pool2d", x, k, MAX_POOL2D:check(opts, 3)) end

-- avg_pool2d(x, kernel [, {stride = kernel, padding = 0}]): window means, padding counted
-- as zeros (PyTorch's count_include_pad = true).
local function avg_pool2d_as(name, x, k, opts)
  local N, C, H, W, OH, OW, copts = pool_geom(name, x, k, opts)
  local yd = dnn_pool(x, copts, false)
  if yd then return yd end
  return gpu.im2col(x:reshape(N * C, 1, H, W), copts):mean(2):reshape(N, C, OH, OW)
end
F.avg_pool2d_as = avg_pool2d_as
function F.avg_pool2d(x, k, opts) return avg_pool2d_as("nn.avg_pool2d", x, k, AVG_POOL2D:check(opts, 3)) end

-- Whether batch norm takes the cuDNN path: float32/float64 input of 2 to 4 axes on a device
-- with cuDNN, every per-channel operand of x's dtype and device, contiguous running stats.
local function dnn_bn_ok(x, rm, rv, w, b, training)
  if not wide[x.dtype] or x.ndim < 2 or x.ndim > 4 or not use_dnn(x.device, x.dtype, "batch_norm") then return false end
  if not training and rm == nil then return false end
  for _, v in ipairs { rm or x, rv or x, w or x, b or x } do
    if v.dtype ~= x.dtype or v.device ~= x.device then return false end
  end
  return rm == nil or (rm:is_contiguous() and rv:is_contiguous())
end

-- Batch norm through cuDNN: training (batch statistics, running ones updated by cuDNN,
-- backward from the saved mean and inverse std) or inference (backward here: y is affine
-- in x). One tape node.
local function dnn_batch_norm(x, rm, rv, w, b, training, momentum, eps, axes, shape)
  local C = x.shape[2]
  local o = { dtype = x.dtype, device = x.device }
  local wt = w or gpu.ones({ C }, o)
  local bs = b or gpu.zeros({ C }, o)
  if training then
    return (dnn.batch_norm(x, wt, bs, rm, rv, { training = true, momentum = momentum, eps = eps }))
  end
  return dnn.batch_norm(x, wt, bs, rm, rv, { training = false, eps = eps })
end

-- batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps): over
-- axis 2 of (N, C) or (N, C, ...) input. In training, batch statistics (biased variance)
-- normalise and the running ones (unbiased variance) are updated in place.
function F.batch_norm(x, rm, rv, w, b, training, momentum, eps)
  check_input("nn.batch_norm", x, { 2, 3, 4 })
  if not training and (rm == nil or rv == nil) then
    raise("nn.batch_norm: evaluation (training false) needs the running mean and variance")
  end
  momentum, eps = momentum or 0.1, eps or 1e-5
  local axes, shape = { 1 }, { 1, x.shape[2] }
  for i = 3, x.ndim do axes[#axes + 1] = i; shape[i] = 1 end
  if dnn_bn_ok(x, rm, rv, w, b, training) then
    return dnn_batch_norm(x, rm, rv, w, b, training, momentum, eps, axes, shape)
  end
  local mean, var
  if training then
    mean = x:mean(axes, { keepdims = true })
    local xc = x - mean
    var = (xc * xc):mean(axes, { keepdims = true })
    if rm ~= nil then
      local n = x.size // x.shape[2]
      gpu.no_grad(function()
        rm:mul_(1 - momentum):add_(mean:detach():reshape(x.shape[2]):astype(rm.dtype) * momentum)
        local unb = var:detach():reshape(x.shape[2]):astype(rv.dtype) * (n / math.max(n - 1, 1))
        rv:mul_(1 - momentum):add_(unb * momentum)
      end)
    end
    local y = xc / (var + eps):sqrt()
    if w ~= nil then y = y * w:reshape(shape) end
    if b ~= nil then y = y + b:reshape(shape) end
    return y
  end
  local scale = 1 / (rv:reshape(shape) + eps):sqrt()
  local y = (x - rm:reshape(shape)) * scale
  if w ~= nil then y = y * w:reshape(shape) end
  if b ~= nil then y = y + b:reshape(shape) end
  return y
end

return F

