-- keras_conv_more_spec.lua — nn.DepthwiseConv2D, nn.SeparableConv2D and nn.Conv2DTranspose
-- against Keras 3 (spec/fixtures/keras_conv_more.py): outputs and the gradients of
-- sum(y * r) in the input and every weight, over kernel sizes, strides, paddings, dilations
-- and output paddings; Keras's weight names and layouts; misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local ag = require "gpu.autograd"
local F = require "spec.fixtures.keras_conv_more"

local function arr(t) return gpu.array(t, { dtype = "float32" }) end
local x0 = arr(F.x)

-- Keras's keyword arguments as gpulua's options (the positional ones stay positional)
local function layer_of(c)
  local opts = {}
  for k, v in pairs(c.kw) do opts[k] = v end
  local args = {}
  for i, a in ipairs(c.args) do args[i] = a end
  args[#args + 1] = opts
  return nn[c.kind](table.unpack(args))
end

describe("Keras's further convolutions against Keras 3", function()
  for i, c in ipairs(F.cases) do
    local desc = ("%s #%d (%s)"):format(c.kind, i, table.concat((function()
      local t = {}
      for k, v in pairs(c.kw) do t[#t + 1] = k .. "=" .. (type(v) == "table" and table.concat(v, "x") or tostring(v)) end
      table.sort(t)
      return t
    end)(), ", "))
    it(desc .. ": output, input and weight gradients", function()
      local l = layer_of(c)
      l(x0)                                          -- builds it
      local names = {}
      for _, e in ipairs(l:named_parameters()) do names[#names + 1] = e[1] end
      assert.same(c.names, names)
      local ws = {}
      for j, w in ipairs(c.weights) do ws[j] = arr(w) end
      l:set_weights(ws)
      local x = x0:copy():requires_grad()
      local y = l(x)
      assert(h.close(y, arr(c.y), 2e-5))
      local params = l:parameters()
      local inputs = { x, table.unpack(params) }
      local g = ag.grad((y * arr(c.r)):sum(), inputs)
      assert(h.close(g[1], arr(c.gx), 2e-5))
      for j = 1, #params do assert(h.close(g[j + 1], arr(c.gw[j]), 5e-5), "gradient of " .. names[j]) end
    end)
  end

  it("channels_first takes (N, C, H, W) and gives what channels_last gives, transposed", function()
    for _, mk in ipairs {
      function(fmt) return nn.DepthwiseConv2D(3, { depth_multiplier = 2, data_format = fmt }) end,
      function(fmt) return nn.SeparableConv2D(4, 3, { data_format = fmt }) end,
      function(fmt) return nn.Conv2DTranspose(2, 3, { strides = 2, padding = "same", data_format = fmt }) end } do
      local a, b = mk("channels_last"), mk("channels_first")
      a(x0)
      b(x0:permute({ 1, 4, 2, 3 }))
      b:set_weights(a:get_weights())
      assert(h.close(a(x0):permute({ 1, 4, 2, 3 }), b(x0:permute({ 1, 4, 2, 3 })), 1e-5))
    end
  end)

  it("depthwise and pointwise regularizers act on their kernels; fit trains them", function()
    local R = nn.regularizers
    local d = nn.DepthwiseConv2D(3, { depthwise_regularizer = R.L2(0.1), bias_regularizer = R.L1(0.2) })
    local s = nn.SeparableConv2D(2, 3, { depthwise_regularizer = R.L1(0.1), pointwise_regularizer = R.L2(0.3) })
    local m = nn.Sequential { d, s }
    m(x0)
    local L = m:losses()
    assert.equal(4, #L)
    assert.near(0.1 * d.kernel:square():sum():item(), L[1]:item(), 1e-4)
    assert.near(0.2 * d.bias:abs():sum():item(), L[2]:item(), 1e-4)
    assert.near(0.1 * s.depthwise_kernel:abs():sum():item(), L[3]:item(), 1e-4)
    assert.near(0.3 * s.pointwise_kernel:square():sum():item(), L[4]:item(), 1e-4)
    local model = nn.Sequential { nn.SeparableConv2D(2, 3, { padding = "same" }), nn.Conv2DTranspose(1, 2, { strides = 2 }) }
    model:compile { optimizer = "adam", loss = "mse" }
    local before = model:evaluate(x0, gpu.zeros(1, 14, 12, 1)).loss
    model:fit(x0, gpu.zeros(1, 14, 12, 1), { epochs = 20, verbose = 0 })
    assert(model:evaluate(x0, gpu.zeros(1, 14, 12, 1)).loss < before)
  end)

  it("a model of them built at its first call saves and loads whole (nn.load_model)", function()
    local m = nn.Sequential { nn.SeparableConv2D(2, 3, { depthwise_regularizer = "l2", padding = "same" }),
      nn.Conv2DTranspose(2, 2, { strides = 2, kernel_constraint = nn.constraints.NonNeg() }),
      nn.DepthwiseConv2D(3, { depth_multiplier = 2 }), nn.Conv2D(2, 2), nn.BatchNormalization(), nn.Flatten(), nn.Dense(3) }
    m(x0)
    m:eval()
    local path = os.tmpname()
    m:save(path)
    local m2 = nn.load_model(path)
    os.remove(path)
    m2:eval()
    assert(h.close(m(x0), m2(x0), 1e-6))
    assert.equal(#m:losses(), #m2:losses())
    assert.equal("constraints.NonNeg()", tostring(m2[2]._cons[1][2]))
  end)

  it("misuse names the layer and the fault", function()
    h.fails({ "nn.DepthwiseConv2D", "kernel_size" }, function() nn.DepthwiseConv2D() end)
    h.fails({ "nn.DepthwiseConv2D", "depth_multiplier" }, function() nn.DepthwiseConv2D(3, { depth_multiplier = 0 }) end)
    h.fails({ "nn.DepthwiseConv2D", "unknown option" }, function() nn.DepthwiseConv2D(3, { filters = 2 }) end)
    h.fails({ "nn.SeparableConv2D", "filters" }, function() nn.SeparableConv2D(0, 3) end)
    h.fails({ "nn.SeparableConv2D", "kernel_size" }, function() nn.SeparableConv2D(2, { 3, 0 }) end)
    h.fails({ "nn.Conv2DTranspose", "output_padding", "smaller than strides" }, function() nn.Conv2DTranspose(2, 3, { output_padding = 1 }) end)
    h.fails({ "nn.Conv2DTranspose", "output_padding" }, function() nn.Conv2DTranspose(2, 3, { strides = 2, output_padding = { 1 } }) end)
    h.fails({ "nn.Conv2DTranspose", "padding" }, function() nn.Conv2DTranspose(2, 3, { padding = "full" }) end)
    h.fails({ "DepthwiseConv2D", "4-D" }, function() nn.DepthwiseConv2D(3)(gpu.ones(2, 3)) end)
    h.fails({ "smaller than the kernel" }, function() nn.DepthwiseConv2D(5)(gpu.ones(1, 3, 3, 1)) end)
    local l = nn.SeparableConv2D(2, 3)
    l(x0)
    h.fails({ "SeparableConv2D(2)", "expected 3 input channels, got 1" }, function() l(gpu.ones(1, 5, 5, 1)) end)
  end)
end)
