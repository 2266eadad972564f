-- conv3d_spec.lua — the volumetric layers against torch 2 and Keras 3 (spec/fixtures/conv3d.py):
-- nn.functional's conv3d, conv_transpose3d, max_pool3d and avg_pool3d (values and gradients
-- in float64), the modules Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d, and Keras's Conv3D,
-- MaxPooling3D and AveragePooling3D (channels-last); misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local F = nn.functional
local ag = require "gpu.autograd"
local X = require "spec.fixtures.conv3d"

local function a64(t) return gpu.array(t, { dtype = "float64" }) end
local function a32(t) return gpu.array(t, { dtype = "float32" }) end

-- torch's keyword arguments as gpulua's options (the same names here)
local function opts_of(kw)
  local o = {}
  for k, v in pairs(kw) do o[k] = v end
  return o
end

describe("volumetric functional forms against torch", function()
  for i, c in ipairs(X.torch) do
    it(("%s #%d: values and gradients (float64)"):format(c.op, i), function()
      local ins = {}
      for j, a in ipairs(c.arrays) do ins[j] = a64(a):requires_grad() end
      local y
      if c.op:match("pool3d$") then
        y = F[c.op](ins[1], c.args[1], opts_of(c.kw))
      else
        y = F[c.op](ins[1], ins[2], ins[3], opts_of(c.kw))
      end
      assert(h.close(y, a64(c.y), 1e-10))
      local g = ag.grad((y * a64(c.r)):sum(), ins)
      for j = 1, #ins do assert(h.close(g[j], a64(c.grads[j]), 1e-10), "gradient " .. j) end
    end)
  end

  it("the modules compute what the functional forms do; unbatched inputs; gradcheck", function()
    gpu.random.seed(4)
    local x = gpu.random.randn(2, 3, 4, 5, 4, { dtype = "float64" })
    local c = nn.Conv3d(3, 4, { 2, 3, 2 }, { stride = { 1, 2, 1 }, padding = 1, dtype = "float64" })
    assert(h.close(c(x), F.conv3d(x, c.weight, c.bias, { stride = { 1, 2, 1 }, padding = 1 }), 1e-12))
    assert(h.close(c(x[1]), c(x)[1], 1e-12))
    local t = nn.ConvTranspose3d(3, 2, 2, { stride = 2, output_padding = 1, dtype = "float64" })
    assert(h.close(t(x), F.conv_transpose3d(x, t.weight, t.bias, { stride = 2, output_padding = 1 }), 1e-12))
    assert(h.close(nn.MaxPool3d(2)(x), F.max_pool3d(x, 2), 0))
    assert(h.close(nn.AvgPool3d(2, { stride = 1 })(x), F.avg_pool3d(x, 2, { stride = 1 }), 1e-12))
    assert.same({ 4, 3, 2, 3, 2 }, c.weight.shape)
    assert.same({ 3, 2, 2, 2, 2 }, t.weight.shape)
    local small = gpu.random.randn(1, 2, 3, 3, 3, { dtype = "float64" })
    local w = gpu.random.randn(2, 2, 2, 2, 2, { dtype = "float64" })
    assert(ag.gradcheck(function(a, b) return F.conv3d(a, b, nil, { padding = 1, stride = 2 }) end, { small, w }))
    assert(ag.gradcheck(function(a, b) return F.conv_transpose3d(a, b, nil, { stride = 2, padding = 1 }) end, { small, w }))
  end)

  it("misuse names the function and the fault", function()
    local x = gpu.ones(1, 2, 3, 3, 3)
    h.fails({ "nn.conv3d", "5-D input" }, function() F.conv3d(gpu.ones(2, 3), gpu.ones(1, 2, 1, 1, 1)) end)
    h.fails({ "nn.conv3d", "weight must be a 5-D" }, function() F.conv3d(x, gpu.ones(1, 2, 1, 1)) end)
    h.fails({ "nn.conv3d", "expected 4 input channels" }, function() F.conv3d(x, gpu.ones(1, 4, 1, 1, 1)) end)
    h.fails({ "nn.conv3d", "smaller than the kernel" }, function() F.conv3d(x, gpu.ones(1, 2, 5, 1, 1)) end)
    h.fails({ "nn.conv3d", "unknown option" }, function() F.conv3d(x, gpu.ones(1, 2, 1, 1, 1), nil, { strid = 1 }) end)
    h.fails({ "nn.conv3d", "stride" }, function() F.conv3d(x, gpu.ones(1, 2, 1, 1, 1), nil, { stride = { 1, 1 } }) end)
    h.fails({ "nn.conv_transpose3d", "output_padding" }, function() F.conv_transpose3d(x, gpu.ones(2, 1, 2, 2, 2), nil, { output_padding = 1 }) end)
    h.fails({ "nn.max_pool3d", "half the kernel" }, function() F.max_pool3d(x, 2, { padding = 2 }) end)
    h.fails({ "nn.Conv3d", "groups" }, function() nn.Conv3d(3, 4, 2, { groups = 2 }) end)
    h.fails({ "nn.Conv3d", "padding_mode" }, function() nn.Conv3d(2, 4, 2, { padding_mode = "reflect" }) end)
    h.fails({ "nn.AvgPool3d", "count_include_pad" }, function() nn.AvgPool3d(2, { count_include_pad = false }) end)
    h.fails({ "Conv3d(2, 4)", "expected 2 input channels" }, function() nn.Conv3d(2, 4, 2)(gpu.ones(1, 3, 3, 3, 3)) end)
  end)
end)

