-- spec/nn_spec.lua — gpu.nn: gradient checks for every layer and loss, loss values
-- computed by hand, modules (parameters, state dicts, save/load, summary), Keras-style
-- compile/fit/evaluate/predict on a tiny problem, and the errors for bad input.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local ag = require "gpu.autograd"

local function check(fn, inputs, opts)
  local ok, msg = ag.gradcheck(fn, inputs, opts)
  assert(ok, msg)
end
local function r(dev, seed, ...)
  return gpu.random.Generator(seed):uniform(-1, 1, { ... }, { dtype = "float64", device = dev })
end
local F64 = { dtype = "float64" }

for _, dev in ipairs(h.devices()) do
  local o64 = { dtype = "float64", device = dev }
  describe("nn on " .. dev, function()
    describe("gradient checks", function()
      it("Linear and nn.linear (2-D and batched 3-D input)", function()
        local lin = nn.Linear(3, 4, o64)
        check(function(x) return lin(x) end, { r(dev, 1, 5, 3), lin.weight, lin.bias })
        check(function(x) return lin(x) end, { r(dev, 2, 2, 2, 3), lin.weight, lin.bias })
        local nb = nn.Linear(3, 2, { dtype = "float64", device = dev, bias = false })
        assert.is_nil(nb.bias)
        check(function(x) return nb(x) end, { r(dev, 3, 4, 3), nb.weight })
      end)
      it("Dense (built at the first call) with each activation", function()
        for _, act in ipairs { "relu", "sigmoid", "tanh", "gelu", "softmax", "log_softmax", "linear", "softplus" } do
          local d = nn.Dense(4, { activation = act, dtype = "float64", device = dev })
          local x = r(dev, 4, 3, 5)
          d(x)
          assert.same({ 5, 4 }, d.kernel.shape)
          check(function(z) return d(z) end, { x, d.kernel, d.bias })
        end
      end)
      it("activation modules and functional forms", function()
        for _, m in ipairs { nn.ReLU(), nn.LeakyReLU(0.1), nn.GELU(), nn.Sigmoid(), nn.Tanh(), nn.Softmax(),
                             nn.LogSoftmax(), nn.Softmax(1), nn.Flatten(), nn.Identity() } do
          check(function(x) return m(x) end, { r(dev, 5, 3, 4) })
        end
        check(function(x) return nn.log_softmax(x, 1) end, { r(dev, 6, 3, 4) })
        check(function(x) return nn.leaky_relu(x) end, { r(dev, 7, 3, 4) })
      end)
      it("Embedding (repeated indices accumulate)", function()
        local e = nn.Embedding(5, 3, o64)
        local idx = gpu.array({ { 1, 3 }, { 3, 5 } }, { dtype = "int64", device = dev })
        assert.same({ 2, 2, 3 }, e(idx).shape)
        check(function() return e(idx) end, { e.weight })
      end)
      it("Embedding: indices outside 1..num or not integers are errors naming the bound", function()
        local e = nn.Embedding(5, 3, o64)
        local w = e.weight:totable()
        for _, bad in ipairs { { { 1, 6 }, "found 6" }, { { 0, 2 }, "found 0" } } do
          local ok, err = pcall(e, gpu.array(bad[1], { dtype = "int32", device = dev }))
          assert.is_false(ok)
          assert.matches("Embedding: indices are 1%-based %(1%.%.5%); " .. bad[2], err)
        end
        local ok, err = pcall(e, gpu.array({ 1.0, 2.0 }, { device = dev }))
        assert.is_false(ok)
        assert.matches("Embedding: indices must be an integer array, got float32", err)
        assert.same(w, e.weight:totable())
      end)
      it("Dropout: identity in eval mode, scaled mask in training", function()
        local d = nn.Dropout(0.5)
        local x = gpu.ones({ 1000 }, { device = dev })
        local y = d(x)
        local kept = y:gt(0):sum():item()
        assert.is_true(kept > 400 and kept < 600)
        h.assert_close(y:max(), 2)
        d:eval()
        assert.equal(x, d(x))
        check(function(z) return nn.Dropout(0)(z) end, { r(dev, 8, 3) })
      end)
      it("every loss", function()
        local labels = gpu.array({ 2, 1, 3 }, { dtype = "int64", device = dev })
        local onehot = nn.one_hot(labels, 3, F64)
        local t = gpu.random.Generator(9):uniform(0.1, 0.9, { 3, 4 }, o64)
        check(function(z) return nn.cross_entropy(z, labels) end, { r(dev, 10, 3, 3) })
        check(function(z) return nn.cross_entropy(z, labels, { label_smoothing = 0.2 }) end, { r(dev, 11, 3, 3) })
        check(function(z) return nn.cross_entropy(z, labels, { reduction = "none" }) end, { r(dev, 12, 3, 3) })
        check(function(z) return nn.cross_entropy(z, labels, { reduction = "sum" }) end, { r(dev, 12, 3, 3) })
        check(function(z) return nn.sparse_categorical_crossentropy(nn.softmax(z), labels) end, { r(dev, 13, 3, 3) })
        check(function(z) return nn.sparse_categorical_crossentropy(z:sigmoid() * 0.3 + 0.1, labels) end,
              { r(dev, 13, 3, 3) })
        check(function(z) return nn.categorical_crossentropy(nn.softmax(z), onehot) end, { r(dev, 14, 3, 3) })
        check(function(z) return nn.categorical_crossentropy(z, onehot, { from_logits = true }) end, { r(dev, 14, 3, 3) })
        check(function(a) return nn.MSELoss()(a, t) end, { r(dev, 15, 3, 4) })
        check(function(p) return nn.BCELoss()(p, t) end, { t * 0.5 + 0.2 })
        check(function(z) return nn.BCEWithLogitsLoss()(z, t) end, { r(dev, 16, 3, 4) })
        check(function(z) return nn.CrossEntropyLoss { label_smoothing = 0.1 }(z, labels) end, { r(dev, 17, 3, 3) })
      end)
    end)

    describe("loss values", function()
      it("cross_entropy and its Keras forms agree with hand-computed values", function()
        local z = gpu.array({ { 1, 2, 3 }, { 1, 1, 1 } }, o64)
        local y = gpu.array({ 3, 1 }, { dtype = "int64", device = dev })
        local lse1 = math.log(math.exp(1) + math.exp(2) + math.exp(3))
        local want = ((lse1 - 3) + math.log(3)) / 2
        h.assert_close(nn.cross_entropy(z, y), want, 1e-12)
        h.assert_close(nn.sparse_categorical_crossentropy(nn.softmax(z), y), want, 1e-12)
        h.assert_close(nn.sparse_categorical_crossentropy(z, y, { from_logits = true }), want, 1e-12)
        h.assert_close(nn.categorical_crossentropy(nn.softmax(z), nn.one_hot(y, 3, F64)), want, 1e-12)
        -- label smoothing 0.3: (1 - 0.3) * nll + 0.3 * mean over classes of -log p
        local sm = ((lse1 - 3) * 0.7 + 0.3 * (lse1 * 3 - 6) / 3 + math.log(3)) / 2
        h.assert_close(nn.cross_entropy(z, y, { label_smoothing = 0.3 }), sm, 1e-12)
      end)
      it("a softmax output's loss stays finite where log(softmax) underflows", function()
        local z = gpu.array({ { 0, 200 } }, { device = dev })
        local y = gpu.array({ 1 }, { dtype = "int64", device = dev })
        h.assert_close(nn.sparse_categorical_crossentropy(nn.softmax(z), y), 200, 1e-6)
      end)
      it("MSE, BCE, BCE with logits", function()
        local a = gpu.array({ 0.2, 0.7 }, o64)
        local b = gpu.array({ 0, 1 }, o64)
        h.assert_close(nn.mse_loss(a, b), (0.04 + 0.09) / 2, 1e-12)
        h.assert_close(nn.binary_cross_entropy(a, b), -(math.log(0.8) + math.log(0.7)) / 2, 1e-12)
        local s = function(v) return math.log(1 + math.exp(v)) end
        h.assert_close(nn.binary_cross_entropy_with_logits(a, b), (s(0.2) + s(0.7) - 0.7) / 2, 1e-12)
      end)
    end)

    describe("modules", function()
      it("parameters, named_parameters, zero_grad, train/eval, state_dict round trip", function()
        gpu.random.seed(1)
        local m = nn.Sequential { nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.1), nn.Linear(3, 2) }
        assert.equal(4, #m:parameters())
        local names = {}
        for name, p in m:named_parameters() do names[#names + 1] = name .. ":" .. table.concat(p.shape, "x") end
        assert.same({ "1.weight:3x4", "1.bias:3", "4.weight:2x3", "4.bias:2" }, names)
        m(gpu.ones(2, 4)):sum():backward()
        assert.is_not_nil(m.layers[1].weight.grad)
        m:zero_grad()
        assert.is_nil(m.layers[1].weight.grad)
        m:eval()
        assert.is_false(m.layers[3].training)
        m:train()
        assert.is_true(m.layers[3].training)
        local m2 = nn.Sequential { nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.1), nn.Linear(3, 2) }
        m2:load_state_dict(m:state_dict())
        h.assert_close(m2.layers[4].weight, m.layers[4].weight)
      end)
      it("save and load through safetensors", function()
        local m = nn.Sequential { nn.Dense(3, { input_shape = { 2 } }), nn.Dense(1) }
        m(gpu.ones(1, 2))
        local path = os.tmpname()
        m:save(path)
        local m2 = nn.Sequential { nn.Dense(3, { input_shape = { 2 } }), nn.Dense(1, { input_shape = { 3 } }) }
        m2:load(path)
        os.remove(path)
        h.assert_close(m2(gpu.ones(1, 2)), m(gpu.ones(1, 2)))
      end)
      it("summary lists output shapes and parameter counts", function()
        local m = nn.Sequential { nn.Dense(64, { activation = "relu", input_shape = { 784 } }),
                                  nn.Dense(10, { activation = "softmax" }) }
        local text = m:summary(nil, { quiet = true })
        assert.matches("%(None, 64%)%s+50240", text)
        assert.matches("%(None, 10%)%s+650", text)
        assert.matches("Total params: 50890", text)
      end)
      it("moves to a device", function()
        local m = nn.Linear(2, 2):to(dev)
        assert.equal(dev, m.weight.device:match("^%a+"))
        assert.is_true(m.weight:is_leaf())
        -- parameters already there stay the same arrays ("cuda" names cuda:0), so an
        -- optimizer made before a repeated :to() still holds them
        local w, bn = m.weight, nn.BatchNorm1d(2, { device = dev })
        local rm = bn.running_mean
        m:to(dev); bn:to(dev)
        assert.equal(w, m.weight)
        assert.equal(rm, bn.running_mean)
      end)
    end)

    describe("training", function()
      it("Keras style: fit converges on a tiny problem; evaluate and predict", function()
        gpu.random.seed(3)
        local x = gpu.random.normal(0, 1, { 256, 2 }, { device = dev })
        local y = (x[{ ":", 1 }] + x[{ ":", 2 }]):gt(0):astype("int64") + 1
        local m = nn.Sequential { nn.Dense(16, { activation = "relu", input_shape = { 2 } }),
                                  nn.Dense(2, { activation = "softmax" }) }
        m:compile { optimizer = gpu.optim.Adam(m:parameters(), { lr = 0.05 }),
                    loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
        local hist = m:fit(x, y, { epochs = 8, batch_size = 32, verbose = 0, validation_split = 0.25 })
        assert.equal(8, #hist.loss)
        assert.equal(8, #hist.val_accuracy)
        assert.is_true(hist.loss[8] < hist.loss[1])
        assert.is_true(hist.accuracy[8] > 0.9, "accuracy " .. hist.accuracy[8])
        local ev = m:evaluate(x, y)
        assert.is_true(ev.accuracy > 0.9)
        assert.equal("number", type(ev.loss))
        local p = m:predict(x, { batch_size = 100 })
        assert.same({ 256, 2 }, p.shape)
        h.assert_close(p:sum(2), gpu.ones(256), 1e-5)
      end)
      it("PyTorch style: a loop with zero_grad, backward, step", function()
        gpu.random.seed(4)
        local x = gpu.random.normal(0, 1, { 64, 3 }, { device = dev })
        local w = gpu.array({ { 1 }, { -2 }, { 0.5 } }, { device = dev })
        local y = x:matmul(w)
        local m = nn.Sequential { nn.Linear(3, 1) }:to(dev)
        local opt = gpu.optim.SGD(m:parameters(), { lr = 0.1, momentum = 0.9 })
        local first
        for _ = 1, 200 do
          local loss = nn.MSELoss()(m(x), y)
          first = first or loss:item()
          opt:zero_grad(); loss:backward(); opt:step()
        end
        h.assert_close(m.layers[1].weight, w.T, 1e-3)
      end)
    end)

    describe("bad input", function()
      it("the wrong input width names the layer and both sizes", function()
        local lin = nn.Linear(4, 2)
        local ok, err = pcall(function() return lin(gpu.ones(3, 5)) end)
        assert.is_false(ok); assert.matches("Linear%(4, 2%): expected input width 4, got 5", err)
        local d = nn.Dense(2, { input_shape = { 3 } })
        ok, err = pcall(function() return d(gpu.ones(1, 7)) end)
        assert.is_false(ok); assert.matches("Dense%(2%): expected input width 3, got 7", err)
      end)
      it("labels outside 1..C say they are 1-based and which value was found", function()
        local z = gpu.zeros(3, 4)
        local y0 = gpu.array({ 1, 0, 2 }, { dtype = "int64" })
        local ok, err = pcall(nn.cross_entropy, z, y0)
        assert.is_false(ok); assert.matches("labels are 1%-based %(1..4%); found 0", err)
        ok, err = pcall(nn.sparse_categorical_crossentropy, z, gpu.array({ 1, 5, 2 }, { dtype = "int64" }))
        assert.is_false(ok); assert.matches("sparse_categorical_crossentropy: labels are 1%-based %(1..4%); found 5", err)
        ok, err = pcall(nn.cross_entropy, z, gpu.array({ 1, 2 }, { dtype = "int64" }))
        assert.is_false(ok); assert.matches("3 predictions but labels of shape %(2%)", err)
        h.assert_close(y0, { 1, 0, 2 })
      end)
      it("mismatched x/y lengths, a NaN loss, an unknown loss or optimizer", function()
        local m = nn.Sequential { nn.Dense(2, { input_shape = { 3 }, activation = "softmax" }) }
        m:compile { optimizer = "adam", loss = "sparse_categorical_crossentropy" }
        local ok, err = pcall(m.fit, m, gpu.ones(10, 3), gpu.ones({ 9 }, { dtype = "int64" }))
        assert.is_false(ok); assert.matches("fit: x has 10 samples but y has 9", err)
        local x = gpu.ones(8, 3)
        x[{ 5, 2 }] = 0 / 0
        ok, err = pcall(m.fit, m, x, gpu.ones({ 8 }, { dtype = "int64" }), { batch_size = 2, verbose = 0, shuffle = false })
        assert.is_false(ok); assert.matches("loss is NaN at step 3 of epoch 1", err)
        ok, err = pcall(m.compile, m, { loss = "ctc" })
        assert.is_false(ok); assert.matches("compile: unknown loss 'ctc'", err)
        ok, err = pcall(m.compile, m, { optimizer = "adamax" })
        assert.is_false(ok); assert.matches("compile: unknown optimizer 'adamax'", err)
        local m2 = nn.Sequential { nn.ReLU() }
        m2:compile {}
        ok, err = pcall(m2.fit, m2, gpu.ones(4, 3), gpu.ones({ 4 }, { dtype = "int64" }), { verbose = 0 })
        assert.is_false(ok); assert.matches("fit: the model has no parameters yet", err)
      end)
      it("loading a state dict of another architecture names the faults", function()
        local m = nn.Sequential { nn.Linear(4, 3), nn.Linear(3, 2) }
        local other = nn.Sequential { nn.Linear(4, 5), nn.Linear(5, 2), nn.Linear(2, 2) }
        local before = m.layers[1].weight:copy()
        local ok, err = pcall(m.load_state_dict, m, other:state_dict())
        assert.is_false(ok)
        assert.matches("mis%-shaped: 1.bias %(expected %(3%), got %(5%)%)", err)
        assert.matches("1.weight %(expected %(3, 4%), got %(5, 4%)%)", err)
        assert.matches("unexpected: 3.bias, 3.weight", err)
        ok, err = pcall(m.load_state_dict, m, { ["1.weight"] = gpu.zeros(3, 4) })
        assert.is_false(ok); assert.matches("missing: 1.bias, 2.bias, 2.weight", err)
        h.assert_close(m.layers[1].weight, before)
      end)
    end)
  end)
end

describe("examples", function()
  local bin = os.getenv("GPULUA_BIN") or "./gpulua"
  for _, ex in ipairs { "keras_mlp", "torch_mlp" } do
    it(ex .. ".lua --small runs", function()
      local code, out, err = h.run(bin .. " examples/" .. ex .. ".lua --small")
      assert.equal(0, code, err)
      assert.matches("test accuracy 0%.%d+", out)
    end)
  end
end)
