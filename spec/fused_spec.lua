-- spec/fused_spec.lua — gpu.fused (the kernels under nn and optim): each against the same
-- computation written with array ops, on every device; the subnormal flush; the errors.
local h = require "spec.helper"
local gpu = h.gpu
local F = gpu.fused

local function onehot(labels, C, eps, dtype)
  local t = labels:reshape(labels.shape[1], 1):eq(gpu.arange(1, C + 1, { device = labels.device })):astype(dtype)
  return t * (1 - eps) + eps / C
end

for _, dev in ipairs(h.devices()) do
  describe("gpu.fused on " .. dev, function()
    local function randn(dt, ...) return gpu.randn({ ... }, { dtype = dt, device = dev }) end

    for _, dt in ipairs { "float32", "float64" } do
      local tol = dt == "float32" and 2e-5 or 1e-12

      it("linear is x @ w^T + b (" .. dt .. ", 2-D and 3-D input, with and without bias)", function()
        gpu.random.seed(3)
        local x, w, b = randn(dt, 5, 7), randn(dt, 3, 7), randn(dt, 3)
        h.assert_close(F.linear(x, w, b), x:matmul(w.T) + b, tol)
        h.assert_close(F.linear(x, w), x:matmul(w.T), tol)
        local x3 = randn(dt, 2, 4, 7)
        local y = F.linear(x3, w, b)
        assert.same({ 2, 4, 3 }, y.shape)
        h.assert_close(y, x3:matmul(w.T) + b, tol)
      end)

      it("cross_entropy against labels matches logsumexp - t.z, with label smoothing (" .. dt .. ")", function()
        gpu.random.seed(4)
        local z = randn(dt, 6, 5) * 4
        local lab = gpu.array({ 1, 5, 3, 2, 5, 4 }, { dtype = "int64", device = dev })
        for _, eps in ipairs { 0, 0.1 } do
          local loss, p = F.cross_entropy(z, lab, { label_smoothing = eps })
          local t = onehot(lab, 5, eps, dt)
          h.assert_close(loss, z:logsumexp(2) - (t * z):sum(2), tol * 10)
          h.assert_close(p, (z - z:logsumexp(2, { keepdims = true })):exp(), tol * 10)
          h.assert_close(p:sum(2), gpu.ones(6, { dtype = dt }), tol * 10)
          -- backward: (p - t) * g * scale, g a 0-d or per-row gradient
          local g0 = gpu.array(3, { dtype = dt, device = dev })
          h.assert_close(F.cross_entropy_backward(p, lab, g0, { label_smoothing = eps, scale = 0.5 }),
                         (p - t) * 1.5, tol * 10)
          local gr = gpu.arange(1, 7, { dtype = dt, device = dev })
          h.assert_close(F.cross_entropy_backward(p, lab, gr, { label_smoothing = eps }),
                         (p - t) * gr:reshape(6, 1), tol * 10)
        end
      end)

      it("cross_entropy against a target distribution (" .. dt .. ")", function()
        gpu.random.seed(5)
        local z = randn(dt, 4, 3)
        local t = gpu.nn.softmax(randn(dt, 4, 3), 2)
        local loss, p = F.cross_entropy(z, t)
        h.assert_close(loss, z:logsumexp(2) - (t * z):sum(2), tol * 10)
        h.assert_close(F.cross_entropy_backward(p, t, gpu.array(1, { dtype = dt, device = dev })), p - t, tol * 10)
      end)

      it("cross_entropy is stable for huge logits and gives NaN rows for labels outside 1..C (" .. dt .. ")", function()
        local z = gpu.array({ { 1000, 0, -1000 }, { -1e4, -1e4, -1e4 } }, { dtype = dt, device = dev })
        local loss, p = F.cross_entropy(z, gpu.array({ 1, 2 }, { dtype = "int64", device = dev }))
        h.assert_close(loss, { 0, math.log(3) }, tol * 10)
        h.assert_close(p[1], { 1, 0, 0 })
        local bad = gpu.array({ 0, 4 }, { dtype = "int64", device = dev })
        local l2, p2 = F.cross_entropy(z, bad)
        local v = l2:totable()
        assert.is_true(v[1] ~= v[1] and v[2] ~= v[2])
        local g = F.cross_entropy_backward(p2, bad, gpu.array(1, { dtype = dt, device = dev })):totable()
        assert.is_true(g[1][1] ~= g[1][1] and g[2][3] ~= g[2][3])
      end)

      it("adam_ is one step of Adam/AdamW/AMSGrad as the array ops compute it (" .. dt .. ")", function()
        for _, o in ipairs {
          { lr = 0.01, step = 1 },
          { lr = 0.01, step = 7, weight_decay = 0.1 },
          { lr = 0.01, step = 3, weight_decay = 0.1, decoupled = true },
          { lr = 0.02, step = 2, amsgrad = true, beta1 = 0.8, beta2 = 0.99, eps = 1e-6 },
          { lr = 0.01, step = 2, maximize = true },
        } do
          gpu.random.seed(6)
          local p, g = randn(dt, 50), randn(dt, 50)
          local m, v = randn(dt, 50) * 0.1, randn(dt, 50):abs() * 0.1
          local vmax = o.amsgrad and v * 1.5 or nil
          local b1, b2, eps = o.beta1 or 0.9, o.beta2 or 0.999, o.eps or 1e-8
          local wd = o.weight_decay or 0
          -- the reference, with array ops
          local rp, rg = p:copy(), o.maximize and -g or g
          if wd ~= 0 then
            if o.decoupled then rp = rp * (1 - o.lr * wd) else rg = rg + p * wd end
          end
          local rm = m * b1 + rg * (1 - b1)
          local rv = v * b2 + rg:square() * (1 - b2)
          local vv = vmax and gpu.maximum(vmax, rv) or rv
          local bc1, bc2 = 1 - b1 ^ o.step, 1 - b2 ^ o.step
          rp = rp - rm / (vv:sqrt() / math.sqrt(bc2) + eps) * (o.lr / bc1)
          assert.equal(p, F.adam_(p, g, m, v, vmax, o))
          h.assert_close(p, rp, tol)
          h.assert_close(m, rm, tol)
          h.assert_close(v, rv, tol)
          if vmax then h.assert_close(vmax, vv, tol) end
        end
      end)

      it("sgd_ with momentum, dampening, Nesterov and weight decay (" .. dt .. ")", function()
        gpu.random.seed(7)
        local p, g = randn(dt, 20), randn(dt, 20)
        local p0 = p:copy()
        F.sgd_(p, g, nil, { lr = 0.1 })
        h.assert_close(p, p0 - g * 0.1, tol)
        local buf = gpu.zeros(20, { dtype = dt, device = dev })
        p0 = p:copy()
        F.sgd_(p, g, buf, { lr = 0.1, momentum = 0.9, first = true, weight_decay = 0.01 })
        local gd = g + p0 * 0.01
        h.assert_close(buf, gd, tol)
        h.assert_close(p, p0 - gd * 0.1, tol)
        local b0, p1 = buf:copy(), p:copy()
        F.sgd_(p, g, buf, { lr = 0.1, momentum = 0.9, dampening = 0.5, nesterov = true })
        local nb = b0 * 0.9 + g * 0.5
        h.assert_close(buf, nb, tol)
        h.assert_close(p, p1 - (g + nb * 0.9) * 0.1, tol)
      end)

      it("rmsprop_ plain, centered and with momentum (" .. dt .. ")", function()
        gpu.random.seed(8)
        local p, g = randn(dt, 20), randn(dt, 20)
        local sq = randn(dt, 20):abs()
        local p0, s0 = p:copy(), sq:copy()
        F.rmsprop_(p, g, sq, nil, nil, { lr = 0.01, alpha = 0.9 })
        local rs = s0 * 0.9 + g:square() * 0.1
        h.assert_close(sq, rs, tol)
        h.assert_close(p, p0 - g / (rs:sqrt() + 1e-8) * 0.01, tol)
        local buf, ga = gpu.zeros(20, { dtype = dt, device = dev }), gpu.zeros(20, { dtype = dt, device = dev })
        p0, s0 = p:copy(), sq:copy()
        F.rmsprop_(p, g, sq, buf, ga, { lr = 0.01, alpha = 0.9, momentum = 0.5, centered = true, weight_decay = 0.1 })
        local gd = g + p0 * 0.1
        rs = s0 * 0.9 + gd:square() * 0.1
        local rga = gd * 0.1
        local avg = (rs - rga:square()):sqrt() + 1e-8
        h.assert_close(ga, rga, tol)
        h.assert_close(buf, gd / avg, tol)
        h.assert_close(p, p0 - gd / avg * 0.01, tol)
      end)

      it("optimizer state that decays below the smallest normal number is flushed to 0 (" .. dt .. ")", function()
        -- normal numbers just above the smallest, which one decay (0.9, 0.999) takes below it
        local least = dt == "float32" and 2.0 ^ -126 or 2.0 ^ -1022
        local p = gpu.ones(8, { dtype = dt, device = dev })
        local g = gpu.zeros(8, { dtype = dt, device = dev })
        local m = gpu.full({ 8 }, least * 1.05, { dtype = dt, device = dev })
        local v = gpu.full({ 8 }, least * 1.0005, { dtype = dt, device = dev })
        F.adam_(p, g, m, v, nil, { step = 5 })
        assert.equal(0, m:abs():max():item())
        assert.equal(0, v:abs():max():item())
        h.assert_close(p, gpu.ones(8, { dtype = dt }))
      end)
    end

    it("nn.cross_entropy (fused) has the gradient of its composite definition", function()
      gpu.random.seed(9)
      local z = randn("float64", 5, 4):requires_grad()
      local lab = gpu.array({ 4, 1, 2, 2, 3 }, { device = dev })
      for _, red in ipairs { "mean", "sum", "none" } do
        z:set_grad(nil)
        local l = gpu.nn.cross_entropy(z, lab, { label_smoothing = 0.2, reduction = red })
        ;(red == "none" and (l * gpu.arange(1, 6, { dtype = "float64", device = dev })):sum() or l):backward()
        local zd = z:detach():requires_grad()
        local t = onehot(lab, 4, 0.2, "float64")
        local per = zd:logsumexp(2) - (t * zd):sum(2)
        local ref = red == "mean" and per:mean() or red == "sum" and per:sum()
          or (per * gpu.arange(1, 6, { dtype = "float64", device = dev })):sum()
        ref:backward()
        h.assert_close(z.grad, zd.grad, 1e-12)
      end
    end)

    it("refuses wrong arguments with clear errors and leaves the arrays intact", function()
      local f32 = { device = dev }
      local p, g = gpu.ones(4, f32), gpu.ones(4, f32)
      local m, v = gpu.zeros(4, f32), gpu.zeros(4, f32)
      local function fails(pat, fn, ...)
        local ok, err = pcall(fn, ...)
        assert.is_false(ok)
        assert.matches(pat, tostring(err), 1, true)
      end
      fails("gradient is float64, expected float32", F.adam_, p, g:astype("float64"), m, v)
      fails("gradient has shape (2,), expected (4,)", F.adam_, p, gpu.ones(2, f32), m, v)
      fails("exp_avg_sq has shape (3,)", F.adam_, p, g, m, gpu.zeros(3, f32))
      fails("option 'step' must be >= 1, got integer 0", F.adam_, p, g, m, v, nil, { step = 0 })
      fails("option 'beta1' must be < 1, got integer 1", F.adam_, p, g, m, v, nil, { beta1 = 1 })
      fails("unknown option 'lrr'; did you mean 'lr'?", F.adam_, p, g, m, v, nil, { lrr = 1 })
      fails("option 'amsgrad' must be a boolean", F.adam_, p, g, m, v, nil, { amsgrad = 1 })
      fails("state array max_exp_avg_sq is missing", F.adam_, p, g, m, v, nil, { amsgrad = true })
      fails("state array momentum_buffer is missing", F.sgd_, p, g, nil, { momentum = 0.9 })
      fails("must be float32 or float64, got int32", F.sgd_, gpu.ones(4, { dtype = "int32", device = dev }),
            gpu.ones(4, { dtype = "int32", device = dev }), nil)
      fails("must be contiguous", F.sgd_, gpu.ones({ 4, 4 }, f32).T, gpu.ones({ 4, 4 }, f32), nil)
      h.assert_close(p, { 1, 1, 1, 1 })
      h.assert_close(m, { 0, 0, 0, 0 })
      local z = gpu.zeros({ 3, 4 }, f32)
      local lab = gpu.array({ 1, 2, 3 }, { dtype = "int64", device = dev })
      fails("logits must be (N, C), got shape (12,)", F.cross_entropy, z:reshape(12), lab)
      fails("labels must be int64 class numbers", F.cross_entropy, z, lab:astype("int32"))
      fails("labels must be int64 of shape (3)", F.cross_entropy, z, gpu.array({ 1, 2 }, { dtype = "int64", device = dev }))
      fails("target must be float32 of shape (3,4)", F.cross_entropy, z, gpu.zeros({ 3, 5 }, f32))
      fails("option 'label_smoothing' must be <= 1, got integer 2", F.cross_entropy, z, lab, { label_smoothing = 2 })
      fails("logits must be float32 or float64, got int64", F.cross_entropy, gpu.zeros({ 3, 4 }, { dtype = "int64", device = dev }), lab)
      local _, pr = F.cross_entropy(z, lab)
      fails("incoming gradient must be float32, 0-d or of shape (3)", F.cross_entropy_backward, pr, lab, gpu.ones(2, f32))
      local x, w = gpu.ones({ 2, 3 }, f32), gpu.ones({ 4, 3 }, f32)
      fails("weight must be 2-D", F.linear, x, gpu.ones(3, f32))
      fails("input of shape (2,4) does not fit weight (4,3) (expected 3 input features)", F.linear, gpu.ones({ 2, 4 }, f32), w)
      fails("bias of shape (3,) does not fit weight (4,3) (expected (4))", F.linear, x, w, gpu.ones(3, f32))
      fails("gpu.array expected", F.linear, x, "w")
    end)
  end)
end

describe("gpu.fused across devices", function()
  it("refuses a gradient on another device", function()
    if not gpu.is_available() then return end
    local p = gpu.ones(4)
    local ok, err = pcall(gpu.fused.sgd_, p, gpu.ones(4, { device = "cuda" }), nil, { lr = 0.1 })
    assert.is_false(ok)
    assert.matches("the gradient is on cuda:0 but the parameter is on cpu", err, 1, true)
  end)
end)
