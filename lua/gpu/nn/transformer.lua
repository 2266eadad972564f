-- gpu.nn.transformer: TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder
-- and TransformerDecoder, PyTorch's constructors, defaults, sub-module names
-- (self_attn, linear1, norm1, layers.0. ...) and numbers, and clone_module, the deep copy
-- the stacks are made of.

local gpu = require "gpu"
local options = require "gpu.options"
local autograd = require "gpu.autograd"
local module = require "gpu.nn.module"
local Lay = require "gpu.nn.layers"
local Norm = require "gpu.nn.norm"
local Att = require "gpu.nn.attention"
local Act = require "gpu.nn.activations"

local raise, argerror, check_array, type_name = options.raise, options.argerror, options.check_array,
  options.type_name
local class, is_module = module.class, module.is_module

local T = {}

-- clone_module(m): a deep copy of module m: new parameters and buffers with the same
-- values (an array shared by two places stays shared in the copy), sub-modules copied
-- the same way, other fields copied (tables) or kept (functions, strings).
function T.clone_module(m)
  if not is_module(m) then argerror("nn.clone_module", 1, "a module expected, got %s", type_name(m)) end
  local memo = {}
  local function copy(v)
    if memo[v] ~= nil then return memo[v] end
    if options.is_array(v) then
      local c = autograd.no_grad(function() return v:detach():copy() end)
      if autograd.requires_grad(v) then c = c:requires_grad() end
      memo[v] = c
      return c
    end
    if type(v) ~= "table" then return v end
    local mt = getmetatable(v)
    local c = {}
    memo[v] = c
    for key, val in pairs(v) do rawset(c, copy(key), copy(val)) end
    if mt ~= nil then setmetatable(c, mt) end
    return c
  end
  -- classes and option declarations are shared, never copied: they are metatables or
  -- live in the class table, not in the instance
  return copy(m)
end

local activations = { relu = function(x) return x:relu() end, gelu = function(x) return x:gelu() end }

local LAYER_KEYS = module.with_placement {
  dim_feedforward = { type = "integer", min = 1, default = 2048 },
  dropout = { type = "number", min = 0, max = 1, max_open = true, default = 0.1 },
  activation = { type = "string|callable", choices = { "gelu", "relu" }, default = "relu" },
  layer_norm_eps = { type = "number", min = 0, default = 1e-5 },
  batch_first = { type = "boolean", default = false },
  norm_first = { type = "boolean", default = false },
  bias = { type = "boolean", default = true },
}
local ENC_LAYER = options.declare("nn.TransformerEncoderLayer", LAYER_KEYS,
  { example = "gpu.nn.TransformerEncoderLayer(4, 2, %s)" })
local DEC_LAYER = options.declare("nn.TransformerDecoderLayer", LAYER_KEYS,
  { example = "gpu.nn.TransformerDecoderLayer(4, 2, %s)" })

-- The parts every layer has: feed-forward, norms, dropouts; n_norms norms.
local function build(self, fname, decl, d, h, opts, n_norms)
  options.value(d, { type = "integer", min = 1 }, fname, 1, "d_model")
  options.value(h, { type = "integer", min = 1 }, fname, 2, "nhead")
  local o = decl:check(opts, 3)
  self.d_model, self.nhead, self.norm_first, self.batch_first = d, h, o.norm_first, o.batch_first
  self.activation_name = type(o.activation) == "string" and o.activation or "custom"
  self.activation = activations[o.activation] or o.activation
  local place = { dtype = o.dtype, device = o.device }
  local function with(t) for k, v in pairs(place) do t[k] = v end return t end
  self:add_module("self_attn", Att.MultiheadAttention(d, h, with { dropout = o.dropout, bias = o.bias,
    batch_first = o.batch_first }))
  if n_norms == 3 then
    self:add_module("multihead_attn", Att.MultiheadAttention(d, h, with { dropout = o.dropout, bias = o.bias,
      batch_first = o.batch_first }))
  end
  self:add_module("linear1", Lay.Linear(d, o.dim_feedforward, with { bias = o.bias }))
  self:add_module("dropout", Lay.Dropout(o.dropout))
  self:add_module("linear2", Lay.Linear(o.dim_feedforward, d, with { bias = o.bias }))
  for i = 1, n_norms do
    self:add_module("norm" .. i, Norm.LayerNorm(d, with { eps = o.layer_norm_eps, bias = o.bias }))
  end
  for i = 1, n_norms do self:add_module("dropout" .. i, Lay.Dropout(o.dropout)) end
  for _, n in ipairs(self._mnames) do self[n] = self._modules[n] end
end

local function check_input(fname, x, d)
  check_array(x, fname, 1, "input")
  if (x.ndim ~= 2 and x.ndim ~= 3) or x.shape[x.ndim] ~= d then
    raise("%s: expected an input (L, N, %d), (N, L, %d) with batch_first or (L, %d), got %s", fname, d, d, d,
      options.shape_str(x.shape))
  end
