-- gpu.nn.conv: the convolution, pooling and batch-norm layers (NCHW): Conv2d, MaxPool2d,
-- AvgPool2d, BatchNorm1d, BatchNorm2d, on the functional forms of gpu.nn.functional
-- (cuDNN where the device has it, else im2col + GEMM).
--
--   local net = nn.Sequential{ nn.Conv2d(1, 16, 3, {padding = 1}), nn.ReLU(), nn.MaxPool2d(2),
--                              nn.Flatten(), nn.Linear(16 * 14 * 14, 10) }
local gpu = require "gpu"
local options = require "gpu.options"
local raise, argerror, shape_str = options.raise, options.argerror, options.shape_str
local F = require "gpu.nn.functional"
local pair, check_input = F.pair, F.check_input
local module = require "gpu.nn.module"
local class = module.class
local init = require "gpu.nn.initializers"

local C = {}

local function positive(fname, argn, v, what)
  return options.value(v, { type = "integer", min = 1 }, fname, argn, what)
end

-- ---- Conv2d ---------------------------------------------------------------------------------

local CONV2D = options.declare("nn.Conv2d", module.with_placement {
  stride = F.window_keys.stride, padding = F.window_keys.padding, dilation = F.window_keys.dilation,
  groups = { type = "integer", min = 1, default = 1 },
  bias = { type = "boolean", default = true },
  padding_mode = { type = "string", default = "zeros", check = function(v)
    return v == "zeros", "must be 'zeros' (reflect, replicate and circular padding are not implemented)"
  end },
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
    if self.affine then
      self:register_parameter("weight", gpu.ones({ channels }, p))
      self:register_parameter("bias", gpu.zeros({ channels }, p))
    end
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
