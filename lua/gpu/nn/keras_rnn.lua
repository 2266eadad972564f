-- gpu.nn.keras_rnn: Keras's recurrent layers LSTM, GRU and SimpleRNN, Bidirectional and Masking, with
-- Keras 3's signatures, weights and results over batch-first inputs (N, T, features):
--
--   local model = nn.Sequential{ nn.Masking(), nn.LSTM(32), nn.Dense(1) }
--   local seq, h, c = nn.LSTM(8, {return_sequences = true, return_state = true})(x)
--
-- nn.LSTM and nn.GRU are PyTorch's classes (lua/gpu/nn/recurrent.lua); their constructor
-- hands a call with one integer (units), optionally followed by an options table, to the
-- Keras form here. The weights are Keras's: kernel (F, k units), recurrent_kernel (units,
-- k units) and bias (k units; GRU with reset_after (2, 3 units): input and recurrent bias)
-- in Keras's gate order (LSTM i f c o, GRU z r h), built at the first call (or from
-- input_shape), so get_weights / set_weights take a Keras model's lists as they are.
--
-- The input projections of all steps are one GEMM. With Keras's default activations (tanh,
-- and sigmoid for the gates; SimpleRNN also relu) and no mask, the steps then run in PyTorch's
-- fused loops (gpu.fused.lstm, gru, rnn; GRU with reset_after, which is PyTorch's GRU with
-- the z and r blocks swapped): one tape node for the whole sequence. recurrent_dropout in
-- training (masks on h at each step) takes the step loop below. Otherwise, or with
-- m.fused = false, they run as array ops (the recurrent GEMM and the gate math), so
-- autograd, both devices and any activation come from those ops. A mask (N, T) (forward(x, {mask = m}), or passed on by Sequential and Model from
-- Masking or Embedding{mask_zero = true}) skips steps as Keras does: a masked step carries
-- the state and the output of the last unmasked one (zeros before the first).
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local F = require "gpu.nn.functional"
local init = require "gpu.nn.initializers"
local regularizers = require "gpu.nn.regularizers"
local acts_helpers = require("gpu.nn.keras_functional")._helpers

local raise, argerror, check_array, shape_str, type_name, is_array = options.raise, options.argerror,
  options.check_array, options.shape_str, options.type_name, options.is_array
local class = module.class
local acts, act_names = acts_helpers.acts, acts_helpers.act_names

local KR = {}

-- per kind: the gates (blocks of units in the kernels' columns), the class name (Keras's
-- LSTM and GRU share nn.LSTM / nn.GRU with PyTorch's classes, so their classes are named
-- apart for model files) and the states return_state gives after the output
local KINDS = {
  LSTM = { gates = 4, cname = "KerasLSTM", states = 2 },
  GRU = { gates = 3, cname = "KerasGRU", states = 1 },
  SimpleRNN = { gates = 1, cname = "SimpleRNN", states = 1 },
}

