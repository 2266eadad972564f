-- spec/autograd_functional_spec.lua — gpu.autograd.functional (jacobian, hessian, vjp, jvp,
-- hvp) against torch.autograd.functional (spec/fixtures/autograd_functional.lua, made by
-- spec/fixtures/autograd_functional.py), gpu.utils.checkpoint against the same pass without
-- it, and anomaly detection.
local h = require "spec.helper"
local gpu = h.gpu
local AF = gpu.autograd.functional
local F = dofile("spec/fixtures/autograd_functional.lua")

local function close(want, got, what)
  local g = got:reshape(-1):to("cpu"):totable()
  assert.equal(#want, #g, what)
  for i, v in ipairs(want) do assert(math.abs(v - g[i]) <= 1e-12 * math.max(1, math.abs(v)), ("%s[%d]: %.17g, PyTorch %.17g"):format(what, i, g[i], v)) end
end

for _, dev in ipairs(h.devices()) do
  describe("gpu.autograd.functional on " .. dev, function()
    local o = { dtype = "float64", device = dev }
    local x = gpu.array({ 0.5, -1.25, 2.0 }, o)
    local y = gpu.array({ { 0.3, 0.7 }, { -0.2, 1.1 } }, o)
    local v3 = gpu.array({ 1.0, -2.0, 0.5 }, o)
    local v2 = gpu.array({ 0.25, -1.5 }, o)
    local f1 = function(t) return t:exp() * t:sum() end
    local f2 = function(t) return (t ^ 3):sum() + (t[{ { 1, 1 } }] * t[{ { 2, 2 } }] * t[{ { 3, 3 } }]):sum() end
    local f3 = function(a, b) return (a[{ { 1, 2 } }] * b:sum(1)):tanh() end

    it("jacobian and hessian are PyTorch's", function()
      local J = AF.jacobian(f1, x)
      assert.same({ 3, 3 }, J.shape)
      close(F.jacobian_f1, J, "jacobian f1")
      close(F.hessian_f2, AF.hessian(f2, x), "hessian f2")
      local J3 = AF.jacobian(f3, { x, y })
      assert.same({ 2, 3 }, J3[1].shape)
      assert.same({ 2, 2, 2 }, J3[2].shape)
      close(F.jacobian_f3[1], J3[1], "jacobian f3 x")
      close(F.jacobian_f3[2], J3[2], "jacobian f3 y")
    end)

    it("vjp, jvp and hvp are PyTorch's", function()
      local out, v = AF.vjp(f1, x, v3)
      close(F.vjp_f1, v, "vjp f1")
      close(f1(x):reshape(-1):totable(), out, "vjp's outputs")
      local _, jv = AF.jvp(f1, x, v3)
      close(F.jvp_f1, jv, "jvp f1")
      local _, hv = AF.hvp(f2, x, v3)
      close(F.hvp_f2, hv, "hvp f2")
      local _, vs = AF.vjp(f3, { x, y }, v2)
      close(F.vjp_f3[1], vs[1], "vjp f3 x")
      close(F.vjp_f3[2], vs[2], "vjp f3 y")
      assert.is_nil(x.grad)                                 -- nothing accumulated into .grad
    end)
  end)
end

describe("gpu.utils.checkpoint and anomaly detection", function()
  it("checkpoint gives the gradients of the plain pass, parameters included", function()
    gpu.random.seed(4)
    local lin = gpu.nn.Linear(3, 3, { dtype = "float64" })
    local drop = gpu.nn.Dropout(0.5)
    local block = function(a) return drop(lin(a)):tanh() end
    local x = gpu.random.randn(4, 3, { dtype = "float64" }):requires_grad()
    local state = gpu.random.get_state()
    local y = gpu.utils.checkpoint(block, x)
    y:sum():backward()
    local gx, gw = x.grad:totable(), lin.weight.grad:totable()
    x.grad = nil
    lin:zero_grad()
    gpu.random.set_state(state)                          -- the same dropout mask
    block(x):sum():backward()
    assert.same(gx, x.grad:totable())
    assert.same(gw, lin.weight.grad:totable())
  end)

  it("detect_anomaly names the op whose gradient is NaN; off, the NaN passes", function()
    local z = gpu.array({ 0.0 }, { dtype = "float64" }):requires_grad()
    local ok, err = pcall(gpu.autograd.detect_anomaly, function() (z:sqrt() * 0):sum():backward() end)
    assert.is_false(ok)
    assert.matches("backward: the gradient of sqrt for its input #1 holds NaN (anomaly detection)", err, 1, true)
    assert.is_false(gpu.autograd.is_anomaly_enabled())
    z.grad = nil;
    (z:sqrt() * 0):sum():backward()
    assert.is_true(z.grad:totable()[1] ~= z.grad:totable()[1])
  end)

  it("refuses misuse by name", function()
    local cases = {
      { function() return AF.jacobian(42, gpu.ones(2)) end, "autograd.functional.jacobian" },
      { function() return AF.jacobian(function(t) return t end, gpu.ones(2, { dtype = "int64" })) end, "floating-point inputs" },
      { function() return AF.vjp(function(t) return t * 2 end, gpu.ones(2)) end, "v is needed unless func's outputs have one element" },
      { function() return AF.hessian(function(t) return t * 2 end, gpu.ones(2)) end, "func must return one array of one element" },
      { function() return AF.jacobian(function() return "x" end, gpu.ones(2)) end, "func returned 'x'" },
      { function() return gpu.utils.checkpoint(function() return 1 end) end, "it must return one array" },
      { function() return gpu.autograd.set_detect_anomaly("yes") end, "mode" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
  end)
end)
