-- spec/keras_functional_spec.lua — Keras's functional API (lua/gpu/nn/keras_functional.lua):
-- nn.Input and layers called on symbolic tensors, nn.Model replaying the graph (the same
-- numbers as calling the layers directly), several inputs and outputs, shared layers,
-- nested models, summary, get_layer, compile/fit, the graph layers and merges, and misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn

local function same(a, b, tol)
  local x, y = a:reshape(-1):totable(), b:reshape(-1):totable()
  assert.equal(#x, #y)
  for i = 1, #x do assert.near(x[i], y[i], tol or 1e-6) end
end

describe("Keras's functional API", function()
  it("replays the layers' calls: the model's output is the layers' own", function()
    gpu.random.seed(0)
    local inputs = nn.Input({ 4 })
    assert.same({ 4 }, inputs.shape)
    local d1, d2, d3 = nn.Dense(8, "relu"), nn.Dense(3), nn.Dense(2, "softmax")
    local out = d3(d2(d1(inputs)))
    assert.same({ 2 }, out.shape)
    assert.matches("shape=%(None, 2%)", tostring(out))
    local model = nn.Model(inputs, out)
    local x = gpu.random.randn(5, 4)
    same(d3(d2(d1(x))), model(x))
    assert.equal(6, #model:parameters())
  end)

  it("takes several inputs and outputs, shares a layer, and nests a model", function()
    local a, b = nn.Input({ 3 }, { name = "a" }), nn.Input({ 3 }, { name = "b" })
    local shared = nn.Dense(4, "tanh")
    local ea, eb = shared(a), shared(b)                   -- one layer, two calls
    local both = nn.Concatenate()({ ea, eb })
    local diff = nn.Subtract()({ ea, eb })
    local head = nn.Dense(1)
    local m = nn.Model({ a, b }, { head(both), diff })
    assert.equal(4, #m:parameters())                      -- shared's two and head's two
    local xa, xb = gpu.random.randn(2, 3), gpu.random.randn(2, 3)
    local y1, y2 = m(xa, xb)
    local sa, sb = shared(xa), shared(xb)
    same(head(gpu.concat({ sa, sb }, 2)), y1)
    same(sa - sb, y2)
    local y1b = m({ xa, xb })                              -- Keras's list form
    same(y1, y1b)
    -- the model as a layer of another model
    local i2 = nn.Input({ 3 })
    local inner = nn.Model(i2, nn.Dense(2)(i2))
    local j = nn.Input({ 3 })
    local outer = nn.Model(j, nn.Activation("relu")(inner(j)))
    local z = gpu.random.randn(4, 3)
    same(inner(z):relu(), outer(z))
  end)

  it("summarises, names its layers as Keras does, and trains with compile and fit", function()
    local inputs = nn.Input({ 6 })
    local x = nn.Dense(5, "relu", { name = "hidden" })(inputs)
    local out = nn.Dense(2, "softmax")(nn.Dropout(0.1)(x))
    local m = nn.Model(inputs, out, { name = "clf" })
    local text = m:summary({ quiet = true })
    assert.matches('Model: "clf"', text, 1, true)
    assert.matches("hidden (Dense)", text, 1, true)
    assert.matches("(None, 5)", text, 1, true)
    assert.matches("Total params: 47", text, 1, true)
    assert.equal("hidden", (function() for k in pairs(m:state_dict()) do if k:match("^hidden%.") then return "hidden" end end end)())
    assert.is_not_nil(m:get_layer("hidden"))
    gpu.random.seed(3)
    local X = gpu.random.randn(128, 6)
    local Y = X[{ ":", { 1, 1 } }]:gt(0):reshape(128):astype("int64") + 1
    m:compile{ optimizer = gpu.optim.Adam(m:parameters(), { lr = 0.05 }), loss = "sparse_categorical_crossentropy",
      metrics = { "accuracy" } }
    local hist = m:fit(X, Y, { epochs = 15, batch_size = 32, verbose = 0 })
    assert.is_true(hist.history.loss[15] < hist.history.loss[1])
    assert.is_true(m:evaluate(X, Y).accuracy > 0.8)
  end)

  it("has Keras's graph layers", function()
    local x = gpu.arange(24):astype("float32"):reshape(2, 3, 4)
    same(nn.Reshape({ 4, 3 })(x), x:reshape(2, 4, 3))
    same(nn.Permute({ 2, 1 })(x), x:transpose(2, 3))
    local v = gpu.array({ { 1, 2 }, { 3, 4 } })
    assert.same({ { { 1, 2 }, { 1, 2 }, { 1, 2 } }, { { 3, 4 }, { 3, 4 }, { 3, 4 } } }, nn.RepeatVector(3)(v):totable())
    same(nn.Lambda(function(t) return t * 2 end)(v), v * 2)
    same(nn.Rescaling(1 / 255, -1)(v), v / 255 - 1)
    same(nn.Activation("softmax")(v), nn.softmax(v, -1))
    local a, b, c = gpu.array({ { 1, 5 } }), gpu.array({ { 3, 2 } }), gpu.array({ { 2, 2 } })
    assert.same({ { 6, 9 } }, nn.Add()({ a, b, c }):totable())
    assert.same({ { 6, 20 } }, nn.Multiply()({ a, b, c }):totable())
    assert.same({ { 2, 3 } }, nn.Average()({ a, b, c }):totable())
    assert.same({ { 3, 5 } }, nn.Maximum()({ a, b, c }):totable())
    assert.same({ { 1, 2 } }, nn.Minimum()({ a, b, c }):totable())
    assert.same({ { 1, 5, 3, 2 } }, nn.Concatenate()({ a, b }):totable())
    assert.same({ { 13 } }, nn.Dot(1)({ a, b }):totable())
    same(nn.Dot(1, { normalize = true })({ a, a }), gpu.array({ { 1 } }))
  end)

  it("has Keras's batch methods and weights accessors", function()
    local i = nn.Input({ 3 })
    local m = nn.Model(i, nn.Dense(2, "softmax")(nn.BatchNormalization()(nn.Dense(4, "relu")(i))))
    m:compile{ optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
    local x, y = gpu.random.randn(8, 3), gpu.array({ 1, 2, 1, 2, 1, 2, 1, 2 })
    local w0 = m:get_weights()
    assert.equal(8, #w0)                                  -- kernels, biases, gamma, beta, moving stats
    assert.equal(4 * 3 + 4 + 4 + 4 + 4 * 2 + 2, m:count_params())
    local loss, metrics = m:train_on_batch(x, y)
    assert.equal("number", type(loss))
    assert.equal("number", type(metrics.accuracy))
    local tl, tm = m:test_on_batch(x, y)
    assert.near(m:evaluate(x, y).loss, tl, 1e-6)
    assert.near(m:evaluate(x, y).accuracy, tm.accuracy, 1e-12)
    same(m:predict(x), m:predict_on_batch(x))
    m:set_weights(w0)                                      -- back to before the step
    for k, v in ipairs(m:get_weights()) do same(w0[k], v, 0) end
    local bad = m:get_weights()
    bad[2] = gpu.ones(5)
    local ok, err = pcall(m.set_weights, m, bad)
    assert.is_false(ok)
    assert.matches("weight 2 has shape (5), the model's (4)", err, 1, true)
    same(w0[1], m:get_weights()[1], 0)                     -- nothing written
  end)

  it("writes its graph with to_json and m:save: model_from_json and load_model rebuild it, shared and nested", function()
    gpu.random.seed(5)
    local a, b = nn.Input({ 3 }, { name = "a" }), nn.Input({ 3 }, { name = "b" })
    local shared = nn.Dense(4, "tanh")
    local ea, eb = shared(a), shared(b)
    local i2 = nn.Input({ 4 })
    local inner = nn.Model(i2, nn.Dense(2)(i2), { name = "inner" })
    local both = nn.Concatenate()({ inner(ea), eb })
    local m = nn.Model({ a, b }, { nn.Dense(1, { name = "head" })(both), nn.Subtract()({ ea, eb }) }, { name = "pair" })
    m:compile { optimizer = "adam", loss = "mse" }
    local xa, xb = gpu.random.randn(5, 3), gpu.random.randn(5, 3)
    local y1, y2 = m(xa, xb)
    local path = os.tmpname()
    m:save(path)
    local back = nn.load_model(path)
    os.remove(path)
    assert.equal("pair", back.name)
    local z1, z2 = back(xa, xb)
    same(y1, z1, 0)
    same(y2, z2, 0)
    assert.equal(#m:parameters(), #back:parameters())        -- shared once, the nested model's own
    assert.is_truthy(back:get_layer("head"))
    local fresh = nn.model_from_json(m:to_json())            -- the architecture, new weights
    local f1 = fresh(xa, xb)
    assert.same(y1.shape, f1.shape)
    fresh:set_weights(m:get_weights())
    same(y1, (fresh(xa, xb)), 0)
    -- a single input and output stay single; a Lambda's function cannot be written
    local i = nn.Input({ 2 })
    local one = nn.Model(i, nn.Dense(3)(i))
    local again = nn.model_from_json(one:to_json())
    assert.same({ 4, 3 }, again(gpu.ones(4, 2)).shape)
    local l = nn.Model(i, nn.Lambda(function(x) return x * 2 end)(i))
    h.fails({ "Module:to_json", "function" }, l.to_json, l)
  end)

  it("refuses misuse by name", function()
    local i = nn.Input({ 3 })
    local y = nn.Dense(2)(i)
    local other = nn.Input({ 3 })
    local cases = {
      { function() return nn.Input(3) end, "nn.Input" },
      { function() return nn.Input({ 3, -1 }) end, "shape[2] must be an integer >= 0" },
      { function() return nn.Model(y, y) end, "is a layer's output, not an nn.Input" },
      { function() return nn.Model(other, y) end, "depend on the input input_layer" },
      { function() return nn.Model(i, gpu.ones(2)) end, "outputs: a symbolic tensor" },
      { function() return nn.Model(i, y)(gpu.ones(2, 4)) end, "expects shape (None, 3), got (2, 4)" },
      { function() return nn.Model(i, y)(gpu.ones(2, 3), gpu.ones(2, 3)) end, "the model takes 1 input, got 2" },
      { function() return nn.Linear(4, 2)(i) end, "Linear called on symbolic tensors" },
      { function() return nn.Add()({ i, nn.Input({ 4 }) }) end, "inputs of one shape expected" },
      { function() return nn.Add()({ gpu.ones(2) }) end, "a list of at least 2 inputs" },
      { function() return nn.Permute({ 1, 1 }) end, "dims must be a permutation of 1..2" },
      { function() return nn.Activation("swoosh") end, "activation" },
      { function() return nn.Model(i, y):get_layer("nope") end, "no layer named 'nope'" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
  end)
end)
