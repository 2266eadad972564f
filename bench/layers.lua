-- bench/layers.lua — layers on the char-LM transformer's sizes (width 128, 4
-- heads, context 128, batch 32): LayerNorm, causal attention and one pre-norm GELU encoder
-- layer, forward + backward, float32. Twin: bench/layers.py (PyTorch eager, 2 threads).
package.path = "bench/lib/?.lua;" .. package.path
local B = require "bench"
local gpu = require "gpu"
local nn = gpu.nn
local opts = { device = B.device }

gpu.random.seed(1)
local x = gpu.random.normal(0, 1, { 32 * 128, 128 }, opts):requires_grad()
local ln = nn.LayerNorm(128, opts)
local g = gpu.random.normal(0, 1, { 32 * 128, 128 }, opts)
B.case("LayerNorm (4096, 128): forward + backward", function(n)
  for _ = 1, n do
    x.grad = nil; ln:zero_grad()
    (ln(x) * g):sum():backward()
  end
end)

-- q, k, v (with gradients) and an output gradient of one shape, and the causal attention
-- case over them
local function attention_case(shape)
  local q = gpu.random.normal(0, 1, shape, opts):requires_grad()
  local k = gpu.random.normal(0, 1, shape, opts):requires_grad()
  local v = gpu.random.normal(0, 1, shape, opts):requires_grad()
  local go = gpu.random.normal(0, 1, shape, opts)
  B.case(("attention (%s) causal: forward + backward"):format(table.concat(shape, ", ")), function(n)
    for _ = 1, n do
      q.grad, k.grad, v.grad = nil, nil, nil
      (nn.scaled_dot_product_attention(q, k, v, { is_causal = true }) * go):sum():backward()
    end
  end)
  return q, k, v, go
end

attention_case { 32, 4, 128, 32 }

-- a longer sequence: FlashAttention's forward and its tiled backward (gpu.fused.attention_backward);
-- the second case runs the backward the rule ran before it, the (L, S) probabilities in array
-- ops from the saved logsumexp (a gpulua-only row, for the before/after figure)
local ql, kl, vl, gl = attention_case { 8, 4, 512, 64 }
local keep = gpu.tril(gpu.ones({ 512, 512 }, { dtype = "bool", device = B.device }))
B.case("attention (8, 4, 512, 64) causal: forward + array-op backward (before the fused backward)", function(n)
  local q, k, v = ql:detach(), kl:detach(), vl:detach()
  for _ = 1, n do
    local out, lse = gpu.fused.attention(q, k, v, { is_causal = true })
    local s = gpu.where(keep, q:matmul(k:swapaxes(-1, -2)) * 0.125, -math.huge)
    local p = (s - lse:unsqueeze(-1)):exp()
    local gp = gl:matmul(v:swapaxes(-1, -2))
    local gs = p * (gp - (gp * p):sum(-1, { keepdims = true }))
    local _ = { out, gs:matmul(k) * 0.125, gs:swapaxes(-1, -2):matmul(q) * 0.125, p:swapaxes(-1, -2):matmul(gl) }
  end
end)

local layer = nn.TransformerEncoderLayer(128, 4, { dim_feedforward = 512, dropout = 0, activation = "gelu",
  norm_first = true, batch_first = true, device = B.device })
local xs = gpu.random.normal(0, 1, { 32, 128, 128 }, opts):requires_grad()
local gs = gpu.random.normal(0, 1, { 32, 128, 128 }, opts)
B.case("encoder layer E=128 h=4 ff=512, (32, 128): forward + backward", function(n)
  for _ = 1, n do
    xs.grad = nil; layer:zero_grad()
    (layer(xs, { is_causal = true }) * gs):sum():backward()
  end
end)
