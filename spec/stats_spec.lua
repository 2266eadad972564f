-- gpu.stats / gpu.reset_stats: counters of copies, kernels and allocations.
local h = require "spec.helper"
local gpu = h.gpu

describe("gpu.stats", function()
  it("has every counter, and reset_stats zeroes them", function()
    gpu.reset_stats()
    local s = gpu.stats()
    for _, k in ipairs { "h2d_bytes", "h2d_copies", "d2h_bytes", "d2h_copies", "d2d_bytes", "d2d_copies",
                         "kernels", "allocs", "cache_hits", "device_mallocs", "host_allocs", "host_cache_hits" } do
      assert.equal("integer", math.type(s[k]), k)
      assert.equal(0, s[k], k)
    end
  end)

  it("counts host allocations and cache hits", function()
    local keep = gpu.ones(4096, { device = "cpu" })               -- a block of its own size class
    keep = nil
    collectgarbage(); collectgarbage()
    gpu.reset_stats()
    local x = gpu.ones(4096, { device = "cpu" })
    local s = gpu.stats()
    assert.equal(1, s.host_allocs)
    assert.equal(1, s.host_cache_hits)        -- the dropped block came back
    assert.is_true(x.size == 4096 and keep == nil)
  end)

  for _, dev in ipairs(h.devices()) do
    if dev ~= "cpu" then
      it("counts host-device copies on " .. dev, function()
        gpu.reset_stats()
        local x = gpu.ones(256, { device = "cpu" }):to(dev)
        local back = x:to("cpu")
        local s = gpu.stats()
        assert.equal(1, s.h2d_copies)
        assert.equal(1024, s.h2d_bytes)
        assert.equal(1, s.d2h_copies)
        assert.equal(1024, s.d2h_bytes)
        assert.equal(1, back[1])
      end)
    end
  end
end)
