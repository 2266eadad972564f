-- gpu.nn.recurrent: RNN, LSTM and GRU with PyTorch's constructor arguments, parameter names
-- (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse), gate order (LSTM i, f,
-- g, o; GRU r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))), initialisation
-- U(-1/sqrt(hidden), 1/sqrt(hidden)) and results:
--
--   local lstm = nn.LSTM(10, 20, {num_layers = 2, batch_first = true})
--   local out, state = lstm(x)          -- state = {h_n, c_n}: PyTorch's (h_n, c_n)
--   out, state = lstm(x2, state)        -- carries on from it
--   local out, h_n = nn.GRU(10, 20)(x, h0)
--
-- The input projections of all time steps are one GEMM per layer and direction
-- (gpu.fused.linear over (L, N, in)). Each layer then runs its time loop in C
-- (gpu.fused.lstm, gru, rnn: per step one GEMM of the hidden state and one fused cell kernel;
-- backward through time as one op, src/ops/rnn.c); a layer in a dtype the fused loops do not
-- take, or with m.fused = false, steps through dispatched ops (one GEMM of the hidden state
-- and the gate math per step). Autograd, both devices and autocast come from those ops. Packed sequences
-- (pack_padded_sequence) and proj_size are not implemented.

local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local init = require "gpu.nn.initializers"

local raise, argerror = options.raise, options.argerror
local check_array, shape_str, is_array = options.check_array, options.shape_str, options.is_array
local class = module.class
local fused = gpu.fused

local Rec = {}

local GATES = { RNN = 1, LSTM = 4, GRU = 3 }

local function keys(kind)
  local k = module.with_placement {
    num_layers = { type = "integer", min = 1, default = 1 },
    bias = { type = "boolean", default = true },
    batch_first = { type = "boolean", default = false },
    dropout = { type = "number", min = 0, max = 1, default = 0 },
    bidirectional = { type = "boolean", default = false },
    proj_size = { type = "integer", check = function(v) return v == 0, "is not supported (only 0)" end },
  }
  if kind == "RNN" then k.nonlinearity = { choices = { "tanh", "relu" }, default = "tanh" } end
  if kind ~= "LSTM" then k.proj_size = nil end
  return k
end

-- ---- one layer, one direction ------------------------------------------------------------------

-- Whether the fused loops (gpu.fused.lstm, gru, rnn) take these operands: float32/float64 of
-- one dtype on a device whose backend has the cell kernels (the cpu, and cuda). c is the LSTM's
-- cell state or the GRU's b_hh (either may be nil).
local FUSED_DTYPES = { float32 = true, float64 = true }
local FUSED_DEVICES = { cpu = true, cuda = true }
local REVERSE = { reverse = true }
local function fused_ok(xp, w, h, c)
  local dt = xp.dtype
  return FUSED_DTYPES[dt] and w.dtype == dt and h.dtype == dt and (c == nil or c.dtype == dt)
    and FUSED_DEVICES[(xp.device:gsub(":%d+$", ""))] == true
end

local function cols(a, g, H) return a[{ ":", { (g - 1) * H + 1, g * H } }] end

-- Whether a layer direction runs through the device's library (gpu.dnn.lstm / gru: oneDNN on
-- the cpu, float32): where it has one, as it was measured faster than the fused loop at 1 and
-- 2 threads; m.dnn = false, gpu.dnn.enabled = false or GPULUA_DNNL=0
-- leave the fused loop (gpu.config().rnn says which), and so does a case the library refuses.
local dnn_ok_cache = {}
local function dnn_ok(self, x, h)
  if self.dnn == false or gpu.dnn.enabled == false then return false end
  if x.dtype ~= "float32" or h.dtype ~= "float32" or x.shape[2] == 0 then return false end
  local dev = x.device
  local ok = dnn_ok_cache[dev]
  if ok == nil then      -- a library that takes whole networks (cudnn_ok below) has no layer ops
    ok = gpu.dnn.available(dev, "float32", "rnn") == true and gpu.dnn.available(dev, "float32", "rnn_net") ~= true
    dnn_ok_cache[dev] = ok
  end
  return ok
end

-- PyTorch's GRU blocks (r, z, n) of a (3H, ...) array in the library's order (z, r, n).
local function zrn(a, H)
  return gpu.concat({ a[{ { H + 1, 2 * H } }], a[{ { 1, H } }], a[{ { 2 * H + 1, 3 * H } }] }, 1)
end

