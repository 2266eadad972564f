-- memory_spec.lua — dropped arrays are collected and their blocks reused: a loop that
-- makes and drops 8 MiB arrays must not grow the process.
local h = require "spec.helper"
local gpu = h.gpu

-- The command that runs a script with the host these specs run under.
local function host_cmd(script)
  local path = os.tmpname()
  local f = assert(io.open(path, "w")); f:write(script); f:close()
  local cmd
  if os.getenv("GPULUA_HOST") == "lua5.4" then
    cmd = "LUA_CPATH='./?.so' lua5.4 -e 'gpu = require \"gpu\"' " .. path
  else
    cmd = "./gpulua " .. path
  end
  local code, out, err = h.run(cmd)
  os.remove(path)
  return code, out, err
end

describe("memory", function()
  it("a loop of dropped 8 MiB arrays stays under 0.5 GB (VmHWM)", function()
    local code, out, err = host_cmd([[
      for i = 1, 10000 do local x = gpu.zeros(2 * 1024 * 1024) end
      local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
      io.write(s:match("VmHWM:%s*(%d+) kB"))
    ]])
    assert.equal(0, code, err)
    local kb = tonumber(out)
    assert.truthy(kb, "no VmHWM in: " .. out .. err)
    assert.truthy(kb < 512 * 1024, ("peak resident memory %d kB"):format(kb))
  end)

  it("memory().allocated goes back down after collectgarbage()", function()
    collectgarbage(); collectgarbage()
    local before = gpu.memory("cpu").allocated
    do
      local xs = {}
      for i = 1, 8 do xs[i] = gpu.zeros(256 * 1024, {device = "cpu"}) end
      assert.truthy(gpu.memory("cpu").allocated >= before + 8 * 1024 * 1024)
    end
    collectgarbage(); collectgarbage()
    assert.equal(before, gpu.memory("cpu").allocated)
  end)

  it("views keep storage alive; closing the base does not free what a view uses", function()
    collectgarbage(); collectgarbage()
    local before = gpu.memory("cpu").allocated
    local base = gpu.arange(1024 * 1024, {device = "cpu"})
    local v = base[{{1, 10}}]
    base:close()
    assert.truthy(gpu.memory("cpu").allocated >= before + 8 * 1024 * 1024)
    assert.equal(9, v[10])
    v:close()
    assert.equal(before, gpu.memory("cpu").allocated)
  end)

  it("empty_cache returns cached blocks", function()
    do local x = gpu.zeros(1024 * 1024, {device = "cpu"}) x:close() end
    assert.truthy(gpu.memory("cpu").reserved > gpu.memory("cpu").allocated)
    gpu.empty_cache("cpu")
    assert.equal(gpu.memory("cpu").allocated, gpu.memory("cpu").reserved)
  end)
end)
