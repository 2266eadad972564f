-- spec/optim_extra_spec.lua — Rprop, ASGD, Adafactor (torch.optim) and Lion (Keras), and the
-- schedules ConstantLR, PolynomialLR, MultiplicativeLR, CyclicLR and ChainedScheduler,
-- against spec/fixtures/optim_extra_torch.lua (made by spec/fixtures/optim_extra_torch.py
-- with PyTorch and Keras): the parameters after six steps on the loss sum(c p^3 / 3 + p^2),
-- and each group's lr (and momentum) after construction and each step.
local h = require "spec.helper"
local gpu = h.gpu
local optim = gpu.optim
local F = dofile("spec/fixtures/optim_extra_torch.lua")

local function run(cls, opts, shape, dev, dtype)
  local p = gpu.array(F.p0, { dtype = dtype, device = dev }):reshape(table.unpack(shape)):requires_grad_()
  local c = gpu.array(F.c, { dtype = dtype, device = dev }):reshape(table.unpack(shape))
  local opt = optim[cls]({ p }, opts)
  for _ = 1, F.steps do
    opt:zero_grad()
    local loss = (c * p ^ 3 / 3 + p ^ 2):sum()
    loss:backward()
    opt:step()
  end
  return p:detach():reshape(-1):to("cpu"):totable(), opt, p
end

local function close(want, got, tol, what)
  for i, v in ipairs(want) do
    local d = math.abs(v - got[i])
    assert(d <= tol * math.max(1, math.abs(v)), ("%s: element %d is %.17g, PyTorch's %.17g"):format(what, i, got[i], v))
  end
end

for _, dev in ipairs(h.devices()) do
  describe("Rprop, ASGD, Adafactor and Lion on " .. dev, function()
    for name, c in pairs(F.optimizers) do
      it(name .. " takes PyTorch's (Keras's for Lion) steps in float64", function()
        local opts = {}
        for k, v in pairs(c.opts) do opts[k] = v end
        if opts.eps and opts.eps[1] == nil then opts.eps = { false, opts.eps[2] } end
        local got, opt, p = run(c.cls, opts, c.shape, dev, "float64")
        -- Lion's anchor is Keras's, whose hyper-parameters are float32 variables
        close(c.p, got, c.cls == "Lion" and 1e-6 or 1e-13, name)
        if c.ax then close(c.ax, opt.state[1].ax:reshape(-1):to("cpu"):totable(), 1e-13, name .. " ax") end
        assert.equal(p.dtype, "float64")
      end)
    end

    it("step in float32 too, and keep the parameter's dtype and device", function()
      for _, cls in ipairs({ "Rprop", "ASGD", "Adafactor", "Lion" }) do
        local got, _, p = run(cls, { lr = 0.01 }, { 2, 3 }, dev, "float32")
        assert.equal("float32", p.dtype)
        assert.equal(dev, p.device)
        for _, v in ipairs(got) do assert.is_true(v == v and math.abs(v) < 10, cls) end
      end
    end)
  end)
end

describe("Rprop, ASGD, Adafactor and Lion options", function()
  local p = gpu.ones(2):requires_grad_()
  local bad = {
    { "Rprop", { etas = { 1.5, 1.2 } }, "etas" },
    { "Rprop", { step_sizes = { -1, 2 } }, "step_sizes" },
    { "Rprop", { momentum = 0.9 }, "unknown option 'momentum'" },
    { "ASGD", { lambd = -1 }, "lambd" },
    { "Adafactor", { d = 0.5 }, "d" },
    { "Adafactor", { beta2_decay = 0.5 }, "beta2_decay" },
    { "Adafactor", { eps = { -1, 1e-3 } }, "eps" },
    { "Lion", { betas = { 1.5, 0.9 } }, "betas" },
  }
  for _, b in ipairs(bad) do
    it(b[1] .. " refuses " .. b[3] .. ", naming it", function()
      local ok, err = pcall(optim[b[1]], { p }, b[2])
      assert.is_false(ok)
      assert.matches(b[1], err, 1, true)
      assert.matches(b[3], err, 1, true)
    end)
  end

  it("keep their state through state_dict", function()
    for _, cls in ipairs({ "Rprop", "ASGD", "Adafactor", "Lion" }) do
      local _, opt = run(cls, {}, { 2, 3 }, "cpu", "float64")
      local q = gpu.array(F.p0, { dtype = "float64" }):reshape(2, 3):requires_grad_()
      local opt2 = optim[cls]({ q }, {})
      opt2:load_state_dict(opt:state_dict())
      assert.equal(opt.state[1].step, opt2.state[1].step, cls)
    end
  end)
end)

