-- gpu.nn.conv: the convolutions, the 2-D pooling and the batch-norm layers (NCHW): Conv1d,
-- Conv2d, ConvTranspose1d, ConvTranspose2d, MaxPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d,
-- with PyTorch's constructor arguments, defaults, parameter names and initialisation; and
-- the functional forms conv1d, conv_transpose1d and conv_transpose2d (C.functional, which
-- gpu.nn puts into nn.functional beside conv2d).
--
--   local net = nn.Sequential{ nn.Conv2d(1, 16, 3, {padding = 1}), nn.ReLU(), nn.MaxPool2d(2),
--                              nn.Flatten(), nn.Linear(16 * 14 * 14, 10) }
--
-- The 1-D forms are the 2-D ones on a (N, C, 1, L) view. conv_transpose2d is col2im of w^T x
-- (the convolution's backward-data; its own backward is then im2col + GEMM) or, where the
-- device's library (cuDNN, oneDNN) takes it, the library's backward-data, recorded as one
-- node. Conv2d and the pooling take gpu.nn.functional's conv2d and pooling (cuDNN where the
-- device has it, else im2col + GEMM).
local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"
local raise, argerror, shape_str, check_array = options.raise, options.argerror, options.shape_str, options.check_array
local F = require "gpu.nn.functional"
local pair, check_input, single, batched, unbatch = F.pair, F.check_input, F.single, F.batched, F.unbatch
local module = require "gpu.nn.module"
local class = module.class
local init = require "gpu.nn.initializers"

local C = {}

