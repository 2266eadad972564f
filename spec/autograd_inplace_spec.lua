-- spec/autograd_inplace_spec.lua — in-place ops under autograd, as PyTorch records them:
-- gradients through chains of x:op_(), the in-place routines, index assignment and
-- nn.ReLU{inplace = true} against PyTorch (spec/fixtures/autograd_inplace.lua, from
-- tools/gen_inplace_fixtures.py), central differences, and the refusals (a leaf that
-- requires grad, a view) that leave every array as it was.
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"
local fx = dofile("spec/fixtures/autograd_inplace.lua")

local function f64(t) return gpu.array(t, { dtype = "float64", device = "cpu" }) end
local function i64(t) return gpu.array(t, { dtype = "int64", device = "cpu" }) end
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end
local function close(want, got) h.assert_close(f64(want), got, 1e-12) end

-- the programs of tools/gen_inplace_fixtures.py, 1-based
local function chain(x, w)
  local y = x * 2
  y:add_(1)
  y:mul_(x + 2)
  y:sigmoid_()
  y = y - x
  y:div_(x:abs() + 1)
  y[1] = y[2] * 3
  y:relu_()
  return (y * w):sum()
end

local function routines(x, s, w)
  local y = x * 1.5
  y:masked_fill_(x:gt(0.5), 0.25)
  y:index_add_(1, i64({ 3, 1 }), s, { alpha = 2.0 })
  y:clamp_(-1.0, 1.0)
  y:index_copy_(1, i64({ 2 }), s:narrow(1, 2, 1) * 4)
  return (y * w):sum()
end

local function into_untracked(x, w)
  local z = gpu.zeros(3, 4, { dtype = "float64" })
  z:add_(x)
  z:mul_(x)
  z:copy_(z * 3 + x)
  return (z * w):sum()
end

local function mlp(x, W1, b1, W2)
  local hid = x:matmul(W1.T)
  hid:add_(b1)
  gpu.nn.ReLU { inplace = true } (hid)
  hid = hid * 0.5
  return hid:matmul(W2.T):sum()
end

local function grads(fn, ...)
  local leaves = {}
  for i, a in ipairs { ... } do leaves[i] = f64(a):requires_grad() end
  fn(table.unpack(leaves)):backward()
  local g = {}
  for i, l in ipairs(leaves) do g[i] = l.grad end
  return g
end

