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
    if dev ~= "cpu" then
      it("fails cleanly where the backend has no im2col yet", function()
        local x = gpu.ones({ 1, 1, 4, 4 }, { device = dev })
        local ok, msg = pcall(gpu.im2col, x, { kernel = 2 })
        if not ok then assert.matches("not supported on " .. dev, msg, 1, true) end
      end)
      return
    end

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
        h.assert_close(ag.grad(x), A(f.gx), 1e-10)
        h.assert_close(ag.grad(w), A(f.gw), 1e-10)
        h.assert_close(ag.grad(b), A(f.gb), 1e-10)
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
        h.assert_close(ag.grad(x), A(f.gx), 1e-12)
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
        assert.matches("Conv2d: groups %(2%) must be a positive integer dividing in_channels 3 and out_channels 4",
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

describe("examples", function()
  it("cnn.lua --small runs", function()
    local bin = os.getenv("GPULUA_BIN") or "./gpulua"
    local code, out, err = h.run(bin .. " examples/cnn.lua --small")
    assert.equal(0, code, err)
    assert.matches("epoch 1/1: loss %d+%.%d+", out)
    assert.matches("test accuracy 0%.%d+", out)
  end)
end)
