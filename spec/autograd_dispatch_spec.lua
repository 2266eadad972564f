-- spec/autograd_dispatch_spec.lua — autograd recorded by the C dispatch: ops that are not
-- differentiable refuse tracked inputs before running, the version check of saved arrays,
-- x.grad's checks, grad mode and autocast per coroutine, autograd.grad, create_graph,
-- hooks. (spec/grad_rules_spec.lua checks every rule's numbers.)
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"

local function f64(t) return gpu.array(t, { dtype = "float64", device = "cpu" }) end
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

describe("the dispatch", function()
  it("refuses an in-place op on a leaf that requires grad before changing it, records the others", function()
    local x = f64({ 1, 2, 3 }):requires_grad()
    local e = err_of(function() x:add_(1) end)
    assert.matches("add_: a leaf array that requires grad is used in an in%-place op", e)
    assert.same({ 1, 2, 3 }, x:totable())
    local y = f64({ 0, 0, 0 })
    y:add_(x)                                        -- a tracked operand into an untracked array: recorded
    assert.is_true(ag.requires_grad(y))
    local z = f64({ 0, 0, 0 })
    z[1] = x:sum()                                   -- index assignment of a tracked value: recorded
    ;(y + z):sum():backward()
    assert.same({ 2, 2, 2 }, x.grad:totable())
    gpu.no_grad(function() x:add_(1) end)            -- fine without grad
    assert.same({ 2, 3, 4 }, x:totable())
  end)

  it("refuses ops without a rule on tracked inputs, naming them", function()
    local x = f64({ 1, 2, 3 }):requires_grad()
    assert.matches("random.permutation is not differentiable", err_of(gpu.random.permutation, x))
    -- ops listed as not differentiable give untracked results, as PyTorch's do
    assert.is_false(ag.requires_grad(x:floor()))
    assert.is_false(ag.requires_grad(x:gt(1)))
    assert.is_false(ag.requires_grad(x:argmax()))
  end)

  it("records prod, cumsum, cumprod, norm, sort, topk, atan2, flip, roll and tile", function()
    local p = f64({ 1, 2, 3, 4 }):requires_grad()
    p:prod():backward()
    assert.same({ 24, 12, 8, 6 }, p.grad:totable())
    for _, f in ipairs {
      function(x) return x:cumsum() end, function(x) return x:cumprod() end, function(x) return x:norm() end,
      function(x) return x:sort() end, function(x) return (x:topk(2)) end, function(x) return gpu.atan2(x, x + 1) end,
      function(x) return x:flip(1) end, function(x) return x:roll(1) end, function(x) return x:tile(2) end,
    } do
      assert.is_true(ag.requires_grad(f(p)))
    end
  end)

  it("raises when an array saved for the gradient was changed in place, naming the op", function()
    local x = f64({ 1, 2 }):requires_grad()
    local c = f64({ 10, 10 })
    local y = (x * c):sum()
    c:mul_(2)                                       -- c is saved by mul (x's gradient is c)
    assert.matches("modified in place by mul_", err_of(function() y:backward() end))
    -- without the change the gradient is right, and add saves nothing
    local z = (x + c):sum()
    c:add_(1)
    z:backward()
    assert.same({ 1, 1 }, x.grad:totable())
    local w = (x * 2):exp()
    local s = w:sum()
    gpu.no_grad(function() w:add_(1) end)           -- exp's backward reads its result
    assert.matches("modified in place", err_of(function() s:backward() end))
  end)

  it("checks x.grad on assignment: shape, floating dtype, device, and a tracked array", function()
    local x = f64({ 1, 2, 3 }):requires_grad()
    assert.matches("grad: the gradient has shape %(4,?%), the array %(3,?%)", err_of(function() x.grad = gpu.ones(4) end))
    assert.matches("a gradient must be a gpu.array or nil, got number", err_of(function() x.grad = 5 end))
    assert.matches("must be floating%-point, got int64",
      err_of(function() x.grad = gpu.array({ 1, 2, 3 }, { dtype = "int64" }) end))
    assert.matches("does not require grad", err_of(function() local y = gpu.ones(2); y.grad = gpu.ones(2) end))
    x.grad = f64({ 1, 1, 1 })
    assert.same({ 1, 1, 1 }, x.grad:totable())
    x.grad = gpu.ones(3)                            -- float32 for a float64 array is a floating dtype
    x.grad = nil
    assert.is_nil(x.grad)
  end)

  it("keeps grad mode and autocast per coroutine: an abandoned one does not leak them", function()
    local co = coroutine.create(function()
      gpu.no_grad(function() coroutine.yield() end)
    end)
    coroutine.resume(co)                            -- suspended inside no_grad
    assert.is_true(ag.is_grad_enabled())
    local x = f64({ 1 }):requires_grad()
    assert.is_true(ag.requires_grad(x * 2))
    coroutine.close(co)
    assert.is_true(ag.is_grad_enabled())
    local amp = require "gpu.amp"
    local co2 = coroutine.wrap(function() amp.autocast("float16", function() coroutine.yield() end) end)
    co2()
    assert.is_nil(amp.get_autocast_dtype())
    assert.equal("float32", (gpu.ones(2, 2):matmul(gpu.ones(2, 2))).dtype)
    -- a coroutine without its own setting follows the main thread
    gpu.no_grad(function()
      local inner = coroutine.wrap(function() return ag.is_grad_enabled() end)
      assert.is_false(inner())
    end)
  end)

  it("autograd.grad returns gradients without touching .grad, with create_graph for second derivatives", function()
    local x = f64({ 1, 2, 3 }):requires_grad()
    local g = ag.grad((x * x * x):sum(), x, { create_graph = true })
    assert.same({ 3, 12, 27 }, g:totable())
    assert.is_nil(x.grad)
    local g2 = ag.grad(g:sum(), x)
    assert.same({ 6, 12, 18 }, g2:totable())
    local a, b = f64({ 1 }):requires_grad(), f64({ 2 }):requires_grad()
    local gs = ag.grad((a * b):sum(), { a, b })
    assert.same({ { 2 }, { 1 } }, { gs[1]:totable(), gs[2]:totable() })
    local c = f64({ 5 }):requires_grad()
    assert.matches("input #2 is not used", err_of(ag.grad, (a * 2):sum(), { a, c }))
    local u = ag.grad((a * 2):sum(), { a, c }, { allow_unused = true })
    assert.is_nil(u[2])
    -- backward(nil, {create_graph = true}) leaves differentiable gradients in .grad
    local y = f64({ 2 }):requires_grad()
    ;(y * y * y):sum():backward(nil, { create_graph = true })
    assert.is_true(ag.requires_grad(y.grad))
    local gy = y.grad
    y.grad = nil
    gy:sum():backward()
    assert.same({ 12 }, y.grad:totable())
  end)

  it("runs hooks on gradients, which may replace them", function()
    local x = f64({ 1, 2 }):requires_grad()
    local seen
    local hk = x:register_hook(function(g) seen = g:totable(); return g * 10 end)
    ;(x * 3):sum():backward()
    assert.same({ 3, 3 }, seen)
    assert.same({ 30, 30 }, x.grad:totable())
    hk.remove()
    x.grad = nil
    ;(x * 3):sum():backward()
    assert.same({ 3, 3 }, x.grad:totable())
    assert.matches("does not require grad", err_of(function() gpu.ones(2):register_hook(function() end) end))
  end)

  it("declares backward's options", function()
    local x = f64({ 1 }):requires_grad()
    assert.matches("unknown option 'create_grap'; did you mean 'create_graph'%?",
      err_of(function() (x * 2):sum():backward(nil, { create_grap = true }) end))
  end)

  it("names the op that failed inside a tracked call, at the caller's line", function()
    local x = f64({ 1, 2 }):requires_grad()
    local e = err_of(function() return x:reshape(3) end)
    assert.matches("reshape", e)
    assert.matches("autograd_dispatch_spec.lua:%d+:", e)
  end)
end)
