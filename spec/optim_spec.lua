-- spec/optim_spec.lua — gpu.optim: each optimizer's steps against PyTorch's (fixtures
-- made once with torch: spec/fixtures/optim_torch.py), schedules, state, errors.
local h = require "spec.helper"
local gpu = h.gpu
local optim = gpu.optim
local fx = dofile("spec/fixtures/optim_torch.lua")

for _, dev in ipairs(h.devices()) do
  describe("optim on " .. dev, function()
    for _, name in ipairs { "sgd", "sgd_momentum", "sgd_nesterov", "adam", "adam_wd_amsgrad", "adamw", "rmsprop",
                            "rmsprop_centered_momentum" } do
      it(name .. " matches PyTorch over 3 steps", function()
        local case = fx[name]
        local p = gpu.array(fx.p0, { dtype = "float64", device = dev }):requires_grad()
        local c = gpu.array(fx.c, { dtype = "float64", device = dev })
        local opt = optim[case.cls]({ p }, case.opts)
        for _ = 1, 3 do
          opt:zero_grad()
          local loss = (c * p ^ 3 / 3 + p ^ 2):sum()
          loss:backward()
          opt:step()
        end
        h.assert_close(p, case.p, 1e-9)
        assert.is_true(p:is_leaf())
      end)
    end

    it("skips parameters without a gradient and keeps a state dict", function()
      local a = gpu.ones(2, { dtype = "float64", device = dev }):requires_grad()
      local b = gpu.ones(2, { dtype = "float64", device = dev }):requires_grad()
      local opt = optim.Adam({ a, b }, { lr = 0.5 })
      ;(a * 2):sum():backward()
      opt:step()
      h.assert_close(b, { 1, 1 })
      h.assert_close(a, { 0.5, 0.5 }, 1e-6)        -- Adam's first step is lr * sign(g)
      local sd = opt:state_dict()
      assert.equal(1, sd.step)
      assert.equal(1, sd.state[1].step)
      assert.is_nil(sd.state[2])
      local opt2 = optim.Adam({ a, b }, { lr = 0.5 })
      opt2:load_state_dict(sd)
      h.assert_close(opt2.state[1].exp_avg, sd.state[1].exp_avg)
      -- state from a cpu checkpoint lands where the parameter is, as a copy
      local c64 = { dtype = "float64", device = "cpu" }
      local cpu_sd = { step = 1, state = { { step = 1, exp_avg = gpu.ones(2, c64), exp_avg_sq = gpu.ones(2, c64) } } }
      opt2:load_state_dict(cpu_sd)
      assert.equal(a.device, opt2.state[1].exp_avg.device)
      opt2.state[1].exp_avg:fill_(5)
      h.assert_close(cpu_sd.state[1].exp_avg, { 1, 1 })
      a:set_grad(nil); (a * 2):sum():backward()
      opt2:step()                                    -- the fused step takes the moved state
      assert.equal(2, opt2.state[1].step)
    end)

    it("StepLR and CosineAnnealingLR follow their formulas", function()
      local p = gpu.ones(1, { device = dev }):requires_grad()
      local opt = optim.SGD({ p }, { lr = 1 })
      local s = optim.StepLR(opt, { step_size = 2, gamma = 0.5 })
      local got = {}
      for i = 1, 5 do got[i] = s:step() end
      assert.same({ 1, 0.5, 0.5, 0.25, 0.25 }, got)
      local opt2 = optim.SGD({ p }, { lr = 0.1 })
      local c = optim.CosineAnnealingLR(opt2, { T_max = 4, eta_min = 0.02 })
      c:step(); c:step()
      assert.is_true(math.abs(opt2.lr - 0.06) < 1e-12)
      c:step(); c:step()
      assert.is_true(math.abs(opt2.lr - 0.02) < 1e-12)
      assert.equal(opt2.lr, c:get_last_lr())
    end)

    it("refuses no parameters, bad options and non-arrays", function()
      local ok, err = pcall(optim.Adam, {}, { lr = 0.1 })
      assert.is_false(ok); assert.matches("Adam: the optimizer was given no parameters", err)
      ok, err = pcall(optim.SGD, { gpu.ones(1) }, { lr = 0.1, momentun = 0.9 })
      assert.is_false(ok); assert.matches("bad argument #2 to 'optim.SGD' (unknown option 'momentun'; did you mean 'momentum'?)",
        err, 1, true)
      ok, err = pcall(optim.RMSprop, { 3 })
      assert.is_false(ok); assert.matches("'optim.RMSprop' (parameter #1 is integer 3, expected gpu.array)", err, 1, true)
      ok, err = pcall(optim.SGD, { gpu.ones(1) }, { lr = -1 })
      assert.is_false(ok); assert.matches("option 'lr' must be >= 0, got integer -1", err, 1, true)
      ok, err = pcall(optim.StepLR, {}, { step_size = 1 })
      assert.is_false(ok); assert.matches("bad argument #1 to 'optim.StepLR' (an optimizer expected, got table)", err, 1, true)
    end)
  end)
end
