-- gpu.bench and gpu.event: timing helpers.
local h = require "spec.helper"
local gpu = h.gpu

describe("gpu.event", function()
  for _, dev in ipairs(h.devices()) do
    it("measures elapsed milliseconds between two records on " .. dev, function()
      local e0, e1 = gpu.event(dev), gpu.event(dev)
      e0:record()
      local x = gpu.ones(1000, { device = dev })
      for _ = 1, 10 do x = x + 1 end
      e1:record()
      local ms = e0:elapsed(e1)
      assert.is_number(ms)
      assert.is_true(ms >= 0 and ms < 10000)
      assert.equal(11, x[1])
      assert.matches("gpu.event%(", tostring(e0))
    end)
  end

  it("refuses elapsed before both events are recorded", function()
    local e0, e1 = gpu.event("cpu"), gpu.event("cpu")
    e0:record()
    local ok, err = pcall(e0.elapsed, e0, e1)
    assert.is_false(ok)
    assert.matches("recorded", err)
  end)

  it("rejects unknown devices", function()
    local ok, err = pcall(gpu.event, "tpu")
    assert.is_false(ok)
    assert.matches("unknown device", err)
  end)
end)

describe("gpu.bench", function()
  it("times a function and returns host statistics in microseconds", function()
    local calls = 0
    local r = gpu.bench(function() calls = calls + 1 end, { n = 7, warmup = 2, quiet = true, device = "cpu" })
    assert.equal(9, calls)
    assert.equal(7, #r.host.times)
    assert.is_true(r.host.min <= r.host.median and r.host.median <= r.host.max)
    assert.is_nil(r.device)                  -- no device column on the cpu
    assert.matches("CPU:", tostring(r))
  end)

  it("gives the statistics README reads, (r.device or r.host).min, on every device", function()
    for _, dev in ipairs(h.devices()) do
      local r = gpu.bench(function() end, { n = 3, warmup = 0, quiet = true, device = dev })
      assert.is_number((r.device or r.host).min)
      assert.equal(dev == "cpu", r.device == nil)
    end
  end)

  it("reports joules per call from the device's counter, or says plainly that it cannot measure", function()
    for _, d in ipairs(h.devices()) do
      local e, why = gpu._energy(d)
      local r = gpu.bench(function() end, { n = 3, warmup = 0, quiet = true, device = d })
      if e then
        -- a counter (RAPL for the cpu, NVML on a GPU): it only grows
        assert.is_number(e)
        assert.is_string(why)
        assert.is_true(r.energy.joules_per_call >= 0)
        assert.equal(why, r.energy.source)
        assert.matches("energy: [%d.e+-]+ J per call %(", tostring(r))
      else
        assert.is_nil(r.energy)
        assert.equal(why, r.energy_why)
        assert.matches(d == "cpu" and "RAPL" or "NVML", why)
        assert.matches("energy: cannot measure (" .. why .. ")", tostring(r), 1, true)
      end
    end
    -- this machine's cpu, as the powercap files show it
    local readable = io.open((io.popen("ls /sys/class/powercap/intel-rapl:*/energy_uj 2>/dev/null"):read("l")) or "/nonexistent")
    if readable then readable:close() end
    local e, why = gpu._energy("cpu")
    assert.equal(readable ~= nil, e ~= nil, why)
  end)

  it("passes args and reports the name", function()
    local seen
    local r = gpu.bench(function(a, b) seen = a + b end, { n = 1, warmup = 0, quiet = true, args = { 2, 3 }, name = "sum" })
    assert.equal(5, seen)
    assert.matches("^sum", tostring(r))
  end)

  it("rejects bad arguments", function()
    assert.is_false(pcall(gpu.bench, 5))
    local ok, err = pcall(gpu.bench, function() end, { n = 0 })
    assert.is_false(ok)
    assert.matches("bad argument #2 to 'bench' (option 'n' must be >= 1, got integer 0)", err, 1, true)
    ok, err = pcall(gpu.bench, function() end, "x")
    assert.is_false(ok)
    assert.matches("options table expected", err)
  end)
end)