-- the schedules of the fixture, made on opt as the generator made them on PyTorch's
local MAKE = {
  constant = function(o) return optim.ConstantLR(o, { factor = 0.5, total_iters = 3 }) end,
  constant_default = function(o) return optim.ConstantLR(o) end,
  polynomial = function(o) return optim.PolynomialLR(o, { total_iters = 4, power = 2.0 }) end,
  polynomial_default = function(o) return optim.PolynomialLR(o) end,
  multiplicative = function(o) return optim.MultiplicativeLR(o, function() return 0.9 end) end,
  multiplicative_epoch = function(o) return optim.MultiplicativeLR(o, function(e) return 1 / (e + 1) end) end,
  cyclic = function(o) return optim.CyclicLR(o, { base_lr = 0.01, max_lr = 0.1, step_size_up = 3 }) end,
  cyclic_tri2 = function(o)
    return optim.CyclicLR(o, { base_lr = 0.01, max_lr = 0.1, step_size_up = 2, step_size_down = 3, mode = "triangular2",
      cycle_momentum = false })
  end,
  cyclic_exp = function(o)
    return optim.CyclicLR(o, { base_lr = { 0.01, 0.02 }, max_lr = { 0.1, 0.3 }, step_size_up = 2, mode = "exp_range",
      gamma = 0.9, base_momentum = 0.7, max_momentum = 0.95 })
  end,
  chained = function(o)
    return optim.ChainedScheduler({ optim.ConstantLR(o, { factor = 0.1, total_iters = 2 }), optim.ExponentialLR(o, 0.9) })
  end,
  chained3 = function(o)
    return optim.ChainedScheduler({ optim.LinearLR(o, { start_factor = 0.5, total_iters = 3 }),
      optim.StepLR(o, 2, { gamma = 0.5 }), optim.MultiStepLR(o, { 1, 4 }, { gamma = 0.8 }) })
  end,
}

local function sgd(groups, momentum)
  local gs = {}
  for i = 1, groups do gs[i] = { params = { gpu.zeros(1):requires_grad_() }, lr = 0.1 * i } end
  return optim.SGD(gs, { lr = 0.1, momentum = momentum })
end

