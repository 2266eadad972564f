-- spec/train_optim_spec.lua — the new optimizers, parameter groups,
-- LBFGS, gradient clipping and the schedules against torch.optim (fixtures made once by
-- tools/gen_train_fixtures.py under spec/fixtures/train/), state dicts and errors.
local h = require "spec.helper"
local gpu = h.gpu
local optim = gpu.optim
local nn = gpu.nn
local fx = dofile("spec/fixtures/train/optim.lua")
local sx = dofile("spec/fixtures/train/sched.lua")
local cx = dofile("spec/fixtures/train/clip.lua")

local function two_params(dev, dtype)
  local o = { dtype = dtype or "float64", device = dev }
  return gpu.array(fx.p0a, o):requires_grad(), gpu.array(fx.p0b, o):requires_grad(),
    gpu.array(fx.ca, o), gpu.array(fx.cb, o)
end
local function loss_of(a, b, ca, cb) return (ca * a ^ 3 / 3 + a ^ 2):sum() + (cb * b ^ 3 / 3 + b ^ 2):sum() end

local function make_opt(case, a, b, extra)
  local opts = {}
  for k, v in pairs(case.opts) do opts[k] = v end
  for k, v in pairs(extra or {}) do opts[k] = v end
  if case.groups then
    local g1, g2 = { params = { a } }, { params = { b } }
    for k, v in pairs(case.groups[1]) do g1[k] = v end
    for k, v in pairs(case.groups[2]) do g2[k] = v end
    return optim[case.cls]({ g1, g2 }, opts)
  end
  return optim[case.cls]({ a, b }, opts)
end

local names = { "adagrad", "adagrad_all", "adadelta", "adadelta_wd", "adamax", "adamax_wd", "nadam", "nadam_wd",
                "radam", "radam_wd", "sgd_groups", "adam_groups", "rmsprop_groups", "adagrad_groups", "adadelta_max",
                "adagrad_all_f32", "adadelta_max_f32", "adamax_wd_f32", "nadam_wd_f32", "radam_f32", "radam_wd_f32" }

