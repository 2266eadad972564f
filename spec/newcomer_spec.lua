-- spec/newcomer_spec.lua — the familiar names a newcomer from PyTorch or Keras reaches for:
-- gpu.devices(type), manual_seed, memory_allocated & co, the cast shorthands
-- x:half() ..., model[i] of a Sequential, and their errors.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn

describe("gpu.devices(type)", function()
  it("lists only the devices of that type, any case", function()
    local all = gpu.devices()
    local cpu = gpu.devices("cpu")
    assert.equal(1, #cpu)
    assert.equal("cpu", cpu[1].type)
    for _, t in ipairs { "cuda", "CUDA", "gpu", "GPU" } do
      local list = gpu.devices(t)
      assert.equal(#all - 1, #list)
      assert.equal(gpu.device_count(), #list)
      for _, d in ipairs(list) do assert.equal("cuda", d.type) end
    end
    assert.equal(#all, #gpu.devices(nil))
  end)

  it("refuses an unknown type, naming the function", function()
    local ok, err = pcall(gpu.devices, "tpu")
    assert.is_false(ok)
    assert.matches("bad argument #1 to 'gpu.devices' (unknown device type 'tpu'", err, 1, true)
    ok, err = pcall(gpu.devices, 1)
    assert.is_false(ok)
    assert.matches("gpu.devices.*expected, got number", err)
  end)
end)

describe("PyTorch's names", function()
  it("gpu.manual_seed seeds as gpu.random.seed", function()
    gpu.manual_seed(1234)
    local a = gpu.rand(4):totable()
    gpu.random.seed(1234)
    assert.same(a, gpu.rand(4):totable())
    assert.equal(gpu.random.seed, gpu.manual_seed)
  end)

  for _, dev in ipairs(h.devices()) do
    it("memory_allocated, max_memory_allocated, memory_reserved on " .. dev .. " read gpu.memory()", function()
      local x = gpu.zeros(1024, 1024, { device = dev })      -- 4 MiB
      local m = gpu.memory(dev)
      assert.equal(m.allocated, gpu.memory_allocated(dev))
      assert.equal(m.peak, gpu.max_memory_allocated(dev))
      assert.equal(m.reserved, gpu.memory_reserved(dev))
      assert.is_true(gpu.memory_allocated(dev) >= 4 * 1024 * 1024)
      assert.is_true(gpu.max_memory_allocated(dev) >= gpu.memory_allocated(dev))
      assert.is_true(gpu.memory_reserved(dev) >= gpu.memory_allocated(dev))
      x:close()
    end)
  end

  it("the memory functions refuse a bad device", function()
    for _, f in ipairs { "memory_allocated", "max_memory_allocated", "memory_reserved" } do
      local ok, err = pcall(gpu[f], "tpu:0")
      assert.is_false(ok)
      assert.matches(f, err, 1, true)
    end
  end)
end)

describe("cast shorthands", function()
  local casts = { half = "float16", bfloat16 = "bfloat16", float = "float32", double = "float64",
                  int = "int32", long = "int64", bool = "bool" }

  for _, dev in ipairs(h.devices()) do
    it("x:half() ... are astype on " .. dev, function()
      local x = gpu.array({ { 0, 1.5 }, { -2, 3 } }, { device = dev })
      for m, dt in pairs(casts) do
        local y = x[m](x)
        assert.equal(dt, y.dtype)
        assert.equal(dev, y.device)
        assert.same(x:astype(dt):totable(), y:totable())
        assert.is_false(rawequal(x, y))
      end
      local d = x:double()
      assert.is_false(rawequal(d:double(), d))               -- always a new array, as astype
    end)
  end

  it("carry gradients as astype does; the integer casts are not tracked", function()
    local x = gpu.array({ 1, 2 }, { dtype = "float64" }):requires_grad()
    local y = (x:float():double() * 3):sum()
    y:backward()
    assert.same({ 3, 3 }, x.grad:totable())
    assert.is_false(gpu.autograd.requires_grad(x:long()))
    assert.is_true(gpu.autograd.requires_grad(x:half()))
  end)

  it("refuse arguments and non-arrays", function()
    local x = gpu.ones(2)
    local ok, err = pcall(function() return x:half("float32") end)
    assert.is_false(ok)
    assert.matches("bad argument #1 to 'half' (at most 0 arguments expected, got 1)", err, 1, true)
    ok, err = pcall(x.long, 3)
    assert.is_false(ok)
    assert.matches("gpu.array expected, got number", err, 1, true)
    assert.equal("float16", gpu.half)                        -- the module's names stay dtype names
    assert.equal("int64", gpu.long)
  end)
end)

describe("model[i]", function()
  it("is the i-th layer of a Sequential, 1-based; #model the number of layers", function()
    local a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    local m = nn.Sequential { a, b, c }
    assert.equal(a, m[1]); assert.equal(b, m[2]); assert.equal(c, m[3])
    assert.equal(a, m[1.0])
    assert.equal(3, #m)
    assert.is_nil(m[0]); assert.is_nil(m[4]); assert.is_nil(m[-1])
    m:add(nn.Sigmoid())
    assert.equal(4, #m)
    assert.equal("Sigmoid", getmetatable(m[4]).__name)
    assert.equal(m.layers[2], m[2])
    assert.is_function(m.forward)                            -- names still reach the class
    assert.equal(0, #nn.Sequential {})
  end)
end)