-- Whether the library path (cuDNN on cuda, oneDNN on the cpu) takes this family of ops in
-- this dtype on 'device' (oneDNN has no float64 convolution: nn's own path runs it).
local function use_dnn(device, dtype, family)
  local dnn = gpu.dnn
  return dnn ~= nil and dnn.enabled ~= false and dnn.available(device, dtype, family) == true
end
local dnn_floats = { float16 = true, float32 = true, float64 = true }
local fft_floats = { float16 = true, bfloat16 = true, float32 = true, float64 = true }
-- the fast transform lengths (2, 3 and 5 their only prime factors), convolve's
local function fast_len(n) return require("gpu.routines.stats").fast_len(n) end


local size = "integer|table"
local function decl(fname, keys, example) return options.declare(fname, keys, { example = example }) end

-- ---- functional conv1d -----------------------------------------------------------------------

local conv_keys = {
  conv = { stride = size, padding = size, dilation = size, groups = { type = "integer", min = 1 } },
  conv_transpose = { stride = size, padding = size, output_padding = size, dilation = size,
                     groups = { type = "integer", min = 1 } },
}
local CONV1D = decl("nn.conv1d", (function()
  local k = { method = { type = "string", choices = { "direct", "fft", "auto" }, default = "direct" } }
  for name, spec in pairs(conv_keys.conv) do k[name] = spec end
  return k
end)(), "gpu.nn.functional.conv1d(gpu.ones(1, 1, 4), gpu.ones(1, 1, 2), nil, %s)")

-- conv1d through the transforms. y[n, o, t] = sum_c sum_j xp[n, c, t s + j d] w[o, c, j] (xp: x
-- padded with p zeros each side, Lp long) is the valid part of the correlation of xp with the
-- dilated kernel (kd = d (k - 1) + 1 long), i.e. of the convolution with that kernel reversed,
-- summed over the group's channels. A circular convolution of length L >= Lp wraps none of the
-- valid outputs (positions kd - 1 .. Lp - 1), so with X = rfft(xp, L), W = rfft(reversed
-- kernel, L): Y[n, o, f] = sum_c X[n, c, f] W[o, c, f], one complex matmul per frequency and
-- group, then irfft and every s-th valid position. All of it differentiable (the transforms
-- have rules), so autograd needs nothing more.
local function conv1d_fft(x, w, b, s, p, d, G)
  local N, C, L = x.shape[1], x.shape[2], x.shape[3]
  local O, Cg, k = w.shape[1], w.shape[2], w.shape[3]
  local Og, kd, Lp = O // G, d * (k - 1) + 1, L + 2 * p
  local fft = gpu.fft
  if p > 0 then
    local z = gpu.zeros({ N, C, p }, { dtype = x.dtype, device = x.device })
    x = gpu.concat({ z, x, z }, 3)
  end
  local wr = w:flip(3)
  if d > 1 then                                               -- d - 1 zeros after each tap
    local z = gpu.zeros({ O, Cg, k, d - 1 }, { dtype = w.dtype, device = w.device })
    wr = gpu.concat({ wr:unsqueeze(4), z }, 4):reshape(O, Cg, k * d)[{ ":", ":", { 1, kd } }]
  end
  local Lf = fast_len(Lp)
  local F = Lf // 2 + 1
  local X = fft.rfft(x, Lf, 3):reshape(N, G, Cg, F):permute(4, 2, 1, 3)      -- (F, G, N, Cg)
  local W = fft.rfft(wr, Lf, 3):reshape(G, Og, Cg, F):permute(4, 1, 3, 2)    -- (F, G, Cg, Og)
  local Y = X:matmul(W):permute(3, 2, 4, 1):reshape(N, O, F)
  local y = fft.irfft(Y, Lf, 3)[{ ":", ":", { kd, Lp, s } }]
  if y.dtype ~= x.dtype then y = y:astype(x.dtype) end       -- float16, bfloat16: transformed in float32
  if b ~= nil then y = y + b:reshape(1, O, 1) end
  return y
end

-- "auto": the transforms when their multiplications, 2.5 L log2 L per real transform of
-- length L and 4 per complex product, weighted 5 to 1, are fewer than the direct sum's: the
-- direct path's library kernels (oneDNN, cuDNN) do several times more multiplications per
-- second than the transforms and the small per-frequency products (measured on the cpu:
-- the weights 2 to 10 with the kernel's length and the channels)
local function fft_conv1d_faster(N, C, O, Cg, k, Lout, Lp)
  local Lf = fast_len(Lp)
  local F = Lf // 2 + 1
  local transforms = (N * C + O * Cg + N * O) * 2.5 * Lf * math.log(Lf, 2)
  return 5 * (transforms + 4 * N * O * Cg * F) < N * O * Cg * k * Lout
end

-- conv1d_as(name, x, w, b, opts): x (N, C, L) or (C, L), w (O, C/groups, k), b (O) or nil;
-- opts.method "direct" (conv2d's path on a (N, C, 1, L) view), "fft" or "auto".
local function conv1d_as(name, x, w, b, o)
  local xb, was = batched(name, x, 3)
  check_array(w, name, 2, "weight")
  if w.ndim ~= 3 then raise("%s: weight must be a 3-D array (out, in/groups, k), got %s", name, shape_str(w.shape)) end
  local s = single(o.stride or 1, "stride", name)
  local p = single(o.padding or 0, "padding", name, true)
  local d = single(o.dilation or 1, "dilation", name)
  local N, C, L = xb.shape[1], xb.shape[2], xb.shape[3]
  local method = o.method or "direct"
  if method ~= "direct" then
    local G = o.groups or 1
    local O, Cg, k = w.shape[1], w.shape[2], w.shape[3]
    if b ~= nil then check_array(b, name, 3, "bias") end
    if math.type(G) ~= "integer" or O % G ~= 0 then
      raise("%s: groups (%s) must be a positive integer dividing the %d output channels", name, tostring(G), O)
    end
    if b ~= nil and b.size ~= O then
      raise("%s: bias must hold %d values (one per output channel), got %s", name, O, shape_str(b.shape))
    end
    if C ~= Cg * G then
      raise("%s: expected %d input channels, got %d (input shape %s)", name, Cg * G, C, shape_str(xb.shape))
    end
    local kd, Lp = d * (k - 1) + 1, L + 2 * p
    if Lp < kd then
      raise("%s: the input of length %d (padded %d) is shorter than the kernel (dilated: %d)", name, L, Lp, kd)
    end
    local floating = fft_floats[xb.dtype] and w.dtype == xb.dtype
    if method == "fft" and not floating then
      raise("%s: method 'fft' takes a floating-point input and weight of one dtype, got %s and %s", name, xb.dtype,
        w.dtype)
    end
    if floating and (method == "fft" or fft_conv1d_faster(N, C, O, Cg, k, (Lp - kd) // s + 1, Lp)) then
      return unbatch(conv1d_fft(xb, w, b, s, p, d, G), was)
    end
  end
  local y = F.conv2d_as(name, xb:reshape(N, C, 1, L), w:reshape(w.shape[1], w.shape[2], 1, w.shape[3]), b,
    { stride = { 1, s }, padding = { 0, p }, dilation = { 1, d }, groups = o.groups or 1 })
  return unbatch(y:reshape(N, y.shape[2], y.shape[4]), was)
end
local function conv1d(x, w, b, opts) return conv1d_as("nn.conv1d", x, w, b, CONV1D:check(opts, 4)) end

-- ---- transposed convolutions -------------------------------------------------------------------

local CONVT1D = decl("nn.conv_transpose1d", conv_keys.conv_transpose,
  "gpu.nn.functional.conv_transpose1d(gpu.ones(1, 1, 4), gpu.ones(1, 1, 2), nil, %s)")
local CONVT2D = decl("nn.conv_transpose2d", conv_keys.conv_transpose,
  "gpu.nn.functional.conv_transpose2d(gpu.ones(1, 1, 4, 4), gpu.ones(1, 1, 2, 2), nil, %s)")

-- conv_transpose2d_as(name, x, w, b, opts): x (N, Cin, H, W) or unbatched, w (Cin, Cout/groups,
-- kh, kw), b (Cout) or nil -> (N, Cout, OH, OW), OH = (H - 1) s - 2 p + d (kh - 1) + op + 1.
-- The gradient of conv2d with respect to its input, as PyTorch defines it.
local function conv_transpose2d_as(name, x, w, b, o)
  local xb, was = batched(name, x, 4)
  check_array(w, name, 2, "weight")
  if b ~= nil then check_array(b, name, 3, "bias") end
  if w.ndim ~= 4 then
    raise("%s: weight must be a 4-D array (in, out/groups, kh, kw), got %s", name, shape_str(w.shape))
  end
  local s = pair(o.stride or 1, "stride", name)
  local p = pair(o.padding or 0, "padding", name, true)
  local op = pair(o.output_padding or 0, "output_padding", name, true)
  local d = pair(o.dilation or 1, "dilation", name)
  local G = o.groups or 1
  local N, Cin, H, W = xb.shape[1], xb.shape[2], xb.shape[3], xb.shape[4]
  local Ci, Cog, kh, kw = w.shape[1], w.shape[2], w.shape[3], w.shape[4]
  if math.type(G) ~= "integer" or G < 1 or Ci % G ~= 0 then
    raise("%s: groups (%s) must be a positive integer dividing the %d input channels", name, tostring(G), Ci)
  end
  if Cin ~= Ci then
    raise("%s: expected %d input channels (weight %s), got %d (input shape %s)", name, Ci, shape_str(w.shape), Cin,
      shape_str(xb.shape))
  end
  local Cout = Cog * G
  if b ~= nil and (b.ndim ~= 1 or b.size ~= Cout) then
    raise("%s: bias must hold %d values (one per output channel), got %s", name, Cout, shape_str(b.shape))
  end
  for i = 1, 2 do
    if op[i] >= s[i] then
      raise("%s: output_padding (%d, %d) must be smaller than stride (%d, %d)", name, op[1], op[2], s[1], s[2])
    end
  end
  local OH = (H - 1) * s[1] - 2 * p[1] + d[1] * (kh - 1) + op[1] + 1
  local OW = (W - 1) * s[2] - 2 * p[2] + d[2] * (kw - 1) + op[2] + 1
  if OH < 1 or OW < 1 then
    raise("%s: the output would be %dx%d (input %dx%d, padding (%d, %d)): too small", name, OH, OW, H, W, p[1], p[2])
  end
  local copts = { kernel = { kh, kw }, stride = s, padding = p, dilation = d }
  local y
  if dnn_floats[xb.dtype] and w.dtype == xb.dtype and use_dnn(xb.device, xb.dtype, "conv") then
    local dnn = gpu.dnn
    local o4 = { stride = s, padding = p, dilation = d, groups = G }
    y = autograd.no_grad(dnn.conv2d_backward_data, xb:detach(), w:detach(), { N, Cout, OH, OW }, o4)
    autograd.record(y, { xb, w }, function(g)
      return dnn.conv2d(g, w, o4), dnn.conv2d_backward_filter(g, xb, w.shape, o4)
    end)
  else
    local Cig, kk = Ci // G, kh * kw
    local wt = w:reshape(G, Cig, Cog * kk):transpose(2, 3)                  -- (G, Cout/G * kk, Cin/G)
    local cols = wt:matmul(xb:reshape(N, G, Cig, H * W))                   -- (N, G, Cout/G * kk, H W)
    y = gpu.col2im(cols:reshape(N, Cout * kk, H * W), { N, Cout, OH, OW }, copts)
  end
  if b ~= nil then y = y + b:reshape(1, Cout, 1, 1) end
  return unbatch(y, was)
end
local function conv_transpose2d(x, w, b, opts) return conv_transpose2d_as("nn.conv_transpose2d", x, w, b, CONVT2D:check(opts, 4)) end

-- conv_transpose1d_as(name, x, w, b, opts): x (N, Cin, L) or (Cin, L), w (Cin, Cout/groups, k).
local function conv_transpose1d_as(name, x, w, b, o)
  local xb, was = batched(name, x, 3)
  check_array(w, name, 2, "weight")
  if w.ndim ~= 3 then raise("%s: weight must be a 3-D array (in, out/groups, k), got %s", name, shape_str(w.shape)) end
  local function one(v, what, zero_ok, def) return { zero_ok and 0 or 1, single(v or def, what, name, zero_ok) } end
  local N, C, L = xb.shape[1], xb.shape[2], xb.shape[3]
  local y = conv_transpose2d_as(name, xb:reshape(N, C, 1, L), w:reshape(w.shape[1], w.shape[2], 1, w.shape[3]), b, {
    stride = one(o.stride, "stride", false, 1), padding = one(o.padding, "padding", true, 0),
    output_padding = one(o.output_padding, "output_padding", true, 0), dilation = one(o.dilation, "dilation", false, 1),
    groups = o.groups })
  return unbatch(y:reshape(N, y.shape[2], y.shape[4]), was)
end
local function conv_transpose1d(x, w, b, opts) return conv_transpose1d_as("nn.conv_transpose1d", x, w, b, CONVT1D:check(opts, 4)) end

-- the functional forms gpu.nn puts into nn.functional
C.functional = { conv1d = conv1d, conv_transpose1d = conv_transpose1d, conv_transpose2d = conv_transpose2d }


local function positive(fname, argn, v, what)
  return options.value(v, { type = "integer", min = 1 }, fname, argn, what)
end

local unsupported_padding_mode = { type = "string", default = "zeros", check = function(v)
  return v == "zeros", "must be 'zeros' (reflect, replicate and circular padding are not implemented)"
end }

-- A size given as a number or a table: the table of nd entries (a 1-D layer keeps {k}).
local function sizes(v, nd, what, name)
  if type(v) == "table" then
    if #v ~= nd then argerror(name, 3, "%s must be an integer or a table of %d, got %d entries", what, nd, #v) end
    return { table.unpack(v) }
  end
  local r = {}
  for i = 1, nd do r[i] = v end
  return r
end

-- ---- Conv2d ---------------------------------------------------------------------------------

local CONV2D = options.declare("nn.Conv2d", module.with_placement {
  stride = F.window_keys.stride, padding = F.window_keys.padding, dilation = F.window_keys.dilation,
  groups = { type = "integer", min = 1, default = 1 },
  bias = { type = "boolean", default = true },
  padding_mode = unsupported_padding_mode,
}, { example = "gpu.nn.Conv2d(1, 2, 3, %s)" })

-- Conv2d(in, out, kernel [, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true,
-- dtype =, device =}]): weight (out, in/groups, kh, kw), PyTorch's default init.
local Conv2d = class("Conv2d")
C.Conv2d = Conv2d
function Conv2d:init(cin, cout, k, opts)
  positive("nn.Conv2d", 1, cin, "in_channels")
  positive("nn.Conv2d", 2, cout, "out_channels")
  local o = CONV2D:check(opts, 4)
  local G = o.groups
  if cin % G ~= 0 or cout % G ~= 0 then
    argerror("nn.Conv2d", 4, "option 'groups' (%d) must divide in_channels %d and out_channels %d", G, cin, cout)
  end
  self.in_channels, self.out_channels, self.groups = cin, cout, G
  self.kernel_size = pair(k, "kernel_size", "nn.Conv2d")
  self.stride = pair(o.stride or 1, "stride", "nn.Conv2d")
  self.padding = pair(o.padding or 0, "padding", "nn.Conv2d", true)
  self.dilation = pair(o.dilation or 1, "dilation", "nn.Conv2d")
  local p = module.placement(o)
  local fan_in = (cin // G) * self.kernel_size[1] * self.kernel_size[2]
  local lim = 1 / math.sqrt(fan_in)
  self:register_parameter("weight",
    init.uniform({ cout, cin // G, self.kernel_size[1], self.kernel_size[2] }, lim, p))
  if o.bias then self:register_parameter("bias", init.uniform({ cout }, lim, p)) end
end
function Conv2d:repr()
  local k, s, p = self.kernel_size, self.stride, self.padding
  local r = ("Conv2d(%d, %d, kernel_size=(%d, %d), stride=(%d, %d)"):format(self.in_channels,
    self.out_channels, k[1], k[2], s[1], s[2])
  if p[1] ~= 0 or p[2] ~= 0 then r = r .. (", padding=(%d, %d)"):format(p[1], p[2]) end
  if self.groups ~= 1 then r = r .. ", groups=" .. self.groups end
  return r .. ")"
end
function Conv2d:forward(x)
  local name = ("Conv2d(%d, %d)"):format(self.in_channels, self.out_channels)
  check_input(name, x, { 4 }, self.in_channels)
  return F.conv2d_as(name, x, self.weight, self.bias, { stride = self.stride, padding = self.padding,
    dilation = self.dilation, groups = self.groups })
end

-- ---- Conv1d, ConvTranspose1d, ConvTranspose2d ------------------------------------------------

-- Conv1d(in, out, kernel [, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true,
-- padding_mode = "zeros", dtype =, device =}]): weight (out, in/groups, k), bias (out).
-- ConvTranspose1d/2d(in, out, kernel [, {..., output_padding = 0}]): weight (in, out/groups, k...)
-- PyTorch's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = weight.shape[2] * prod(kernel).
local function conv_class(name, nd, transposed)
  local cls = class(name)
  C[name] = cls
  local keys = module.with_placement {
    stride = "integer|table", padding = "integer|table", dilation = "integer|table",
    groups = { type = "integer", min = 1, default = 1 }, bias = { type = "boolean", default = true },
    padding_mode = unsupported_padding_mode,
  }
  if transposed then keys.output_padding = "integer|table" end
  local decl = options.declare("nn." .. name, keys, { example = ("gpu.nn.%s(1, 2, 3, %%s)"):format(name) })
  local fname = "nn." .. name
  function cls:init(cin, cout, k, opts)
    positive(fname, 1, cin, "in_channels")
    positive(fname, 2, cout, "out_channels")
    local o = decl:check(opts, 4)
    local G = o.groups
    if cin % G ~= 0 or cout % G ~= 0 then
      argerror(fname, 4, "option 'groups' (%d) must divide in_channels %d and out_channels %d", G, cin, cout)
    end
    local ks = sizes(k, nd, "kernel_size", fname)
    for _, v in ipairs(ks) do positive(fname, 3, v, "kernel_size") end
    self.in_channels, self.out_channels, self.groups, self.kernel_size = cin, cout, G, ks
    self.stride = sizes(o.stride or 1, nd, "stride", fname)
    self.padding = sizes(o.padding or 0, nd, "padding", fname)
    self.dilation = sizes(o.dilation or 1, nd, "dilation", fname)
    self.output_padding = transposed and sizes(o.output_padding or 0, nd, "output_padding", fname) or nil
    local shape = transposed and { cin, cout // G } or { cout, cin // G }
    local fan_in = shape[2]
    for _, v in ipairs(ks) do shape[#shape + 1] = v; fan_in = fan_in * v end
    local lim = 1 / math.sqrt(fan_in)
    local p = module.placement(o)
    self:register_parameter("weight", init.uniform(shape, lim, p))
    if o.bias then self:register_parameter("bias", init.uniform({ cout }, lim, p)) end
  end
  local function tuple(t) return "(" .. table.concat(t, ", ") .. (#t == 1 and ",)" or ")") end
  function cls:repr()
    local r = ("%s(%d, %d, kernel_size=%s, stride=%s"):format(name, self.in_channels, self.out_channels,
      tuple(self.kernel_size), tuple(self.stride))
    for _, k in ipairs { "padding", "output_padding" } do
      local v = self[k]
      if v and (v[1] ~= 0 or v[nd] ~= 0) then r = r .. (", %s=%s"):format(k, tuple(v)) end
    end
    if self.groups ~= 1 then r = r .. ", groups=" .. self.groups end
    return r .. ")"
  end
  local fn = ({ [1] = transposed and conv_transpose1d_as or conv1d_as,
                [2] = transposed and conv_transpose2d_as })[nd]
  function cls:forward(x)
    local lname = ("%s(%d, %d)"):format(name, self.in_channels, self.out_channels)
    local function arg(v) return nd == 1 and v[1] or v end
    return fn(lname, x, self.weight, self.bias, { stride = arg(self.stride), padding = arg(self.padding),
      dilation = arg(self.dilation), groups = self.groups,
      output_padding = self.output_padding and arg(self.output_padding) or nil })
  end
  return cls
end
conv_class("Conv1d", 1, false)
conv_class("ConvTranspose1d", 1, true)
conv_class("ConvTranspose2d", 2, true)

-- ---- pooling --------------------------------------------------------------------------------

local unsupported = { unsupported = true }

-- MaxPool2d / AvgPool2d(kernel [, {stride = kernel, padding = 0, ...}])
local function pool_class(name, fn, keys)
  local cls = class(name)
  C[name] = cls
  local decl = options.declare("nn." .. name, keys, { example = ("gpu.nn.%s(2, %%s)"):format(name) })
  function cls:init(k, opts)
    local o = decl:check(opts, 2)
    self.kernel_size = pair(k, "kernel_size", "nn." .. name)
    self.stride = pair(o.stride or self.kernel_size, "stride", "nn." .. name)
    self.padding = pair(o.padding or 0, "padding", "nn." .. name, true)
    self.dilation = pair(o.dilation or 1, "dilation", "nn." .. name)
    self.return_indices = o.return_indices
  end
  function cls:forward(x)
    return fn(name, x, self.kernel_size, { stride = self.stride, padding = self.padding, dilation = self.dilation,
      return_indices = self.return_indices })
  end
  function cls:repr()
    return ("%s(kernel_size=(%d, %d), stride=(%d, %d))"):format(name, self.kernel_size[1], self.kernel_size[2],
      self.stride[1], self.stride[2])
  end
  return cls
end
local window = F.window_keys
pool_class("MaxPool2d", F.max_pool2d_as, { stride = window.stride, padding = window.padding,
  dilation = window.dilation, return_indices = window.return_indices, ceil_mode = unsupported })
pool_class("AvgPool2d", F.avg_pool2d_as, { stride = window.stride, padding = window.padding,
  ceil_mode = unsupported, divisor_override = unsupported,
  count_include_pad = { type = "boolean", check = function(v)
    return v, "false is not supported (padding counts as zeros)"
  end } })

-- ---- batch norm -----------------------------------------------------------------------------

local BATCH_NORM_KEYS = module.with_placement {
  eps = { type = "number", min = 0, min_open = true, default = 1e-5 },
  momentum = { type = "number", min = 0, max = 1, default = 0.1 },
  affine = { type = "boolean", default = true },
  track_running_stats = { type = "boolean", default = true },
}

-- BatchNorm1d / BatchNorm2d(C [, {eps = 1e-5, momentum = 0.1, affine = true,
-- track_running_stats = true, dtype =, device =}]): running_mean / running_var are buffers
local function bn_class(name, ndims)
  local cls = class(name)
  C[name] = cls
  local decl = options.declare("nn." .. name, BATCH_NORM_KEYS, { example = ("gpu.nn.%s(2, %%s)"):format(name) })
  function cls:init(channels, opts)
    positive("nn." .. name, 1, channels, "num_features")
    local o = decl:check(opts, 2)
    self.num_features, self.eps, self.momentum, self.affine = channels, o.eps, o.momentum, o.affine
    local p = module.placement(o)
    if self.affine then module.register_affine(self, { channels }, p) end
    if o.track_running_stats then
      self:register_buffer("running_mean", gpu.zeros({ channels }, p))
      self:register_buffer("running_var", gpu.ones({ channels }, p))
    end
  end
  function cls:forward(x)
    local lname = ("%s(%d)"):format(name, self.num_features)
    check_input(lname, x, ndims, self.num_features)
    local training = self.training or self.running_mean == nil
    if training and x.size // x.shape[2] < 2 then
      raise("%s: training needs more than one value per channel, got input shape %s", lname, shape_str(x.shape))
    end
    return F.batch_norm(x, self.running_mean, self.running_var, self.weight,
      self.bias, training, self.momentum, self.eps)
  end
  function cls:repr() return ("%s(%d, eps=%g, momentum=%g)"):format(name, self.num_features, self.eps, self.momentum) end
  return cls
end
bn_class("BatchNorm1d", { 2, 3 })
bn_class("BatchNorm2d", { 4 })

return C
