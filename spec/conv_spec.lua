-- spec/conv_spec.lua — gpu.im2col / gpu.col2im, nn.Conv2d, MaxPool2d, AvgPool2d,
-- BatchNorm1d/2d (lua/gpu/conv.lua): values by hand and against PyTorch (fixtures made
-- once by spec/fixtures/conv_torch.py), float64 gradient checks, buffers in state
-- dicts, errors naming the layer and both sizes, and examples/cnn.lua --small.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local ag = require "gpu.autograd"
local fx = dofile("spec/fixtures/conv_torch.lua")

local function check(fn, inputs, opts)
  local ok, msg = ag.gradcheck(fn, inputs, opts)
  assert(ok, msg)
end
local function r(dev, seed, ...)
  return gpu.random.Generator(seed):uniform(-1, 1, { ... }, { dtype = "float64", device = dev })
end
local function A(t, dev) return gpu.array(t, { dtype = "float64", device = dev }) end
local function errs(fn, ...)
  local ok, msg = pcall(fn, ...)
  assert.is_false(ok)
  return tostring(msg)
end

for _, dev in ipairs(h.devices()) do
  local o64 = { dtype = "float64", device = dev }
  describe("conv on " .. dev, function()

    describe("im2col and col2im", function()
      it("lay out windows by hand (channel, then kernel row, then column)", function()
        local x = gpu.arange(1, 17, o64):reshape(1, 1, 4, 4)
        local c = gpu.im2col(x, { kernel = 2, stride = 2 })
        h.assert_close(c, { { { 1, 3, 9, 11 }, { 2, 4, 10, 12 }, { 5, 7, 13, 15 }, { 6, 8, 14, 16 } } })
        h.assert_close(gpu.col2im(c, { 1, 1, 4, 4 }, { kernel = 2, stride = 2 }), x)
        -- overlapping windows add up: each pixel counted once per window that reads it
        local ones = gpu.ones({ 1, 9, 16 }, o64)
        h.assert_close(gpu.col2im(ones, { 1, 1, 4, 4 }, { kernel = 3, padding = 1 }),
          { { { { 4, 6, 6, 4 }, { 6, 9, 9, 6 }, { 6, 9, 9, 6 }, { 4, 6, 6, 4 } } } })
        -- padding reads pad_value; two channels stack
        local x2 = gpu.arange(1, 9, o64):reshape(1, 2, 2, 2)
        local c2 = x2:im2col{ kernel = { 1, 2 }, padding = { 0, 1 }, stride = { 1, 2 }, pad_value = -7 }
        h.assert_close(c2, { { { -7, 2, -7, 4 }, { 1, -7, 3, -7 }, { -7, 6, -7, 8 }, { 5, -7, 7, -7 } } })
        -- dilation 2 on a 5-wide row: taps 1, 3, 5
        local x3 = gpu.arange(1, 6, o64):reshape(1, 1, 1, 5)
        h.assert_close(gpu.im2col(x3, { kernel = { 1, 3 }, dilation = 2 }), { { { 1 }, { 3 }, { 5 } } })
      end)

      it("col2im is im2col's adjoint (stride, padding, dilation)", function()
        for _, o in ipairs { { kernel = 3 }, { kernel = { 3, 2 }, stride = { 2, 1 }, padding = 1, dilation = { 1, 2 } },
                             { kernel = 2, stride = 3, padding = { 1, 0 } } } do
          local x = r(dev, 1, 2, 3, 7, 6)
          local c = gpu.im2col(x, o)
          local v = r(dev, 2, table.unpack(c.shape))
          local lhs = (c * v):sum():item()
          local rhs = (x * gpu.col2im(v, x.shape, o)):sum():item()
          assert.is_true(math.abs(lhs - rhs) < 1e-9 * (1 + math.abs(lhs)), lhs .. " vs " .. rhs)
        end
      end)

      it("float32, float16 and bfloat16 keep their dtype; strided inputs work", function()
        local x = gpu.arange(1, 17, o64):reshape(1, 1, 4, 4)
        local want = gpu.im2col(x, { kernel = 2 })
        for _, dt in ipairs { "float32", "float16", "bfloat16" } do
          local c = gpu.im2col(x:astype(dt), { kernel = 2 })
          assert.equal(dt, c.dtype)
          h.assert_close(c, want, 1e-2)
          assert.equal(dt, gpu.col2im(c, { 1, 1, 4, 4 }, { kernel = 2 }).dtype)
        end
        local xt = x:transpose(3, 4)
        h.assert_close(gpu.im2col(xt, { kernel = 2 }), gpu.im2col(xt:contiguous(), { kernel = 2 }))
      end)

      it("reject bad input, naming the function and the fault; the input is unchanged", function()
        local x = gpu.arange(1, 17, o64):reshape(1, 1, 4, 4)
        assert.matches("im2col", errs(gpu.im2col, x:astype("int32"), { kernel = 2 }))
        assert.matches("float", errs(gpu.im2col, x:astype("int32"), { kernel = 2 }))
        assert.matches("im2col.*4%-D", errs(gpu.im2col, x:reshape(4, 4), { kernel = 2 }))
        assert.matches("im2col.*larger than the padded input 4x4", errs(gpu.im2col, x, { kernel = 5 }))
        assert.matches("im2col.*stride must be positive", errs(gpu.im2col, x, { kernel = 2, stride = 0 }))
        assert.matches("im2col.*padding must be >= 0", errs(gpu.im2col, x, { kernel = 2, padding = -1 }))
        assert.matches("im2col.*unknown option 'foo'", errs(gpu.im2col, x, { kernel = 2, foo = 1 }))
        assert.matches("im2col.*'kernel' is required", errs(gpu.im2col, x, {}))
        assert.matches("col2im.*%(1, ?4, ?4%).*%(1, ?4, ?9%)",
          errs(gpu.col2im, gpu.zeros({ 1, 4, 4 }, o64), { 1, 1, 4, 4 }, { kernel = 2 }))
        assert.matches("col2im.*output_shape", errs(gpu.col2im, gpu.zeros({ 1, 4, 4 }, o64), { 1, 4, 4 }, { kernel = 2 }))
        h.assert_close(x, gpu.arange(1, 17, o64):reshape(1, 1, 4, 4))
      end)
    end)

    describe("gradient checks (float64 central differences)", function()
      it("Conv2d with stride, padding, dilation, groups and without bias", function()
        for _, o in ipairs { {}, { stride = 2, padding = 1 }, { dilation = 2, padding = 2 }, { groups = 2 },
                             { stride = { 2, 1 }, padding = { 1, 0 }, dilation = { 1, 2 }, groups = 2 } } do
          local c = nn.Conv2d(4, 6, { 3, 2 }, { dtype = "float64", device = dev, stride = o.stride,
            padding = o.padding, dilation = o.dilation, groups = o.groups })
          check(function(x) return c(x) end, { r(dev, 1, 2, 4, 6, 5), c.weight, c.bias })
        end
        local nb = nn.Conv2d(2, 3, 2, { dtype = "float64", device = dev, bias = false })
        assert.is_nil(nb.bias)
        check(function(x) return nb(x) end, { r(dev, 3, 1, 2, 3, 4), nb.weight })
      end)
      it("MaxPool2d and AvgPool2d (overlapping windows, padding)", function()
        check(function(x) return nn.MaxPool2d(2)(x) end, { r(dev, 2, 2, 3, 5, 4) })
        check(function(x) return nn.MaxPool2d(3, { stride = 2, padding = 1 })(x) end, { r(dev, 4, 2, 3, 5, 4) })
        check(function(x) return nn.AvgPool2d(2)(x) end, { r(dev, 5, 2, 3, 5, 4) })
        check(function(x) return nn.AvgPool2d(3, { stride = 2, padding = 1 })(x) end, { r(dev, 6, 2, 3, 5, 4) })
      end)
      it("BatchNorm1d (2-D and 3-D input) and BatchNorm2d, training and eval", function()
        local b1 = nn.BatchNorm1d(3, o64)
        check(function(x) return b1(x) end, { r(dev, 7, 5, 3), b1.weight, b1.bias })
        check(function(x) return b1(x) end, { r(dev, 8, 4, 3, 2), b1.weight, b1.bias })
        local b2 = nn.BatchNorm2d(3, o64)
        check(function(x) return b2(x) end, { r(dev, 9, 4, 3, 2, 2), b2.weight, b2.bias })
        b2:eval()
        check(function(x) return b2(x) end, { r(dev, 10, 4, 3, 2, 2), b2.weight, b2.bias })
        local na = nn.BatchNorm2d(2, { dtype = "float64", device = dev, affine = false })
        assert.is_nil(na.weight)
        check(function(x) return na(x) end, { r(dev, 11, 3, 2, 2, 2) })
      end)
    end)

    describe("against PyTorch", function()
      it("conv2d values and gradients (stride, padding, dilation, groups)", function()
        local f = fx.conv
        local x, w, b = A(f.x, dev), A(f.w, dev), A(f.b, dev)
        x:requires_grad(); w:requires_grad(); b:requires_grad()
        local y = nn.conv2d(x, w, b, { stride = { 2, 1 }, padding = 1, dilation = { 1, 2 }, groups = 2 })
        h.assert_close(y, A(f.y), 1e-10)
        ;(y * A(f.gy, dev)):sum():backward()
        h.assert_close(x.grad, A(f.gx), 1e-10)
        h.assert_close(w.grad, A(f.gw), 1e-10)
        h.assert_close(b.grad, A(f.gb), 1e-10)
      end)
      it("max and average pooling, and max-pool's gradient", function()
        local f = fx.pool
        local x = A(f.x, dev)
        x:requires_grad()
        local y, idx = nn.max_pool2d(x, 3, { stride = 2, padding = 1, return_indices = true })
        h.assert_close(y, A(f.max), 1e-12)
        assert.same(y.shape, idx.shape)
        assert.equal("int64", idx.dtype)
        h.assert_close(idx, A(f.indices), 0)
        ;(y * A(f.gy, dev)):sum():backward()
        h.assert_close(x.grad, A(f.gx), 1e-12)
        h.assert_close(nn.AvgPool2d(3, { stride = 2, padding = 1 })(A(f.x, dev)), A(f.avg), 1e-12)
      end)
      it("BatchNorm2d: training output, running statistics, eval output", function()
        local f = fx.bn
        local bn = nn.BatchNorm2d(3, { dtype = "float64", device = dev, momentum = 0.2 })
        gpu.no_grad(function() bn.weight[{}] = A({ 1.5, -0.5, 2 }, dev); bn.bias[{}] = A({ 0.1, 0.2, -0.3 }, dev) end)
        h.assert_close(bn(A(f.x, dev)), A(f.y_train), 1e-10)
        h.assert_close(bn.running_mean, A(f.running_mean), 1e-12)
        h.assert_close(bn.running_var, A(f.running_var), 1e-12)
        bn:eval()
        h.assert_close(bn(A(f.x, dev)), A(f.y_eval), 1e-10)
        h.assert_close(bn.running_mean, A(f.running_mean), 1e-12)    -- eval leaves them alone
      end)
    end)

    describe("autocast", function()
      -- the float32 reference and the autocast run of one layer: outputs and gradients
      local function run(c, x, dtype)
        c:zero_grad()
        local xx = x:detach():requires_grad()
        local y = dtype and gpu.autocast(dtype, function() return c(xx) end) or c(xx)
        ;(y * y):sum():backward()
        return y, xx.grad, c.weight.grad, c.bias.grad
      end
      for _, case in ipairs { { "bf16", 3e-2 }, { "fp16", 4e-3 } } do
        it("conv2d under " .. case[1] .. " matches float32 within its tolerance; gradients reach float32", function()
          local c = nn.Conv2d(4, 6, 3, { padding = 1, stride = { 1, 2 }, groups = 2, device = dev })
          local x = gpu.random.Generator(21):normal(0, 1, { 2, 4, 7, 6 }, { device = dev })
          local y0, gx0, gw0, gb0 = run(c, x)
          local y, gx, gw, gb = run(c, x, case[1])
          assert.equal("float32", y.dtype)
          assert.same(y0.shape, y.shape)
          h.assert_close(y, y0, case[2])
          assert.is_true((y - y0):abs():max():item() > 0, "autocast computed in float32")
          for _, pair in ipairs { { gx, gx0 }, { gw, gw0 }, { gb, gb0 } } do
            assert.equal("float32", pair[1].dtype)
            h.assert_close(pair[1], pair[2], 4 * case[2])
          end
          assert.equal("float32", c.weight.dtype)
        end)
      end
      it("leaves float64 layers outside autocast alone and float16 inputs in float16", function()
        local c = nn.Conv2d(2, 3, 2, { dtype = "float16", device = dev })
        local x = gpu.ones({ 1, 2, 3, 3 }, { dtype = "float16", device = dev })
        local y = gpu.autocast("bf16", function() return c(x) end)
        assert.equal("float16", y.dtype)
        local c64 = nn.Conv2d(2, 3, 2, { dtype = "float64", device = dev })
        assert.equal("float64", c64(x:astype("float64")).dtype)
      end)
    end)

    describe("layers", function()
      it("Conv2d output shapes, repr, float32 by default", function()
        local c = nn.Conv2d(3, 8, 3, { stride = 2, padding = 1, device = dev })
        local y = c(gpu.zeros({ 2, 3, 9, 7 }, { device = dev }))
        assert.same({ 2, 8, 5, 4 }, y.shape)
        assert.equal("float32", y.dtype)
        assert.same({ 8, 3, 3, 3 }, c.weight.shape)
        assert.equal("Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))", tostring(c))
        assert.same({ 2, 3, 4, 3 }, nn.MaxPool2d(2)(gpu.zeros({ 2, 3, 9, 7 }, { device = dev })).shape)
        assert.same({ 2, 3, 5, 4 }, nn.AvgPool2d(3, { stride = 2, padding = 1 })(gpu.zeros({ 2, 3, 9, 7 })).shape)
      end)
      it("BatchNorm running stats are in state_dict but not parameters, and load back", function()
        local m = nn.Sequential{ nn.Conv2d(1, 2, 3, { device = dev }), nn.BatchNorm2d(2, { device = dev }) }
        local sd = m:state_dict()
        for _, k in ipairs { "1.weight", "1.bias", "2.weight", "2.bias", "2.running_mean", "2.running_var" } do
          assert.is_not_nil(sd[k], k)
        end
        assert.equal(4, #m:parameters())
        m(gpu.random.normal(3, 2, { 4, 1, 5, 5 }, { device = dev }))
        local saved = {}
        for k, v in pairs(m:state_dict()) do saved[k] = v:copy() end
        local m2 = nn.Sequential{ nn.Conv2d(1, 2, 3, { device = dev }), nn.BatchNorm2d(2, { device = dev }) }
        m2:load_state_dict(saved)
        h.assert_close(m2.layers and m2.layers[2].running_mean or m2:state_dict()["2.running_mean"], saved["2.running_mean"])
        h.assert_close(m2:state_dict()["2.running_var"], saved["2.running_var"])
        -- summary runs a dummy batch but leaves the running statistics alone
        local rv = m2:state_dict()["2.running_var"]:copy()
        m2:summary({ 1, 6, 6 })
        h.assert_close(m2:state_dict()["2.running_var"], rv, 0)
        saved["2.running_var"] = gpu.ones({ 3 }, { device = dev })
        assert.matches("load_state_dict: mis%-shaped: 2%.running_var %(expected %(2%), got %(3%)%)",
          errs(function() m2:load_state_dict(saved) end))
      end)
      it("errors name the layer and both sizes; inputs unchanged", function()
        local x = gpu.zeros({ 1, 2, 5, 5 }, { device = dev })
        assert.matches("Conv2d%(3, 4%): expected 3 input channels, got 2",
          errs(function() return nn.Conv2d(3, 4, 3, { device = dev })(x) end))
        assert.matches("Conv2d%(3, 4%): expected a 4%-D input, got shape %(2, 5, 5%)",
          errs(function() return nn.Conv2d(3, 4, 3)(gpu.zeros(2, 5, 5)) end))
        assert.matches("Conv2d%(2, 4%): the input 5x5 %(padded 5x5%) is smaller than the kernel 7x7",
          errs(function() return nn.Conv2d(2, 4, 7, { device = dev })(x) end))
        assert.matches("BatchNorm2d%(3%): expected 3 input channels, got 2",
          errs(function() return nn.BatchNorm2d(3, { device = dev })(x) end))
        assert.matches("BatchNorm1d%(2%): expected a 2%- or 3%-D input",
          errs(function() return nn.BatchNorm1d(2, { device = dev })(x) end))
        assert.matches("BatchNorm1d%(2%): training needs more than one value per channel",
          errs(function() return nn.BatchNorm1d(2, { device = dev })(gpu.zeros({ 1, 2 }, { device = dev })) end))
        assert.matches("MaxPool2d: the input 1x5", errs(function() return nn.MaxPool2d(2)(gpu.zeros(1, 1, 1, 5)) end))
        assert.matches("'nn.Conv2d' %(option 'groups' %(2%) must divide in_channels 3 and out_channels 4%)",
          errs(nn.Conv2d, 3, 4, 3, { groups = 2 }))
        assert.matches("Conv2d: kernel_size must be positive integers", errs(nn.Conv2d, 3, 4, 0))
        assert.matches("MaxPool2d: padding 2x2 must be at most half the kernel 2x2",
          errs(function() return nn.MaxPool2d(2, { padding = 2 })(x) end))
        assert.matches("conv2d: bias must hold 3 values %(one per output channel%), got %(2%)",
          errs(nn.conv2d, x, gpu.zeros({ 3, 2, 1, 1 }), gpu.zeros({ 2 })))
        assert.matches("conv2d: weight must be a 4%-D array", errs(nn.conv2d, x, gpu.zeros({ 3, 2 })))
        h.assert_close(x, gpu.zeros({ 1, 2, 5, 5 }))
      end)
    end)
  end)
end

describe("gpu.dnn (the library entry points nn uses: cuDNN on cuda, oneDNN on the cpu)", function()
  local cpu = { device = "cpu" }
  local function Z(...) return gpu.zeros({ ... }, cpu) end
  local function O(...) return gpu.ones({ ... }, cpu) end
  local onednn = gpu.dnn.available("cpu") == true

  it("says whether a device has its library, and gpu.config() which path convolutions take", function()
    local ok, why = gpu.dnn.available("cpu")
    if os.getenv("GPULUA_DNNL") == "0" then
      assert.is_false(ok)
      assert.matches("GPULUA_DNNL=0 turns oneDNN off", why)
    elseif ok then
      -- oneDNN computes float32 only, and nn's softmax stays on array ops
      assert.is_true(gpu.dnn.available("cpu", "float32"))
      assert.is_true(gpu.dnn.available("cpu", "float32", "batch_norm"))
      local ok64, why64 = gpu.dnn.available("cpu", "float64", "pool")
      assert.is_false(ok64)
      assert.matches("does not take this dtype", why64)
      assert.is_false(gpu.dnn.available("cpu", "float32", "softmax"))
      assert.matches("^%d+%.%d+%.%d+$", gpu.config().versions.onednn)
    else
      assert.matches("oneDNN", why)
    end
    assert.matches("bad argument #3 to 'gpu.dnn.available' %(invalid option 'lstm'%)", errs(gpu.dnn.available, "cpu", "float32", "lstm"))
    assert.matches("bad argument #2 to 'gpu.dnn.available'", errs(gpu.dnn.available, "cpu", "float8"))
    local ok2, why2 = gpu.dnn.available("cuda:63")
    assert.is_false(ok2)
    assert.is_string(why2)
    assert.matches("unknown device 'tpu'", errs(gpu.dnn.available, "tpu"))
    assert.is_true(gpu.dnn.enabled)
    local conv = gpu.config().conv
    assert.is_string(conv)
    assert.is_truthy(conv == "cudnn" or conv == "onednn" or conv:match("^im2col %+ ") or conv:match("^none %("), conv)
  end)

  it("gpu.config().conv names the path a convolution on the default device takes", function()
    local conv = gpu.config().conv
    local dev = gpu.device()
    if dev == "cpu" then
      -- never "cudnn" on the cpu, even where libcudnn loads: oneDNN, else im2col + BLAS
      if onednn then
        assert.equal("onednn", conv)
        gpu.dnn.enabled = false
        local off = gpu.config().conv
        gpu.dnn.enabled = true
        assert.equal("im2col + BLAS (cpu; gpu.dnn.enabled is false)", off)
      else
        assert.matches("^im2col %+ BLAS %(cpu; ", conv)
      end
    elseif gpu.dnn.available(dev) == true then
      assert.equal("cudnn", conv)
      gpu.dnn.enabled = false
      local off = gpu.config().conv
      gpu.dnn.enabled = true
      assert.equal("im2col + cublas (gpu.dnn.enabled is false)", off)
    else
      assert.matches("^im2col %+ cublas %(", conv)
    end
    assert.equal(conv, gpu.config().conv)   -- asking twice changes nothing
  end)

  it("checks operands before anything runs, naming the function and the fault", function()
    local x, w = Z(2, 4, 6, 6), Z(6, 2, 3, 3)
    assert.matches("conv2d: input must be a float array .*got int32", errs(gpu.dnn.conv2d, x:astype("int32"), w))
    assert.matches("conv2d: weight is float64, expected float32", errs(gpu.dnn.conv2d, x, w:astype("float64")))
    assert.matches("conv2d: weight must be 4%-D", errs(gpu.dnn.conv2d, x, Z(6, 18)))
    assert.matches("conv2d: expected 2 input channels %(weight 2 x groups 1%), got 4", errs(gpu.dnn.conv2d, x, w))
    assert.matches("groups %(4%) must be a positive integer dividing the 6 output channels",
      errs(gpu.dnn.conv2d, x, w, { groups = 4 }))
    assert.matches("conv2d: the %(dilated%) kernel 7x7 is larger than the padded input 6x6",
      errs(gpu.dnn.conv2d, x, Z(6, 4, 7, 7)))
    assert.matches("conv2d: stride must be positive", errs(gpu.dnn.conv2d, x, Z(6, 4, 3, 3), { stride = 0 }))
    assert.matches("unknown option 'pad'", errs(gpu.dnn.conv2d, x, w, { pad = 1 }))
    assert.matches("option 'groups' must be >= 1, got integer 0", errs(gpu.dnn.conv2d, x, w, { groups = 0 }))
    assert.matches("conv2d_backward_data: grad_output has shape %(2, ?6, ?6, ?6%), expected %(2, ?6, ?4, ?4%)",
      errs(gpu.dnn.conv2d_backward_data, Z(2, 6, 6, 6), Z(6, 4, 3, 3), { 2, 4, 6, 6 }))
    assert.matches("input_shape must hold 4 integers", errs(gpu.dnn.conv2d_backward_data, Z(2, 6, 4, 4), w, { 2, 4, 6 }))
    assert.matches("conv2d_backward_filter: weight_shape must be",
      errs(gpu.dnn.conv2d_backward_filter, x, Z(2, 6, 4, 4), { 6, 4, 0, 3 }))
    assert.matches("conv2d_backward_filter: grad_output is float64",
      errs(gpu.dnn.conv2d_backward_filter, x, Z(2, 6, 4, 4):astype("float64"), { 6, 4, 3, 3 }))
    -- shapes given for the result are sized first: H + 2 * padding and in/groups x groups
    -- below would overflow int64 (UBSan: signed overflow)
    assert.matches("conv2d_backward_data: array is too big",
      errs(gpu.dnn.conv2d_backward_data, Z(1, 1, 2, 2), Z(1, 1, 3, 3), { 1, 1, math.maxinteger - 1, 4 }, { padding = 2 }))
    assert.matches("conv2d_backward_filter: array is too big",
      errs(gpu.dnn.conv2d_backward_filter, x, Z(2, 6, 4, 4), { 6, 1 << 62, 3, 3 }, { groups = 2 }))
    assert.matches("max_pool2d: input must be 4%-D", errs(gpu.dnn.max_pool2d, Z(4, 6, 6), { kernel = 2 }))
    assert.matches("avg_pool2d: padding 2x2 must be at most half the kernel 2x2",
      errs(gpu.dnn.avg_pool2d, x, { kernel = 2, padding = 2 }))
    assert.matches("'kernel' is required", errs(gpu.dnn.max_pool2d, x, {}))
    assert.matches("unknown option 'dilation'", errs(gpu.dnn.max_pool2d, x, { kernel = 2, dilation = 2 }))
    assert.matches("max_pool2d_backward: grad_output has shape %(2, ?4, ?2, ?2%), expected %(2, ?4, ?3, ?3%)",
      errs(gpu.dnn.max_pool2d_backward, x, Z(2, 4, 3, 3), Z(2, 4, 2, 2), { kernel = 2 }))
    assert.matches("batch_norm: input must be float32 or float64, got float16",
      errs(gpu.dnn.batch_norm, x:astype("float16"), O(4), Z(4)))
    assert.matches("batch_norm: weight has shape %(3,?%), expected %(4,?%)", errs(gpu.dnn.batch_norm, x, O(3), Z(4)))
    assert.matches("batch_norm: bias is float64, expected float32",
      errs(gpu.dnn.batch_norm, x, O(4), gpu.zeros(4, { dtype = "float64", device = "cpu" })))
    assert.matches("running_mean and running_var go together", errs(gpu.dnn.batch_norm, x, O(4), Z(4), Z(4)))
    assert.matches("inference needs running_mean", errs(gpu.dnn.batch_norm, x, O(4), Z(4), nil, nil, { training = false }))
    assert.matches("training needs more than one value per channel",
      errs(gpu.dnn.batch_norm, Z(1, 4), O(4), Z(4)))
    assert.matches("unknown option 'mom'", errs(gpu.dnn.batch_norm, x, O(4), Z(4), nil, nil, { mom = 1 }))
    assert.matches("batch_norm_backward: grad_output has shape %(2, ?4%), expected %(2, ?4, ?6, ?6%)",
      errs(gpu.dnn.batch_norm_backward, x, Z(2, 4), O(4), Z(4), O(4)))
    -- well-formed calls the cpu's library does not take: float64 (oneDNN computes in float32),
    -- or every call without oneDNN; the message says what nn does there instead
    local D = onednn and function(...) return gpu.zeros({ ... }, { dtype = "float64", device = "cpu" }) end or Z
    local x64 = D(2, 4, 6, 6)
    for _, call in ipairs {
      function() return gpu.dnn.conv2d(x64, D(6, 4, 3, 3)) end,
      function() return gpu.dnn.conv2d_backward_data(D(2, 6, 4, 4), D(6, 4, 3, 3), { 2, 4, 6, 6 }) end,
      function() return gpu.dnn.conv2d_backward_filter(x64, D(2, 6, 4, 4), { 6, 4, 3, 3 }) end,
      function() return gpu.dnn.max_pool2d(x64, { kernel = 2 }) end,
      function() return gpu.dnn.avg_pool2d_backward(x64, D(2, 4, 3, 3), D(2, 4, 3, 3), { kernel = 2 }) end,
      function() return gpu.dnn.batch_norm(x64, D(4) + 1, D(4), D(4), D(4) + 1) end,
      function() return gpu.dnn.batch_norm_backward(x64, x64, D(4) + 1, D(4), D(4) + 1) end,
    } do
      if onednn then
        assert.matches("not supported on cpu for float64 %(onednn has no float64 [a-z ]+; nn uses its own path%)", errs(call))
      else
        assert.matches("not supported on cpu %(", errs(call))
      end
    end
    if onednn then
      assert.matches("softmax: softmax is not supported on cpu for float32 %(onednn has no float32 softmax",
        errs(gpu.dnn.softmax, Z(2, 3)))
    end
  end)

  it("refuses operands on two devices", function()
    if not gpu.is_available() then return pending("no cuda device answers") end
    local x, w = Z(2, 4, 6, 6), gpu.zeros({ 6, 4, 3, 3 }, { device = "cuda" })
    assert.matches("conv2d: weight is on cuda:0 but the input is on cpu", errs(gpu.dnn.conv2d, x, w))
    assert.matches("batch_norm: weight is on cuda:0 but the input is on cpu",
      errs(gpu.dnn.batch_norm, x, gpu.ones(4, { device = "cuda" }), Z(4)))
    assert.matches("max_pool2d_backward: output is on cuda:0",
      errs(gpu.dnn.max_pool2d_backward, x, gpu.zeros({ 2, 4, 3, 3 }, { device = "cuda" }), Z(2, 4, 3, 3), { kernel = 2 }))
  end)
end)

-- conv.lua's cuDNN path (argument passing, the tape nodes, the eval-mode batch-norm
-- gradient) checked on the cpu: gpu.dnn's functions replaced by stand-ins computed with
-- the im2col path (gradients by a nested autograd pass), then the layers compared with
-- the reference and gradient-checked.
describe("the cuDNN path of the layers, with stand-ins for gpu.dnn", function()
  local saved = {}
  local function ref(fn, ...)
    gpu.dnn.enabled = false
    local res = table.pack(pcall(fn, ...))
    gpu.dnn.enabled = true
    assert(res[1], res[2])
    return table.unpack(res, 2, res.n)
  end
  -- the gradient of sum(f(v) * dy) with respect to v, by the reference path
  local function vjp(f, v, dy)
    return ref(function()
      return ag.enable_grad(function()
        local v0 = v:detach():requires_grad()
        f(v0):backward(dy)
        return v0.grad
      end)
    end)
  end
  local calls
  -- a stand-in for a dispatched kernel records itself with the kernel's own rule
  local function op(name, f)
    return function(...)
      local res = table.pack(f(...))
      return ag.record_op("dnn." .. name, res, ...)
    end
  end
  local stand_in = {
    available = function() return true end,
    conv2d = op("conv2d", function(x, w, g)
      calls.conv2d = (calls.conv2d or 0) + 1
      return ref(gpu.no_grad, function() return nn.conv2d(x, w, nil, g) end)
    end),
    conv2d_backward_data = function(dy, w, xs, g)
      calls.bwd_data = (calls.bwd_data or 0) + 1
      return vjp(function(v) return nn.conv2d(v, w:detach(), nil, g) end, gpu.zeros(xs, { dtype = dy.dtype }), dy)
    end,
    conv2d_backward_filter = function(x, dy, ws, g)
      calls.bwd_filter = (calls.bwd_filter or 0) + 1
      return vjp(function(v) return nn.conv2d(x:detach(), v, nil, g) end, gpu.zeros(ws, { dtype = dy.dtype }), dy)
    end,
    batch_norm = op("batch_norm", function(x, w, b, rm, rv, o)
      calls.batch_norm = (calls.batch_norm or 0) + 1
      if not o.training then
        return ref(gpu.no_grad, function() return nn.batch_norm(x, rm, rv, w, b, false, nil, o.eps) end)
      end
      local axes = { 1 }
      for i = 3, x.ndim do axes[#axes + 1] = i end
      local y = ref(gpu.no_grad, function() return nn.batch_norm(x, rm, rv, w, b, true, o.momentum, o.eps) end)
      return gpu.no_grad(function()
        local m = x:mean(axes)
        local v = x:var(axes)
        return y, m, 1 / (v + o.eps):sqrt()
      end)
    end),
    batch_norm_backward = function(x, dy, w, sm, si, o)
      calls.bn_bwd = (calls.bn_bwd or 0) + 1
      local f = function(xv, wv, bv) return nn.batch_norm(xv, nil, nil, wv, bv, true, 0.1, o.eps) end
      local b0 = gpu.zeros(w.shape, { dtype = w.dtype })
      return vjp(function(v) return f(v, w:detach(), b0) end, x, dy),
             vjp(function(v) return f(x:detach(), v, b0) end, w, dy),
             vjp(function(v) return f(x:detach(), w:detach(), v) end, b0, dy)
    end,
  }
  for _, name in ipairs { "max_pool2d", "avg_pool2d" } do
    stand_in[name] = op(name, function(x, o)
      calls[name] = (calls[name] or 0) + 1
      return ref(gpu.no_grad, function() return nn[name](x, o.kernel, { stride = o.stride, padding = o.padding }) end)
    end)
    stand_in[name .. "_backward"] = function(x, _, dy, o)
      calls[name .. "_backward"] = (calls[name .. "_backward"] or 0) + 1
      return vjp(function(v) return nn[name](v, o.kernel, { stride = o.stride, padding = o.padding }) end, x, dy)
    end
  end
  before_each(function()
    calls = {}
    for k, v in pairs(stand_in) do saved[k] = gpu.dnn[k]; gpu.dnn[k] = v end
  end)
  after_each(function()
    for k in pairs(stand_in) do gpu.dnn[k] = saved[k] end
    gpu.dnn.enabled = true
  end)

  it("gives the reference's outputs, running statistics and gradients, training and eval", function()
    local o = { dtype = "float64", device = "cpu" }
    local function net(affine)
      return nn.Sequential{
        nn.Conv2d(3, 4, 3, { padding = 1, groups = 1, dtype = "float64", device = "cpu" }),
        nn.BatchNorm2d(4, { dtype = "float64", device = "cpu", affine = affine }), nn.MaxPool2d(2),
        nn.Conv2d(4, 4, 2, { groups = 2, stride = { 1, 2 }, dtype = "float64", device = "cpu" }),
        nn.AvgPool2d(2, { stride = 1, padding = 1 }), nn.Flatten(),
        nn.BatchNorm1d(4 * 3 * 3, { dtype = "float64", device = "cpu", track_running_stats = false }),
      }
    end
    for _, affine in ipairs { true, false } do
      local m1, m2 = net(affine), net(affine)
      local sd = {}
      for k, v in pairs(m1:state_dict()) do sd[k] = v:copy() end
      m2:load_state_dict(sd)
      local x = r("cpu", 31, 2, 3, 6, 8)
      local gy = r("cpu", 32, 2, 36)
      for _, train in ipairs { true, false } do
        local outs = {}
        for i, m in ipairs { m1, m2 } do
          if train then m:train() else m:eval() end
          m:zero_grad()
          local xx = x:detach():requires_grad()
          local y = i == 1 and ref(m, xx) or m(xx)
          ;(i == 1 and ref or function(f, ...) return f(...) end)(function() (y * gy):sum():backward() end)
          local out = { y = y, gx = xx.grad }
          for k, v in pairs(m:state_dict()) do out[k] = v; out["grad " .. k] = v.grad or false end
          outs[i] = out
        end
        for k, v in pairs(outs[1]) do
          if v then h.assert_close(outs[2][k], v, 1e-10) else assert.is_false(outs[2][k], k) end
        end
      end
    end
    assert.is_true(calls.conv2d > 0 and calls.bwd_data > 0 and calls.bwd_filter > 0)
    assert.is_true(calls.max_pool2d > 0 and calls.avg_pool2d_backward > 0 and calls.batch_norm > 0 and calls.bn_bwd > 0)
  end)

  it("gradient-checks (float64) and falls back where cuDNN does not apply", function()
    local c = nn.Conv2d(2, 3, 3, { padding = 1, dtype = "float64", device = "cpu" })
    check(function(x) return c(x) end, { r("cpu", 41, 2, 2, 4, 5), c.weight, c.bias })
    local b2 = nn.BatchNorm2d(3, { dtype = "float64", device = "cpu" })
    check(function(x) return b2(x) end, { r("cpu", 42, 3, 3, 2, 2), b2.weight, b2.bias })
    b2:eval()
    check(function(x) return b2(x) end, { r("cpu", 43, 3, 3, 2, 2), b2.weight, b2.bias })
    check(function(x) return nn.MaxPool2d(3, { stride = 2, padding = 1 })(x) end, { r("cpu", 44, 2, 2, 5, 4) })
    -- dilated pooling, return_indices and float16 batch norm take the im2col path
    local n = calls.max_pool2d or 0
    nn.max_pool2d(r("cpu", 45, 1, 1, 5, 5), 2, { dilation = 2 })
    nn.max_pool2d(r("cpu", 45, 1, 1, 4, 4), 2, { return_indices = true })
    assert.equal(n, calls.max_pool2d or 0)
    local nb = calls.batch_norm or 0
    nn.BatchNorm1d(3, { dtype = "float16", device = "cpu" })(gpu.ones({ 4, 3 }, { dtype = "float16", device = "cpu" }))
    assert.equal(nb, calls.batch_norm or 0)
  end)
end)

-- The CPU (im2col + GEMM) is the reference: the same layers on cuda, through cuDNN where
-- it loads and through the CUDA im2col/col2im kernels (gpu.dnn.enabled = false), must agree
-- in outputs, running statistics and every gradient.
describe("cpu vs cuda parity", function()
  local has_cuda = false
  for _, d in ipairs(h.devices()) do if d == "cuda" then has_cuda = true end end
  if not has_cuda then
    it("needs a cuda device", function() pending("no cuda device answers") end)
    return
  end
  local TOL = { float32 = 2e-4, float64 = 1e-9 }

  it("im2col and col2im kernels agree with the cpu (stride, padding, dilation, overlap)", function()
    for _, dt in ipairs { "float32", "float64", "float16", "bfloat16" } do
      for _, o in ipairs { { kernel = 3, padding = 1 }, { kernel = { 3, 2 }, stride = { 2, 1 }, padding = { 1, 0 }, dilation = { 1, 2 } },
                           { kernel = 2, stride = 3, pad_value = -5 } } do
        local x = gpu.random.Generator(5):normal(0, 1, { 2, 3, 7, 6 }, { dtype = dt, device = "cpu" })
        local c = gpu.im2col(x, o)
        h.assert_close(gpu.im2col(x:to("cuda"), o):to("cpu"), c, 0)
        o.pad_value = nil
        local v = gpu.random.Generator(6):normal(0, 1, c.shape, { dtype = dt, device = "cpu" })
        h.assert_close(gpu.col2im(v:to("cuda"), x.shape, o):to("cpu"), gpu.col2im(v, x.shape, o),
          (dt == "float64" and 1e-12) or (dt == "float32" and 1e-5) or 1e-2)
      end
    end
  end)

  local function net(o)
    return nn.Sequential{
      nn.Conv2d(3, 8, 3, { padding = 1, dtype = o.dtype, device = o.device }), nn.BatchNorm2d(8, o), nn.ReLU(),
      nn.MaxPool2d(2), nn.Conv2d(8, 4, 3, { groups = 2, dilation = { 2, 1 }, stride = { 1, 2 }, dtype = o.dtype,
        device = o.device }),
      nn.AvgPool2d(3, { stride = 2, padding = 1 }), nn.MaxPool2d(2, { stride = 1, padding = 1 }), nn.Flatten(),
      nn.BatchNorm1d(4 * 3 * 3, o),
    }
  end
  local function run(m, x, r, train)
    if train then m:train() else m:eval() end
    m:zero_grad()
    local xx = x:detach():requires_grad()
    local y = m(xx)
    ;(y * r):sum():backward()
    local out = { y = y:to("cpu"), gx = xx.grad:to("cpu") }
    for name, p in pairs(m:state_dict()) do
      out[name] = p:to("cpu")
      if p.grad then out["grad " .. name] = p.grad:to("cpu") end
    end
    return out
  end

  for _, path in ipairs { "cudnn", "im2col" } do
    for _, dt in ipairs { "float32", "float64" } do
      it(("conv, pooling and batch norm through %s in %s: outputs, running stats, gradients"):format(path, dt), function()
        if path == "cudnn" and not gpu.dnn.available("cuda") then return pending("cuDNN not loaded") end
        local was = gpu.dnn.enabled
        gpu.dnn.enabled = path == "cudnn"
        local ok, err = pcall(function()
          local mc = net({ dtype = dt, device = "cpu" })
          local mg = net({ dtype = dt, device = "cuda" })
          local sd = {}
          for k, v in pairs(mc:state_dict()) do sd[k] = v:copy() end
          mg:load_state_dict(sd)
          local x = gpu.random.Generator(7):normal(0, 1, { 4, 3, 16, 14 }, { dtype = dt, device = "cpu" })
          local r = gpu.random.Generator(8):normal(0, 1, { 4, 36 }, { dtype = dt, device = "cpu" })
          for _, train in ipairs { true, false } do
            local a = run(mc, x, r, train)
            local b = run(mg, x:to("cuda"), r:to("cuda"), train)
            for k, v in pairs(a) do
              local good, msg = h.close(b[k], v, TOL[dt])
              assert(good, ("%s (%s): %s"):format(k, train and "train" or "eval", tostring(msg)))
            end
          end
        end)
        gpu.dnn.enabled = was
        assert(ok, err)
      end)
    end
  end
end)

describe("examples", function()
  it("cnn.lua --small runs", function()
    local bin = os.getenv("GPULUA_BIN") or "./gpulua"
    local code, out, err = h.run(bin .. " examples/cnn.lua --small")
    assert.equal(0, code, err)
    assert.matches("epoch 1/1: loss %d+%.%d+", out)
    assert.matches("test accuracy 0%.%d+", out)
  end)
end)

-- nn.softmax / log_softmax's cuDNN branch, checked on the cpu with stand-ins for
-- gpu.dnn.softmax(_backward) written with array ops, and the errors of the real ones.
describe("nn.softmax's cuDNN path, with stand-ins for gpu.dnn", function()
  local saved, calls = {}, {}
  local stand_in = {
    available = function() return true end,
    softmax = function(x, o)
      calls.fwd = (calls.fwd or 0) + 1
      local y = gpu.no_grad(function()
        local ls = x - x:logsumexp(-1, { keepdims = true })
        return o.log and ls or ls:exp()
      end)
      return ag.record_op("dnn.softmax", { y }, x, o)
    end,
    softmax_backward = function(y, dy, o)
      calls.bwd = (calls.bwd or 0) + 1
      if o.log then return dy - y:exp() * dy:sum(-1, { keepdims = true }) end
      return y * (dy - (dy * y):sum(-1, { keepdims = true }))
    end,
  }
  before_each(function()
    calls = {}
    for k, v in pairs(stand_in) do saved[k] = gpu.dnn[k]; gpu.dnn[k] = v end
  end)
  after_each(function()
    for k in pairs(stand_in) do gpu.dnn[k] = saved[k] end
    gpu.dnn.enabled = true
  end)

  it("gives the reference's values and gradients through one tape node each way", function()
    for _, log in ipairs { false, true } do
      local f = log and nn.log_softmax or nn.softmax
      local x = gpu.randn({ 3, 5 }, { dtype = "float64" }):requires_grad()
      local dy = gpu.randn({ 3, 5 }, { dtype = "float64" })
      calls = {}
      local y = f(x)
      y:backward(dy)
      assert.equal(1, calls.fwd)
      assert.equal(1, calls.bwd)
      gpu.dnn.enabled = false
      local xr = x:detach():requires_grad()
      local yr = f(xr)
      yr:backward(dy)
      gpu.dnn.enabled = true
      h.assert_close(y, yr, 1e-12)
      h.assert_close(x.grad, xr.grad, 1e-12)
      -- another axis than the last one stays on array ops
      calls = {}
      f(x, 1)
      assert.is_nil(calls.fwd)
    end
  end)
end)

describe("gpu.dnn.softmax", function()
  it("refuses the cpu, non-float input and mismatched gradients with clear errors", function()
    local function err(fn, ...) local ok, e = pcall(fn, ...); assert.is_false(ok); return tostring(e) end
    local x = gpu.ones({ 2, 3 })
    assert.matches("softmax is not supported on cpu", err(gpu.dnn.softmax, x), 1, true)
    assert.matches("softmax: input must be a float array", err(gpu.dnn.softmax, gpu.ones({ 2, 3 }, { dtype = "int32" })), 1, true)
    assert.matches("unknown option", err(gpu.dnn.softmax, x, { axis = 1 }), 1, true)
    assert.matches("softmax_backward: grad_output has shape (3,2), expected (2,3)",
      err(gpu.dnn.softmax_backward, x, gpu.ones({ 3, 2 })), 1, true)
    assert.matches("softmax_backward: grad_output is float64, expected float32",
      err(gpu.dnn.softmax_backward, x, gpu.ones({ 2, 3 }, { dtype = "float64" })), 1, true)
    -- the function's name once, though the message from below already starts with it
    local e = err(function() return gpu.dnn.softmax_backward(x, gpu.ones({ 3, 2 })) end)
    assert.matches("softmax_backward: grad_output", e, 1, true)
    assert.is_nil(e:find("softmax_backward: softmax_backward", 1, true), e)
  end)
end)