describe("Keras's volumetric layers against Keras 3", function()
  local xk = a32(X.xk)
  for i, c in ipairs(X.keras) do
    it(("%s #%d"):format(c.kind, i), function()
      local opts = opts_of(c.kw)
      local args = { table.unpack(c.args) }
      args[#args + 1] = opts
      local l = nn[c.kind](table.unpack(args))
      local y0 = l(xk)
      if #c.weights > 0 then
        local ws = {}
        for j, w in ipairs(c.weights) do ws[j] = a32(w) end
        l:set_weights(ws)
      end
      assert(h.close(l(xk), a32(c.y), 2e-5))
      assert.same(c.y and a32(c.y).shape, y0.shape)
    end)
  end
  it("channels_first, regularizers, training, and misuse", function()
    local a = nn.Conv3D(2, 2, { padding = "same" })
    local b = nn.Conv3D(2, 2, { padding = "same", data_format = "channels_first" })
    a(xk); b(xk:permute({ 1, 5, 2, 3, 4 }))
    b:set_weights(a:get_weights())
    assert(h.close(a(xk):permute({ 1, 5, 2, 3, 4 }), b(xk:permute({ 1, 5, 2, 3, 4 })), 1e-5))
    local r = nn.Conv3D(2, 2, { kernel_regularizer = nn.regularizers.L2(0.1) })
    r(xk)
    assert.near(0.1 * r.kernel:square():sum():item(), r:losses()[1]:item(), 1e-4)
    local m = nn.Sequential { nn.Conv3D(2, 2, { activation = "relu" }), nn.MaxPooling3D(2, { padding = "same" }), nn.Flatten(), nn.Dense(1) }
    m:compile { optimizer = "adam", loss = "mse" }
    local before = m:evaluate(xk, gpu.ones(1, 1)).loss
    m:fit(xk, gpu.ones(1, 1), { epochs = 10, verbose = 0 })
    assert(m:evaluate(xk, gpu.ones(1, 1)).loss < before)
    h.fails({ "nn.Conv3D", "filters" }, function() nn.Conv3D(0, 2) end)
    h.fails({ "nn.Conv3D", "kernel_size" }, function() nn.Conv3D(2, { 2, 2 }) end)
    h.fails({ "Conv3D(2)", "5-D input" }, function() nn.Conv3D(2, 2)(gpu.ones(1, 4, 4, 2)) end)
    h.fails({ "nn.MaxPooling3D", "pool_size" }, function() nn.MaxPooling3D(0) end)
    h.fails({ "nn.AveragePooling3D", "smaller than the pool" }, function() nn.AveragePooling3D(5)(gpu.ones(1, 4, 4, 4, 1)) end)
  end)
end)
