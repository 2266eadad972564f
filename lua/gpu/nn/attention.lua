-- gpu.nn.attention: scaled_dot_product_attention and MultiheadAttention, PyTorch's
-- arguments, parameter names (in_proj_weight, in_proj_bias, out_proj.weight, ... so a
-- PyTorch state_dict loads) and numbers.
--
-- Attention is composed of dispatched ops (matmul, softmax's logsumexp, where), so the
-- gradients, both devices and autocast (matmul in the half dtype) come from their rules.
-- Unmasked, dropout-free calls go through gpu.fused.attention (on the cpu at every length, on
-- the GPU for long sequences; FlashAttention's forward: an online softmax over the keys, no (L, S)
-- scores; its backward recomputes them); with a mask or
-- dropout they are cut into tiles of query rows: without a tape no more than a (TILE, S)
-- block of the scores exists at a time.

local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local init = require "gpu.nn.initializers"
local Lay = require "gpu.nn.layers"

local raise, argerror, check_array, shape_str = options.raise, options.argerror, options.check_array,
  options.shape_str
local class = module.class

local A = { functional = {} }
local Fn = A.functional
local TILE = 256

-- The causal mask of rows r0 .. r0 + T - 1 against S columns: column <= row (bool (T, S)).
local function causal_rows(r0, T, S, device)
  local i64 = { dtype = "int64", device = device }
  local rows = gpu.arange(r0, r0 + T, i64):reshape(T, 1)
  return gpu.arange(0, S, i64):reshape(1, S):le(rows)
end

-- rows a..b (1-based, inclusive) of axis -2 of x (any number of leading axes)
local function rows_of(x, a, b)
  local idx = {}
  for i = 1, x.ndim - 2 do idx[i] = ":" end
  idx[x.ndim - 1] = { a, b }
  idx[x.ndim] = ":"
  return x[idx]
end

-- softmax(q k^T * scale + mask) [dropout] v for one tile of query rows starting at row r0 (0-based)
local function attend(q, k, v, mask, causal, scale, p, r0)
  local s = q:matmul(k:swapaxes(-1, -2)) * scale
  local L, S = s.shape[s.ndim - 1], s.shape[s.ndim]
  if causal then s = gpu.where(causal_rows(r0, L, S, q.device), s, -math.huge) end
  if mask ~= nil then
    if mask.dtype == "bool" then s = gpu.where(mask, s, -math.huge) else s = s + mask end
  end
  local w = (s - s:logsumexp(-1, { keepdims = true })):exp()
  if p > 0 then
    local keep = gpu.random.bernoulli(1 - p, w.shape, { dtype = w.dtype, device = w.device })
    w = w * (keep * (1 / (1 - p)))
  end
  return w:matmul(v), w
end

local SDPA = options.declare("nn.scaled_dot_product_attention", {
  attn_mask = { type = "array" }, is_causal = { type = "boolean", default = false },
  dropout_p = { type = "number", min = 0, max = 1, max_open = true, default = 0 },
  scale = { type = "number" },
}, { example = "gpu.nn.scaled_dot_product_attention(gpu.ones(2, 3), gpu.ones(4, 3), gpu.ones(4, 5), %s)" })

local function check_sdpa(fname, q, k, v, o)
  check_array(q, fname, 1, "query"); check_array(k, fname, 2, "key"); check_array(v, fname, 3, "value")
  if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 then
    raise("%s: query, key and value must have at least 2 axes (..., L, E), got %s, %s, %s", fname,
      shape_str(q.shape), shape_str(k.shape), shape_str(v.shape))
  end
  if q.shape[q.ndim] ~= k.shape[k.ndim] then
    raise("%s: query %s and key %s differ in their last axis (the embedding)", fname, shape_str(q.shape),
      shape_str(k.shape))
  end
  if k.shape[k.ndim - 1] ~= v.shape[v.ndim - 1] then
    raise("%s: key %s and value %s differ in length (axis -2)", fname, shape_str(k.shape), shape_str(v.shape))
  end
  for _, a in ipairs { k, v, o.attn_mask } do
    if a.device ~= q.device then raise("%s: the arguments are on %s and %s (use :to())", fname, q.device, a.device) end
  end
  local m = o.attn_mask
  if m ~= nil then
    local L, S = q.shape[q.ndim - 1], k.shape[k.ndim - 1]
    if m.ndim < 1 or m.shape[m.ndim] ~= S or (m.ndim >= 2 and m.shape[m.ndim - 1] ~= L and m.shape[m.ndim - 1] ~= 1)
      or m.ndim > q.ndim then
      raise("%s: attn_mask of shape %s does not broadcast to the scores (..., %d, %d)", fname, shape_str(m.shape), L, S)
    end
    if m.dtype ~= "bool" and not m.dtype:match("^float") and not m.dtype:match("bfloat") then
      raise("%s: attn_mask must be bool (true = take part) or a float mask to add, got %s", fname, m.dtype)
    end
  end
  if o.is_causal and m ~= nil then raise("%s: give attn_mask or is_causal, not both", fname) end
end

-- Whether gpu.fused.attention (online softmax, no (L, S) scores; the CPU's GEMM tiles or
-- the GPU's warp-per-row kernel, value rows of at most 256) takes the call: no mask, no
-- dropout, float32/float64 operands of one dtype and the same leading axes, keys and
-- values; on the GPU only when long enough that the scores would be big (below that, the
-- composite's GEMMs are faster there), on the cpu at every length (its GEMM tiles were
-- faster than the composite from L = S = 64 up, forward and training step, 1 thread).
-- float16/bfloat16 on the GPU too (cuDNN's fused SDPA where it builds a plan, else the own
-- kernels in float32); on the cpu they stay composite (half matmuls).
local fused_dtypes = { float32 = true, float64 = true }
local gpu_half = { float16 = true, bfloat16 = true }
local function fused_ok(q, k, v, mask, p)
  local dtype_ok = fused_dtypes[q.dtype] or (q.device ~= "cpu" and gpu_half[q.dtype])
  if (q.device ~= "cpu" and v.shape[v.ndim] > 256) or mask ~= nil or p > 0 or not dtype_ok
    or k.dtype ~= q.dtype or v.dtype ~= q.dtype or k.ndim ~= q.ndim or v.ndim ~= q.ndim then
    return false
  end
  local nd = q.ndim
  for i = 1, nd - 2 do
    if k.shape[i] ~= q.shape[i] or v.shape[i] ~= q.shape[i] then return false end
  end
  return k.shape[nd - 1] >= 1 and v.shape[nd] >= 1 and q.shape[nd] >= 1
    and (q.device == "cpu" or q.shape[nd - 1] * k.shape[nd - 1] > TILE * TILE)
end

-- The attention proper, query rows in tiles of TILE (arguments checked); returns out and,
-- when want_weights, the weights (the whole (L, S) of them: not tiled).
local function sdpa(q, k, v, mask, causal, scale, p, want_weights)
  scale = scale or 1 / math.sqrt(q.shape[q.ndim])
  local L = q.shape[q.ndim - 1]
  if not want_weights and fused_ok(q, k, v, mask, p) then
    return (gpu.fused.attention(q, k, v, { scale = scale, is_causal = causal }))
  end
  if want_weights or L <= TILE then return attend(q, k, v, mask, causal, scale, p, 0) end
  local outs = {}
  for a = 1, L, TILE do
    local b = math.min(a + TILE - 1, L)
    local m = mask
    if m ~= nil and m.ndim >= 2 and m.shape[m.ndim - 1] == L then m = rows_of(m, a, b) end
    outs[#outs + 1] = (attend(rows_of(q, a, b), k, v, m, causal, scale, p, a - 1))
  end
  return gpu.concatenate(outs, q.ndim - 1)
end

-- scaled_dot_product_attention(q (..., L, E), k (..., S, E), v (..., S, Ev) [, {attn_mask,
-- is_causal, dropout_p, scale}]) -> (..., L, Ev). A bool attn_mask's true entries take part
-- (PyTorch's); a float one is added to the scores. The leading axes broadcast.
function Fn.scaled_dot_product_attention(q, k, v, opts)
  local fname = "nn.scaled_dot_product_attention"
  local o = SDPA:check(opts, 4)
  check_sdpa(fname, q, k, v, o)
  return (sdpa(q, k, v, o.attn_mask, o.is_causal, o.scale, o.dropout_p, false))
end

-- ---- MultiheadAttention ----------------------------------------------------------------------

local MHA = options.declare("nn.MultiheadAttention", module.with_placement {
  dropout = { type = "number", min = 0, max = 1, max_open = true, default = 0 },
  bias = { type = "boolean", default = true },
  add_bias_kv = { type = "boolean", default = false },
  add_zero_attn = { unsupported = true },
  kdim = { type = "integer", min = 1 }, vdim = { type = "integer", min = 1 },
  batch_first = { type = "boolean", default = false },
}, { example = "gpu.nn.MultiheadAttention(4, 2, %s)" })

-- MultiheadAttention(embed_dim, num_heads [, {dropout = 0, bias = true, add_bias_kv = false,
-- kdim = E, vdim = E, batch_first = false, dtype, device}])
local MultiheadAttention = class("MultiheadAttention")
function MultiheadAttention:init(E, H, opts)
  options.value(E, { type = "integer", min = 1 }, "nn.MultiheadAttention", 1, "embed_dim")
  options.value(H, { type = "integer", min = 1 }, "nn.MultiheadAttention", 2, "num_heads")
  if E % H ~= 0 then argerror("nn.MultiheadAttention", 2, "embed_dim (%d) must be divisible by num_heads (%d)", E, H) end
  local o = MHA:check(opts, 3)
  self.embed_dim, self.num_heads, self.head_dim = E, H, E // H
  self.kdim, self.vdim = o.kdim or E, o.vdim or E
  self.dropout, self.batch_first = o.dropout, o.batch_first
  self._qkv_same = self.kdim == E and self.vdim == E
  local p = module.placement(o)
  if self._qkv_same then
    self:register_parameter("in_proj_weight", init.glorot_uniform(E, 3 * E, { 3 * E, E }, p))
  else       -- PyTorch's xavier_uniform_ of each
    self:register_parameter("q_proj_weight", init.glorot_uniform(E, E, { E, E }, p))
    self:register_parameter("k_proj_weight", init.glorot_uniform(self.kdim, E, { E, self.kdim }, p))
    self:register_parameter("v_proj_weight", init.glorot_uniform(self.vdim, E, { E, self.vdim }, p))
  end
  if o.bias then self:register_parameter("in_proj_bias", gpu.zeros({ 3 * E }, p)) end
  self:add_module("out_proj", Lay.Linear(E, E, { bias = o.bias, dtype = o.dtype, device = o.device }))
  self.out_proj = self._modules.out_proj
  if o.bias then gpu.no_grad(function() self.out_proj.bias:fill_(0) end) end
  if o.add_bias_kv then
    self:register_parameter("bias_k", gpu.random.normal(0, math.sqrt(2 / (1 + E)), { 1, 1, E }, p))
    self:register_parameter("bias_v", gpu.random.normal(0, math.sqrt(2 / (1 + E)), { 1, 1, E }, p))
  end
end
function MultiheadAttention:repr()
  return ("MultiheadAttention(%d, %d)"):format(self.embed_dim, self.num_heads)
end

local MHA_CALL = options.declare("MultiheadAttention:forward", {
  key_padding_mask = { type = "array" }, attn_mask = { type = "array" },
  need_weights = { type = "boolean", default = true },
  average_attn_weights = { type = "boolean", default = true },
  is_causal = { type = "boolean", default = false },
}, { example = "local x = gpu.ones(3, 2, 4); gpu.nn.MultiheadAttention(4, 2)(x, x, x, %s)" })

-- the projection of rows i..j of the packed weight and bias (1-based rows)
local function proj(self, x, which)
  local E = self.embed_dim
  local w, b
  if self._qkv_same then
    w = self.in_proj_weight[{ { (which - 1) * E + 1, which * E }, ":" }]
  else
    w = ({ self.q_proj_weight, self.k_proj_weight, self.v_proj_weight })[which]
  end
  if self.in_proj_bias then b = self.in_proj_bias[{ { (which - 1) * E + 1, which * E } }] end
  return gpu.fused.linear(x, w, b)
end

-- A PyTorch MHA mask (bool: true = masked out) as an additive float mask (0 / -inf).
local function additive(m, dtype)
  if m.dtype == "bool" then return gpu.where(m, -math.huge, 0):astype(dtype) end
  return m:astype(dtype)
end

-- m(query, key, value [, {key_padding_mask, attn_mask, need_weights = true,
-- average_attn_weights = true, is_causal}]) -> output, weights (nil unless need_weights).
-- Shapes (L, N, E) or with batch_first (N, L, E), or unbatched (L, E). Masks as PyTorch's
-- MultiheadAttention: a bool entry true is masked out (the opposite of
-- scaled_dot_product_attention's), a float one is added; attn_mask (L, S) or (N*H, L, S),
-- key_padding_mask (N, S) or (S).
function MultiheadAttention:forward(query, key, value, opts)
  local fname = "nn.MultiheadAttention"
  check_array(query, fname, 1, "query"); check_array(key, fname, 2, "key"); check_array(value, fname, 3, "value")
  local o = MHA_CALL:check(opts, 4, fname)
  local E, H, hd = self.embed_dim, self.num_heads, self.head_dim
  local batched = query.ndim == 3
  if not batched and query.ndim ~= 2 then
    raise("%s: query must be (L, N, E), (N, L, E) with batch_first, or unbatched (L, E), got %s", fname,
      shape_str(query.shape))
  end
  if key.ndim ~= query.ndim or value.ndim ~= query.ndim then
    raise("%s: query %s, key %s and value %s must have the same number of axes", fname, shape_str(query.shape),
      shape_str(key.shape), shape_str(value.shape))
  end
  -- to (N, L, E)
  local q, k, v = query, key, value
  if not batched then q, k, v = q:unsqueeze(1), k:unsqueeze(1), v:unsqueeze(1)
  elseif not self.batch_first then q, k, v = q:swapaxes(1, 2), k:swapaxes(1, 2), v:swapaxes(1, 2) end
  local n, L, S = q.shape[1], q.shape[2], k.shape[2]
  for i, c in ipairs { { q, E, "query" }, { k, self.kdim, "key" }, { v, self.vdim, "value" } } do
    if c[1].shape[3] ~= c[2] then
      raise("%s: %s must have %d features, got shape %s", fname, c[3], c[2], shape_str(({ query, key, value })[i].shape))
    end
  end
  if k.shape[1] ~= n or v.shape[1] ~= n or v.shape[2] ~= S then
    raise("%s: query %s, key %s and value %s do not agree in batch and length", fname, shape_str(query.shape),
      shape_str(key.shape), shape_str(value.shape))
  end
  q, k, v = proj(self, q, 1), proj(self, k, 2), proj(self, v, 3)
  local am, kpm = o.attn_mask, o.key_padding_mask
  -- is_causal alone stays a flag, so that sdpa can hand it to the fused op (no mask array:
  -- forward and backward without (L, S) scores); with other masks or bias_k's extra key it
  -- becomes one more mask
  local causal = false
  if o.is_causal and am == nil then
    if kpm == nil and not self.bias_k then causal = true
    else am = causal_rows(0, L, S, q.device):logical_not() end
  end
  if self.bias_k then
    k = gpu.concatenate({ k, self.bias_k:expand(n, 1, E) }, 2)
    v = gpu.concatenate({ v, self.bias_v:expand(n, 1, E) }, 2)
    S = S + 1
    local function pad(m, lead)
      if m == nil then return nil end
      local s = m.shape
      s[#s] = 1
      return gpu.concatenate({ m, gpu.zeros(s, { dtype = m.dtype, device = m.device }) }, m.ndim)
    end
    am, kpm = pad(am), pad(kpm)
  end
  -- one additive mask (N or 1, H or 1, L, S)
  local mask
  if am ~= nil then
    if am.ndim == 2 and am.shape[1] == L and am.shape[2] == S then mask = additive(am, q.dtype):reshape(1, 1, L, S)
    elseif am.ndim == 3 and am.shape[1] == n * H and am.shape[2] == L and am.shape[3] == S then
      mask = additive(am, q.dtype):reshape(n, H, L, S)
    else
      raise("%s: attn_mask must be (%d, %d) or (%d, %d, %d), got %s", fname, L, S, n * H, L, S, shape_str(am.shape))
    end
  end
  if kpm ~= nil then
    local want = batched and { n, S } or { S }
    if shape_str(kpm.shape) ~= shape_str(want) then
      raise("%s: key_padding_mask must be %s, got %s", fname, shape_str(want), shape_str(kpm.shape))
    end
    local km = additive(kpm, q.dtype):reshape(n, 1, 1, S)
    mask = mask and mask + km or km
  end
  local heads = function(x, len) return x:reshape(n, len, H, hd):swapaxes(2, 3) end      -- (N, H, len, hd)
  local p = self.training and self.dropout or 0
  local out, w = sdpa(heads(q, L), heads(k, S), heads(v, S), mask, causal, nil, p, o.need_weights)
  out = self.out_proj(out:swapaxes(2, 3):reshape(n, L, E))
  if not batched then out = out:reshape(L, E)
  elseif not self.batch_first then out = out:swapaxes(1, 2) end
  if not o.need_weights then return out, nil end
  if o.average_attn_weights then w = w:mean(2) end
  if not batched then w = w:reshape(table.unpack(w.shape, 2)) end
  return out, w
end
A.MultiheadAttention = MultiheadAttention

return A