-- A call of gpu.dnn.lstm / gru, or nil where the library refuses the case (the caller then
-- takes the fused loop); other errors go on.
local function dnn_call(f, ...)
  local ok, y = pcall(f, ...)
  if ok then return y end
  if tostring(y):find("oneDNN has no", 1, true) then return nil end
  error(y, 0)
end

-- The layer direction through gpu.dnn.lstm / gru: outputs (L, N, H), h_n [, c_n]; nil where
-- the library refuses it.
local function run_dnn(self, xs, p, h, c, reverse)
  local kind, H, L = self.mode, self.hidden_size, xs.shape[1]
  local o = reverse and REVERSE or nil
  local last = reverse and 1 or L
  local b
  if kind == "LSTM" then
    b = p.b_ih and p.b_ih + p.b_hh or gpu.zeros(4 * H, { dtype = xs.dtype, device = xs.device })
    local y = dnn_call(gpu.dnn.lstm, xs, p.w_ih, p.w_hh, b, h, c, o)  -- (L + 1, N, H): h_t, then c_n
    if y == nil then return nil end
    local out = y[{ { 1, L } }]
    return out, out[last], y[L + 1]
  end
  if p.b_ih then
    local bi, bh = p.b_ih, p.b_hh
    local zr = bi[{ { 1, 2 * H } }] + bh[{ { 1, 2 * H } }]
    b = gpu.concat({ zr[{ { H + 1, 2 * H } }], zr[{ { 1, H } }], bi[{ { 2 * H + 1, 3 * H } }], bh[{ { 2 * H + 1, 3 * H } }] }, 1)
  else
    b = gpu.zeros(4 * H, { dtype = xs.dtype, device = xs.device })
  end
  local y = dnn_call(gpu.dnn.gru, xs, zrn(p.w_ih, H), zrn(p.w_hh, H), b, h, o)   -- (L, N, H)
  if y == nil then return nil end
  return y, y[last]
end

-- Runs a layer direction over xs (L, N, in) from h (N, H) [and c (N, H)]: returns the
-- outputs (L, N, H) in time order and the final h [, c].
local function run_direction(self, xs, p, h, c, reverse)
  local kind, H = self.mode, self.hidden_size
  local L = xs.shape[1]
  if kind ~= "RNN" and self.fused ~= false and dnn_ok(self, xs, h) then
    local out, hl, cl = run_dnn(self, xs, p, h, c, reverse)
    if out ~= nil then return out, hl, cl end
  end
  local bias_in = p.b_ih
  if kind ~= "GRU" and p.b_ih ~= nil then bias_in = p.b_ih + p.b_hh end
  local xp = fused.linear(xs, p.w_ih, bias_in)                     -- (L, N, G H)
  local last = reverse and 1 or L
  if self.fused ~= false and fused_ok(xp, p.w_hh, h, kind == "LSTM" and c or p.b_hh) then
    -- the time loop and backpropagation through time in C: one tape node per layer and direction
    if kind == "LSTM" then
      local hc = fused.lstm(xp, p.w_hh, h, c, reverse and REVERSE or nil)  -- (L, N, 2, H): h_t, c_t
      return hc[{ ":", ":", 1 }], hc[{ last, ":", 1 }], hc[{ last, ":", 2 }]
    end
    local hs
    if kind == "GRU" then hs = fused.gru(xp, p.w_hh, p.b_hh, h, reverse and REVERSE or nil)  -- (L, N, H)
    else hs = fused.rnn(xp, p.w_hh, h, { reverse = reverse, nonlinearity = self.nonlinearity }) end
    return hs, hs[last]
  end
  local outs = {}
  for step = 1, L do
    local t = reverse and L - step + 1 or step
    local xt = xp[t]
    if kind == "LSTM" then
      local gates = xt + fused.linear(h, p.w_hh)
      local i, f = cols(gates, 1, H):sigmoid(), cols(gates, 2, H):sigmoid()
      local g, o = cols(gates, 3, H):tanh(), cols(gates, 4, H):sigmoid()
      c = f * c + i * g
      h = o * c:tanh()
    elseif kind == "GRU" then
      local hp = fused.linear(h, p.w_hh, p.b_hh)
      local r = (cols(xt, 1, H) + cols(hp, 1, H)):sigmoid()
      local z = (cols(xt, 2, H) + cols(hp, 2, H)):sigmoid()
      local n = (cols(xt, 3, H) + r * cols(hp, 3, H)):tanh()
      h = n + z * (h - n)
    else
      local a = xt + fused.linear(h, p.w_hh)
      h = self.nonlinearity == "relu" and a:relu() or a:tanh()
    end
    outs[t] = h
  end
  return gpu.stack(outs, 1), h, c
