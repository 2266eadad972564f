-- gpu.conv — convolution, pooling and batch-norm layers for gpu.nn (NCHW). Loaded by
-- gpu.nn; adds nn.conv2d, nn.max_pool2d, nn.avg_pool2d, nn.batch_norm and the layers
-- nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d, nn.BatchNorm1d, nn.BatchNorm2d.
--
-- Two paths, one tape node per op either way. On a device whose backend has cuDNN
-- (gpu.dnn.available(device)), the forward and backward passes are cuDNN calls
-- (gpu.dnn.*). Elsewhere — the cpu, a GPU without cuDNN, or gpu.dnn.enabled = false —
-- they are built on gpu.im2col / gpu.col2im and GEMM, the reference the cuDNN path is
-- checked against. Under gpu.autocast, conv2d runs in the half dtype and returns float32,
-- as matmul does.
--
--   local net = nn.Sequential{ nn.Conv2d(1, 16, 3, {padding = 1}), nn.ReLU(), nn.MaxPool2d(2),
--                              nn.Flatten(), nn.Linear(16 * 14 * 14, 10) }
local gpu = require "gpu"
local autograd = require "gpu.autograd"

return function(nn)
  local record = autograd.record
  local nodes = setmetatable({}, { __index = function(_, x) return autograd.requires_grad(x) or nil end })
  local class = nn.class
  local Module = nn.Module

  local dnn = gpu.dnn
  local function shape_str(s) return "(" .. table.concat(s, ", ") .. ")" end

  -- Whether the layers take the cuDNN path for arrays on 'device' (a cheap C call: the
  -- library is loaded once).
  local function use_dnn(device)
    return dnn ~= nil and dnn.enabled ~= false and dnn.available(device) == true
  end
  -- dtypes the cuDNN path takes (bfloat16 goes through im2col + cuBLAS until cuDNN's legacy
  -- calls have been seen taking it on a device)
  local floats = { float16 = true, float32 = true, float64 = true }
  local wide = { float32 = true, float64 = true }
  local meta = getmetatable(gpu.zeros(1, { device = "cpu" }))
  local function is_array(v) return type(v) == "userdata" and getmetatable(v) == meta end

  -- A size argument: a positive (or, with zero_ok, non-negative) integer or a pair {h, w}.
  local function pair(v, what, layer, zero_ok)
    if type(v) == "number" then v = { v, v } end
    if type(v) ~= "table" or #v ~= 2 then
      error(("%s: %s must be an integer or a pair {h, w}, got %s"):format(layer, what, type(v)), 4)
    end
    for i = 1, 2 do
      local x = v[i]
      if math.type(x) ~= "integer" or x < (zero_ok and 0 or 1) then
        error(("%s: %s must be %s integers, got %s"):format(layer, what, zero_ok and "non-negative" or "positive",
          tostring(x)), 4)
      end
    end
    return { v[1], v[2] }
  end

  local function check_input(layer, x, ndims, channels)
    if not is_array(x) then
      error(("bad argument #1 to '%s' (input: gpu.array expected, got %s)"):format(layer, type(x)), 4)
    end
    local ok = false
    for _, d in ipairs(ndims) do if x.ndim == d then ok = true end end
    if not ok then
      error(("%s: expected a %s-D input, got shape %s"):format(layer, table.concat(ndims, "- or "), shape_str(x.shape)), 4)
    end
    if channels and x.shape[2] ~= channels then
      error(("%s: expected %d input channels, got %d (input shape %s)"):format(layer, channels, x.shape[2],
        shape_str(x.shape)), 4)
    end
  end

  local function out_size(layer, H, W, k, s, p, d)
    local oh = (H + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    local ow = (W + 2 * p[2] - d[2] * (k[2] - 1) - 1) // s[2] + 1
    if oh < 1 or ow < 1 then
      error(("%s: the input %dx%d (padded %dx%d) is smaller than the kernel %dx%d (dilated)"):format(layer, H, W,
        H + 2 * p[1], W + 2 * p[2], d[1] * (k[1] - 1) + 1, d[2] * (k[2] - 1) + 1), 4)
    end
    return oh, ow
  end

  -- ---- functional forms ------------------------------------------------------------------------

  -- The convolution proper (arguments checked by nn.conv2d): cuDNN where the device has
  -- it, else im2col + batched matmul; one tape node.
  local function conv_core(x, w, b, N, C, H, W, O, Cg, G, k, s, p, d, OH, OW)
    local kh, kw = k[1], k[2]
    if use_dnn(x.device) and x.dtype == w.dtype and floats[x.dtype] then
      local g = { stride = s, padding = p, dilation = d, groups = G }
      local y = gpu.no_grad(function()
        local r = dnn.conv2d(x, w, g)
        if b ~= nil then r:add_(b:reshape(1, O, 1, 1)) end
        return r
      end)
      record(y, { x, w, b }, function(gy)
        if gy.dtype ~= y.dtype then gy = gy:astype(y.dtype) end
        local gx, gw, gb
        if nodes[x] then gx = dnn.conv2d_backward_data(gy, w, x.shape, g) end
        if nodes[w] then gw = dnn.conv2d_backward_filter(x, gy, w.shape, g) end
        if b ~= nil and nodes[b] then gb = gy:sum({ 1, 3, 4 }) end
        return gx, gw, gb
      end)
      return y
    end
    local L, K, Og = OH * OW, Cg * kh * kw, O // G
    local copts = { kernel = k, stride = s, padding = p, dilation = d }
    local cols
    local y = gpu.no_grad(function()
      cols = gpu.im2col(x, copts):reshape(N, G, K, L)
      local r = w:reshape(G, Og, K):matmul(cols):reshape(N, O, OH, OW)
      if b ~= nil then r:add_(b:reshape(1, O, 1, 1)) end
      return r
    end)
    record(y, { x, w, b }, function(g)
      local gx, gw, gb
      local g4 = g:reshape(N, G, Og, L)
      if nodes[x] then
        local gc = w:reshape(G, Og, K):transpose(2, 3):matmul(g4):reshape(N, G * K, L)
        gx = gpu.col2im(gc, { N, C, H, W }, copts)
      end
      if nodes[w] then gw = g4:matmul(cols:transpose(3, 4)):sum(1):reshape(O, Cg, kh, kw) end
      if b ~= nil and nodes[b] then gb = g:sum({ 1, 3, 4 }) end
      return gx, gw, gb
    end)
    return y
  end


  -- conv2d(x, w, b, {stride =, padding =, dilation =, groups =}): x (N, C, H, W), w (O, C/groups,
  -- kh, kw), b (O) or nil -> (N, O, OH, OW); one tape node (cuDNN, or im2col + batched matmul).
  function nn.conv2d(x, w, b, opts)
    opts = opts or {}
    local name = opts.name or "conv2d"
    local s = pair(opts.stride or 1, "stride", name)
    local p = pair(opts.padding or 0, "padding", name, true)
    local d = pair(opts.dilation or 1, "dilation", name)
    local G = opts.groups or 1
    check_input(name, x, { 4 })
    local N, C, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
    if not is_array(w) or w.ndim ~= 4 then
      error(("%s: weight must be a 4-D array (out, in/groups, kh, kw), got %s"):format(name,
        is_array(w) and shape_str(w.shape) or type(w)), 2)
    end
    local O, Cg, kh, kw = w.shape[1], w.shape[2], w.shape[3], w.shape[4]
    if math.type(G) ~= "integer" or G < 1 or O % G ~= 0 then
      error(("%s: groups (%s) must be a positive integer dividing the %d output channels"):format(name, tostring(G), O), 2)
    end
    if b ~= nil and (not is_array(b) or b.size ~= O) then
      error(("%s: bias must hold %d values (one per output channel), got %s"):format(name, O,
        is_array(b) and shape_str(b.shape) or type(b)), 2)
    end
    if C ~= Cg * G then
      error(("%s: expected %d input channels, got %d (input shape %s)"):format(name, Cg * G, C, shape_str(x.shape)), 3)
    end
    local k = { kh, kw }
    local OH, OW = out_size(name, H, W, k, s, p, d)
    local ac = autograd.autocast_dtype()
    if ac ~= nil and (wide[x.dtype] or wide[w.dtype]) then
      -- autocast: the convolution of half-precision copies (the casts are recorded, so the
      -- gradients reach float32 x and w as float32), its result and the bias in float32
      local xh = x.dtype ~= ac and x:astype(ac) or x
      local wh = w.dtype ~= ac and w:astype(ac) or w
      local y = conv_core(xh, wh, nil, N, C, H, W, O, Cg, G, k, s, p, d, OH, OW):astype("float32")
      if b ~= nil then y = y + b:reshape(1, O, 1, 1) end
      return y
    end
    return conv_core(x, w, b, N, C, H, W, O, Cg, G, k, s, p, d, OH, OW)
  end

  local function pool_geom(name, x, k, opts)
    opts = opts or {}
    k = pair(k, "kernel_size", name)
    local s = pair(opts.stride or k, "stride", name)
    local p = pair(opts.padding or 0, "padding", name, true)
    local d = pair(opts.dilation or 1, "dilation", name)
    if p[1] * 2 > k[1] or p[2] * 2 > k[2] then
      error(("%s: padding %dx%d must be at most half the kernel %dx%d"):format(name, p[1], p[2], k[1], k[2]), 4)
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
    if dl[1] ~= 1 or dl[2] ~= 1 or not floats[x.dtype] or not use_dnn(x.device) then return nil end
    local o = { kernel = copts.kernel, stride = copts.stride, padding = copts.padding }
    local fwd = max and dnn.max_pool2d or dnn.avg_pool2d
    local bwd = max and dnn.max_pool2d_backward or dnn.avg_pool2d_backward
    local y = gpu.no_grad(function() return fwd(x, o) end)
    record(y, { x }, function(g)
      if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
      return bwd(x, y, g, o)
    end)
    return y
  end

  -- max_pool2d(x, kernel [, {stride = kernel, padding = 0, dilation = 1, return_indices}])
  -- -> y [, indices]: the maxima over each window (padding never wins) and, with
  -- return_indices, where they are: int64 1-based positions in the flattened H x W plane.
  function nn.max_pool2d(x, k, opts)
    local name = opts and opts.name or "max_pool2d"
    local N, C, H, W, OH, OW, copts = pool_geom(name, x, k, opts)
    if not (opts and opts.return_indices) then
      local y = dnn_pool(x, copts, true)
      if y then return y end
    end
    copts.pad_value = -math.huge
    local KK = copts.kernel[1] * copts.kernel[2]
    local y, idx = gpu.no_grad(function()
      local cols = gpu.im2col(x:reshape(N * C, 1, H, W), copts)
      return cols:max(2):reshape(N, C, OH, OW), cols:argmax(2)
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

  -- avg_pool2d(x, kernel [, {stride = kernel, padding = 0}]): window means, padding counted
  -- as zeros (PyTorch's count_include_pad = true).
  function nn.avg_pool2d(x, k, opts)
    local name = opts and opts.name or "avg_pool2d"
    local N, C, H, W, OH, OW, copts = pool_geom(name, x, k, opts)
    local yd = dnn_pool(x, copts, false)
    if yd then return yd end
    local KK = copts.kernel[1] * copts.kernel[2]
    local y = gpu.no_grad(function()
      return gpu.im2col(x:reshape(N * C, 1, H, W), copts):mean(2):reshape(N, C, OH, OW)
    end)
    record(y, { x }, function(g)
      local ones = gpu.ones({ 1, KK, 1 }, { dtype = g.dtype, device = g.device })
      local gc = g:reshape(N * C, 1, OH * OW) * ones * (1 / KK)
      return gpu.col2im(gc, { N * C, 1, H, W }, copts):reshape(N, C, H, W)
    end)
    return y
  end

  -- Whether batch norm takes the cuDNN path: float32/float64 input of 2 to 4 axes on a device
  -- with cuDNN, every per-channel operand of x's dtype and device, contiguous running stats.
  local function dnn_bn_ok(x, rm, rv, w, b, training)
    if not wide[x.dtype] or x.ndim < 2 or x.ndim > 4 or not use_dnn(x.device) then return false end
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
      local y, sm, si = gpu.no_grad(function()
        return dnn.batch_norm(x, wt, bs, rm, rv, { training = true, momentum = momentum, eps = eps })
      end)
      record(y, { x, w, b }, function(g)
        if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
        local gx, gw, gb = dnn.batch_norm_backward(x, g, wt, sm, si, { eps = eps })
        if w == nil then gw = nil end
        if b == nil then gb = nil end
        return gx, gw, gb
      end)
      return y
    end
    local y = gpu.no_grad(function()
      return dnn.batch_norm(x, wt, bs, rm, rv, { training = false, eps = eps })
    end)
    record(y, { x, w, b }, function(g)
      local invstd = 1 / (rv + eps):sqrt()
      local gx, gw, gb
      if nodes[x] then gx = g * (invstd * wt):reshape(shape) end
      if w ~= nil and nodes[w] then gw = (g * ((x - rm:reshape(shape)) * invstd:reshape(shape))):sum(axes) end
      if b ~= nil and nodes[b] then gb = g:sum(axes) end
      return gx, gw, gb
    end)
    return y
  end

  -- batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps): over
  -- axis 2 of (N, C) or (N, C, ...) input. In training, batch statistics (biased variance)
  -- normalise and the running ones (unbiased variance) are updated in place.
  function nn.batch_norm(x, rm, rv, w, b, training, momentum, eps)
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

  -- ---- buffers: running statistics that state_dict saves but optimizers never see ---------------

  local function buffers(m, prefix, out)
    for _, n in ipairs(m._bnames or {}) do out[#out + 1] = { prefix .. n, m._buffers[n] } end
    for _, n in ipairs(m._mnames) do buffers(m._modules[n], prefix .. n .. ".", out) end
    return out
  end
  function Module:register_buffer(name, v)
    self._buffers = self._buffers or {}
    self._bnames = self._bnames or {}
    if self._buffers[name] == nil then self._bnames[#self._bnames + 1] = name end
    self._buffers[name] = v
    self[name] = v
    return v
  end
  function Module:named_buffers() return buffers(self, "", {}) end
  local state_dict, load_state_dict, to = Module.state_dict, Module.load_state_dict, Module.to
  function Module:state_dict()
    local sd = state_dict(self)
    for _, e in ipairs(buffers(self, "", {})) do sd[e[1]] = e[2] end
    return sd
  end
  function Module:load_state_dict(sd, opts)
    if type(sd) ~= "table" then return load_state_dict(self, sd, opts) end
    local bl = buffers(self, "", {})
    if #bl == 0 then return load_state_dict(self, sd, opts) end
    local rest, faults = {}, {}
    local isbuf = {}
    for _, e in ipairs(bl) do isbuf[e[1]] = e[2] end
    for k, v in pairs(sd) do if isbuf[k] == nil then rest[k] = v end end
    local strict = not (opts and opts.strict == false)
    for _, e in ipairs(bl) do
      local v = sd[e[1]]
      if v == nil then
        if strict then faults[#faults + 1] = "missing: " .. e[1] end
      elseif not is_array(v) or shape_str(v.shape) ~= shape_str(e[2].shape) then
        faults[#faults + 1] = ("mis-shaped: %s (expected %s, got %s)"):format(e[1], shape_str(e[2].shape),
          is_array(v) and shape_str(v.shape) or type(v))
      end
    end
    if #faults > 0 then error("load_state_dict: " .. table.concat(faults, "; "), 2) end
    load_state_dict(self, rest, opts)
    gpu.no_grad(function()
      for _, e in ipairs(bl) do
        local v = sd[e[1]]
        if v ~= nil then e[2][{}] = v:to(e[2].device):astype(e[2].dtype) end
      end
    end)
    return self
  end
  function Module:to(device)
    if device == "cuda" then device = "cuda:0" end
    to(self, device)
    for _, m in ipairs(self:modules()) do
      for _, n in ipairs(m._bnames or {}) do
        local v = m._buffers[n]
        if v.device ~= device then m:register_buffer(n, v:to(device)) end
      end
    end
    return self
  end

  -- summary runs the model once on a dummy batch: keep the running statistics as they were
  local summary = Module.summary
  if summary then
    function Module:summary(...)
      local saved = {}
      for _, e in ipairs(buffers(self, "", {})) do saved[#saved + 1] = { e[2], e[2]:copy() } end
      local res = table.pack(pcall(summary, self, ...))
      gpu.no_grad(function() for _, s in ipairs(saved) do s[1][{}] = s[2] end end)
      if not res[1] then error(res[2], 0) end
      return table.unpack(res, 2, res.n)
    end
  end

  -- ---- layers ------------------------------------------------------------------------------------

  local function dev_opts(o) return { dtype = o.dtype or "float32", device = o.device or gpu.device() } end

  -- Conv2d(in, out, kernel [, {stride = 1, padding = 0, dilation = 1, groups = 1, bias = true,
  -- dtype =, device =}]): weight (out, in/groups, kh, kw), PyTorch's default init.
  local Conv2d = class("Conv2d")
  nn.Conv2d = Conv2d
  function Conv2d:init(cin, cout, k, opts)
    opts = opts or {}
    if math.type(cin) ~= "integer" or cin < 1 or math.type(cout) ~= "integer" or cout < 1 then
      error("Conv2d: in_channels and out_channels must be positive integers", 3)
    end
    local G = opts.groups or 1
    if math.type(G) ~= "integer" or G < 1 or cin % G ~= 0 or cout % G ~= 0 then
      error(("Conv2d: groups (%s) must be a positive integer dividing in_channels %d and out_channels %d")
        :format(tostring(G), cin, cout), 3)
    end
    self.in_channels, self.out_channels, self.groups = cin, cout, G
    self.kernel_size = pair(k, "kernel_size", "Conv2d")
    self.stride = pair(opts.stride or 1, "stride", "Conv2d")
    self.padding = pair(opts.padding or 0, "padding", "Conv2d", true)
    self.dilation = pair(opts.dilation or 1, "dilation", "Conv2d")
    local o = dev_opts(opts)
    local fan_in = (cin // G) * self.kernel_size[1] * self.kernel_size[2]
    local lim = 1 / math.sqrt(fan_in)
    self:register_parameter("weight",
      nn.init.uniform({ cout, cin // G, self.kernel_size[1], self.kernel_size[2] }, lim, o))
    if opts.bias ~= false then self:register_parameter("bias", nn.init.uniform({ cout }, lim, o)) end
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
    return nn.conv2d(x, self.weight, self.bias, { stride = self.stride, padding = self.padding,
      dilation = self.dilation, groups = self.groups, name = name })
  end

  local function pool_class(name, fn)
    local cls = class(name)
    nn[name] = cls
    function cls:init(k, opts)
      opts = opts or {}
      self.kernel_size = pair(k, "kernel_size", name)
      self.stride = pair(opts.stride or self.kernel_size, "stride", name)
      self.padding = pair(opts.padding or 0, "padding", name, true)
    end
    function cls:forward(x)
      return fn(x, self.kernel_size, { stride = self.stride, padding = self.padding, name = name })
    end
    function cls:repr()
      return ("%s(kernel_size=(%d, %d), stride=(%d, %d))"):format(name, self.kernel_size[1], self.kernel_size[2],
        self.stride[1], self.stride[2])
    end
    return cls
  end
  pool_class("MaxPool2d", nn.max_pool2d)
  pool_class("AvgPool2d", nn.avg_pool2d)

  local function bn_class(name, ndims)
    local cls = class(name)
    nn[name] = cls
    function cls:init(C, opts)
      opts = opts or {}
      if math.type(C) ~= "integer" or C < 1 then error(name .. ": num_features must be a positive integer", 3) end
      self.num_features, self.eps, self.momentum = C, opts.eps or 1e-5, opts.momentum or 0.1
      self.affine = opts.affine ~= false
      local o = dev_opts(opts)
      if self.affine then
        self:register_parameter("weight", gpu.ones({ C }, o))
        self:register_parameter("bias", gpu.zeros({ C }, o))
      end
      if opts.track_running_stats ~= false then
        self:register_buffer("running_mean", gpu.zeros({ C }, o))
        self:register_buffer("running_var", gpu.ones({ C }, o))
      end
    end
    function cls:forward(x)
      local lname = ("%s(%d)"):format(name, self.num_features)
      check_input(lname, x, ndims, self.num_features)
      local training = self.training or self.running_mean == nil
      if training and x.size // x.shape[2] < 2 then
        error(("%s: training needs more than one value per channel, got input shape %s"):format(lname,
          shape_str(x.shape)), 2)
      end
      return nn.batch_norm(x, self.running_mean, self.running_var, self.weight,
        self.bias, training, self.momentum, self.eps)
    end
    function cls:repr() return ("%s(%d, eps=%g, momentum=%g)"):format(name, self.num_features, self.eps, self.momentum) end
    return cls
  end
  bn_class("BatchNorm1d", { 2, 3 })
  bn_class("BatchNorm2d", { 4 })
  return nn
end
