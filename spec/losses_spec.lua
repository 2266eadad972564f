-- spec/losses_spec.lua — losses (lua/gpu/nn/losses.lua): class weights and
-- ignore_index of nll_loss / cross_entropy (with label smoothing and the K-dimensional
-- form), L1, SmoothL1, Huber, KLDiv, cosine embedding, margin ranking and triplet
-- losses, each reduction, values and gradients against PyTorch 1.13
-- (spec/fixtures/layers/torch.lua, tools/gen_layers_fixtures.py); the module and
-- nn.functional forms, the Keras names in compile, and the errors of misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local fx = dofile("spec/fixtures/layers/torch.lua").losses

local function A(t, dev) return gpu.array(t, { dtype = "float64", device = dev }) end
local function I(t, dev) return gpu.array(t, { dtype = "int64", device = dev }) end
-- loss value and the gradients of sum(loss * gy) (gy a number for a reduced loss)
local function against(case, y, inputs, names)
  h.assert_close(y, A(case.y), 1e-12)
  local gy = type(case.gy) == "table" and A(case.gy, y.device) or case.gy
  ;(y * gy):sum():backward()
  for i, x in ipairs(inputs) do h.assert_close(x.grad, A(case[names[i]]), 1e-10) end
end

for _, dev in ipairs(h.devices()) do
  describe("losses on " .. dev, function()
    local labels, ignored, ig2 = I(fx.labels, dev), I(fx.labels_ignored, dev), I(fx.labels_ig2, dev)
    local weight = A(fx.weight, dev)
    for _, red in ipairs { "mean", "sum", "none" } do
      local cases = {
        ce = function(z) return nn.cross_entropy(z, labels, { reduction = red }) end,
        ce_w = function(z) return nn.CrossEntropyLoss({ weight = weight, reduction = red })(z, labels) end,
        ce_ig = function(z) return nn.cross_entropy(z, ignored, { reduction = red }) end,
        ce_w_ig_ls = function(z)
          return nn.F.cross_entropy(z, ignored, { weight = weight, label_smoothing = 0.2, reduction = red })
        end,
        ce_ig_ls = function(z) return nn.cross_entropy(z, ignored, { label_smoothing = 0.2, reduction = red }) end,
        -- ignore_index is a label as written: PyTorch's ignore_index = 1 is label 2 here
        ce_ig2 = function(z) return nn.cross_entropy(z, ig2, { ignore_index = 2, weight = weight, reduction = red }) end,
        nll_w = function(z) return nn.NLLLoss({ weight = weight, reduction = red })(nn.log_softmax(z, 2), labels) end,
        nll_w_ig = function(z) return nn.nll_loss(nn.log_softmax(z, 2), ignored, { weight = weight, reduction = red }) end,
      }
      for name, f in pairs(cases) do
        it(name .. " (" .. red .. ") matches PyTorch", function()
          local z = A(fx.z, dev):requires_grad()
          against(fx[name .. "_" .. red], f(z), { z }, { "gz" })
        end)
      end
      local pair_cases = {
        l1 = function(a, b) return nn.l1_loss(a, b, { reduction = red }) end,
        smooth_l1 = function(a, b) return nn.SmoothL1Loss({ beta = 0.7, reduction = red })(a, b) end,
        huber = function(a, b) return nn.F.huber_loss(a, b, { delta = 0.6, reduction = red }) end,
        kl = function(a) return nn.KLDivLoss({ reduction = red })(nn.log_softmax(a, 2), A(fx.p, dev)) end,
        kl_log = function(a, b)
          return nn.kl_div(nn.log_softmax(a, 2), nn.log_softmax(b, 2), { reduction = red, log_target = true })
        end,
      }
      for name, f in pairs(pair_cases) do
        it(name .. " (" .. red .. ") matches PyTorch", function()
          local a, b = A(fx.a, dev):requires_grad(), A(fx.b, dev):requires_grad()
          local y = f(a, b)
          h.assert_close(y, A(fx[name .. "_" .. red].y), 1e-12)
          ;(y * (type(fx[name .. "_" .. red].gy) == "table" and A(fx[name .. "_" .. red].gy, dev)
            or fx[name .. "_" .. red].gy)):sum():backward()
          h.assert_close(a.grad, A(fx[name .. "_" .. red].ga), 1e-10)
          if b.grad then h.assert_close(b.grad, A(fx[name .. "_" .. red].gb), 1e-10) end
        end)
      end
      it("cosine_embedding_loss and margin_ranking_loss (" .. red .. ") match PyTorch", function()
        local t = A(fx.t, dev)
        local a, b = A(fx.a, dev):requires_grad(), A(fx.b, dev):requires_grad()
        against(fx["cosine_" .. red], nn.CosineEmbeddingLoss({ margin = -0.2, reduction = red })(a, b, t), { a, b },
          { "ga", "gb" })
        local a2, b2 = A(fx.a, dev):requires_grad(), A(fx.b, dev):requires_grad()
        against(fx["ranking_" .. red],
          nn.margin_ranking_loss(a2[{ ":", 1 }], b2[{ ":", 1 }], t, { margin = 0.3, reduction = red }), { a2, b2 },
          { "ga", "gb" })
      end)
    end
    it("kl_div's batchmean and the K-dimensional cross_entropy with weights match PyTorch", function()
      local a = A(fx.a, dev):requires_grad()
      local y = nn.kl_div(nn.log_softmax(a, 2), A(fx.p, dev), { reduction = "batchmean" })
      h.assert_close(y, A(fx.kl_batchmean.y), 1e-12)
      y:backward()
      h.assert_close(a.grad, A(fx.kl_batchmean.ga), 1e-10)
      local f = fx.ce_kdim
      local z = A(f.z, dev):requires_grad()
      against(f, nn.cross_entropy(z, I(f.labels, dev), { weight = weight, reduction = "none" }), { z }, { "gz" })
      h.assert_close(nn.cross_entropy(A(f.z, dev), I(f.labels, dev), { weight = weight }), A(f.mean), 1e-12)
    end)
    it("triplet_margin_loss (p = 2; p = 1 with swap) matches PyTorch", function()
      for _, c in ipairs { { "triplet", { margin = 1.5 } }, { "triplet_p1_swap", { margin = 0.5, p = 1, swap = true } } } do
        local a, b, n = A(fx.a, dev):requires_grad(), A(fx.b, dev):requires_grad(), A(fx.n, dev):requires_grad()
        local o = { reduction = "none" }
        for k, v in pairs(c[2]) do o[k] = v end
        against(fx[c[1]], nn.TripletMarginLoss(o)(a, b, n), { a, b, n }, { "ga", "gb", "gn" })
        h.assert_close(nn.triplet_margin_loss(A(fx.a, dev), A(fx.b, dev), A(fx.n, dev), c[2]), A(fx[c[1]].mean), 1e-12)
      end
    end)
    it("float32 runs: the fused cross-entropy path is unchanged without weights or ignored labels", function()
      local z = gpu.array(fx.z, { device = dev })
      h.assert_close(nn.cross_entropy(z, labels), A(fx.ce_mean.y), 1e-6)
      h.assert_close(nn.cross_entropy(z, ignored), A(fx.ce_ig_mean.y), 1e-6)
      h.assert_close(nn.cross_entropy(z, labels, { weight = weight:astype("float32") }), A(fx.ce_w_mean.y), 1e-6)
      assert.equal("float32", nn.cross_entropy(z, ignored, { reduction = "none" }).dtype)
    end)
  end)
