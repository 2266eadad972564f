-- What each function takes. Every function of gpu (the C binding's and the Lua parts'
-- routines, kernels and nn.functional) declares the most arguments it takes, and
-- gpu._arity(f) answers it: the first part of this spec is generated from those
-- declarations and calls every function with one argument more, which must raise
-- "bad argument #n+1 to 'f' (at most n arguments expected, got n+1)" before anything runs.
-- The rest checks what used to be silently ignored (options after a nil positional,
-- extra arguments) and the forms that replaced it (flatten's dims, relu's inplace).
local gpu = require "gpu"
require "gpu.routines"                 -- puts the routines in place of lroutines.c's stubs
local kernel = require "gpu.kernel"
local nn = require "gpu.nn"
-- the Lua parts that are functions (gpu.bench, gpu.autocast), required without caching
-- them in gpu (other specs see gpu as they would alone)
local parts = {}
for name in pairs(package.preload) do
  local k = name:match("^gpu%.([%w_]+)$")
  if k and type(require(name)) == "function" then parts[k] = require(name) end
end

local function fails(pattern, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error matching " .. pattern)
  assert.matches(pattern, tostring(err))
end

-- the tables of functions that must all declare what they take
local tables = {
  { "gpu", gpu }, { "gpu.methods", gpu.methods }, { "gpu.random", gpu.random }, { "gpu.linalg", gpu.linalg },
  { "gpu._linalg", gpu._linalg }, { "gpu.fft", gpu.fft }, { "gpu._fft", gpu._fft }, { "gpu.fused", gpu.fused }, { "gpu.dnn", gpu.dnn }, { "gpu._jit", gpu._jit }, { "gpu._grad", gpu._grad },
  { "gpu.distributed", gpu.distributed }, { "gpu.nn.functional", nn.functional }, { "gpu (Lua parts)", parts },
  { "gpu.nn", nn }, { "gpu.nn.init", nn.init }, { "gpu.nn.metrics", nn.metrics }, { "gpu.nn.utils", nn.utils },
  { "gpu.autograd", require "gpu.autograd" }, { "gpu.data", require "gpu.data" }, { "gpu.plot", require "gpu.plot" },
  { "gpu.image", require "gpu.image" }, { "gpu.amp", require "gpu.amp" }, { "gpu.optim", require "gpu.optim" },
  { "gpu.help", require "gpu.help" }, { "gpu.nn.callbacks", nn.callbacks }, { "gpu.special", gpu.special },
  { "gpu.kernel", kernel, { "ElementwiseKernel", "ReductionKernel", "RawKernel", "RawModule", "fuse" } },
}
-- lkernel.c's stubs pass their calls on to gpu.kernel's functions, which count them
local passes_on = {
  [gpu.ElementwiseKernel] = kernel.ElementwiseKernel, [gpu.ReductionKernel] = kernel.ReductionKernel,
  [gpu.RawKernel] = kernel.RawKernel, [gpu.RawModule] = kernel.RawModule, [gpu.fuse] = kernel.fuse,
}

local function sorted_functions(t)
  local names = {}
  for k, v in pairs(t) do
    if type(k) == "string" and type(v) == "function" then names[#names + 1] = k end
  end
  table.sort(names)
  return names
end

describe("every function declares what it takes", function()
  local count = 0
  for _, entry in ipairs(tables) do
    local tname, t = entry[1], entry[2]
    for _, name in ipairs(entry[3] or sorted_functions(t)) do
      local f = t[name]
      local n = gpu._arity(passes_on[f] or f)
      count = count + 1
      it(("%s.%s declares a count, and refuses one argument more"):format(tname, name), function()
        assert.is_not_nil(n, tname .. "." .. name .. " declares no count (gpu._arity)")
        if n == math.huge then return end      -- passes its arguments on (gpu.range, gpu.no_grad, einsum)
        local ok, err = pcall(f, table.unpack({}, 1, n + 1))
        assert.is_false(ok, tname .. "." .. name .. " accepted " .. n + 1 .. " arguments")
        local want = ("bad argument #%d to '[^']*' %%(at most %d arguments? expected, got %d%%)"):format(n + 1, n, n + 1)
        assert.matches(want, tostring(err))
      end)
    end
  end
  it("covers the module", function() assert.is_true(count > 500, "only " .. count .. " functions found") end)

  it("counts a method's receiver as lauxlib numbers it", function()
    local x = gpu.ones(2)
    fails("bad argument #1 to 'exp' %(at most 0 arguments expected, got 1%)", function() return x:exp(1) end)
    fails("bad argument #3 to 'gpu.add' %(at most 2 arguments expected, got 3%)", gpu.add, x, x, x)
    fails("bad argument #1 to 'gpu.device_count' %(at most 0 arguments expected, got 1%)", gpu.device_count, nil)
  end)

  it("counts a Generator method's receiver", function()
    local g = gpu.random.Generator(1)
    assert.equals(gpu._arity(gpu.random.seed) + 1, gpu._arity(g.seed))
    fails("at most 1 argument expected, got 2", function() return g:seed(1, 2) end)
  end)

  it("declares the Lua functions it counts, and lets variadic ones pass on", function()
    assert.equals(math.huge, gpu._arity(gpu.range))
    assert.equals(math.huge, gpu._arity(gpu.no_grad))
    assert.equals(math.huge, gpu._arity(gpu.einsum))
    assert.is_nil(gpu._arity(print))
    assert.equals(2, gpu._arity(nn.functional.softmax))
  end)
end)

describe("arguments that used to be ignored", function()
  local x = gpu.arange(24):reshape(2, 3, 4)

  it("are errors that name them", function()
    fails("bad argument #2 to 'gpu.exp' %(at most 1 argument expected, got 2%)", gpu.exp, x, "junk")
    fails("bad argument #2 to 'gpu.clone' %(at most 1 argument expected, got 2%)", gpu.clone, x, "junk")
    fails("bad argument #3 to 'gpu.unsqueeze' %(at most 2 arguments expected, got 3%)", gpu.unsqueeze, x, 1, 2)
    fails("bad argument #3 to 'gpu.squeeze' %(at most 2 arguments expected, got 3%)", gpu.squeeze, x, 1, "junk")
    fails("bad argument #2 to 'gpu.relu' %(at most 1 argument expected, got 2%)", gpu.relu, x, true)
    fails("bad argument #3 to 'nn.softmax' %(at most 2 arguments expected, got 3%)", nn.softmax, x, 2, "junk")
    fails("bad argument #4 to 'gpu.flatten' %(at most 3 arguments expected, got 4%)", gpu.flatten, x, 1, 2, 3)
    fails("bad argument #10 to 'gpu.zeros' %(at most 9 arguments expected, got 10%)", gpu.zeros, 1, 1, 1, 1, 1, 1, 1, 1, {}, 5)
  end)
end)

describe("the methods of classes", function()
  it("count what follows self, the constructor as init", function()
    local l = nn.Linear(2, 3)
    fails("bad argument #2 to 'Linear:forward' %(at most 1 argument expected, got 2%)", l, gpu.ones(2), 1)
    fails("bad argument #4 to 'Linear:init' %(at most 3 arguments expected, got 4%)", nn.Linear, 2, 3, {}, 5)
    fails("bad argument #1 to 'Module:parameters' %(at most 0 arguments expected, got 1%)", l.parameters, l, 1)
    assert.equals(1, gpu._arity(l.parameters))
    local opt = gpu.optim.SGD(l:parameters(), { lr = 0.1 })
    fails("at most 0 arguments expected, got 1", opt.zero_grad, opt, 1)
  end)

  it("leave the calls a class refuses to its own message", function()
    fails("ModuleList is not callable", nn.ModuleList { nn.ReLU() }, gpu.ones(2))
    fails("forward is not implemented", nn.class("NoForward")(), gpu.ones(2))
  end)
end)

describe("a nil positional before the options table", function()
  it("leaves the options read: eye, zeros, linspace, arange", function()
    local e = gpu.eye(3, nil, { k = 1, dtype = "float64" })
    assert.equals("float64", e.dtype)
    assert.same({ { 0, 1, 0 }, { 0, 0, 1 }, { 0, 0, 0 } }, e:totable())
    assert.same({ 3, 3 }, e.shape)
    assert.equals("float64", gpu.zeros(2, nil, { dtype = "float64" }).dtype)
    assert.equals("float64", gpu.ones({ 2, 3 }, nil, { dtype = "float64" }).dtype)
    local l = gpu.linspace(0, 1, nil, { dtype = "float64" })
    assert.equals("float64", l.dtype)
    assert.equals(50, l.size)
    local a = gpu.arange(0, 5, nil, { dtype = "float64" })
    assert.equals("float64", a.dtype)
    assert.same({ 0, 1, 2, 3, 4 }, a:totable())
    assert.same({ 0, 1, 2 }, gpu.arange(3, nil, nil, { dtype = "int32" }):totable())
  end)

  it("leaves the options read: random's shapes and choice", function()
    assert.equals("float64", gpu.random.rand(2, nil, { dtype = "float64" }).dtype)
    assert.equals("float64", gpu.random.Generator(1):randn(2, nil, { dtype = "float64" }).dtype)
    local c = gpu.random.choice(5, nil, { replace = false })
    assert.same({ 1 }, c.shape)
    fails("unknown option 'replce'", gpu.random.choice, 5, nil, { replce = false })
  end)

  it("checks the options' keys", function()
    fails("bad argument #3 to 'gpu.eye' %(unknown option 'kk'; did you mean 'k'%?%)", gpu.eye, 3, nil, { kk = 1 })
    fails("bad argument #3 to 'gpu.zeros' %(unknown option 'dtyp'", gpu.zeros, 2, nil, { dtyp = "float64" })
    fails("bad argument #4 to 'gpu.linspace' %(unknown option 'dtyp'", gpu.linspace, 0, 1, nil, { dtyp = "float64" })
    fails("bad argument #4 to 'gpu.arange' %(unknown option 'dtyp'", gpu.arange, 0, 5, nil, { dtyp = "float64" })
  end)

  it("refuses what is neither nil nor options, and anything after the options", function()
    fails("bad argument #2 to 'gpu.zeros' %(dimension or options table expected, got string%)", gpu.zeros, 2, "a", {})
    fails("bad argument #3 to 'gpu.zeros' %(no argument expected after the options table%)", gpu.zeros, 2, {}, 3)
    fails("bad argument #3 to 'gpu.zeros' %(dimension or options table expected, got number%)", gpu.zeros, 2, nil, 3)
    fails("bad argument #3 to 'gpu.eye' %(no argument expected after the options table%)", gpu.eye, 3, { k = 1 }, 2)
    fails("bad argument #2 to 'gpu.eye' %(number of columns or options table expected, got string%)", gpu.eye, 3, "a")
    fails("bad argument #3 to 'gpu.linspace' %(number of samples or options table expected, got string%)",
      gpu.linspace, 0, 1, "a")
    fails("bad argument #4 to 'gpu.linspace' %(no argument expected after the options table%)", gpu.linspace, 0, 1, {}, 5)
    fails("bad argument #3 to 'gpu.arange' %(number or options table expected, got string%)", gpu.arange, 0, 5, "a")
    fails("bad argument #4 to 'gpu.arange' %(no argument expected after the options table%)", gpu.arange, 0, 5, {}, 1)
    fails("bad argument #3 to 'gpu[%.%w]*%.rand' %(no argument expected after the options table%)",
      gpu.random.rand, 2, {}, 3)
    fails("bad argument #3 to 'gpu.random.choice' %(sample size or options table expected, got string%)",
      gpu.random.choice, 5, nil, "a")
  end)
end)

describe("flatten(start_dim, end_dim)", function()
  local x = gpu.arange(24):reshape(2, 3, 4)

  it("merges axes start_dim..end_dim, 1-based and inclusive, as torch.flatten(x, s - 1, e - 1)", function()
    assert.same({ 24 }, x:flatten().shape)
    assert.same({ 2, 12 }, x:flatten(2).shape)           -- torch.flatten(x, 1)
    assert.same({ 6, 4 }, x:flatten(1, 2).shape)         -- torch.flatten(x, 0, 1)
    assert.same({ 2, 12 }, x:flatten(-2, -1).shape)
    assert.same({ 2, 3, 4 }, x:flatten(2, 2).shape)
    assert.same({ 1 }, gpu.array(3):flatten().shape)
    assert.same({ 0, 4 }, gpu.zeros(0, 3, 4):flatten(1, 2).shape)
    assert.same(x:reshape(2, 12):totable(), x:flatten(2):totable())
  end)

  it("is a view when it can be", function()
    local y = gpu.zeros(2, 3, 4)
    y:flatten(2):fill_(1)
    assert.equals(24, y:sum():item())
    assert.same(x.T:copy():reshape(4, 6):totable(), x.T:flatten(2):totable())
  end)

  it("refuses axes out of range, non-integers and a start after the end", function()
    fails("bad argument #2 to '%?' %(axis 5 is out of range for 3%-d array", x.flatten, x, 5)
    fails("bad argument #2 to '%?' %(start_dim must be an integer, got string%)", x.flatten, x, "junk")
    fails("bad argument #3 to '%?' %(end_dim must be an integer", x.flatten, x, 1, 1.5)
    fails("bad argument #3 to '%?' %(end_dim %(axis 2%) comes before start_dim %(axis 3%)%)", x.flatten, x, 3, 2)
  end)
end)

describe("nn.relu(x, inplace)", function()
  it("writes x when inplace, and returns it", function()
    local x = gpu.array({ -1, 2, -3 })
    local y = nn.relu(x, true)
    assert.equals(x, y)
    assert.same({ 0, 2, 0 }, x:totable())
    local z = gpu.array({ -1, 2 })
    assert.same({ 0, 2 }, nn.functional.relu(z, false):totable())
    assert.same({ -1, 2 }, z:totable())
  end)

  it("refuses a non-boolean, an array that requires grad, and a third argument", function()
    fails("bad argument #2 to 'nn.relu' %(inplace must be a boolean, got 'yes'%)", nn.relu, gpu.ones(2), "yes")
    local w = gpu.ones(2):requires_grad()
    fails("relu_: a leaf array that requires grad is used in an in%-place op", nn.relu, w, true)
    fails("bad argument #3 to 'nn.relu' %(at most 2 arguments expected, got 3%)", nn.relu, gpu.ones(2), false, 1)
  end)
end)
