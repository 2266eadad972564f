-- gpu.nn.extra_layers: RReLU, EmbeddingBag, Unfold, Fold, MaxUnpool2d, LazyLinear,
-- LazyConv2d; nn.functional's rrelu, embedding_bag, unfold, fold, max_unpool2d, affine_grid
-- and grid_sample. Compositions of dispatched ops (both devices, differentiable), as
-- PyTorch's, with gpulua's 1-based positions: EmbeddingBag's indices and offsets,
-- MaxUnpool2d's indices (those of max_pool2d's return_indices) and padding_idx.
local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local F = require "gpu.nn.functional"

local raise, argerror, check_array, shape_str, type_name = options.raise, options.argerror, options.check_array,
  options.shape_str, options.type_name
local class, pair = module.class, F.pair

local P = { functional = {} }
local Fn = P.functional

local function declare(name, keys, example) return options.declare(name, keys, { example = example }) end
local floating = { float16 = true, bfloat16 = true, float32 = true, float64 = true }
local function check_float(fname, argn, x, what)
  check_array(x, fname, argn, what)
  if not floating[x.dtype] then argerror(fname, argn, "%s must be a floating-point array, got %s", what, x.dtype) end
  return x
end
local function check_int(fname, argn, x, what)
  check_array(x, fname, argn, what)
  if not x.dtype:match("int") then argerror(fname, argn, "%s must be an integer array, got %s", what, x.dtype) end
  return x
end
local function placed(x) return { dtype = x.dtype, device = x.device } end

-- ---- RReLU -----------------------------------------------------------------------------------