for _, dev in ipairs(h.devices()) do
  describe("train optimizers on " .. dev, function()
    for _, name in ipairs(names) do
      -- (float32 cases against torch's float32 steps; every case in both the fused kernel and the array ops)
      for _, fused in ipairs { true, false } do
        it(name .. " matches torch.optim over 8 steps (two parameters" .. (fused and "" or ", fused = false") .. ")",
          function()
          local case = fx[name]
          local a, b, ca, cb = two_params(dev, case.dtype)
          local opt = make_opt(case, a, b, not fused and { fused = false } or nil)
          for _ = 1, fx.steps do
            opt:zero_grad()
            loss_of(a, b, ca, cb):backward()
            opt:step()
          end
          local tol = case.dtype == "float32" and 2e-5 or 1e-9
          h.assert_close(a, case.a, tol)
          h.assert_close(b, case.b, tol)
        end)
      end
    end

    it("float32 parameters take the same steps (to float32's precision)", function()
      local a, b, ca, cb = two_params(dev, "float32")
      local opt = optim.RAdam({ a, b }, { lr = 0.1 })
      for _ = 1, fx.steps do opt:zero_grad(); loss_of(a, b, ca, cb):backward(); opt:step() end
      assert.equal("float32", a.dtype)
      h.assert_close(a, fx.radam.a, 1e-4)
    end)

    for _, name in ipairs { "lbfgs", "lbfgs_wolfe", "lbfgs_hist" } do
      it(name .. " follows torch's LBFGS on Rosenbrock's function", function()
        local case = fx[name]
        local x = gpu.array({ -1.5, 2.0 }, { dtype = "float64", device = dev }):requires_grad()
        local opt = optim.LBFGS({ x }, case.opts)
        local function closure()
          opt:zero_grad()
          local x1, x2 = x[{ { 1, 1 } }], x[{ { 2, 2 } }]
          local loss = ((1 - x1) ^ 2 + 100 * (x2 - x1 ^ 2) ^ 2):sum()
          loss:backward()
          return loss
        end
        for k = 1, 3 do
          local l = opt:step(closure)
          assert.is_true(math.abs(l:item() - case.losses[k]) <= 1e-8 * (1 + math.abs(case.losses[k])))
          h.assert_close(x, case.traj[k], 1e-7)
        end
        assert.equal(case.func_evals, opt.state[1].func_evals)
        assert.equal(case.n_iter, opt.state[1].n_iter)
      end)
    end

    it("clip_grad_norm_ and clip_grad_value_ match torch.nn.utils", function()
      for _, name in ipairs { "l2", "l1", "inf", "l3", "big" } do
        local c = cx[name]
        local a = gpu.zeros(4, { dtype = "float64", device = dev }):requires_grad()
        local b = gpu.zeros(2, 2, { dtype = "float64", device = dev }):requires_grad()
        a:set_grad(gpu.array(cx.ga, { dtype = "float64", device = dev }))
        b:set_grad(gpu.array(cx.gb, { dtype = "float64", device = dev }))
        local total = nn.utils.clip_grad_norm_({ a, b }, c.max_norm, c.norm_type)
        assert.equal(0, total.ndim)
        assert.is_true(math.abs(total:item() - c.total) < 1e-12 * (1 + c.total), name)
        h.assert_close(a.grad, c.a, 1e-12)
        h.assert_close(b.grad, c.b, 1e-12)
      end
      local a = gpu.zeros(4, { device = dev }):requires_grad()
      a:set_grad(gpu.array({ -3, 0.5, 2, -0.1 }, { device = dev }))
      nn.utils.clip_grad_value_(a, 1)
      h.assert_close(a.grad, { -1, 0.5, 1, -0.1 })
      assert.equal(0, nn.utils.clip_grad_norm_({ gpu.zeros(2):requires_grad() }, 1):item())   -- no gradients
    end)
  end)
end

describe("train optimizers: groups, state dicts, errors", function()
  it("parameter groups: defaults, own options, opt.lr, add_param_group", function()
    local a, b = gpu.ones(2):requires_grad(), gpu.ones(3):requires_grad()
    local opt = optim.SGD({ { params = { a } }, { params = { b }, lr = 0.5 } }, { lr = 0.1, momentum = 0.9 })
    assert.equal(2, #opt.param_groups)
    assert.equal(0.1, opt.param_groups[1].lr); assert.equal(0.5, opt.param_groups[2].lr)
    assert.equal(0.9, opt.param_groups[2].momentum)
    assert.equal(0.1, opt.lr)                     -- the first group's
    opt.lr = 0.2                                   -- sets every group's
    assert.equal(0.2, opt.param_groups[2].lr)
    local c = gpu.ones(1):requires_grad()
    opt:add_param_group { params = { c }, momentum = 0 }
    assert.equal(3, #opt.param_groups); assert.equal(0.1, opt.param_groups[3].lr); assert.equal(0, opt.param_groups[3].momentum)
    assert.equal(3, #opt.params)
    h.fails({ "optim.SGD", "appears twice" }, optim.SGD, { { params = { a } }, { params = { a } } })
    h.fails({ "optim.SGD", "parameter group #2", "unknown option 'lrr'; did you mean 'lr'?" }, optim.SGD,
      { { params = { a } }, { params = { b }, lrr = 1 } })
    h.fails({ "optim.SGD", "entry #2 is integer 3" }, optim.SGD, { { params = { a } }, 3 })
    h.fails({ "optim.Adam", "parameter group #2", "betas" }, optim.Adam, { { params = { a } }, { params = { b }, betas = { 1, 2 } } })
    h.fails({ "optim.SGD (parameter group #2)", "nesterov" }, optim.SGD, { { params = { a } }, { params = { b }, nesterov = true } })
    h.fails({ "add_param_group", "appears twice" }, opt.add_param_group, opt, { params = { a } })
    h.fails({ "optim.LBFGS", "parameter groups are not supported" }, optim.LBFGS, { { params = { a } }, { params = { b } } })
  end)

  it("state_dict has PyTorch's layout and load_state_dict continues identically", function()
    local function run(opt, a, b, n)
      for _ = 1, n do
        opt:zero_grad(); ((a * a):sum() + (b ^ 3):sum()):backward(); opt:step()
      end
    end
    for _, cls in ipairs { "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "SGD", "Adam", "RMSprop" } do
      local a, b = gpu.array({ 1.0, -2.0 }, { dtype = "float64" }):requires_grad(), gpu.array({ 0.5 }, { dtype = "float64" }):requires_grad()
      local opt = optim[cls]({ { params = { a } }, { params = { b }, lr = 0.05 } }, { lr = 0.01 })
      run(opt, a, b, 3)
      local sd = opt:state_dict()
      assert.same({ 1 }, sd.param_groups[1].params); assert.same({ 2 }, sd.param_groups[2].params)
      assert.equal(0.05, sd.param_groups[2].lr)
      assert.is_table(sd.state[1]); assert.is_table(sd.state[2])
      local a2, b2 = a:detach():copy():requires_grad(), b:detach():copy():requires_grad()
      local opt2 = optim[cls]({ { params = { a2 } }, { params = { b2 } } }, { lr = 0.01 })
      opt2:load_state_dict(sd)
      assert.equal(0.05, opt2.param_groups[2].lr)
      run(opt, a, b, 2); run(opt2, a2, b2, 2)
      h.assert_close(a2, a, 1e-12); h.assert_close(b2, b, 1e-12)
    end
    local a = gpu.ones(2):requires_grad()
    local opt = optim.Adam({ a })
    h.fails({ "Adam:load_state_dict", "2 parameter groups, the optimizer 1" }, opt.load_state_dict, opt,
      { state = {}, param_groups = { {}, {} } })
    h.fails({ "Adam:load_state_dict", "unknown option 'bogus'" }, opt.load_state_dict, opt,
      { state = {}, param_groups = { { bogus = 1 } } })
    assert.equal(1e-3, opt.lr)
  end)

  it("LBFGS: errors, and its state survives a state dict", function()
    local x = gpu.array({ -1.5, 2.0 }, { dtype = "float64" }):requires_grad()
    local opt = optim.LBFGS({ x }, { max_iter = 3 })
    h.fails({ "LBFGS:step", "a closure" }, opt.step, opt)
    h.fails({ "LBFGS:step", "returned 'x'" }, opt.step, opt, function() return "x" end)
    h.fails({ "optim.LBFGS", "line_search_fn", "strong_wolfe" }, optim.LBFGS, { x }, { line_search_fn = "armijo" })
    assert.equal(3 * 5 // 4, opt.max_eval)
    local function closure()
      opt:zero_grad()
      local l = ((1 - x[{ { 1, 1 } }]) ^ 2 + 100 * (x[{ { 2, 2 } }] - x[{ { 1, 1 } }] ^ 2) ^ 2):sum()
      l:backward()
      return l
    end
    opt:step(closure)
    local x2 = x:detach():copy():requires_grad()
    local opt2 = optim.LBFGS({ x2 }, { max_iter = 3 })
    opt2:load_state_dict(opt:state_dict())
    local function closure2()
      opt2:zero_grad()
      local l = ((1 - x2[{ { 1, 1 } }]) ^ 2 + 100 * (x2[{ { 2, 2 } }] - x2[{ { 1, 1 } }] ^ 2) ^ 2):sum()
      l:backward()
      return l
    end
    opt:step(closure); opt2:step(closure2)
    h.assert_close(x2, x, 1e-12)
  end)

  it("clip_grad_norm_ refuses bad arguments and leaves the gradients", function()
    local a = gpu.zeros(2):requires_grad()
    a:set_grad(gpu.array({ 3, 4 }))
    h.fails({ "nn.utils.clip_grad_norm_", "max_norm" }, nn.utils.clip_grad_norm_, { a }, -1)
    h.fails({ "nn.utils.clip_grad_norm_", "norm_type" }, nn.utils.clip_grad_norm_, { a }, 1, 0)
    h.fails({ "nn.utils.clip_grad_norm_", "parameter #1 is 'w'" }, nn.utils.clip_grad_norm_, { "w" }, 1)
    h.fails({ "nn.utils.clip_grad_value_", "clip_value" }, nn.utils.clip_grad_value_, { a })
    h.assert_close(a.grad, { 3, 4 })
    a:set_grad(gpu.array({ 0 / 0, 1 }))
    h.fails({ "non-finite" }, nn.utils.clip_grad_norm_, { a }, 1, 2, { error_if_nonfinite = true })
    local m = nn.Linear(2, 2)
    m(gpu.ones(1, 2)):sum():backward()
    assert.is_true(nn.utils.clip_grad_norm_(m, 0.1):item() > 0.1)
    assert.is_true(math.abs(nn.utils.clip_grad_norm_(m, 1):item() - 0.1) < 1e-5)
  end)
end)

-- ---- schedules ----
local ctor = {
  lambda = function(o) return optim.LambdaLR(o, function(e) return 0.9 ^ e end) end,
  lambda_list = function(o) return optim.LambdaLR(o, { function(e) return 1 / (e + 1) end, function(e) return 0.5 ^ e end }) end,
  multistep = function(o) return optim.MultiStepLR(o, { 3, 5, 9 }, { gamma = 0.5 }) end,
  exponential = function(o) return optim.ExponentialLR(o, 0.8) end,
  linear = function(o) return optim.LinearLR(o) end,
  linear_opts = function(o) return optim.LinearLR(o, { start_factor = 0.2, end_factor = 0.5, total_iters = 4 }) end,
  onecycle = function(o) return optim.OneCycleLR(o, { 1.0, 0.1 }, { total_steps = 12 }) end,
  onecycle_lin3 = function(o)
    return optim.OneCycleLR(o, 0.5, { epochs = 3, steps_per_epoch = 4, anneal_strategy = "linear", three_phase = true,
      pct_start = 0.25 })
  end,
  plateau = function(o) return optim.ReduceLROnPlateau(o, { patience = 1, factor = 0.5 }) end,
  plateau_max_abs = function(o)
    return optim.ReduceLROnPlateau(o, { mode = "max", patience = 0, factor = 0.5, threshold = 0.1, threshold_mode = "abs",
      cooldown = 2, min_lr = { 0.02, 0.0 } })
  end,
  warm_restarts = function(o) return optim.CosineAnnealingWarmRestarts(o, 3, { eta_min = 0.001 }) end,
  warm_restarts_mult = function(o) return optim.CosineAnnealingWarmRestarts(o, 2, { T_mult = 2 }) end,
  sequential = function(o)
    return optim.SequentialLR(o, { optim.LinearLR(o, { start_factor = 0.1, total_iters = 3 }), optim.ExponentialLR(o, 0.9) }, { 4 })
  end,
  sequential3 = function(o)
    return optim.SequentialLR(o, { optim.ExponentialLR(o, 0.5), optim.StepLR(o, 2, { gamma = 0.5 }),
      optim.CosineAnnealingLR(o, 4) }, { milestones = { 3, 7 } })
  end,
}
local function sched_opt(kind)
  local a, b = gpu.zeros(1):requires_grad(), gpu.zeros(1):requires_grad()
  if kind == "SGD" then return optim.SGD({ { params = { a } }, { params = { b }, lr = 0.01 } }, { lr = 0.1, momentum = 0.9 }) end
  return optim.Adam({ { params = { a } }, { params = { b }, lr = 0.01 } }, { lr = 0.1 })
end
local function momenta(o)
  local m = {}
  for i, g in ipairs(o.param_groups) do m[i] = g.momentum or g.betas[1] end
  return m
end

describe("train schedules", function()
  for name, make in pairs(ctor) do
    it(name .. " gives torch's lrs (and momenta) per group", function()
      local case = sx[name]
      local o = sched_opt(case.opt)
      local s = make(o)
      h.assert_close({ s:get_last_lr() }, case.lrs[1], 1e-12)
      h.assert_close(momenta(o), case.momenta[1], 1e-12)
      for k = 1, #case.lrs - 1 do
        if case.metrics then s:step(case.metrics[k]) else s:step() end
        h.assert_close({ s:get_last_lr() }, case.lrs[k + 1], 1e-12)
        h.assert_close(momenta(o), case.momenta[k + 1], 1e-12)
      end
    end)
    it(name .. ": state_dict / load_state_dict continue identically", function()
      local case = sx[name]
      local o1, o2 = sched_opt(case.opt), sched_opt(case.opt)
      local s1, s2 = make(o1), make(o2)
      for k = 1, 5 do if case.metrics then s1:step(case.metrics[k]) else s1:step() end end
      s2:load_state_dict(s1:state_dict())
      for i, g in ipairs(o2.param_groups) do
        g.lr = case.metrics and o1.param_groups[i].lr or -1        -- a schedule sets them again; a plateau's live in the optimizer
      end
      for k = 6, 9 do
        if case.metrics then s1:step(case.metrics[k]); s2:step(case.metrics[k]) else s1:step(); s2:step() end
      end
      if not case.metrics then h.assert_close({ s2:get_last_lr() }, case.lrs[10], 1e-12) end
      h.assert_close({ s2:get_last_lr() }, { s1:get_last_lr() }, 1e-12)
    end)
  end

  it("refuses bad schedules with clear errors", function()
    local o = sched_opt("SGD")
    h.fails({ "optim.OneCycleLR", "total_steps, or epochs and steps_per_epoch" }, optim.OneCycleLR, o, 0.1)
    h.fails({ "optim.OneCycleLR", "max_lr has 3 entries for 2 parameter groups" }, optim.OneCycleLR, o, { 1, 2, 3 },
      { total_steps = 3 })
    local s = optim.OneCycleLR(o, 0.1, { total_steps = 2 })
    s:step(); s:step()
    h.fails({ "OneCycleLR:step", "past total_steps = 2" }, s.step, s)
    h.fails({ "optim.SequentialLR", "1 milestones for 1 schedules" }, optim.SequentialLR, o, { optim.ExponentialLR(o, 0.5) }, { 2 })
    h.fails({ "optim.MultiStepLR", "increasing" }, optim.MultiStepLR, o, { 3, 2 })
    h.fails({ "optim.SequentialLR", "schedulers[1] belongs to another optimizer" }, optim.SequentialLR, o,
      { optim.ExponentialLR(sched_opt("SGD"), 0.5) }, {})
    h.fails({ "optim.LambdaLR", "3 lr_lambda functions for 2 parameter groups" }, optim.LambdaLR, o,
      { function() return 1 end, function() return 1 end, function() return 1 end })
    h.fails({ "optim.ReduceLROnPlateau", "unknown option 'patiense'; did you mean 'patience'?" }, optim.ReduceLROnPlateau, o,
      { patiense = 3 })
    h.fails({ "ReduceLROnPlateau:step", "metric" }, optim.ReduceLROnPlateau(o).step, optim.ReduceLROnPlateau(o), "x")
    h.fails({ "optim.OneCycleLR", "no momentum nor betas" }, optim.OneCycleLR, optim.Adagrad({ gpu.ones(1):requires_grad() }),
      0.1, { total_steps = 3 })
    local e = optim.ExponentialLR(o, 0.5)
    h.fails({ "ExponentialLR:load_state_dict" }, e.load_state_dict, e, { last_epoch = 1, T_cur = 3 })
  end)
end)