end

describe("losses by Keras name", function()
  it("mae, mse, huber, kl_divergence, binary_crossentropy and categorical_hinge as Keras computes them", function()
    local p = gpu.array({ { 0.2, 0.8 }, { 0.6, 0.4 } }, { dtype = "float64" })
    local t = gpu.array({ { 0, 1 }, { 1, 0 } }, { dtype = "float64" })
    local L = nn.losses
    h.assert_close(L.mae(p, t), (0.2 + 0.2 + 0.4 + 0.4) / 4, 1e-12)
    h.assert_close(L.mse(p, t), (0.04 + 0.04 + 0.16 + 0.16) / 4, 1e-12)
    h.assert_close(L.huber(p, t), (0.02 + 0.02 + 0.08 + 0.08) / 4, 1e-12)
    -- Keras: sum over the last axis of t log(t / p), t and p clipped to [1e-7, 1]
    local e = 1e-7
    local kl1 = e * math.log(e / 0.2) + math.log(1 / 0.8)
    local kl2 = math.log(1 / 0.6) + e * math.log(e / 0.4)
    h.assert_close(L.kl_divergence(p, t), (kl1 + kl2) / 2, 1e-12)
    -- categorical hinge: max(0, max((1 - t) p) - sum(t p) + 1)
    h.assert_close(L.categorical_hinge(p, t), ((0.2 - 0.8 + 1) + (0.4 - 0.6 + 1)) / 2, 1e-12)
    h.assert_close(L.binary_crossentropy(p, t), -(math.log(0.8) * 2 + math.log(0.6) * 2) / 4, 1e-12)
  end)
  it("the cross-entropies of probabilities divide each row by its sum first, as Keras", function()
    -- Keras 3.15: sparse_categorical_crossentropy([1, 2], p) = categorical_crossentropy = [0.6931472, 0.7985077]
    local p = gpu.array({ { 0.2, 0.3, 0.1 }, { 0.5, 0.6, 0.9 } })
    local y = gpu.array({ 2, 3 }, { dtype = "int64" })
    local want = gpu.array({ 0.6931472, 0.7985077 })
    assert(h.close(gpu.nn.sparse_categorical_crossentropy(p, y, { reduction = "none" }), want, 1e-6))
    assert(h.close(gpu.nn.categorical_crossentropy(p, gpu.nn.functional.one_hot(y, 3):astype("float32"), { reduction = "none" }), want, 1e-6))
  end)

  it("are accepted by compile{loss = ...} and train", function()
    gpu.random.seed(1)
    local m = nn.Sequential { nn.Dense(4, { activation = "relu", input_shape = { 3 } }), nn.Dense(1) }
    for _, name in ipairs { "mae", "huber", "mean_absolute_error" } do
      m:compile { optimizer = "adam", loss = name }
      local x = gpu.random.normal(0, 1, { 16, 3 })
      local hist = m:fit(x, x:sum(2, { keepdims = true }), { epochs = 2, batch_size = 8, verbose = 0 })
      assert.equal(2, #hist.loss)
    end
    local c = nn.Sequential { nn.Dense(3, { activation = "softmax", input_shape = { 2 } }) }
    for _, name in ipairs { "kl_divergence", "categorical_hinge" } do
      c:compile { optimizer = "adam", loss = name }
      local hist = c:fit(gpu.random.normal(0, 1, { 8, 2 }), gpu.eye(3)[{ { 1, 3 } }]:tile({ 3, 1 })[{ { 1, 8 } }],
        { epochs = 1, batch_size = 4, verbose = 0 })
      assert.equal(1, #hist.loss)
    end
  end)
end)

describe("loss errors", function()
  local z, y = gpu.zeros(2, 3), gpu.array({ 1, 3 }, { dtype = "int64" })
  it("name the function and the fault, leaving the arguments unchanged", function()
    h.fails({ "nn.cross_entropy", "weight must hold one value per class (3)" }, nn.cross_entropy, z, y,
      { weight = gpu.ones(4) })
    h.fails({ "nn.nll_loss", "option 'weight' must be a float array" }, nn.nll_loss, z, y,
      { weight = gpu.ones({ 3 }, { dtype = "int64" }) })
    h.fails({ "nn.cross_entropy", "labels are 1-based (1..3); found 0" }, nn.cross_entropy, z,
      gpu.array({ 0, 1 }, { dtype = "int64" }))
    h.fails({ "nn.cross_entropy", "labels are 1-based" }, nn.cross_entropy, z, gpu.array({ -100, 0 }, { dtype = "int64" }))
    h.fails({ "nn.cross_entropy", "need labels of shape (2, 4)" }, nn.cross_entropy, gpu.zeros(2, 3, 4), y)
    h.fails({ "nn.smooth_l1_loss", "differ in shape" }, nn.smooth_l1_loss, gpu.ones(2), gpu.ones(3))
    h.fails({ "nn.KLDivLoss", "option 'reduction'", "batchmean" }, nn.KLDivLoss, { reduction = "batch" })
    h.fails({ "nn.HuberLoss", "option 'delta' must be > 0" }, nn.HuberLoss, { delta = 0 })
    h.fails({ "nn.cosine_embedding_loss", "target must have shape (2)" }, nn.cosine_embedding_loss, gpu.ones(2, 3),
      gpu.ones(2, 3), gpu.ones(3))
    h.fails({ "nn.triplet_margin_loss", "negative (2, 4) and anchor (2, 3)" }, nn.triplet_margin_loss, gpu.ones(2, 3),
      gpu.ones(2, 3), gpu.ones(2, 4))
    h.fails({ "nn.margin_ranking_loss", "unknown option 'margn'" }, nn.margin_ranking_loss, gpu.ones(2), gpu.ones(2),
      gpu.ones(2), { margn = 1 })
    assert.same({ 1, 3 }, y:totable())
    assert.same({ { 0, 0, 0 }, { 0, 0, 0 } }, z:totable())
  end)
end)
