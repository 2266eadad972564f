-- transformer_full_spec.lua — nn.Transformer against torch 2 (spec/fixtures/transformer_full.py):
-- torch's state_dict loaded by name, the output with a causal target mask and key padding
-- masks, the gradients in src and tgt (float64); batch_first, norm_first and gelu;
-- generate_square_subsequent_mask; PyTorch's initialisation; misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local ag = require "gpu.autograd"
local X = require "spec.fixtures.transformer_full"

local function a64(t) return gpu.array(t, { dtype = "float64" }) end

describe("nn.Transformer against torch", function()
  for _, c in ipairs(X.cases) do
    it(c.name .. ": output and gradients with masks", function()
      local m = nn.Transformer(8, { nhead = 2, num_encoder_layers = 2, num_decoder_layers = 1, dim_feedforward = 12,
        dropout = 0, batch_first = c.batch_first, norm_first = c.norm_first, activation = c.activation, dtype = "float64" })
      local sd = {}
      for k, v in pairs(c.state) do sd[k] = a64(v) end
      m:load_state_dict(sd)                          -- every name torch has, and no other
      local src, tgt = a64(c.src):requires_grad(), a64(c.tgt):requires_grad()
      local kpm = gpu.array(c.kpm, { dtype = "bool" })
      local y = m(src, tgt, { tgt_mask = nn.Transformer.generate_square_subsequent_mask(4, { dtype = "float64" }),
        src_key_padding_mask = kpm, memory_key_padding_mask = kpm })
      assert(h.close(y, a64(c.y), 1e-10))
      local g = ag.grad((y * a64(c.r)):sum(), { src, tgt })
      assert(h.close(g[1], a64(c.gsrc), 1e-9))
      assert(h.close(g[2], a64(c.gtgt), 1e-9))
    end)
  end

  it("generate_square_subsequent_mask is torch's; a causal mask as a flag gives the same", function()
    assert(h.close(nn.Transformer.generate_square_subsequent_mask(4), gpu.array(X.mask4), 0))
    assert.same({ 0, 0 }, nn.Transformer.generate_square_subsequent_mask(0).shape)
    gpu.random.seed(2)
    local m = nn.Transformer(8, { nhead = 2, num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 8, dropout = 0 })
    local src, tgt = gpu.random.randn(5, 2, 8), gpu.random.randn(4, 2, 8)
    local a = m(src, tgt, { tgt_mask = nn.Transformer.generate_square_subsequent_mask(4) })
    local b = m(src, tgt, { tgt_mask = nn.Transformer.generate_square_subsequent_mask(4), tgt_is_causal = true })
    assert(h.close(a, b, 1e-6))
    -- PyTorch's initialisation: Xavier-uniform on every matrix (|w| <= sqrt(6 / (fan_in + fan_out)))
    local w = m.encoder.layers[1].linear1.weight
    assert(w:abs():max():item() <= math.sqrt(6 / (8 + 8)) + 1e-6)
    -- unbatched (L, E) inputs
    assert.same({ 4, 8 }, m(src[{ ":", 1 }], tgt[{ ":", 1 }]).shape)
  end)

  it("custom encoder and decoder, and misuse", function()
    local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8 }), 1)
    local m = nn.Transformer(4, { nhead = 2, custom_encoder = enc, num_decoder_layers = 1, dim_feedforward = 8 })
    assert.equal(enc, m.encoder)
    h.fails({ "nn.Transformer", "d_model" }, function() nn.Transformer(0) end)
    h.fails({ "nn.Transformer", "unknown option" }, function() nn.Transformer(4, { nheads = 2 }) end)
    h.fails({ "nn.Transformer", "custom_encoder", "module" }, function() nn.Transformer(4, { nhead = 2, custom_encoder = {} }) end)
    h.fails({ "nn.Transformer", "both be batched" }, function() m(gpu.ones(3, 2, 4), gpu.ones(2, 4)) end)
    h.fails({ "nn.Transformer", "batches of 2 and 3" }, function() m(gpu.ones(3, 2, 4), gpu.ones(2, 3, 4)) end)
    h.fails({ "nn.Transformer", "4 features" }, function() m(gpu.ones(3, 2, 5), gpu.ones(2, 2, 5)) end)
    h.fails({ "nn.Transformer", "src" }, function() m("x", gpu.ones(2, 2, 4)) end)
    h.fails({ "generate_square_subsequent_mask", "sz" }, function() nn.Transformer.generate_square_subsequent_mask(-1) end)
  end)
end)