end

-- ---- cuDNN's RNN on cuda ---------------------------------------------------------------------------

-- The whole network in one gpu.dnn.rnn call (cuDNN's RNN: every layer and direction, forward
-- and backward) where cuDNN has it: a cuda input of float16/32/64, the same dtype everywhere,
-- no dropout between layers in training, no autocast, gpu.dnn.enabled and m.cudnn ~= false.
-- The parameters go in as one flat array in PyTorch's order (a concat, so their gradients
-- flow back through it). Returns output (L, N, D H), h_n, c_n (layers D, N, H), or nil.
local CUDNN_DTYPES = { float16 = true, float32 = true, float64 = true }
local CUDNN_MODE = { LSTM = "lstm", GRU = "gru" }
local amp_active = function() return require("gpu.amp").is_autocast_enabled() end

local function cudnn_ok(self, xs)
  if type(self) ~= "table" or not is_array(xs) then return false end
  if self.cudnn == false or not gpu.dnn.enabled or not CUDNN_DTYPES[xs.dtype] then return false end
  if (self.dropout or 0) > 0 and self.training and (self.num_layers or 1) > 1 then return false end
  if amp_active() then return false end
  return gpu.dnn.available(xs.device, xs.dtype, "rnn_net") == true    -- else the layer's own loop
end

