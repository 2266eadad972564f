-- spec/nn_init_spec.lua — gpu.nn.init's in-place initialisers (torch.nn.init) against
-- spec/fixtures/nn_init_torch.lua (made with PyTorch by spec/fixtures/nn_init_torch.py):
-- gains and fans exactly; for the random ones, the bound of a large uniform draw (its
-- largest |value| within 0.1% below the bound, none above) and the standard deviation of a
-- normal one (within 1.5%), PyTorch's draws checked against the same parameter.
local h = require "spec.helper"
local gpu = h.gpu
local I = gpu.nn.init
local F = dofile("spec/fixtures/nn_init_torch.lua")

describe("gpu.nn.init", function()
  it("calculate_gain and the fans are PyTorch's", function()
    for _, g in ipairs(F.gains) do
      local got = g[2] == nil and I.calculate_gain(g[1]) or I.calculate_gain(g[1], g[2])
      assert.near(g[3], got, 1e-15, g[1])
    end
    for _, f in ipairs(F.fans) do
      local fi, fo = I.calculate_fan_in_and_fan_out(gpu.zeros(f.shape))
      assert.equal(f.fan_in, fi)
      assert.equal(f.fan_out, fo)
    end
  end)

  for _, dev in ipairs(h.devices()) do
    it("draws as PyTorch's on " .. dev, function()
      gpu.random.seed(3)
      for _, c in ipairs(F.draws) do
        local name, shape, opts, kind, param, torch_stat = table.unpack(c)
        local t = gpu.zeros(shape, { dtype = "float64", device = dev })
        assert.equal(t, I[name](t, opts))
        if kind == "uniform" then
          local m = t:abs():max():item()
          assert.is_true(m <= param and m >= 0.999 * param, ("%s: largest %g, bound %g"):format(name, m, param))
          assert.is_true(torch_stat <= param and torch_stat >= 0.999 * param)
        else
          local s = t:std():item()
          assert.near(param, s, 0.015 * param, name)
          assert.near(param, torch_stat, 0.015 * param, name .. " (PyTorch's)")
        end
      end
    end)
  end

  it("fills in place without recording, keeping the dtype and requires_grad", function()
    local l = gpu.nn.Linear(3, 4)
    assert.equal(l.weight, I.constant_(l.weight, 0.5))
    assert.same({ 0.5, 0.5, 0.5 }, l.weight:totable()[1])
    I.ones_(l.bias)
    assert.same({ 1, 1, 1, 1 }, l.bias:totable())
    I.zeros_(l.bias)
    assert.same({ 0, 0, 0, 0 }, l.bias:totable())
    I.eye_(l.weight)
    assert.same({ { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 }, { 0, 0, 0 } }, l.weight:totable())
    assert.is_true(gpu.autograd.requires_grad(l.weight))
    assert.equal("float32", l.weight.dtype)
    I.uniform_(l.weight, -0.25, 0.25)
    assert.is_true(l.weight:abs():max():item() <= 0.25)
    I.normal_(l.weight, { mean = 3, std = 0 })
    assert.same({ 3, 3, 3 }, l.weight:totable()[2])
    local y = l(gpu.ones(1, 3)):sum()                  -- still a parameter that learns
    y:backward()
    assert.is_not_nil(l.weight.grad)
  end)

  it("orthogonal_ gives orthonormal rows or columns, times gain", function()
    for _, shape in ipairs({ { 32, 16 }, { 16, 32 }, { 8, 2, 3, 3 } }) do
      local t = gpu.zeros(shape, { dtype = "float64" })
      I.orthogonal_(t, 2)
      local m = t:reshape(shape[1], -1)
      local r, c = m.shape[1], m.shape[2]
      local g = r >= c and m:transpose(1, 2):matmul(m) or m:matmul(m:transpose(1, 2))
      local want = gpu.eye(math.min(r, c), { dtype = "float64" }) * 4
      assert.is_true((g - want):abs():max():item() < 1e-12)
    end
  end)

  it("refuses misuse by name", function()
    local cases = {
      { function() return I.calculate_gain("swish") end, "nn.init.calculate_gain" },
      { function() return I.calculate_gain("relu", 0.1) end, "relu takes no parameter" },
      { function() return I.calculate_fan_in_and_fan_out(gpu.zeros(3)) end, "fewer than 2 dimensions" },
      { function() return I.xavier_uniform_(gpu.zeros(3)) end, "fewer than 2 dimensions" },
      { function() return I.kaiming_uniform_(gpu.zeros(3, 3), { mode = "fan_mid" }) end, "option 'mode' must be one of" },
      { function() return I.uniform_(gpu.zeros(3), 1, 0) end, "a (1) must not exceed b (0)" },
      { function() return I.normal_(gpu.zeros(3), { std = -1 }) end, "std" },
      { function() return I.eye_(gpu.zeros(2, 2, 2)) end, "a 2-D array expected" },
      { function() return I.constant_(gpu.zeros(3, { dtype = "int32" }), 1) end, "a floating-point array expected" },
      { function() return I.constant_("w", 1) end, "nn.init.constant_" },
      { function() return I.uniform_(gpu.zeros(3), 0, 1, 2) end, "at most 3 arguments" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
  end)
end)