end

local function ff(self, x, dropout)
  return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))
end
local function sa(self, x, mask, kpm, causal)
  return self.dropout1((self.self_attn(x, x, x, { attn_mask = mask, key_padding_mask = kpm, need_weights = false,
    is_causal = causal })))
end
local function mha(self, x, mem, mask, kpm, causal)
  return self.dropout2((self.multihead_attn(x, mem, mem, { attn_mask = mask, key_padding_mask = kpm,
    need_weights = false, is_causal = causal })))
end

-- TransformerEncoderLayer(d_model, nhead [, {dim_feedforward = 2048, dropout = 0.1,
-- activation = "relu", layer_norm_eps = 1e-5, batch_first = false, norm_first = false, bias = true}])
local EncoderLayer = class("TransformerEncoderLayer")
function EncoderLayer:init(d, h, opts) build(self, "nn.TransformerEncoderLayer", ENC_LAYER, d, h, opts, 2) end

local ENC_CALL = options.declare("TransformerEncoderLayer:forward", {
  src_mask = { type = "array" }, src_key_padding_mask = { type = "array" }, is_causal = { type = "boolean" },
}, { example = "gpu.nn.TransformerEncoderLayer(4, 2)(gpu.ones(3, 2, 4), %s)" })

-- layer(src [, {src_mask, src_key_padding_mask, is_causal}])
function EncoderLayer:forward(x, opts)
  local fname = "nn.TransformerEncoderLayer"
  check_input(fname, x, self.d_model)
  local o = ENC_CALL:check(opts, 2, fname)
  local m, kpm, c = o.src_mask, o.src_key_padding_mask, o.is_causal
  if self.norm_first then
    x = x + sa(self, self.norm1(x), m, kpm, c)
    return x + ff(self, self.norm2(x), self.dropout2)
  end
  x = self.norm1(x + sa(self, x, m, kpm, c))
  return self.norm2(x + ff(self, x, self.dropout2))
end
function EncoderLayer:repr() return ("TransformerEncoderLayer(%d, %d)"):format(self.d_model, self.nhead) end
T.TransformerEncoderLayer = EncoderLayer