local function cudnn_run(self, xs, h0, c0)
  local kind, H, Lyr = self.mode, self.hidden_size, self.num_layers
  local D = self.bidirectional and 2 or 1
  local L, N = xs.shape[1], xs.shape[2]
  local flat = {}
  for l = 0, Lyr - 1 do
    for d = 1, D do
      local sfx = ("_l%d%s"):format(l, d == 2 and "_reverse" or "")
      for _, n in ipairs { "weight_ih", "weight_hh", "bias_ih", "bias_hh" } do
        local p = self[n .. sfx]
        if p ~= nil then
          if p.dtype ~= xs.dtype or p.device ~= xs.device then return nil end
          flat[#flat + 1] = p:reshape(-1)
        end
      end
    end
  end
  local opts = { mode = CUDNN_MODE[kind] or (self.nonlinearity == "relu" and "rnn_relu" or "rnn_tanh"),
                 num_layers = Lyr, bidirectional = self.bidirectional, bias = self.bias,
                 training = require("gpu.autograd").is_grad_enabled() }
  local zeros = { dtype = xs.dtype, device = xs.device }
  h0 = h0 or gpu.zeros({ Lyr * D, N, H }, zeros)
  if kind == "LSTM" then c0 = c0 or gpu.zeros({ Lyr * D, N, H }, zeros) else c0 = nil end
  local out = gpu.dnn.rnn(xs, gpu.concat(flat, 1), h0, c0, opts)
  local ny, nh = L * N * D * H, Lyr * D * N * H
  local y = out[{ { 1, ny } }]:reshape(L, N, D * H)
  local hn = out[{ { ny + 1, ny + nh } }]:reshape(Lyr * D, N, H)
  local cn = kind == "LSTM" and out[{ { ny + nh + 1, ny + 2 * nh } }]:reshape(Lyr * D, N, H) or nil
  return y, hn, cn
end
Rec._cudnn = { ok = cudnn_ok }            -- for the specs: which path a layer takes (m, xs time-major)

-- ---- the module --------------------------------------------------------------------------------

local function rnn_class(kind)
  local cls = class(kind)
  Rec[kind] = cls
  local fname = "nn." .. kind
  local decl = options.declare(fname, keys(kind), { example = ("gpu.nn.%s(2, 3, %%s)"):format(kind) })

  -- kind(input_size, hidden_size [, {num_layers = 1, bias = true, batch_first = false,
  -- dropout = 0, bidirectional = false, nonlinearity = "tanh" (RNN), dtype =, device =}])
  function cls:init(input_size, hidden_size, opts)
    options.value(input_size, { type = "integer", min = 1 }, fname, 1, "input_size")
    options.value(hidden_size, { type = "integer", min = 1 }, fname, 2, "hidden_size")
    if type(opts) == "number" then argerror(fname, 3, "options table expected (num_layers = ...), got a number") end
    local o = decl:check(opts, 3)
    self.mode, self.input_size, self.hidden_size = kind, input_size, hidden_size
    self.num_layers, self.bias, self.batch_first = o.num_layers, o.bias, o.batch_first
    self.dropout, self.bidirectional, self.nonlinearity = o.dropout, o.bidirectional, o.nonlinearity
    local D, G = o.bidirectional and 2 or 1, GATES[kind]
    local lim = 1 / math.sqrt(hidden_size)
    local p = module.placement(o)
    for l = 0, o.num_layers - 1 do
      local fin = l == 0 and input_size or hidden_size * D
      for d = 1, D do
        local sfx = ("_l%d%s"):format(l, d == 2 and "_reverse" or "")
        self:register_parameter("weight_ih" .. sfx, init.uniform({ G * hidden_size, fin }, lim, p))
        self:register_parameter("weight_hh" .. sfx, init.uniform({ G * hidden_size, hidden_size }, lim, p))
        if o.bias then
          self:register_parameter("bias_ih" .. sfx, init.uniform({ G * hidden_size }, lim, p))
          self:register_parameter("bias_hh" .. sfx, init.uniform({ G * hidden_size }, lim, p))
        end
      end
    end
  end

  function cls:repr()
    local r = ("%s(%d, %d"):format(kind, self.input_size, self.hidden_size)
    if self.num_layers ~= 1 then r = r .. ", num_layers=" .. self.num_layers end
    if self.nonlinearity and self.nonlinearity ~= "tanh" then r = r .. ", nonlinearity='" .. self.nonlinearity .. "'" end
    if not self.bias then r = r .. ", bias=False" end
    if self.batch_first then r = r .. ", batch_first=True" end
    if self.dropout ~= 0 then r = r .. (", dropout=%g"):format(self.dropout) end
    if self.bidirectional then r = r .. ", bidirectional=True" end
    return r .. ")"
  end

  -- A state argument: nil (zeros) or an array (layers * D, N, H) (unbatched: (layers * D, H)).
  local function check_state(self, v, argn, what, N, unbatched, x)
    if v == nil then return nil end
    check_array(v, fname, argn, what)
    local D = self.bidirectional and 2 or 1
    local want = unbatched and { self.num_layers * D, self.hidden_size } or { self.num_layers * D, N, self.hidden_size }
    if shape_str(v.shape) ~= shape_str(want) then
      argerror(fname, argn, "%s must have shape %s, got %s", what, shape_str(want), shape_str(v.shape))
    end
    if v.dtype ~= x.dtype or v.device ~= x.device then
      argerror(fname, argn, "%s is %s on %s but the input is %s on %s", what, v.dtype, v.device, x.dtype, x.device)
    end
    if unbatched then v = v:reshape(want[1], 1, want[2]) end
    return v
  end

  -- forward(x [, h0]) (RNN, GRU) -> output, h_n; forward(x [, {h0, c0}]) (LSTM) ->
  -- output, {h_n, c_n}. x (L, N, input_size), (N, L, input_size) with batch_first, or
  -- (L, input_size) unbatched; output (L, N, D * hidden_size) likewise.
  function cls:forward(x, hx)
    local packed = require "gpu.nn.packed"
    if packed.is_packed(x) then                         -- PyTorch's PackedSequence in, one out
      if x.data.ndim ~= 2 or x.data.shape[2] ~= self.input_size then
        argerror(fname, 1, "the packed data must be (steps, %d), got %s", self.input_size, shape_str(x.data.shape))
      end
      return packed.run_packed(self, x, hx, kind, fname)
    end
    check_array(x, fname, 1, "input")
    if x.ndim ~= 2 and x.ndim ~= 3 then
      argerror(fname, 1, "input must be 3-D (%s, input_size) or 2-D unbatched, got shape %s",
        self.batch_first and "N, L" or "L, N", shape_str(x.shape))
    end
    if x.shape[x.ndim] ~= self.input_size then
      argerror(fname, 1, "input has %d features, expected input_size %d (input shape %s)", x.shape[x.ndim],
        self.input_size, shape_str(x.shape))
    end
    local w0 = self.weight_ih_l0
    if x.dtype ~= w0.dtype or x.device ~= w0.device then
      argerror(fname, 1, "input is %s on %s but the parameters are %s on %s (convert with astype / to)", x.dtype,
        x.device, w0.dtype, w0.device)
    end
    local unbatched = x.ndim == 2
    local xs = x
    if unbatched then xs = x:reshape(x.shape[1], 1, x.shape[2])
    elseif self.batch_first then xs = x:transpose(1, 2) end
    local L, N, H = xs.shape[1], xs.shape[2], self.hidden_size
    local D = self.bidirectional and 2 or 1
    local h0, c0
    if kind == "LSTM" then
      if hx ~= nil and (type(hx) ~= "table" or is_array(hx)) then
        argerror(fname, 2, "the state must be a table {h0, c0}, got %s", options.type_name(hx))
      end
      if hx ~= nil then
        h0 = check_state(self, hx[1], 2, "h0 (state[1])", N, unbatched, x)
        c0 = check_state(self, hx[2], 2, "c0 (state[2])", N, unbatched, x)
        if (h0 == nil) ~= (c0 == nil) then argerror(fname, 2, "the state needs both h0 and c0") end
      end
    else
      if hx ~= nil and not is_array(hx) then
        argerror(fname, 2, "h0 must be a gpu.array, got %s", options.type_name(hx))
      end
      h0 = check_state(self, hx, 2, "h0", N, unbatched, x)
    end
    if L == 0 then raise("%s: the input has no time steps (shape %s)", fname, shape_str(x.shape)) end
    if cudnn_ok(self, xs) then         -- cuDNN's RNN: the whole network in one op
      local y, hN, cN = cudnn_run(self, xs, h0, c0)
      if y ~= nil then
        if unbatched then y, hN, cN = y:reshape(L, D * H), hN:reshape(-1, H), cN and cN:reshape(-1, H)
        elseif self.batch_first then y = y:transpose(1, 2) end
        if kind == "LSTM" then return y, { hN, cN } end
        return y, hN
      end
    end
    local zeros
    if h0 == nil or (kind == "LSTM" and c0 == nil) then
      zeros = gpu.zeros({ N, H }, { dtype = x.dtype, device = x.device })
    end
    local hn, cn = {}, {}
    local layer_in = xs
    for l = 0, self.num_layers - 1 do
      local outs = {}
      for d = 1, D do
        local sfx = ("_l%d%s"):format(l, d == 2 and "_reverse" or "")
        local p = { w_ih = self["weight_ih" .. sfx], w_hh = self["weight_hh" .. sfx],
                    b_ih = self["bias_ih" .. sfx], b_hh = self["bias_hh" .. sfx] }
        local k = l * D + d
        local h = h0 and h0[k] or zeros
        local c = kind == "LSTM" and (c0 and c0[k] or zeros) or nil
        local out, hl, cl = run_direction(self, layer_in, p, h, c, d == 2)
        outs[d] = out
        hn[k], cn[k] = hl, cl
      end
      layer_in = D == 1 and outs[1] or gpu.concat(outs, 3)
      if self.dropout > 0 and self.training and l < self.num_layers - 1 then
        if self.dropout >= 1 then layer_in = layer_in * 0
        else
          local keep = gpu.random.bernoulli(1 - self.dropout, layer_in.shape, { dtype = x.dtype, device = x.device })
          layer_in = layer_in * (keep * (1 / (1 - self.dropout)))
        end
      end
    end
    local out = layer_in
    if unbatched then out = out:reshape(L, D * H)
    elseif self.batch_first then out = out:transpose(1, 2) end
    local function final(list)
      local s = gpu.stack(list, 1)
      return unbatched and s:reshape(self.num_layers * D, H) or s
    end
    if kind == "LSTM" then return out, { final(hn), final(cn) } end
    return out, final(hn)
  end
  return cls
end

rnn_class("RNN")
rnn_class("LSTM")
rnn_class("GRU")
-- nn.LSTM.fused (or m.fused) = false: step through dispatched ops instead of gpu.fused.lstm,
-- gru, rnn (the reference the fused loops are checked against)
Rec.RNN.fused, Rec.LSTM.fused, Rec.GRU.fused = true, true, true
-- nn.LSTM(units [, opts]) and nn.GRU(units [, opts]): one integer, optionally followed by an
-- options table, is Keras's layer (lua/gpu/nn/keras_rnn.lua); PyTorch's form always has two
for _, kind in ipairs { "LSTM", "GRU" } do
  local mt = getmetatable(Rec[kind])
  local construct = mt.__call
  mt.__call = function(cls, a, b, ...)
    if math.type(a) == "integer" and select("#", ...) == 0 and (b == nil or (type(b) == "table" and getmetatable(b) == nil)) then
      -- the class nn.lua set here at its load (a require now could load a second copy of
      -- the Keras module, on another copy of module.lua, where package.loaded was reset)
      return (rawget(mt, "keras_class") or require("gpu.nn.keras_rnn")._classes[kind])(a, b)
    end
    return construct(cls, a, b, ...)
  end
end
-- m.dnn = false (nn.LSTM.dnn, nn.GRU.dnn for all): never through the device's library
-- (gpu.dnn.lstm / gru), the fused loop instead

return Rec
