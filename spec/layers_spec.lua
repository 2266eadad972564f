-- spec/layers_spec.lua — layers (lua/gpu/nn/activations.lua, norm.lua,
-- attention.lua, transformer.lua): outputs and gradients against PyTorch 1.13 on the same
-- inputs and weights (spec/fixtures/layers/, made by tools/gen_layers_fixtures.py; the
-- weights load through load_state_dict under PyTorch's names), float64 gradchecks,
-- float32 runs, containers, hooks, weight tying and the errors of misuse. Runs on every
-- device of h.devices(); the cuda parity block is pending without a GPU.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local ag = require "gpu.autograd"
local fx = dofile("spec/fixtures/layers/torch.lua")

local function A(t, dev) return gpu.array(t, { dtype = "float64", device = dev }) end
local function B(t, dev) return A(t, dev):gt(0.5) end      -- a fixture's 0/1 table as a bool array
local function sd_of(t, dev)
  local out = {}
  for k, v in pairs(t) do out[k] = A(v, dev) end
  return out
end
-- y and the gradients of sum(y * gy) with respect to the listed arrays
local function backward(y, gy, ...)
  (y * gy):sum():backward()
  local out = {}
  for i, x in ipairs { ... } do out[i] = x.grad end
  return table.unpack(out)
end
-- gradcheck of fn, then of its first derivative in the first input (create_graph): the
-- layers are compositions of ops whose rules are written in ops, so both must hold
local function check(fn, inputs, opts)
  local ok, msg = ag.gradcheck(fn, inputs, opts)
  assert(ok, msg)
  local rest = { table.unpack(inputs, 2) }
  local w = gpu.random.Generator(3):uniform(0.5, 1.5, fn(table.unpack(inputs)).shape,
    { dtype = "float64", device = inputs[1].device })
  local function first(xx)
    return ag.enable_grad(function()
      return ag.grad((fn(xx, table.unpack(rest)) * w):sum(), xx, { create_graph = true })
    end)
  end
  ok, msg = ag.gradcheck(first, { inputs[1] }, opts)
  assert(ok, "second derivative: " .. tostring(msg))
end
local function r(dev, seed, ...)
  return gpu.random.Generator(seed):uniform(-1, 1, { ... }, { dtype = "float64", device = dev })
end

for _, dev in ipairs(h.devices()) do
  local o64 = { dtype = "float64", device = dev }
  describe("layers on " .. dev, function()

    describe("activations", function()
      local fa = fx.activations
      local forms = {
        silu = function(x) return nn.SiLU()(x) end, elu = function(x) return nn.ELU(0.7)(x) end,
        selu = function(x) return nn.SELU()(x) end, mish = function(x) return nn.Mish()(x) end,
        hardswish = function(x) return nn.Hardswish()(x) end, hardsigmoid = function(x) return nn.Hardsigmoid()(x) end,
        hardtanh = function(x) return nn.Hardtanh(-2.0, 1.5)(x) end, logsigmoid = function(x) return nn.LogSigmoid()(x) end,
        softsign = function(x) return nn.Softsign()(x) end, tanhshrink = function(x) return nn.Tanhshrink()(x) end,
        relu6 = function(x) return nn.ReLU6()(x) end, celu = function(x) return nn.CELU({ alpha = 1.3 })(x) end,
        gelu_tanh = function(x) return nn.GELU({ approximate = "tanh" })(x) end,
        prelu = function(x)
          local m = nn.PReLU(5, { dtype = "float64", device = dev })
          m:load_state_dict({ weight = A({ 0.1, -0.2, 0.3, 0.4, 0.5 }, dev) })
          return m(x)
        end,
      }
      -- PyTorch's CPU backward of these two uses float32 constants (1.0f / 6.0f, ...) even in
      -- float64: its gradients are that far from the exact ones
      local grad_tol = { hardsigmoid = 1e-7, celu = 1e-7 }
      for name, f in pairs(forms) do
        it(name .. " matches PyTorch's values and gradients", function()
          local x = A(fa.x, dev):requires_grad()
          local y = f(x)
          h.assert_close(y, A(fa[name].y), 1e-12)
          h.assert_close(backward(y, A(fa[name].gy, dev), x), A(fa[name].gx), grad_tol[name] or 1e-12)
        end)
      end
      it("functional forms with PyTorch's positional options, float32", function()
        local x = gpu.array(fa.x, { device = dev })
        h.assert_close(nn.F.elu(x, 0.7), A(fa.elu.y), 1e-6)
        h.assert_close(nn.functional.hardtanh(x, -2.0, 1.5), A(fa.hardtanh.y), 1e-6)
        h.assert_close(nn.silu(x), A(fa.silu.y), 1e-6)
        assert.equal("float32", nn.mish(x).dtype)
      end)
      it("gradcheck in float64, including second derivatives", function()
        for _, f in ipairs { nn.silu, nn.selu, nn.mish, nn.logsigmoid, nn.softsign, nn.tanhshrink, nn.elu } do
          check(f, { r(dev, 3, 4, 3) })
        end
      end)
      it("refuse misuse by name", function()
        h.fails({ "nn.Hardtanh", "min_val" }, nn.Hardtanh, 2, 1)
        h.fails({ "nn.elu", "unknown option 'alpah'" }, nn.elu, gpu.ones(2), { alpah = 1 })
        h.fails({ "nn.prelu", "5 values", "3 channels" }, nn.prelu, gpu.ones(2, 3), gpu.ones(5))
        h.fails({ "nn.SiLU", "gpu.array expected" }, nn.SiLU(), 3)
      end)
    end)

    describe("norms", function()
      local fn = fx.norms
      it("LayerNorm over the two trailing axes matches PyTorch (values, input and parameter gradients)", function()
        local f = fn.layer_norm
        local m = nn.LayerNorm({ 3, 4 }, { eps = 1e-3, dtype = "float64", device = dev })
        m:load_state_dict({ weight = A(f.w, dev), bias = A(f.b, dev) })
        local x = A(f.x, dev):requires_grad()
        local y = m(x)
        h.assert_close(y, A(f.y), 1e-12)
        local gx, gw, gb = backward(y, A(f.gy, dev), x, m.weight, m.bias)
        h.assert_close(gx, A(f.gx), 1e-10); h.assert_close(gw, A(f.gw), 1e-10); h.assert_close(gb, A(f.gb), 1e-10)
        h.assert_close(nn.layer_norm(A(f.x, dev), { 3, 4 }, A(f.w, dev), A(f.b, dev), 1e-3), A(f.y), 1e-12)
      end)
      it("RMSNorm (eps: the dtype's machine epsilon) matches PyTorch's formula", function()
        local f = fn.rms_norm
        local m = nn.RMSNorm(4, { dtype = "float64", device = dev })
        m:load_state_dict({ weight = A(f.w, dev) })
        local x = A(fn.layer_norm.x, dev):requires_grad()
        local y = m(x)
        h.assert_close(y, A(f.y), 1e-12)
        local gx, gw = backward(y, A(f.gy, dev), x, m.weight)
        h.assert_close(gx, A(f.gx), 1e-10); h.assert_close(gw, A(f.gw), 1e-10)
      end)
      it("GroupNorm matches PyTorch", function()
        local f = fn.group_norm
        local m = nn.GroupNorm(3, 6, { dtype = "float64", device = dev })
        m:load_state_dict({ weight = A(f.w, dev), bias = A(f.b, dev) })
        local x = A(f.x, dev):requires_grad()
        local y = m(x)
        h.assert_close(y, A(f.y), 1e-12)
        local gx, gw, gb = backward(y, A(f.gy, dev), x, m.weight, m.bias)
        h.assert_close(gx, A(f.gx), 1e-10); h.assert_close(gw, A(f.gw), 1e-10); h.assert_close(gb, A(f.gb), 1e-10)
      end)
      it("gradcheck of the functional forms (first and second derivatives)", function()
        check(function(x, w, b) return nn.layer_norm(x, 3, w, b) end, { r(dev, 1, 2, 3), r(dev, 2, 3), r(dev, 3, 3) })
        check(function(x, w) return nn.rms_norm(x, 3, w, 1e-5) end, { r(dev, 4, 2, 3), r(dev, 5, 3) })
        check(function(x, w, b) return nn.group_norm(x, 2, w, b) end, { r(dev, 6, 2, 4, 2), r(dev, 7, 4), r(dev, 8, 4) })
      end)
      it("float32 input stays float32; a float16 input is normalised in float32 and cast back", function()
        local x = gpu.random.Generator(1):normal(0, 1, { 4, 8 }, { device = dev })
        local y = nn.LayerNorm(8, { device = dev })(x)
        assert.equal("float32", y.dtype)
        h.assert_close(y:mean(-1), gpu.zeros(4), 1e-5)
        local yh = nn.layer_norm(x:astype("float16"), 8)
        assert.equal("float16", yh.dtype)
        h.assert_close(yh:astype("float32"), y, 2e-3)
      end)
      it("gpu.fused.layer_norm: the fused op (one pass per row) agrees with the composite and refuses misuse", function()
        local x = r(dev, 11, 5, 7)
        local w, b = r(dev, 12, 7), r(dev, 13, 7)
        local y, mean, rstd = gpu.fused.layer_norm(x, w, b, { eps = 1e-4 })
        assert.same({ 5 }, mean.shape); assert.same({ 5 }, rstd.shape)
        h.assert_close(mean, x:mean(-1), 1e-12)
        h.assert_close(y, ((x - x:mean(-1, { keepdims = true })) / (x:var(-1, { keepdims = true }) + 1e-4):sqrt()) * w + b,
          1e-12)
        local g = r(dev, 14, 5, 7)
        local gx, gw, gb = gpu.fused.layer_norm_backward(g, x, mean, rstd, w)
        h.assert_close(gb, g:sum(1), 1e-12)
        assert.same({ 5, 7 }, gx.shape); assert.same({ 7 }, gw.shape)
        h.fails({ "layer_norm", "weight must be (7)" }, gpu.fused.layer_norm, x, gpu.ones({ 6 }, o64))
        h.fails({ "layer_norm", "int32" }, gpu.fused.layer_norm, gpu.ones({ 2, 3 }, { dtype = "int32", device = dev }))
        h.fails({ "layer_norm", "eps" }, gpu.fused.layer_norm, x, nil, nil, { eps = -1 })
        h.fails({ "layer_norm_backward", "mean must have shape (5,)" }, gpu.fused.layer_norm_backward, g, x,
          gpu.zeros({ 4 }, o64), rstd)
        -- a view (not contiguous) and an empty batch
        h.assert_close((gpu.fused.layer_norm(x.T:contiguous().T)), (gpu.fused.layer_norm(x)), 1e-12)
        assert.same({ 0, 7 }, (gpu.fused.layer_norm(gpu.zeros({ 0, 7 }, o64)).shape))
      end)
      it("parameters and errors as PyTorch", function()
        local m = nn.LayerNorm(5, { elementwise_affine = false })
        assert.equal(0, #m:parameters())
        assert.equal(1, #nn.LayerNorm(5, { bias = false }):parameters())
        h.fails({ "nn.LayerNorm", "trailing shape is (4)", "(2, 3)" }, nn.LayerNorm(4), gpu.ones(2, 3))
        h.fails({ "nn.GroupNorm", "divisible" }, nn.GroupNorm, 4, 6)
        h.fails({ "nn.GroupNorm", "(N, 6, ...)" }, nn.GroupNorm(3, 6), gpu.ones(2, 4))
        h.fails({ "nn.layer_norm", "weight must have shape (3)" }, nn.layer_norm, gpu.ones(2, 3), 3, gpu.ones(4))
        h.fails({ "nn.LayerNorm", "normalized_shape" }, nn.LayerNorm, { 0 })
      end)
    end)

    describe("scaled_dot_product_attention", function()
      local fa = fx.attention
      local cases = {
        plain = function() return nil end,
        bool_mask = function() return { attn_mask = B(fa.mask_bool, dev) } end,
        float_mask = function() return { attn_mask = A(fa.mask_float, dev) } end,
        scale = function() return { scale = 0.3 } end,
      }
      for name, opts in pairs(cases) do
        it(name .. ": values and gradients match PyTorch", function()
          local q, k, v = A(fa.q, dev):requires_grad(), A(fa.k, dev):requires_grad(), A(fa.v, dev):requires_grad()
          local y = nn.scaled_dot_product_attention(q, k, v, opts())
          local f = fa[name]
          h.assert_close(y, A(f.y), 1e-12)
          local gq, gk, gv = backward(y, A(f.gy, dev), q, k, v)
          h.assert_close(gq, A(f.gq), 1e-10); h.assert_close(gk, A(f.gk), 1e-10); h.assert_close(gv, A(f.gv), 1e-10)
        end)
      end
      it("is_causal matches PyTorch", function()
        local f = fa.causal
        local q, k, v = A(f.q, dev):requires_grad(), A(f.k, dev):requires_grad(), A(f.v, dev):requires_grad()
        local y = nn.F.scaled_dot_product_attention(q, k, v, { is_causal = true })
        h.assert_close(y, A(f.y), 1e-12)
        local gq, gk, gv = backward(y, A(f.gy, dev), q, k, v)
        h.assert_close(gq, A(f.gq), 1e-10); h.assert_close(gk, A(f.gk), 1e-10); h.assert_close(gv, A(f.gv), 1e-10)
      end)
      it("long sequences go in tiles of query rows and agree with one pass", function()
        local g = gpu.random.Generator(5)
        local q = g:normal(0, 1, { 1, 600, 8 }, o64)
        local k = g:normal(0, 1, { 1, 600, 8 }, o64)
        local v = g:normal(0, 1, { 1, 600, 8 }, o64)
        local y = nn.scaled_dot_product_attention(q, k, v, { is_causal = true })
        local s = q:matmul(k:swapaxes(-1, -2)) / math.sqrt(8)
        local causal = gpu.tril(gpu.ones({ 600, 600 }, o64)):gt(0)
        s = gpu.where(causal, s, -math.huge)
        local want = nn.softmax(s, -1):matmul(v)
        h.assert_close(y, want, 1e-10)
      end)
      it("gpu.fused.attention (online softmax, no score matrix): values, logsumexp and gradients", function()
        for _, causal in ipairs { false, true } do
          local q, k, v = r(dev, 21, 2, 7, 5), r(dev, 22, 2, 9, 5), r(dev, 23, 2, 9, 3)
          local out, lse = gpu.fused.attention(q, k, v, { is_causal = causal, scale = 0.7 })
          local s = q:matmul(k:swapaxes(-1, -2)) * 0.7
          if causal then s = gpu.where(gpu.tril(gpu.ones({ 7, 9 }, o64)):gt(0), s, -math.huge) end
          h.assert_close(out, nn.softmax(s, -1):matmul(v), 1e-12)
          h.assert_close(lse, s:logsumexp(-1), 1e-12)
          check(function(qq, kk, vv) return (gpu.fused.attention(qq, kk, vv, { is_causal = causal })) end,
            { r(dev, 24, 2, 4, 3), r(dev, 25, 2, 5, 3), r(dev, 26, 2, 5, 2) })
        end
        local y32 = gpu.fused.attention(gpu.ones({ 1, 3, 4 }, { device = dev }), gpu.ones({ 1, 3, 4 }, { device = dev }),
          gpu.ones({ 1, 3, 2 }, { device = dev }))
        assert.equal("float32", y32.dtype)
        h.fails({ "attention", "same leading axes" }, gpu.fused.attention, r(dev, 1, 2, 3, 4), r(dev, 1, 3, 3, 4),
          r(dev, 1, 3, 3, 4))
        h.fails({ "attention", "int64" }, gpu.fused.attention, gpu.ones({ 2, 2 }, { dtype = "int64", device = dev }),
          gpu.ones({ 2, 2 }, { dtype = "int64", device = dev }), gpu.ones({ 2, 2 }, { dtype = "int64", device = dev }))
      end)
      it("long sequences through the fused op train as the composite does (gradients agree)", function()
        local g = gpu.random.Generator(9)
        local q = g:normal(0, 1, { 1, 300, 4 }, o64):requires_grad()
        local k = g:normal(0, 1, { 1, 300, 4 }, o64):requires_grad()
        local v = g:normal(0, 1, { 1, 300, 4 }, o64):requires_grad()
        local gy = g:normal(0, 1, { 1, 300, 4 }, o64)
        local gq, gk, gv = backward(nn.scaled_dot_product_attention(q, k, v, { is_causal = true }), gy, q, k, v)
        local q2, k2, v2 = q:detach():requires_grad(), k:detach():requires_grad(), v:detach():requires_grad()
        local keep = gpu.tril(gpu.ones({ 300, 300 }, o64)):gt(0)
        local s = gpu.where(keep, q2:matmul(k2:swapaxes(-1, -2)) * 0.5, -math.huge)
        local wq, wk, wv = backward(nn.softmax(s, -1):matmul(v2), gy, q2, k2, v2)
        h.assert_close(gq, wq, 1e-10); h.assert_close(gk, wk, 1e-10); h.assert_close(gv, wv, 1e-10)
      end)
      it("gradcheck (first and second derivatives)", function()
        check(function(q, k, v) return nn.scaled_dot_product_attention(q, k, v, { is_causal = true }) end,
          { r(dev, 1, 2, 3, 4), r(dev, 2, 2, 3, 4), r(dev, 3, 2, 3, 2) })
      end)
      it("refuses misuse by name", function()
        local fname = "nn.scaled_dot_product_attention"
        h.fails({ fname, "last axis" }, nn.scaled_dot_product_attention, gpu.ones(2, 3), gpu.ones(4, 2), gpu.ones(4, 5))
        h.fails({ fname, "differ in length" }, nn.scaled_dot_product_attention, gpu.ones(2, 3), gpu.ones(4, 3),
          gpu.ones(5, 5))
        h.fails({ fname, "attn_mask of shape (3)" }, nn.scaled_dot_product_attention, gpu.ones(2, 3), gpu.ones(4, 3),
          gpu.ones(4, 5), { attn_mask = gpu.ones(3) })
        h.fails({ fname, "not both" }, nn.scaled_dot_product_attention, gpu.ones(2, 3), gpu.ones(2, 3), gpu.ones(2, 3),
          { attn_mask = gpu.ones(2, 2), is_causal = true })
        h.fails({ fname, "dropout_p" }, nn.scaled_dot_product_attention, gpu.ones(2, 3), gpu.ones(2, 3), gpu.ones(2, 3),
          { dropout_p = 1 })
      end)
    end)

    describe("MultiheadAttention", function()
      local fm = fx.mha
      local function load(f, E, H, opts)
        opts = opts or {}
        opts.dtype, opts.device = "float64", dev
        local m = nn.MultiheadAttention(E, H, opts)
        m:load_state_dict(sd_of(f.sd, dev))
        return m
      end
      it("loads PyTorch's state_dict and matches its output, weights and gradients", function()
        local f = fm.mha
        local m = load(f, 8, 2)
        local q, kv = A(f.q, dev):requires_grad(), A(f.kv, dev):requires_grad()
        local y, w = m(q, kv, kv, { key_padding_mask = B(f.kpm, dev), attn_mask = A(f.am, dev) })
        h.assert_close(y, A(f.y), 1e-12)
        h.assert_close(w, A(f.w), 1e-12)
        local gq, gkv, gw = backward(y, A(f.gy, dev), q, kv, m.in_proj_weight)
        h.assert_close(gq, A(f.gq), 1e-10); h.assert_close(gkv, A(f.gkv), 1e-10); h.assert_close(gw, A(f.gw), 1e-10)
        local _, wh = m(A(f.q, dev), A(f.kv, dev), A(f.kv, dev), { average_attn_weights = false })
        h.assert_close(wh, A(fm.mha_heads.w), 1e-12)
        local causal = gpu.triu(gpu.ones({ 5, 5 }, o64), 1):gt(0)
        h.assert_close((m(A(f.q, dev), A(f.q, dev), A(f.q, dev), { attn_mask = causal })), A(fm.mha_causal.y), 1e-12)
        h.assert_close((m(A(f.q, dev), A(f.q, dev), A(f.q, dev), { is_causal = true })), A(fm.mha_causal.y), 1e-12)
        local yu, wu = m(A(f.q, dev)[{ ":", 1, ":" }], A(f.kv, dev)[{ ":", 1, ":" }], A(f.kv, dev)[{ ":", 1, ":" }])
        h.assert_close(yu, A(fm.mha_unbatched.y), 1e-12)
        h.assert_close(wu, A(fm.mha_unbatched.w), 1e-12)
        local yn, wn = m(A(f.q, dev), A(f.kv, dev), A(f.kv, dev), { need_weights = false })
        assert.is_nil(wn)
        assert.same({ 5, 3, 8 }, yn.shape)
      end)
      it("kdim/vdim (separate projections), add_bias_kv and batch_first as PyTorch", function()
        local f = fm.mha_kv
        local m = load(f, 8, 4, { kdim = 5, vdim = 3, add_bias_kv = true, batch_first = true })
        local names = {}
        for n in m:named_parameters() do names[#names + 1] = n end
        table.sort(names)
        assert.same({ "bias_k", "bias_v", "in_proj_bias", "k_proj_weight", "out_proj.bias", "out_proj.weight",
                      "q_proj_weight", "v_proj_weight" }, names)
        local y, w = m(A(f.q, dev), A(f.k, dev), A(f.v, dev))
        h.assert_close(y, A(f.y), 1e-12)
        h.assert_close(w, A(f.w), 1e-12)
      end)
      it("refuses misuse by name", function()
        h.fails({ "nn.MultiheadAttention", "divisible" }, nn.MultiheadAttention, 6, 4)
        local m = nn.MultiheadAttention(4, 2)
        h.fails({ "nn.MultiheadAttention", "query must have 4 features" }, m, gpu.ones(3, 2, 5), gpu.ones(3, 2, 4),
          gpu.ones(3, 2, 4))
        h.fails({ "nn.MultiheadAttention", "key_padding_mask must be (2, 3)" }, m, gpu.ones(3, 2, 4), gpu.ones(3, 2, 4),
          gpu.ones(3, 2, 4), { key_padding_mask = gpu.ones(3, 2):gt(0) })
        h.fails({ "nn.MultiheadAttention", "unknown option 'need_weight'" }, m, gpu.ones(3, 2, 4), gpu.ones(3, 2, 4),
          gpu.ones(3, 2, 4), { need_weight = false })
      end)
    end)

    describe("Transformer layers", function()
      local ft = fx.transformer
      for _, case in ipairs { { "enc_post", "relu", false }, { "enc_pre", "gelu", true } } do
        it("TransformerEncoderLayer " .. case[2] .. (case[3] and " norm_first" or "") .. " matches PyTorch", function()
          local f = ft[case[1]]
          local m = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0, batch_first = true,
            activation = case[2], norm_first = case[3], dtype = "float64", device = dev })
          m:load_state_dict(sd_of(f.sd, dev))
          local x = A(f.x, dev):requires_grad()
          local mask = gpu.triu(gpu.ones({ 5, 5 }, o64), 1):gt(0)
          local y = m(x, { src_mask = mask })
          h.assert_close(y, A(f.y), 1e-11)
          local gx, g1 = backward(y, A(f.gy, dev), x, m.linear1.weight)
          h.assert_close(gx, A(f.gx), 1e-9); h.assert_close(g1, A(f.g_linear1), 1e-9)
        end)
      end
      for _, case in ipairs { { "dec_post", "relu", false }, { "dec_pre", "gelu", true } } do
        it("TransformerDecoderLayer " .. case[2] .. (case[3] and " norm_first" or "") .. " matches PyTorch", function()
          local f = ft[case[1]]
          local m = nn.TransformerDecoderLayer(8, 2, { dim_feedforward = 16, dropout = 0, activation = case[2],
            norm_first = case[3], dtype = "float64", device = dev })
          m:load_state_dict(sd_of(f.sd, dev))
          local t, mem = A(f.t, dev):requires_grad(), A(f.mem, dev):requires_grad()
          local y = m(t, mem, { tgt_mask = gpu.triu(gpu.ones({ 4, 4 }, o64), 1):gt(0) })
          h.assert_close(y, A(f.y), 1e-11)
          local gt, gm = backward(y, A(f.gy, dev), t, mem)
          h.assert_close(gt, A(f.gt), 1e-9); h.assert_close(gm, A(f.gm), 1e-9)
        end)
      end
      it("TransformerEncoder loads a PyTorch state_dict saved as safetensors (layers.0. ... names)", function()
        local layer = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0, dtype = "float64",
          device = dev })
        local enc = nn.TransformerEncoder(layer, 2, { norm = nn.LayerNorm(8, { dtype = "float64", device = dev }) })
        enc:load_state_dict(gpu.load_safetensors("spec/fixtures/layers/encoder.safetensors"))
        -- the copies are independent of the layer they were made from and of each other
        assert.is_false(rawequal(enc.layers[1].linear1.weight, layer.linear1.weight))
        assert.is_false(h.close(enc.layers[1].linear1.weight, enc.layers[2].linear1.weight, 1e-6))
        local f = ft.encoder
        local y = enc(A(f.x, dev), { src_key_padding_mask = B(f.kpm, dev) })
        h.assert_close(y, A(f.y), 1e-11)
        assert.equal(#enc:parameters(), 2 * #layer:parameters() + 2)
      end)
      it("trains: the loss of a small encoder falls, dropout on, float32", function()
        gpu.random.seed(3)
        local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0.1,
          batch_first = true, device = dev }), 2)
        local head = nn.Linear(8, 3, { device = dev })
        local params = enc:parameters()
        for _, p in ipairs(head:parameters()) do params[#params + 1] = p end
        local opt = gpu.optim.Adam(params, { lr = 1e-2 })
        local x = gpu.random.normal(0, 1, { 4, 5, 8 }, { device = dev })
        local y = gpu.array({ 1, 2, 3, 1 }, { dtype = "int64", device = dev })
        local first, last
        for i = 1, 30 do
          local loss = nn.cross_entropy(head(enc(x, { is_causal = true }):mean(2)), y)
          opt:zero_grad(); loss:backward(); opt:step()
          if i == 1 then first = loss:item() end
          last = loss:item()
        end
        assert.is_true(last < first * 0.5, ("loss %g -> %g"):format(first, last))
      end)
      it("refuses misuse by name", function()
        h.fails({ "nn.TransformerEncoderLayer", "activation", "did you mean 'gelu'" }, nn.TransformerEncoderLayer, 4,
          2, { activation = "gelo" })
        h.fails({ "nn.TransformerEncoder", "TransformerEncoderLayer expected" }, nn.TransformerEncoder, nn.Linear(2, 2), 2)
        h.fails({ "nn.TransformerEncoderLayer", "expected an input (L, N, 4)" }, nn.TransformerEncoderLayer(4, 2),
          gpu.ones(3, 2, 5))
      end)
    end)

    describe("containers, hooks and tied weights", function()
      it("ModuleList: 1-based indexing, PyTorch's 0-based state_dict names", function()
        local l = nn.ModuleList { nn.Linear(2, 3), nn.Linear(3, 1) }
        assert.equal(2, #l)
        assert.equal(3, l[1].out_features)
        l:append(nn.ReLU())
        assert.equal(3, #l)
        local sd = l:state_dict()
        assert.is_not_nil(sd["0.weight"]); assert.is_not_nil(sd["1.bias"])
        h.fails({ "ModuleList", "not callable" }, l, gpu.ones(2))
        h.fails({ "nn.ModuleList", "element #2" }, nn.ModuleList, { nn.ReLU(), 5 })
      end)
      it("ModuleDict and Unflatten", function()
        local d = nn.ModuleDict { enc = nn.Linear(2, 3), dec = nn.Linear(3, 2) }
        assert.same({ "dec", "enc" }, d:keys())
        assert.equal(3, d.enc.out_features)
        assert.is_not_nil(d:state_dict()["enc.weight"])
        h.fails({ "ModuleDict", "a module expected" }, nn.ModuleDict, { a = 3 })
        local u = nn.Unflatten(2, { 2, -1 })
        assert.same({ 3, 2, 4, 5 }, u(gpu.ones(3, 8, 5)).shape)
        assert.same({ 3, 2, 4 }, nn.Unflatten(-1, { 2, 4 })(gpu.ones(3, 8)).shape)
        h.fails({ "nn.Unflatten", "do not make axis 2" }, nn.Unflatten(2, { 3, 3 }), gpu.ones(3, 8))
      end)
      it("forward hooks and pre-hooks run, may replace the input or output, and are removed by their handle", function()
        local m = nn.Linear(2, 2, { device = dev })
        local seen = {}
        local h1 = m:register_forward_pre_hook(function(mod, inputs)
          seen[#seen + 1] = "pre"
          return { inputs[1] * 0 }
        end)
        local h2 = m:register_forward_hook(function(mod, inputs, out)
          seen[#seen + 1] = "post"
          assert.equal(m, mod)
          return out + 1
        end)
        local y = m(gpu.ones({ 3, 2 }, { device = dev }))
        h.assert_close(y, (m.bias + 1):reshape(1, 2):expand(3, 2), 1e-6)
        assert.same({ "pre", "post" }, seen)
        h1:remove(); h2:remove()
        h.assert_close(m(gpu.zeros({ 1, 2 }, { device = dev })), m.bias:reshape(1, 2), 1e-6)
        assert.equal(2, #seen)
        h.fails({ "register_forward_hook", "must be a function" }, function() m:register_forward_hook(5) end)
      end)
      it("a tied weight is one parameter, listed once, in state_dict under both names, and stays tied by to()", function()
        local emb = nn.Embedding(5, 3)
        local out = nn.Linear(3, 5, { bias = false })
        out:register_parameter("weight", emb.weight)
        local model = nn.ModuleList { emb, out }
        assert.equal(1, #model:parameters())
        local sd = model:state_dict()
        assert.is_not_nil(sd["0.weight"]); assert.is_not_nil(sd["1.weight"])
        assert.is_true(rawequal(sd["0.weight"], sd["1.weight"]))
        model:load_state_dict(sd)
        local x = gpu.array({ 1, 2 }, { dtype = "int64" })
        local loss = out(emb(x)):sum()
        loss:backward()
        assert.is_not_nil(emb.weight.grad)
        assert.is_true(rawequal(emb.weight, out.weight))
        model:to("cpu")
        assert.is_true(rawequal(emb.weight, out.weight))
      end)
    end)
  end)
end

describe("cpu/cuda parity of the layers", function()
  local have_cuda = false
  for _, d in ipairs(h.devices()) do if d == "cuda" then have_cuda = true end end
  if not have_cuda then
    pending("needs a cuda device")
    return
  end
  it("LayerNorm, attention and an encoder layer agree on both devices (float32)", function()
    gpu.random.seed(7)
    local x = gpu.random.normal(0, 1, { 2, 5, 8 })
    local layer = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0, batch_first = true })
    local sd = layer:state_dict()
    h.parity(function(xx)
      local m = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0, batch_first = true,
        device = xx.device })
      m:load_state_dict(sd)
      return m(xx, { is_causal = true })
    end, { x }, 1e-4)
    h.parity(function(xx) return nn.layer_norm(xx, 8) end, { x }, 1e-5)
    h.parity(function(xx) return nn.scaled_dot_product_attention(xx, xx, xx, { is_causal = true }) end, { x }, 1e-5)
  end)
end)