-- TransformerDecoderLayer(d_model, nhead [, the encoder layer's options])
local DecoderLayer = class("TransformerDecoderLayer")
function DecoderLayer:init(d, h, opts) build(self, "nn.TransformerDecoderLayer", DEC_LAYER, d, h, opts, 3) end

local DEC_KEYS = {
  tgt_mask = { type = "array" }, memory_mask = { type = "array" }, tgt_key_padding_mask = { type = "array" },
  memory_key_padding_mask = { type = "array" }, tgt_is_causal = { type = "boolean" },
  memory_is_causal = { type = "boolean" },
}
local DEC_CALL = options.declare("TransformerDecoderLayer:forward", DEC_KEYS,
  { example = "gpu.nn.TransformerDecoderLayer(4, 2)(gpu.ones(3, 2, 4), gpu.ones(5, 2, 4), %s)" })

-- layer(tgt, memory [, {tgt_mask, memory_mask, tgt_key_padding_mask,
-- memory_key_padding_mask, tgt_is_causal, memory_is_causal}])
function DecoderLayer:forward(x, mem, opts)
  local fname = "nn.TransformerDecoderLayer"
  check_input(fname, x, self.d_model)
  check_array(mem, fname, 2, "memory")
  local o = DEC_CALL:check(opts, 3, fname)
  local function cross(y) return mha(self, y, mem, o.memory_mask, o.memory_key_padding_mask, o.memory_is_causal) end
  if self.norm_first then
    x = x + sa(self, self.norm1(x), o.tgt_mask, o.tgt_key_padding_mask, o.tgt_is_causal)
    x = x + cross(self.norm2(x))
    return x + ff(self, self.norm3(x), self.dropout3)
  end
  x = self.norm1(x + sa(self, x, o.tgt_mask, o.tgt_key_padding_mask, o.tgt_is_causal))
  x = self.norm2(x + cross(x))
  return self.norm3(x + ff(self, x, self.dropout3))
end
function DecoderLayer:repr() return ("TransformerDecoderLayer(%d, %d)"):format(self.d_model, self.nhead) end
T.TransformerDecoderLayer = DecoderLayer

-- The stacks: num_layers deep copies of the layer in layers (a ModuleList: PyTorch's
-- "layers.0." names), then the optional final norm.
local STACK_KEYS = { norm = { type = "table", check = function(v) return is_module(v), "must be a module" end },
                     enable_nested_tensor = "boolean" }
local STACKS = {
  ["nn.TransformerEncoder"] = options.declare("nn.TransformerEncoder", STACK_KEYS,
    { example = "gpu.nn.TransformerEncoder(gpu.nn.TransformerEncoderLayer(4, 2), 2, %s)" }),
  ["nn.TransformerDecoder"] = options.declare("nn.TransformerDecoder", STACK_KEYS,
    { example = "gpu.nn.TransformerDecoder(gpu.nn.TransformerDecoderLayer(4, 2), 2, %s)" }),
}

local function stack(self, fname, layer, n, opts, cls_of)
  if not (is_module(layer) and getmetatable(layer) == cls_of) then
    argerror(fname, 1, "a %s expected, got %s", cls_of.__name, type_name(layer))
  end
  options.value(n, { type = "integer", min = 1 }, fname, 2, "num_layers")
  local o = STACKS[fname]:check(opts, 3)
  local list = {}
  for i = 1, n do list[i] = T.clone_module(layer) end
  self.num_layers = n
  self.layers = self:add_module("layers", Act.ModuleList(list))
  if o.norm then self.norm = self:add_module("norm", o.norm) end
end

local ENC_STACK_CALL = options.declare("TransformerEncoder:forward", {
  mask = { type = "array" }, src_key_padding_mask = { type = "array" }, is_causal = { type = "boolean" },
}, { example = "gpu.nn.TransformerEncoder(gpu.nn.TransformerEncoderLayer(4, 2), 2)(gpu.ones(3, 2, 4), %s)" })

-- TransformerEncoder(encoder_layer, num_layers [, {norm}]); called as m(src [, {mask,
-- src_key_padding_mask, is_causal}])
local Encoder = class("TransformerEncoder")
function Encoder:init(layer, n, opts) stack(self, "nn.TransformerEncoder", layer, n, opts, EncoderLayer) end
function Encoder:forward(x, opts)
  local o = ENC_STACK_CALL:check(opts, 2, "nn.TransformerEncoder")
  local lo = { src_mask = o.mask, src_key_padding_mask = o.src_key_padding_mask, is_causal = o.is_causal }
  for i = 1, #self.layers do x = self.layers[i](x, lo) end
  if self.norm then x = self.norm(x) end
  return x
end
function Encoder:repr() return ("TransformerEncoder(%d layers)"):format(self.num_layers) end
T.TransformerEncoder = Encoder

local DEC_STACK_CALL = options.declare("TransformerDecoder:forward", DEC_KEYS,
  { example = "gpu.nn.TransformerDecoder(gpu.nn.TransformerDecoderLayer(4, 2), 1)(gpu.ones(3, 2, 4), " ..
    "gpu.ones(5, 2, 4), %s)" })

-- TransformerDecoder(decoder_layer, num_layers [, {norm}]); m(tgt, memory [, the layer's masks])
local Decoder = class("TransformerDecoder")
function Decoder:init(layer, n, opts) stack(self, "nn.TransformerDecoder", layer, n, opts, DecoderLayer) end
function Decoder:forward(x, mem, opts)
  local o = DEC_STACK_CALL:check(opts, 3, "nn.TransformerDecoder")
  for i = 1, #self.layers do x = self.layers[i](x, mem, o) end
  if self.norm then x = self.norm(x) end
  return x
end
function Decoder:repr() return ("TransformerDecoder(%d layers)"):format(self.num_layers) end
T.TransformerDecoder = Decoder

-- ---- Transformer ------------------------------------------------------------------------------

local TRANSFORMER_KEYS = { nhead = { type = "integer", min = 1, default = 8 },
  num_encoder_layers = { type = "integer", min = 1, default = 6 }, num_decoder_layers = { type = "integer", min = 1, default = 6 },
  custom_encoder = { type = "table", check = function(v) return is_module(v), "must be a module" end },
  custom_decoder = { type = "table", check = function(v) return is_module(v), "must be a module" end } }
for k, v in pairs(LAYER_KEYS) do TRANSFORMER_KEYS[k] = v end
local TRANSFORMER = options.declare("nn.Transformer", TRANSFORMER_KEYS,
  { example = "gpu.nn.Transformer(4, (function(o) o.nhead = o.nhead or 2 return o end)(%s))" })
local TRANSFORMER_CALL = options.declare("Transformer:forward", {
  src_mask = { type = "array" }, tgt_mask = { type = "array" }, memory_mask = { type = "array" },
  src_key_padding_mask = { type = "array" }, tgt_key_padding_mask = { type = "array" },
  memory_key_padding_mask = { type = "array" }, src_is_causal = { type = "boolean" }, tgt_is_causal = { type = "boolean" },
  memory_is_causal = { type = "boolean", default = false },
}, { example = "gpu.nn.Transformer(4, {nhead = 2, num_encoder_layers = 1, num_decoder_layers = 1})(gpu.ones(3, 2, 4), " ..
     "gpu.ones(2, 2, 4), %s)" })

-- Transformer([d_model = 512] [, {nhead = 8, num_encoder_layers = 6, num_decoder_layers = 6,
-- dim_feedforward = 2048, dropout = 0.1, activation = "relu", custom_encoder, custom_decoder,
-- layer_norm_eps = 1e-5, batch_first = false, norm_first = false, bias = true, dtype, device}]):
-- PyTorch's: an encoder and a decoder stack, each ending in a LayerNorm; every parameter of
-- two or more axes Xavier-uniform (PyTorch's _reset_parameters)
local Transformer = class("Transformer")
function Transformer:init(d, opts)
  local fname = "nn.Transformer"
  if type(d) == "table" and opts == nil and getmetatable(d) == nil then d, opts = nil, d end
  d = options.value(d, { type = "integer", min = 1, default = 512 }, fname, 1, "d_model")
  local o = TRANSFORMER:check(opts, 2)
  local layer = {}
  for k in pairs(LAYER_KEYS) do layer[k] = o[k] end
  self.d_model, self.nhead, self.batch_first = d, o.nhead, o.batch_first
  local place = { dtype = o.dtype, device = o.device }
  local function norm() return Norm.LayerNorm(d, { eps = o.layer_norm_eps, bias = o.bias, dtype = place.dtype, device = place.device }) end
  self:add_module("encoder", o.custom_encoder or Encoder(EncoderLayer(d, o.nhead, layer), o.num_encoder_layers, { norm = norm() }))
  self:add_module("decoder", o.custom_decoder or Decoder(DecoderLayer(d, o.nhead, layer), o.num_decoder_layers, { norm = norm() }))
  self.encoder, self.decoder = self._modules.encoder, self._modules.decoder
  local init = require "gpu.nn.initializers"
  for _, p in ipairs(self:parameters()) do
    if p.ndim > 1 then autograd.no_grad(init.xavier_uniform_, p) end
  end
end
-- m(src, tgt [, {src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask,
-- memory_key_padding_mask, src_is_causal, tgt_is_causal, memory_is_causal = false}])
function Transformer:forward(src, tgt, opts)
  local fname = "nn.Transformer"
  check_array(src, fname, 1, "src")
  check_array(tgt, fname, 2, "tgt")
  local o = TRANSFORMER_CALL:check(opts, 3, fname)
  if src.ndim ~= tgt.ndim then raise("%s: src and tgt must both be batched or both unbatched, got %d-D and %d-D", fname, src.ndim, tgt.ndim) end
  local b = self.batch_first and 1 or 2
  if src.ndim == 3 and src.shape[b] ~= tgt.shape[b] then
    raise("%s: src and tgt have batches of %d and %d", fname, src.shape[b], tgt.shape[b])
  end
  if src.shape[src.ndim] ~= self.d_model or tgt.shape[tgt.ndim] ~= self.d_model then
    raise("%s: src and tgt must have %d features (d_model), got %d and %d", fname, self.d_model, src.shape[src.ndim],
      tgt.shape[tgt.ndim])
  end
  local memory = self.encoder(src, { mask = o.src_mask, src_key_padding_mask = o.src_key_padding_mask, is_causal = o.src_is_causal })
  return self.decoder(tgt, memory, { tgt_mask = o.tgt_mask, memory_mask = o.memory_mask,
    tgt_key_padding_mask = o.tgt_key_padding_mask, memory_key_padding_mask = o.memory_key_padding_mask,
    tgt_is_causal = o.tgt_is_causal, memory_is_causal = o.memory_is_causal })
end
function Transformer:repr() return ("Transformer(%d, nhead=%d)"):format(self.d_model, self.nhead) end

-- generate_square_subsequent_mask(sz [, {dtype, device}]): (sz, sz), 0 on and below the
-- diagonal, -inf above: position i attends to positions up to i (PyTorch's static method)
local MASK = options.declare("nn.Transformer.generate_square_subsequent_mask", module.with_placement {},
  { example = "gpu.nn.Transformer.generate_square_subsequent_mask(3, %s)" })
local function generate_square_subsequent_mask(sz, opts)
  local fname = "nn.Transformer.generate_square_subsequent_mask"
  options.value(sz, { type = "integer", min = 0 }, fname, 1, "sz")
  local o = MASK:check(opts, 2)
  local p = module.placement(o)
  local upper = gpu.triu(gpu.ones({ sz, sz }, p), 1)
  return gpu.where(upper:gt(0), -math.huge, 0):astype(p.dtype or gpu.get_default_dtype())
end
rawset(Transformer, "generate_square_subsequent_mask", generate_square_subsequent_mask)   -- static, not a method
gpu._arity(generate_square_subsequent_mask, 2)
T.Transformer = Transformer

return T