describe("in-place ops under autograd", function()
  it("give PyTorch's gradients through chains of x:op_() and index assignment", function()
    local g = grads(function(x) return chain(x, f64(fx.w)) end, fx.x)
    close(fx.chain[1], g[1])
  end)

  it("give PyTorch's gradients through the in-place routines", function()
    local g = grads(function(x, s) return routines(x, s, f64(fx.w)) end, fx.x, fx.s)
    close(fx.routines[1], g[1])
    close(fx.routines[2], g[2])
  end)

  it("record an untracked array written with tracked values (it becomes a non-leaf)", function()
    local g = grads(function(x) return into_untracked(x, f64(fx.w)) end, fx.x)
    close(fx.into_untracked[1], g[1])
    local z = gpu.zeros(2)
    z:add_(gpu.ones(2):requires_grad())
    assert.is_true(ag.requires_grad(z))
    assert.is_false(z:is_leaf())
  end)

  it("run a forward pass with x:add_(b) and nn.ReLU{inplace = true} (PyTorch's)", function()
    local g = grads(mlp, fx.x, fx.W1, fx.b1, fx.W2)
    for i = 1, 4 do close(fx.mlp[i], g[i]) end
    local x = f64({ -1, 2 }) * 1
    assert.is_true(rawequal(x, gpu.nn.ReLU { inplace = true } (x)))
    assert.same({ 0, 2 }, x:totable())
    assert.is_true(gpu.nn.ReLU(true).inplace)
    assert.matches("option 'inplace' must be a boolean", err_of(gpu.nn.ReLU, { inplace = 1 }))
    local p = f64({ -1, 2 }):requires_grad()
    local y = p * 3
    assert.is_true(rawequal(y, gpu.nn.functional.relu(y, true)))
    y:sum():backward()
    assert.same({ 0, 3 }, p.grad:totable())
  end)

  it("agree with central differences, first and second derivatives", function()
    local function fn(p)
      local y = p * 1
      y:mul_(p)
      y:sigmoid_()
      y:add_(p)                       -- after sigmoid_: its result is kept for its rule
      y[{ 1 }] = y[{ 2 }] * 2
      y:index_fill_(2, i64({ 1 }), 0.5)
      return y
    end
    local x = gpu.randn(3, 2, { dtype = "float64" })
    assert(ag.gradcheck(fn, { x }))
    local first = h.first_derivative(fn, { x })
    x:requires_grad()
    assert.is_true(ag.requires_grad(first(x)))
    assert(ag.gradcheck(first, { x }))
  end)

  it("send an edge recorded before an in-place op to the array as it was then", function()
    local x = f64({ 1, 2, 3 }):requires_grad()
    local a = x * 1
    local b = a + 3                   -- reads a before a:mul_
    local c = gpu.concat({ a, a })    -- a list argument, before a:mul_
    a:mul_(10)
    ;(a + b + c:sum()):sum():backward()
    assert.same({ 17, 17, 17 }, x.grad:totable())    -- 10 through a:mul_, 1 through b, 2 x 3 through c
  end)

  it("keep a node's result that a later in-place op changes, for that node's rule", function()
    local x = f64({ 0.5, -1 }):requires_grad()
    local e = x:exp()                 -- exp's rule reads its result
    local z = e + x
    e:mul_(2)
    ;(z + e):sum():backward()
    h.assert_close(f64({ 3 * math.exp(0.5) + 1, 3 * math.exp(-1) + 1 }), x.grad, 1e-12)
    -- an array another node saved, changed later: the version check names the change
    local y = x:exp()
    local s = y * x                   -- saves y
    y:mul_(2)
    assert.matches("modified in place by mul_", err_of(function() s:sum():backward() end))
  end)

  it("refuse a leaf that requires grad, as PyTorch, and change nothing", function()
    local x = f64({ 1, 2, 3 }):requires_grad()
    for name, f in pairs {
      add_ = function() x:add_(1) end, relu_ = function() x:relu_() end, fill_ = function() x:fill_(0) end,
      zero_ = function() x:zero_() end, clamp_ = function() x:clamp_(0, 1) end,
      masked_fill_ = function() x:masked_fill_(gpu.array({ true, false, true }), 0) end,
      normal_ = function() x:normal_() end,
      ["index assignment"] = function() x[1] = 5 end,
    } do
      assert.matches(name:gsub("%p", "%%%0") .. ": a leaf array that requires grad is used in an in%-place op", err_of(f))
      assert.same({ 1, 2, 3 }, x:detach():totable())
    end
    gpu.no_grad(function() x:add_(1) end)            -- an optimizer's step
    assert.same({ 2, 3, 4 }, x:detach():totable())
    assert.is_true(x:is_leaf())
  end)

  it("refuse a view of a tracked array (PyTorch rebases the view's history; gpulua does not)", function()
    local x = f64({ { 1, 2 }, { 3, 4 } }):requires_grad()
    local y = x * 1
    for _, v in ipairs { y[1], y.T, y:reshape(4), x[2] } do
      assert.matches("add_: the array is a view of an array that requires grad", err_of(function() v:add_(1) end))
    end
    assert.same({ { 1, 2 }, { 3, 4 } }, y:totable())
  end)

  it("raise in backward when a view is used after the array it views changed", function()
    local x = f64({ { 1, 2 }, { 3, 4 } }):requires_grad()
    local y = x * 1
    local v = y[1]
    local before = v * 2              -- recorded before the change: fine
    y:mul_(3)
    before:sum():backward()
    assert.same({ { 2, 2 }, { 0, 0 } }, x.grad:totable())
    local after = v * 2
    assert.matches("a view %(getindex%) was used after mul_ changed the array it views",
      err_of(function() after:sum():backward() end))
  end)

  it("record ops that are not differentiable as giving no gradient, the array still tracked", function()
    local x = f64({ 1.5, -2.5 }):requires_grad()
    local y = x * 2
    y:floor_()
    assert.is_true(ag.requires_grad(y))
    ;(y + x):sum():backward()
    assert.same({ 1, 1 }, x.grad:totable())
  end)

  it("record index_put_ and index assignment of tracked values, and fill_ as cutting the gradient", function()
    local x = f64({ 1, 2, 3 }):requires_grad()
    local v = f64({ 7 }):requires_grad()
    local y = x * 2
    y:index_put_(1, i64({ 3 }), v * 1)
    y[1] = v:sum() * 5
    ;(y * f64({ 1, 10, 100 })):sum():backward()
    assert.same({ 0, 20, 0 }, x.grad:totable())
    assert.same({ 105 }, v.grad:totable())
    local z = x * 1
    z:fill_(4)
    assert.is_true(ag.requires_grad(z))
    ;(z * x):sum():backward()
    assert.same({ 4, 24, 4 }, x.grad:totable())
    assert.matches("to 'fill_' %(number or boolean expected", err_of(function() z:fill_({}) end))
    assert.same({ 4, 4, 4 }, z:detach():totable())
  end)
end)