describe("ConstantLR, PolynomialLR, MultiplicativeLR, CyclicLR and ChainedScheduler", function()
  for name, c in pairs(F.schedules) do
    it(name .. " sets PyTorch's lrs and momenta", function()
      local opt = sgd(c.groups, c.momentum)
      local s = MAKE[name](opt)
      for e = 0, c.steps do
        if e > 0 then s:step() end
        for i, g in ipairs(opt.param_groups) do
          close({ c.lr[e + 1][i] }, { g.lr }, 1e-12, ("%s lr of group %d at step %d"):format(name, i, e))
          close({ c.momenta[e + 1][i] }, { g.momentum }, 1e-12, ("%s momentum of group %d at step %d"):format(name, i, e))
        end
      end
    end)
  end

  it("resume from state_dict where they were", function()
    for _, name in ipairs({ "constant", "polynomial", "multiplicative", "cyclic", "chained3" }) do
      local c = F.schedules[name]
      local o1 = sgd(c.groups, c.momentum)
      local s1 = MAKE[name](o1)
      for _ = 1, 3 do s1:step() end
      local o2 = sgd(c.groups, c.momentum)
      local s2 = MAKE[name](o2)
      s2:load_state_dict(s1:state_dict())
      for i, g in ipairs(o2.param_groups) do g.lr = o1.param_groups[i].lr end
      for e = 4, c.steps do
        s1:step()
        s2:step()
        for i, g in ipairs(o2.param_groups) do assert.equal(o1.param_groups[i].lr, g.lr, name .. " at " .. e) end
      end
    end
  end)

  it("refuse what PyTorch refuses, naming the fault", function()
    local opt = sgd(1, 0)
    local cases = {
      { function() return optim.ConstantLR(opt, { factor = 2 }) end, "factor" },
      { function() return optim.PolynomialLR(opt, { total_iters = 0 }) end, "total_iters" },
      { function() return optim.MultiplicativeLR(opt, 0.9) end, "lr_lambda" },
      { function() return optim.CyclicLR(opt, { max_lr = 0.1 }) end, "optim.CyclicLR: base_lr is required" },
      { function() return optim.CyclicLR(opt, { base_lr = { 0.1, 0.2 }, max_lr = 0.3 }) end,
        "base_lr has 2 entries for 1 parameter groups" },
      { function() return optim.CyclicLR(optim.Adagrad({ gpu.ones(1):requires_grad_() }), { base_lr = 0.1, max_lr = 0.2 }) end,
        "no momentum nor betas to cycle" },
      { function() return optim.ChainedScheduler({ optim.CosineAnnealingLR(opt, 4) }) end,
        "schedulers[1] is a CosineAnnealingLR, which does not scale the lr by a factor of the epoch" },
      { function() return optim.ChainedScheduler({ optim.StepLR(opt, 2), optim.StepLR(sgd(1, 0), 2) }) end,
        "schedulers[2] belongs to another optimizer" },
      { function() return optim.ChainedScheduler({}) end, "a list of schedules expected" },
      { function() return optim.ChainedScheduler(optim.StepLR(opt, 2)) end, "a list of schedules expected" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
  end)
end)

describe("gpu.optim.swa_utils", function()
  local S = optim.swa_utils
  local FS = F.swa

  for _, name in ipairs({ "swalr_cos", "swalr_linear", "swalr_zero" }) do
    it("SWALR (" .. name .. ") anneals the lrs as PyTorch's", function()
      local opt = sgd(2, 0)
      local s = name == "swalr_cos" and S.SWALR(opt, 0.05, { anneal_epochs = 3 })
        or name == "swalr_linear" and S.SWALR(opt, { 0.01, 0.02 }, { anneal_epochs = 4, anneal_strategy = "linear" })
        or S.SWALR(opt, 0.05, { anneal_epochs = 0 })
      local c = FS[name]
      for e = 0, c.steps do
        if e > 0 then s:step() end
        for i, g in ipairs(opt.param_groups) do close({ c.lr[e + 1][i] }, { g.lr }, 1e-12, name .. " at " .. e) end
      end
    end)
  end

  local function linear_with(k)
    local m = gpu.nn.Linear(3, 2, { dtype = "float64" })
    gpu.no_grad(function()
      m.weight[{}] = gpu.array(FS.W[k], { dtype = "float64" }):reshape(2, 3)
      m.bias[{}] = gpu.array(FS.b[k], { dtype = "float64" })
    end)
    return m
  end

  for _, name in ipairs({ "avg", "ema", "ema_single" }) do
    it("AveragedModel (" .. name .. ") averages the weights as PyTorch's", function()
      local m = linear_with(1)
      local am = name == "avg" and S.AveragedModel(m)
        or name == "ema" and S.AveragedModel(m, { multi_avg_fn = S.get_ema_multi_avg_fn(0.9) })
        or S.AveragedModel(m, { avg_fn = S.get_ema_avg_fn(0.75) })
      for k = 1, 4 do
        local src = linear_with(k)
        am:update_parameters(src)
        local got = am.module.weight:reshape(-1):totable()
        for _, v in ipairs(am.module.bias:totable()) do got[#got + 1] = v end
        close(FS[name].after[k], got, 1e-14, name .. " after update " .. k)
      end
      assert.equal(FS[name].n, am.n_averaged:item())
      local sd = am:state_dict()
      assert.is_not_nil(sd["module.weight"])
      assert.is_not_nil(sd["n_averaged"])
      local x = gpu.ones(1, 3, { dtype = "float64" })
      assert.same(am.module(x):totable(), am(x):totable())
    end)
  end

  it("update_bn recomputes the batch norms' statistics as PyTorch's", function()
    local B = FS.bn
    local lin = gpu.nn.Linear(3, 4, { dtype = "float64" })
    gpu.no_grad(function()
      lin.weight[{}] = gpu.array(B.lin_w, { dtype = "float64" }):reshape(4, 3)
      lin.bias[{}] = gpu.array(B.lin_b, { dtype = "float64" })
    end)
    local bn = gpu.nn.BatchNorm1d(4, { dtype = "float64" })
    local model = gpu.nn.Sequential(lin, bn)
    model:eval()
    local batches = {}
    for k, x in ipairs(B.X) do batches[k] = gpu.array(x, { dtype = "float64" }):reshape(5, 3) end
    S.update_bn(batches, model)
    close(B.running_mean, bn.running_mean:totable(), 1e-13, "running_mean")
    close(B.running_var, bn.running_var:totable(), 1e-13, "running_var")
    assert.equal(0.1, bn.momentum)
    assert.is_false(model.training)
    -- a DataLoader, and {x, y} batches
    local loader = gpu.data.DataLoader(gpu.concat(batches, 1), gpu.zeros(15), { batch_size = 5 })
    S.update_bn(loader, model)
    close(B.running_mean, bn.running_mean:totable(), 1e-13, "running_mean through a DataLoader")
  end)

  it("refuses misuse by name", function()
    local cases = {
      { function() return S.AveragedModel(42) end, "a module expected" },
      { function() return S.AveragedModel(gpu.nn.Linear(2, 2), { multi_avg_fn = print, avg_fn = print }) end,
        "avg_fn or multi_avg_fn, not both" },
      { function() return S.AveragedModel(gpu.nn.Linear(2, 2)):update_parameters(gpu.nn.Linear(3, 2)) end,
        "weight has shape (2, 3), the average (2, 2)" },
      { function() return S.SWALR(sgd(2, 0), { 0.1 }) end, "swa_lr has 1 entries for 2 parameter groups" },
      { function() return S.SWALR(sgd(1, 0), 0.1, { anneal_strategy = "cubic" }) end, "anneal_strategy" },
      { function() return S.update_bn(42, gpu.nn.BatchNorm1d(2)) end, "a DataLoader or a list of batches expected" },
      { function() return S.update_bn({ "x" }, gpu.nn.BatchNorm1d(2)) end, "a batch is 'x', not an array" },
      { function() return S.get_ema_avg_fn(2) end, "decay" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
  end)
end)