-- rrelu: x where x >= 0, else a x, a drawn uniformly from [lower, upper] per element in
-- training, (lower + upper) / 2 otherwise (PyTorch's functional default is training = false)
local function rrelu(x, lower, upper, training, fname)
  check_float(fname, 1, x, "input")
  if lower > upper then raise("%s: lower (%g) must not exceed upper (%g)", fname, lower, upper) end
  local slope = (lower + upper) / 2
  if training then slope = gpu.random.uniform(lower, upper, x.shape, placed(x)) end
  return gpu.where(x:ge(0), x, x * slope)
end
local RRELU_KEYS = { lower = { type = "number", default = 1 / 8 }, upper = { type = "number", default = 1 / 3 } }
local RRELU = declare("nn.rrelu", { lower = RRELU_KEYS.lower, upper = RRELU_KEYS.upper,
  training = { type = "boolean", default = false } }, "gpu.nn.functional.rrelu(gpu.ones(2, 3), %s)")
function Fn.rrelu(x, opts)
  local o = RRELU:check(opts, 2)
  return rrelu(x, o.lower, o.upper, o.training, "nn.rrelu")
end
P.RReLU = module.options_class("RReLU", RRELU_KEYS, { "lower", "upper" }, function(_, o, fname)
  if o.lower > o.upper then argerror(fname, 1, "lower (%g) must not exceed upper (%g)", o.lower, o.upper) end
end, function(self, x) return rrelu(x, self.opts.lower, self.opts.upper, self.training, "nn.RReLU") end, "gpu.ones(2, 3)")
function P.RReLU:repr() return ("RReLU(lower=%g, upper=%g)"):format(self.opts.lower, self.opts.upper) end

-- ---- EmbeddingBag ----------------------------------------------------------------------------

-- padding_idx as given (1..V, or -V..-1 from the end) -> 1..V
local function padding_row(fname, argn, pad, V)
  if pad == nil then return nil end
  local p = pad < 0 and V + 1 + pad or pad
  if p < 1 or p > V then argerror(fname, argn, "option 'padding_idx' must be in 1..%d (or -%d..-1), got %d", V, V, pad) end
  return p
end

-- The bags of an input: a 2-D (B, L) input is B bags of L; a 1-D input is cut at offsets,
-- the 1-based position of each bag's first index (the first offset is 1; with
-- include_last_offset the last is #input + 1, the end of the last bag). Returns the start
-- of each bag and one more past its end, as a host list.
local function bag_bounds(fname, input, o)
  local n = input.size
  local starts = {}
  if input.ndim == 2 then
    if o.offsets ~= nil then raise("%s: offsets go with a 1-D input (a 2-D input (B, L) is B bags of L)", fname) end
    local B, L = input.shape[1], input.shape[2]
    for b = 1, B + 1 do starts[b] = (b - 1) * L + 1 end
    return starts
  end
  if input.ndim ~= 1 then raise("%s: input must be (B, L) or 1-D with offsets, got %s", fname, shape_str(input.shape)) end
  if o.offsets == nil then raise("%s: a 1-D input needs offsets (the 1-based position where each bag starts)", fname) end
  check_int(fname, 1, o.offsets, "offsets")
  if o.offsets.ndim ~= 1 then raise("%s: offsets must be 1-D, got %s", fname, shape_str(o.offsets.shape)) end
  starts = o.offsets:to("cpu"):astype("int64"):totable()
  if #starts == 0 or starts[1] ~= 1 then
    raise("%s: offsets must start at 1 (the first bag's first index), got %s", fname, tostring(starts[1]))
  end
  for i = 2, #starts do
    if starts[i] < starts[i - 1] or starts[i] > n + 1 then
      raise("%s: offsets must be non-decreasing positions in 1..%d, got %d after %d", fname, n + 1, starts[i],
        starts[i - 1])
    end
  end
  if o.include_last_offset then
    if #starts < 2 or starts[#starts] ~= n + 1 then
      raise("%s: with include_last_offset the last offset must be %d (one past the input's end), got %d", fname, n + 1,
        starts[#starts])
    end
  else
    starts[#starts + 1] = n + 1
  end
  return starts
end

-- embedding_bag: the rows of weight each bag names, reduced per bag ("sum" weighted by
-- per_sample_weights when given, "mean", "max"); indices equal to padding_idx take no part;
-- an empty bag gives zeros. The bags are laid out as a (B, longest) block of rows with a
-- mask, so every mode is a reduction over axis 2 (differentiable in weight and the weights).
local function embedding_bag(fname, input, weight, o, psw)
  check_int(fname, 1, input, "input")
  check_float(fname, 2, weight, "weight")
  if weight.ndim ~= 2 then raise("%s: weight must be (num_embeddings, dim), got %s", fname, shape_str(weight.shape)) end
  local V, D = weight.shape[1], weight.shape[2]
  local pad = padding_row(fname, 3, o.padding_idx, V)
  if input.size > 0 then
    require("gpu.nn.losses").check_labels(fname, input, V, { argn = 1, what = "indices" })
  end
  local starts = bag_bounds(fname, input, o)
  if psw ~= nil then
    check_float(fname, 3, psw, "per_sample_weights")
    if o.mode ~= "sum" then raise("%s: per_sample_weights go with mode 'sum' only, got mode '%s'", fname, o.mode) end
    if shape_str(psw.shape) ~= shape_str(input.shape) then
      raise("%s: per_sample_weights must have the input's shape %s, got %s", fname, shape_str(input.shape),
        shape_str(psw.shape))
    end
  end
  local ids = input:to("cpu"):astype("int64"):reshape(-1):totable()
  local B, longest = #starts - 1, 1
  for b = 1, B do longest = math.max(longest, starts[b + 1] - starts[b]) end
  local rows, pos, mask = {}, {}, {}
  for b = 1, B do
    for j = 1, longest do
      local k = starts[b] + j - 1
      local inside = k < starts[b + 1]
      local r = (b - 1) * longest + j
      rows[r] = inside and ids[k] or 1
      pos[r] = inside and k or 1
      mask[r] = (inside and ids[k] ~= pad) and 1 or 0
    end
  end
  local dev = weight.device
  local m = gpu.array(mask, { dtype = weight.dtype, device = dev }):reshape(B, longest, 1)
  local x = weight:index(1, gpu.array(rows, { dtype = "int64", device = dev })):reshape(B, longest, D)
  if o.mode == "max" then
    local count = m:sum(2)
    local y = gpu.where(m:gt(0), x, -math.huge):max({ 2 })
    return gpu.where(count:gt(0), y, 0):astype(weight.dtype)
  end
  local w = m
  if psw ~= nil then
    local p = gpu.take(psw:reshape(-1):to(dev), gpu.array(pos, { dtype = "int64", device = dev }))
    w = m * p:reshape(B, longest, 1)
  end
  local y = (x * w):sum(2)
  if o.mode == "mean" then y = y / m:sum(2):maximum(1) end
  return y
end

local BAG_KEYS = {
  offsets = { type = "array" }, per_sample_weights = { type = "array" },
  mode = { choices = { "sum", "mean", "max" }, default = "mean" }, padding_idx = { type = "integer" },
  include_last_offset = { type = "boolean", default = false },
}
local BAG = declare("nn.embedding_bag", BAG_KEYS,
  "gpu.nn.functional.embedding_bag(gpu.array({{1, 2}}, {dtype = 'int64'}), gpu.ones(3, 2), %s)")
-- embedding_bag(input, weight [, {offsets, per_sample_weights, mode = "mean", padding_idx,
-- include_last_offset = false}])
function Fn.embedding_bag(input, weight, opts)
  local o = BAG:check(opts, 3)
  return embedding_bag("nn.embedding_bag", input, weight, o, o.per_sample_weights)
end

local not_here = { unsupported = true }
local EMBEDDING_BAG = declare("nn.EmbeddingBag", module.with_placement {
  mode = BAG_KEYS.mode, padding_idx = BAG_KEYS.padding_idx, include_last_offset = BAG_KEYS.include_last_offset,
  max_norm = not_here, norm_type = not_here, scale_grad_by_freq = not_here, sparse = not_here,
}, "gpu.nn.EmbeddingBag(4, 2, %s)")
-- EmbeddingBag(num, dim [, {mode = "mean", padding_idx, include_last_offset, dtype, device}]):
-- weight (num, dim) drawn from N(0, 1), the padding_idx row zeros;
-- forward(input [, offsets [, per_sample_weights]])
local EmbeddingBag = class("EmbeddingBag")
function EmbeddingBag:init(num, dim, opts)
  options.value(num, { type = "integer", min = 1 }, "nn.EmbeddingBag", 1, "num_embeddings")
  options.value(dim, { type = "integer", min = 1 }, "nn.EmbeddingBag", 2, "embedding_dim")
  local o = EMBEDDING_BAG:check(opts, 3)
  self.num_embeddings, self.embedding_dim, self.mode = num, dim, o.mode
  self.padding_idx = padding_row("nn.EmbeddingBag", 3, o.padding_idx, num)
  self.include_last_offset = o.include_last_offset
  local w = gpu.random.normal(0, 1, { num, dim }, module.placement(o))
  if self.padding_idx then w[{ self.padding_idx }] = 0 end
  self:register_parameter("weight", w)
end
function EmbeddingBag:forward(input, offsets, psw)
  if offsets ~= nil then check_int("nn.EmbeddingBag", 2, offsets, "offsets") end
  return embedding_bag("nn.EmbeddingBag", input, self.weight, { offsets = offsets, mode = self.mode,
    padding_idx = self.padding_idx, include_last_offset = self.include_last_offset }, psw)
end
function EmbeddingBag:repr()
  return ("EmbeddingBag(%d, %d, mode='%s')"):format(self.num_embeddings, self.embedding_dim, self.mode)
end
P.EmbeddingBag = EmbeddingBag

-- ---- Unfold, Fold ----------------------------------------------------------------------------

local size = "integer|table"
local WINDOW = { dilation = size, padding = size, stride = size }

-- the window of an unfold/fold: kernel, dilation, padding, stride as pairs (gpu.im2col's keys)
local function window(fname, k, o)
  return { kernel = pair(k, "kernel_size", fname), dilation = pair(o.dilation or 1, "dilation", fname),
    padding = pair(o.padding or 0, "padding", fname, true), stride = pair(o.stride or 1, "stride", fname) }
end
-- the number of window positions along each axis of an H x W plane
local function blocks(fname, H, W, w)
  local n = {}
  for i, len in ipairs { H, W } do
    n[i] = (len + 2 * w.padding[i] - w.dilation[i] * (w.kernel[i] - 1) - 1) // w.stride[i] + 1
    if n[i] < 1 then
      raise("%s: the plane %dx%d (padded %dx%d) is smaller than the kernel %dx%d (dilated)", fname, H, W,
        H + 2 * w.padding[1], W + 2 * w.padding[2], w.dilation[1] * (w.kernel[1] - 1) + 1,
        w.dilation[2] * (w.kernel[2] - 1) + 1)
    end
  end
  return n[1], n[2]
end

-- unfold: x (N, C, H, W) or (C, H, W) -> (N, C kh kw, L) or (C kh kw, L), L the window
-- positions in row-major order (PyTorch's im2col; gpu.im2col)
local function unfold(fname, x, k, o)
  check_float(fname, 1, x, "input")
  if x.ndim ~= 3 and x.ndim ~= 4 then raise("%s: expected (N, C, H, W) or (C, H, W), got %s", fname, shape_str(x.shape)) end
  local w = window(fname, k, o)
  local xb = x.ndim == 3 and x:unsqueeze(1) or x
  blocks(fname, xb.shape[3], xb.shape[4], w)
  local cols = gpu.im2col(xb, w)
  return x.ndim == 3 and cols:squeeze(1) or cols
end
-- fold: the adjoint, cols (N, C kh kw, L) or (C kh kw, L) summed into (N, C, H, W) or (C, H, W)
local function fold(fname, cols, out, k, o)
  check_float(fname, 1, cols, "input")
  local w = window(fname, k, o)
  local hw = pair(out, "output_size", fname)
  if cols.ndim ~= 2 and cols.ndim ~= 3 then
    raise("%s: expected (N, C*kh*kw, L) or (C*kh*kw, L), got %s", fname, shape_str(cols.shape))
  end
  local cb = cols.ndim == 2 and cols:unsqueeze(1) or cols
  local kk = w.kernel[1] * w.kernel[2]
  if cb.shape[2] % kk ~= 0 then
    raise("%s: %d rows are not a multiple of the kernel's %d positions (%dx%d)", fname, cb.shape[2], kk, w.kernel[1],
      w.kernel[2])
  end
  local bh, bw = blocks(fname, hw[1], hw[2], w)
  if cb.shape[3] ~= bh * bw then
    raise("%s: expected %d blocks (%dx%d) for the output %dx%d, got %d", fname, bh * bw, bh, bw, hw[1], hw[2], cb.shape[3])
  end
  local y = gpu.col2im(cb, { cb.shape[1], cb.shape[2] // kk, hw[1], hw[2] }, w)
  return cols.ndim == 2 and y:squeeze(1) or y
end

local UNFOLD = declare("nn.unfold", WINDOW, "gpu.nn.functional.unfold(gpu.ones(1, 1, 4, 4), 2, %s)")
local FOLD = declare("nn.fold", WINDOW, "gpu.nn.functional.fold(gpu.ones(1, 4, 9), {4, 4}, 2, %s)")
-- unfold(x, kernel_size [, {dilation = 1, padding = 0, stride = 1}])
function Fn.unfold(x, k, opts) return unfold("nn.unfold", x, k, UNFOLD:check(opts, 3)) end
-- fold(cols, output_size, kernel_size [, {dilation = 1, padding = 0, stride = 1}])
function Fn.fold(cols, out, k, opts) return fold("nn.fold", cols, out, k, FOLD:check(opts, 4)) end

local function required(fname, o, keys)
  for _, k in ipairs(keys) do if o[k] == nil then raise("%s: %s is required", fname, k) end end
end
P.Unfold = module.options_class("Unfold", { kernel_size = size, dilation = size, padding = size, stride = size },
  { "kernel_size", "dilation", "padding", "stride" }, function(self, o, fname)
    required(fname, o, { "kernel_size" })
    window(fname, o.kernel_size, o)
    self.kernel_size = o.kernel_size
  end, function(self, x) return unfold("nn.Unfold", x, self.opts.kernel_size, self.opts) end, "gpu.ones(1, 1, 4, 4)",
  "{ kernel_size = 2 }")
-- the window of a layer's options as PyTorch prints it
local function window_repr(cname, o, first)
  local function v(x) return type(x) == "table" and ("(%d, %d)"):format(x[1], x[2]) or tostring(x) end
  return ("%s(%skernel_size=%s, dilation=%s, padding=%s, stride=%s)"):format(cname, first or "", v(o.kernel_size),
    v(o.dilation or 1), v(o.padding or 0), v(o.stride or 1))
end
function P.Unfold:repr() return window_repr("Unfold", self.opts) end
P.Fold = module.options_class("Fold", { output_size = size, kernel_size = size, dilation = size, padding = size,
  stride = size }, { "output_size", "kernel_size", "dilation", "padding", "stride" }, function(self, o, fname)
    required(fname, o, { "output_size", "kernel_size" })
    window(fname, o.kernel_size, o)
    pair(o.output_size, "output_size", fname)
    self.output_size, self.kernel_size = o.output_size, o.kernel_size
  end, function(self, x) return fold("nn.Fold", x, self.opts.output_size, self.opts.kernel_size, self.opts) end,
  "gpu.ones(1, 4, 9)", "{ output_size = 4, kernel_size = 2 }")
function P.Fold:repr()
  local out = self.opts.output_size
  return window_repr("Fold", self.opts, ("output_size=%s, "):format(type(out) == "table" and ("(%d, %d)"):format(out[1], out[2]) or out))
end

-- ---- MaxUnpool2d -------------------------------------------------------------------------------

-- max_unpool2d: x (N, C, H, W) or (C, H, W) put at indices (max_pool2d's return_indices:
-- 1-based positions in each flattened output plane) of a zero (N, C, OH, OW) plane, OH =
-- (H - 1) stride - 2 padding + kernel unless output_size ({OH, OW} or {N, C, OH, OW}, each
-- within stride of that) says otherwise. Two windows sharing a maximum write the same value;
-- the gradient reads each element's position back (PyTorch's).
local function max_unpool2d(fname, x, idx, k, o, out)
  check_float(fname, 1, x, "input")
  check_int(fname, 2, idx, "indices")
  if x.ndim ~= 3 and x.ndim ~= 4 then raise("%s: expected (N, C, H, W) or (C, H, W), got %s", fname, shape_str(x.shape)) end
  if shape_str(idx.shape) ~= shape_str(x.shape) then
    raise("%s: indices must have the input's shape %s, got %s", fname, shape_str(x.shape), shape_str(idx.shape))
  end
  local ks = pair(k, "kernel_size", fname)
  local s = pair(o.stride or ks, "stride", fname)
  local p = pair(o.padding or 0, "padding", fname, true)
  local xb = x.ndim == 3 and x:unsqueeze(1) or x
  local N, C, H, W = xb.shape[1], xb.shape[2], xb.shape[3], xb.shape[4]
  local size_ = { (H - 1) * s[1] + ks[1] - 2 * p[1], (W - 1) * s[2] + ks[2] - 2 * p[2] }
  if out ~= nil then
    if type(out) ~= "table" or (#out ~= 2 and #out ~= 4) then
      raise("%s: output_size must be {H, W} or {N, C, H, W}, got %s", fname, type_name(out))
    end
    local hw = { out[#out - 1], out[#out] }
    for i = 1, 2 do
      if math.type(hw[i]) ~= "integer" or hw[i] <= size_[i] - s[i] or hw[i] >= size_[i] + s[i] then
        raise("%s: output_size {%s, %s}: each must be between %d and %d (exclusive)", fname, tostring(hw[1]),
          tostring(hw[2]), size_[i] - s[i], size_[i] + s[i])
      end
    end
    size_ = hw
  end
  if size_[1] < 1 or size_[2] < 1 then raise("%s: the output would be %dx%d: too small", fname, size_[1], size_[2]) end
  local plane = size_[1] * size_[2]
  local flat = idx:reshape(N, C, H * W):astype("int64"):to(x.device)
  if flat.size > 0 then
    local lo, hi = flat:min():item(), flat:max():item()
    if lo < 1 or hi > plane then
      raise("%s: indices must be positions in 1..%d (the %dx%d output plane), got %d..%d", fname, plane, size_[1],
        size_[2], lo, hi)
    end
  end
  local xf = xb:reshape(N, C, H * W)
  local y = autograd.no_grad(function()
    return gpu.scatter(gpu.zeros({ N, C, plane }, placed(x)), 3, flat, xf:detach())
  end)
  autograd.record(y, { xf }, function(g) return gpu.gather(g, 3, flat) end)
  y = y:reshape(N, C, size_[1], size_[2])
  return x.ndim == 3 and y:squeeze(1) or y
end
local UNPOOL_KEYS = { stride = size, padding = size }
local UNPOOL = declare("nn.max_unpool2d", { stride = size, padding = size, output_size = "table" },
  "gpu.nn.functional.max_unpool2d(gpu.ones(1, 1, 2, 2), gpu.array({{{{1, 3}, {9, 11}}}}, {dtype = 'int64'}), 2, %s)")
-- max_unpool2d(x, indices, kernel_size [, {stride = kernel_size, padding = 0, output_size}])
function Fn.max_unpool2d(x, idx, k, opts)
  local o = UNPOOL:check(opts, 4)
  return max_unpool2d("nn.max_unpool2d", x, idx, k, o, o.output_size)
end
-- MaxUnpool2d(kernel_size [, {stride = kernel_size, padding = 0}]): forward(x, indices [, output_size])
local UNPOOL_LAYER = declare("nn.MaxUnpool2d", UNPOOL_KEYS, "gpu.nn.MaxUnpool2d(2, %s)")
local MaxUnpool2d = class("MaxUnpool2d")
function MaxUnpool2d:init(k, opts)
  local o = UNPOOL_LAYER:check(opts, 2)
  self.kernel_size = pair(k, "kernel_size", "nn.MaxUnpool2d")
  self.stride = pair(o.stride or self.kernel_size, "stride", "nn.MaxUnpool2d")
  self.padding = pair(o.padding or 0, "padding", "nn.MaxUnpool2d", true)
end
function MaxUnpool2d:forward(x, idx, out)
  return max_unpool2d("nn.MaxUnpool2d", x, idx, self.kernel_size, { stride = self.stride, padding = self.padding }, out)
end
function MaxUnpool2d:repr()
  return ("MaxUnpool2d(kernel_size=(%d, %d), stride=(%d, %d))"):format(self.kernel_size[1], self.kernel_size[2],
    self.stride[1], self.stride[2])
end
P.MaxUnpool2d = MaxUnpool2d

-- ---- LazyLinear, LazyConv2d ------------------------------------------------------------------

-- A lazy layer holds no parameters until its first call, which reads in_features (the
-- input's last axis) or in_channels (axis 2) and makes them as the eager layer does
-- (PyTorch's initialisation, the dtype and device of the options or of an earlier :to).
-- Until then parameters() is an error, so an optimizer cannot be built on a list that
-- misses them: run one forward pass (a dummy batch) first, as PyTorch advises.
local LAZY_FIELDS = { "in_features", "in_channels", "groups", "kernel_size", "stride", "padding", "dilation" }
local function lazy_class(cname, eager, in_size, in_size_of_weight, make)
  local cls = class(cname)
  -- the parameters made for an input size n, as the eager layer makes them
  local function materialize(self, n)
    local o = {}
    for k, v in pairs(rawget(self, "_lazy")) do o[k] = v end
    o.device = rawget(self, "device") or o.device
    local m = make(self, n, o)
    local before = {}
    for _, k in ipairs(LAZY_FIELDS) do
      before[k] = rawget(self, k)
      if m[k] ~= nil then rawset(self, k, m[k]) end
    end
    for _, pn in ipairs(m._pnames) do self:register_parameter(pn, m._params[pn]) end
    rawset(self, "_uninitialized", nil)
    return function()                  -- undoes it
      for _, pn in ipairs(m._pnames) do self._params[pn] = nil; rawset(self, pn, nil) end
      rawset(self, "_pnames", {})
      for _, k in ipairs(LAZY_FIELDS) do rawset(self, k, before[k]) end
      rawset(self, "_uninitialized", "nn." .. cname)
    end
  end
  function cls:forward(x)
    if rawget(self, "_uninitialized") then
      local fname = "nn." .. cname
      check_float(fname, 1, x, "input")
      materialize(self, in_size(fname, x))
    end
    return eager.forward(self, x)
  end
  -- load_state_dict on a layer not yet called: the size read from the state's weight (as
  -- PyTorch's lazy modules do); returns the undo, or nil when the state has no such weight
  function cls:materialize_from(sd, prefix)
    local w = sd[prefix .. "weight"]
    if not options.is_array(w) then return nil end
    local n = in_size_of_weight(self, w)
    if n == nil then return nil end
    return materialize(self, n)
  end
  function cls:repr()
    if rawget(self, "_uninitialized") then return cname .. "(<not yet called>)" end
    return eager.repr(self)
  end
  P[cname] = cls
  return cls
end

local Linear = require("gpu.nn.layers").Linear
local LAZY_LINEAR = declare("nn.LazyLinear", module.with_placement { bias = { type = "boolean", default = true } },
  "gpu.nn.LazyLinear(3, %s)")
-- LazyLinear(out_features [, {bias = true, dtype, device}]): in_features is the first
-- input's last axis
local LazyLinear = lazy_class("LazyLinear", Linear, function(fname, x)
  if x.ndim < 1 then raise("%s: expected an input of 1 or more dimensions, got %s", fname, shape_str(x.shape)) end
  return x.shape[x.ndim]
end, function(self, w)
  if w.ndim == 2 and w.shape[1] == self.out_features and w.shape[2] >= 1 then return w.shape[2] end
end, function(self, n, o) return Linear(n, self.out_features, o) end)
function LazyLinear:init(out, opts)
  options.value(out, { type = "integer", min = 1 }, "nn.LazyLinear", 1, "out_features")
  if type(opts) == "boolean" then opts = { bias = opts } end
  local o = LAZY_LINEAR:check(opts, 2)
  self.out_features = out
  rawset(self, "_lazy", { bias = o.bias, dtype = o.dtype or gpu.get_default_dtype(), device = o.device })
  rawset(self, "_uninitialized", "nn.LazyLinear")
end

local conv = require "gpu.nn.conv"
local LAZY_CONV = declare("nn.LazyConv2d", module.with_placement {
  stride = size, padding = size, dilation = size, groups = { type = "integer", min = 1 },
  bias = { type = "boolean", default = true } }, "gpu.nn.LazyConv2d(2, 3, %s)")
-- LazyConv2d(out_channels, kernel_size [, {stride, padding, dilation, groups, bias, dtype,
-- device}]): in_channels is the first input's axis 2 (N, C, H, W)
local LazyConv2d = lazy_class("LazyConv2d", conv.Conv2d, function(fname, x)
  if x.ndim ~= 4 then raise("%s: expected (N, C, H, W), got %s", fname, shape_str(x.shape)) end
  return x.shape[2]
end, function(self, w)
  local k = rawget(self, "_lazy_kernel")
  if w.ndim == 4 and w.shape[1] == self.out_channels and w.shape[3] == k[1] and w.shape[4] == k[2] then
    return w.shape[2] * (rawget(self, "_lazy").groups or 1)
  end
end, function(self, n, o) return conv.Conv2d(n, self.out_channels, rawget(self, "_lazy_kernel"), o) end)
function LazyConv2d:init(out, k, opts)
  options.value(out, { type = "integer", min = 1 }, "nn.LazyConv2d", 1, "out_channels")
  self.kernel_size = pair(k, "kernel_size", "nn.LazyConv2d")
  local o = LAZY_CONV:check(opts, 3)
  self.out_channels = out
  local lazy = {}
  for key, v in pairs(o) do lazy[key] = v end
  lazy.dtype = o.dtype or gpu.get_default_dtype()
  rawset(self, "_lazy", lazy)
  rawset(self, "_lazy_kernel", self.kernel_size)
  rawset(self, "_uninitialized", "nn.LazyConv2d")
end

-- ---- affine_grid, grid_sample ------------------------------------------------------------------

-- -1 .. 1 over n points (the pixels' centres scaled by (n - 1) / n without align_corners;
-- 0 for one point), PyTorch's base grid
local function base_line(n, ac, p)
  if n <= 1 then return gpu.zeros({ n }, p) end
  local v = gpu.linspace(-1, 1, n, p)
  return ac and v or v * ((n - 1) / n)
end

local GRID = declare("nn.affine_grid", { align_corners = { type = "boolean", default = false } },
  "gpu.nn.functional.affine_grid(gpu.zeros(1, 2, 3), {1, 1, 2, 2}, %s)")
-- affine_grid(theta (N, 2, 3), {N, C, H, W} [, {align_corners = false}]) -> (N, H, W, 2):
-- theta applied to the base grid's (x, y, 1), differentiable in theta
function Fn.affine_grid(theta, sz, opts)
  local fname = "nn.affine_grid"
  check_float(fname, 1, theta, "theta")
  local o = GRID:check(opts, 3)
  if type(sz) ~= "table" or options.is_array(sz) or #sz ~= 4 then
    argerror(fname, 2, "size {N, C, H, W} expected, got %s", type_name(sz))
  end
  for i = 1, 4 do
    if math.type(sz[i]) ~= "integer" or sz[i] < 1 then argerror(fname, 2, "size entries must be integers >= 1") end
  end
  local N, H, W = sz[1], sz[3], sz[4]
  if theta.ndim ~= 3 or theta.shape[1] ~= N or theta.shape[2] ~= 2 or theta.shape[3] ~= 3 then
    raise("%s: theta must be (%d, 2, 3) for the size {%d, %d, %d, %d}, got %s", fname, N, sz[1], sz[2], H, W,
      shape_str(theta.shape))
  end
  local p = placed(theta)
  local xs = base_line(W, o.align_corners, p):reshape(1, W):broadcast_to({ H, W })
  local ys = base_line(H, o.align_corners, p):reshape(H, 1):broadcast_to({ H, W })
  local base = gpu.stack({ xs, ys, gpu.ones({ H, W }, p) }, 3):reshape(1, H * W, 3)
  return base:matmul(theta:transpose(2, 3)):reshape(N, H, W, 2)
end

-- PyTorch's reflect_coordinates: coordinates reflected into [low, high] (twice each given)
local function reflect(c, twice_low, twice_high)
  if twice_low == twice_high then return c * 0 end
  local lo, span = twice_low / 2, (twice_high - twice_low) / 2
  local a = (c - lo):abs()
  local extra = gpu.mod(a, span)
  local even = gpu.mod((a / span):floor(), 2):eq(0)
  return gpu.where(even, extra + lo, span - extra + lo)
end

-- a grid coordinate (-1 .. 1) as a pixel position (0-based, fractional) along an axis of
-- n pixels, with the padding mode's folding
local function source_index(c, n, o)
  if o.align_corners then c = (c + 1) * ((n - 1) / 2) else c = ((c + 1) * n - 1) / 2 end
  if o.padding_mode == "border" then
    c = c:clip(0, n - 1)
  elseif o.padding_mode == "reflection" then
    c = o.align_corners and reflect(c, 0, 2 * (n - 1)) or reflect(c, -1, 2 * n - 1)
    c = c:clip(0, n - 1)
  end
  return c
end

local SAMPLE = declare("nn.grid_sample", { mode = { choices = { "bilinear", "nearest" }, default = "bilinear" },
  padding_mode = { choices = { "zeros", "border", "reflection" }, default = "zeros" },
  align_corners = { type = "boolean", default = false } },
  "gpu.nn.functional.grid_sample(gpu.ones(1, 1, 2, 2), gpu.zeros(1, 1, 1, 2), %s)")
-- grid_sample(input (N, C, H, W), grid (N, Ho, Wo, 2) [, {mode = "bilinear", padding_mode =
-- "zeros", align_corners = false}]) -> (N, C, Ho, Wo): input read at grid's (x, y) points (-1
-- .. 1 the input's extent), differentiable in input and (bilinear) in grid
function Fn.grid_sample(input, grid, opts)
  local fname = "nn.grid_sample"
  check_float(fname, 1, input, "input")
  check_float(fname, 2, grid, "grid")
  local o = SAMPLE:check(opts, 3)
  if input.ndim ~= 4 then raise("%s: input must be (N, C, H, W), got %s", fname, shape_str(input.shape)) end
  if grid.ndim ~= 4 or grid.shape[4] ~= 2 or grid.shape[1] ~= input.shape[1] then
    raise("%s: grid must be (%d, Ho, Wo, 2) for the input %s, got %s", fname, input.shape[1], shape_str(input.shape),
      shape_str(grid.shape))
  end
  if grid.dtype ~= input.dtype then raise("%s: input and grid must have one dtype, got %s and %s", fname, input.dtype, grid.dtype) end
  local N, C, H, W = table.unpack(input.shape)
  local Ho, Wo = grid.shape[2], grid.shape[3]
  local L = Ho * Wo
  local g = grid:reshape(N, L, 2)
  local ix = source_index(g[{ ":", ":", 1 }], W, o)                          -- (N, L)
  local iy = source_index(g[{ ":", ":", 2 }], H, o)
  local flat = input:reshape(N, C, H * W)
  -- the input at integer positions (px, py) (N, L), zero outside the plane
  local function read(px, py)
    local inside = px:ge(0) * px:le(W - 1) * py:ge(0) * py:le(H - 1)
    local at = (py:clip(0, H - 1) * W + px:clip(0, W - 1) + 1):astype("int64")
    local v = gpu.gather(flat, 3, at:reshape(N, 1, L):broadcast_to({ N, C, L }):contiguous())
    return v * inside:astype(input.dtype):reshape(N, 1, L)
  end
  local y
  if o.mode == "nearest" then
    y = read(ix:detach():round(), iy:detach():round())
  else
    local x0, y0 = ix:detach():floor(), iy:detach():floor()
    local wx1, wy1 = (ix - x0):reshape(N, 1, L), (iy - y0):reshape(N, 1, L)
    local wx0, wy0 = 1 - wx1, 1 - wy1
    y = read(x0, y0) * (wx0 * wy0) + read(x0 + 1, y0) * (wx1 * wy0) + read(x0, y0 + 1) * (wx0 * wy1)
      + read(x0 + 1, y0 + 1) * (wx1 * wy1)
  end
  return y:reshape(N, C, Ho, Wo)
end

-- Errors from the ops inside name the function or layer the user called, at the user's line;
-- a functional form refuses more arguments than it takes
local guarded = options.guarded
for name, f in pairs(Fn) do Fn[name] = options.counted("nn." .. name, guarded("nn." .. name, f), options.nparams(f)) end
for cname, cls in pairs(P) do
  if cname ~= "functional" and rawget(cls, "forward") then rawset(cls, "forward", guarded("nn." .. cname, rawget(cls, "forward"))) end
end

return P
