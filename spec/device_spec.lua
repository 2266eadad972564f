-- device_spec.lua — devices, memory, build facts.
local h = require "spec.helper"
local gpu = h.gpu

local has_cuda = gpu.is_available()

describe("devices", function()
  it("is_available answers a boolean, plus a reason when false", function()
    local ok, why = gpu.is_available()
    assert.equal("boolean", type(ok))
    if not ok then assert.equal("string", type(why)); assert.truthy(#why > 0) end
    assert.equal(ok and 1 or 0, math.min(gpu.device_count(), 1))
    assert.equal("integer", math.type(gpu.device_count()))
  end)

  it("device() is cpu here; set_device('cpu') works", function()
    if not has_cuda then assert.equal("cpu", gpu.device()) end
    local before = gpu.device()
    gpu.set_device("cpu")
    assert.equal("cpu", gpu.device())
    assert.equal("cpu", gpu.zeros(2).device)
    gpu.set_device(before)
  end)

  it("set_device to an unusable or unknown device errors with a reason", function()
    if not has_cuda then
      local ok, err = pcall(gpu.set_device, "cuda")
      assert.is_false(ok); assert.matches("set_device", err); assert.matches("not available", err)
      assert.equal("cpu", gpu.device())
    end
    local ok, err = pcall(gpu.set_device, "bogus")
    assert.is_false(ok); assert.matches("unknown device 'bogus'", err)
    for _, bad in ipairs{ "cuda:", "cuda:x", "cuda:1:2", "cuda:999", "CPU", "" } do
      assert.is_false(pcall(gpu.set_device, bad), bad)
    end
    assert.is_false(pcall(gpu.set_device))
    assert.is_false(pcall(gpu.set_device, 1 > 0))
  end)

  it("devices() lists the cpu first", function()
    local d = gpu.devices()
    assert.truthy(#d >= 1)
    assert.equal("cpu", d[1].device); assert.equal("cpu", d[1].type)
    assert.equal("string", type(d[1].name)); assert.truthy(#d[1].name > 0)
    assert.equal("integer", math.type(d[1].total_memory)); assert.truthy(d[1].total_memory > 0)
    assert.equal(gpu.device_count() + 1, #d)
    for i = 2, #d do assert.equal("cuda:" .. (i - 2), d[i].device); assert.truthy(d[i].capability) end
  end)

  it("devices() gives a GPU's utilisation, temperature, power and memory in use where NVML answers", function()
    for _, info in ipairs(gpu.devices()) do
      if info.type == "cpu" then
        assert.is_nil(info.utilization); assert.is_nil(info.power)
      else
        local e, why = gpu._energy(info.device)
        if info.power then                       -- NVML answered for this GPU
          assert.is_true(info.power > 0 and info.power < 5000)
          assert.is_true(info.utilization >= 0 and info.utilization <= 100)
          assert.is_true(info.temperature > 0 and info.temperature < 150)
          assert.equal("integer", math.type(info.memory_used))
          assert.is_true(info.memory_used > 0 and info.memory_used <= info.total_memory)
          if e then assert.equal("NVML", why) end
        else
          assert.is_nil(e); assert.matches("NVML", why)
        end
      end
    end
  end)

  it("memory() reports allocated/reserved/peak/free/total; allocated grows with a live array", function()
    collectgarbage(); collectgarbage()             -- no garbage left for an allocation to free
    local m0 = gpu.memory()
    for _, k in ipairs{ "allocated", "reserved", "peak", "free", "total" } do
      assert.equal("integer", math.type(m0[k]), k)
    end
    assert.truthy(m0.reserved >= m0.allocated); assert.truthy(m0.peak >= m0.allocated)
    assert.truthy(m0.total > 0)
    local c0 = gpu.memory("cpu")                     -- the default device may be a GPU
    local x = gpu.zeros(1024 * 1024, {device = "cpu"})
    local m1 = gpu.memory("cpu")
    assert.truthy(m1.allocated >= c0.allocated + 4 * 1024 * 1024)
    assert.truthy(m1.peak >= m1.allocated)
    assert.same(gpu.memory(x).total, m1.total)
    x:close()
    assert.truthy(gpu.memory("cpu").allocated <= m1.allocated - 4 * 1024 * 1024)
    gpu.empty_cache()
    local m2 = gpu.memory("cpu")
    assert.equal(m2.allocated, m2.reserved)        -- nothing cached after empty_cache
    gpu.empty_cache("cpu")
    assert.is_false(pcall(gpu.memory, "bogus"))
  end)

  it("config() reports versions and build options", function()
    local c = gpu.config()
    assert.equal(gpu.version, c.version); assert.equal("string", type(gpu.version))
    assert.matches("^%d+%.%d+%.%d+", gpu.version)
    assert.matches("Lua 5%.4", c.lua)
    assert.equal("table", type(c.build)); assert.equal("table", type(c.versions))
    for _, k in ipairs{ "cuda", "cudnn", "openmp" } do assert.equal("boolean", type(c.build[k]), k) end
    if not c.build.cuda then assert.is_false(gpu.is_available()) end
    if c.build.cudnn then assert.is_true(c.build.cuda) end
  end)

  it("synchronize() works on the default device and on the cpu", function()
    gpu.synchronize(); gpu.synchronize("cpu")
    assert.is_false(pcall(gpu.synchronize, "bogus"))
  end)

  it("x:to('cuda') without a usable GPU errors clearly and leaves x intact", function()
    if has_cuda then return end
    local x = gpu.arange(3)
    for _, f in ipairs{ function() return x:to("cuda") end, function() return x:cuda() end,
                        function() return x:to({device = "cuda"}) end, function() return gpu.zeros(2, {device = "cuda"}) end } do
      local ok, err = pcall(f)
      assert.is_false(ok); assert.matches("cuda:0 is not available", err)
    end
    assert.same({0, 1, 2}, x:totable()); assert.equal("cpu", x.device)
  end)
end)