local INITS = { "glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "orthogonal", "zeros", "ones" }

-- a (rows, cols) weight made by a Keras initializer name (fans: rows in, cols out)
local function initial(name, shape, p)
  local fin, fout = shape[1], shape[2]
  if name == "glorot_uniform" then return init.glorot_uniform(fin, fout, shape, p) end
  if name == "glorot_normal" then return init.glorot_normal(fin, fout, shape, p) end
  if name == "he_uniform" then return init.he_uniform(fin, shape, p) end
  if name == "he_normal" then return init.he_normal(fin, shape, p) end
  if name == "ones" then return gpu.ones(shape, p) end
  local w = gpu.zeros(shape, p)
  if name == "orthogonal" then init.orthogonal_(w) end
  return w
end

local function keys(kind)
  local k = module.with_placement(regularizers.keys({
    activation = { type = "string|callable", choices = act_names, default = "tanh" },
    use_bias = { type = "boolean", default = true },
    return_sequences = { type = "boolean", default = false },
    return_state = { type = "boolean", default = false },
    go_backwards = { type = "boolean", default = false },
    dropout = { type = "number", min = 0, max = 1, max_open = true, default = 0 },
    recurrent_dropout = { type = "number", min = 0, max = 1, max_open = true, default = 0 },
    kernel_initializer = { choices = INITS, default = "glorot_uniform" },
    recurrent_initializer = { choices = INITS, default = "orthogonal" },
    bias_initializer = { choices = { "zeros", "ones" }, default = "zeros" },
    input_shape = { type = "table" }, name = { type = "string" },
  }, { "kernel", "recurrent_kernel", "bias" }))
  if kind ~= "SimpleRNN" then
    k.recurrent_activation = { type = "string|callable", choices = act_names, default = "sigmoid" }
  end
  if kind == "LSTM" then k.unit_forget_bias = { type = "boolean", default = true } end
  if kind == "GRU" then k.reset_after = { type = "boolean", default = true } end
  return k
end

local function cols(a, g, U) return a[{ ":", { (g - 1) * U + 1, g * U } }] end
-- the same on the last axis of (N, T, G U)
local function cols3(a, g, U) return a[{ ":", ":", { (g - 1) * U + 1, g * U } }] end

-- Whether the fused loops take the layer's work: their dtypes and devices, their activations,
-- no mask, no recurrent dropout (gpu.fused.lstm, gru, rnn; lua/gpu/nn/recurrent.lua uses them
-- the same way)
local FUSED_DTYPES = { float32 = true, float64 = true }
local FUSED_DEVICES = { cpu = true, cuda = true }
local function fused_ok(self, kind, x, mask, rmasks)
  local o = self.opts
  if self.fused == false or mask ~= nil or rmasks ~= nil or not FUSED_DTYPES[x.dtype] then return false end
  if not FUSED_DEVICES[(x.device:gsub(":%d+$", ""))] then return false end
  if kind == "SimpleRNN" then return o.activation == "tanh" or o.activation == "relu" end
  if kind == "GRU" and not self.reset_after then return false end
  return o.activation == "tanh" and o.recurrent_activation == "sigmoid"
end

-- The steps through the fused loop: zs (N, T, G U) the input projections (bias in; GRU: the
-- input bias only), h, c (N, U) the initial states; returns the outputs (N, T, U) and the
-- final h [, c].
local function run_fused(self, kind, zs, h, c, rbias)
  local U, rk = self.units, self.recurrent_kernel
  local T = zs.shape[2]
  local xp = zs:transpose(1, 2):contiguous()                  -- (T, N, G U), time-major
  local hs
  if kind == "LSTM" then                                       -- gates i f c o: PyTorch's i f g o
    local hc = gpu.fused.lstm(xp, rk:transpose(1, 2):contiguous(), h, c)   -- (T, N, 2, U)
    hs = hc[{ ":", ":", 1 }]
    c = hc[{ T, ":", 2 }]
  elseif kind == "GRU" then                                    -- z r h to PyTorch's r z n
    xp = gpu.concat({ cols3(xp, 2, U), cols3(xp, 1, U), cols3(xp, 3, U) }, 3)
    local w = gpu.concat({ cols(rk, 2, U), cols(rk, 1, U), cols(rk, 3, U) }, 2):transpose(1, 2):contiguous()
    local b = rbias and gpu.concat({ rbias[{ { U + 1, 2 * U } }], rbias[{ { 1, U } }], rbias[{ { 2 * U + 1, 3 * U } }] }, 1)
    hs = gpu.fused.gru(xp, w, b, h)                            -- (T, N, U)
  else
    hs = gpu.fused.rnn(xp, rk:transpose(1, 2):contiguous(), h, { nonlinearity = self.opts.activation })
  end
  return hs:transpose(1, 2), hs[T], c
end

-- the mask option: (N, T) of bool (or numbers, nonzero counts) for an input (N, T, F)
local function check_mask(fname, m, x)
  if m == nil then return nil end
  if m.ndim ~= 2 or m.shape[1] ~= x.shape[1] or m.shape[2] ~= x.shape[2] then
    argerror(fname, 2, "mask must be (N, T) = (%d, %d) for the input %s, got %s", x.shape[1], x.shape[2],
      shape_str(x.shape), shape_str(m.shape))
  end
  m = m:to(x.device)
  if m.dtype ~= "bool" then m = m:ne(0) end
  return m
end

local function rnn_class(kind)
  local spec = KINDS[kind]
  local G = spec.gates
  local fname = "nn." .. kind
  local decl = options.declare(fname .. " (Keras)", keys(kind),
    { example = ("gpu.nn.%s(2, %%s)(gpu.ones(1, 3, 2))"):format(kind) })
  local call_decl = options.declare(kind .. "(units):forward", { mask = { type = "array" }, initial_state = { type = "table|array" } },
    { example = ("gpu.nn.%s(2)(gpu.ones(1, 3, 2), %%s)"):format(kind) })
  local cls = class(spec.cname)
  cls.display_name = kind                    -- summaries and Keras's layer names: "LSTM", "lstm"
  KR[spec.cname] = cls
  cls.takes_mask = true

  -- (units [, {activation = "tanh", recurrent_activation = "sigmoid", use_bias = true,
  -- return_sequences = false, return_state = false, go_backwards = false, dropout = 0,
  -- recurrent_dropout = 0, kernel_initializer = "glorot_uniform", recurrent_initializer =
  -- "orthogonal", bias_initializer = "zeros", unit_forget_bias = true (LSTM), reset_after =
  -- true (GRU), kernel_/recurrent_kernel_/bias_regularizer and _constraint,
  -- activity_regularizer, input_shape, name, dtype, device}])
  function cls:init(units, opts)
    if math.type(units) ~= "integer" or units < 1 then
      argerror(fname, 1, "units must be an integer >= 1, got %s", type_name(units))
    end
    if opts ~= nil and (type(opts) ~= "table" or getmetatable(opts) ~= nil) then
      argerror(fname, 2, "an options table expected after units, got %s", type_name(opts))
    end
    if kind ~= "SimpleRNN" and opts ~= nil then
      for _, key in ipairs { "num_layers", "batch_first", "bidirectional", "bias", "hidden_size" } do
        if opts[key] ~= nil then
          argerror(fname, 2, "option '%s' is PyTorch's: with one integer this is Keras's %s(units); PyTorch's is %s(input_size, hidden_size, {...})",
            key, kind, fname)
        end
      end
    end
    local o = decl:check(opts, 2)
    self.units, self.opts = units, o
    self.activation = acts[o.activation] or o.activation
    self.recurrent_activation = o.recurrent_activation and (acts[o.recurrent_activation] or o.recurrent_activation)
    self.reset_after = kind == "GRU" and o.reset_after
    regularizers.attach(self, o, { "kernel", "recurrent_kernel", "bias" })
    if o.name then self.name = o.name end
    if o.input_shape then
      local s = o.input_shape
      if math.type(s[#s]) ~= "integer" or s[#s] < 1 then
        argerror(fname, 2, "option 'input_shape' must end with the number of features, got %s", type_name(s[#s]))
      end
      self:build(s[#s])
    end
  end

  -- build(features [, device]): kernel (F, G units), recurrent_kernel (units, G units), bias
  function cls:build(fin, device)
    local o, U = self.opts, self.units
    local p = module.placement { dtype = o.dtype, device = self.device or o.device or device }
    self.in_features = fin
    self:register_parameter("kernel", initial(o.kernel_initializer, { fin, G * U }, p))
    self:register_parameter("recurrent_kernel", initial(o.recurrent_initializer, { U, G * U }, p))
    if o.use_bias then
      local make = o.bias_initializer == "ones" and gpu.ones or gpu.zeros
      local b
      if self.reset_after then b = make({ 2, G * U }, p) else b = make({ G * U }, p) end
      if kind == "LSTM" and o.unit_forget_bias then b[{ { U + 1, 2 * U } }] = 1 end
      self:register_parameter("bias", b)
    end
  end

  function cls:repr()
    local r = ("%s(%d"):format(kind, self.units)
    if self.opts.return_sequences then r = r .. ", return_sequences=True" end
    if self.opts.return_state then r = r .. ", return_state=True" end
    if self.opts.go_backwards then r = r .. ", go_backwards=True" end
    return r .. ")"
  end

  -- h's recurrent projection (N, G U) (GRU with reset_after: the recurrent bias in); with
  -- recurrent dropout (rm: a mask (N, U) per gate) each gate's block takes h times its mask
  local function recurrent_part(self, h, rm, rbias)
    local rk, U = self.recurrent_kernel, self.units
    if rm == nil then return F.dense(h, rk, rbias) end
    local parts = {}
    for g = 1, G do
      parts[g] = F.dense(h * rm[g], cols(rk, g, U), rbias and rbias[{ { (g - 1) * U + 1, g * U } }])
    end
    return G == 1 and parts[1] or gpu.concat(parts, 2)
  end

  -- one step from the input projection zt (N, G U) and the states: the new h [, c]. rm: the
  -- recurrent dropout masks (nil: none), one (N, U) per gate, applied to h where it meets the
  -- recurrent kernel (Keras 3's cells: the state h carried on and LSTM's c are not dropped)
  local function step(self, zt, h, c, rbias, rm)
    local U, act, ract, rk = self.units, self.activation, self.recurrent_activation, self.recurrent_kernel
    if kind == "LSTM" then
      local z = zt + recurrent_part(self, h, rm)
      local i, f = ract(cols(z, 1, U)), ract(cols(z, 2, U))
      local g, o = act(cols(z, 3, U)), ract(cols(z, 4, U))
      c = f * c + i * g
      return o * act(c), c
    elseif kind == "GRU" then
      local z, r, hh
      if self.reset_after then
        local hr = recurrent_part(self, h, rm, rbias)      -- (N, 3 U)
        z = ract(cols(zt, 1, U) + cols(hr, 1, U))
        r = ract(cols(zt, 2, U) + cols(hr, 2, U))
        hh = act(cols(zt, 3, U) + r * cols(hr, 3, U))
      else
        local hz, hrr, hh_in = h, h, h
        if rm then hz, hrr, hh_in = h * rm[1], h * rm[2], h * rm[3] end
        z = ract(cols(zt, 1, U) + F.dense(hz, cols(rk, 1, U)))
        r = ract(cols(zt, 2, U) + F.dense(hrr, cols(rk, 2, U)))
        hh = act(cols(zt, 3, U) + F.dense(r * hh_in, cols(rk, 3, U)))
      end
      return hh + z * (h - hh)
    end
    return act(zt + recurrent_part(self, h, rm))
  end

  -- an initial state: an array (N, units) for the layer's state number k
  local function state_arg(self, v, k, x, call)
    if not is_array(v) then argerror(call, 2, "initial_state[%d] must be a gpu.array, got %s", k, type_name(v)) end
    if v.ndim ~= 2 or v.shape[1] ~= x.shape[1] or v.shape[2] ~= self.units then
      argerror(call, 2, "initial_state[%d] must be (N, units) = (%d, %d), got %s", k, x.shape[1], self.units, shape_str(v.shape))
    end
    return v:to(x.device):astype(x.dtype)
  end

  -- forward(x [, {mask = (N, T), initial_state = {h [, c]}}]): x (N, T, features) ->
  -- the last output (N, units) or, with return_sequences, all of them (N, T, units); with
  -- return_state the final states follow (LSTM h, c; GRU and SimpleRNN h).
  function cls:forward(x, opts)
    local call = ("%s(%d)"):format(kind, self.units)
    check_array(x, call, 1, "input")
    if x.ndim ~= 3 then
      raise("%s: expected a 3-D input (N, T, features), got %s", call, shape_str(x.shape))
    end
    local co = call_decl:check(opts, 2, call)
    local N, T, fin = x.shape[1], x.shape[2], x.shape[3]
    if T == 0 then raise("%s: the input has no time steps (shape %s)", call, shape_str(x.shape)) end
    if self.in_features == nil then self:build(fin, x.device) end
    if fin ~= self.in_features then
      raise("%s: expected %d features, got %d (input %s)", call, self.in_features, fin, shape_str(x.shape))
    end
    local k = self.kernel
    if x.dtype ~= k.dtype or x.device ~= k.device then
      raise("%s: the input is %s on %s but the weights are %s on %s (convert with astype / to)", call, x.dtype, x.device,
        k.dtype, k.device)
    end
    local mask = check_mask(call, co.mask, x)
    local o, U = self.opts, self.units
    local h, c
    local init_state = co.initial_state
    if init_state ~= nil then
      if is_array(init_state) then init_state = { init_state } end
      if #init_state ~= spec.states then
        argerror(call, 2, "initial_state must list %d state%s, got %d", spec.states, spec.states == 1 and "" or "s", #init_state)
      end
      h = state_arg(self, init_state[1], 1, x, call)
      if kind == "LSTM" then c = state_arg(self, init_state[2], 2, x, call) end
    end
    local zeros = gpu.zeros({ N, U }, { dtype = x.dtype, device = x.device })
    h = h or zeros
    if kind == "LSTM" then c = c or zeros end
    local xs = x
    if o.go_backwards then
      xs = x:flip(2)
      if mask then mask = mask:flip(2) end
    end
    -- Dropout as Keras 3's cells: masks drawn once per call (the same at every step), in
    -- training only, scaled by 1 / (1 - rate). dropout: one mask (N, 1, F) of the input
    -- features, or with recurrent_dropout (Keras's implementation 1) one per gate of LSTM and
    -- GRU; then recurrent_dropout: one mask (N, units) of h per gate (SimpleRNN: one).
    local p = { dtype = x.dtype, device = x.device }
    local in_masks, rmasks
    local per_gate = o.recurrent_dropout > 0 and G or 1
    if o.dropout > 0 and self.training then
      local q = 1 - o.dropout
      in_masks = {}
      for g = 1, per_gate do in_masks[g] = gpu.random.bernoulli(q, { N, 1, fin }, p) * (1 / q) end
    end
    if o.recurrent_dropout > 0 and self.training then
      local q = 1 - o.recurrent_dropout
      rmasks = {}
      for g = 1, G do rmasks[g] = gpu.random.bernoulli(q, { N, U }, p) * (1 / q) end
    end
    local bias, rbias = self.bias, nil
    if bias ~= nil and self.reset_after then bias, rbias = self.bias[1], self.bias[2] end
    local zs                                                   -- (N, T, G U): every step's input projection
    if in_masks == nil or #in_masks == 1 then
      zs = F.dense(in_masks and xs * in_masks[1] or xs, self.kernel, bias)
    else
      local parts = {}
      for g = 1, G do
        parts[g] = F.dense(xs * in_masks[g], cols(self.kernel, g, U), bias and bias[{ { (g - 1) * U + 1, g * U } }])
      end
      zs = gpu.concat(parts, 3)
    end
    if fused_ok(self, kind, x, mask, rmasks) then
      local seq, hN, cN = run_fused(self, kind, zs, h, c, rbias)
      local y = regularizers.activity(self, o.return_sequences and seq or hN)
      if not o.return_state then return y end
      if kind == "LSTM" then return y, hN, cN end
      return y, hN
    end
    local outs, out = {}, nil
    -- zero_output_for_mask (set by Bidirectional on its layers, as Keras's): a masked step's
    -- output in the sequence is zeros instead of the last unmasked step's
    local zero_masked = rawget(self, "zero_output_for_mask") == true
    for t = 1, T do
      local hn, cn = step(self, zs[{ ":", t }], h, c, rbias, rmasks)
      local seq_out
      if mask then
        local m = mask[{ ":", { t, t } }]                     -- (N, 1)
        out = gpu.where(m, hn, out or zeros)
        h = gpu.where(m, hn, h)
        if cn then c = gpu.where(m, cn, c) end
        seq_out = zero_masked and gpu.where(m, hn, zeros) or out
      else
        out, h, c = hn, hn, cn
        seq_out = out
      end
      if o.return_sequences then outs[t] = seq_out end
    end
    local y = o.return_sequences and gpu.stack(outs, 2) or out
    y = regularizers.activity(self, y)
    if not o.return_state then return y end
    if kind == "LSTM" then return y, h, c end
    return y, h
  end

  -- the mask of the output: the input's, for a sequence (Keras's compute_mask)
  function cls:compute_mask(_, mask)
    if self.opts.return_sequences then return mask end
    return nil
  end
  return cls
end

rnn_class("LSTM")
rnn_class("GRU")
rnn_class("SimpleRNN")
-- m.fused = false (or the class's field): the step loop of array ops even where the fused
-- loops could run (the reference they are checked against)
KR.KerasLSTM.fused, KR.KerasGRU.fused, KR.SimpleRNN.fused = true, true, true

-- ---- Masking -----------------------------------------------------------------------------------

local MASKING = options.declare("nn.Masking", { name = { type = "string" } },
  { example = "gpu.nn.Masking(0, %s)(gpu.ones(1, 3, 2))" })

-- Masking([mask_value = 0] [, {name}]): a step whose features all equal mask_value is masked:
-- its output is zeros and the step mask (N, T) it computes goes on to the next layers
local Masking = class("Masking")
function Masking:init(mask_value, opts)
  if type(mask_value) == "table" and getmetatable(mask_value) == nil and opts == nil then mask_value, opts = nil, mask_value end
  self.mask_value = options.value(mask_value, { type = "number", default = 0 }, "nn.Masking", 1, "mask_value")
  local o = MASKING:check(opts, 2)
  if o.name then self.name = o.name end
end
local function steps_kept(self, x)
  check_array(x, "nn.Masking", 1, "input")
  if x.ndim < 2 then raise("nn.Masking: expected an input (N, T, ...) of 2 or more axes, got %s", shape_str(x.shape)) end
  return x:ne(self.mask_value):any(x.ndim, { keepdims = true })
end
function Masking:forward(x)
  return x * steps_kept(self, x):astype(x.dtype)
end
function Masking:compute_mask(x, _)
  local keep = steps_kept(self, x)
  return keep:reshape(table.unpack(keep.shape, 1, keep.ndim - 1))
end
function Masking:repr() return ("Masking(mask_value=%g)"):format(self.mask_value) end
KR.Masking = Masking

-- ---- Bidirectional ------------------------------------------------------------------------------

local RNN_CLASSES = { [KR.KerasLSTM] = true, [KR.KerasGRU] = true, [KR.SimpleRNN] = true }
local function is_rnn(v) return RNN_CLASSES[getmetatable(v)] == true end

local BIDI = options.declare("nn.Bidirectional", {
  merge_mode = { choices = { "concat", "sum", "mul", "ave", "none" }, default = "concat" },
  backward_layer = { type = "any", what = "a Keras recurrent layer" },
  name = { type = "string" },
}, { example = "gpu.nn.Bidirectional(gpu.nn.LSTM(2), %s)(gpu.ones(1, 3, 2))" })

-- Bidirectional(layer [, {merge_mode = "concat", backward_layer, name}]): Keras's wrapper of a
-- recurrent layer (nn.LSTM(units), nn.GRU(units), nn.SimpleRNN): the layer over the steps
-- forwards, and backward_layer (by default a copy of the layer's configuration with
-- go_backwards flipped, weights of its own) over them backwards, its sequence put back in
-- time order; the two merged along the features ("concat"), added ("sum"), multiplied
-- ("mul"), averaged ("ave"), or both returned ("none"). With return_state the forward
-- layer's states follow, then the backward one's. A mask goes to both layers.
local Bidirectional = class("Bidirectional")
Bidirectional.takes_mask = true
function Bidirectional:init(layer, opts)
  local fname = "nn.Bidirectional"
  if not is_rnn(layer) then
    argerror(fname, 1, "a Keras recurrent layer expected (nn.LSTM(units), nn.GRU(units), nn.SimpleRNN(units)), got %s",
      type_name(layer))
  end
  local o = BIDI:check(opts, 2)
  local back = o.backward_layer
  if back ~= nil then
    if not is_rnn(back) then
      argerror(fname, 2, "option 'backward_layer' must be a Keras recurrent layer, got %s", type_name(back))
    end
    for _, k in ipairs { "return_sequences", "return_state" } do
      if back.opts[k] ~= layer.opts[k] then
        argerror(fname, 2, "option 'backward_layer' must have the layer's %s (%s), got %s", k, tostring(layer.opts[k]),
          tostring(back.opts[k]))
      end
    end
    if back.opts.go_backwards == layer.opts.go_backwards then
      argerror(fname, 2, "option 'backward_layer' must run the other way: its go_backwards must be %s",
        tostring(not layer.opts.go_backwards))
    end
    if back == layer then argerror(fname, 2, "option 'backward_layer' must be another layer than the forward one") end
  else
    local bo = {}
    for k, v in pairs(layer.opts) do bo[k] = v end
    bo.go_backwards, bo.name = not layer.opts.go_backwards, nil
    back = getmetatable(layer)(layer.units, bo)
  end
  self.forward_layer = layer                  -- (sub-modules: parameters, state_dict names)
  self.backward_layer = back
  if layer.in_features ~= nil and back.in_features == nil then back:build(layer.in_features) end
  -- Keras's Bidirectional: the masked steps of a returned sequence are zeros
  rawset(layer, "zero_output_for_mask", layer.opts.return_sequences)
  rawset(back, "zero_output_for_mask", back.opts.return_sequences)
  self.merge_mode = o.merge_mode
  if o.name then self.name = o.name end
end

-- forward(x [, {mask =, initial_state =}]): initial_state lists the forward layer's states,
-- then the backward one's
function Bidirectional:forward(x, opts)
  local f, b = self.forward_layer, self.backward_layer
  local fo, bo = opts, opts
  if type(opts) == "table" and getmetatable(opts) == nil and opts.initial_state ~= nil then
    local s, k = opts.initial_state, is_array(opts.initial_state) and 1 or #opts.initial_state
    if is_array(s) or k % 2 ~= 0 then
      argerror("Bidirectional", 2, "initial_state must list the forward layer's states and then the backward "
        .. "one's (an even number), got %s", is_array(s) and "one array" or tostring(k))
    end
    fo, bo = { mask = opts.mask, initial_state = { table.unpack(s, 1, k // 2) } },
      { mask = opts.mask, initial_state = { table.unpack(s, k // 2 + 1, k) } }
  end
  local yf = table.pack(f(x, fo))
  local yb = table.pack(b(x, bo))
  local of, ob = yf[1], yb[1]
  if f.opts.return_sequences then ob = ob:flip(2) end
  local out
  local mode = self.merge_mode
  if mode == "concat" then out = { gpu.concat({ of, ob }, of.ndim) }
  elseif mode == "sum" then out = { of + ob }
  elseif mode == "mul" then out = { of * ob }
  elseif mode == "ave" then out = { (of + ob) * 0.5 }
  else out = { of, ob } end
  for i = 2, yf.n do out[#out + 1] = yf[i] end
  for i = 2, yb.n do out[#out + 1] = yb[i] end
  return table.unpack(out)
end

function Bidirectional:compute_mask(_, mask)
  if self.forward_layer.opts.return_sequences then return mask end
  return nil
end

function Bidirectional:repr()
  return ("Bidirectional(%s, merge_mode=%s)"):format(tostring(self.forward_layer), self.merge_mode)
end
KR.Bidirectional = Bidirectional

-- Keras's LSTM and GRU, which nn.LSTM and nn.GRU construct when given one integer (behind the
-- metatable, so that nn's export of this table's entries leaves them out)
setmetatable(KR, { __index = { _classes = { LSTM = KR.KerasLSTM, GRU = KR.KerasGRU } } })
KR.KerasLSTM, KR.KerasGRU = nil, nil

return KR
