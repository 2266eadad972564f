-- spec/keras_layers_spec.lua — Keras's channels-last Conv2D and pooling layers
-- (lua/gpu/nn/keras_layers.lua) against Keras 3 (spec/fixtures/keras_layers.lua, made by
-- spec/fixtures/keras_layers.py in float32), with the same kernels, and misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local FX = dofile("spec/fixtures/keras_layers.lua")

local function arr(t, dev) return gpu.array(t.values, { device = dev }):reshape(table.unpack(t.shape)) end

for _, dev in ipairs(h.devices()) do
  describe("Keras's conv and pooling layers on " .. dev, function()
    for _, c in ipairs(FX.cases) do
      it(c.name .. " gives Keras's output", function()
        local layer = assert(load("return " .. c.ctor, c.name, "t", { nn = nn }))()
        local x = arr(FX[c.input], dev)
        if c.kernel then
          layer:to(dev)
          layer(x)                                           -- builds the kernel from x's channels
          gpu.no_grad(function()
            layer.kernel[{}] = arr(c.kernel, dev)
            if c.bias then layer.bias[{}] = arr(c.bias, dev) end
          end)
        end
        local y = layer(x)
        assert.same(c.output.shape, y.shape)
        local got = y:to("cpu"):reshape(-1):totable()
        for i, v in ipairs(c.output.values) do
          assert(math.abs(v - got[i]) <= 2e-5 * math.max(1, math.abs(v)), ("%s[%d]: %.9g, Keras %.9g"):format(c.name, i, got[i], v))
        end
      end)
    end
  end)
end

-- the arrays Keras's set_weights fills, in its order, for each kind of layer of FX.more
local WEIGHTS = {
  Conv1D = { "kernel", "bias" }, TimeDistributed = { "kernel", "bias" },
  BatchNormalization = { "gamma", "beta", "moving_mean", "moving_variance" }, LayerNormalization = { "gamma", "beta" },
}

for _, dev in ipairs(h.devices()) do
  describe("more of Keras's layers on " .. dev, function()
    for _, c in ipairs(FX.more) do
      it(c.name .. " gives Keras's output", function()
        local layer = assert(load("return " .. c.ctor, c.name, "t", { nn = nn }))()
        layer:to(dev)
        local x = arr(c.input, dev)
        local kind = getmetatable(layer).__name
        if c.name:match("^batchnorm inference") then layer:eval() end
        if c.weights then
          gpu.no_grad(function() layer(x) end)              -- builds from x
          local target = kind == "TimeDistributed" and layer.layer or layer
          gpu.no_grad(function()
            for i, name in ipairs(WEIGHTS[kind]) do target[name][{}] = arr(c.weights[i], dev) end
          end)
        end
        if kind == "Normalization" then layer:adapt(x) end
        local y = layer(x)
        local function close(want, got, what)
          assert.same(want.shape, got.shape, what)
          local g = got:to("cpu"):reshape(-1):totable()
          for i, v in ipairs(want.values) do
            assert(math.abs(v - g[i]) <= 3e-5 * math.max(1, math.abs(v)), ("%s[%d]: %.9g, Keras %.9g"):format(what, i, g[i], v))
          end
        end
        close(c.output, y, c.name)
        if c.after then
          close(c.after[1], layer.moving_mean, "moving_mean")
          close(c.after[2], layer.moving_variance, "moving_variance")
        end
      end)
    end
  end)
end

describe("Keras's conv and pooling layers", function()
  it("build at the first call, train, and work in a functional model", function()
    local inputs = nn.Input({ 8, 8, 1 })
    local x = nn.Conv2D(4, 3, { activation = "relu" })(inputs)
    x = nn.MaxPooling2D(2)(x)
    x = nn.Flatten()(x)
    local out = nn.Dense(2, "softmax")(x)
    local m = nn.Model(inputs, out)
    assert.same({ 3, 3, 1, 4 }, m:get_layer("conv2d").kernel.shape)
    assert.matches("(None, 3, 3, 4)", m:summary({ quiet = true }), 1, true)
    gpu.random.seed(2)
    local X = gpu.random.randn(32, 8, 8, 1)
    local Y = X:mean({ 2, 3, 4 }):gt(0):astype("int64") + 1
    m:compile{ optimizer = gpu.optim.Adam(m:parameters(), { lr = 0.02 }), loss = "sparse_categorical_crossentropy" }
    local hist = m:fit(X, Y, { epochs = 5, batch_size = 8, verbose = 0 })
    assert.is_true(hist.history.loss[5] < hist.history.loss[1])
    local g = gpu.nn.Conv2D(2, 3, { input_shape = { 5, 5, 3 } })
    assert.same({ 3, 3, 3, 2 }, g.kernel.shape)
  end)

  it("refuse misuse by name", function()
    local cases = {
      { function() return nn.Conv2D(0, 3) end, "filters must be an integer >= 1" },
      { function() return nn.Conv2D(2, { 3 }) end, "kernel_size must be an integer >= 1 or a list of two" },
      { function() return nn.Conv2D(2, 3, { padding = "full" }) end, "padding" },
      { function() return nn.Conv2D(2, 3)(gpu.ones(2, 5, 5)) end, "expected a 4-D input" },
      { function() return nn.Conv2D(2, 3)(gpu.ones(1, 2, 2, 1)) end, "smaller than the kernel" },
      { function() local c = nn.Conv2D(2, 3); c(gpu.ones(1, 5, 5, 1)); return c(gpu.ones(1, 5, 5, 2)) end,
        "expected 1 input channels, got 2" },
      { function() return nn.Conv2D(3, 3, { groups = 2 }) end, "filters (3) must be divisible by groups (2)" },
      { function() return nn.MaxPooling2D(0) end, "pool_size" },
      { function() return nn.GlobalAveragePooling2D({ data_format = "nhwc" }) end, "data_format" },
      { function() return nn.Conv1D(2, 3)(gpu.ones(2, 5)) end, "expected a 3-D input" },
      { function() return nn.Conv1D(2, 4)(gpu.ones(1, 2, 1)) end, "shorter than the kernel" },
      { function() return nn.Cropping1D({ 3, 3 })(gpu.ones(1, 6, 2)) end, "leaves nothing" },
      { function() return nn.ZeroPadding2D({ 1, -1 }) end, "an integer >= 0 or a pair" },
      { function() return nn.TimeDistributed(42) end, "a layer expected" },
      { function() return nn.TimeDistributed(nn.Dense(2))(gpu.ones(2, 3)) end, "expected (N, T, ...)" },
      { function() return nn.BatchNormalization({ axis = 3 })(gpu.ones(2, 3)) end, "axis 3 is out of range" },
      { function() return nn.Normalization()(gpu.ones(2, 3)) end, "no mean and variance yet" },
      { function() return nn.Normalization({ mean = 0 }) end, "give mean and variance together" },
      { function() return nn.SpatialDropout1D({}) end, "rate is required" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
  end)
end)
